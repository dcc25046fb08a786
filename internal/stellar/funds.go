package stellar

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// This file is the check before sending that the paying side can pay: the vault holds the asset
// (an authorized trustline with the amount above its selling liabilities) and the fee payer (the
// fee account of a fee bump, or the vault paying its own fee) can pay this envelope's fee on top
// of the fees the service may already have queued from it. It refuses with 503 VAULT_UNDERFUNDED
// or FEE_ACCOUNT_UNDERFUNDED, nothing sent; the orchestrator then releases the key and pages, as
// for a FAILED inclusion (transfer.SourceShortfall), which stays the backstop: a balance read
// before sending can change before the ledger applies.
//
// What it reads costs no round trip of its own on Stellar RPC: the fee account's account entry and
// the vault's trustline come in the same getLedgerEntries request as the transaction source's
// sequence number (rpcChain.accounts). Horizon has no multi-account read; its GET /accounts/{id}
// requests run in parallel (horizonChain.accounts). The base reserve, a network setting that
// changes only by a validators' upgrade vote, is read from the latest ledger header once an hour
// per process, from the latest-ledger reads Prepare makes anyway (reserveCache).

// accountQuery names the ledger entries one envelope's checks need.
type accountQuery struct {
	// source is the transaction source (a channel account, or the vault): its sequence number.
	source string
	// fee is the fee bump's fee source (the fee account); "" without a fee bump.
	fee string
	// vault and asset name the vault's trustline to read; vault "" reads none.
	vault string
	asset txnbuild.CreditAsset
}

// accountState is an account entry's fields that core's getAvailableBalance reads, in stroops.
type accountState struct {
	seq, balance, sellingLiabilities  int64
	subentries, sponsoring, sponsored int64
}

// trustState is a trustline entry: found, its balance and selling liabilities in stroops, and
// whether the issuer authorized it (AUTHORIZED_FLAG; not merely to maintain liabilities).
type trustState struct {
	found, authorized           bool
	balance, sellingLiabilities int64
}

// accountSnapshot is what accounts read, as of one ledger where the backend allows it.
type accountSnapshot struct {
	source accountState
	fee    *accountState // nil: not asked, or the fee account does not exist
	trust  trustState
}

// minBalance is core's getMinBalance (src/transactions/TransactionUtils.cpp, protocol 14 and
// later): (2 + subentries + sponsoring - sponsored) x the base reserve.
func (a accountState) minBalance(baseReserve int64) int64 {
	return (2 + a.subentries + a.sponsoring - a.sponsored) * baseReserve
}

// available is core's getAvailableBalance for an account entry (src/transactions/
// TransactionUtils.cpp): the balance above the reserve, less selling liabilities (protocol 10 and
// later); negative when the account is below its reserve. The queue admits a transaction only if
// its fee source's available balance covers its full fee on top of the full fees already queued
// for that fee source (src/herder/TransactionQueue.cpp, TransactionQueue::canAdd: ERROR
// txINSUFFICIENT_BALANCE otherwise).
func (a accountState) available(baseReserve int64) int64 {
	return a.balance - a.minBalance(baseReserve) - a.sellingLiabilities
}

// accounts reads q in one getLedgerEntries request: the source's and the fee account's ACCOUNT
// entries and the vault's TRUSTLINE entry (Stellar RPC, "getLedgerEntries"; one answer, one
// ledger). A missing source account is the *transfer.UnavailableError of sequenceAt.
func (r rpcChain) accounts(ctx context.Context, q accountQuery) (accountSnapshot, error) {
	var keys []string
	accountKey := func(address string) (xdr.AccountId, error) {
		id, err := xdr.AddressToAccountId(address)
		if err != nil {
			return id, fmt.Errorf("stellar: account %s: %w", address, err)
		}
		k, err := id.LedgerKey()
		if err == nil {
			var b64 string
			if b64, err = xdr.MarshalBase64(k); err == nil {
				keys = append(keys, b64)
			}
		}
		return id, err
	}
	if _, err := accountKey(q.source); err != nil {
		return accountSnapshot{}, err
	}
	if q.fee != "" && q.fee != q.source {
		if _, err := accountKey(q.fee); err != nil {
			return accountSnapshot{}, err
		}
	}
	if q.vault != "" {
		id, err := xdr.AddressToAccountId(q.vault)
		if err != nil {
			return accountSnapshot{}, fmt.Errorf("stellar: account %s: %w", q.vault, err)
		}
		xa, err := q.asset.ToXDR()
		if err != nil {
			return accountSnapshot{}, fmt.Errorf("stellar: asset %s: %w", q.asset.Code, err)
		}
		var tk xdr.LedgerKey
		if err := tk.SetTrustline(id, xa.ToTrustLineAsset()); err != nil {
			return accountSnapshot{}, fmt.Errorf("stellar: trustline key: %w", err)
		}
		b64, err := xdr.MarshalBase64(tk)
		if err != nil {
			return accountSnapshot{}, fmt.Errorf("stellar: trustline key: %w", err)
		}
		keys = append(keys, b64)
	}
	resp, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: keys})
	})
	if err != nil {
		return accountSnapshot{}, fmt.Errorf("stellar: getLedgerEntries for %s: %w", q.source, err)
	}
	var snap accountSnapshot
	found := false
	for _, e := range resp.Entries {
		var entry xdr.LedgerEntryData
		if err := xdr.SafeUnmarshalBase64(e.DataXDR, &entry); err != nil {
			return accountSnapshot{}, fmt.Errorf("stellar: decoding a ledger entry for %s: %w", q.source, err)
		}
		switch {
		case entry.Account != nil:
			st := accountFromXDR(entry.Account)
			switch entry.Account.AccountId.Address() {
			case q.source:
				snap.source, found = st, true
				if q.fee == q.source {
					snap.fee = &st
				}
			case q.fee:
				snap.fee = &st
			}
		case entry.TrustLine != nil && q.vault != "" && entry.TrustLine.AccountId.Address() == q.vault:
			var typ xdr.AssetType
			var code, issuer string
			if err := entry.TrustLine.Asset.Extract(&typ, &code, &issuer); err != nil || code != q.asset.Code || issuer != q.asset.Issuer {
				continue
			}
			tl := entry.TrustLine
			snap.trust = trustState{found: true, balance: int64(tl.Balance), sellingLiabilities: int64(tl.Liabilities().Selling),
				authorized: uint32(tl.Flags)&uint32(xdr.TrustLineFlagsAuthorizedFlag) != 0}
		}
	}
	if !found {
		return accountSnapshot{}, missingSource(q.source)
	}
	return snap, nil
}

func accountFromXDR(a *xdr.AccountEntry) accountState {
	return accountState{seq: int64(a.SeqNum), balance: int64(a.Balance), sellingLiabilities: int64(a.Liabilities().Selling),
		subentries: int64(a.NumSubEntries), sponsoring: int64(a.NumSponsoring()), sponsored: int64(a.NumSponsored())}
}

func missingSource(account string) error {
	return &transfer.UnavailableError{Code: transfer.CodeNetworkUnavailable,
		Detail: "the transaction source account (vault or channel) does not exist on the network",
		Err:    fmt.Errorf("%w: %s", ErrAccountMissing, account)}
}

// accountDetails reads each account of ids with GET /accounts/{id}, concurrently: got[i] and
// errs[i] are ids[i]'s answer (a missing account: an error horizonclient.IsNotFoundError knows).
func (h horizonChain) accountDetails(ctx context.Context, ids []string) (got []hProtocol.Account, errs []error) {
	got = make([]hProtocol.Account, len(ids))
	errs = make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			got[i], errs[i] = hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.Account, error) {
				return c.AccountDetail(horizonclient.AccountRequest{AccountID: id})
			})
		})
	}
	wg.Wait()
	return got, errs
}

// accounts reads q with GET /accounts/{id} for the source, the fee account and the vault, in
// parallel (Horizon has no request for several accounts): one round trip of latency. The answers
// may come from different ledgers; each is a fact as of its own.
func (h horizonChain) accounts(ctx context.Context, q accountQuery) (accountSnapshot, error) {
	ids := []string{q.source}
	if q.fee != "" && q.fee != q.source {
		ids = append(ids, q.fee)
	}
	if q.vault != "" && q.vault != q.source {
		ids = append(ids, q.vault)
	}
	got, errs := h.accountDetails(ctx, ids)
	var snap accountSnapshot
	for i, id := range ids {
		if errs[i] != nil {
			if !horizonclient.IsNotFoundError(errs[i]) {
				return accountSnapshot{}, fmt.Errorf("stellar: GET /accounts/%s: %w", id, errs[i])
			}
			if id == q.source {
				return accountSnapshot{}, missingSource(id)
			}
			continue // a missing fee account or vault: judged by the checks
		}
		st, trust, err := horizonAccount(got[i], q.asset)
		if err != nil {
			return accountSnapshot{}, fmt.Errorf("stellar: GET /accounts/%s: %w", id, err)
		}
		if id == q.source {
			snap.source = st
		}
		if id == q.fee {
			snap.fee = &st
		}
		if id == q.vault {
			snap.trust = trust
		}
	}
	return snap, nil
}

// horizonAccount is a's account state and its trustline for asset (Horizon's account resource:
// balances with selling_liabilities and is_authorized; num_subentries, num_sponsoring,
// num_sponsored). A trustline whose is_authorized Horizon leaves out counts as authorized: the
// check refuses only what it knows the network would refuse.
func horizonAccount(a hProtocol.Account, asset txnbuild.CreditAsset) (accountState, trustState, error) {
	st := accountState{seq: a.Sequence, subentries: int64(a.SubentryCount), sponsoring: int64(a.NumSponsoring), sponsored: int64(a.NumSponsored)}
	var trust trustState
	parse := func(s string) (int64, error) {
		if s == "" {
			return 0, nil
		}
		return amount.ParseInt64(s)
	}
	for _, b := range a.Balances {
		bal, err := parse(b.Balance)
		if err != nil {
			return st, trust, fmt.Errorf("balance %q: %w", b.Balance, err)
		}
		selling, err := parse(b.SellingLiabilities)
		if err != nil {
			return st, trust, fmt.Errorf("selling liabilities %q: %w", b.SellingLiabilities, err)
		}
		if b.Type == "native" {
			st.balance, st.sellingLiabilities = bal, selling
			continue
		}
		if b.Code == asset.Code && b.Issuer == asset.Issuer {
			trust = trustState{found: true, balance: bal, sellingLiabilities: selling, authorized: b.IsAuthorized == nil || *b.IsAuthorized}
		}
	}
	return st, trust, nil
}

// reserveCache holds the network's base reserve (stroops) and when it was read.
type reserveCache struct {
	mu      sync.Mutex
	stroops int64
	at      time.Time
}

// reserveTTL is how long a base reserve read is used: it changes only by a network upgrade vote,
// announced weeks ahead, and a stale value only makes the check before sending less exact (the
// network's own queue check stays the backstop).
const reserveTTL = time.Hour

// DefaultBaseReserveStroops is the base reserve assumed when the ledger header cannot be read:
// pubnet's and testnet's (0.5 XLM).
const DefaultBaseReserveStroops = 5_000_000

// observe records a base reserve read at now from a ledger the service read anyway (the latest
// ledger before the source is acquired: Horizon's GET /ledgers, stellar-rpc's headerXdr).
func (r *reserveCache) observe(stroops int64, now time.Time) {
	if stroops <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stroops, r.at = stroops, now
}

// observeHeader records the base reserve of a getLatestLedger headerXdr (a bare LedgerHeader;
// stellar-rpc 25.0.0 and later), if there is one.
func (r *reserveCache) observeHeader(headerXDR string, now time.Time) {
	if headerXDR == "" {
		return
	}
	var hdr xdr.LedgerHeader
	if xdr.SafeUnmarshalBase64(headerXDR, &hdr) == nil {
		r.observe(int64(hdr.BaseReserve), now)
	}
}

// baseReserve returns the base reserve seen within reserveTTL, else reads it with read. A read
// that fails leaves DefaultBaseReserveStroops for this call (not cached): the check before sending
// is an estimate whose backstop is the network's own, and a transfer is not refused because an
// auxiliary read failed.
func (r *reserveCache) baseReserve(ctx context.Context, now time.Time, read func(context.Context) (int64, error)) int64 {
	r.mu.Lock()
	if r.stroops > 0 && now.Sub(r.at) < reserveTTL && !now.Before(r.at) {
		v := r.stroops
		r.mu.Unlock()
		return v
	}
	r.mu.Unlock()
	v, err := read(ctx)
	if err != nil || v <= 0 {
		return DefaultBaseReserveStroops
	}
	r.observe(v, now)
	return v
}

// baseReserve reads the latest ledger header's baseReserve: getLatestLedger's headerXdr (a bare
// LedgerHeader, stellar-rpc 25.0.0 and later), else getLedgers' headerXdr for that ledger (a
// LedgerHeaderHistoryEntry).
func (r rpcChain) baseReserve(ctx context.Context) (int64, error) {
	latest, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	})
	if err != nil {
		return 0, fmt.Errorf("stellar: getLatestLedger: %w", err)
	}
	if latest.LedgerHeader != "" {
		var hdr xdr.LedgerHeader
		if err := xdr.SafeUnmarshalBase64(latest.LedgerHeader, &hdr); err == nil {
			return int64(hdr.BaseReserve), nil
		}
	}
	resp, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgersResponse, error) {
		return c.GetLedgers(ctx, protocol.GetLedgersRequest{StartLedger: latest.Sequence, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	})
	if err != nil {
		return 0, fmt.Errorf("stellar: getLedgers: %w", err)
	}
	if len(resp.Ledgers) == 0 {
		return 0, errors.New("stellar: getLedgers returned no ledger")
	}
	var entry xdr.LedgerHeaderHistoryEntry
	if err := xdr.SafeUnmarshalBase64(resp.Ledgers[0].LedgerHeader, &entry); err != nil {
		return 0, fmt.Errorf("stellar: getLedgers: decoding headerXdr: %w", err)
	}
	return int64(entry.Header.BaseReserve), nil
}

// baseReserve reads the latest ledger's base_reserve_in_stroops (GET /ledgers?order=desc&limit=1).
func (h horizonChain) baseReserve(ctx context.Context) (int64, error) {
	page, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.LedgersPage, error) {
		return c.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 1})
	})
	if err != nil {
		return 0, fmt.Errorf("stellar: GET /ledgers: %w", err)
	}
	if len(page.Embedded.Records) == 0 {
		return 0, errors.New("stellar: GET /ledgers returned no ledger")
	}
	return int64(page.Embedded.Records[0].BaseReserve), nil
}

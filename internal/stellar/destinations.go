package stellar

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The check of a batch's destinations before it is built (internal/transfer/doc.go, "Batches",
// "Checking the destinations"): each destination read as stellar-core will judge its payment,
// so that a payment the network would refuse is kept out of everyone else's transaction. The
// rules are PathPaymentStrictReceiveOpFrame::doApply (the destination account exists, else
// op_no_destination) and PathPaymentOpFrameBase::updateDestBalance (the trustline exists,
// op_no_trust; is authorized, AUTHORIZED_FLAG, op_not_authorized; has room for the amount under
// its limit after its buying liabilities, addBalanceSkipAuthorization, op_line_full). Payments to
// one line are counted in order, as the transaction applies them. A read is a fact of one
// ledger: the network may judge otherwise a ledger later, which is why a key that fails the check
// runs alone rather than being rejected on the read.

// DestinationCheck is the check of one request's destination.
type DestinationCheck struct {
	// Code is "" when the destination, as read, takes the payment; else the operation code
	// stellar-core would give it: "op_no_destination", "op_no_trust", "op_not_authorized" or
	// "op_line_full".
	Code string
	// Err is the request's own refusal, as Prepare would give it (a *transfer.ValidationError:
	// not a withdrawal, an amount that is not positive, a malformed wallet or one of this
	// service's accounts, an unknown asset); its destination is not read and Code is "".
	Err error
}

// CheckDestinations reads every destination of reqs (withdrawals; at most MaxBatchPayments) and
// the vault's trustline of each asset in one getLedgerEntries call (Stellar RPC; at most 200 keys
// a call: one per destination, its trustline, plus one per asset), plus one more call only for
// the accounts of destinations that have no trustline, to tell op_no_destination from
// op_no_trust. It returns one check per request, in order. The vault's trustline must cover
// the sum of the requests whose destination passed, per asset (available: balance less selling
// liabilities, authorized): else the checks come back with a *transfer.UnavailableError
// VAULT_UNDERFUNDED, as Prepare refuses one transfer. Errors: ErrBatchSize; SIGNING_KEYS_UNAVAILABLE
// (the keys name the accounts no payout may go to); the network's (no check then).
func (l *RPCLedger) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]DestinationCheck, error) {
	return l.checkDestinations(ctx, reqs, rpcChain{l}.readDestinations)
}

// CheckDestinations is RPCLedger.CheckDestinations over Horizon: each destination's account,
// which lists its trustlines, and the vault's, read with GET /accounts/{id} concurrently.
func (h *HorizonLedger) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]DestinationCheck, error) {
	return h.checkDestinations(ctx, reqs, horizonChain{h}.readDestinations)
}

// lineKey names a trustline: its account and its asset (code:issuer).
type lineKey struct{ account, asset string }

// lineReading is a trustline as read, in stroops.
type lineReading struct {
	authorized                      bool
	balance, limit, buying, selling int64
}

// destReading is what a read found: accounts by address (false: read and missing; absent: not
// read) and trustlines (absent: missing, or not read when its account is missing).
type destReading struct {
	accounts map[string]bool
	lines    map[lineKey]lineReading
}

// destQuery is what to read: the trustlines, each destination's and the vault's of each asset
// (an account missing its trustline is read after, to name op_no_destination or op_no_trust).
type destQuery struct {
	lines []lineKey
}

func assetKey(a vaultAsset) string { return a.credit.Code + ":" + a.credit.Issuer }

func (c *common) checkDestinations(ctx context.Context, reqs []transfer.Request,
	read func(context.Context, destQuery) (destReading, error)) ([]DestinationCheck, error) {
	if len(reqs) == 0 || len(reqs) > MaxBatchPayments {
		return nil, ErrBatchSize
	}
	checks := make([]DestinationCheck, len(reqs))
	pays := make([]batchPayment, len(reqs))
	var q destQuery
	seen := map[lineKey]bool{}
	assets := map[string]vaultAsset{}
	var order []string
	keys, err := c.loadKeys(ctx)
	if err != nil {
		return nil, err
	}
	for i, req := range reqs {
		var to destination
		var asset vaultAsset
		var err error
		ok := false
		switch {
		case req.OperationType != transfer.Withdraw:
			err = notSupported(fmt.Sprintf("operation %q is not a withdrawal", req.OperationType))
		case req.Stroops <= 0:
			err = &transfer.ValidationError{Code: transfer.CodeInvalidAmount, Kind: transfer.KindUnacceptable, Field: "amount",
				Detail: "amount must be greater than zero"}
		}
		if err == nil {
			to, err = paymentDestination(req)
		}
		if err == nil {
			if asset, ok = c.assets.find(req.Asset); !ok {
				err = unknownAsset(req.Asset)
			}
		}
		if err == nil {
			// The vault, the asset's issuer, the fee account, a channel: never a payout's
			// destination (Prepare refuses them the same way).
			err = c.guardWallet(to.account, asset, keys)
		}
		if err != nil {
			checks[i].Err = err
			continue
		}
		pays[i] = batchPayment{pay: payment{to: to}, stroops: req.Stroops, asset: asset}
		k := lineKey{to.account.String(), assetKey(asset)}
		if !seen[k] {
			seen[k] = true
			q.lines = append(q.lines, k)
		}
		if _, ok := assets[k.asset]; !ok {
			assets[k.asset] = asset
			order = append(order, k.asset)
		}
	}
	for _, a := range order {
		if assets[a].credit.Issuer != c.vaultAccount {
			q.lines = append(q.lines, lineKey{c.vaultAccount, a})
		}
	}
	got, err := read(ctx, q)
	if err != nil {
		return nil, err
	}
	credited := map[lineKey]int64{}
	sums := map[string]int64{}
	for i, p := range pays {
		if checks[i].Err != nil {
			continue
		}
		k := lineKey{p.pay.to.account.String(), assetKey(p.asset)}
		checks[i].Code = judgeDestination(got, k, credited[k], p.stroops)
		if checks[i].Code == "" {
			credited[k] += p.stroops
			sums[k.asset] = addCapped(sums[k.asset], p.stroops)
		}
	}
	for _, a := range order {
		va := assets[a]
		if va.credit.Issuer == c.vaultAccount || sums[a] == 0 {
			continue
		}
		vl, ok := got.lines[lineKey{c.vaultAccount, a}]
		switch {
		case !ok:
			return checks, vaultShort(fmt.Sprintf("the vault %s holds no trustline for %s", c.vaultAccount, va.credit.Code))
		case !vl.authorized:
			return checks, vaultShort(fmt.Sprintf("the vault's trustline for %s is not authorized by its issuer", va.credit.Code))
		case vl.balance-vl.selling < sums[a]:
			return checks, vaultShort(fmt.Sprintf("the vault holds %s %s available, below the batch's %s to pay",
				amountText(vl.balance-vl.selling), va.credit.Code, amountText(sums[a])))
		}
	}
	return checks, nil
}

// judgeDestination is the code stellar-core would give a payment of stroops to line k, after
// earlier payments of the same batch credited it with before: "" when it takes it.
func judgeDestination(got destReading, k lineKey, before, stroops int64) string {
	l, ok := got.lines[k]
	switch {
	case !ok && !got.accounts[k.account]:
		return "op_no_destination"
	case !ok:
		return "op_no_trust"
	case !l.authorized:
		return "op_not_authorized"
	}
	// addBalanceSkipAuthorization: the new balance may pass neither the limit nor the limit less
	// the buying liabilities; computed without overflow.
	room := l.limit - l.buying - l.balance - before
	if l.limit-l.buying < 0 || room < stroops {
		return "op_line_full"
	}
	return ""
}

// readDestinations reads q's trustlines in one getLedgerEntries call and, for the ones missing,
// their accounts in a second; both at most 200 keys (stellar-rpc's default limit).
func (r rpcChain) readDestinations(ctx context.Context, q destQuery) (destReading, error) {
	got := destReading{accounts: map[string]bool{}, lines: map[lineKey]lineReading{}}
	keys := make([]xdr.LedgerKey, 0, len(q.lines))
	for _, k := range q.lines {
		lk, err := trustlineKey(k)
		if err != nil {
			return destReading{}, err
		}
		keys = append(keys, lk)
	}
	entries, err := r.ledgerEntries(ctx, keys)
	if err != nil {
		return destReading{}, err
	}
	for _, e := range entries {
		tl := e.TrustLine
		if tl == nil {
			continue
		}
		var typ xdr.AssetType
		var code, issuer string
		if err := tl.Asset.Extract(&typ, &code, &issuer); err != nil {
			continue
		}
		liab := tl.Liabilities()
		k := lineKey{tl.AccountId.Address(), code + ":" + issuer}
		got.lines[k] = lineReading{authorized: uint32(tl.Flags)&uint32(xdr.TrustLineFlagsAuthorizedFlag) != 0,
			balance: int64(tl.Balance), limit: int64(tl.Limit), buying: int64(liab.Buying), selling: int64(liab.Selling)}
		got.accounts[k.account] = true // a trustline is a subentry of an existing account
	}
	var missing []xdr.LedgerKey
	asked := map[string]bool{}
	for _, k := range q.lines {
		if _, ok := got.lines[k]; ok || asked[k.account] {
			continue
		}
		asked[k.account] = true
		id, err := xdr.AddressToAccountId(k.account)
		if err != nil {
			return destReading{}, fmt.Errorf("stellar: account %s: %w", k.account, err)
		}
		ak, err := id.LedgerKey()
		if err != nil {
			return destReading{}, fmt.Errorf("stellar: account key %s: %w", k.account, err)
		}
		missing = append(missing, ak)
	}
	if len(missing) == 0 {
		return got, nil
	}
	entries, err = r.ledgerEntries(ctx, missing)
	if err != nil {
		return destReading{}, err
	}
	for _, e := range entries {
		if e.Account != nil {
			got.accounts[e.Account.AccountId.Address()] = true
		}
	}
	return got, nil
}

// maxLedgerEntryKeys is the most keys one getLedgerEntries request carries: stellar-rpc refuses
// more than its configured maximum (200 here, as internal/stellarsim's getLedgerEntries and the
// design in internal/transfer/doc.go take it).
const maxLedgerEntryKeys = 200

// ledgerEntries reads keys (at most maxLedgerEntryKeys) in one getLedgerEntries request and
// returns the entries found.
func (r rpcChain) ledgerEntries(ctx context.Context, keys []xdr.LedgerKey) ([]xdr.LedgerEntryData, error) {
	if len(keys) > maxLedgerEntryKeys {
		return nil, fmt.Errorf("stellar: %d ledger keys in one getLedgerEntries, above %d", len(keys), maxLedgerEntryKeys)
	}
	b64 := make([]string, len(keys))
	for i, k := range keys {
		s, err := xdr.MarshalBase64(k)
		if err != nil {
			return nil, fmt.Errorf("stellar: ledger key: %w", err)
		}
		b64[i] = s
	}
	resp, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: b64})
	})
	if err != nil {
		return nil, fmt.Errorf("stellar: getLedgerEntries of %d keys: %w", len(keys), err)
	}
	out := make([]xdr.LedgerEntryData, 0, len(resp.Entries))
	for _, e := range resp.Entries {
		var d xdr.LedgerEntryData
		if err := xdr.SafeUnmarshalBase64(e.DataXDR, &d); err != nil {
			return nil, fmt.Errorf("stellar: decoding a ledger entry: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

func trustlineKey(k lineKey) (xdr.LedgerKey, error) {
	id, err := xdr.AddressToAccountId(k.account)
	if err != nil {
		return xdr.LedgerKey{}, fmt.Errorf("stellar: account %s: %w", k.account, err)
	}
	code, issuer, _ := strings.Cut(k.asset, ":")
	xa, err := txnbuild.CreditAsset{Code: code, Issuer: issuer}.ToXDR()
	if err != nil {
		return xdr.LedgerKey{}, fmt.Errorf("stellar: asset %s: %w", code, err)
	}
	var lk xdr.LedgerKey
	if err := lk.SetTrustline(id, xa.ToTrustLineAsset()); err != nil {
		return xdr.LedgerKey{}, fmt.Errorf("stellar: trustline key: %w", err)
	}
	return lk, nil
}

// readDestinations reads each distinct account of q with GET /accounts/{id}, concurrently; an
// account lists its trustlines with their authorization, limit and liabilities.
func (h horizonChain) readDestinations(ctx context.Context, q destQuery) (destReading, error) {
	var ids []string
	seen := map[string]bool{}
	for _, k := range q.lines {
		if !seen[k.account] {
			seen[k.account] = true
			ids = append(ids, k.account)
		}
	}
	accts, errs := h.accountDetails(ctx, ids)
	got := destReading{accounts: map[string]bool{}, lines: map[lineKey]lineReading{}}
	for i, id := range ids {
		if errs[i] != nil {
			if horizonclient.IsNotFoundError(errs[i]) {
				got.accounts[id] = false
				continue
			}
			return destReading{}, fmt.Errorf("stellar: GET /accounts/%s: %w", id, errs[i])
		}
		got.accounts[id] = true
		for _, b := range accts[i].Balances {
			if b.Type == "native" {
				continue
			}
			l, err := horizonLine(b)
			if err != nil {
				return destReading{}, fmt.Errorf("stellar: GET /accounts/%s: %w", id, err)
			}
			got.lines[lineKey{id, b.Code + ":" + b.Issuer}] = l
		}
	}
	return got, nil
}

// horizonLine is a Horizon balance line as read. A line whose is_authorized Horizon leaves out
// counts as authorized, as horizonAccount counts it.
func horizonLine(b hProtocol.Balance) (lineReading, error) {
	l := lineReading{authorized: b.IsAuthorized == nil || *b.IsAuthorized}
	for _, f := range []struct {
		s   string
		dst *int64
	}{{b.Balance, &l.balance}, {b.Limit, &l.limit}, {b.BuyingLiabilities, &l.buying}, {b.SellingLiabilities, &l.selling}} {
		if f.s == "" {
			continue
		}
		v, err := amount.ParseInt64(f.s)
		if err != nil {
			return lineReading{}, fmt.Errorf("amount %q: %w", f.s, err)
		}
		*f.dst = v
	}
	if b.Limit == "" {
		l.limit = math.MaxInt64
	}
	return l, nil
}

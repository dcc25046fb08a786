package stellar

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/network"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The chain's side of the daily reconciliation (transfer.ChainDay): the day's ledgers found by
// close time (dayLedgers), the transactions that concern the vault found by the events that name
// it (getEvents; dayevents.go says which and why that is all of them) and read with
// getTransaction, each envelope decoded with go-stellar-sdk's xdr (a fee bump's inner
// transaction, each operation with its own source), and the vault's trustline changes read from
// each transaction's metadata. The calls and bytes follow the vault's own traffic and the length
// of RPC's history, not the network's traffic.
//
// History: stellar-rpc serves getLedgers, getTransactions, getTransaction and getEvents for its
// history-retention-window, 120,960 ledgers (about 7 days) by default (stellar-rpc
// cmd/stellar-rpc/internal/config/options.go, "history-retention-window", SevenDayOfLedgers). A
// day whose start is older than the oldest ledger RPC holds is refused
// (transfer.ErrHistoryNotCovered), never reported from part of its ledgers: the report of such a
// day is the one stored when it was run in time.

// VaultDay reads the vault's classic payments of the UTC day starting at start
// (transfer.DayReader).
func (l *RPCLedger) VaultDay(ctx context.Context, start time.Time, soFar bool) (transfer.ChainDay, error) {
	return l.scanDay(ctx, start, soFar, nil)
}

// VaultDay reads the vault contracts' calls of the UTC day starting at start, and the vault
// account's classic payments beside them (transfer.DayReader).
func (l *ContractLedger) VaultDay(ctx context.Context, start time.Time, soFar bool) (transfer.ChainDay, error) {
	return l.RPCLedger.scanDay(ctx, start, soFar, l)
}

// VaultDay refuses: Horizon's /accounts/{id}/payments would list the vault's classic payments,
// but neither a contract call nor the metadata's balance changes, and its history is whatever the
// operator's Horizon keeps; the daily reconciliation reads Stellar RPC only
// (transfer.ErrDailyNotSupported).
func (l *HorizonLedger) VaultDay(context.Context, time.Time, bool) (transfer.ChainDay, error) {
	return transfer.ChainDay{}, fmt.Errorf("stellar: %w: this deployment reads the ledger through Horizon (STELLAR_BACKEND=horizon); run it with STELLAR_BACKEND=rpc and STELLAR_RPC_URL", transfer.ErrDailyNotSupported)
}

// scanDay reads the day; cl is the contract mode's ledger, nil in classic mode.
func (l *RPCLedger) scanDay(ctx context.Context, start time.Time, soFar bool, cl *ContractLedger) (transfer.ChainDay, error) {
	start = start.UTC()
	day := transfer.ChainDay{Start: start, End: start.Add(24 * time.Hour), Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{}, ContractMode: cl != nil}
	first, last, err := l.dayLedgers(ctx, day.Start, &day.End, soFar)
	if err != nil {
		return transfer.ChainDay{}, err
	}
	for code := range l.assets {
		day.Balances[code] = transfer.BalanceMovement{Readable: cl == nil}
	}
	if first.Sequence == 0 || first.Sequence > last.Sequence {
		return day, nil // no ledger closed in the day
	}
	day.FirstLedger, day.LastLedger = first.Sequence, last.Sequence
	day.FirstClose, day.LastClose = time.Unix(first.LedgerCloseTime, 0).UTC(), time.Unix(last.LedgerCloseTime, 0).UTC()
	groups, err := l.dayFilters(ctx, cl)
	if err != nil {
		return transfer.ChainDay{}, err
	}
	hashes, err := l.dayTxHashes(ctx, first.Sequence, last.Sequence, groups)
	if err != nil {
		return transfer.ChainDay{}, err
	}
	txs, err := l.dayTransactions(ctx, first.Sequence, hashes)
	if err != nil {
		return transfer.ChainDay{}, err
	}
	sc := &dayScanner{l: l, cl: cl, day: &day}
	for _, tx := range txs {
		if err := sc.add(tx); err != nil {
			return transfer.ChainDay{}, err
		}
	}
	return day, nil
}

// dayLedgers finds the first ledger closed at or after start and the last closed before end, by
// binary search over getLedgers (one ledger a call) within RPC's history. Close times strictly
// increase with the sequence (stellar-core closes each ledger at least one second after the last).
// ErrDayNotOver when no ledger closed at or after end yet; ErrHistoryNotCovered when the oldest
// ledger RPC holds closed at or after start and is not the network's first (ledgers of the day,
// or the one before it, are gone).
func (l *RPCLedger) dayLedgers(ctx context.Context, start time.Time, endp *time.Time, soFar bool) (first, last protocol.LedgerInfo, err error) {
	probe, err := l.ledgerAt(ctx, 0)
	if err != nil {
		return first, last, err
	}
	oldest, latest := probe.OldestLedger, probe.LatestLedger
	partial := soFar && probe.LatestLedgerCloseTime < endp.Unix() && probe.LatestLedgerCloseTime >= start.Unix() && len(probe.Ledgers) == 1
	if partial {
		// The day so far: up to the latest ledger, which closed within it.
		*endp = time.Unix(probe.LatestLedgerCloseTime+1, 0).UTC()
	}
	end := *endp
	switch {
	case !partial && probe.LatestLedgerCloseTime < end.Unix():
		return first, last, fmt.Errorf("stellar: %w: the latest ledger %d closed at %s, before the day's end %s", transfer.ErrDayNotOver,
			latest, time.Unix(probe.LatestLedgerCloseTime, 0).UTC().Format(time.RFC3339), end.Format(time.RFC3339))
	case probe.OldestLedgerCloseTime >= start.Unix() && oldest > 1:
		return first, last, fmt.Errorf("stellar: %w: RPC's oldest ledger %d closed at %s, not before the day's start %s (stellar-rpc keeps history-retention-window ledgers, about 7 days by default)",
			transfer.ErrHistoryNotCovered, oldest, time.Unix(probe.OldestLedgerCloseTime, 0).UTC().Format(time.RFC3339), start.Format(time.RFC3339))
	}
	// firstAtOrAfter(t): the lowest ledger in [from, latest] closing at or after t. The oldest
	// ledger closes before start <= t, or is the genesis ledger (1: no ledger precedes it, so the
	// history covers the day from its start); latest closes at or after end >= t.
	from := oldest + 1
	if oldest <= 1 {
		from = 1
	}
	firstAtOrAfter := func(t int64) (protocol.LedgerInfo, error) {
		lo, hi := from, latest
		var found protocol.LedgerInfo
		for lo <= hi {
			mid := lo + (hi-lo)/2
			page, err := l.ledgerAt(ctx, mid)
			if err != nil {
				return found, err
			}
			if len(page.Ledgers) == 0 || page.Ledgers[0].Sequence != mid {
				return found, fmt.Errorf("stellar: getLedgers did not answer ledger %d", mid)
			}
			if page.Ledgers[0].LedgerCloseTime >= t {
				found, hi = page.Ledgers[0], mid-1
			} else {
				lo = mid + 1
			}
		}
		if found.Sequence == 0 {
			return found, fmt.Errorf("stellar: no ledger closed at or after %d between %d and %d", t, oldest, latest)
		}
		return found, nil
	}
	if first, err = firstAtOrAfter(start.Unix()); err != nil {
		return first, last, err
	}
	if partial {
		return first, probe.Ledgers[0], nil
	}
	after, err := firstAtOrAfter(end.Unix())
	if err != nil {
		return first, last, err
	}
	if after.Sequence == first.Sequence {
		return protocol.LedgerInfo{}, protocol.LedgerInfo{}, nil // no ledger closed within the day
	}
	page, err := l.ledgerAt(ctx, after.Sequence-1)
	if err != nil {
		return first, last, err
	}
	if len(page.Ledgers) == 0 || page.Ledgers[0].Sequence != after.Sequence-1 {
		return first, last, fmt.Errorf("stellar: getLedgers did not answer ledger %d", after.Sequence-1)
	}
	return first, page.Ledgers[0], nil
}

// ledgerAt is ledger seq's sequence and close time, with RPC's range (seq 0: the latest
// ledger's). getLedgers answers a ledger with its whole LedgerCloseMeta (metadataXdr: every
// transaction of it, megabytes on pubnet; stellar-rpc methods/get_ledgers.go, parseLedgerInfo,
// has no way to leave it out), so the close time is read from getTransactions' first
// transaction at or after seq (its createdAt is its ledger's close time) when that transaction is
// in seq, one transaction's bytes; only a ledger without transactions (whose metadata holds none)
// is read with getLedgers. The latest ledger's sequence comes from getLatestLedger.
func (l *RPCLedger) ledgerAt(ctx context.Context, seq uint32) (protocol.GetLedgersResponse, error) {
	if seq == 0 {
		probe, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
			return c.GetLatestLedger(ctx)
		})
		if err != nil {
			return protocol.GetLedgersResponse{}, fmt.Errorf("stellar: getLatestLedger: %w", err)
		}
		seq = probe.Sequence
	}
	txs, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetTransactionsResponse, error) {
		return c.GetTransactions(ctx, protocol.GetTransactionsRequest{StartLedger: seq, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	})
	if err != nil {
		return protocol.GetLedgersResponse{}, fmt.Errorf("stellar: getTransactions: %w", err)
	}
	if len(txs.Transactions) == 1 && txs.Transactions[0].Ledger == seq {
		return protocol.GetLedgersResponse{
			Ledgers:      []protocol.LedgerInfo{{Sequence: seq, LedgerCloseTime: txs.Transactions[0].LedgerCloseTime}},
			LatestLedger: txs.LatestLedger, LatestLedgerCloseTime: txs.LatestLedgerCloseTime,
			OldestLedger: txs.OldestLedger, OldestLedgerCloseTime: txs.OldestLedgerCloseTime,
		}, nil
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgersResponse, error) {
		return c.GetLedgers(ctx, protocol.GetLedgersRequest{StartLedger: seq, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	})
	if err != nil {
		return resp, fmt.Errorf("stellar: getLedgers: %w", err)
	}
	return resp, nil
}

// dayScanner decodes one day's transactions into a ChainDay.
type dayScanner struct {
	l   *RPCLedger
	cl  *ContractLedger
	day *transfer.ChainDay
}

// add decodes one transaction of the day.
func (s *dayScanner) add(tx protocol.TransactionInfo) error {
	s.day.Transactions++
	envRaw, err := base64.StdEncoding.DecodeString(tx.EnvelopeXDR)
	if err != nil {
		return fmt.Errorf("stellar: transaction %s in ledger %d: envelope: %w", tx.TransactionHash, tx.Ledger, err)
	}
	metaRaw, err := base64.StdEncoding.DecodeString(tx.ResultMetaXDR)
	if err != nil {
		return fmt.Errorf("stellar: transaction %s in ledger %d: meta: %w", tx.TransactionHash, tx.Ledger, err)
	}
	if !s.mentionsVault(envRaw) && !s.mentionsVault(metaRaw) {
		// Nothing of it names the vault (or a vault contract): it neither pays from or to the
		// vault nor changes its entries. Most of a busy network's transactions end here, before
		// the costlier XDR decoding.
		return nil
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshal(envRaw, &env); err != nil {
		return fmt.Errorf("stellar: transaction %s in ledger %d: envelope: %w", tx.TransactionHash, tx.Ledger, err)
	}
	inner, outer := tx.TransactionHash, ""
	if env.IsFeeBump() {
		innerEnv := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: env.FeeBump.Tx.InnerTx.V1}
		h, err := network.HashTransactionInEnvelope(innerEnv, s.l.cfg.Passphrase)
		if err != nil {
			return fmt.Errorf("stellar: transaction %s: inner hash: %w", tx.TransactionHash, err)
		}
		inner, outer = hex.EncodeToString(h[:]), tx.TransactionHash
	}
	ops := env.Operations()
	txSource := env.SourceAccount().ToAccountId().Address()
	memo := memoOf(env.Memo())
	closeTime := time.Unix(tx.LedgerCloseTime, 0).UTC()
	var pays []transfer.ChainPayment
	var others []transfer.ChainOther
	for i, op := range ops {
		src := txSource
		if op.SourceAccount != nil {
			src = op.SourceAccount.ToAccountId().Address()
		}
		p, o := s.decodeOp(op, src)
		if p != nil {
			p.Hash, p.OuterHash, p.Ledger, p.CloseTime, p.Op, p.Ops, p.Memo = inner, outer, tx.Ledger, closeTime, i, len(ops), memo
			pays = append(pays, *p)
		}
		if o != nil {
			o.Hash, o.Ledger, o.Op = inner, tx.Ledger, i
			others = append(others, *o)
		}
	}
	if tx.Status != protocol.TransactionStatusSuccess {
		if len(pays) > 0 || len(others) > 0 || txSource == s.l.vaultAccount {
			s.day.Failed[inner] = tx.Ledger
			if outer != "" {
				s.day.Failed[outer] = tx.Ledger
			}
		}
		return nil
	}
	s.day.Payments = append(s.day.Payments, pays...)
	s.day.Other = append(s.day.Other, others...)
	if s.cl != nil {
		return nil
	}
	return s.balances(tx, metaRaw, pays)
}

// mentionsVault reports whether raw XDR holds the vault's public key, or a vault contract's ID in
// contract mode. Every XDR form of an account (AccountID, a muxed account, an ScAddress, a ledger
// key or entry) carries its 32-byte ed25519 key as is, and a contract's ScAddress its 32-byte ID,
// so XDR without them cannot name the vault.
func (s *dayScanner) mentionsVault(raw []byte) bool {
	if bytes.Contains(raw, s.l.vault.key[:]) {
		return true
	}
	if s.cl != nil {
		for _, c := range s.cl.contracts {
			if bytes.Contains(raw, c.key[:]) {
				return true
			}
		}
	}
	return false
}

// balances adds the vault's trustline changes of a successful transaction.
func (s *dayScanner) balances(tx protocol.TransactionInfo, metaRaw []byte, pays []transfer.ChainPayment) error {
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshal(metaRaw, &meta); err != nil {
		return fmt.Errorf("stellar: transaction %s: meta: %w", tx.TransactionHash, err)
	}
	changed := map[string]bool{}
	// Each change list is ordered: an entry's STATE (its value before) precedes its UPDATED or
	// REMOVED; CREATED and RESTORED have no STATE before them (stellar-core's
	// LedgerTxn::getChanges, the order go-stellar-sdk's ingest.GetChangesFromLedgerEntryChanges
	// pairs them in).
	var last map[string]int64 // the vault's balance per asset as of the last STATE
	for _, list := range changeLists(meta) {
		last = map[string]int64{}
		for _, c := range list {
			var entry *xdr.LedgerEntry
			switch c.Type {
			case xdr.LedgerEntryChangeTypeLedgerEntryState:
				entry = c.State
			case xdr.LedgerEntryChangeTypeLedgerEntryCreated:
				entry = c.Created
			case xdr.LedgerEntryChangeTypeLedgerEntryUpdated:
				entry = c.Updated
			case xdr.LedgerEntryChangeTypeLedgerEntryRestored:
				entry = c.Restored
			case xdr.LedgerEntryChangeTypeLedgerEntryRemoved:
				k := c.Removed
				if k == nil || k.Type != xdr.LedgerEntryTypeTrustline || k.TrustLine.AccountId.Address() != s.l.vaultAccount {
					continue
				}
				if code, ok := s.configured(k.TrustLine.Asset.ToAsset()); ok {
					s.move(code, last[code], 0)
					changed[code] = true
				}
				continue
			}
			if entry == nil || entry.Data.Type != xdr.LedgerEntryTypeTrustline {
				continue
			}
			tl := entry.Data.TrustLine
			if tl.AccountId.Address() != s.l.vaultAccount {
				continue
			}
			code, ok := s.configured(tl.Asset.ToAsset())
			if !ok {
				continue
			}
			bal := int64(tl.Balance)
			switch c.Type {
			case xdr.LedgerEntryChangeTypeLedgerEntryState:
				last[code] = bal
				continue
			case xdr.LedgerEntryChangeTypeLedgerEntryCreated:
				s.move(code, 0, bal)
			default:
				s.move(code, last[code], bal)
			}
			last[code] = bal
			changed[code] = true
		}
	}
	for _, p := range pays {
		if !changed[strings.ToUpper(p.Asset)] {
			m := s.day.Balances[strings.ToUpper(p.Asset)]
			m.Readable = false
			s.day.Balances[strings.ToUpper(p.Asset)] = m
		}
	}
	return nil
}

// move adds one change of the vault's balance in code, from before to after.
func (s *dayScanner) move(code string, before, after int64) {
	m := s.day.Balances[code]
	if !m.HasBalances {
		m.Opening, m.HasBalances = before, true
	}
	m.Net += after - before
	m.Closing = after
	s.day.Balances[code] = m
}

// changeLists are the ledger-entry change lists of a transaction's meta in the order they
// applied: the transaction's changes before its operations, each operation's, and after.
func changeLists(meta xdr.TransactionMeta) []xdr.LedgerEntryChanges {
	var out []xdr.LedgerEntryChanges
	switch meta.V {
	case 1:
		out = append(out, meta.V1.TxChanges)
		for _, op := range meta.V1.Operations {
			out = append(out, op.Changes)
		}
	case 2:
		out = append(out, meta.V2.TxChangesBefore)
		for _, op := range meta.V2.Operations {
			out = append(out, op.Changes)
		}
		out = append(out, meta.V2.TxChangesAfter)
	case 3:
		out = append(out, meta.V3.TxChangesBefore)
		for _, op := range meta.V3.Operations {
			out = append(out, op.Changes)
		}
		out = append(out, meta.V3.TxChangesAfter)
	case 4:
		out = append(out, meta.V4.TxChangesBefore)
		for _, op := range meta.V4.Operations {
			out = append(out, op.Changes)
		}
		out = append(out, meta.V4.TxChangesAfter)
	}
	return out
}

// configured is the configured asset's code (upper case) when a is one of them.
func (s *dayScanner) configured(a xdr.Asset) (string, bool) {
	var typ xdr.AssetType
	var code, issuer string
	if a.Extract(&typ, &code, &issuer) != nil || typ == xdr.AssetTypeAssetTypeNative {
		return "", false
	}
	va, ok := s.l.assets[strings.ToUpper(code)]
	if !ok || va.credit.Code != code || va.credit.Issuer != issuer {
		return "", false
	}
	return strings.ToUpper(code), true
}

// decodeOp is op (whose source account is src) as a vault payment, or as another operation
// touching the vault, or neither.
func (s *dayScanner) decodeOp(op xdr.Operation, src string) (*transfer.ChainPayment, *transfer.ChainOther) {
	vault := s.l.vaultAccount
	other := func(detail string) *transfer.ChainOther {
		return &transfer.ChainOther{Type: op.Body.Type.String(), Detail: detail}
	}
	switch op.Body.Type {
	case xdr.OperationTypePayment:
		p := op.Body.MustPaymentOp()
		dest := p.Destination.ToAccountId().Address()
		if src != vault && dest != vault {
			return nil, nil
		}
		code, ok := s.configured(p.Asset)
		if !ok {
			return nil, other("a payment of an asset that is not configured, from or to the vault")
		}
		if src == dest {
			return nil, other("a payment from the vault to itself")
		}
		cp := &transfer.ChainPayment{Asset: s.l.assets[code].credit.Code, Stroops: int64(p.Amount)}
		if src == vault {
			cp.Direction, cp.Counterparty = transfer.DirectionOut, dest
			if p.Destination.Type == xdr.CryptoKeyTypeKeyTypeMuxedEd25519 {
				cp.Muxed, _ = p.Destination.GetAddress()
				cp.MuxedID = strconv.FormatUint(uint64(p.Destination.Med25519.Id), 10)
			}
		} else {
			cp.Direction, cp.Counterparty = transfer.DirectionIn, src
		}
		return cp, nil
	case xdr.OperationTypeInvokeHostFunction:
		if s.cl == nil {
			if src == vault {
				return nil, other("a contract call whose operation source is the vault")
			}
			return nil, nil
		}
		return s.cl.decodeCall(op, src)
	case xdr.OperationTypePathPaymentStrictSend:
		if src == vault || op.Body.MustPathPaymentStrictSendOp().Destination.ToAccountId().Address() == vault {
			return nil, other("a path payment from or to the vault")
		}
	case xdr.OperationTypePathPaymentStrictReceive:
		if src == vault || op.Body.MustPathPaymentStrictReceiveOp().Destination.ToAccountId().Address() == vault {
			return nil, other("a path payment from or to the vault")
		}
	case xdr.OperationTypeAccountMerge:
		if src == vault || op.Body.MustDestination().ToAccountId().Address() == vault {
			return nil, other("an account merge of or into the vault")
		}
	case xdr.OperationTypeCreateAccount:
		if src == vault {
			return nil, other("an account created by the vault")
		}
	case xdr.OperationTypeClawback:
		if op.Body.MustClawbackOp().From.ToAccountId().Address() == vault {
			return nil, other("a clawback from the vault")
		}
	case xdr.OperationTypeSetOptions, xdr.OperationTypeManageData, xdr.OperationTypeBumpSequence, xdr.OperationTypeChangeTrust,
		xdr.OperationTypeAllowTrust, xdr.OperationTypeSetTrustLineFlags, xdr.OperationTypeBeginSponsoringFutureReserves,
		xdr.OperationTypeEndSponsoringFutureReserves, xdr.OperationTypeRevokeSponsorship, xdr.OperationTypeExtendFootprintTtl,
		xdr.OperationTypeRestoreFootprint, xdr.OperationTypeInflation:
		// They move no balance of the vault's (a ChangeTrust removes a trustline only at a zero
		// balance; a restore is the contract mode's own, ContractLedger.restore): not listed.
		// Whatever moved the vault's balance without a payment shows in the metadata's movement.
	default:
		// Offers, claimable balances, liquidity pools and any operation type to come: they can
		// move the vault's balance.
		if src == vault {
			return nil, other("an operation whose source is the vault")
		}
	}
	return nil, nil
}

// decodeCall is a vault contract's call: withdraw (out) or deposit (in) with (wallet: Address,
// amount: i128) in the contract's unit, as ContractLedger.buildCall makes it; any other call of a
// vault contract, or one whose arguments are not that shape, is another operation.
func (l *ContractLedger) decodeCall(op xdr.Operation, src string) (*transfer.ChainPayment, *transfer.ChainOther) {
	hf := op.Body.MustInvokeHostFunctionOp().HostFunction
	if hf.Type != xdr.HostFunctionTypeHostFunctionTypeInvokeContract || hf.InvokeContract == nil {
		if src == l.vaultAccount {
			return nil, &transfer.ChainOther{Type: op.Body.Type.String(), Detail: "a host function other than a contract call, with the vault as its source"}
		}
		return nil, nil
	}
	args := hf.InvokeContract
	var code string
	for c, addr := range l.contracts {
		if args.ContractAddress.Equals(addr.scAddress()) {
			code = c
		}
	}
	if code == "" {
		if src == l.vaultAccount {
			return nil, &transfer.ChainOther{Type: string(args.FunctionName), Detail: "a call of another contract with the vault as its operation source"}
		}
		return nil, nil
	}
	contract := l.contracts[code].String()
	fn := string(args.FunctionName)
	other := &transfer.ChainOther{Type: fn, Detail: "a call of the vault contract " + contract + " that is not a withdraw or deposit of (Address, i128)"}
	var dir string
	switch fn {
	case l.withdrawFn:
		dir = transfer.DirectionOut
	case l.depositFn:
		dir = transfer.DirectionIn
	default:
		return nil, other
	}
	if len(args.Args) != 2 || args.Args[0].Type != xdr.ScValTypeScvAddress || args.Args[1].Type != xdr.ScValTypeScvI128 {
		return nil, other
	}
	wallet, err := args.Args[0].Address.String()
	if err != nil {
		return nil, other
	}
	stroops, ok := l.stroopsOf(*args.Args[1].I128)
	if !ok {
		other.Detail = "a " + fn + " of the vault contract " + contract + " whose amount is not a whole number of stroops"
		return nil, other
	}
	return &transfer.ChainPayment{Direction: dir, Counterparty: wallet, Asset: l.assets[code].credit.Code, Stroops: stroops,
		Function: fn, Contract: contract}, nil
}

// stroopsOf is an amount in the contract's unit in stroops, when it is a whole, positive number
// of stroops that fits an int64.
func (l *ContractLedger) stroopsOf(v xdr.Int128Parts) (int64, bool) {
	n := new(big.Int).Lsh(big.NewInt(int64(v.Hi)), 64)
	n.Or(n, new(big.Int).SetUint64(uint64(v.Lo)))
	if n.Sign() <= 0 {
		return 0, false
	}
	q, r := new(big.Int).QuoRem(n, l.scale, new(big.Int))
	if r.Sign() != 0 {
		return 0, false
	}
	q.Mul(q, big.NewInt(l.unscale))
	if !q.IsInt64() {
		return 0, false
	}
	return q.Int64(), true
}

// memoOf is a transaction's memo as transfer.Memo (the zero Memo for none): an id in decimal, a
// hash or return in lower-case hex, text as is.
func memoOf(m xdr.Memo) transfer.Memo {
	switch m.Type {
	case xdr.MemoTypeMemoText:
		return transfer.Memo{Type: transfer.MemoText, Value: m.MustText()}
	case xdr.MemoTypeMemoId:
		return transfer.Memo{Type: transfer.MemoID, Value: strconv.FormatUint(uint64(m.MustId()), 10)}
	case xdr.MemoTypeMemoHash:
		h := m.MustHash()
		return transfer.Memo{Type: transfer.MemoHash, Value: hex.EncodeToString(h[:])}
	case xdr.MemoTypeMemoReturn:
		h := m.MustRetHash()
		return transfer.Memo{Type: transfer.MemoReturn, Value: hex.EncodeToString(h[:])}
	}
	return transfer.Memo{}
}

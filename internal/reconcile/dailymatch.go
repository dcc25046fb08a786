package reconcile

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// How the daily report sets the table against the chain (daily.go has the report's shape and
// its rules): the chain's reading checked to be the whole day, each record paired with its
// payment, each list and asset's movement filled.

// wholeDay checks that chain is the day starting at start as transfer.DayReader promises it: the
// whole day unless partial (End = start + 24 h; so far, End within it), its ledgers' close times
// (when given) within [Start, End), and every payment, other operation and failed transaction in its ledgers. A
// reading that is not (a part of the day, a ledger of the day before or after) is never reported
// as the day: a payment counted in two days' reports, or a day's half counted as all of it.
func wholeDay(chain transfer.ChainDay, start time.Time, partial bool) error {
	end := start.Add(24 * time.Hour)
	switch {
	case !chain.Start.Equal(start):
		return fmt.Errorf("the chain's day starts at %s, not %s", chain.Start.UTC().Format(time.RFC3339), start.Format(time.RFC3339))
	case !partial && !chain.End.Equal(end), partial && (chain.End.After(end) || !chain.End.After(start)):
		return fmt.Errorf("the chain's day ends at %s: not the whole day to %s", chain.End.UTC().Format(time.RFC3339), end.Format(time.RFC3339))
	case chain.FirstLedger == 0 && (len(chain.Payments) > 0 || len(chain.Other) > 0 || len(chain.Failed) > 0):
		return errors.New("the chain's day has no ledger, yet transactions")
	case chain.FirstLedger != 0 && (chain.LastLedger < chain.FirstLedger || !chain.FirstClose.IsZero() && chain.FirstClose.Before(chain.Start) ||
		!chain.LastClose.IsZero() && !chain.LastClose.Before(chain.End)):
		return fmt.Errorf("the chain's day's ledgers %d to %d closed %s to %s, not within the day", chain.FirstLedger, chain.LastLedger,
			chain.FirstClose.UTC().Format(time.RFC3339), chain.LastClose.UTC().Format(time.RFC3339))
	}
	in := func(l uint32) bool { return l >= chain.FirstLedger && l <= chain.LastLedger }
	for _, p := range chain.Payments {
		if !in(p.Ledger) {
			return fmt.Errorf("the chain's day holds a payment of ledger %d, outside its ledgers %d to %d", p.Ledger, chain.FirstLedger, chain.LastLedger)
		}
	}
	for _, o := range chain.Other {
		if !in(o.Ledger) {
			return fmt.Errorf("the chain's day holds an operation of ledger %d, outside its ledgers %d to %d", o.Ledger, chain.FirstLedger, chain.LastLedger)
		}
	}
	for _, l := range chain.Failed {
		if !in(l) {
			return fmt.Errorf("the chain's day holds a failed transaction of ledger %d, outside its ledgers %d to %d", l, chain.FirstLedger, chain.LastLedger)
		}
	}
	return nil
}

// recordHashes are the hashes that name rec's transaction: its result's and its envelope's.
func recordHashes(rec transfer.Record) []string {
	var hs []string
	if rec.Result != nil && rec.Result.TransactionHash != "" {
		hs = append(hs, strings.ToLower(rec.Result.TransactionHash))
	}
	if rec.Envelope != nil {
		for _, h := range rec.Envelope.Hashes() {
			if h != "" {
				hs = append(hs, strings.ToLower(h))
			}
		}
	}
	return hs
}

// paid reports whether rec is settled as paid: replayable.
func paid(rec transfer.Record) bool { return rec.Status == transfer.StatusReplayable }

// buildReport sets side against chain for the day starting at start.
func buildReport(start, now time.Time, chain transfer.ChainDay, side tableSide) *DailyReport {
	r := &DailyReport{Action: ActionDaily, Day: start.Format(time.DateOnly), GeneratedAt: now, ContractMode: chain.ContractMode,
		Ledgers: DailyLedgers{First: chain.FirstLedger, Last: chain.LastLedger, FirstClose: chain.FirstClose, LastClose: chain.LastClose,
			Transactions: chain.Transactions}}
	inDay := func(ledger uint32) bool {
		return chain.FirstLedger > 0 && ledger >= chain.FirstLedger && ledger <= chain.LastLedger
	}
	// The day's payments by hash (inner and outer), in order.
	byHash := map[string][]int{}
	for i, p := range chain.Payments {
		byHash[strings.ToLower(p.Hash)] = append(byHash[strings.ToLower(p.Hash)], i)
		if p.OuterHash != "" {
			byHash[strings.ToLower(p.OuterHash)] = append(byHash[strings.ToLower(p.OuterHash)], i)
		}
	}
	explained := make([]bool, len(chain.Payments))
	notes := make([]DailyPayment, len(chain.Payments))
	assets := map[string]*DailyAsset{}
	asset := func(code string) *DailyAsset {
		k := strings.ToUpper(code)
		if a := assets[k]; a != nil {
			return a
		}
		a := &DailyAsset{Asset: code}
		assets[k] = a
		return a
	}
	for code := range chain.Balances {
		asset(code)
	}
	for _, p := range chain.Payments {
		asset(p.Asset).ChainNet += signed(p)
	}
	// find: rec's payment among its transaction's in the day, and whether its transaction failed.
	// A payment explains one transfer: a second record naming the same transaction finds none. A
	// batch's key is its own operation (BatchRef.Index) and no other; any other transfer is the
	// payment that is exactly what it asked for, else the first not yet explained, so that the
	// order the records are read in never pairs a transfer with a payment beside its own.
	find := func(rec transfer.Record) (int, bool) {
		first := -1
		for _, h := range recordHashes(rec) {
			for _, i := range byHash[h] {
				if explained[i] || rec.Batch != nil && chain.Payments[i].Op != rec.Batch.Index {
					continue
				}
				if len(differences(rec, chain.Payments[i])) == 0 {
					return i, false
				}
				if first < 0 {
					first = i
				}
			}
		}
		if first >= 0 {
			return first, false
		}
		for _, h := range recordHashes(rec) {
			if _, ok := chain.Failed[h]; ok {
				return -1, true
			}
		}
		return -1, false
	}
	for _, rec := range side.records {
		i, failed := find(rec)
		if !paid(rec) {
			if i >= 0 && !explained[i] {
				notes[i] = DailyPayment{Note: "its transfer is recorded as " + string(rec.Status) + ", not as paid", StoreKey: logging.Redact(rec.StoreKey)}
			}
			// A forced discard says nothing moved where the ledger could not prove it (its
			// transaction may have landed on a day whose report listed it in doubt): listed on
			// the day it was forced, as a forced resolution is.
			if i < 0 && rec.Status == transfer.StatusReleased && rec.Audit != nil && rec.Audit.Forced && transfer.ArchiveDay(rec.UpdatedAt) == r.Day {
				r.Unsure = append(r.Unsure, itemOfRecord(rec))
			}
			continue
		}
		ledger := uint32(0)
		if rec.Result != nil {
			ledger = rec.Result.Ledger
		}
		// Whose day is it: the ledger the table recorded, or, for a record without one (a forced
		// resolution), the ledger the chain shows it in.
		switch {
		case ledger != 0 && !inDay(ledger):
			if i >= 0 {
				// Recorded in another ledger, yet its transaction is in this day: a difference.
				p := chain.Payments[i]
				explained[i] = true
				it := itemOfRecord(rec)
				it.OnChain, it.ChainLedger = true, p.Ledger
				it.Differences = append(differences(rec, p), DailyDifference{Field: "ledger", Here: u32(ledger), Chain: u32(p.Ledger)})
				addTransfer(asset(rec.Request.Asset), rec)
				r.Differs = append(r.Differs, it)
			} else if failed {
				// Recorded as landed in another ledger, yet included FAILED in this day.
				addTransfer(asset(rec.Request.Asset), rec)
				r.Failed = append(r.Failed, itemOfRecord(rec))
			}
			continue
		case ledger == 0 && i < 0 && !failed:
			// Forced by an operator, or (never written so, yet possible in a record) settled
			// without its ledger: listed on the day it settled, never left out.
			if transfer.ArchiveDay(rec.UpdatedAt) == r.Day {
				r.Unsure = append(r.Unsure, itemOfRecord(rec))
			}
			continue
		}
		addTransfer(asset(rec.Request.Asset), rec)
		it := itemOfRecord(rec)
		switch {
		case i >= 0:
			p := chain.Payments[i]
			explained[i] = true
			it.OnChain, it.ChainLedger = true, p.Ledger
			diffs := differences(rec, p)
			if ledger != 0 && ledger != p.Ledger {
				diffs = append(diffs, DailyDifference{Field: "ledger", Here: u32(ledger), Chain: u32(p.Ledger)})
			}
			if len(diffs) == 0 {
				r.Matched++
				continue
			}
			it.Differences = diffs
			r.Differs = append(r.Differs, it)
		case failed:
			r.Failed = append(r.Failed, it)
		default:
			r.Absent = append(r.Absent, it)
		}
	}
	// The items not settled: their payment on chain is explained (not unexplained: the sweep or
	// an operator will settle it), and shown with the item.
	notSettled := func(rec transfer.Record) (DailyItem, bool) {
		it := itemOfRecord(rec)
		if rec.Envelope != nil {
			it.TransactionHash = rec.Envelope.InnerHash
		}
		for _, h := range recordHashes(rec) {
			is := byHash[h]
			if len(is) == 0 {
				continue
			}
			// Its own payment: a batch's key its operation, any other the first not yet
			// explained; a second payment of its transaction stays unexplained.
			pick := -1
			for _, i := range is {
				if rec.Batch != nil && chain.Payments[i].Op != rec.Batch.Index {
					continue
				}
				if pick < 0 || explained[pick] && !explained[i] {
					pick = i
				}
			}
			if pick < 0 {
				pick = is[0]
			}
			p := chain.Payments[pick]
			if !explained[pick] {
				explained[pick] = true
				asset(p.Asset).InDoubtNet += signed(p)
			}
			it.OnChain, it.ChainLedger = true, p.Ledger
			break
		}
		return it, it.OnChain || !rec.CreatedAt.After(start.Add(24*time.Hour))
	}
	for _, rec := range side.live {
		if it, ok := notSettled(rec); ok {
			r.InDoubt = append(r.InDoubt, it)
		}
	}
	for _, rec := range side.unsettled {
		if it, ok := notSettled(rec); ok {
			r.Unsettled = append(r.Unsettled, it)
		}
	}
	for i, p := range chain.Payments {
		if explained[i] {
			continue
		}
		dp := notes[i]
		dp.ChainPayment = p
		if dp.Note == "" && slices.ContainsFunc(byHash[strings.ToLower(p.Hash)], func(j int) bool { return j != i && explained[j] }) {
			dp.Note = "another payment of the same transaction is a transfer's; this one is not"
		}
		asset(p.Asset).UnexplainedNet += signed(p)
		r.Unknown = append(r.Unknown, dp)
	}
	r.Other = append(r.Other, chain.Other...)
	codes := make([]string, 0, len(assets))
	for k := range assets {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for _, k := range codes {
		a := assets[k]
		a.Net = a.Received - a.PaidOut
		if m, ok := chain.Balances[k]; ok && m.Readable && !chain.ContractMode {
			a.ActualReadable = true
			net := m.Net
			a.ActualNet = &net
			if m.HasBalances {
				o, c := m.Opening, m.Closing
				a.Opening, a.Closing = &o, &c
			}
			a.Difference = net - a.Net
			a.BalanceMismatch = net != a.ChainNet
		} else {
			a.Difference = a.ChainNet - a.Net
		}
		if a.BalanceMismatch {
			r.Counts.Balance++
		}
		r.Assets = append(r.Assets, *a)
	}
	r.Counts.Absent, r.Counts.Failed, r.Counts.Mismatched = len(r.Absent), len(r.Failed), len(r.Differs)
	r.Counts.Unexplained, r.Counts.Other, r.Counts.InDoubt, r.Counts.Unverified = len(r.Unknown), len(r.Other), len(r.InDoubt), len(r.Unsure)
	r.Counts.Unsettled = len(r.Unsettled)
	r.Discrepancies = r.Counts.Absent + r.Counts.Failed + r.Counts.Mismatched + r.Counts.Unexplained + r.Counts.Other + r.Counts.Balance
	r.OK = r.Discrepancies == 0
	r.Absent, r.Failed, r.Differs = clip(r.Absent), clip(r.Failed), clip(r.Differs)
	r.InDoubt, r.Unsure, r.Unknown, r.Unsettled = clip(r.InDoubt), clip(r.Unsure), clip(r.Unknown), clip(r.Unsettled)
	r.Other = clip(r.Other)
	return r
}

// encodeReport is r's JSON within DailyMaxBytes: while it is larger, every list (and Supersedes,
// its latest entries) is clipped to half as many entries, down to one, and ListMax says to how
// many. The counts stay exact, so a day with the most wrong is stored and paged, never refused
// by the store for its size.
func encodeReport(r *DailyReport) ([]byte, error) {
	r.ListMax = DailyListMax
	for {
		body, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		// Whatever else a text of the report holds (a chain memo, a note), no seed is logged or
		// stored: Redact keeps JSON valid (its mark holds no character JSON escapes).
		body = []byte(logging.Redact(string(body)))
		if len(body) <= DailyMaxBytes || r.ListMax == 1 {
			return body, nil
		}
		n := r.ListMax / 2
		r.ListMax = n
		r.Absent, r.Failed, r.Differs = r.Absent[:min(len(r.Absent), n)], r.Failed[:min(len(r.Failed), n)], r.Differs[:min(len(r.Differs), n)]
		r.Unknown, r.Other = r.Unknown[:min(len(r.Unknown), n)], r.Other[:min(len(r.Other), n)]
		r.InDoubt, r.Unsettled, r.Unsure = r.InDoubt[:min(len(r.InDoubt), n)], r.Unsettled[:min(len(r.Unsettled), n)], r.Unsure[:min(len(r.Unsure), n)]
		r.Supersedes = r.Supersedes[max(0, len(r.Supersedes)-n):]
	}
}

// clip keeps the first DailyListMax entries, and never answers null for an empty list.
func clip[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s[:min(len(s), DailyListMax)]
}

// signed is p's amount as the vault sees it: negative out, positive in.
func signed(p transfer.ChainPayment) int64 {
	if p.Direction == transfer.DirectionOut {
		return -p.Stroops
	}
	return p.Stroops
}

// addTransfer adds rec's amount to what the transfers say moved.
func addTransfer(a *DailyAsset, rec transfer.Record) {
	if rec.Request.OperationType == transfer.Deposit {
		a.Received += rec.Request.Stroops
	} else {
		a.PaidOut += rec.Request.Stroops
	}
}

// differences are the fields in which p is not the payment rec asked for.
func differences(rec transfer.Record, p transfer.ChainPayment) []DailyDifference {
	var out []DailyDifference
	req := rec.Request
	want := transfer.DirectionOut
	if req.OperationType == transfer.Deposit {
		want = transfer.DirectionIn
	}
	if p.Direction != want {
		out = append(out, DailyDifference{Field: "direction", Here: want, Chain: p.Direction})
	}
	if req.Stroops != p.Stroops {
		out = append(out, DailyDifference{Field: "amount", Here: stroopsText(req.Stroops), Chain: stroopsText(p.Stroops)})
	}
	if !strings.EqualFold(req.Asset, p.Asset) {
		out = append(out, DailyDifference{Field: "asset", Here: req.Asset, Chain: p.Asset})
	}
	w := req.Wallet()
	switch {
	case w.Muxed():
		if p.Counterparty != w.Account || p.Muxed == "" || p.MuxedID != strconv.FormatUint(w.MuxedID, 10) {
			out = append(out, DailyDifference{Field: "walletAddress", Here: w.Address, Chain: chainWallet(p)})
		}
	case p.Counterparty != req.WalletAddress || p.Muxed != "":
		out = append(out, DailyDifference{Field: "walletAddress", Here: req.WalletAddress, Chain: chainWallet(p)})
	}
	// The hash the table recorded (and answers its client) must be one the chain shows for this
	// payment: its inner hash, or the outer hash that landed. A fee bump replaced by fee has
	// several outer hashes, of which only one can land.
	if rec.Result != nil && rec.Result.TransactionHash != "" {
		h := strings.ToLower(rec.Result.TransactionHash)
		if h != strings.ToLower(p.Hash) && h != strings.ToLower(p.OuterHash) {
			landed := p.Hash
			if p.OuterHash != "" {
				landed = p.OuterHash
			}
			out = append(out, DailyDifference{Field: "transactionHash", Here: h, Chain: strings.ToLower(landed)})
		}
	}
	if req.Memo != p.Memo {
		out = append(out, DailyDifference{Field: "memo", Here: memoText(req.Memo), Chain: memoText(p.Memo)})
	}
	return out
}

func chainWallet(p transfer.ChainPayment) string {
	if p.Muxed != "" {
		return p.Muxed
	}
	return p.Counterparty
}

func memoText(m transfer.Memo) string {
	if m.IsZero() {
		return "none"
	}
	return string(m.Type) + ":" + logging.Redact(m.Value)
}

func u32(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// stroopsText is an amount of stroops in units, as the API writes amounts ("12.5").
func stroopsText(v int64) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v/transfer.StroopsPerUnit, 10)
	if f := v % transfer.StroopsPerUnit; f != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(f+transfer.StroopsPerUnit, 10)[1:], "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// itemOfRecord is rec as a report lists it; texts a client wrote are redacted (itemOf), and so is
// the store key, which holds the idempotency key: the report is logged whole.
func itemOfRecord(rec transfer.Record) DailyItem {
	v := itemOf(rec)
	it := DailyItem{StoreKey: logging.Redact(v.StoreKey), IdempotencyKey: v.IdempotencyKey, Status: v.Status, OperationType: v.OperationType,
		WalletAddress: v.WalletAddress, Amount: v.Amount, Asset: v.Asset, Memo: v.Memo, TransactionHash: v.TransactionHash,
		Ledger: v.Ledger, Forced: rec.Audit != nil && rec.Audit.Forced}
	if rec.Status != transfer.StatusInDoubt && rec.Status != transfer.StatusInFlight && rec.Status != transfer.StatusQueued {
		it.SettledAt = rec.UpdatedAt
	}
	return it
}

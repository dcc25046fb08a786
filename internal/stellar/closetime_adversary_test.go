package stellar

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// olderRPC answers as a stellar-rpc before 25.0.0: getLatestLedger without closeTime, showing
// *latest; getLedgers answers with ledgers(start); getTransaction NOT_FOUND over [1, *searched].
func olderRPC(t *testing.T, latest, searched *uint32, ledgers func(start uint32) (any, *rpcError)) *unitEnv {
	t.Helper()
	e := newUnitEnv(t)
	e.fake.handle("getLatestLedger", func(json.RawMessage) (any, *rpcError) {
		return map[string]any{"id": strings.Repeat("0", 64), "protocolVersion": 23, "sequence": *latest}, nil
	})
	e.fake.handle("getLedgers", func(p json.RawMessage) (any, *rpcError) {
		var req protocol.GetLedgersRequest
		if err := json.Unmarshal(p, &req); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		return ledgers(req.StartLedger)
	})
	e.fake.handle("getTransaction", func(json.RawMessage) (any, *rpcError) {
		return protocol.GetTransactionResponse{TransactionDetails: protocol.TransactionDetails{Status: protocol.TransactionStatusNotFound},
			LatestLedger: *searched, OldestLedger: 1}, nil
	})
	return e
}

func ledgerPage(seqs ...uint32) func(closeTimes map[uint32]int64) protocol.GetLedgersResponse {
	return func(closeTimes map[uint32]int64) protocol.GetLedgersResponse {
		var page protocol.GetLedgersResponse
		for _, s := range seqs {
			page.Ledgers = append(page.Ledgers, protocol.LedgerInfo{Sequence: s, LedgerCloseTime: closeTimes[s]})
		}
		return page
	}
}

// envelopeFor is an envelope submitted at ledger 50 with maxTime 1_500 (no XDR: only the
// history's coverage can prove it dead here).
func envelopeFor() transfer.Envelope {
	return transfer.Envelope{InnerHash: strings.Repeat("ab", 32), MaxTime: 1_500, SubmittedLedger: 50}
}

// Rule (internal/transfer/doc.go and proof.go: when an envelope is proven dead): the ledger whose close time is after maxTime must be the ledger
// read before the lookup began. On a stellar-rpc without closeTime, a getLedgers page that does
// not start at that ledger (an instance that pruned it, or answers from a later one) or an error
// gives no close time: a later ledger's close time is never lent to the one read.
func TestCloseTimeOnlyOfTheLedgerRead(t *testing.T) {
	closeTimes := map[uint32]int64{100: 1_400, 101: 1_600, 102: 1_700}
	for name, ledgers := range map[string]func(uint32) (any, *rpcError){
		"page starts later": func(uint32) (any, *rpcError) { return ledgerPage(101, 102)(closeTimes), nil },
		"error": func(uint32) (any, *rpcError) {
			return nil, &rpcError{Code: -32600, Message: "start ledger out of range"}
		},
		"empty page":    func(uint32) (any, *rpcError) { return protocol.GetLedgersResponse{LatestLedger: 99}, nil },
		"no close time": func(uint32) (any, *rpcError) { return ledgerPage(100)(map[uint32]int64{}), nil },
	} {
		t.Run(name, func(t *testing.T) {
			latest, searched := uint32(100), uint32(100)
			e := olderRPC(t, &latest, &searched, ledgers)
			env := envelopeFor()
			lk, err := e.ledger.Lookup(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			if !lk.LatestLedgerCloseTime.IsZero() || transfer.ProvenDead(env, lk) {
				t.Errorf("lookup %+v: ledger 100 closed at 1400 (before maxTime 1500); nothing may be proven", lk)
			}
		})
	}
}

// Rule: the close time cached per ledger is that ledger's only. After ledger 101 (closed after
// maxTime) was read, an instance that shows ledger 100 (closed before maxTime) and searched only
// through it proves nothing; the ledger read before the lookup, once it is 101 again on an
// instance whose history reaches it, proves the envelope dead, reading 101's close time once.
func TestCloseTimeCachedPerLedgerOnly(t *testing.T) {
	closeTimes := map[uint32]int64{100: 1_400, 101: 1_600}
	latest, searched := uint32(101), uint32(101)
	e := olderRPC(t, &latest, &searched, func(start uint32) (any, *rpcError) {
		if _, ok := closeTimes[start]; !ok {
			return nil, &rpcError{Code: -32600, Message: "start ledger out of range"}
		}
		return ledgerPage(start)(closeTimes), nil
	})
	env := envelopeFor()
	ctx := context.Background()
	lk, err := e.ledger.Lookup(ctx, env)
	if err != nil || !transfer.ProvenDead(env, lk) || lk.LatestLedgerCloseTime.Unix() != 1_600 {
		t.Fatalf("ledger 101 read and searched: %+v, %v; want proven dead at 1600", lk, err)
	}
	latest, searched = 100, 100 // a lagging instance
	lk, err = e.ledger.Lookup(ctx, env)
	if err != nil || transfer.ProvenDead(env, lk) || lk.LatestLedgerCloseTime.Unix() != 1_400 {
		t.Fatalf("ledger 100 read: %+v, %v; want its own close time 1400 and no proof", lk, err)
	}
	latest, searched = 101, 100 // shows 101, its search trails
	lk, err = e.ledger.Lookup(ctx, env)
	if err != nil || transfer.ProvenDead(env, lk) {
		t.Fatalf("search through 100 only: %+v, %v; want no proof", lk, err)
	}
	n := 0
	for _, m := range e.fake.methods() {
		if m == "getLedgers" {
			n++
		}
	}
	if n != 2 || !slices.Contains(e.fake.methods(), "getLatestLedger") {
		t.Errorf("getLedgers called %d times (%v), want 2: once for 101, once for 100", n, e.fake.methods())
	}
}

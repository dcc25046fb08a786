package stellar_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Replace-by-fee through the whole stack: the orchestrator, the real payment ledger (RPC or
// Horizon, channel accounts fee-bumped by the fee account), minidyn and the local network with
// its lanes scaled down and background traffic, on one virtual clock (payRig).

// item reads the transfer's item from the store.
func (r *payRig) item(key string) transfer.Record {
	r.t.Helper()
	rec, err := r.store.Get(context.Background(), transfer.StoreKey(r.wallet, key))
	if err != nil {
		r.t.Fatalf("item %s: %v", key, err)
	}
	return rec
}

// sentHashes is the set of envelope hashes the service sent (its records on the network).
func (r *payRig) sentHashes() map[string]stellarsim.ReceivedEnvelope {
	out := map[string]stellarsim.ReceivedEnvelope{}
	for _, e := range r.ours() {
		out[e.Hash] = e
	}
	return out
}

// surged is a rig whose classic lane (20 operations a ledger) has been surge priced for 12
// ledgers by others bidding 200 to 2,000 stroops for 30 a ledger, so the fee stats show it.
func surged(t *testing.T, backend string, maxFee int64) *payRig {
	r := newPayRig(t, payRigOpts{backend: backend, channels: 2, classicOps: 20, maxFee: maxFee, feePercentile: 90})
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 200, FeeMax: 2_000}); err != nil {
		t.Fatal(err)
	}
	r.ledgers(12)
	return r
}

func eachBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) { test(t, backend) })
	}
}

// A fee spike right after the first send outbids the envelope (others bid 10x the clearing fee,
// 40 a ledger into a lane of 20 and a queue of 40): it waits, and two ledgers later the service
// wraps the same inner transaction again at 10x its rate, records the new outer hash, sends it,
// and it lands within the budget. Without the replacement the envelope is evicted, banned, and
// the transfer waits for its maxTime and expires.
func TestReplaceByFeeLandsAfterASpike(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 100_000)
		var once sync.Once
		r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
			if step == transfer.StepSent {
				once.Do(func() { r.spikeNow(10, 45) })
			}
			return nil
		}
		start := r.clock.Now()
		out, err := r.transfer("spiked-1", 5)
		if err != nil {
			r.logSent()
			t.Fatalf("transfer: %v", err)
		}
		if took := r.clock.Now().Sub(start); took > transfer.DefaultSettings().Timeout {
			t.Errorf("landed after %v, past the budget", took)
		}
		rec := r.item("spiked-1")
		r.logSent()
		outers := rec.Envelope.Outers()
		if len(outers) < 2 || rec.Status != transfer.StatusReplayable || rec.Envelope.InnerHash != out.TransactionHash {
			t.Fatalf("item %s with outer hashes %v (inner %s), want replayable with the first and its replacement, answered with the inner hash %s",
				rec.Status, outers, rec.Envelope.InnerHash, out.TransactionHash)
		}
		a, ok := r.net.Transaction(out.TransactionHash)
		if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != outers[len(outers)-1] {
			t.Fatalf("applied %+v (%v), want the replacement %s", a, ok, outers[len(outers)-1])
		}
		sent := r.sentHashes()
		for i, h := range outers {
			if _, ok := sent[h]; !ok {
				t.Errorf("outer hash %d (%s) on the item was never sent", i, h)
			}
		}
		first, last := offered(t, sent[outers[0]].EnvelopeXDR), offered(t, sent[outers[len(outers)-1]].EnvelopeXDR)
		if last < 10*first {
			t.Errorf("replacement bids %d per slot, want at least 10 x %d", last, first)
		}
		if rec.Result.FeeChargedStroops != a.FeeCharged {
			t.Errorf("stored fee %d, the network charged %d", rec.Result.FeeChargedStroops, a.FeeCharged)
		}
		classic, _, _ := r.net.ClearingFee(a.Ledger)
		t.Logf("landed at ledger %d after %v: bids %d then %d per slot, charged %d (clearing %d per operation); %d envelopes sent",
			a.Ledger, r.clock.Now().Sub(start), first, last, a.FeeCharged, classic, len(r.ours()))
	})
}

// logSent logs what the service sent and the last ledgers' clearing fees.
func (r *payRig) logSent() {
	for _, e := range r.ours() {
		r.t.Logf("sent at %s (ledger %d): %s %s %s, bid %d: %s", e.At.Format("15:04:05.0"), e.LatestLedger, e.Hash[:8], e.Status, e.Code, offered(r.t, e.EnvelopeXDR), e.Outcome)
	}
	for _, l := range r.net.CongestionReport(10).Ledgers {
		r.t.Logf("ledger %d: clearing %d, %d ops", l.Sequence, l.ClassicBaseFee, l.ClassicOps)
	}
}

// spikeNow starts a fee spike at once: k one-payment transactions from new accounts, each
// bidding mult x the classic clearing fee of the last ledger, enter the queue now (evicting the
// lowest bids), and the background traffic bids at least the clearing fee they set (the next
// ledger's) for two minutes from the next close.
func (r *payRig) spikeNow(mult int64, k int) {
	r.t.Helper()
	clearing, _, _ := r.net.ClearingFee(r.net.LatestLedger().Sequence)
	if !r.foreignPayments(mult*max(clearing, 100), k) {
		return
	}
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 12, PerLedger: 30, FeeMin: 200, FeeMax: 2_000,
		Spikes: []stellarsim.Spike{{For: 2 * time.Minute, Multiplier: 1, PerLedger: 40}}}); err != nil {
		r.t.Error(err)
	}
}

// foreignPayments submits k one-payment transactions from new accounts, each bidding fee per
// operation, into the queue now (evicting the lowest bids when it is full). It reports whether
// all were submitted (a failure is reported on the test).
func (r *payRig) foreignPayments(fee int64, k int) bool {
	r.t.Helper()
	rpc := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer rpc.Close()
	for range k {
		kp, err := r.net.CreateKeypair(1_000 * unit)
		if err != nil {
			r.t.Error(err)
			return false
		}
		acct, _ := r.net.Account(kp.Address())
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
			SourceAccount: &txnbuild.SimpleAccount{AccountID: kp.Address(), Sequence: acct.Sequence + 1},
			Operations:    []txnbuild.Operation{&txnbuild.Payment{Destination: r.wallet, Amount: "1", Asset: txnbuild.NativeAsset{}}},
			BaseFee:       fee,
			Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, r.clock.Now().Add(5*time.Minute).Unix())},
		})
		if err == nil {
			tx, err = tx.Sign(r.net.Passphrase(), kp)
		}
		var b64 string
		if err == nil {
			b64, err = tx.Base64()
		}
		if err == nil {
			_, err = rpc.SendTransaction(context.Background(), protocol.SendTransactionRequest{Transaction: b64})
		}
		if err == nil {
			h, _ := tx.HashHex(r.net.Passphrase())
			r.foreign[h] = true
		}
		if err != nil {
			r.t.Error(err)
			return false
		}
	}
	return true
}

// keepOut makes the next submission be included only n ledgers later than it could be
// (delay_inclusion), and arms the orchestrator so that every send of a replacement is answered
// TRY_AGAIN_LATER without being queued: the first envelope stays and lands after all.
func (r *payRig) refuseReplacements(n int) {
	r.t.Helper()
	if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: n}); err != nil {
		r.t.Fatal(err)
	}
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepReplacing {
			if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER", Count: 20}); err != nil {
				r.t.Error(err)
			}
		}
		return nil
	}
}

// A replace-by-fee whose FIRST outer envelope lands after all: the replacement is recorded and
// sent, but the network does not take it (TRY_AGAIN_LATER, as a node that never saw it or a
// replacement that came too late), and the first fee bump, held back two ledgers, is included.
// The lookups find it (by the inner hash, and the first outer hash on the item), the item is
// settled replayable with the inner hash and the fee the first was charged, and the same key
// replays it with the same hash. Both outer hashes stay on the item.
func TestReplaceByFeeFirstEnvelopeLandsAfterAll(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 100_000)
		r.refuseReplacements(2)
		out, err := r.transfer("first-wins-1", 5)
		if err != nil {
			t.Fatalf("transfer: %v (our envelopes: %+v)", err, r.ours())
		}
		rec := r.item("first-wins-1")
		outers := rec.Envelope.Outers()
		if len(outers) < 2 || rec.Status != transfer.StatusReplayable {
			t.Fatalf("item %s with outer hashes %v, want replayable holding the first and its replacement", rec.Status, outers)
		}
		a, ok := r.net.Transaction(out.TransactionHash)
		if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != outers[0] {
			t.Fatalf("applied %+v (%v), want the FIRST fee bump %s", a, ok, outers[0])
		}
		if out.TransactionHash != rec.Envelope.InnerHash || rec.Result.TransactionHash != rec.Envelope.InnerHash ||
			rec.Result.Ledger != a.Ledger || rec.Result.FeeChargedStroops != a.FeeCharged {
			t.Errorf("answered %s, stored %+v; want the inner hash %s, ledger %d, fee %d", out.TransactionHash, rec.Result, rec.Envelope.InnerHash, a.Ledger, a.FeeCharged)
		}
		sent := r.sentHashes()
		if e, ok := sent[outers[1]]; !ok || e.Accepted {
			t.Errorf("replacement %s: %+v, want sent and not taken", outers[1], e)
		}
		again, err := r.transfer("first-wins-1", 5)
		if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash || again.Ledger != a.Ledger {
			t.Fatalf("replay: %+v, %v; want %s at ledger %d, replayed", again, err, out.TransactionHash, a.Ledger)
		}
		if n := len(r.net.Applied()); n == 0 {
			t.Fatal("nothing applied")
		}
		paid := 0
		for _, ap := range r.net.Applied() {
			if ap.Hash == rec.Envelope.InnerHash {
				paid++
			}
		}
		if paid != 1 {
			t.Errorf("the transfer applied %d times", paid)
		}
	})
}

// lossyStore is the rig's store whose next write of a replacement's outer hash applies but whose
// answer is lost (the error a timed-out request gives), and, with failGet, whose read-back right
// after fails too.
type lossyStore struct {
	transfer.Store
	mu      sync.Mutex
	armed   bool
	failGet bool
	getFail bool
	lost    int
}

func (s *lossyStore) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	err := s.Store.Replace(ctx, next, cond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.armed && next.Envelope != nil && len(next.Envelope.Outers()) > 1 {
		s.armed, s.lost = false, s.lost+1
		s.getFail = s.failGet
		return fmt.Errorf("dynamo: PutItem: %w", context.DeadlineExceeded)
	}
	return err
}

func (s *lossyStore) Get(ctx context.Context, key string) (transfer.Record, error) {
	s.mu.Lock()
	fail := s.getFail
	s.getFail = false
	s.mu.Unlock()
	if fail {
		return transfer.Record{}, errors.New("dynamo: GetItem: connection reset")
	}
	return s.Store.Get(ctx, key)
}

// The write of a replacement's outer hash applies but its answer is lost: the read-back finds
// the item holding the new outer hash at the next version under this call's lease (ReplaceItem),
// so the write succeeded and the replacement is sent. Here the network does not take it and the
// first lands; what matters is that the replacement was sent only once its hash was on the item,
// and that the settle, conditional on the item as written, succeeds.
func TestReplaceByFeeOuterHashWriteAnswerLost(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 100_000)
		r.refuseReplacements(2)
		ls := &lossyStore{Store: r.store, armed: true}
		r.orch.Store = ls
		out, err := r.transfer("lost-1", 5)
		if err != nil {
			t.Fatalf("transfer: %v", err)
		}
		if ls.lost != 1 {
			t.Fatalf("%d lost answers, want 1 (no replacement was written?)", ls.lost)
		}
		rec := r.item("lost-1")
		outers := rec.Envelope.Outers()
		if len(outers) != 2 || rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash != out.TransactionHash {
			t.Fatalf("item %s %v %+v, want replayable with both outer hashes", rec.Status, outers, rec.Result)
		}
		if _, ok := r.sentHashes()[outers[1]]; !ok {
			t.Errorf("the replacement %s was recorded but never sent", outers[1])
		}
	})
}

// When the read-back after the lost answer fails too, the write's fate is unknown: the
// replacement is not sent (only an envelope whose hash is surely on the item may be), and the
// call goes on with the first envelope, which lands. The write did apply, so the call's settle,
// conditional on the item it read before, fails and the item stays in_flight holding both outer
// hashes. After its lease, the sweep (Settle) or a retry with the same key (a take-over, which
// re-sends the item's envelope, the replacement, refused now, and looks up every hash) settles it
// from the ledger, replayable, and the same key then replays it.
func TestReplaceByFeeUnknownWriteIsNotSent(t *testing.T) {
	for _, by := range []string{"sweep", "retry"} {
		t.Run(by, func(t *testing.T) {
			r := surged(t, "rpc", 100_000)
			r.refuseReplacements(2)
			ls := &lossyStore{Store: r.store, armed: true, failGet: true}
			r.orch.Store = ls
			out, err := r.transfer("unknown-1", 5)
			if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			rec := r.item("unknown-1")
			outers := rec.Envelope.Outers()
			if len(outers) != 2 || rec.Status != transfer.StatusInFlight {
				t.Fatalf("item %s %v, want in_flight holding both outer hashes (the write applied, the settle's condition failed)", rec.Status, outers)
			}
			if _, ok := r.sentHashes()[outers[1]]; ok {
				t.Fatalf("the replacement %s was sent although its write's fate was unknown", outers[1])
			}
			r.clock.Advance(transfer.DefaultSettings().Timeout + time.Minute) // the lease ends
			switch by {
			case "sweep":
				s, err := r.orch.Settle(context.Background(), r.item("unknown-1"))
				if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Result.TransactionHash != out.TransactionHash {
					t.Fatalf("settle: %+v, %v; want replayable with %s", s, err, out.TransactionHash)
				}
			default:
				got, err := r.transfer("unknown-1", 5)
				if err != nil || got.TransactionHash != out.TransactionHash {
					t.Fatalf("retry: %+v, %v; want %s", got, err, out.TransactionHash)
				}
				if st := r.item("unknown-1").Status; st != transfer.StatusReplayable {
					t.Fatalf("after the retry: %s", st)
				}
			}
			again, err := r.transfer("unknown-1", 5)
			if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash {
				t.Fatalf("replay: %+v, %v", again, err)
			}
			paid := 0
			for _, ap := range r.net.Applied() {
				if ap.Hash == rec.Envelope.InnerHash {
					paid++
				}
			}
			if paid != 1 {
				t.Errorf("the transfer applied %d times", paid)
			}
		})
	}
}

// Above the cap there is no replacement: the first envelope bids about the fee stats' p90 per
// slot, which fits MAX_FEE_STROOPS 10,000, but 10x it does not. The service says so (a WARN line)
// and keeps waiting on the first envelope, which here lands once it is let in; nothing else is
// sent, and the item holds the one outer hash.
func TestReplaceByFeeAboveTheCap(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 10_000)
		var logs bytes.Buffer
		var mu sync.Mutex
		r.orch.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
		if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 2}); err != nil {
			t.Fatal(err)
		}
		out, err := r.transfer("capped-rbf-1", 5)
		if err != nil {
			t.Fatalf("transfer: %v", err)
		}
		rec := r.item("capped-rbf-1")
		if outers := rec.Envelope.Outers(); len(outers) != 1 || rec.Status != transfer.StatusReplayable {
			t.Fatalf("item %s %v, want replayable with one outer hash", rec.Status, outers)
		}
		built := map[string]bool{}
		for _, e := range r.ours() {
			built[e.Hash] = true
		}
		if len(built) != 1 {
			t.Errorf("%d distinct envelopes sent, want 1", len(built))
		}
		mu.Lock()
		text := logs.String()
		mu.Unlock()
		if !strings.Contains(text, "not replacing an outbid envelope: the replacement's fee is above MAX_FEE_STROOPS") || !strings.Contains(text, rec.Envelope.InnerHash) {
			t.Errorf("no WARN line saying the replacement is above the cap; logs:\n%s", text)
		}
		if a, ok := r.net.Transaction(out.TransactionHash); !ok || a.FeeBumpHash != rec.Envelope.OuterHash {
			t.Errorf("applied %+v", a)
		}
	})
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

package loadtest

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A payout of many transfers posted async at one instant, paid with up to 100 transfers per
// fee-bumped transaction (the submitter's batches: internal/transfer's RunQueuedBatch) against one
// transfer per transaction, on the local network with room in its ledgers for every channel's
// transaction, and once on a network whose classic lane is scaled down and filled by others'
// payments.
//
// Each submitter container's orchestrator runs its batch path's goroutines (an invocation's k
// batches, each message alone, and each batch's per-key writes: its keys' takes and settlements) as
// participants of the virtual clock (Orchestrator.Parallel: vclock.Parallel), as they run at once
// in a Lambda invocation; the channel pool's releases are bounded long enough in real time for
// that (startRig: ChannelReleaseTimeout). With BENCH_BATCH_SERIAL set, where k is 1 (ChannelCount
// at most 3: batchSetting), the orchestrators are Serial instead, one goroutine per invocation, the
// cheaper run in real time: so that the per-key writes cost the invocation what they cost when
// issued concurrently, a perKeyPhase defers their round trips: a DynamoDB request made within the
// per-key frame is answered at once and its round trip added to its item's chain; the next request
// outside it (DynamoDB, Stellar, or the orchestrator's clock) first sleeps the longest chain. Each
// write still takes its round trip, and a key's writes follow one another, as on DynamoDB; what
// the model leaves out is only that concurrent requests could slow one another. With k above 1
// Serial would run an invocation's batches one after another, each a ledger: serialBatches
// refuses it.

// serialBatches reports whether BENCH_BATCH_SERIAL is set; it fails tb when it is and an
// invocation pays k > 1 transactions.
func serialBatches(tb testing.TB, k int) bool {
	tb.Helper()
	if os.Getenv("BENCH_BATCH_SERIAL") == "" {
		return false
	}
	if k > 1 {
		tb.Fatalf("BENCH_BATCH_SERIAL with %d transactions per invocation: Serial would pay them one after another", k)
	}
	return true
}

// perKeyPhaseKey is the context key of an invocation's perKeyPhase.
type perKeyPhaseKey struct{}

// perKeyPhase is one batched invocation's deferred per-key round trips.
type perKeyPhase struct {
	mu     sync.Mutex
	chains map[string]time.Duration // item key: the round trips of its writes in this phase
	// requests counts the requests deferred; saved sums, over every phase, what the round trips
	// would have added had they been slept one after the other.
	requests int
	saved    time.Duration
}

// phaseOf is the perKeyPhase ctx carries, or nil.
func phaseOf(ctx context.Context) *perKeyPhase {
	p, _ := ctx.Value(perKeyPhaseKey{}).(*perKeyPhase)
	return p
}

// deferRTT adds d to key's chain.
func (p *perKeyPhase) deferRTT(key string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.chains == nil {
		p.chains = map[string]time.Duration{}
	}
	p.chains[key] += d
	p.requests++
}

// flush sleeps the longest chain deferred since the last flush, if any, and starts a new phase.
func (p *perKeyPhase) flush(ctx context.Context, clock interface {
	Sleep(ctx context.Context, d time.Duration) error
}) {
	p.mu.Lock()
	var longest, sum time.Duration
	for _, d := range p.chains {
		longest, sum = max(longest, d), sum+d
	}
	p.chains = nil
	p.saved += sum - longest
	p.mu.Unlock()
	if longest > 0 {
		_ = clock.Sleep(context.WithoutCancel(ctx), longest)
	}
}

// figures are the requests deferred and the time saved, so far.
func (p *perKeyPhase) figures() (int, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests, p.saved
}

// phaseClock is a batched container's orchestrator clock: a sleep first flushes the invocation's
// perKeyPhase.
type phaseClock struct{ clock transfer.Clock }

func (c phaseClock) Now() time.Time { return c.clock.Now() }

func (c phaseClock) Sleep(ctx context.Context, d time.Duration) error {
	if p := phaseOf(ctx); p != nil {
		p.flush(ctx, c.clock)
	}
	return c.clock.Sleep(ctx, d)
}

// itemKey is the partition key (pk) of the item a DynamoDB request reads or writes, "" when it
// names none.
func itemKey(item map[string]types.AttributeValue) string {
	if v, ok := item["pk"].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// perKeyFrame is the function through which the batch path runs one function per key
// (concurrently unless the orchestrator is Serial).
const perKeyFrame = "internal/transfer.(*Orchestrator).each"

// inPerKeyPhase reports whether the calling goroutine is within perKeyFrame.
func inPerKeyPhase() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, perKeyFrame) {
			return true
		}
		if !more {
			return false
		}
	}
}

// batchSetting is how template.yaml configures SubmitterFunction for perTx transfers per
// transaction on channels: its event source (eventSourceFor when perTx is 1; above 1 the
// mapping's batched form: BatchSize the BatchMessages mapping's k x perTx, k the Submitter
// mapping's BatchSize, MaximumConcurrency the Submitter mapping's column the template names, the
// same batching window), the environment SubmitterFunction gets (the variable set to the parameter
// the batched BatchSize's row names, perTx, and the one set to the Submitter mapping's column that
// names its column, k), and k. Read from the template so that the benchmark follows it.
func batchSetting(tb testing.TB, channels, perTx int) (eventSource, map[string]string, int) {
	tb.Helper()
	es := eventSourceFor(tb, channels)
	tpl, err := cfntemplate.Load("../../template.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	fn := tpl.Resources["SubmitterFunction"].Properties
	const shape = "!If [Batched, !FindInMap [<mapping>, !Ref <parameter>, !FindInMap [Submitter, !Ref ChannelCount, <column>]], ...]"
	// BatchSize: !If [Batched, !FindInMap [<mapping>, !Ref <parameter>, <k>], ...], where <k> is
	// !FindInMap [Submitter, !Ref ChannelCount, <column>].
	batched, ok := cfntemplate.Lookup(fn, "Events", "Transfers", "Properties", "BatchSize", "Fn::If", 1, "Fn::FindInMap")
	mapping, _ := cfntemplate.Lookup(batched, 0)
	param, _ := cfntemplate.Lookup(batched, 1, "Ref")
	kExpr, _ := cfntemplate.Lookup(batched, 2)
	kColumn, _ := cfntemplate.Lookup(kExpr, "Fn::FindInMap", 2)
	mappingName, _ := cfntemplate.String(mapping)
	name, _ := cfntemplate.String(param)
	column, _ := cfntemplate.String(kColumn)
	if !ok || mappingName == "" || name == "" || column == "" {
		tb.Fatalf("template.yaml: SubmitterFunction's event source BatchSize is not %s", shape)
	}
	num := func(v any, what string) int {
		s, _ := cfntemplate.String(v)
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			tb.Fatalf("template.yaml: %s = %v, want a positive integer", what, v)
		}
		return n
	}
	k := num(tpl.Mappings["Submitter"][strconv.Itoa(channels)][column], fmt.Sprintf("Submitter[%d][%s]", channels, column))
	vars, _ := cfntemplate.Lookup(fn, "Environment", "Variables")
	varMap, _ := vars.(map[string]any)
	env := map[string]string{}
	for v, val := range varMap {
		if ref, ok := cfntemplate.Lookup(val, "Ref"); ok && ref == name {
			env[v] = strconv.Itoa(perTx)
		}
		if reflect.DeepEqual(val, kExpr) {
			env[v] = strconv.Itoa(k)
		}
	}
	if len(env) != 2 {
		tb.Fatalf("template.yaml: SubmitterFunction's environment has %v, want one variable !Ref %s and one %v", env, name, kExpr)
	}
	if perTx <= 1 {
		return es, env, k
	}
	row, ok := tpl.Mappings[mappingName][strconv.Itoa(perTx)]
	if !ok {
		tb.Fatalf("template.yaml: %s has no row for %s %d (not one of its AllowedValues)", mappingName, name, perTx)
	}
	size := num(row[strconv.Itoa(k)], fmt.Sprintf("%s[%d][%d]", mappingName, perTx, k))
	// MaximumConcurrency: !FindInMap [Submitter, !Ref ChannelCount, <column>]
	col, ok := cfntemplate.Lookup(fn, "Events", "Transfers", "Properties", "ScalingConfig", "MaximumConcurrency", "Fn::FindInMap", 2)
	concColumn, _ := cfntemplate.String(col)
	if !ok || concColumn == "" {
		tb.Fatal("template.yaml: SubmitterFunction's MaximumConcurrency is not !FindInMap [Submitter, !Ref ChannelCount, <column>]")
	}
	conc := num(tpl.Mappings["Submitter"][strconv.Itoa(channels)][concColumn], fmt.Sprintf("Submitter[%d][%s]", channels, concColumn))
	es.batchSize, es.maxConcurrency = size, conc
	return es, env, k
}

// unbatchedFee is what an unbatched fee-bumped payment pays at the base fee, in stroops: its
// payment and the fee bump, 100 stroops each (CAP-15: a fee bump counts one operation more).
const unbatchedFee = 2 * 100

// batchRow is one row of the batch benchmark.
type batchRow struct {
	channels, perTx int
	perInvocation   int   // k: the transactions one submitter invocation pays at most (batchSetting)
	classicOps      int64 // the network's classic operations per ledger
	// opsPerLedger, when above 0, is BATCH_OPS_PER_LEDGER as an operator sets it (the row's
	// own slots otherwise, so that its perTx is the batch size measured).
	opsPerLedger int
	background   int // others' one-payment transactions submitted after each close
	warmUp       time.Duration
	es           eventSource
	res          burst
	// From the network: the fees the payout's transactions were charged (stroops), its
	// transactions, their operations (a fee bump counts one more), every operation applied in
	// the ledgers that paid it, and the wallets whose USDC balance is not what they were sent.
	fees, txs, ourOps, allOps int64
	payments                  int64 // successful payments from the vault
	wrongBalance              int
	wcu                       int64
	wcuByOp                   map[string]int64
	largestItem               int
	batchGets                 int64 // BatchGetItem requests (the submitters' reads of their events' items)
	// sends counts the payout's envelopes the network received by its answer and later fate
	// ("PENDING included", "ERROR txINSUFFICIENT_FEE", ...); bids are their fee per operation slot
	// (a fee bump's fee over its inner operations plus one), stroops, sorted.
	sends map[string]int
	bids  []int64
}

func (b batchRow) perLedger() float64 {
	return float64(b.res.transfers) / float64(max(b.res.ledgers, 1))
}

// ofBound is transfers per ledger against one transfer per channel per ledger.
func (b batchRow) ofBound() float64 { return b.perLedger() / float64(b.channels) }

func (b batchRow) feePerPayment() float64 { return float64(b.fees) / float64(max(b.payments, 1)) }

// billed is the billed ms per transfer: the API's calls and SubmitterFunction's invocations.
func (b batchRow) billed() float64 { return b.res.msPerTransfer() }

// exactlyOnce reports whether every transfer was paid once, counted from the network's payments
// and from every destination's balance, and none was dead-lettered.
func (b batchRow) exactlyOnce() bool {
	return b.res.paidTwice == 0 && b.res.unpaid == 0 && b.wrongBalance == 0 && b.res.deadLettered == 0
}

// measureBatchRow posts n transfers async at one instant (after row.warmUp of background traffic,
// when row.background is set) to n wallets on a fresh rig (Stellar RPC, 5 s ledgers, round trips
// in virtual time), each its own amount, with row.perTx transfers per transaction, and reads the
// figures back from the network.
func measureBatchRow(tb testing.TB, row batchRow, n int) batchRow {
	tb.Helper()
	es, env, k := batchSetting(tb, row.channels, row.perTx)
	row.es, row.perInvocation = es, k
	// BATCH_OPS_PER_LEDGER is the row's own slots, so its perTx is the batch size measured,
	// unless the row sets it as an operator would.
	env["BATCH_OPS_PER_LEDGER"] = strconv.Itoa(max(row.channels, 1) * (row.perTx + 1))
	if row.opsPerLedger > 0 {
		env["BATCH_OPS_PER_LEDGER"] = strconv.Itoa(row.opsPerLedger)
	}
	q := &sqsQueue{mem: queue.NewMemory()}
	r := startRig(tb, rigConfig{backend: "rpc", channels: row.channels, interval: asyncInterval, roundTrips: true, queue: q,
		env: env, wallets: n, lanes: stellarsim.LaneLimits{ClassicOps: row.classicOps}, writeUnits: true})
	q.clock = r.clock
	if row.background > 0 {
		must(tb, r.net.SetCongestion(stellarsim.Congestion{Seed: 20261202, PerLedger: row.background, FeeMin: 100, FeeMax: 1000}))
	}
	var arrivals []time.Duration
	if row.warmUp > 0 {
		arrivals = make([]time.Duration, n)
		for i := range arrivals {
			arrivals[i] = row.warmUp
		}
	}
	appliedBefore := len(r.net.Applied())
	base := r.amounts.Load()
	serial := row.perTx > 1 && serialBatches(tb, k)
	res, _ := runAsync(tb, r, q, n, arrivals, es, trickle{}, batchMode{on: row.perTx > 1, serial: serial}, batchPatience(n, row.channels, row.perTx))
	row.batchGets = r.db.Count("BatchGetItem")
	if row.perTx > 1 && row.batchGets == 0 {
		tb.Fatal("the submitters read their events' items with no BatchGetItem (dynamo.Store.GetMany)")
	}
	if serial && res.perKeyRequests == 0 {
		tb.Fatalf("no DynamoDB request was made within %s: the batch path's per-key frame moved (perKeyPhase)", perKeyFrame)
	}
	r.net.ClearCongestion()
	res.settled -= row.warmUp
	row.res = res
	row.wcu = r.wcu.total()
	row.wcuByOp, row.largestItem = r.wcu.counts()

	want := map[string]int64{}
	for i := range n {
		want[r.wallets[i%len(r.wallets)]] += base + int64(i) + 1 // runAsync's amounts, in order
	}
	for w, amount := range want {
		if got, err := r.net.Balance(w, r.usdc); err != nil || got != amount {
			row.wrongBalance++
		}
	}
	row.sends = map[string]int{}
	for _, e := range r.net.Envelopes() {
		var env xdr.TransactionEnvelope
		if xdr.SafeUnmarshalBase64(e.EnvelopeXDR, &env) != nil || env.Type != xdr.EnvelopeTypeEnvelopeTypeTxFeeBump {
			continue
		}
		inner := env.FeeBump.Tx.InnerTx.V1.Tx
		if len(inner.Operations) == 0 || inner.Operations[0].Body.PaymentOp == nil || inner.Operations[0].SourceAccount == nil ||
			inner.Operations[0].SourceAccount.ToAccountId().Address() != r.vault {
			continue
		}
		row.sends[sendFate(e)]++
		row.bids = append(row.bids, int64(env.FeeBump.Tx.Fee)/int64(len(inner.Operations)+1))
	}
	slices.Sort(row.bids)
	applied := r.net.Applied()[appliedBefore:]
	var first, last uint32
	for _, a := range applied {
		ours := false
		for _, op := range a.Ops {
			if op.Type == "payment" && op.Source == r.vault {
				ours = true
				if a.Status == "SUCCESS" {
					row.payments++
				}
			}
		}
		if !ours {
			continue
		}
		row.fees += a.FeeCharged
		row.txs++
		row.ourOps += opsOf(a)
		if a.Status == "SUCCESS" {
			if first == 0 || a.Ledger < first {
				first = a.Ledger
			}
			last = max(last, a.Ledger)
		}
	}
	for _, a := range applied {
		if a.Ledger >= first && a.Ledger <= last {
			row.allOps += opsOf(a)
		}
	}
	return row
}

// batchPatience is how long (virtual) a row waits for its last settlement after the POSTs: an hour
// beyond twice the ledgers the channels need at one transaction each per ledger (10,000 transfers
// one per transaction on 4 channels need 2,500 ledgers, three and a half hours).
func batchPatience(n, channels, perTx int) time.Duration {
	ledgers := (n + channels*perTx - 1) / (channels * perTx)
	return time.Hour + 2*time.Duration(ledgers)*asyncInterval
}

// opsOf is the operations a transaction takes of its ledger's classic capacity: its own, and one
// more when fee-bumped (stellarsim's LaneLimits).
func opsOf(a stellarsim.AppliedTx) int64 {
	n := int64(len(a.Ops))
	if a.FeeBumpHash != "" {
		n++
	}
	return n
}

// numbersAndHashes are what sendFate leaves out of an envelope's outcome.
var numbersAndHashes = regexp.MustCompile(`\(?\b[0-9a-f]{64}\b\)?|\d+`)

// sendFate is an envelope's answer and later fate without its ledgers and hashes ("PENDING
// included in ledger n: SUCCESS", "ERROR txINSUFFICIENT_FEE").
func sendFate(e stellarsim.ReceivedEnvelope) string {
	f := strings.Join(strings.Fields(e.Status+" "+e.Code+" "+e.Outcome), " ")
	return numbersAndHashes.ReplaceAllString(f, "n")
}

// bidRange renders sorted bids as min, median and max.
func bidRange(bids []int64) string {
	if len(bids) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d/%d/%d (min/median/max)", bids[0], bids[len(bids)/2], bids[len(bids)-1])
}

// checkBatchRow fails tb when a transfer was paid twice, anything failed or was left queued, or
// the figures disagree (a wallet's balance off other than by its transfer's being unpaid, a GET
// not answering success other than for an unpaid transfer). On a row without background traffic
// it also fails when a transfer went unpaid or was dead-lettered; with background traffic those
// are the row's figures (TestBatchCongestedLands says what they should be), logged.
func checkBatchRow(tb testing.TB, row batchRow) {
	tb.Helper()
	r := row.res
	if r.paidTwice != 0 || r.failures != 0 || r.leftQueued != 0 || row.wrongBalance != r.unpaid || r.notSuccess != r.unpaid ||
		(row.background == 0 && (r.unpaid != 0 || r.deadLettered != 0)) {
		tb.Errorf("%d channels, %d per transaction: %d paid twice, %d unpaid, %d wallets with another balance, %d dead-lettered, %d failures (first: %s), %d left queued, %d GETs not success",
			row.channels, row.perTx, r.paidTwice, r.unpaid, row.wrongBalance, r.deadLettered, r.failures, r.firstFailure, r.leftQueued, r.notSuccess)
	} else if r.unpaid != 0 || r.deadLettered != 0 {
		tb.Logf("%d channels, %d per transaction beside %d others' transactions per ledger on %d classic operations: %d of %d transfers unpaid, %d dead-lettered",
			row.channels, row.perTx, row.background, row.classicOps, r.unpaid, r.transfers, r.deadLettered)
	}
}

// batchTable renders the rows as a Markdown table, each billed-ms ratio against the row of one
// transfer per transaction on the same channels and network (when measured).
func batchTable(rows []batchRow) string {
	unbatched := map[string]batchRow{}
	key := func(r batchRow) string { return fmt.Sprintf("%d/%d/%d", r.channels, r.classicOps, r.background) }
	for _, r := range rows {
		if r.perTx == 1 {
			unbatched[key(r)] = r
		}
	}
	var b strings.Builder
	b.WriteString("| channels | transfers per transaction | classic ops per ledger | others' txs per ledger | transfers | ledgers | transfers per ledger | / unbatched bound | fee per payment (stroops) | / unbatched fee-bumped | billed ms per transfer | / unbatched async | DynamoDB WCU per transfer | last settled | share of ledger ops | paid exactly once (network) | dead-lettered |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		ratio := "-"
		if u, ok := unbatched[key(r)]; ok {
			ratio = fmt.Sprintf("%.3f", r.billed()/u.billed())
		}
		once := "yes"
		if !r.exactlyOnce() {
			once = fmt.Sprintf("no: %d twice, %d unpaid, %d balances off", r.res.paidTwice, r.res.unpaid, r.wrongBalance)
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %.1f | %.2f | %.1f | %.3f | %.0f | %s | %.2f | %.0f s | %.2f | %s | %d |\n",
			r.channels, r.perTx, r.classicOps, r.background, r.res.transfers, r.res.ledgers, r.perLedger(), r.ofBound(),
			r.feePerPayment(), r.feePerPayment()/unbatchedFee, r.billed(), ratio,
			float64(r.wcu)/float64(max(r.res.transfers, 1)), r.res.settled.Seconds(), float64(r.ourOps)/float64(max(r.allOps, 1)), once, r.res.deadLettered)
	}
	return b.String()
}

// batchGoals are the goals at 100 transfers per transaction, for each channel count with both
// that row and the unbatched one on the ample network: at least 50 times the unbatched channel
// bound, a fee per payment at most 0.55 of an unbatched fee-bumped payment, billed ms per transfer
// at most a tenth of unbatched async.
func batchGoals(rows []batchRow) string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	var b strings.Builder
	for _, r := range rows {
		if r.perTx != 100 || r.background > 0 {
			continue
		}
		fmt.Fprintf(&b, "- %d channels, 100 per transaction: %.1fx the unbatched bound (goal >= 50x): %s; fee %.3f of an unbatched fee-bumped payment (goal <= 0.55): %s",
			r.channels, r.ofBound(), verdict(r.ofBound() >= 50), r.feePerPayment()/unbatchedFee, verdict(r.feePerPayment()/unbatchedFee <= 0.55))
		i := slices.IndexFunc(rows, func(u batchRow) bool { return u.perTx == 1 && u.channels == r.channels && u.background == 0 })
		if i < 0 {
			b.WriteString("; billed ms: no unbatched row\n")
			continue
		}
		u := rows[i]
		fmt.Fprintf(&b, "; billed ms %.3f of unbatched async (goal <= 0.1): %s\n", r.billed()/u.billed(), verdict(r.billed()/u.billed() <= 0.1))
	}
	return b.String()
}

// TestBatchPayoutSmall is the batch benchmark at a small size, run by every `go test`: 40
// transfers posted async at one instant on 4 channels, 10 per transaction. Every transfer is
// paid exactly once (the network's payments and every wallet's balance), none is dead-lettered
// or left queued, every GET answers success, and the batches paid more than one transfer per
// transaction. Speed and cost are measured by BenchmarkBatch, not asserted.
func TestBatchPayoutSmall(t *testing.T) {
	row := measureBatchRow(t, batchRow{channels: 4, perTx: 10, classicOps: ampleClassicOps}, 40)
	checkBatchRow(t, row)
	if row.txs == 0 || row.payments < 2*row.txs {
		t.Errorf("%d payments in %d transactions: want batches of more than one", row.payments, row.txs)
	}
	t.Logf("\n%s", batchTable([]batchRow{row}))
}

// ampleClassicOps is the classic operations per ledger of the benchmark's network: five times
// pubnet's 1,000, above the most the payout can ask of one ledger (16 channels each with a fee-bumped
// transaction of 100 payments: 1,616).
const ampleClassicOps = 5_000

// intsEnv reads a comma-separated list of positive integers from the environment variable name,
// def when unset.
func intsEnv(tb testing.TB, name string, def []int) []int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("%s=%q: want positive integers, comma-separated", name, s)
		}
		out = append(out, n)
	}
	return out
}

// BenchmarkBatch measures batched payouts (`make bench-batch`): BENCH_BATCH_N transfers (10,000
// by default) posted async at one instant to as many wallets, each its own amount, on Stellar RPC
// with 5 s ledgers (virtual) and BenchmarkAsync's round trips, on BENCH_BATCH_CHANNELS channels
// (4,16) with BENCH_BATCH_SIZES transfers per transaction (1,10,50,100), SubmitterFunction's event
// source as template.yaml configures it for each (batchSetting), on a network taking
// ampleClassicOps classic operations per ledger. One more row runs the largest size on the most
// channels on a network of 200 classic operations per ledger (pubnet's scaled by 0.2) carrying
// 150 one-payment transactions of others per ledger bidding 100 to 1,000 stroops (stellarsim's
// background traffic, as the congestion benchmark's), after 30 s of them alone.
//
// Per row: transfers per ledger over the ledgers that paid them against the unbatched channel
// bound (one transaction per channel per ledger), the fee charged per payment against an
// unbatched fee-bumped payment at the base fee, Lambda billed ms per transfer (API and submitter
// invocations, an invocation's batches and a batch's per-key writes concurrent) against the row of
// one per transaction, DynamoDB write units per transfer (writeUnits), the time to the last
// settlement, the payout's share of the operations applied in its ledgers, and whether every
// transfer was paid exactly once counted from the network (payments and balances). Every row
// must pay each transfer exactly once, with nothing dead-lettered (checkBatchRow). The goals at 100
// per transaction are printed met or missed (batchGoals); none is asserted.
func BenchmarkBatch(b *testing.B) {
	n := 10_000
	if s := os.Getenv("BENCH_BATCH_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			b.Fatalf("BENCH_BATCH_N=%q: want an integer of at least 2", s)
		}
	}
	sizes := intsEnv(b, "BENCH_BATCH_SIZES", []int{1, 10, 50, 100})
	channelCounts := intsEnv(b, "BENCH_BATCH_CHANNELS", []int{4, 16})
	for _, s := range sizes {
		if s > transfer.MaxBatchOperations {
			b.Fatalf("BENCH_BATCH_SIZES: %d is above %d", s, transfer.MaxBatchOperations)
		}
	}
	wall := time.Now()
	var rows []batchRow
	run := func(name string, row batchRow) {
		b.Run(name, func(b *testing.B) {
			for range b.N {
				row = measureBatchRow(b, row, n)
			}
			checkBatchRow(b, row)
			b.Logf("%d channels, %d per transaction, %d classic ops, %d others' txs per ledger: %d transfers in %d transactions over %d ledgers, last settled at %v; billed ms per transfer %.1f in API calls, %.1f in %d submitter invocations (%.0f ms each, batch mean %.1f, largest %d), %d BatchGetItem requests, %d per-key requests deferred (saving %v), %d requeued (first: %s); WCU by request %v, largest item %d B; sends %v, bid per slot %s; wall %v",
				row.channels, row.perTx, row.classicOps, row.background, row.res.transfers, row.txs, row.res.ledgers, row.res.settled,
				float64(row.res.apiBilledMs)/float64(max(row.res.transfers, 1)), float64(row.res.submitterBilledMs)/float64(max(row.res.transfers, 1)),
				row.res.submitterInvocations, row.res.msPerInvocation(), row.res.meanBatch(), row.res.largestBatch, row.batchGets, row.res.perKeyRequests, row.res.perKeySaved, row.res.requeued, row.res.firstRequeue,
				row.wcuByOp, row.largestItem, row.sends, bidRange(row.bids), row.res.wall.Round(time.Millisecond))
			b.ReportMetric(row.ofBound(), "of-unbatched-bound")
			b.ReportMetric(row.feePerPayment(), "stroops/payment")
			b.ReportMetric(row.billed(), "billed-ms/transfer")
			b.ReportMetric(float64(row.wcu)/float64(max(row.res.transfers, 1)), "wcu/transfer")
			b.ReportMetric(row.res.settled.Seconds(), "last-settled-s")
			rows = append(rows, row)
		})
	}
	for _, channels := range channelCounts {
		for _, size := range sizes {
			run(fmt.Sprintf("channels=%d/per-tx=%d", channels, size), batchRow{channels: channels, perTx: size, classicOps: ampleClassicOps})
		}
	}
	most, largest := slices.Max(channelCounts), slices.Max(sizes)
	run(fmt.Sprintf("congested/channels=%d/per-tx=%d", most, largest),
		batchRow{channels: most, perTx: largest, classicOps: 200, background: 150, warmUp: 30 * time.Second})
	// The same congested ledger as a deployment within its share sets it: BATCH_OPS_PER_LEDGER
	// the lane's 200, TransfersPerTransaction the largest allowed value whose batches fit it.
	within := largestWithin(b, 200/most-1)
	run(fmt.Sprintf("within/channels=%d/per-tx=%d", most, within),
		batchRow{channels: most, perTx: within, classicOps: 200, background: 150, warmUp: 30 * time.Second, opsPerLedger: 200})
	fmt.Printf("\nA payout of %d transfers posted async at one instant, 5 s ledgers (round trips: RPC %v, DynamoDB %v, SQS %v; Stellar RPC); wall %v:\n\n%s\n%s\n",
		n, stellarRTT, dynamoRTT, sqsRTT, time.Since(wall).Round(time.Second), batchTable(rows), batchGoals(rows))
}

// largestWithin is the largest of template.yaml's allowed TransfersPerTransaction values that
// is at most limit (1 when none above 1 is).
func largestWithin(tb testing.TB, limit int) int {
	tb.Helper()
	tpl, err := cfntemplate.Load("../../template.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	allowed, _ := tpl.Parameters["TransfersPerTransaction"]["AllowedValues"].([]any)
	best := 1
	for _, v := range allowed {
		s, _ := cfntemplate.String(v)
		if n, err := strconv.Atoi(s); err == nil && n <= limit && n > best {
			best = n
		}
	}
	if len(allowed) == 0 {
		tb.Fatal("template.yaml: TransfersPerTransaction has no AllowedValues")
	}
	return best
}

// congestedPayout is TestBatchCongestedLands' payout: transfers at 100 per transaction on 4
// channels.
var congestedPayout = envInt("BATCH_CONGESTED_N", 400)

// congestedLedgerBound is how many ledgers (virtual, asyncInterval each) TestBatchCongestedLands
// allows from the POSTs to the last settlement: one ledger holds at most one batch of 100 beside
// others' payments (101 of its 200 classic slots), each batch waits ReplaceAfterLedgers before its
// replacement by fee and one more for it to be included, and a batch's keys are settled a ledger
// after it lands; twice that per batch, and two ledgers for the submitters to start.
func congestedLedgerBound(n int) int {
	batches := (n + 99) / 100
	return 2 + 2*batches*(transfer.ReplaceAfterLedgers+2)
}

// TestBatchCongestedLands: a payout at 100 transfers per transaction on 4 channels, posted after
// 30 s of others' payments (150 one-payment transactions per ledger bidding 100 to 1,000 stroops)
// on a network of 200 classic operations per ledger, so that a batch (101 slots) fits a ledger
// only by outbidding about a third of the others: every transfer is paid exactly once (the
// network's payments and every wallet's balance), none is dead-lettered or left queued, every GET
// answers success, and the last settles within congestedLedgerBound ledgers of virtual time.
// BATCH_CONGESTED_N sets the payout's size (400: four batches, about 10 s).
func TestBatchCongestedLands(t *testing.T) {
	n := congestedPayout
	row := measureBatchRow(t, batchRow{channels: 4, perTx: 100, classicOps: 200, background: 150, warmUp: 30 * time.Second}, n)
	t.Logf("\n%s\nsends %v, bid per slot %s", batchTable([]batchRow{row}), row.sends, bidRange(row.bids))
	checkBatchRow(t, row)
	if row.res.unpaid != 0 || row.res.deadLettered != 0 {
		t.Errorf("%d of %d transfers unpaid, %d dead-lettered", row.res.unpaid, row.res.transfers, row.res.deadLettered)
	}
	if bound := time.Duration(congestedLedgerBound(n)) * asyncInterval; row.res.settled > bound {
		t.Errorf("the last transfer settled %v after the POSTs, above %d ledgers (%v)", row.res.settled, congestedLedgerBound(n), bound)
	}
}

// envInt reads a positive integer from the environment variable name, def when unset or invalid.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestSendFate: an envelope's fate is named without its ledgers and hashes, so that the log
// counts envelopes by what happened to them.
func TestSendFate(t *testing.T) {
	for _, c := range []struct {
		e    stellarsim.ReceivedEnvelope
		want string
	}{
		{stellarsim.ReceivedEnvelope{Status: "PENDING", Outcome: "included in ledger 104: SUCCESS"}, "PENDING included in ledger n: SUCCESS"},
		{stellarsim.ReceivedEnvelope{Status: "ERROR", Code: "txINSUFFICIENT_FEE"}, "ERROR txINSUFFICIENT_FEE"},
		{stellarsim.ReceivedEnvelope{Status: "PENDING", Outcome: "evicted from the full queue by a higher bid (" + strings.Repeat("ab", 32) + ") at ledger 9, banned: never applied"},
			"PENDING evicted from the full queue by a higher bid n at ledger n, banned: never applied"},
	} {
		if got := sendFate(c.e); got != c.want {
			t.Errorf("sendFate(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}

// TestPerKeyPhase: the round trips deferred in a per-key phase cost the longest item's chain at
// the next flush, once, and the rest is counted as saved.
func TestPerKeyPhase(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	p := &perKeyPhase{}
	ctx := context.WithValue(context.Background(), perKeyPhaseKey{}, p)
	start := clock.Now()
	for _, k := range []string{"a", "b", "a", "c", "a"} {
		p.deferRTT(k, dynamoRTT)
	}
	p.flush(ctx, clock)
	if got := clock.Now().Sub(start); got != 3*dynamoRTT {
		t.Errorf("the phase took %v, want the longest chain %v", got, 3*dynamoRTT)
	}
	p.flush(ctx, clock) // nothing deferred since: no time
	if got := clock.Now().Sub(start); got != 3*dynamoRTT {
		t.Errorf("an empty flush moved the clock to %v", got)
	}
	if n, saved := p.figures(); n != 5 || saved != 2*dynamoRTT {
		t.Errorf("figures = %d requests, %v saved; want 5, %v", n, saved, 2*dynamoRTT)
	}
	if inPerKeyPhase() {
		t.Error("a test function is not within the batch path's per-key frame")
	}
}

func TestLargestWithinReadsTheTemplatesAllowedValues(t *testing.T) {
	for limit, want := range map[int]int{0: 1, 1: 1, 11: 10, 49: 25, 124: 100} {
		if got := largestWithin(t, limit); got != want {
			t.Errorf("largestWithin(%d) = %d, want %d", limit, got, want)
		}
	}
}

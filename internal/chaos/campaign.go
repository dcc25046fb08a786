package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/truora/minidyn/server"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// Config sizes a campaign. Calls = Keys x Callers.
type Config struct {
	Seed uint64
	// Keys is the number of distinct (wallet, idempotency key) pairs; Callers the concurrent
	// callers per key (8); Wave how many keys are in flight at once.
	Keys, Callers, Wave int
	// FaultRate is the chance that a DynamoDB request or a lookup meets a fault, SendFaultRate
	// that a send does; CrashRate the chance that a call is abandoned at a given step, as a killed
	// invocation.
	FaultRate, SendFaultRate, CrashRate float64
	// Stale actors, acting on items read before a newer claim. LateRate is the chance that a caller, once answered, calls again
	// 20 to 90 s later (a client's retry, which takes over expired claims and reconciles in-doubt
	// items while the faults are armed); HoldRate the chance that a conditional write is held back
	// (heldStore), TakeOverHoldRate that a take-over is held until a new incarnation of the key
	// appears. Actors runs the sweep and an operator beside each wave's traffic.
	LateRate, HoldRate, TakeOverHoldRate float64
	Actors                               bool
	// Backend is "rpc" (default) or "horizon"; Channels the number of channel accounts (0: the
	// vault is the only transaction source, without fee bumps).
	Backend  string
	Channels int
	// Contract runs the transfers through the Soroban vault contract (simulate, restore, invoke):
	// even keys deposit, odd keys withdraw; archived balances are among the faults.
	Contract bool
	Log      io.Writer // receives the progress lines; nil: none
	// ReadFaults arms the local network's read faults (how stellar-rpc reads what it ingested)
	// among each wave's random faults, for that wave: read_order (a lookup racing ingestion; Ledgers 0 to 3, as while an instance
	// catches up), db_lag (RPC's database trailing its core) and, with LoadBalanced, instances.
	// They are faults of stellar-rpc: the Horizon run arms none of them.
	ReadFaults bool
	// LoadBalanced says the Stellar RPC URL is served by several instances: a deployment fact, so
	// it holds for the whole run. The service is assembled with STELLAR_RPC_LOAD_BALANCED=true
	// (its proof of death then rests on the source account's sequence number alone) and the
	// instances fault is among the read faults. Only for the "rpc" backend: Horizon behind a load
	// balancer is not supported for proofs (README, "Which RPC and Horizon deployments the proof
	// supports"), so a Horizon run never arms instances.
	LoadBalanced bool
	// Congested runs the campaign on a congested network (congestion.go): the classic lane
	// scaled down to 60 operations per ledger, background payments that keep it surge priced and
	// its queue full, and a 10x fee spike every 10 minutes; the congestion invariants are judged
	// besides the others; with Contract, background contract calls congest the Soroban lane too.
	// The service runs with MAX_FEE_STROOPS congestedMaxFee (congestedContractMaxFee with
	// Contract) unless MaxFeeStroops says otherwise.
	Congested bool
	// MaxFeeStroops is the service's MAX_FEE_STROOPS; 0 is the service's default (or
	// congestedMaxFee in a congested run).
	MaxFeeStroops int64
	// Async: callers post with Prefer: respond-async (async.go): SubmitterFunction's handler
	// delivers the messages in batches, several invocations at once, from an SQS model (sqs.go)
	// that loses, duplicates (receives again), reorders and delays them past healing.
	Async  bool
	Limits bool // daily limits that never bind: every claim a transaction (limitfaults.go)
	// BatchSizes, in the async mode, are the BATCH_SIZE (template parameter
	// TransfersPerTransaction) values a wave may run with (batches.go): each wave picks one by the
	// seed, as a redeploy changes it while keys are queued, in flight or in doubt; above 1 that
	// wave's SubmitterFunction is queue.BatchSubmitter and its events carry up to BATCH_SIZE
	// messages. Nil or {1}: every queued transfer runs alone, as before batching existed.
	BatchSizes []int
	// Wallets is how many wallets the keys pay in turn (key k the (k mod Wallets)-th); 0 or 1 is
	// one wallet. A batch holds one payment per destination, so batched runs need several.
	Wallets int

	// applyInSubmissionOrder applies each ledger's transactions in the order they were submitted
	// (stellarsim.Options.ApplyInSubmissionOrder) instead of core's shuffle, for a scenario test
	// whose subject needs one transaction of a ledger to apply before another. The campaign never
	// sets it: it runs on the realistic network.
	applyInSubmissionOrder bool
}

// DefaultConfig is the campaign `make test` runs first: 2,000 calls, and about 500 late ones.
func DefaultConfig(seed uint64) Config {
	return Config{Seed: seed, Keys: 250, Callers: 8, Wave: 5, FaultRate: 0.15, SendFaultRate: 0.3, CrashRate: 0.03, Backend: "rpc",
		LateRate: 0.25, HoldRate: 0.1, TakeOverHoldRate: 0.5, Actors: true, ReadFaults: true}
}

// Report is what a campaign did and found.
type Report struct {
	Seed        uint64
	Backend     string
	Channels    int
	Contract    bool
	Calls, Keys int
	LateCalls   int            // of Calls, the callers' second calls (LateRate)
	Answers     map[string]int // what callers got, by code ("ok", "replayed", error codes)
	Faults      map[string]int // faults injected, by kind
	Crashes     map[string]int // calls abandoned, by step
	Events      map[string]int // in_doubt_opened, in_doubt_closed, resends, rebuilds
	Stale       map[string]int // held writes and what they met, sweeps beside the traffic (heldStore, sweeper)
	Operators   map[string]int // operator actions beside the traffic, by action and answer
	Applied     int            // transfer transactions applied on the ledger
	Restores    int            // RestoreFootprint transactions applied (contract mode; the protocol 22 flow)
	// RestoringInvocations is how many applied vault-contract invocations carry Soroban data that
	// marks archived entries to restore (archivedSorobanEntries: the protocol 23 flow, where the
	// invocation restores them itself). Every envelope simulated while the entry was archived is
	// marked, so an archiving may count several.
	RestoringInvocations int
	// BatchTxs counts the applied transactions of more than one operation by status, BatchOps
	// their operations (by status, and FAILED_own_operation: those that failed themselves);
	// LargestBatch is the most operations one of them held.
	BatchTxs, BatchOps map[string]int
	LargestBatch       int
	// LoadBalanced is Config.LoadBalanced as the run used it (false for Horizon).
	LoadBalanced bool
	// Congested is Config.Congested; Congestion then counts what the network and the service did
	// on it (ledgers, surge_priced_ledgers, max_clearing_fee, service_max_bid,
	// service_max_charged and service_envelopes_* in stroops or counts, fee_above_cap_answers).
	Congested  bool
	Congestion map[string]int
	// RejectedOnChain is how many keys ended rejected by their destination on chain (a batched
	// run's deauthorized trustlines): each by the one FAILED transaction in which its own
	// operation failed.
	RejectedOnChain int
	// LeftToOperator is how many in_doubt items, after healing, no proof of the service could
	// ever settle under the load balancer, so the operator forced their discard after checking
	// full history (settleUnprovable; README, "Which RPC and Horizon deployments the proof
	// supports"). Always 0 when not LoadBalanced.
	LeftToOperator int
	// InDoubtSettle is, for every in_doubt episode of an item that was settled (replayable) or
	// released, the virtual time from the write that made it in_doubt to the write that settled
	// or released it, sorted.
	InDoubtSettle []time.Duration
	HealRetries   int
	// Cancelled is how many keys ended cancelled (async mode: a DELETE won the race with the
	// submitter); judge holds that nothing moved for any of them.
	Cancelled int
	// SweptAfterProvable is how long after the last open envelope became provable (its maxTime,
	// or its dead invocation's lease) the sweep had settled every item; negative when sooner.
	SweptAfterProvable    time.Duration
	VirtualTime, RealTime time.Duration
	Violations            []string
}

// InDoubtRate is the in_doubt items opened per 1,000 calls.
func (r Report) InDoubtRate() float64 { return per1000(r.Events["in_doubt_opened"], r.Calls) }

// RebuildRate is the envelopes built again for a key per 1,000 calls (each after a proof that the
// previous one cannot land).
func (r Report) RebuildRate() float64 { return per1000(r.Events["rebuilds"], r.Calls) }

// SettleTimes is the median and the longest of InDoubtSettle (0 when no item went in doubt).
func (r Report) SettleTimes() (median, longest time.Duration) {
	if len(r.InDoubtSettle) == 0 {
		return 0, 0
	}
	return r.InDoubtSettle[len(r.InDoubtSettle)/2], r.InDoubtSettle[len(r.InDoubtSettle)-1]
}

func per1000(n, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return float64(n) * 1000 / float64(calls)
}

// Failed reports whether an invariant was broken.
func (r Report) Failed() bool { return len(r.Violations) > 0 }

func (r Report) String() string {
	var b strings.Builder
	mode := "classic vault"
	if r.Contract {
		mode = "vault contract"
	}
	fmt.Fprintf(&b, "fault campaign seed=%d (%s, %d channels, %s): %d calls (%d of them late retries) on %d keys in %v virtual (%v real)\n", r.Seed, r.Backend, r.Channels, mode, r.Calls, r.LateCalls, r.Keys, r.VirtualTime.Round(time.Second), r.RealTime.Round(time.Millisecond))
	if r.Congested {
		lanes := "60 classic operations per ledger"
		if r.Contract {
			lanes += " and 34.8M Soroban instructions"
		}
		fmt.Fprintf(&b, "  congested network (%s, background bids, 10x spikes):", lanes)
		keys := make([]string, 0, len(r.Congestion))
		for k := range r.Congestion {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, r.Congestion[k])
		}
		b.WriteString("\n")
	}
	if r.LoadBalanced {
		fmt.Fprintf(&b, "  RPC load balanced (several instances behind one URL): death proven by the sequence number only; %d in-doubt items left to an operator after healing (their source's sequence number was used before the proof)\n", r.LeftToOperator)
	}
	fmt.Fprintf(&b, "  applied transactions: %d (%d of them restoring archived entries in the invocation, and %d RestoreFootprint transactions); heal retries: %d; every item settled %v after the last envelope was provable\n", r.Applied, r.RestoringInvocations, r.Restores, r.HealRetries, r.SweptAfterProvable)
	if len(r.BatchTxs) > 0 {
		fmt.Fprintf(&b, "  batches applied: %v transactions, %v operations, the largest %d operations\n", r.BatchTxs, r.BatchOps, r.LargestBatch)
	}
	if r.RejectedOnChain > 0 {
		fmt.Fprintf(&b, "  keys rejected by their destination on chain: %d (each by the FAILED transaction in which its own operation failed)\n", r.RejectedOnChain)
	}
	if r.Cancelled > 0 {
		fmt.Fprintf(&b, "  keys cancelled before a submitter took them: %d (nothing applied for any)\n", r.Cancelled)
	}
	median, longest := r.SettleTimes()
	fmt.Fprintf(&b, "  per 1,000 calls: %.1f in doubt, %.1f rebuilds; in doubt to settled (%d): median %v, max %v\n", r.InDoubtRate(), r.RebuildRate(), len(r.InDoubtSettle), median.Round(time.Second), longest.Round(time.Second))
	for _, part := range []struct {
		name string
		m    map[string]int
	}{{"answers", r.Answers}, {"faults", r.Faults}, {"crashes", r.Crashes}, {"events", r.Events}, {"stale actors", r.Stale}, {"operators", r.Operators}} {
		fmt.Fprintf(&b, "  %s:", part.name)
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%d", k, part.m[k])
		}
		b.WriteString("\n")
	}
	if r.Failed() {
		fmt.Fprintf(&b, "  VIOLATIONS (%d); rerun with CHAOS_SEED=%d:\n", len(r.Violations), r.Seed)
		for i, v := range r.Violations {
			if i == 20 {
				fmt.Fprintf(&b, "    ... and %d more\n", len(r.Violations)-20)
				break
			}
			fmt.Fprintf(&b, "    %s\n", v)
		}
	} else {
		b.WriteString("  all invariants hold\n")
	}
	return b.String()
}

const ledgerInterval = 5 * time.Second

// fullRetention is the local network's default getTransaction history window, in ledgers
// (stellarsim's defaultRetention, RPC's seven days of 5 s ledgers).
const fullRetention = 120960

// openingBalance is the wallet's vault balance before a contract campaign, in stroops.
const openingBalance = 100_000_000 * transfer.StroopsPerUnit

var errCrash = errors.New("chaos: invocation killed")

// rig is the system under test.
type rig struct {
	cfg     Config
	clock   *vclock.Clock
	net     *stellarsim.Network
	minidyn *server.Server
	table   string
	store   *dynamo.Store
	ledger  *faultyLedger
	orch    *transfer.Orchestrator
	wallet  string
	// wallets are the keys' wallets (walletOf), wallet the first of them; usdc the asset they
	// are paid in.
	wallets []string
	usdc    stellarsim.Asset
	// vaultKey is the vault account's master key (an operator's key in the adversary's tests);
	// feeAccount is the fee account's address (the fee bumps' fee source).
	vaultKey   *keypair.Full
	feeAccount string
	// vaults hosts the vault contract; contract is its C... address in contract mode.
	vaults   *stellarsim.VaultHost
	contract string
	// setupTxs is how many transactions the rig itself applied before the campaign.
	setupTxs int
	faults   counter
	events   counter
	crashes  counter
	answers  counter
	// held is the store every actor writes through; ops the reconcile service of the sweep and
	// the operators; stale and operators count what they did.
	held      *heldStore
	ops       *reconcile.Service
	stale     counter
	operators counter
	// queue is the async mode's SQS (Config.Async), nil otherwise; handler is SubmitterFunction's
	// handler on it.
	queue   *sqsQueue
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	// batches is the batched runs' state (Config.BatchSizes above 1; batches.go), nil otherwise.
	batches *batchRun
	// cong is the congestion run's tally and invariants (Config.Congested), nil otherwise.
	cong    *congestion
	charged *charged // the charges of the claims that applied (Config.Limits), else nil
}

func newRig(cfg Config) (*rig, func(), error) {
	r := &rig{cfg: cfg, clock: vclock.New(time.Unix(2_000_000_000, 0)), charged: newCharged(cfg.Limits)}
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*rig, func(), error) { cleanup(); return nil, nil, err }

	maxFee := cfg.MaxFeeStroops
	if cfg.Congested {
		if maxFee == 0 {
			maxFee = congestedMaxFee
			if cfg.Contract {
				maxFee = congestedContractMaxFee
			}
		}
		r.cong = &congestion{maxFee: maxFee}
	}
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		return fail(err)
	}
	keys.ChannelMaster = signing.NewMasterSeed([]byte(fmt.Sprintf("chaos-campaign-master-seed-%016x", cfg.Seed)))
	backend := cfg.Backend
	if backend == "" {
		backend = "rpc"
	}
	env := map[string]string{"STELLAR_BACKEND": backend, "CHANNEL_COUNT": strconv.Itoa(cfg.Channels),
		"STELLAR_RPC_LOAD_BALANCED": strconv.FormatBool(r.loadBalanced()), "MAX_FEE_STROOPS": maxFeeEnv(maxFee),
		"LIMITS": limitsEnv(cfg.Limits), "BATCH_SIZE": batchSizeEnv(cfg)}
	if cfg.Contract {
		env["VAULT_CONTRACT"] = "local"
	}
	// The service is assembled by internal/devstack as the Lambda assembles it, over a DynamoDB
	// client that fails on purpose (the channel leases share it), then its ledger and store are
	// wrapped for faults. The client makes no SDK retries, so every fault reaches the store as it
	// happened, and reaches minidyn in-process (devstack.Options.InProcessDynamo).
	st, err := devstack.Start(context.Background(), devstack.Options{
		Clock: r.clock, LedgerInterval: ledgerInterval, APIOnly: true, Keys: &keys, VaultUSDC: 1e17, FeeXLM: 1e12,
		DemoWallets: max(cfg.Wallets, 1), Getenv: func(k string) string { return env[k] }, InProcessDynamo: true,
		DynamoOptions: func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 },
		WrapDynamo: func(db *dynamodb.Client) dynamo.Client {
			return &faultyDynamo{API: db, rate: cfg.FaultRate, faults: &r.faults, charged: r.charged}
		},
		// The ledger's apply order (core's shuffle) follows the campaign's seed, so a run repeats;
		// so do the fee-rate ties of a full lane or queue.
		Network: func(o *stellarsim.Options) {
			o.ApplyOrderSeed, o.ApplyInSubmissionOrder = cfg.Seed, cfg.applyInSubmissionOrder
			if cfg.Congested {
				o.Lanes, o.SurgeSeed = congestedLanes, cfg.Seed
			}
		},
		// A ledger at the first move of the clock, then whenever it has moved ledgerInterval past
		// the last close; the congestion's background follows every close.
		CloseLedgers: func(n *stellarsim.Network) {
			var lastClose time.Time
			var closeMu sync.Mutex
			r.clock.OnAdvance(func(now time.Time) {
				closeMu.Lock()
				defer closeMu.Unlock()
				if now.Sub(lastClose) >= ledgerInterval {
					lastClose = now
					l := n.CloseLedger()
					if r.cong != nil {
						r.cong.closed(n, l.Sequence)
					}
				}
			})
		},
	})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { _ = st.Close() })
	n, svc := st.Network, st.Service
	r.net, r.minidyn, r.table, r.vaults = n, st.Minidyn, st.Info.Table, st.Vaults
	r.wallet, r.vaultKey, r.feeAccount = st.Info.Wallets[0].Account, keys.Vault, keys.Fee.Address()
	for _, w := range st.Info.Wallets[:max(cfg.Wallets, 1)] {
		r.wallets = append(r.wallets, w.Account)
	}
	if len(st.Info.Assets) > 0 {
		r.usdc = stellarsim.Asset{Code: st.Info.Assets[0].Code, Issuer: st.Info.Assets[0].Issuer}
	}
	if cfg.Contract {
		r.contract = st.Info.VaultContract
		// The wallet's opening balance in the vault, so that withdrawals have something to take.
		setup := transfer.Input{ClientKey: "chaos-setup-deposit", Request: transfer.Request{
			OperationType: transfer.Deposit, WalletAddress: r.wallet, Amount: "100000000", Asset: "USDC",
			Stroops: openingBalance,
		}}
		if _, err := svc.Orchestrator.Transfer(context.Background(), setup); err != nil {
			return fail(fmt.Errorf("opening deposit: %w", err))
		}
	}
	r.setupTxs = len(n.Applied()) // the channel accounts' creation, the opening deposit
	r.store = svc.Store
	r.ledger = &faultyLedger{Ledger: svc.Ledger, net: n, rate: cfg.SendFaultRate, lookupRate: cfg.FaultRate / 2, faults: &r.faults, events: &r.events,
		sent: map[string]bool{}, built: map[string]int{}, owner: map[string]string{}}
	r.ledger.cong = r.cong
	r.orch = svc.Orchestrator
	r.held = &heldStore{Store: r.store, clock: r.clock, t0: r.clock.Now(), holdRate: cfg.HoldRate, takeOverRate: cfg.TakeOverHoldRate, events: &r.events, stale: &r.stale}
	r.orch.Store = r.held
	r.orch.Ledger = r.ledger
	r.orch.Breaker = nil // the campaign's fault rate would keep it open; the breaker has its own tests
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, _ transfer.Record) error {
		rate := cfg.CrashRate
		if step == transfer.StepSettling {
			rate *= 5 // reached once per decided call, far less often than the other steps
		}
		c := callerOf(ctx)
		if c != nil && c.inv != nil && c.inv.dead.Load() {
			// Its SubmitterFunction invocation crashed (another record of it, or an earlier
			// message or batch of its event): the process is gone, and so is every later step.
			if !c.crashed {
				c.crashed = true
				r.events.add("delivery_killed_with_its_invocation")
			}
			return errCrash
		}
		if c != nil && !c.crashed && c.faulty && c.rng.Float64() < rate {
			c.crashed = true
			r.crashes.add(string(step))
			if c.inv != nil {
				c.inv.dead.Store(true) // the whole process dies at this step
			}
			return errCrash
		}
		return nil
	}
	keyTTL := config.Settings(func(string) string { return "" }).KeyTTL
	rcfg := reconcile.Config{Store: r.held, Settler: r.orch, Ledger: r.ledger, Gauge: noGauge{}, Clock: r.clock,
		KeyTTL: func() time.Duration { return keyTTL }, Logger: slog.New(slog.DiscardHandler)}
	if cfg.Async {
		r.queue = newSQSQueue(r.clock, rand.New(rand.NewPCG(cfg.Seed, 1<<43)), &r.faults, &r.events)
		r.queue.faulty = true
		r.orch.Queue = r.queue
		r.handler = queue.Submitter(campaignRunner{r}, queue.Visibility{Changer: r.queue, URL: "https://sqs.chaos.invalid/transfers"}, nil)
		rcfg.Queue, rcfg.Queued, rcfg.QueuedGrace = r.queue, r.held, asyncGraceInCampaign
		if err := r.startBatches(); err != nil {
			return fail(err)
		}
	}
	r.ops = reconcile.New(rcfg)
	if cfg.Congested {
		// The congestion starts once the rig is set up: the channel accounts' creation bids the
		// base fee, which a full lane would never take.
		if err := n.SetCongestion(congestionProfile(cfg.Seed, cfg.Keys, cfg.Wave, cfg.Contract)); err != nil {
			return fail(err)
		}
	}
	return r, cleanup, nil
}

// maxFeeEnv is MAX_FEE_STROOPS for the service's configuration: empty for the default.
func maxFeeEnv(stroops int64) string {
	if stroops <= 0 {
		return ""
	}
	return strconv.FormatInt(stroops, 10)
}

// loadBalanced reports whether the run's RPC is several instances behind one URL (Config.LoadBalanced);
// never for Horizon, whose proofs behind a load balancer are not supported.
func (r *rig) loadBalanced() bool {
	return r.cfg.LoadBalanced && (r.cfg.Backend == "" || r.cfg.Backend == "rpc")
}

// sweep settles every open item it can prove, as the scheduled sweep does, and returns how many
// are still in_flight or in_doubt.
func (r *rig) sweep(ctx context.Context) (int, error) {
	open := 0
	for k := range r.cfg.Keys {
		rec, err := r.store.Get(ctx, r.storeKey(k))
		if errors.Is(err, transfer.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if rec.Status != transfer.StatusInFlight && rec.Status != transfer.StatusInDoubt {
			continue
		}
		s, err := r.orch.Settle(ctx, rec)
		if err != nil && !errors.Is(err, transfer.ErrConditionFailed) {
			return 0, err
		}
		if err != nil || s.Resolution == transfer.Unresolved || s.Resolution == transfer.ResolvedInDoubt {
			open++
		}
	}
	return open, nil
}

func (r *rig) newCaller(k, i int, faulty bool) *caller {
	name := fmt.Sprintf("key %d caller %d", k, i)
	switch i {
	case 250:
		name = fmt.Sprintf("sweep %d", k)
	case 251:
		name = fmt.Sprintf("operator %d", k)
	case 254:
		name = "healing sweep"
	case 255:
		name = fmt.Sprintf("key %d healing retry", k)
	}
	return &caller{name: name, rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(k)<<8|uint64(i))), faulty: faulty}
}

// answer files one call's outcome.
func (r *rig) answer(out transfer.Outcome, err error) string {
	var p transfer.ProblemError
	switch {
	case err == nil && out.Replayed:
		return "replayed"
	case err == nil:
		return "ok"
	case errors.Is(err, errCrash):
		return "crashed"
	case errors.As(err, &p):
		return p.Problem().Code
	default:
		return "untyped"
	}
}

// Run plays one campaign and checks the invariants. The error is for a rig that could not start;
// broken invariants are in Report.Violations.
func Run(cfg Config) (Report, error) {
	started := time.Now()
	r, cleanup, err := newRig(cfg)
	if err != nil {
		return Report{}, err
	}
	defer cleanup()
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	t0 := r.clock.Now()
	seen := make([][]string, cfg.Keys) // hashes each key's callers saw succeed
	var seenMu sync.Mutex
	// toldCancelled: a DELETE of the key answered 200 (cancelAsync); cancelled: the heal found the
	// key cancelled. Guarded by seenMu.
	toldCancelled := make([]bool, cfg.Keys)
	cancelled := make([]bool, cfg.Keys)
	driver := rand.New(rand.NewPCG(cfg.Seed, 1<<40))
	readDice := rand.New(rand.NewPCG(cfg.Seed, 1<<41)) // the read faults' own (armReadFaults)
	var lateCalls atomic.Int64

	// The storm: keys in waves, each key hit by its callers at once.
	for w := 0; w < cfg.Keys; w += cfg.Wave {
		// Every few waves the ledger stalls or forgets history, or DynamoDB goes down for a while.
		switch (w / cfg.Wave) % 10 {
		case 3:
			if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultStall, Count: 1 + driver.IntN(4)}); err != nil {
				return Report{}, err
			}
			r.faults.add("stall")
		case 6:
			if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 2 + driver.IntN(3)}); err != nil {
				return Report{}, err
			}
			r.faults.add("retention")
		case 8:
			// History comes back two waves later (another RPC node behind the same endpoint): the
			// in-doubt items of those waves become provable again, and proofs of death release keys
			// while the stale actors hold reads of them.
			if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: fullRetention}); err != nil {
				return Report{}, err
			}
		case 9:
			r.minidyn.EmulateFailureForTable(r.table, server.FailureConditionInternalServerError)
			r.faults.add("dynamo_outage")
		case 1, 5:
			if r.contract != "" {
				// The wallet's balance entry expires: the next transfer must restore it first.
				if err := r.vaults.ArchiveBalance(r.contract, r.wallet); err == nil {
					r.faults.add("archived_balance")
				}
			}
		}
		r.pickBatchSize()
		readOrder, err := r.armReadFaults(readDice)
		if err != nil {
			return Report{}, err
		}
		var wg sync.WaitGroup
		release := r.clock.Hold() // the wave starts at one instant, however its goroutines are scheduled
		// The wave is active while any of its callers is at work; the last one to finish ends it,
		// before the clock can move on, so the actors see the same end however goroutines run.
		var callersLeft atomic.Int64
		var waveDone atomic.Bool
		active := func() bool { return !waveDone.Load() }
		for k := w; k < w+cfg.Wave && k < cfg.Keys; k++ {
			for i := 0; i < cfg.Callers; i++ {
				callersLeft.Add(1)
				r.clock.Go(&wg, func() {
					defer func() {
						if callersLeft.Add(-1) == 0 {
							waveDone.Store(true)
						}
					}()
					c := r.newCaller(k, i, true)
					ctx := withCaller(context.Background(), c)
					first := true
					call := func() {
						if cfg.Async {
							res, err := r.orch.Enqueue(ctx, r.input(k))
							switch {
							case err == nil && res.Accepted:
								r.answers.add("accepted")
							default:
								r.answers.add(r.answer(res.Outcome, err))
							}
							if err == nil && !res.Accepted {
								seenMu.Lock()
								seen[k] = append(seen[k], res.Outcome.TransactionHash)
								seenMu.Unlock()
							}
							if first && i == 0 && r.cancels(k) {
								if _, ok := r.batched(); ok {
									// A batched submitter takes its keys after the batching
									// window, one batch after the other: the DELETE comes
									// within a minute, so it races the take both ways.
									_ = r.clock.Sleep(ctx, time.Duration(c.rng.IntN(60_000))*time.Millisecond)
								}
								if r.cancelAsync(ctx, k, c.name) {
									seenMu.Lock()
									toldCancelled[k] = true
									seenMu.Unlock()
								}
							}
							first = false
							return
						}
						sends := sendsOf(ctx)
						out, err := r.orch.Transfer(ctx, r.input(k))
						r.answers.add(r.answer(out, err))
						if r.cong != nil {
							r.cong.answered(c.name, err, sentSince(ctx, sends))
						}
						if err == nil {
							seenMu.Lock()
							seen[k] = append(seen[k], out.TransactionHash)
							seenMu.Unlock()
						}
					}
					// Callers of one key arrive within a second of each other.
					_ = r.clock.Sleep(ctx, time.Duration(c.rng.IntN(1000))*time.Millisecond)
					call()
					if c.rng.Float64() < cfg.LateRate {
						// The client retries later, after the claim's lease (47 s) may have run out.
						_ = r.clock.Sleep(ctx, time.Duration(20_000+c.rng.IntN(70_000))*time.Millisecond)
						c.crashed = false // a new invocation
						lateCalls.Add(1)
						call()
					}
				})
			}
		}
		if cfg.Async {
			wave := w / cfg.Wave
			_, pollers := r.submitterMapping()
			for p := range pollers {
				r.clock.Go(&wg, func() { r.submitter(wave, p, active) })
			}
		}
		if cfg.Actors {
			wave := w / cfg.Wave
			r.clock.Go(&wg, func() { r.sweeper(withCaller(context.Background(), r.newCaller(wave, 250, true)), active) })
			r.clock.Go(&wg, func() { r.operator(withCaller(context.Background(), r.newCaller(wave, 251, true)), active) })
		}
		r.deauthorizeDuring(w, &wg)
		if driver.Float64() < 0.5 {
			// The outage (if any) ends while the wave runs.
			r.clock.Go(&wg, func() {
				_ = r.clock.Sleep(context.Background(), 3*time.Second)
				r.minidyn.EmulateFailureForTable(r.table, server.FailureConditionNone)
			})
		} else {
			r.minidyn.EmulateFailureForTable(r.table, server.FailureConditionNone)
		}
		release()
		wg.Wait()
		r.disarmReadFaults(readOrder)
		r.minidyn.EmulateFailureForTable(r.table, server.FailureConditionNone)
		if (w/cfg.Wave)%20 == 0 {
			logf("  wave %d/%d at +%v", w/cfg.Wave+1, (cfg.Keys+cfg.Wave-1)/cfg.Wave, r.clock.Now().Sub(t0).Round(time.Second))
		}
	}

	// Heal: no more faults or crashes. First the sweep settles every item it can prove, round
	// after round, until nothing is in_flight or in_doubt; that must happen within the time the
	// last envelope becomes provable plus two ledgers. Then every key is retried until it lands.
	r.net.ClearFaults()
	healStart := r.clock.Now()
	provableBy := healStart
	for k := range cfg.Keys {
		rec, err := r.store.Get(context.Background(), r.storeKey(k))
		if err != nil {
			continue
		}
		if rec.Envelope != nil && (rec.Status == transfer.StatusInDoubt || rec.Status == transfer.StatusInFlight) {
			if t := time.Unix(rec.Envelope.MaxTime, 0); t.After(provableBy) {
				provableBy = t
			}
		}
		if rec.Status == transfer.StatusInFlight && rec.LeaseExpiresAt.After(provableBy) {
			provableBy = rec.LeaseExpiresAt
		}
	}
	sweepCtx := withCaller(context.Background(), r.newCaller(0, 254, false))
	var sweepErr error
	unprovable := 0
	for round := 0; ; round++ {
		open, err := r.sweep(sweepCtx)
		if err != nil || open == 0 {
			sweepErr = err
			break
		}
		if round > 1000 {
			sweepErr = fmt.Errorf("%d items still open after %d sweeps", open, round)
			break
		}
		if r.loadBalanced() {
			// What only an operator can settle under a load balancer (settleUnprovable).
			unprovable += r.settleUnprovable(sweepCtx)
		}
		_ = r.clock.Sleep(sweepCtx, time.Second)
	}
	sweptBy := r.clock.Now()
	var asyncBad []string
	if cfg.Async {
		r.queue.heal()
		asyncBad = r.drainAsync(sweepCtx)
	}

	settled := make([]bool, cfg.Keys)
	rejected := make([]string, cfg.Keys) // the FAILED transaction a key's healing retry was answered with
	retries := make([]int, cfg.Keys)
	for w := 0; w < cfg.Keys; w += cfg.Wave {
		var wg sync.WaitGroup
		release := r.clock.Hold()
		for k := w; k < w+cfg.Wave && k < cfg.Keys; k++ {
			r.clock.Go(&wg, func() {
				ctx := withCaller(context.Background(), r.newCaller(k, 255, false))
				for attempt := 0; attempt < 100; attempt++ {
					sends := sendsOf(ctx)
					out, err := r.orch.Transfer(ctx, r.input(k))
					if r.cong != nil {
						r.cong.answered(fmt.Sprintf("key %d healing retry", k), err, sentSince(ctx, sends))
					}
					if rej, ok := errors.AsType[*transfer.RejectedError](err); ok && r.batches != nil {
						// Its destination refused it on chain (deauthorizeDuring): the key's
						// stored answer, final (judge checks the transaction and its operation).
						seenMu.Lock()
						rejected[k] = rej.TransactionHash
						seenMu.Unlock()
						settled[k] = true
						return
					}
					if errors.As(err, new(*transfer.CancelledError)) {
						// Cancelled before it ran: every retry answers the same (judge checks
						// nothing moved for it).
						seenMu.Lock()
						cancelled[k] = true
						seenMu.Unlock()
						return
					}
					if err == nil {
						seenMu.Lock()
						seen[k] = append(seen[k], out.TransactionHash)
						seenMu.Unlock()
						settled[k] = true
						return
					}
					retries[k]++
					wait := time.Second
					var p transfer.ProblemError
					if errors.As(err, &p) && p.Problem().RetryAfter > 0 {
						wait = p.Problem().RetryAfter
					}
					_ = r.clock.Sleep(ctx, wait)
				}
			})
		}
		release()
		wg.Wait()
	}

	rep := Report{Seed: cfg.Seed, Backend: cfg.Backend, Channels: cfg.Channels, Contract: cfg.Contract, Calls: cfg.Keys*cfg.Callers + int(lateCalls.Load()), LateCalls: int(lateCalls.Load()), Keys: cfg.Keys, Answers: r.answers.snapshot(),
		Faults: r.faults.snapshot(), Crashes: r.crashes.snapshot(), Events: r.events.snapshot(), Stale: r.stale.snapshot(), Operators: r.operators.snapshot(),
		VirtualTime: r.clock.Now().Sub(t0), LoadBalanced: r.loadBalanced(), Congested: cfg.Congested,
		BatchTxs: map[string]int{}, BatchOps: map[string]int{}}
	var stillInDoubt int
	rep.InDoubtSettle, stillInDoubt = r.held.settleTimes()
	for _, n := range retries {
		rep.HealRetries += n
	}
	for _, k := range []string{"stale_writes_applied_to_a_newer_incarnation", "stale_writes_refused_by_a_newer_incarnation"} {
		rep.Stale[k] += 0 // printed even when none happened: the first must stay 0
	}
	rep.SweptAfterProvable = sweptBy.Sub(provableBy)
	rep.LeftToOperator = unprovable
	rep.Violations = append(append(r.judge(seen, settled, cancelled, toldCancelled, rejected, &rep), asyncBad...), r.judgeCharges()...)
	rep.Violations = append(rep.Violations, r.judgeBatches()...)
	if r.cong != nil {
		ours := func(hash string) bool { _, ok := r.ledger.ownerOf(hash); return ok }
		rep.Violations = append(rep.Violations, r.cong.judge(r.net, ours, &rep)...)
	}
	if sweepErr != nil {
		rep.Violations = append(rep.Violations, "sweep: "+sweepErr.Error())
	}
	// Episodes the timing never saw end (judge checks the items themselves).
	rep.Events["in_doubt_untimed"] += stillInDoubt
	if bound := 2 * ledgerInterval; rep.SweptAfterProvable > bound {
		rep.Violations = append(rep.Violations, fmt.Sprintf("items stayed open %v after the last envelope was provable (bound %v)", rep.SweptAfterProvable, bound))
	}
	rep.RealTime = time.Since(started)
	return rep, nil
}

package stellarsim

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
)

// Errors returned by the helpers.
var (
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("already exists")
	ErrUnderfunded = errors.New("underfunded")
	ErrLineFull    = errors.New("trustline limit exceeded")

	errPanicDecode = errors.New("malformed transaction envelope")
)

// Clock gives the time ledgers are stamped with.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Options configures Start. Zero values take the defaults in the comments.
type Options struct {
	Addr              string        // listen address, default "127.0.0.1:0"
	NetworkPassphrase string        // default StandalonePassphrase
	CloseInterval     time.Duration // >0: close a ledger every interval (real time; gaps by LedgerClock); 0: only on CloseLedger()
	// LedgerClock varies the gaps between the closes CloseInterval schedules (ledgerclock.go): the
	// zero value closes on a fixed beat; LedgerClockUniform draws each gap within +-20% (Spread),
	// LedgerClockPubnet from pubnet's recorded close times, seeded. A caller that closes ledgers
	// itself (on a virtual clock) schedules them with NewLedgerSchedule.
	LedgerClock          LedgerClock
	Clock                Clock         // nil = real clock
	RetentionLedgers     uint32        // getTransaction history window, default 120960
	HorizonSubmitTimeout time.Duration // synchronous POST /transactions waits this long for inclusion, default 30s
	BaseFee              int64         // stroops per operation, default 100
	BaseReserve          int64         // stroops, default 5_000_000
	// FriendbotAmount is what GET /friendbot gives, default 10,000 XLM.
	FriendbotAmount int64
	// Contracts runs Soroban operations; nil refuses them (see ContractHost).
	Contracts ContractHost

	// ExpectedCloseInterval is the network's target ledger close time, which
	// core's submission-time TOO_LATE check scales (see upperBoundCloseTimeOffset).
	// Default: CloseInterval when set, else 5s (protocol 23's
	// ledgerTargetCloseTimeMilliseconds on pubnet).
	ExpectedCloseInterval time.Duration
	// VisibilityLagMin and VisibilityLagMax bound how long after it closes a
	// ledger is shown by RPC and Horizon (their ingestion), default 1s and 3s.
	// Each ledger's lag is picked in the range from VisibilitySeed and its
	// sequence, so a run under a virtual clock is repeatable.
	VisibilityLagMin, VisibilityLagMax time.Duration
	VisibilitySeed                     uint64
	// Lanes are the per-ledger limits of the transaction set (lanes.go); zero fields take
	// pubnet's values (PubnetLaneLimits). PubnetLaneLimits.Scaled(f) makes a small network.
	Lanes LaneLimits
	// QueueMultiplier is how many ledgers' worth of each lane the queue holds
	// (TRANSACTION_QUEUE_SIZE_MULTIPLIER), default 2.
	QueueMultiplier int
	// SurgeSeed breaks fee-rate ties when a lane or the queue is full (core breaks them at
	// random), so a run is repeatable.
	SurgeSeed uint64
	// Congestion, when set, starts background traffic at Start (see SetCongestion).
	Congestion *Congestion
	// ApplyOrderSeed seeds the shuffled order a ledger's transactions apply in (txset.go,
	// applyOrder; stellar-core's ApplyTxSorter), so a run is repeatable.
	ApplyOrderSeed uint64
	// RPCVersion is the stellar-rpc release RPC answers as (versions.go):
	// RPCCurrent (the default: v25.1.0 and later), RPCv25_0, RPCv24 or RPCv23.
	// PUT /_sim/rpc_version and SetRPCVersion change it while running.
	RPCVersion RPCVersion
	// HorizonVersion is the Horizon release the root reports (versions.go): HorizonCurrent (the
	// default: 28.0.0), HorizonV27, HorizonV26, HorizonV25 or HorizonV22. PUT
	// /_sim/horizon_version and SetHorizonVersion change it while running.
	HorizonVersion HorizonVersion
	// Three switches make the network simpler than the real one, each for tests that need one
	// behaviour held still to test another deterministically (doc.go, "Where it deliberately
	// differs"). The zero value of each is the real network's behaviour.

	// NoVisibilityLag shows a ledger through RPC and Horizon the instant core closes it.
	// stellar-rpc and Horizon show a ledger only once their ingestion has read it
	// (VisibilityLagMin..VisibilityLagMax later); with this set, a test that closes a ledger on a
	// clock it does not move can read the ledger at once. The lag has its own tests.
	NoVisibilityLag bool
	// ApplyInSubmissionOrder applies a ledger's transactions in the order they were submitted.
	// stellar-core applies them in an order it shuffles by hash (ApplyTxSorter; here seeded by
	// ApplyOrderSeed), which no submitter controls; with this set, a test whose subject needs one
	// transaction of a ledger to apply before another (a signer removed ahead of a payment that
	// still carries its signature) gets that order every run.
	ApplyInSubmissionOrder bool
	// Protocol22Restore runs the Soroban restore flow of a network before protocol 23, for a
	// client's code path that meets such a node: simulateTransaction answers a restorePreamble
	// for archived entries and an invocation whose footprint holds one fails with ENTRY_ARCHIVED,
	// so a RestoreFootprint must land first. Since protocol 23 (CAP-66; pubnet is at 26) the
	// invocation restores the entries its transaction data marks and stellar-rpc answers no
	// preamble. The fees of this mode are simpler than protocol 22's: the declared resource fee
	// is judged against the used resources only at apply and nothing is refunded.
	Protocol22Restore bool
}

const defaultRetention = 120960

// StandalonePassphrase is the passphrase of a standalone network (Stellar
// quickstart's "local"); the SDK has no constant for it.
const StandalonePassphrase = "Standalone Network ; February 2017"

// rootBalance is the genesis supply held by the root account (100 billion XLM).
const rootBalance = int64(1_000_000_000_000_000_000)

// Network is a one-node Stellar network with RPC, Horizon, friendbot and an
// admin API over one in-memory ledger. Safe for concurrent use.
type Network struct {
	opts       Options
	clock      Clock
	passphrase string
	contracts  ContractHost
	root       *keypair.Full

	mu           sync.Mutex
	state        *ledgerState
	closeTimes   []int64     // unix seconds, index = sequence-1
	closedAt     []time.Time // clock time each ledger closed at, index = sequence-1
	visibleAt    []time.Time // clock time RPC and Horizon show it from, index = sequence-1
	undo         undoLogs    // entry states before each recent ledger, for lagging reads
	ledgerClosed chan struct{}
	timeMoved    chan struct{}         // closed and replaced at every move of a clock that reports them (horizon_wait.go)
	queue        map[string]*pendingTx // by inner source account
	frozen       map[string]bool       // frozen ledger keys, XDR-encoded (frozen.go)
	nextOrder    uint64
	byHash       map[string]*AppliedTx // inner and outer hashes
	applied      []*AppliedTx
	banned       map[string]uint32 // full hash -> last closed ledger at which it is still banned
	envelopes    []*ReceivedEnvelope
	faults       []*armedFault
	instanceTurn map[string]uint64 // per API, the request count that picks the answering instance
	served       map[string]uint32 // per API and instance, the latest ledger it has shown (readView.served)
	retention    uint32
	rpcMethods   map[string]RPCHandler
	closeMeta    closeMetaCache  // the latest encoded LedgerCloseMeta (ledger_meta.go)
	cong         congestionState // lanes, queue limits, fee stats, background traffic (congestion.go)
	rpcVersion   RPCVersion      // the stellar-rpc profile (versions.go)
	horizonVer   HorizonVersion  // the Horizon profile (versions.go)

	ln      net.Listener
	srv     *http.Server
	baseURL string
	stop    chan struct{}
	wg      sync.WaitGroup
	closing sync.Once
}

// Start creates the network with its genesis ledger (sequence 1, the root
// account holding all lumens) and serves Horizon at /, RPC at /rpc, friendbot
// at /friendbot and the admin API at /_sim/.
func Start(opts Options) (*Network, error) {
	n, err := newNetwork(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", n.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("stellarsim: listen %s: %w", n.opts.Addr, err)
	}
	n.ln = ln
	n.baseURL = "http://" + ln.Addr().String()
	n.srv = &http.Server{Handler: n.Handler(), ReadHeaderTimeout: 10 * time.Second}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		_ = n.srv.Serve(ln)
	}()
	if n.opts.CloseInterval > 0 {
		n.wg.Add(1)
		go n.closeLoop(n.opts.CloseInterval)
	}
	return n, nil
}

func newNetwork(opts Options) (*Network, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.NetworkPassphrase == "" {
		opts.NetworkPassphrase = StandalonePassphrase
	}
	if opts.RetentionLedgers == 0 {
		opts.RetentionLedgers = defaultRetention
	}
	if opts.HorizonSubmitTimeout <= 0 {
		opts.HorizonSubmitTimeout = 30 * time.Second
	}
	if opts.BaseFee <= 0 {
		opts.BaseFee = 100
	}
	if opts.BaseReserve <= 0 {
		opts.BaseReserve = 5_000_000
	}
	if opts.FriendbotAmount <= 0 {
		opts.FriendbotAmount = 10_000 * 10_000_000
	}
	if opts.ExpectedCloseInterval <= 0 {
		opts.ExpectedCloseInterval = defaultExpectedClose
		if opts.CloseInterval > 0 {
			opts.ExpectedCloseInterval = opts.CloseInterval
		}
	}
	if opts.VisibilityLagMin <= 0 && opts.VisibilityLagMax <= 0 {
		opts.VisibilityLagMin, opts.VisibilityLagMax = defaultLagMin, defaultLagMax
	}
	if opts.VisibilityLagMin < 0 || opts.VisibilityLagMax < opts.VisibilityLagMin {
		return nil, fmt.Errorf("stellarsim: visibility lag: want 0 <= min <= max, got %v and %v", opts.VisibilityLagMin, opts.VisibilityLagMax)
	}
	congestionDefaults(&opts)
	if opts.Congestion != nil {
		if err := opts.Congestion.validate(opts.BaseFee); err != nil {
			return nil, fmt.Errorf("stellarsim: %w", err)
		}
	}
	if err := opts.LedgerClock.validate(); err != nil {
		return nil, err
	}
	if !opts.RPCVersion.valid() {
		return nil, fmt.Errorf("stellarsim: unknown stellar-rpc profile %q (want one of %v)", opts.RPCVersion, RPCVersions)
	}
	if !opts.HorizonVersion.valid() {
		return nil, fmt.Errorf("stellarsim: unknown Horizon profile %q (want one of %v)", opts.HorizonVersion, HorizonVersions)
	}
	clock := opts.Clock
	if clock == nil {
		clock = realClock{}
	}
	n := &Network{
		opts:         opts,
		clock:        clock,
		passphrase:   opts.NetworkPassphrase,
		contracts:    opts.Contracts,
		root:         keypair.Root(opts.NetworkPassphrase),
		state:        newLedgerState(),
		closeTimes:   []int64{clock.Now().Unix()},
		closedAt:     []time.Time{clock.Now()},
		visibleAt:    []time.Time{clock.Now()},
		instanceTurn: map[string]uint64{},
		undo:         undoLogs{},
		ledgerClosed: make(chan struct{}),
		timeMoved:    make(chan struct{}),
		queue:        map[string]*pendingTx{},
		byHash:       map[string]*AppliedTx{},
		banned:       map[string]uint32{},
		retention:    opts.RetentionLedgers,
		rpcVersion:   opts.RPCVersion.orCurrent(),
		horizonVer:   opts.HorizonVersion.orCurrent(),
		stop:         make(chan struct{}),
		cong:         newCongestionState(),
	}
	n.state.accounts[n.root.Address()] = &account{id: n.root.Address(), balance: rootBalance, lastModified: 1}
	if opts.Congestion != nil {
		if err := n.setCongestionLocked(*opts.Congestion); err != nil {
			return nil, fmt.Errorf("stellarsim: %w", err)
		}
	}
	n.rpcMethods = n.defaultRPCMethods()
	if _, ok := opts.Contracts.(simulator); ok {
		n.rpcMethods[protocol.SimulateTransactionMethodName] = n.rpcSimulateTransaction
	}
	if a, ok := opts.Contracts.(networkAttacher); ok {
		a.attach(n)
	}
	n.watchClock()
	return n, nil
}

// closeLoop closes a ledger at each time the schedule names, on the real clock: every interval,
// or at the gaps Options.LedgerClock draws.
func (n *Network) closeLoop(every time.Duration) {
	defer n.wg.Done()
	sched := NewLedgerSchedule(n.opts.LedgerClock, every, time.Now(), n.LatestLedger().Sequence+1)
	t := time.NewTimer(time.Until(sched.Due()))
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.CloseLedger()
			// Closes missed while this process did not run are skipped, as a ticker drops ticks.
			sched.Advance()
			for time.Until(sched.Due()) < 0 {
				sched.Advance()
			}
			t.Reset(time.Until(sched.Due()))
		}
	}
}

// URL is the Horizon root, e.g. http://127.0.0.1:PORT.
func (n *Network) URL() string { return n.baseURL }

// RPCURL is the Stellar RPC endpoint.
func (n *Network) RPCURL() string { return n.baseURL + "/rpc" }

// FriendbotURL is the friendbot endpoint (GET ?addr=G...).
func (n *Network) FriendbotURL() string { return n.baseURL + "/friendbot" }

// Passphrase is the network passphrase transactions must be signed for.
func (n *Network) Passphrase() string { return n.passphrase }

// Root is the genesis account holding the lumens friendbot hands out.
func (n *Network) Root() *keypair.Full { return n.root }

// Close stops the HTTP server and the ledger closer.
func (n *Network) Close() error {
	var err error
	n.closing.Do(func() {
		close(n.stop)
		if n.srv != nil {
			err = n.srv.Close()
		}
		n.wg.Wait()
	})
	return err
}

// Handler serves everything Start serves; useful to mount the network in
// another server or an httptest.Server.
func (n *Network) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rpc", n.serveRPC)
	mux.HandleFunc("POST /rpc/", n.serveRPC)
	n.horizonRoutes(mux)
	n.adminRoutes(mux)
	if a, ok := n.contracts.(adminRouter); ok {
		a.adminRoutes(mux)
	}
	return n.readViews(mux)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

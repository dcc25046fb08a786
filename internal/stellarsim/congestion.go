package stellarsim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
)

// congestionState is the network's lane, queue-limit, fee-statistics and background-traffic
// state (lanes.go, queuelimit.go, feestats.go, this file). Guarded by Network.mu.
type congestionState struct {
	ledgerFees map[uint32]laneFees       // per closed ledger: what each lane charged
	charging   laneFees                  // the ledger being closed, while it closes
	evicted    [2]evictedBid             // per lane, since the last close
	feeStats   map[uint32]ledgerFeeStats // per closed ledger: what the fee windows take in
	bg         *background               // nil: no background traffic
}

func newCongestionState() congestionState {
	return congestionState{ledgerFees: map[uint32]laneFees{}, feeStats: map[uint32]ledgerFeeStats{}}
}

// afterCloseLocked runs once ledger seq has closed and the queue was updated: the charging
// state ends, the fee windows take the ledger in, the lanes' evicted bids are forgotten
// (TransactionQueue::shift calls TxQueueLimiter::resetEvictionState) and the background
// traffic, if any, submits its next transactions. Callers hold n.mu.
func (n *Network) afterCloseLocked(seq uint32) {
	n.cong.charging = laneFees{}
	n.ingestFeesLocked(seq)
	n.cong.evicted = [2]evictedBid{}
	n.backgroundLocked(seq)
}

// Congestion is background traffic: classic payments, and with SorobanPerLedger contract calls
// (congestion_soroban.go), from accounts the network creates and funds for itself, submitted
// through the queue like any other after every ledger close, each bidding a fee per operation
// (for a contract call, an inclusion fee on top of its resource fee) drawn from a seeded
// log-uniform distribution, with spikes. Under a virtual clock the same profile, seed and
// submissions give the same ledgers on every run.
type Congestion struct {
	// Seed picks the accounts' keys and the fees.
	Seed uint64 `json:"seed"`
	// PerLedger is how many transactions (one payment each) are submitted after each close.
	PerLedger int `json:"per_ledger"`
	// FeeMin and FeeMax bound the fee per operation the traffic bids, in stroops (log-uniform);
	// default: the base fee and 10 times FeeMin.
	FeeMin int64 `json:"fee_min,omitempty"`
	FeeMax int64 `json:"fee_max,omitempty"`
	// Accounts is the size of the background account pool (one queued transaction per account,
	// as core keeps); default 8 x PerLedger.
	Accounts int `json:"accounts,omitempty"`
	// Spikes raise the bids for a while.
	Spikes []Spike `json:"spikes,omitempty"`

	// SorobanPerLedger is how many Soroban transactions are submitted after each close, each
	// one InvokeHostFunction (congestion_soroban.go); they fill the Soroban lane, not the
	// classic one. It needs a contract host that can run them (Options.Contracts a VaultHost).
	SorobanPerLedger int `json:"soroban_per_ledger,omitempty"`
	// SorobanFeeMin and SorobanFeeMax bound the inclusion fee those transactions bid, in
	// stroops (log-uniform; the declared resource fee comes on top); default FeeMin and FeeMax.
	SorobanFeeMin int64 `json:"soroban_fee_min,omitempty"`
	SorobanFeeMax int64 `json:"soroban_fee_max,omitempty"`
	// SorobanInstructions, when above what simulation needs, is the instructions each of them
	// declares (and pays for), so fewer fill the lane's instruction limit; default: simulation's.
	SorobanInstructions int64 `json:"soroban_instructions,omitempty"`
	// SorobanAccounts is the size of the Soroban traffic's own account pool; default 8 x
	// SorobanPerLedger.
	SorobanAccounts int `json:"soroban_accounts,omitempty"`
}

// Spike makes every background bid at least Multiplier times its lane's clearing fee (classic,
// or Soroban for the contract calls) of the last ledger closed before the spike began (at least
// the base fee), from After the profile was set, For a duration; PerLedger and
// SorobanPerLedger, when set, replace the profile's volumes meanwhile. JSON takes durations as
// Go duration strings ("2m").
type Spike struct {
	After            time.Duration `json:"-"`
	For              time.Duration `json:"-"`
	Multiplier       float64       `json:"multiplier"`
	PerLedger        int           `json:"per_ledger,omitempty"`
	SorobanPerLedger int           `json:"soroban_per_ledger,omitempty"`
}

type spikeJSON struct {
	After            string  `json:"after"`
	For              string  `json:"for"`
	Multiplier       float64 `json:"multiplier"`
	PerLedger        int     `json:"per_ledger,omitempty"`
	SorobanPerLedger int     `json:"soroban_per_ledger,omitempty"`
}

// MarshalJSON writes After and For as duration strings.
func (s Spike) MarshalJSON() ([]byte, error) {
	return json.Marshal(spikeJSON{After: s.After.String(), For: s.For.String(), Multiplier: s.Multiplier,
		PerLedger: s.PerLedger, SorobanPerLedger: s.SorobanPerLedger})
}

// UnmarshalJSON reads After and For as duration strings.
func (s *Spike) UnmarshalJSON(b []byte) error {
	var j spikeJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var err error
	*s = Spike{Multiplier: j.Multiplier, PerLedger: j.PerLedger, SorobanPerLedger: j.SorobanPerLedger}
	if j.After != "" {
		if s.After, err = time.ParseDuration(j.After); err != nil {
			return fmt.Errorf("spike after: %w", err)
		}
	}
	if s.For, err = time.ParseDuration(j.For); err != nil {
		return fmt.Errorf("spike for: %w", err)
	}
	return nil
}

// background is an armed Congestion.
type background struct {
	profile   Congestion
	start     time.Time
	rng       *rand.Rand
	accounts  []*keypair.Full
	next      int     // round-robin position in accounts
	spikeBase int64   // clearing fee the running spike multiplies, 0 outside spikes
	made      uint64  // transactions built, to vary the amounts (and so the hashes)
	lastSpike float64 // multiplier of the running spike, for GET /_sim/congestion

	// The Soroban traffic's own draws, accounts and spike base (congestion_soroban.go), apart
	// from the classic traffic's, so adding it leaves the classic traffic's bids as they were.
	srng             *rand.Rand
	sorobanAccounts  []*keypair.Full
	sorobanNext      int
	sorobanSpikeBase int64
	sorobanMade      uint64 // Soroban calls built, to vary the amounts (and so the hashes)
}

const backgroundBalance = 100_000 * 10_000_000 // stroops each background account starts with

// validate checks a profile against the network's base fee and fills its defaults.
func (c *Congestion) validate(baseFee int64) error {
	if c.PerLedger < 0 || c.PerLedger > 100_000 {
		return errors.New("congestion: per_ledger must be 0 to 100000")
	}
	if c.FeeMin == 0 {
		c.FeeMin = baseFee
	}
	if c.FeeMax == 0 {
		c.FeeMax = 10 * c.FeeMin
	}
	if c.FeeMin < baseFee || c.FeeMax < c.FeeMin || c.FeeMax > math.MaxUint32 {
		return fmt.Errorf("congestion: want base fee (%d) <= fee_min <= fee_max <= %d, got %d and %d", baseFee, uint32(math.MaxUint32), c.FeeMin, c.FeeMax)
	}
	if c.Accounts == 0 {
		c.Accounts = 8 * c.PerLedger
	}
	if c.Accounts < 0 || c.Accounts > 1_000_000 {
		return errors.New("congestion: accounts must be 0 to 1000000")
	}
	for _, s := range c.Spikes {
		if s.After < 0 || s.For <= 0 || s.Multiplier <= 0 || s.PerLedger < 0 || s.PerLedger > 100_000 ||
			s.SorobanPerLedger < 0 || s.SorobanPerLedger > 100_000 {
			return errors.New("congestion: a spike needs after >= 0, for > 0, multiplier > 0 and 0 <= per_ledger, soroban_per_ledger <= 100000")
		}
	}
	return c.validateSoroban(baseFee)
}

// SetCongestion starts background traffic (replacing any running profile) from the next
// ledger close; the spikes count from now. The background accounts are created at once, funded
// by the root account. An invalid profile changes nothing and its error is returned.
func (n *Network) SetCongestion(c Congestion) error {
	if err := c.validate(n.opts.BaseFee); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.setCongestionLocked(c)
}

func (n *Network) setCongestionLocked(c Congestion) error {
	bg := &background{profile: c, start: n.clock.Now(),
		rng: rand.New(rand.NewPCG(c.Seed, splitmix64(c.Seed)))}
	for i := range c.Accounts {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], c.Seed)
		binary.BigEndian.PutUint64(b[8:], uint64(i))
		seed := sha256.Sum256(append([]byte("stellarsim background account "), b[:]...))
		kp, err := keypair.FromRawSeed(seed)
		if err != nil {
			return fmt.Errorf("congestion: background key: %w", err)
		}
		if _, ok := n.state.accounts[kp.Address()]; !ok {
			if err := n.createAccountLocked(kp.Address(), backgroundBalance); err != nil {
				return fmt.Errorf("congestion: background account: %w", err)
			}
		}
		bg.accounts = append(bg.accounts, kp)
	}
	if err := n.armSorobanBackgroundLocked(bg); err != nil {
		return err
	}
	n.cong.bg = bg
	return nil
}

// ClearCongestion stops the background traffic; what it queued stays queued.
func (n *Network) ClearCongestion() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cong.bg = nil
}

// spike is the spike running at now, if any.
func (bg *background) spike(now time.Time) *Spike {
	el := now.Sub(bg.start)
	for i := range bg.profile.Spikes {
		s := &bg.profile.Spikes[i]
		if el >= s.After && el < s.After+s.For {
			return s
		}
	}
	return nil
}

// backgroundLocked submits the background transactions due after ledger seq closed: the
// classic payments, then the Soroban calls.
func (n *Network) backgroundLocked(seq uint32) {
	bg := n.cong.bg
	if bg == nil {
		return
	}
	sp := bg.spike(n.clock.Now())
	if sp == nil {
		bg.spikeBase, bg.sorobanSpikeBase, bg.lastSpike = 0, 0, 0
	} else {
		if bg.spikeBase == 0 {
			bg.spikeBase = max(n.cong.ledgerFees[seq].baseFee[laneClassic], n.opts.BaseFee)
		}
		if bg.sorobanSpikeBase == 0 {
			bg.sorobanSpikeBase = max(n.cong.ledgerFees[seq].baseFee[laneSoroban], n.opts.BaseFee)
		}
		bg.lastSpike = sp.Multiplier
	}
	n.backgroundClassicLocked(sp)
	n.backgroundSorobanLocked(sp)
}

// backgroundClassicLocked submits the classic payments due after a close, sp being the running
// spike (nil outside spikes).
func (n *Network) backgroundClassicLocked(sp *Spike) {
	bg := n.cong.bg
	if len(bg.accounts) == 0 {
		return
	}
	p := bg.profile
	count := p.PerLedger
	if sp != nil && sp.PerLedger > 0 {
		count = sp.PerLedger
	}
	closeTime := n.closeTimes[len(n.closeTimes)-1]
	latest := n.latestLocked()
	lo, hi := math.Log(float64(p.FeeMin)), math.Log(float64(p.FeeMax))
	for range count {
		kp, dest := n.freeBackgroundAccount()
		if kp == nil {
			return
		}
		bid := int64(math.Round(math.Exp(lo + (hi-lo)*bg.rng.Float64())))
		bid = min(max(bid, p.FeeMin), p.FeeMax)
		if sp != nil {
			bid = max(bid, int64(math.Ceil(sp.Multiplier*float64(bg.spikeBase))))
		}
		bid = min(bid, math.MaxUint32)
		acct := n.state.accounts[kp.Address()]
		bg.made++
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
			SourceAccount:        &txnbuild.SimpleAccount{AccountID: kp.Address(), Sequence: acct.seq},
			IncrementSequenceNum: true,
			BaseFee:              bid,
			Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, closeTime+300)},
			Operations: []txnbuild.Operation{&txnbuild.Payment{Destination: dest,
				Amount: amountString(int64(1 + bg.made%1000)), Asset: txnbuild.NativeAsset{}}},
		})
		if err != nil {
			return
		}
		if tx, err = tx.Sign(n.passphrase, kp); err != nil {
			return
		}
		b64, err := tx.Base64()
		if err != nil {
			return
		}
		t, err := decodeEnvelope(b64, n.passphrase)
		if err != nil {
			return
		}
		rec := &ReceivedEnvelope{At: n.clock.Now().UTC(), API: "background", Hash: t.fullHash, InnerHash: t.innerHash,
			Source: t.source, Sequence: t.seq, LatestLedger: latest.Sequence, EnvelopeXDR: b64}
		n.acceptLocked(&submission{tx: t, latest: latest, rec: rec})
	}
}

// freeBackgroundAccount is the next background account without a queued transaction, and the
// account after it as the payment's destination; nil when all have one queued.
func (n *Network) freeBackgroundAccount() (*keypair.Full, string) {
	bg := n.cong.bg
	return n.freeAccountOf(bg.accounts, &bg.next)
}

// freeAccountOf is the next account of pool, from *next on round-robin, without a queued
// transaction, and the account after it; nil when all have one queued.
func (n *Network) freeAccountOf(pool []*keypair.Full, next *int) (*keypair.Full, string) {
	for range pool {
		i := *next
		*next = (*next + 1) % len(pool)
		kp := pool[i]
		if n.queue[kp.Address()] == nil && n.state.accounts[kp.Address()] != nil {
			return kp, pool[(i+1)%len(pool)].Address()
		}
	}
	return nil, ""
}

// amountString is stroops as a decimal lumen amount.
func amountString(stroops int64) string {
	return fmt.Sprintf("%d.%07d", stroops/10_000_000, stroops%10_000_000)
}

// congestionRoutes serves /_sim/congestion.
func (n *Network) congestionRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /_sim/congestion", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, n.CongestionReport(20))
	})
	mux.HandleFunc("POST /_sim/congestion", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			adminError(w, http.StatusBadRequest, fmt.Errorf("reading body: %w", err))
			return
		}
		var c Congestion
		if err := json.Unmarshal(body, &c); err != nil {
			adminError(w, http.StatusBadRequest, fmt.Errorf("decoding congestion profile: %w", err))
			return
		}
		if err := n.SetCongestion(c); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusCreated, n.CongestionReport(20))
	})
	mux.HandleFunc("DELETE /_sim/congestion", func(w http.ResponseWriter, _ *http.Request) {
		n.ClearCongestion()
		writeJSON(w, http.StatusOK, n.CongestionReport(20))
	})
}

// LedgerLanes is what one closed ledger's transaction set took and charged per lane.
type LedgerLanes struct {
	Sequence       uint32 `json:"sequence"`
	ClassicBaseFee int64  `json:"classic_base_fee"` // stroops per operation charged (the clearing fee)
	SorobanBaseFee int64  `json:"soroban_base_fee"`
	ClassicFull    bool   `json:"classic_full"` // a valid transaction was left queued
	SorobanFull    bool   `json:"soroban_full"`
	ClassicOps     int64  `json:"classic_ops"` // operations taken (fee bumps count one more)
	SorobanTxs     int64  `json:"soroban_txs"`
}

// CongestionReport is GET /_sim/congestion: the lane and queue limits, the running profile, the
// queue's contents and the last ledgers' lanes.
type CongestionReport struct {
	Lanes           LaneLimits    `json:"lanes"`
	QueueMultiplier int           `json:"queue_multiplier"`
	Profile         *Congestion   `json:"profile"`
	Spike           float64       `json:"spike_multiplier,omitempty"` // of the running spike
	QueuedClassic   int64         `json:"queued_classic_ops"`
	QueuedSoroban   int64         `json:"queued_soroban_txs"`
	Ledgers         []LedgerLanes `json:"ledgers"` // newest first
}

// CongestionReport reports the lanes of the last ledgers (at most last of them).
func (n *Network) CongestionReport(last int) CongestionReport {
	n.mu.Lock()
	defer n.mu.Unlock()
	r := CongestionReport{Lanes: n.opts.Lanes, QueueMultiplier: n.opts.QueueMultiplier, Ledgers: []LedgerLanes{}}
	if bg := n.cong.bg; bg != nil {
		p := bg.profile
		r.Profile, r.Spike = &p, bg.lastSpike
	}
	for _, p := range n.queue {
		res := p.tx.laneResources()
		if p.tx.lane() == laneSoroban {
			r.QueuedSoroban += res[0]
		} else {
			r.QueuedClassic += res[0]
		}
	}
	seqs := make([]uint32, 0, len(n.cong.ledgerFees))
	for s := range n.cong.ledgerFees {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] > seqs[j] })
	for _, s := range seqs[:min(len(seqs), max(last, 0))] {
		f := n.cong.ledgerFees[s]
		r.Ledgers = append(r.Ledgers, LedgerLanes{Sequence: s, ClassicBaseFee: f.baseFee[laneClassic], SorobanBaseFee: f.baseFee[laneSoroban],
			ClassicFull: f.full[laneClassic], SorobanFull: f.full[laneSoroban], ClassicOps: f.ops[laneClassic], SorobanTxs: f.ops[laneSoroban]})
	}
	return r
}

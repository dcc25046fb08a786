package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The congestion run (Config.Congested): the campaign on a network whose classic lane is full.
// The local network takes 60 classic operations per ledger (pubnet's 1,000 scaled by 0.06;
// stellarsim.LaneLimits) and holds twice that in its queue; after every close 66 background
// payments from the network's own accounts bid 100 to 1,000 stroops per operation
// (log-uniform), so every ledger is surge priced and the queue evicts the lowest bids; every
// 10 minutes of virtual time a spike makes every background bid at least 10 times the clearing
// fee for 2 minutes. It is `make bench-congestion`'s network (internal/loadtest), under the
// campaign's faults, crashes and stale actors. The service runs with MAX_FEE_STROOPS
// congestedMaxFee: enough for a fee bump's two operation slots at the usual clearing fees, not
// at a spike's, so calls meet FEE_ABOVE_CAP too. The congestion is the network, not a fault: it
// goes on while the faults heal, and every key must still settle.
//
// Besides the campaign's invariants, the ledger and the answers must show:
//   - no envelope of the service reached the network bidding more than MAX_FEE_STROOPS per
//     payment it holds (its fee, or a fee bump's outer fee), none was even built so
//     (transfer.Envelope.FeeStroops), and no transaction of the service was charged more: the cap
//     is the operator's bound on what one transfer may cost, whatever the market does;
//   - nothing a call sent before a FEE_ABOVE_CAP answer ever landed (the service says "nothing
//     was submitted", and a client may act on it: a call whose envelope was proven dead within
//     the call, or refused at its first send, releases the key and builds again, and may then
//     meet the cap, so an envelope was sent but can never land), and the answer carries a
//     Retry-After of at least a second (the client's only cue for when the market may fit the
//     cap again).
//
// In contract mode (Config.Contract) the Soroban lane is congested too: the same scale gives it
// 34.8M instructions a ledger (about 19 vault calls of 1.8M; stellarsim.LaneLimits), and after
// every close 22 background contract calls (vault deposits of the network's own accounts,
// stellarsim.Congestion.SorobanPerLedger) bid 100 to 1,000 stroops of inclusion fee on top of
// their resource fees, with the same spikes against the Soroban clearing fee. The service's calls
// bid sorobanInclusionFee and are replaced by fee in that lane; MAX_FEE_STROOPS is then
// congestedContractMaxFee, and the same congestion invariants hold.

// baseFee is the local network's base fee per operation, in stroops (stellarsim.Options.BaseFee's
// default).
const baseFee = 100

// congestedLanes is the congestion run's ledger: 60 classic operations per ledger.
var congestedLanes = stellarsim.PubnetLaneLimits.Scaled(0.06)

// congestedMaxFee is the congestion run's MAX_FEE_STROOPS: a fee bump of one payment bids two
// operation slots, so 5,000 stroops a slot. Background bids reach 1,000 outside spikes (the
// fee stats' percentile of a fee-bump window reads up to twice the clearing fee, lanes.go and
// internal/stellar's fees.go say why); a spike bids 10 times the clearing fee.
const congestedMaxFee = 2_000

// congestedContractMaxFee is the congestion run's MAX_FEE_STROOPS in contract mode. A vault
// call declares a resource fee of about 35,000 stroops, and about 61,000 when it creates or
// restores its balance entry (the rent; stellarsim's stand-in schedule, fees.go), which an
// archived balance, one of the campaign's faults, makes every call do until one lands: the cap
// leaves such a call about 4,500 stroops a slot of inclusion fee, enough at the usual clearing
// fees and not at a spike's, and a plain call about 17,000.
const congestedContractMaxFee = 70_000

// congestionProfile is the background traffic of a run of keys keys: spikes every 10 minutes
// from the third, enough of them to last the storm and the healing (a wave of the default
// campaign takes about 3 to 4 minutes of virtual time). With contract, background contract
// calls fill the Soroban lane too.
func congestionProfile(seed uint64, keys, wave int, contract bool) stellarsim.Congestion {
	waves := (keys + wave - 1) / max(wave, 1)
	var spikes []stellarsim.Spike
	for i := range waves/2 + 10 {
		spikes = append(spikes, stellarsim.Spike{After: 3*time.Minute + time.Duration(i)*10*time.Minute, For: 2 * time.Minute, Multiplier: 10})
	}
	c := stellarsim.Congestion{Seed: seed, PerLedger: 66, FeeMin: 100, FeeMax: 1_000, Spikes: spikes}
	if contract {
		c.SorobanPerLedger, c.SorobanFeeMin, c.SorobanFeeMax = 22, 100, 1_000
	}
	return c
}

// congestion tallies what the congested network did and what the service did on it, and
// collects the congestion invariants' violations as they happen.
type congestion struct {
	maxFee int64 // MAX_FEE_STROOPS the service runs with

	n counter

	mu  sync.Mutex
	max map[string]int64 // highest values seen, by name
	bad []string
	// capped maps the inner hash of every envelope sent by a call later answered FEE_ABOVE_CAP
	// to that call.
	capped map[string]string
}

// atLeast raises the highest value seen under name to v.
func (c *congestion) atLeast(name string, v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max == nil {
		c.max = map[string]int64{}
	}
	c.max[name] = max(c.max[name], v)
}

// closed tallies ledger seq's lanes: surge priced (the clearing fee above the base fee) and the
// highest clearing fee seen, classic and Soroban.
func (c *congestion) closed(net *stellarsim.Network, seq uint32) {
	classic, soroban, ok := net.ClearingFee(seq)
	if !ok {
		return
	}
	c.n.add("ledgers")
	if classic > baseFee {
		c.n.add("surge_priced_ledgers")
	}
	c.atLeast("max_clearing_fee", classic)
	if soroban > baseFee {
		c.n.add("soroban_surge_priced_ledgers")
	}
	c.atLeast("max_soroban_clearing_fee", soroban)
}

func (c *congestion) violation(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bad = append(c.bad, fmt.Sprintf(format, args...))
}

// prepared checks an envelope the service built: at most MAX_FEE_STROOPS per payment it holds.
func (c *congestion) prepared(env transfer.Envelope) {
	var e xdr.TransactionEnvelope
	n := int64(1)
	if xdr.SafeUnmarshalBase64(env.XDR, &e) == nil {
		n = max(int64(len(e.Operations())), 1)
	}
	if c.maxFee > 0 && env.FeeStroops > n*c.maxFee {
		c.violation("envelope %s of %d payments built bidding %d stroops, above MAX_FEE_STROOPS %d per payment", short(env.InnerHash), n, env.FeeStroops, c.maxFee)
	}
}

// answered checks one call's answer: a FEE_ABOVE_CAP says when to retry, and the envelopes the
// call sent before it (sent, inner hashes) are kept for judge, which checks that none of them
// landed.
func (c *congestion) answered(who string, err error, sent []string) {
	var p transfer.ProblemError
	if !errors.As(err, &p) {
		return
	}
	prob := p.Problem()
	if prob.Code != transfer.CodeFeeAboveCap {
		return
	}
	c.n.add("fee_above_cap_answers")
	if prob.RetryAfter < time.Second {
		c.violation("%s: answered FEE_ABOVE_CAP with Retry-After %v", who, prob.RetryAfter)
	}
	if len(sent) > 0 {
		c.n.add("fee_above_cap_after_a_send_in_the_call")
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.capped == nil {
			c.capped = map[string]string{}
		}
		for _, h := range sent {
			c.capped[h] = who
		}
	}
}

// judge checks the ledger: every envelope of the service the network received bid at most
// MAX_FEE_STROOPS per payment it holds, and every transaction of the service it applied was
// charged at most that.
// ours says whether a hash is one the service prepared.
func (c *congestion) judge(net *stellarsim.Network, ours func(hash string) bool, rep *Report) []string {
	for _, e := range net.Envelopes() {
		if e.API == "background" || !(ours(e.Hash) || ours(e.InnerHash)) {
			continue
		}
		c.n.add("service_envelopes_received")
		if strings.Contains(e.Outcome, "evicted from the full queue") {
			c.n.add("service_envelopes_evicted_by_higher_bids")
		}
		var env xdr.TransactionEnvelope
		if err := xdr.SafeUnmarshalBase64(e.EnvelopeXDR, &env); err != nil {
			continue // not an envelope: the network refused it, nothing could be charged
		}
		fee := int64(env.Fee())
		if env.IsFeeBump() {
			fee = env.FeeBumpFee()
		}
		c.atLeast("service_max_bid", fee)
		if n := max(int64(len(env.Operations())), 1); fee > n*c.maxFee {
			c.violation("envelope %s of %d payments reached the network bidding %d stroops, above MAX_FEE_STROOPS %d per payment", short(e.Hash), n, fee, c.maxFee)
		}
	}
	for _, a := range net.Applied() {
		if !ours(a.Hash) {
			continue
		}
		c.atLeast("service_max_charged", a.FeeCharged)
		if n := max(int64(len(a.Ops)), 1); a.FeeCharged > n*c.maxFee {
			c.violation("transaction %s of %d payments was charged %d stroops, above MAX_FEE_STROOPS %d per payment", short(a.Hash), n, a.FeeCharged, c.maxFee)
		}
	}
	// A FEE_ABOVE_CAP answer says nothing was submitted: a call may have sent an envelope that
	// was proven dead or refused within the call (the key is released and the call's next build
	// meets the cap), but none of them may ever land.
	c.mu.Lock()
	for _, e := range net.Envelopes() {
		if _, ok := c.capped[e.InnerHash]; ok {
			// How the network answered what such calls sent, for the report.
			c.n.add("fee_above_cap_prior_send_" + strings.ToLower(e.Status+"_"+e.Code))
		}
	}
	for h, who := range c.capped {
		if tx, ok := net.Transaction(h); ok {
			c.bad = append(c.bad, fmt.Sprintf("%s: answered FEE_ABOVE_CAP (nothing was submitted), but envelope %s it sent landed in ledger %d (%s)", who, short(h), tx.Ledger, tx.Status))
		}
	}
	c.mu.Unlock()
	rep.Congestion = c.n.snapshot()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range c.max {
		rep.Congestion[k] = int(v)
	}
	return append([]string(nil), c.bad...)
}

// withoutBackground is applied without the background traffic's transactions: the service pays
// every fee of its own from the vault (no channels) or the fee account (fee bumps), and the
// network's background accounts pay their own.
func (c *congestion) withoutBackground(applied []stellarsim.AppliedTx, payers ...string) []stellarsim.AppliedTx {
	out := applied[:0:0]
	for _, a := range applied {
		ours := false
		for _, p := range payers {
			ours = ours || a.FeeSource == p
		}
		if !ours {
			c.n.add("background_applied")
			continue
		}
		out = append(out, a)
	}
	return out
}

// sendsOf is how many sends the caller of ctx has made so far.
func sendsOf(ctx context.Context) int64 {
	if c := callerOf(ctx); c != nil {
		return c.sends.Load()
	}
	return 0
}

// sentSince is the inner hashes the caller of ctx sent from its n-th send on.
func sentSince(ctx context.Context, n int64) []string {
	if c := callerOf(ctx); c != nil {
		return c.sentSince(n)
	}
	return nil
}

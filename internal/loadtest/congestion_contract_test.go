package loadtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// The congestion benchmark in vault-contract mode: the same network, arrivals and budget as the
// payment rows (congParams), with the Soroban lane congested too. The lanes scaled by LaneScale
// give the Soroban lane 34.8M instructions a ledger at 0.06, about 19 vault calls of 1.8M; after
// every close the network's own accounts submit contractSorobanPerLedger vault deposits bidding
// the same log-uniform inclusion fees and spikes as the payments (stellarsim.Congestion's Soroban
// fields), on top of their resource fees. Three rows: the service on Stellar RPC (contract mode
// runs on RPC only) with its channel accounts fee-bumped by the fee account, and two direct
// submitters of vault deposits, one bidding getFeeStats' sorobanInclusionFee p90 and re-submitting
// on refusal, one bidding a static 100 stroops. Each deposit carries its arrival's amount, which
// identifies its payments on the ledger.

// contractSorobanPerLedger is the background contract calls per ledger: a tenth more than the
// lane takes at 0.06 (19 calls of 1.8M instructions), as 66 payments are to 60 operations.
const contractSorobanPerLedger = 22

// contractBackground is p's background with the Soroban lane congested too.
func contractBackground(p congParams) stellarsim.Congestion {
	b := p.Background
	b.SorobanPerLedger, b.SorobanFeeMin, b.SorobanFeeMax = contractSorobanPerLedger, b.FeeMin, b.FeeMax
	return b
}

// callSubmitter is a direct submitter of vault deposits with a pool of accounts, each the
// operator of a vault of its own (the vault authorizes its operator as the source account): the
// official Go client the plain way, one deposit per transaction, no store, no fee bump. Each
// envelope is simulated (transaction data, auth) and bids, on top of its resource fee, static
// stroops of inclusion fee, or getFeeStats' sorobanInclusionFee p90 read before it; otherwise as
// submitter (re-sent a second after a refusal, rebuilt once NOT_FOUND past its maxTime).
type callSubmitter struct {
	clock      *vclock.Clock
	rpc        *rpcclient.Client
	passphrase string
	static     int64
	interval   time.Duration
	accounts   chan *keypair.Full
	vaults     map[string]xdr.ScAddress // by operator
	sources    map[string]bool
}

func newCallSubmitter(tb testing.TB, clock *vclock.Clock, n *stellarsim.Network, host *stellarsim.VaultHost, accounts int, static int64, interval time.Duration) *callSubmitter {
	tb.Helper()
	c := rpcclient.NewClient(n.RPCURL(), &http.Client{Transport: newRPCTransport(clock), Timeout: 30 * time.Second})
	tb.Cleanup(func() { _ = c.Close() })
	s := &callSubmitter{clock: clock, rpc: c, passphrase: n.Passphrase(), static: static, interval: interval,
		accounts: make(chan *keypair.Full, accounts), vaults: map[string]xdr.ScAddress{}, sources: map[string]bool{}}
	for range accounts {
		key := keypair.MustRandom()
		must(tb, n.CreateAccount(key.Address(), 1e11))
		id, err := host.DeployVault(stellarsim.VaultSpec{Operator: key.Address()})
		must(tb, err)
		addr, err := stellarsim.ScAddress(id)
		must(tb, err)
		s.vaults[key.Address()] = addr
		s.accounts <- key
		s.sources[key.Address()] = true
	}
	return s
}

// bid is the inclusion fee of the next envelope.
func (s *callSubmitter) bid(ctx context.Context) (int64, error) {
	if s.static > 0 {
		return s.static, nil
	}
	st, err := s.rpc.GetFeeStats(ctx)
	if err != nil {
		return 0, err
	}
	return max(int64(st.SorobanInclusionFee.P90), txnbuild.MinBaseFee), nil
}

// build simulates and signs key's deposit of stroops into wallet's balance in its vault.
func (s *callSubmitter) build(ctx context.Context, key *keypair.Full, wallet string, stroops int64, maxTime time.Time) (envelope, hash string, err error) {
	who, err := stellarsim.ScAddress(wallet)
	if err != nil {
		return "", "", err
	}
	amount := xdr.Int128Parts{Lo: xdr.Uint64(stroops)}
	op := &txnbuild.InvokeHostFunction{HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract,
		InvokeContract: &xdr.InvokeContractArgs{ContractAddress: s.vaults[key.Address()], FunctionName: "deposit",
			Args: xdr.ScVec{{Type: xdr.ScValTypeScvAddress, Address: &who}, {Type: xdr.ScValTypeScvI128, I128: &amount}}}}}
	account, err := s.rpc.LoadAccount(ctx, key.Address())
	if err != nil {
		return "", "", err
	}
	params := txnbuild.TransactionParams{SourceAccount: account, IncrementSequenceNum: true, Operations: []txnbuild.Operation{op},
		BaseFee: txnbuild.MinBaseFee, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime.Unix())}}
	draft, err := txnbuild.NewTransaction(params)
	if err != nil {
		return "", "", err
	}
	draftXDR, err := draft.Base64()
	if err != nil {
		return "", "", err
	}
	sim, err := s.rpc.SimulateTransaction(ctx, protocol.SimulateTransactionRequest{Transaction: draftXDR})
	if err != nil {
		return "", "", err
	}
	if sim.Error != "" || len(sim.Results) != 1 || sim.Results[0].AuthXDR == nil {
		return "", "", fmt.Errorf("simulateTransaction: %s", sim.Error)
	}
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		return "", "", err
	}
	for _, a := range *sim.Results[0].AuthXDR {
		var entry xdr.SorobanAuthorizationEntry
		if err := xdr.SafeUnmarshalBase64(a, &entry); err != nil {
			return "", "", err
		}
		op.Auth = append(op.Auth, entry)
	}
	op.Ext = xdr.TransactionExt{V: 1, SorobanData: &data}
	if params.BaseFee, err = s.bid(ctx); err != nil {
		return "", "", err
	}
	if params.SourceAccount, err = s.rpc.LoadAccount(ctx, key.Address()); err != nil {
		return "", "", err
	}
	tx, err := txnbuild.NewTransaction(params)
	if err != nil {
		return "", "", err
	}
	if tx, err = tx.Sign(s.passphrase, key); err != nil {
		return "", "", err
	}
	if envelope, err = tx.Base64(); err != nil {
		return "", "", err
	}
	hash, err = tx.HashHex(s.passphrase)
	return envelope, hash, err
}

// pay deposits stroops for wallet until it lands or deadline passes; it reports whether it
// landed and counts its requests and refusals into side.
func (s *callSubmitter) pay(ctx context.Context, wallet string, stroops int64, deadline time.Time, side *congSide) (bool, error) {
	var key *keypair.Full
	select {
	case key = <-s.accounts:
	default:
		for key == nil {
			if !s.clock.Now().Before(deadline) {
				return false, nil
			}
			_ = s.clock.Sleep(ctx, 100*time.Millisecond)
			select {
			case key = <-s.accounts:
			default:
			}
		}
	}
	defer func() { s.accounts <- key }()
	for s.clock.Now().Before(deadline) {
		maxTime := s.clock.Now().Add(submitterValidity)
		envelope, hash, err := s.build(ctx, key, wallet, stroops, maxTime)
		if err != nil {
			return false, err
		}
		side.add(func(c *congSide) { c.calls++ })
		sent, err := s.rpc.SendTransaction(ctx, protocol.SendTransactionRequest{Transaction: envelope})
		if err != nil {
			return false, err
		}
		if sent.Status != "PENDING" && sent.Status != "DUPLICATE" {
			side.add(func(c *congSide) { c.refused++ })
			_ = s.clock.Sleep(ctx, resubmitAfter)
			continue
		}
		for {
			if err := s.clock.Sleep(ctx, directPoll*4); err != nil {
				return false, err
			}
			got, err := s.rpc.GetTransaction(ctx, protocol.GetTransactionRequest{Hash: hash})
			if err != nil {
				return false, err
			}
			if got.Status == protocol.TransactionStatusSuccess {
				return !s.clock.Now().After(deadline), nil
			}
			if got.Status == protocol.TransactionStatusFailed {
				return false, fmt.Errorf("transaction %s failed: %s", hash, got.ResultXDR)
			}
			if s.clock.Now().After(maxTime.Add(2 * s.interval)) {
				break
			}
		}
	}
	return false, nil
}

// depositOf is an applied vault deposit's amount (the call's second argument) and the
// inclusion fee it declared room for: its fee less its declared resource fee, and its slots (a
// fee bump counts one more); ok is false for anything else.
func depositOf(a stellarsim.AppliedTx) (amount, resourceFee, slots int64, ok bool) {
	var env xdr.TransactionEnvelope
	if xdr.SafeUnmarshalBase64(a.EnvelopeXDR, &env) != nil {
		return 0, 0, 0, false
	}
	inner, slots := env.V1, int64(1)
	if env.IsFeeBump() {
		inner, slots = env.FeeBump.Tx.InnerTx.V1, 2
	}
	if inner == nil || len(inner.Tx.Operations) != 1 || inner.Tx.Ext.SorobanData == nil {
		return 0, 0, 0, false
	}
	body := inner.Tx.Operations[0].Body
	if body.InvokeHostFunctionOp == nil || body.InvokeHostFunctionOp.HostFunction.InvokeContract == nil {
		return 0, 0, 0, false
	}
	args := body.InvokeHostFunctionOp.HostFunction.InvokeContract.Args
	if len(args) != 2 || args[1].I128 == nil {
		return 0, 0, 0, false
	}
	return int64(args[1].I128.Lo), int64(inner.Tx.Ext.SorobanData.ResourceFee), slots, true
}

// measureContractCongestion runs the three contract rows on one network, each given the same
// arrivals; the figures' fee ratios are the Soroban lane's (congSide.feeRatios: the inclusion
// fee charged, the fee less the declared resource fee, over the Soroban clearing fee of its
// ledger; slotRatio per slot).
func measureContractCongestion(tb testing.TB, p congParams) ([]*congSide, []stellarsim.LedgerLanes) {
	tb.Helper()
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	// The service's vault account operates the vault contract its stack deploys (VAULT_CONTRACT=local).
	service := startCongService(tb, clock, nil, "bench-congestion-contract-master-0123456789", p,
		map[string]string{"STELLAR_BACKEND": "rpc", "VAULT_CONTRACT": "local"})
	n, host, wallets, feeAccount := service.stack.Network, service.stack.Vaults, walletsOf(service.stack), service.fee
	r := &rig{clock: clock, net: n, interval: p.Interval}
	feeStats := newCallSubmitter(tb, clock, n, host, p.Channels, 0, p.Interval)
	static := newCallSubmitter(tb, clock, n, host, p.Channels, p.StaticFee, p.Interval)
	sides := []*congSide{
		{name: fmt.Sprintf("service, vault contract, Stellar RPC, %d channels", p.Channels)},
		{name: "direct contract calls, sorobanInclusionFee p90, re-submits on refusal"},
		{name: fmt.Sprintf("direct contract calls, static %d stroops", p.StaticFee)},
	}
	rng := rand.New(rand.NewPCG(p.Seed, 0x636f6e67))
	arrivals := make([]time.Duration, p.Arrivals)
	at := p.WarmUp
	for i := range arrivals {
		arrivals[i] = at
		at += time.Duration(rng.ExpFloat64() * float64(p.Arrival))
	}

	must(tb, n.SetCongestion(contractBackground(p)))
	first := n.LatestLedger().Sequence
	start := clock.Now()
	var wg sync.WaitGroup
	release := clock.Hold()
	stopClosing := r.closeOnTime()
	for i, offset := range arrivals {
		wallet := wallets[i%len(wallets)]
		stroops := int64(10_000_000 + i)
		for si, side := range sides {
			clock.Go(&wg, func() {
				ctx := context.Background()
				_ = clock.Sleep(ctx, offset)
				t0 := clock.Now()
				deadline := t0.Add(p.Budget)
				var landed bool
				var err error
				switch si {
				case 0:
					landed = serviceCall(ctx, clock, service.svc, transfer.Deposit, fmt.Sprintf("cong-contract-%06d", i), wallet, stroops, deadline, side)
				case 1:
					landed, err = feeStats.pay(ctx, wallet, stroops, deadline, side)
				case 2:
					landed, err = static.pay(ctx, wallet, stroops, deadline, side)
				}
				if err != nil {
					side.fail(err)
				}
				took := clock.Now().Sub(t0)
				side.add(func(c *congSide) {
					c.arrivals++
					if landed && took <= p.Budget {
						c.landed = append(c.landed, took)
					} else {
						c.missed = append(c.missed, offset)
					}
				})
			})
		}
	}
	release()
	wg.Wait()
	stopClosing()
	tb.Logf("%d arrivals per side over %v virtual", p.Arrivals, clock.Now().Sub(start).Round(time.Second))
	n.ClearCongestion()

	for _, s := range sides {
		slices.Sort(s.landed)
		slices.Sort(s.missed)
		if len(s.lastAnswer) > 0 {
			tb.Logf("%s: the last answers of the transfers that missed the budget: %v", s.name, s.lastAnswer)
		}
		s.paid = map[int64]int{}
	}
	for _, a := range n.Applied() {
		var side *congSide
		switch {
		case a.FeeSource == feeAccount || a.Source == service.vault:
			side = sides[0]
		case feeStats.sources[a.Source]:
			side = sides[1]
		case static.sources[a.Source]:
			side = sides[2]
		}
		amount, resource, slots, ok := depositOf(a)
		if side == nil || !ok {
			continue
		}
		side.feeSum += a.FeeCharged
		if _, soroban, ok := n.ClearingFee(a.Ledger); ok && soroban > 0 {
			// The refund of an unused refundable fee is nil here: the calls write an existing
			// entry or pay its rent in full, so the fee less the declared resource fee is the
			// inclusion fee charged.
			inclusion := max(a.FeeCharged-resource, 0)
			side.feeRatios = append(side.feeRatios, float64(inclusion)/float64(soroban))
			side.slotRatio = append(side.slotRatio, float64(inclusion)/float64(soroban*slots))
		}
		if a.Status == "SUCCESS" {
			side.paid[amount]++
		}
	}
	// What became of the envelopes the network took: replaced in its queue by a fee bump of
	// higher fee (the service's replace-by-fee), or evicted from the full queue by higher bids.
	for _, e := range n.Envelopes() {
		if e.API == "background" || !e.Accepted {
			continue
		}
		side := sides[0]
		if feeStats.sources[e.Source] {
			side = sides[1]
		} else if static.sources[e.Source] {
			side = sides[2]
		}
		switch {
		case strings.Contains(e.Outcome, "replaced in queue"):
			side.replaced++
		case strings.Contains(e.Outcome, "evicted from the full queue"):
			side.evicted++
		}
	}
	var lanes []stellarsim.LedgerLanes
	for _, l := range n.CongestionReport(1 << 20).Ledgers {
		if l.Sequence > first {
			lanes = append(lanes, l)
		}
	}
	return sides, lanes
}

// contractCongTable renders the contract rows and the goals as Markdown.
func contractCongTable(p congParams, sides []*congSide, lanes []stellarsim.LedgerLanes) string {
	var b strings.Builder
	b.WriteString("| row | landed within budget | missed, budget overlapping the spike | missed, other | p50 | p90 | p99 | in doubt per 1,000 calls | FEE_ABOVE_CAP answers | refusals | inclusion fee charged per call / Soroban clearing fee: mean | max | per slot: mean | mean fee per call, stroops | calls on the network | paid twice |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	lat := func(s *congSide, q float64) string {
		if d, ok := s.latencyAt(q); ok {
			return seconds(d)
		}
		return "> " + seconds(p.Budget)
	}
	for i, s := range sides {
		doubt, aboveCap, refused := "-", "-", strconv.Itoa(s.refused)
		if i == 0 {
			doubt = fmt.Sprintf("%.1f", 1000*float64(s.inDoubt)/float64(max(s.calls, 1)))
			aboveCap, refused = strconv.Itoa(s.aboveCap), "-"
		}
		ratios := "- | - | -"
		if len(s.feeRatios) > 0 {
			ratios = fmt.Sprintf("%.2f | %.2f | %.2f", mean(s.feeRatios), slices.Max(s.feeRatios), mean(s.slotRatio))
		}
		payments := 0
		for _, c := range s.paid {
			payments += c
		}
		inSpike := 0
		for _, at := range s.missed {
			for _, sp := range p.Background.Spikes {
				if at < sp.After+sp.For && at+p.Budget > sp.After {
					inSpike++
					break
				}
			}
		}
		meanFee := "-"
		if len(s.feeRatios) > 0 {
			meanFee = strconv.FormatInt(s.feeSum/int64(len(s.feeRatios)), 10)
		}
		fmt.Fprintf(&b, "| %s | %.1f%% (%d/%d) | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d |\n", s.name,
			100*float64(len(s.landed))/float64(max(s.arrivals, 1)), len(s.landed), s.arrivals,
			inSpike, len(s.missed)-inSpike, lat(s, 0.5), lat(s, 0.9), lat(s, 0.99), doubt, aboveCap, refused, ratios, meanFee, payments, s.paidTwice())
	}
	surged, maxClear := 0, int64(0)
	for _, l := range lanes {
		if l.SorobanFull {
			surged++
		}
		maxClear = max(maxClear, l.SorobanBaseFee)
	}
	fmt.Fprintf(&b, "\n%d ledgers, %d of them surge priced in the Soroban lane; highest Soroban clearing fee %d stroops per transaction slot; MAX_FEE_STROOPS %d.\n",
		len(lanes), surged, maxClear, p.MaxFee)
	for _, s := range sides {
		fmt.Fprintf(&b, "%s: %d envelopes replaced in the queue by fee, %d evicted from the full queue by higher bids.\n", s.name, s.replaced, s.evicted)
	}
	b.WriteString("\n")
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	ref, refOK := sides[1].latencyAt(0.5)
	twice := 0
	for _, s := range sides {
		twice += s.paidTwice()
	}
	s := sides[0]
	b.WriteString("| goal | service, vault contract |\n|---|---|\n")
	if d, ok := s.latencyAt(0.5); ok && refOK {
		r := d.Seconds() / ref.Seconds()
		fmt.Fprintf(&b, "| p50 within 1.1x the fee-stats submitter's | %s (%.2fx) |\n", met(r <= 1.1), r)
	} else {
		fmt.Fprintf(&b, "| p50 within 1.1x the fee-stats submitter's | %s (p50 beyond the budget) |\n", met(false))
	}
	share := float64(len(s.landed)) / float64(max(s.arrivals, 1))
	fmt.Fprintf(&b, "| >= 99%% landed within the budget | %s (%.1f%%) |\n", met(share >= 0.99), 100*share)
	fmt.Fprintf(&b, "| inclusion fee <= 1.25x the clearing fee per slot | %s (mean %.2fx per slot) |\n", met(mean(s.slotRatio) <= 1.25), mean(s.slotRatio))
	fmt.Fprintf(&b, "| nothing paid twice (any row) | %s (%d in all) |\n", met(twice == 0), twice)
	return b.String()
}

// TestContractCongestionSmall is the contract rows of the congestion benchmark at a small size,
// run by every `go test`: every row runs without an unexpected error, the Soroban lane is surge
// priced at least once, nothing is paid twice, and every transfer answered landed is a deposit on
// the network.
func TestContractCongestionSmall(t *testing.T) {
	p := defaultCongParams()
	p.Arrivals, p.Channels = 6, 4
	p.Background.Spikes = []stellarsim.Spike{{After: 40 * time.Second, For: 30 * time.Second, Multiplier: 10}}
	sides, lanes := measureContractCongestion(t, p)
	surged := 0
	for _, l := range lanes {
		if l.SorobanFull {
			surged++
		}
	}
	if surged == 0 {
		t.Fatalf("no ledger was surge priced in the Soroban lane: %+v", lanes)
	}
	for _, s := range sides {
		if s.arrivals != p.Arrivals || s.paidTwice() != 0 || s.failures != 0 {
			t.Fatalf("%s: %d arrivals (want %d), %d paid twice, %d failures (first: %v)", s.name, s.arrivals, p.Arrivals, s.paidTwice(), s.failures, s.firstFail)
		}
		payments := 0
		for _, c := range s.paid {
			payments += c
		}
		if payments < len(s.landed) {
			t.Fatalf("%s: %d transfers answered landed, %d deposits on the network", s.name, len(s.landed), payments)
		}
	}
	t.Logf("\n%s", contractCongTable(p, sides, lanes))
}

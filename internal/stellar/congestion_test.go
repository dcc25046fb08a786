package stellar_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// The service paying through congestion: the orchestrator with the real payment ledger (Stellar
// RPC or Horizon; the vault as the source, or channels fee-bumped by the fee account), minidyn and
// the local network with its lane limits scaled down and background traffic from other accounts,
// all on one virtual clock (a ledger closes every 5 s of it).

// payRig is that stack.
type payRig struct {
	t      *testing.T
	clock  *vclock.Clock
	net    *stellarsim.Network
	vault  string
	wallet string
	usdc   stellarsim.Asset
	ledger transfer.Ledger
	orch   *transfer.Orchestrator
	store  transfer.Store
	// foreign are the hashes of others' transactions a test submitted (spikeNow).
	foreign map[string]bool
	// leases are the channel leases in the rig's table (another process's leases, for tests).
	leases *dynamo.ChannelLeases
}

type payRigOpts struct {
	backend       string // "rpc" or "horizon"
	channels      int
	classicOps    int64 // the classic lane's operations per ledger
	maxFee        int64
	feePercentile int
	// vaultHost runs vault contracts on the network, so a congestion profile can carry others'
	// contract calls (stellarsim.Congestion.SorobanPerLedger).
	vaultHost bool
	// horizonFront, when set, is given the network's Horizon URL and returns the one the service
	// uses (a front that changes Horizon's answers).
	horizonFront func(horizonURL string) string
}

func newPayRig(t *testing.T, o payRigOpts) *payRig {
	t.Helper()
	// Here the first close comes simNetClose after the clock's start, not at the first move.
	netOpts := stellarsim.Options{VisibilityLagMin: time.Second, VisibilityLagMax: 3 * time.Second,
		Lanes: stellarsim.LaneLimits{ClassicOps: o.classicOps}, SurgeSeed: 3}
	if o.vaultHost {
		netOpts.Contracts = stellarsim.NewVaultHost(stellarsim.VaultOptions{MinPersistentTTL: 1000})
	}
	clock, n := startSimNet(t, simNetOpts{net: netOpts, firstCloseAfterInterval: true})
	sim := fundedKeys(t, n, fundOpts{vaultTrustline: true, vaultUSDC: 1_000 * unit, fee: true, wallet: true, walletTrustline: true})
	keys, issuer, usdc, wallet := sim.keys, sim.issuer, sim.usdc, sim.wallet
	var err error
	db, _ := dynamotest.Minidyn(t)
	store := dynamotest.NewStore(t, db)
	var pool *sources.ChannelPool
	if o.channels > 0 {
		if pool, err = sources.NewChannelPool(sources.ChannelPoolConfig{Leases: dynamo.NewChannelLeases(db, store.Table()),
			Count: o.channels, Clock: clock}); err != nil {
			t.Fatal(err)
		}
	}
	assets := []txnbuild.CreditAsset{{Code: "USDC", Issuer: issuer.Address()}}
	var l interface {
		transfer.Ledger
		EnsureChannels(context.Context) ([]stellar.ChannelAccount, error)
	}
	switch o.backend {
	case "rpc":
		l, err = stellar.NewRPCLedger(stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: keys.Vault.Address(),
			Assets: assets, Keys: signing.StaticKeys{K: keys}, Channels: pool, Clock: clock, MaxFeeStroops: o.maxFee, FeePercentile: o.feePercentile})
	default:
		hURL := n.URL()
		if o.horizonFront != nil {
			hURL = o.horizonFront(hURL)
		}
		l, err = stellar.NewHorizonLedger(stellar.HorizonConfig{URL: hURL, Passphrase: n.Passphrase(), VaultAccount: keys.Vault.Address(),
			Assets: assets, Keys: signing.StaticKeys{K: keys}, Channels: pool, Clock: clock, MaxFeeStroops: o.maxFee, FeePercentile: o.feePercentile})
	}
	if err != nil {
		t.Fatal(err)
	}
	if o.channels > 0 {
		// The channel accounts exist before the lanes are congested (their creation, three
		// operations a channel, would not fit a scaled-down lane).
		chans, err := sources.DeriveChannelKeys(keys.ChannelMaster, o.channels)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chans {
			if err := n.CreateAccount(c.Address(), 0); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.EnsureChannels(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := &payRig{t: t, clock: clock, net: n, vault: keys.Vault.Address(), wallet: wallet, usdc: usdc, ledger: l, store: store, foreign: map[string]bool{},
		leases: dynamo.NewChannelLeases(db, store.Table())}
	r.orch = &transfer.Orchestrator{Store: store, Ledger: l, Clock: clock,
		Logger: slog.New(slog.DiscardHandler), Breaker: transfer.NewBreaker(transfer.BreakerSettings{})}
	return r
}

// ledgers lets k ledgers close, one per 5 s of the clock, and RPC and Horizon show the last.
func (r *payRig) ledgers(k int) {
	for range k {
		_ = r.clock.Sleep(context.Background(), 5*time.Second)
	}
	_ = r.clock.Sleep(context.Background(), 3*time.Second)
}

func (r *payRig) transfer(key string, units int64) (transfer.Outcome, error) {
	r.t.Helper()
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: r.wallet, Amount: itoa(units), Asset: "USDC", Stroops: units * unit}
	return r.orch.Transfer(context.Background(), transfer.Input{ClientKey: key, Request: req})
}

// ours is every envelope the service sent (the network's record, background traffic left out).
func (r *payRig) ours() []stellarsim.ReceivedEnvelope {
	var out []stellarsim.ReceivedEnvelope
	for _, e := range r.net.Envelopes() {
		if e.API != "background" && !r.foreign[e.Hash] {
			out = append(out, e)
		}
	}
	return out
}

// offered is an envelope's fee per operation slot (a fee bump counting one more), in stroops.
func offered(t *testing.T, b64 string) int64 {
	t.Helper()
	var e xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64, &e); err != nil {
		t.Fatal(err)
	}
	if e.IsFeeBump() {
		return e.FeeBumpFee() / int64(len(e.Operations())+1)
	}
	return int64(e.Fee()) / int64(len(e.Operations()))
}

func eachPayMode(t *testing.T, test func(t *testing.T, backend string, channels int)) {
	for _, backend := range []string{"rpc", "horizon"} {
		for _, channels := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/channels=%d", backend, channels), func(t *testing.T) { test(t, backend, channels) })
		}
	}
}

// Below the cap, a payment lands through congestion within its budget: the lane takes 20
// operations a ledger and others bid 200 to 2,000 stroops for 30 a ledger. The service bids the
// fee stats' p90, lands on its first envelope (re-sends of it aside), and is charged the ledger's
// clearing fee (what every transaction of a surge-priced ledger pays), never its whole bid.
func TestCongestionPaymentLandsWithinBudget(t *testing.T) {
	eachPayMode(t, func(t *testing.T, backend string, channels int) {
		r := newPayRig(t, payRigOpts{backend: backend, channels: channels, classicOps: 20, maxFee: 100_000, feePercentile: 90})
		if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 200, FeeMax: 2_000}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(12) // the fee windows fill with surge-priced ledgers
		start := r.clock.Now()
		out, err := r.transfer("congested-1", 5)
		if err != nil {
			t.Fatalf("transfer: %v (our envelopes: %+v)", err, r.ours())
		}
		took := r.clock.Now().Sub(start)
		if took > transfer.DefaultSettings().Timeout {
			t.Errorf("landed after %v, past the budget", took)
		}
		sent := r.ours()
		built := map[string]bool{}
		for _, e := range sent {
			built[e.InnerHash] = true
		}
		if len(built) != 1 {
			t.Errorf("%d envelopes built, want 1 (the first bid lands)", len(built))
		}
		a, ok := r.net.Transaction(out.TransactionHash)
		if !ok || a.Status != "SUCCESS" {
			t.Fatalf("%s: %+v, %v", out.TransactionHash, a, ok)
		}
		classic, _, _ := r.net.ClearingFee(a.Ledger)
		slots := int64(1 + min(channels, 1))
		if classic <= 100 || a.FeeCharged != classic*slots {
			t.Errorf("charged %d stroops in ledger %d, whose clearing fee is %d per operation (%d slots): want a surge-priced ledger's clearing fee",
				a.FeeCharged, a.Ledger, classic, slots)
		}
		if bid := offered(t, sent[0].EnvelopeXDR); bid < classic {
			t.Errorf("bid %d per slot, below the clearing fee %d it landed at", bid, classic)
		}
		for _, e := range sent {
			t.Logf("sent at %s (ledger %d): %s %s, bid %d per slot: %s", e.At.Format("15:04:05.0"), e.LatestLedger, e.Status, e.Code, offered(t, e.EnvelopeXDR), e.Outcome)
		}
		for _, l := range r.net.CongestionReport(8).Ledgers {
			t.Logf("ledger %d: clearing %d, %d ops", l.Sequence, l.ClassicBaseFee, l.ClassicOps)
		}
		t.Logf("landed in %v at ledger %d: bid %d per slot, charged %d (clearing %d per operation)",
			took, a.Ledger, offered(t, sent[0].EnvelopeXDR), a.FeeCharged, classic)
	})
}

// The fee the network names sets the rebuild's rate: the queue is full of bids at 1,000 stroops
// while the fee stats still show no surge, so the first envelope (at the base fee) is refused
// txINSUFFICIENT_FEE with feeCharged the fee that beats the lowest queued bid
// (computeBetterFee: 1,001 per operation). That refusal of a first send proves the envelope dead;
// the rebuild offers exactly that rate, not a blind multiple, evicts a queued bid and lands.
func TestCongestionFeeNeededSetsTheRebuild(t *testing.T) {
	eachPayMode(t, func(t *testing.T, backend string, channels int) {
		r := newPayRig(t, payRigOpts{backend: backend, channels: channels, classicOps: 2, maxFee: 100_000, feePercentile: 90})
		if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 5, PerLedger: 4, FeeMin: 1_000, FeeMax: 1_000}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(1) // the background fills the queue (2 x 2 operations) after this close
		out, err := r.transfer("hinted-1", 5)
		if err != nil {
			t.Fatalf("transfer: %v (our envelopes: %+v)", err, r.ours())
		}
		sent := r.ours()
		if len(sent) != 2 || sent[0].Status != "ERROR" || sent[0].Code != "txINSUFFICIENT_FEE" {
			t.Fatalf("our envelopes %+v, want a refusal then the rebuild", sent)
		}
		if first := offered(t, sent[0].EnvelopeXDR); first != 100 {
			t.Errorf("first bid %d per slot, want the base fee (the fee stats show no surge yet)", first)
		}
		if rebuilt := offered(t, sent[1].EnvelopeXDR); rebuilt != 1_001 {
			t.Errorf("rebuild bid %d per slot, want 1,001: the fee the network named", rebuilt)
		}
		a, ok := r.net.Transaction(out.TransactionHash)
		if !ok || a.Status != "SUCCESS" || sent[1].InnerHash != out.TransactionHash {
			t.Fatalf("%s: %+v, %v; want the rebuild landed", out.TransactionHash, a, ok)
		}
	})
}

// A market above the cap is answered FEE_ABOVE_CAP at once, retryable with a Retry-After, and
// nothing reaches the network: others bid 5,000 stroops per operation and the cap is 1,000 (500
// per slot with a fee bump). The key is free: once the market falls below the cap, the same key
// lands.
func TestCongestionMarketAboveTheCapSendsNothing(t *testing.T) {
	eachPayMode(t, func(t *testing.T, backend string, channels int) {
		r := newPayRig(t, payRigOpts{backend: backend, channels: channels, classicOps: 2, maxFee: 1_000, feePercentile: 90})
		if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 9, PerLedger: 3, FeeMin: 5_000, FeeMax: 5_000}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(4)
		start := r.clock.Now()
		_, err := r.transfer("capped-1", 5)
		var u *transfer.UnavailableError
		if !errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap || u.Problem().Kind != transfer.KindUnavailable || u.RetryAfter < 5*time.Second {
			t.Fatalf("err = %v, want 503 FEE_ABOVE_CAP with a Retry-After of a ledger or more", err)
		}
		if sent := r.ours(); len(sent) != 0 {
			t.Fatalf("%d envelopes reached the network: %+v", len(sent), sent)
		}
		if !r.clock.Now().Equal(start) {
			t.Errorf("answered after %v, want at once", r.clock.Now().Sub(start))
		}
		t.Logf("detail: %s", u.Detail)
		// The market falls: the background stops and the fee windows move past the surge.
		r.net.ClearCongestion()
		r.ledgers(12)
		if _, err := r.transfer("capped-1", 5); err != nil {
			t.Fatalf("the same key once the market fell: %v", err)
		}
	})
}

// A contract call bids the Soroban lane's inclusion fee (getFeeStats sorobanInclusionFee), not
// the classic one: the classic lane is congested (others bid 1,000 to 3,000 stroops for 8
// operations a ledger into 4) while the Soroban lane clears at the base fee. With and without a
// fee bump.
func TestCongestionContractCallBidsTheSorobanLane(t *testing.T) {
	for _, channels := range []int{0, 1} {
		t.Run(fmt.Sprintf("channels=%d", channels), func(t *testing.T) {
			r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: channels, lanes: stellarsim.LaneLimits{ClassicOps: 4}})
			r.inner.FeePercentile = 90
			r.ledger = r.ledgerWithCap(r.inner.MaxFeeStroops)
			r.orch.Ledger = r.ledger
			// One call lands at the base fee, so the Soroban window is not empty.
			r.mustTransfer("soroban-0001", transfer.Deposit, r.wallet, 5)
			if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 3, PerLedger: 8, FeeMin: 1_000, FeeMax: 3_000}); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				_ = r.clock.Sleep(context.Background(), 5*time.Second)
			}
			_ = r.clock.Sleep(context.Background(), contractLagMax)
			fs, err := rpcclient.NewClient(r.net.RPCURL(), nil).GetFeeStats(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fs.InclusionFee.P90 < 1_000 || fs.SorobanInclusionFee.TransactionCount == 0 {
				t.Fatalf("fee stats %+v: want a congested classic lane and a Soroban window with the first call", fs)
			}
			before := len(r.ours())
			out := r.mustTransfer("soroban-0002", transfer.Deposit, r.wallet, 2)
			sent := r.ours()[before:]
			if len(sent) == 0 || sent[0].InnerHash != out.TransactionHash {
				t.Fatalf("sent %+v for %s", sent, out.TransactionHash)
			}
			var e xdr.TransactionEnvelope
			if err := xdr.SafeUnmarshalBase64(sent[0].EnvelopeXDR, &e); err != nil {
				t.Fatal(err)
			}
			fee, slots, inner := int64(e.Fee()), int64(1), e.V1
			if e.IsFeeBump() {
				fee, slots, inner = e.FeeBumpFee(), 2, e.FeeBump.Tx.InnerTx.V1
			}
			resource := int64(inner.Tx.Ext.SorobanData.ResourceFee)
			want := max(int64(fs.SorobanInclusionFee.P90), 100)
			if got := (fee - resource) / slots; got != want {
				t.Errorf("inclusion fee %d stroops per slot, want the Soroban lane's p90 %d (the classic p90 is %d)", got, want, fs.InclusionFee.P90)
			}
		})
	}
}

// ours is every envelope the rig's service sent (background traffic left out).
func (r *contractRig) ours() []stellarsim.ReceivedEnvelope {
	var out []stellarsim.ReceivedEnvelope
	for _, e := range r.net.Envelopes() {
		if e.API != "background" {
			out = append(out, e)
		}
	}
	return out
}

// The fee the network names can also be above the cap: the queue is full of bids at 5,000
// stroops while the fee stats show no surge yet. The first envelope (base fee) is refused
// txINSUFFICIENT_FEE naming 5,001 per operation; its refusal proves it dead, and the rebuild is
// not sent: FEE_ABOVE_CAP, with a Retry-After until the named fee lapses. One envelope reached
// the network, and the queue never held it.
func TestCongestionNamedFeeAboveTheCap(t *testing.T) {
	eachPayMode(t, func(t *testing.T, backend string, channels int) {
		r := newPayRig(t, payRigOpts{backend: backend, channels: channels, classicOps: 2, maxFee: 1_000, feePercentile: 90})
		if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 5, PerLedger: 4, FeeMin: 5_000, FeeMax: 5_000}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(1)
		_, err := r.transfer("named-1", 5)
		var u *transfer.UnavailableError
		if !errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap || u.RetryAfter < 5*time.Second || u.RetryAfter > stellar.FeeHintTTL {
			t.Fatalf("err = %v, want FEE_ABOVE_CAP with a Retry-After up to FeeHintTTL", err)
		}
		sent := r.ours()
		if len(sent) != 1 || sent[0].Status != "ERROR" || sent[0].Code != "txINSUFFICIENT_FEE" || sent[0].Accepted {
			t.Fatalf("our envelopes %+v, want the one refusal", sent)
		}
		t.Logf("detail: %s; Retry-After %v", u.Detail, u.RetryAfter)
	})
}

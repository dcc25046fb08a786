package stellar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The shared suite: every backend (Stellar RPC, Horizon) in every mode (the vault as the source;
// channel accounts with fee bumps) against the local network, with the same expectations.

// backendLedger is what the suite drives.
type backendLedger interface {
	transfer.Ledger
	EnsureChannels(ctx context.Context) ([]ChannelAccount, error)
	CheckNetwork(ctx context.Context) error
}

// simClock is the ledger's clock in the suite: Sleep moves time on and closes a ledger.
type simClock struct {
	fakeClock
	net *stellarsim.Network
}

func (c *simClock) Sleep(ctx context.Context, d time.Duration) error {
	c.advance(d)
	c.net.CloseLedger()
	return ctx.Err()
}

type suiteEnv struct {
	backend  string // "rpc", "horizon" or "horizon-prefix" (Horizon under /horizon behind a reverse proxy)
	channels int
	net      *stellarsim.Network
	clock    *simClock
	keys     signing.Keys
	usdc     stellarsim.Asset
	vault    string
	wallet   string
	leases   *sourcestest.Leases
	ledger   backendLedger
}

type suiteOpts struct {
	channels      int
	maxFee        int64
	feePercentile int
	// assets replaces the one USDC asset the ledger is configured with.
	assets []txnbuild.CreditAsset
	// rpcVersion is the stellar-rpc profile the local network answers as ("": current).
	rpcVersion stellarsim.RPCVersion
}

func newSuiteEnv(t *testing.T, backend string, o suiteOpts) *suiteEnv {
	t.Helper()
	clock := &simClock{fakeClock: fakeClock{now: time.Unix(1_750_000_000, 0)}}
	opts := simOptions(clock)
	opts.RPCVersion = o.rpcVersion
	n, err := stellarsim.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	clock.net = n
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	keys.ChannelMaster = signing.NewMasterSeed([]byte("0123456789abcdef0123456789abcdef"))
	issuer := keypair.MustRandom()
	usdc := n.IssueAsset("USDC", issuer)
	wallet := keypair.MustRandom().Address()
	for _, err := range []error{
		n.CreateAccount(keys.Vault.Address(), 100*unit),
		n.AddTrustline(keys.Vault.Address(), usdc, 0),
		n.Mint(keys.Vault.Address(), usdc, 1_000*unit),
		n.CreateAccount(keys.Fee.Address(), 100*unit),
		n.CreateAccount(wallet, 10*unit),
		n.AddTrustline(wallet, usdc, 0),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	closeShown(n, clock.advance)
	e := &suiteEnv{backend: backend, channels: o.channels, net: n, clock: clock, keys: keys, usdc: usdc,
		vault: keys.Vault.Address(), wallet: wallet, leases: &sourcestest.Leases{}}
	var pool *sources.ChannelPool
	if o.channels > 0 {
		if pool, err = sources.NewChannelPool(sources.ChannelPoolConfig{Leases: e.leases, Count: o.channels, Clock: clock}); err != nil {
			t.Fatal(err)
		}
	}
	if o.maxFee == 0 {
		o.maxFee = 10_000
	}
	assets := []txnbuild.CreditAsset{{Code: "USDC", Issuer: issuer.Address()}}
	if o.assets != nil {
		assets = o.assets
		// The vault holds every asset, as much as a trustline can: Prepare checks its balance.
		for _, a := range assets {
			asset := stellarsim.Asset{Code: a.Code, Issuer: a.Issuer}
			if err := n.AddTrustline(e.vault, asset, 0); err != nil {
				t.Fatal(err)
			}
			if err := n.Mint(e.vault, asset, math.MaxInt64); err != nil {
				t.Fatal(err)
			}
		}
	}
	switch backend {
	case "rpc":
		e.ledger, err = NewRPCLedger(RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: e.vault, Assets: assets,
			MaxFeeStroops: o.maxFee, FeePercentile: o.feePercentile, Keys: signing.StaticKeys{K: keys}, Channels: pool, Clock: clock})
	default:
		horizonURL := n.URL()
		if backend == "horizon-prefix" {
			horizonURL = prefixProxy(t, horizonURL, "/horizon")
		}
		e.ledger, err = NewHorizonLedger(HorizonConfig{URL: horizonURL, Passphrase: n.Passphrase(), VaultAccount: e.vault, Assets: assets,
			MaxFeeStroops: o.maxFee, FeePercentile: o.feePercentile, Keys: signing.StaticKeys{K: keys}, Channels: pool, Clock: clock})
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.ledger.CheckNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	if o.channels > 0 {
		accts, err := e.ledger.EnsureChannels(ctx)
		if err != nil || len(accts) != o.channels {
			t.Fatalf("EnsureChannels: %v, %v", accts, err)
		}
	}
	return e
}

// closeLedger closes a ledger and waits (on the clock) until RPC and Horizon show it.
func (e *suiteEnv) closeLedger() stellarsim.LedgerInfo { return closeShown(e.net, e.clock.advance) }

func (e *suiteEnv) prepare(t *testing.T, wallet string, stroops int64) transfer.Envelope {
	t.Helper()
	env, err := e.ledger.Prepare(context.Background(), withdraw(wallet, stroops), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func (e *suiteEnv) send(t *testing.T, env transfer.Envelope, want transfer.SendStatus) transfer.SendResult {
	t.Helper()
	res, err := e.ledger.Send(context.Background(), env)
	if err != nil || res.Status != want {
		t.Fatalf("Send = %+v, %v; want %s", res, err, want)
	}
	return res
}

func (e *suiteEnv) lookup(t *testing.T, env transfer.Envelope) transfer.Lookup {
	t.Helper()
	lk, err := e.ledger.Lookup(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

// forEachBackend runs test for rpc and horizon, each with the vault as the source and with
// channels.
func forEachBackend(t *testing.T, test func(t *testing.T, newEnv func(suiteOpts) *suiteEnv)) {
	for _, backend := range []string{"rpc", "horizon"} {
		for _, channels := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/channels=%d", backend, channels), func(t *testing.T) {
				test(t, func(o suiteOpts) *suiteEnv {
					if o.channels == 0 {
						o.channels = channels
					}
					return newSuiteEnv(t, backend, o)
				})
			})
		}
	}
}

func TestSuiteWithdrawLands(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{feePercentile: 90})
		before, _ := e.net.Balance(e.wallet, e.usdc)
		env := e.prepare(t, e.wallet, 25*unit+5)
		if e.channels == 0 {
			if env.Channel != e.vault || env.OuterHash != "" || env.FeeStroops != 100 {
				t.Errorf("vault envelope %+v", env)
			}
		} else {
			// A channel's transaction, its payment from the vault, in a fee bump paid by the fee account.
			gtx, err := txnbuild.TransactionFromXDR(env.XDR)
			if err != nil {
				t.Fatal(err)
			}
			fb, ok := gtx.FeeBump()
			if !ok || fb.FeeAccount() != e.keys.Fee.Address() || env.OuterHash == "" || env.FeeStroops != 200 {
				t.Fatalf("not a fee bump from the fee account: %+v", env)
			}
			inner := fb.InnerTransaction()
			pay, _ := inner.Operations()[0].(*txnbuild.Payment)
			if inner.SourceAccount().AccountID != env.Channel || env.Channel == e.vault || pay == nil || pay.SourceAccount != e.vault ||
				len(inner.Signatures()) != 2 {
				t.Fatalf("inner transaction: source %s, %+v, %d signatures", inner.SourceAccount().AccountID, pay, len(inner.Signatures()))
			}
			if h, _ := inner.HashHex(e.net.Passphrase()); h != env.InnerHash {
				t.Errorf("InnerHash %s is not the inner transaction's %s", env.InnerHash, h)
			}
		}
		res := e.send(t, env, transfer.SendPending)
		if res.LatestLedger < env.SubmittedLedger || res.LatestLedgerCloseTime.IsZero() {
			t.Errorf("send result %+v", res)
		}
		lk := e.lookup(t, env)
		if lk.Status != transfer.LookupNotFound || lk.LatestLedger < env.SubmittedLedger || lk.OldestLedger == 0 ||
			lk.OldestLedger > env.SubmittedLedger || lk.LatestLedgerCloseTime.IsZero() || transfer.ProvenDead(env, lk) {
			t.Errorf("before close: %+v", lk)
		}
		e.clock.advance(5 * time.Second)
		closed := e.closeLedger()
		lk = e.lookup(t, env)
		wantFee := int64(100)
		if e.channels > 0 {
			wantFee = 200 // the fee bump counts as an operation
		}
		if lk.Status != transfer.LookupSuccess || lk.Hash != env.InnerHash || lk.Ledger != closed.Sequence ||
			lk.FeeChargedStroops != wantFee || lk.ResultCodes != nil {
			t.Errorf("after close: %+v (closed %d)", lk, closed.Sequence)
		}
		if env.OuterHash != "" {
			// Either hash finds it.
			byOuter := e.lookup(t, transfer.Envelope{InnerHash: env.OuterHash})
			if byOuter.Status != transfer.LookupSuccess || byOuter.Ledger != closed.Sequence {
				t.Errorf("by the outer hash: %+v", byOuter)
			}
		}
		if after, _ := e.net.Balance(e.wallet, e.usdc); after-before != 25*unit+5 {
			t.Errorf("wallet received %d stroops", after-before)
		}
		// A re-send of the included envelope is refused, and proves nothing.
		res = e.send(t, env, transfer.SendTryAgainLater)
		if transfer.RefusedBeforeInclusion(res, true) {
			t.Error("a refused re-send counted as proof")
		}
		e.ledger.Done(context.Background(), env)
		if e.leases.Leased() != 0 {
			t.Errorf("%d channels still leased after Done", e.leases.Leased())
		}
	})
}

func TestSuiteFailedPayment(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{})
		// Prepare checks the vault's balance; the vault is drained between that check and the
		// ledger that applies the payment.
		env := e.prepare(t, e.wallet, 5*unit)
		if err := e.net.Burn(e.vault, e.usdc, 998*unit); err != nil {
			t.Fatal(err)
		}
		e.send(t, env, transfer.SendPending)
		e.closeLedger()
		lk := e.lookup(t, env)
		if lk.Status != transfer.LookupFailed || !slices.Equal(lk.ResultCodes, []string{"tx_failed", "op_underfunded"}) ||
			lk.FeeChargedStroops <= 0 || lk.Hash != env.InnerHash {
			t.Errorf("underfunded: %+v", lk)
		}
	})
}

func TestSuiteStaleSequence(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{channels: 1})
		ctx := context.Background()
		stale := e.prepare(t, e.wallet, unit)
		e.ledger.Done(ctx, stale) // released unsent (as after a proven refusal): same sequence number next
		fresh := e.prepare(t, e.wallet, 2*unit)
		if fresh.Channel != stale.Channel {
			t.Fatalf("channels %s and %s", stale.Channel, fresh.Channel)
		}
		e.send(t, fresh, transfer.SendPending)
		e.closeLedger()
		res := e.send(t, stale, transfer.SendError)
		if res.Code != "txBAD_SEQ" || !transfer.RefusedBeforeInclusion(res, false) {
			t.Errorf("stale sequence: %+v", res)
		}
		e.ledger.Done(ctx, fresh)
		// Built again, the sequence number is read from the network and it lands.
		again := e.prepare(t, e.wallet, unit)
		e.send(t, again, transfer.SendPending)
		e.closeLedger()
		if lk := e.lookup(t, again); lk.Status != transfer.LookupSuccess {
			t.Errorf("rebuilt: %+v", lk)
		}
	})
}

// TestSuiteAnswers: the network's refusals and Horizon's recoverable and unrecoverable HTTP
// answers, mapped per internal/transfer/doc.go, "Classification".
func TestSuiteAnswers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) { suiteAnswers(t, newEnv(suiteOpts{})) })
}

// TestHorizonAnswersBehindPathPrefix: with HORIZON_URL=http://127.0.0.1:port/horizon (a reverse
// proxy in front of the local network's Horizon), every answer to POST /transactions_async is
// read as at the root: horizonclient recognised 503 TRY_AGAIN_LATER and 400 ERROR only when the
// path was exactly /transactions_async.
func TestHorizonAnswersBehindPathPrefix(t *testing.T) {
	for _, channels := range []int{0, 2} {
		t.Run(fmt.Sprintf("channels=%d", channels), func(t *testing.T) {
			suiteAnswers(t, newSuiteEnv(t, "horizon-prefix", suiteOpts{channels: channels}))
		})
	}
}

func suiteAnswers(t *testing.T, e *suiteEnv) {
	ctx := context.Background()
	env := e.prepare(t, e.wallet, unit)
	for _, code := range []string{"txINSUFFICIENT_FEE", "txTOO_LATE", "txBAD_SEQ", "txINSUFFICIENT_BALANCE"} {
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "ERROR", Code: code})
		if res := e.send(t, env, transfer.SendError); res.Code != code || !transfer.RefusedBeforeInclusion(res, false) {
			t.Errorf("%s: %+v", code, res)
		}
	}
	e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER"})
	if res := e.send(t, env, transfer.SendTryAgainLater); !transfer.RefusedBeforeInclusion(res, false) || res.LatestLedger == 0 {
		t.Errorf("TRY_AGAIN_LATER: %+v", res)
	}
	unexpected := []int{504, 500}
	if strings.HasPrefix(e.backend, "horizon") {
		// 429: Horizon refused before the network saw it.
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: 429, API: "horizon"})
		if res := e.send(t, env, transfer.SendTryAgainLater); !transfer.RefusedBeforeInclusion(res, false) {
			t.Errorf("429: %+v", res)
		}
		// A 503 problem (not the endpoint's TRY_AGAIN_LATER body) says nothing about the envelope.
		unexpected = append(unexpected, 503)
	}
	// 504 and 500: the envelope may have reached the network: a plain error (re-send it).
	for _, status := range unexpected {
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: status})
		if _, err := e.ledger.Send(ctx, env); err == nil || errors.Is(err, transfer.ErrNotSent) {
			t.Errorf("HTTP %d: %v, want a plain error", status, err)
		}
	}
	// Refused every time: sent once more, it is accepted and lands.
	e.send(t, env, transfer.SendPending)
	e.send(t, env, transfer.SendDuplicate)
	e.closeLedger()
	if lk := e.lookup(t, env); lk.Status != transfer.LookupSuccess {
		t.Errorf("after refusals: %+v", lk)
	}
}

// prefixProxy serves target's API under prefix on 127.0.0.1 (as a gateway mounting Horizon at
// https://gw.example/horizon does) and returns the prefixed URL.
func prefixProxy(t *testing.T, target, prefix string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(to)
		r.Out.URL.Path = strings.TrimPrefix(r.In.URL.Path, prefix)
		r.Out.URL.RawPath = ""
	}})
	t.Cleanup(srv.Close)
	return srv.URL + prefix
}

func TestSuiteTransport(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{})
		ctx := context.Background()
		env := e.prepare(t, e.wallet, unit)
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
		if _, err := e.ledger.Send(ctx, env); err == nil || errors.Is(err, transfer.ErrNotSent) {
			t.Errorf("dropped response: %v, want a plain error", err)
		}
		e.closeLedger()
		if lk := e.lookup(t, env); lk.Status != transfer.LookupSuccess {
			t.Errorf("the dropped-response envelope did not land: %+v", lk)
		}
		// A deadline is kept even though horizonclient takes no context.
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelay, Delay: 10 * time.Second})
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := e.ledger.Send(short, env); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("delayed answer: %v, want the deadline", err)
		}
		if err := e.net.Close(); err != nil {
			t.Fatal(err)
		}
		// The server closed its side of the kept-alive connections; until the client's transport
		// notices, a request on one ends in EOF after the write, rightly judged as possibly
		// delivered. A refused connection is what this checks, so start from no idle connection.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if _, err := e.ledger.Send(ctx, env); !errors.Is(err, transfer.ErrNotSent) {
			t.Errorf("refused connection: %v, want ErrNotSent", err)
		}
	})
}

func TestSuiteProvenDead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{})
		env := e.prepare(t, e.wallet, unit)
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
		e.send(t, env, transfer.SendPending)
		e.closeLedger()
		if lk := e.lookup(t, env); lk.Status != transfer.LookupNotFound || transfer.ProvenDead(env, lk) {
			t.Errorf("before maxTime: %+v", lk)
		}
		e.clock.advance(2 * time.Minute)
		e.closeLedger()
		if lk := e.lookup(t, env); lk.Status != transfer.LookupNotFound || !transfer.ProvenDead(env, lk) {
			t.Errorf("after maxTime: %+v (maxTime %d)", lk, env.MaxTime)
		}
	})
}

// TestSuiteQuarantine: a channel whose envelope is in doubt (never Done) is not leased again until
// a ledger has closed after the envelope's maxTime; a released one is reused at once.
func TestSuiteQuarantine(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			e := newSuiteEnv(t, backend, suiteOpts{channels: 1})
			ctx := context.Background()
			inDoubt := e.prepare(t, e.wallet, unit)
			e.send(t, inDoubt, transfer.SendPending)
			// No Done: the envelope is in doubt. Later Prepares wait (closing ledgers) and give up.
			_, err := e.ledger.Prepare(ctx, withdraw(e.wallet, unit), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
			var ue *transfer.UnavailableError
			if !errors.As(err, &ue) || ue.Code != transfer.CodeChannelsBusy {
				t.Fatalf("second Prepare while in doubt: %v", err)
			}
			// The in-doubt envelope landed meanwhile, but nobody said Done: still quarantined until a
			// ledger closes after its maxTime (and skipped by this process for heldMargin more,
			// which a one-ledger wait no longer covers).
			e.clock.advance(time.Unix(inDoubt.MaxTime, 0).Sub(e.clock.Now()) + heldMargin + time.Second)
			e.closeLedger()
			next := e.prepare(t, e.wallet, unit)
			if next.Channel != inDoubt.Channel {
				t.Fatalf("channel %s, want %s", next.Channel, inDoubt.Channel)
			}
			e.send(t, next, transfer.SendPending)
			e.closeLedger()
			if lk := e.lookup(t, next); lk.Status != transfer.LookupSuccess {
				t.Errorf("after the quarantine: %+v", lk)
			}
		})
	}
}

func TestSuiteFees(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		// The cap is below what the envelope needs at the base fee: refused before anything is sent.
		e := newEnv(suiteOpts{maxFee: 150, feePercentile: 99})
		_, err := e.ledger.Prepare(context.Background(), withdraw(e.wallet, unit), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
		if e.channels == 0 && err != nil {
			t.Errorf("vault mode within the cap: %v", err)
		}
		if e.channels > 0 && err == nil {
			t.Error("a fee bump needing 200 stroops passed a 150 stroop cap")
		}
		if e.leases.Leased() != 0 {
			t.Error("a failed Prepare kept its channel")
		}
	})
}

// TestSuiteInsufficientFeeRaisesTheFee: after the network refuses an envelope as paying too
// little without naming the fee it needs, the rebuild offers twice the fee (MAX_FEE_STROOPS still
// caps it), and the raise wears off after FeeHintTTL.
func TestSuiteInsufficientFeeRaisesTheFee(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{})
		ctx := context.Background()
		first := e.prepare(t, e.wallet, unit)
		e.ledger.Done(ctx, first)
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "ERROR", Code: "txINSUFFICIENT_FEE"})
		e.send(t, first, transfer.SendError)
		rebuilt := e.prepare(t, e.wallet, unit)
		if rebuilt.FeeStroops != 2*first.FeeStroops {
			t.Errorf("rebuilt fee %d stroops, want twice %d", rebuilt.FeeStroops, first.FeeStroops)
		}
		e.ledger.Done(ctx, rebuilt)
		e.clock.advance(FeeHintTTL + time.Second)
		if later := e.prepare(t, e.wallet, unit); later.FeeStroops != first.FeeStroops {
			t.Errorf("fee %d stroops a while later, want %d again", later.FeeStroops, first.FeeStroops)
		}
	})
}

func TestEnsureChannelsCreatesSponsoredChannels(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			e := newSuiteEnv(t, backend, suiteOpts{channels: 35}) // two creation transactions
			chans, err := sources.DeriveChannelKeys(e.keys.ChannelMaster, 35)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chans {
				if b, err := e.net.Balance(c.Address(), stellarsim.Native); err != nil || b != 0 {
					t.Fatalf("channel %s: %d XLM, %v", c.Address(), b, err)
				}
			}
			// Already there: nothing created.
			accts, err := e.ledger.EnsureChannels(context.Background())
			if err != nil || len(accts) != 35 || slices.ContainsFunc(accts, func(a ChannelAccount) bool { return a.Created }) {
				t.Fatalf("second EnsureChannels: %+v, %v", accts, err)
			}
		})
	}
}

package stellar

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

const unit = transfer.StroopsPerUnit

// simEnv is a local network with a vault holding 1,000 USDC and a funded wallet trusting USDC.
type simEnv struct {
	net    *stellarsim.Network
	clock  *fakeClock
	usdc   stellarsim.Asset
	vault  string
	wallet string
	ledger *RPCLedger
}

func startSim(t *testing.T) *simEnv {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_750_000_000, 0)}
	n, err := stellarsim.Start(simOptions(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })

	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	vault := keys.Vault.Address()
	issuer := keypair.MustRandom()
	usdc := n.IssueAsset("USDC", issuer)
	wallet := keypair.MustRandom().Address()
	for _, step := range []error{
		n.CreateAccount(vault, 100*unit),
		n.AddTrustline(vault, usdc, 0),
		n.Mint(vault, usdc, 1_000*unit),
		n.CreateAccount(wallet, 10*unit),
		n.AddTrustline(wallet, usdc, 0),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	closeShown(n, clock.advance)

	// The keys travel the same path as in AWS: a secret document read by SecretKeys.
	doc, err := keys.MarshalSecret()
	if err != nil {
		t.Fatal(err)
	}
	secrets := signing.NewLocalSecrets()
	secrets.Put("local/signing", doc)
	src, err := signing.NewSecretKeys(signing.SecretKeysConfig{Client: secrets, SecretID: "local/signing", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewRPCLedger(RPCConfig{
		URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: vault,
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: issuer.Address()}},
		Keys:   src, MaxFeeStroops: 1_000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckNetwork(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &simEnv{net: n, clock: clock, usdc: usdc, vault: vault, wallet: wallet, ledger: l}
}

// closeLedger closes a ledger and waits (on the clock) until RPC shows it.
func (s *simEnv) closeLedger() stellarsim.LedgerInfo { return closeShown(s.net, s.clock.advance) }

func (s *simEnv) balance(t *testing.T, account string) int64 {
	t.Helper()
	b, err := s.net.Balance(account, s.usdc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (s *simEnv) prepare(t *testing.T, wallet string, stroops int64) transfer.Envelope {
	t.Helper()
	env, err := s.ledger.Prepare(context.Background(), withdraw(wallet, stroops), transfer.Terms{MaxTime: s.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func (s *simEnv) send(t *testing.T, env transfer.Envelope, want transfer.SendStatus) transfer.SendResult {
	t.Helper()
	res, err := s.ledger.Send(context.Background(), env)
	if err != nil || res.Status != want {
		t.Fatalf("Send = %+v, %v; want %s", res, err, want)
	}
	return res
}

func (s *simEnv) lookup(t *testing.T, env transfer.Envelope) transfer.Lookup {
	t.Helper()
	lk, err := s.ledger.Lookup(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return lk
}

func TestSimWithdrawLands(t *testing.T) {
	s := startSim(t)
	before := s.balance(t, s.wallet)
	env := s.prepare(t, s.wallet, 25*unit+5)
	if env.Channel != s.vault || env.SubmittedLedger != s.net.LatestLedger().Sequence {
		t.Errorf("envelope %+v", env)
	}
	res := s.send(t, env, transfer.SendPending)
	if res.LatestLedger < env.SubmittedLedger || res.LatestLedgerCloseTime.IsZero() {
		t.Errorf("send result %+v", res)
	}

	// Queued, not yet in a ledger: NOT_FOUND, with the history it searched.
	lk := s.lookup(t, env)
	if lk.Status != transfer.LookupNotFound || lk.LatestLedger < env.SubmittedLedger || lk.OldestLedger == 0 ||
		lk.OldestLedger > env.SubmittedLedger || lk.LatestLedgerCloseTime.IsZero() {
		t.Errorf("before close: %+v", lk)
	}
	if transfer.ProvenDead(env, lk) {
		t.Error("a queued envelope whose maxTime has not passed is proven dead")
	}

	s.clock.advance(5 * time.Second)
	closed := s.closeLedger()
	lk = s.lookup(t, env)
	if lk.Status != transfer.LookupSuccess || lk.Hash != env.InnerHash || lk.Ledger != closed.Sequence ||
		lk.FeeChargedStroops != 100 || lk.ResultCodes != nil || lk.LatestLedger != closed.Sequence {
		t.Errorf("after close: %+v (closed %d)", lk, closed.Sequence)
	}
	if got := s.balance(t, s.wallet) - before; got != 25*unit+5 {
		t.Errorf("wallet received %d stroops", got)
	}
	if applied := s.net.Applied(); len(applied) != 1 || applied[0].Hash != env.InnerHash {
		t.Errorf("applied %+v", applied)
	}

	// Re-sending the included envelope: refused, and (being a re-send) proves nothing.
	res = s.send(t, env, transfer.SendTryAgainLater)
	if transfer.RefusedBeforeInclusion(res, true) {
		t.Error("a refused re-send counted as proof")
	}
	s.closeLedger()
	if applied := s.net.Applied(); len(applied) != 1 {
		t.Errorf("the re-send landed again: %d applied", len(applied))
	}
}

func TestSimFailedPayments(t *testing.T) {
	s := startSim(t)

	// More than the vault holds when the ledger applies it (Prepare refuses more than it holds
	// when it checks; the vault is drained after): included, fee charged, op_underfunded.
	env := s.prepare(t, s.wallet, 5*unit)
	if err := s.net.Burn(s.vault, s.usdc, 998*unit); err != nil {
		t.Fatal(err)
	}
	s.send(t, env, transfer.SendPending)
	s.closeLedger()
	lk := s.lookup(t, env)
	if lk.Status != transfer.LookupFailed || !slices.Equal(lk.ResultCodes, []string{"tx_failed", "op_underfunded"}) ||
		lk.FeeChargedStroops <= 0 || lk.Hash != env.InnerHash || lk.Ledger == 0 {
		t.Errorf("underfunded: %+v", lk)
	}

	// A wallet without a trustline: op_no_trust.
	bare := keypair.MustRandom().Address()
	if err := s.net.CreateAccount(bare, 10*unit); err != nil {
		t.Fatal(err)
	}
	env = s.prepare(t, bare, unit)
	s.send(t, env, transfer.SendPending)
	s.closeLedger()
	lk = s.lookup(t, env)
	if lk.Status != transfer.LookupFailed || !slices.Equal(lk.ResultCodes, []string{"tx_failed", "op_no_trust"}) || lk.FeeChargedStroops <= 0 {
		t.Errorf("no trust: %+v", lk)
	}
}

func TestSimStaleSequence(t *testing.T) {
	s := startSim(t)
	first := s.prepare(t, s.wallet, unit)
	second := s.prepare(t, s.wallet, 2*unit) // same sequence number: the first has not landed
	s.send(t, first, transfer.SendPending)
	s.closeLedger()
	res := s.send(t, second, transfer.SendError)
	if res.Code != "txBAD_SEQ" || !transfer.RefusedBeforeInclusion(res, false) {
		t.Errorf("stale sequence: %+v", res)
	}
	// Prepared again, it takes the next sequence number and lands.
	third := s.prepare(t, s.wallet, 2*unit)
	s.send(t, third, transfer.SendPending)
	s.closeLedger()
	if lk := s.lookup(t, third); lk.Status != transfer.LookupSuccess {
		t.Errorf("rebuilt: %+v", lk)
	}
}

func TestSimRefusedAnswers(t *testing.T) {
	s := startSim(t)
	env := s.prepare(t, s.wallet, unit)
	s.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "ERROR", Code: "txINSUFFICIENT_FEE", API: "rpc"})
	if res := s.send(t, env, transfer.SendError); res.Code != "txINSUFFICIENT_FEE" {
		t.Errorf("insufficient fee: %+v", res)
	}
	s.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER", API: "rpc"})
	s.send(t, env, transfer.SendTryAgainLater)
	// The envelope was refused both times; sent once more it is accepted and lands.
	s.send(t, env, transfer.SendPending)
	s.closeLedger()
	if lk := s.lookup(t, env); lk.Status != transfer.LookupSuccess {
		t.Errorf("after refusals: %+v", lk)
	}
}

func TestSimTransport(t *testing.T) {
	ctx := context.Background()

	// The answer is dropped after the envelope was accepted: not ErrNotSent, and it lands.
	s := startSim(t)
	env := s.prepare(t, s.wallet, unit)
	s.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropResponse, API: "rpc"})
	if _, err := s.ledger.Send(ctx, env); err == nil || errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("dropped response: %v, want a plain error", err)
	}
	s.closeLedger()
	if lk := s.lookup(t, env); lk.Status != transfer.LookupSuccess {
		t.Errorf("the dropped-response envelope did not land: %+v", lk)
	}

	// The connection is closed without an answer after the request was read: the client cannot
	// tell this from a dropped answer, so it is not ErrNotSent either.
	env = s.prepare(t, s.wallet, unit)
	s.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRefuse, API: "rpc"})
	if _, err := s.ledger.Send(ctx, env); err == nil || errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("closed without answer: %v, want a plain error", err)
	}

	// The network is down: connecting is refused, nothing was written.
	if err := s.net.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ledger.Send(ctx, env); !errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("refused connection: %v, want ErrNotSent", err)
	}
	var pe transfer.ProblemError
	if _, err := s.ledger.Prepare(ctx, withdraw(s.wallet, unit), transfer.Terms{MaxTime: s.clock.Now().Add(time.Minute)}); err == nil || errors.As(err, &pe) {
		t.Errorf("prepare with the network down: %v, want a plain error", err)
	}
}

func TestSimProvenDead(t *testing.T) {
	s := startSim(t)
	env := s.prepare(t, s.wallet, unit)
	// Accepted, then evicted from the queue: it never lands.
	s.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope, API: "rpc"})
	s.send(t, env, transfer.SendPending)
	s.closeLedger()
	if lk := s.lookup(t, env); lk.Status != transfer.LookupNotFound || transfer.ProvenDead(env, lk) {
		t.Errorf("before maxTime: %+v", lk)
	}
	// A ledger closing after maxTime, with history back to the submission: proven dead.
	s.clock.advance(2 * time.Minute)
	s.closeLedger()
	lk := s.lookup(t, env)
	if lk.Status != transfer.LookupNotFound || !transfer.ProvenDead(env, lk) {
		t.Errorf("after maxTime: %+v (maxTime %d)", lk, env.MaxTime)
	}
}

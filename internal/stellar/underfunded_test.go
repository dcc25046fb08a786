package stellar_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// fundsRig is the local network (a ledger closing every 5 s of a virtual clock), the real store
// on an embedded DynamoDB (its channel leases included) and an orchestrator over an RPC or
// Horizon ledger, with channels channel accounts (0: the vault is the source).
type fundsRig struct {
	n       *stellarsim.Network
	clock   *vclock.Clock
	keys    signing.Keys
	usdc    stellarsim.Asset
	vault   string
	store   transfer.Store
	orch    *transfer.Orchestrator
	ledger  transfer.Ledger
	maxFee  int64
	balance func(account string) int64
	// environment builds another Lambda environment's ledger: its own channel pool (and this
	// process's book of fees) over the same lease store and network.
	environment func() transfer.Ledger
}

func newFundsRig(t *testing.T, backend string, channels int, vaultUSDC int64) *fundsRig {
	t.Helper()
	clock, n := startSimNet(t, simNetOpts{})
	a := fundedKeys(t, n, fundOpts{vaultTrustline: true, vaultUSDC: vaultUSDC, fee: true})
	keys, usdc, vault := a.keys, a.usdc, a.vault
	db, _ := dynamotest.Minidyn(t)
	store := dynamotest.NewStore(t, db)
	const maxFee = 1_000_000
	assets := []txnbuild.CreditAsset{{Code: usdc.Code, Issuer: usdc.Issuer}}
	newLedger := func() shortfallLedger {
		t.Helper()
		var err error
		var pool *sources.ChannelPool
		if channels > 0 {
			if pool, err = sources.NewChannelPool(sources.ChannelPoolConfig{Leases: dynamo.NewChannelLeases(db, store.Table()), Count: channels, Clock: clock}); err != nil {
				t.Fatal(err)
			}
		}
		var ledger shortfallLedger
		if backend == "rpc" {
			ledger, err = stellar.NewRPCLedger(stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: vault,
				Assets: assets, Keys: signing.StaticKeys{K: keys}, MaxFeeStroops: maxFee, Channels: pool, Clock: clock})
		} else {
			ledger, err = stellar.NewHorizonLedger(stellar.HorizonConfig{URL: n.URL(), Passphrase: n.Passphrase(), VaultAccount: vault,
				Assets: assets, Keys: signing.StaticKeys{K: keys}, MaxFeeStroops: maxFee, Channels: pool, Clock: clock})
		}
		if err != nil {
			t.Fatal(err)
		}
		return ledger
	}
	ledger := newLedger()
	if channels > 0 {
		if _, err := ledger.EnsureChannels(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r := &fundsRig{n: n, clock: clock, keys: keys, usdc: usdc, vault: vault, store: store, ledger: ledger, maxFee: maxFee,
		environment: func() transfer.Ledger { return newLedger() }}
	r.orch = &transfer.Orchestrator{Store: store, Ledger: ledger, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
	r.balance = func(account string) int64 {
		a, ok := n.Account(account)
		if !ok {
			t.Fatalf("account %s missing", account)
		}
		return a.Balance
	}
	return r
}

// wallet creates a funded wallet trusting USDC.
func (r *fundsRig) wallet(t *testing.T) string {
	t.Helper()
	w := keypair.MustRandom().Address()
	if err := r.n.CreateAccount(w, 10*unit); err != nil {
		t.Fatal(err)
	}
	if err := r.n.AddTrustline(w, r.usdc, 0); err != nil {
		t.Fatal(err)
	}
	return w
}

func payout(key, wallet string, units int64) transfer.Input {
	return transfer.Input{ClientKey: key, Request: transfer.Request{OperationType: transfer.Withdraw,
		WalletAddress: wallet, Amount: fmt.Sprint(units), Asset: "USDC", Stroops: units * unit}}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != code || u.Problem().Kind != transfer.KindUnavailable || u.RetryAfter <= 0 {
		t.Fatalf("%v, want 503 %s with a Retry-After", err, code)
	}
}

// A classic vault that lacks the asset (an empty trustline, none at all, or too little) is
// refused before anything is sent, as the vault contract's simulation refuses in contract mode:
// 503 VAULT_UNDERFUNDED, the key released, no envelope received by the network, no fee charged
// to the vault or the fee account, nothing on the ledger. Once an operator funds the vault, a
// retry with the same key pays exactly once. Both backends, with and without channel accounts.
func TestClassicEmptyVaultRefusedBeforeSendingThenPaysOnce(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		for _, channels := range []int{0, 2} {
			for _, state := range []string{"empty", "no-trustline", "short"} {
				t.Run(fmt.Sprintf("%s/channels=%d/%s", backend, channels, state), func(t *testing.T) {
					r := newFundsRig(t, backend, channels, 0)
					switch state {
					case "no-trustline":
						if err := r.n.RemoveTrustline(r.vault, r.usdc); err != nil {
							t.Fatal(err)
						}
					case "short":
						if err := r.n.Mint(r.vault, r.usdc, 5*unit-1); err != nil {
							t.Fatal(err)
						}
					}
					wallet := r.wallet(t)
					in := payout("payout-0001", wallet, 5)
					ctx := context.Background()
					envelopes, applied := len(r.n.Envelopes()), len(r.n.Applied())
					vaultXLM, feeXLM := r.balance(r.vault), r.balance(r.keys.Fee.Address())

					_, err := r.orch.Transfer(ctx, in)
					wantCode(t, err, transfer.CodeVaultUnderfunded)
					r.clock.Advance(10 * time.Second) // ledgers close: anything sent would land now
					if _, err := r.store.Get(ctx, transfer.StoreKey(wallet, in.ClientKey)); !errors.Is(err, transfer.ErrNotFound) {
						t.Fatalf("the key is still held (%v): want it released", err)
					}
					if got := r.n.Envelopes()[envelopes:]; len(got) != 0 {
						t.Fatalf("the network received %+v: want nothing sent", got)
					}
					if got := r.n.Applied()[applied:]; len(got) != 0 {
						t.Fatalf("the ledger holds %+v: want no transaction", got)
					}
					if v, f := r.balance(r.vault), r.balance(r.keys.Fee.Address()); v != vaultXLM || f != feeXLM {
						t.Fatalf("XLM vault %d -> %d, fee account %d -> %d: want no fee charged", vaultXLM, v, feeXLM, f)
					}

					if state == "no-trustline" { // an operator gives the vault its trustline ...
						if err := r.n.AddTrustline(r.vault, r.usdc, 0); err != nil {
							t.Fatal(err)
						}
					}
					if err := r.n.Mint(r.vault, r.usdc, 10*unit); err != nil { // ... and funds it
						t.Fatal(err)
					}
					before, _ := r.n.Balance(wallet, r.usdc)
					out, err := r.orch.Transfer(ctx, in)
					if err != nil || out.Replayed {
						t.Fatalf("retry after funding: %+v %v", out, err)
					}
					again, err := r.orch.Transfer(ctx, in)
					if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash {
						t.Fatalf("second retry: %+v %v, want the payment replayed", again, err)
					}
					if got, _ := r.n.Balance(wallet, r.usdc); got != before+5*unit {
						t.Fatalf("wallet %d -> %d, want exactly one payment of 5", before, got)
					}
					if got := r.n.Applied()[applied:]; len(got) != 1 || got[0].Status != "SUCCESS" {
						t.Fatalf("applied %+v, want one SUCCESS", got)
					}
				})
			}
		}
	}
}

// The check passes and the vault is drained before the ledger applies the payment (an operator
// moved the funds, another payer emptied it): the payment is included FAILED op_underfunded, fee
// charged, and the answer is still 503 VAULT_UNDERFUNDED with the key released; the retry after
// funding pays once. The FAILED inclusion stays the backstop of the check before sending.
func TestVaultDrainedAfterTheCheckStillFailsAsUnderfunded(t *testing.T) {
	for _, channels := range []int{0, 2} {
		t.Run(fmt.Sprintf("channels=%d", channels), func(t *testing.T) {
			r := newFundsRig(t, "rpc", channels, 5*unit)
			wallet := r.wallet(t)
			in := payout("payout-0001", wallet, 5)
			ctx := context.Background()
			applied := len(r.n.Applied())
			drained := false
			r.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
				if s == transfer.StepPrepared && !drained {
					drained = true
					if err := r.n.Burn(r.vault, r.usdc, 5*unit); err != nil {
						t.Errorf("drain: %v", err)
					}
				}
				return nil
			}
			_, err := r.orch.Transfer(ctx, in)
			wantCode(t, err, transfer.CodeVaultUnderfunded)
			if _, err := r.store.Get(ctx, transfer.StoreKey(wallet, in.ClientKey)); !errors.Is(err, transfer.ErrNotFound) {
				t.Fatalf("the key is still held (%v): want it released", err)
			}
			txs := r.n.Applied()[applied:]
			if len(txs) != 1 || txs[0].Status != "FAILED" || len(txs[0].OpResults) != 1 || txs[0].OpResults[0] != "op_underfunded" || txs[0].FeeCharged <= 0 {
				t.Fatalf("applied %+v, want one payment included FAILED op_underfunded", txs)
			}
			if err := r.n.Mint(r.vault, r.usdc, 10*unit); err != nil {
				t.Fatal(err)
			}
			out, err := r.orch.Transfer(ctx, in)
			if err != nil || out.Replayed {
				t.Fatalf("retry after funding: %+v %v", out, err)
			}
			paid := 0
			for _, tx := range r.n.Applied()[applied:] {
				if tx.Status == "SUCCESS" {
					paid++
				}
			}
			if got, _ := r.n.Balance(wallet, r.usdc); paid != 1 || got != 5*unit {
				t.Fatalf("%d payments landed, wallet holds %d: want exactly one of 5", paid, got)
			}
		})
	}
}

// A fee account that can pay one envelope's fee but not two: while the first transfer's fee bump
// is queued (sent, not yet in a ledger), a second transfer on the other channel is refused before
// anything is sent, 503 FEE_ACCOUNT_UNDERFUNDED with its key released: the fee account's
// available balance cannot cover its fee on top of the first one's (stellar-core would refuse it
// txINSUFFICIENT_BALANCE; the service does not ask). The first lands; once the fee account is
// funded the second pays once. Both backends.
func TestFeeAccountCoversOneQueuedEnvelopeNotTwo(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newFundsRig(t, backend, 2, 100*unit)
			fee := r.keys.Fee.Address()
			// Leave the fee account 300 stroops above its reserve: one fee bump of one payment
			// bids 2 x 100 stroops (base fee, two operation slots).
			acct, _ := r.n.Account(fee)
			reserve := int64(2+acct.NumSubEntries+acct.NumSponsoring-acct.NumSponsored) * stellar.DefaultBaseReserveStroops
			if err := r.n.Burn(fee, stellarsim.Native, acct.Balance-reserve-300); err != nil {
				t.Fatal(err)
			}
			w1, w2 := r.wallet(t), r.wallet(t)
			first, second := payout("payout-0001", w1, 5), payout("payout-0002", w2, 5)
			ctx := context.Background()
			envelopes := len(r.n.Envelopes())
			var secondErr error
			asked := false
			r.orch.Hooks = func(_ context.Context, s transfer.Step, rec transfer.Record) error {
				if s == transfer.StepSent && !asked && rec.Envelope != nil && rec.ClientKey == first.ClientKey {
					asked = true
					// The first envelope is in the network's queue; no ledger has closed since.
					_, secondErr = r.orch.Transfer(ctx, second)
				}
				return nil
			}
			out, err := r.orch.Transfer(ctx, first)
			if err != nil {
				t.Fatalf("first transfer: %v", err)
			}
			if !asked {
				t.Fatal("the second transfer never ran")
			}
			wantCode(t, secondErr, transfer.CodeFeeAccountUnderfunded)
			if _, err := r.store.Get(ctx, transfer.StoreKey(w2, second.ClientKey)); !errors.Is(err, transfer.ErrNotFound) {
				t.Fatalf("the second key is still held (%v): want it released", err)
			}
			sent := r.n.Envelopes()[envelopes:]
			for _, e := range sent {
				if e.InnerHash != out.TransactionHash && e.Hash != out.TransactionHash {
					t.Fatalf("the network received %+v besides the first transfer's envelope", e)
				}
			}
			if got, _ := r.n.Balance(w2, r.usdc); got != 0 {
				t.Fatalf("second wallet holds %d", got)
			}

			if err := r.n.Mint(fee, stellarsim.Native, 10*unit); err != nil { // an operator funds it
				t.Fatal(err)
			}
			r.orch.Hooks = nil
			if out2, err := r.orch.Transfer(ctx, second); err != nil || out2.Replayed {
				t.Fatalf("second transfer after funding: %+v %v", out2, err)
			}
			for _, w := range []string{w1, w2} {
				if got, _ := r.n.Balance(w, r.usdc); got != 5*unit {
					t.Fatalf("wallet %s holds %d, want one payment of 5", w, got)
				}
			}
		})
	}
}

// An asynchronous transfer from an empty classic vault: every run of the submitter is refused
// before sending (DeliveryRetry, VAULT_UNDERFUNDED, the item queued again under its incarnation),
// so the queue retrying it burns no fee and sends nothing; after funding, the next run pays once.
func TestAsyncEmptyVaultBurnsNoFees(t *testing.T) {
	for _, channels := range []int{0, 2} {
		t.Run(fmt.Sprintf("channels=%d", channels), func(t *testing.T) {
			r := newFundsRig(t, "rpc", channels, 0)
			wallet := r.wallet(t)
			in := payout("payout-async-1", wallet, 5)
			ctx := context.Background()
			q := &queueRecorder{}
			r.orch.Queue = q
			if res, err := r.orch.Enqueue(ctx, in); err != nil || !res.Accepted {
				t.Fatalf("enqueue: %+v %v", res, err)
			}
			envelopes := len(r.n.Envelopes())
			vaultXLM, feeXLM := r.balance(r.vault), r.balance(r.keys.Fee.Address())
			for run := range 3 {
				d, err := r.orch.RunQueued(ctx, q.sent[0])
				if d != transfer.DeliveryRetry {
					t.Fatalf("run %d: delivery %s (%v), want retry", run, d, err)
				}
				wantCode(t, err, transfer.CodeVaultUnderfunded)
				rec, gerr := r.store.Get(ctx, transfer.StoreKey(wallet, in.ClientKey))
				if gerr != nil || rec.Status != transfer.StatusQueued || rec.Envelope != nil {
					t.Fatalf("run %d: item %+v %v, want it queued again with no envelope", run, rec, gerr)
				}
				r.clock.Advance(time.Minute) // the message's Retry-After
			}
			if got := r.n.Envelopes()[envelopes:]; len(got) != 0 {
				t.Fatalf("the network received %d envelopes, want none", len(got))
			}
			if v, f := r.balance(r.vault), r.balance(r.keys.Fee.Address()); v != vaultXLM || f != feeXLM {
				t.Fatalf("XLM vault %d -> %d, fee account %d -> %d: want no fee charged", vaultXLM, v, feeXLM, f)
			}
			if err := r.n.Mint(r.vault, r.usdc, 5*unit); err != nil {
				t.Fatal(err)
			}
			if d, err := r.orch.RunQueued(ctx, q.sent[0]); d != transfer.DeliveryDone || err != nil {
				t.Fatalf("run after funding: %s %v", d, err)
			}
			if got, _ := r.n.Balance(wallet, r.usdc); got != 5*unit {
				t.Fatalf("wallet holds %d, want one payment of 5", got)
			}
		})
	}
}

// Two Lambda environments (each its own channel pool and book of fees, one lease store) send at
// the same virtual instant while the fee account can pay one fee bump only: at most one envelope
// reaches the network, the network never has to refuse one txINSUFFICIENT_BALANCE, and every
// transfer not sent is 503 FEE_ACCOUNT_UNDERFUNDED with its key free. Each environment writes its
// lease before it reads the other's, so they cannot both miss each other. With the fee account
// funded, both pay.
func TestFeeAccountTwoEnvironmentsNeverQueueMoreThanItHolds(t *testing.T) {
	for _, funded := range []bool{false, true} {
		for round := range 5 {
			t.Run(fmt.Sprintf("funded=%v/%d", funded, round), func(t *testing.T) {
				r := newFundsRig(t, "rpc", 2, 100*unit)
				fee := r.keys.Fee.Address()
				if !funded {
					acct, _ := r.n.Account(fee)
					reserve := int64(2+acct.NumSubEntries+acct.NumSponsoring-acct.NumSponsored) * stellar.DefaultBaseReserveStroops
					if err := r.n.Burn(fee, stellarsim.Native, acct.Balance-reserve-300); err != nil {
						t.Fatal(err)
					}
				}
				orchs := []*transfer.Orchestrator{r.orch,
					{Store: r.store, Ledger: r.environment(), Clock: r.clock, Logger: slog.New(slog.DiscardHandler)}}
				wallets := []string{r.wallet(t), r.wallet(t)}
				envelopes := len(r.n.Envelopes())
				errs := make([]error, 2)
				var wg sync.WaitGroup
				release := r.clock.Hold()
				for i := range 2 {
					r.clock.Go(&wg, func() {
						_, errs[i] = orchs[i].Transfer(context.Background(), payout(fmt.Sprintf("payout-%d", i), wallets[i], 5))
					})
				}
				release()
				wg.Wait()
				sent := r.n.Envelopes()[envelopes:]
				for _, e := range sent {
					if e.Code == "txINSUFFICIENT_BALANCE" {
						t.Fatalf("the network refused %+v: the service queued more fees than the fee account holds", e)
					}
				}
				paid := 0
				for i, err := range errs {
					got, _ := r.n.Balance(wallets[i], r.usdc)
					switch {
					case err == nil && got == 5*unit:
						paid++
					case err != nil && !funded && got == 0:
						wantCode(t, err, transfer.CodeFeeAccountUnderfunded)
						if _, gerr := r.store.Get(context.Background(), transfer.StoreKey(wallets[i], fmt.Sprintf("payout-%d", i))); !errors.Is(gerr, transfer.ErrNotFound) {
							t.Fatalf("transfer %d: key held (%v) after %v", i, gerr, err)
						}
					default:
						t.Fatalf("transfer %d: %v, wallet holds %d", i, err, got)
					}
				}
				if funded && paid != 2 || !funded && (paid > 1 || len(sent) > 1) {
					t.Fatalf("funded %v: %d paid, %d envelopes sent", funded, paid, len(sent))
				}
			})
		}
	}
}

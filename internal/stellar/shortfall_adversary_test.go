package stellar_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The release after a FAILED op_underfunded (the vault drained between the check before sending
// and the ledger) rests on one fact: the envelope's sequence number was consumed, so nothing
// signed for that incarnation can ever land. Here the FAILED envelope is kept
// (as anything that saw it could keep it: a retrying proxy, a log, a second submitter), the vault
// is funded, and then, while the client's retry pays, the old envelope is sent again as it was
// and, with a fee bump, wrapped again around the same inner transaction by the fee account at a
// higher fee. Neither may land: the wallet is paid exactly once.
func TestFailedShortfallEnvelopeNeverLandsAfterFunding(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		for _, async := range []bool{false, true} {
			for _, channels := range []int{0, 2} {
				t.Run(fmt.Sprintf("%s/async=%v/channels=%d", backend, async, channels), func(t *testing.T) {
					failedShortfallNeverLands(t, backend, channels, async, false)
				})
			}
		}
	}
}

// failedShortfallNeverLands is TestFailedShortfallEnvelopeNeverLandsAfterFunding with channels
// channel accounts (0: the vault is the source), synchronously or as an async transfer run by the
// submitter (the item requeued, not deleted, on the real store).
func failedShortfallNeverLands(t *testing.T, backend string, channels int, async, noTrust bool) {
	{
		clock, n := startSimNet(t, simNetOpts{})
		sim := fundedKeys(t, n, fundOpts{vaultTrustline: true, vaultUSDC: 6 * unit, fee: true, wallet: true, walletTrustline: true})
		keys, usdc, vault, wallet := sim.keys, sim.usdc, sim.vault, sim.wallet
		trustline := func() error { return n.AddTrustline(vault, usdc, 0) }
		mint := func(amount int64) error { return n.Mint(vault, usdc, amount) }
		// The vault can pay when Prepare checks it (6 units for a payment of 5) and is drained
		// before the ledger applies the payment (drain, at StepPrepared): the check before
		// sending passes, and the FAILED inclusion is the backstop under test.
		drain := func() error {
			if noTrust {
				if err := n.Burn(vault, usdc, 6*unit); err != nil {
					return err
				}
				return n.RemoveTrustline(vault, usdc)
			}
			return n.Burn(vault, usdc, 5*unit)
		}
		db, _ := dynamotest.Minidyn(t)
		store := dynamotest.NewStore(t, db)
		cfg := stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: vault,
			Assets: []txnbuild.CreditAsset{{Code: usdc.Code, Issuer: usdc.Issuer}}, Keys: signing.StaticKeys{K: keys},
			MaxFeeStroops: 1_000_000, Clock: clock}
		if channels > 0 {
			pool, err := sources.NewChannelPool(sources.ChannelPoolConfig{Leases: dynamo.NewChannelLeases(db, store.Table()), Count: channels, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Channels = pool
		}
		var ledger shortfallLedger
		var err error
		if backend == "rpc" {
			ledger, err = stellar.NewRPCLedger(cfg)
		} else {
			ledger, err = stellar.NewHorizonLedger(stellar.HorizonConfig{URL: n.URL(), Passphrase: cfg.Passphrase, VaultAccount: vault,
				Assets: cfg.Assets, Keys: cfg.Keys, MaxFeeStroops: cfg.MaxFeeStroops, Channels: cfg.Channels, Clock: clock})
		}
		if err != nil {
			t.Fatal(err)
		}
		if channels > 0 {
			if _, err := ledger.EnsureChannels(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		var sent []transfer.Envelope
		orch := &transfer.Orchestrator{Store: store, Ledger: ledger, Clock: clock, Logger: slog.New(slog.DiscardHandler),
			Hooks: func(_ context.Context, s transfer.Step, rec transfer.Record) error {
				if s == transfer.StepPrepared && len(sent) == 0 {
					if err := drain(); err != nil {
						t.Errorf("draining the vault: %v", err)
					}
				}
				if s == transfer.StepSent && rec.Envelope != nil {
					sent = append(sent, *rec.Envelope)
				}
				return nil
			}}
		in := transfer.Input{ClientKey: "payout-0001", Request: transfer.Request{OperationType: transfer.Withdraw,
			WalletAddress: wallet, Amount: "5", Asset: "USDC", Stroops: 5 * unit}}
		ctx := context.Background()

		q := &queueRecorder{}
		orch.Queue = q
		run := func() (transfer.Outcome, error) {
			if !async {
				return orch.Transfer(ctx, in)
			}
			if len(q.sent) == 0 {
				if res, err := orch.Enqueue(ctx, in); err != nil || !res.Accepted {
					t.Fatalf("enqueue: %+v %v", res, err)
				}
			}
			d, err := orch.RunQueued(ctx, q.sent[0])
			if err == nil && d != transfer.DeliveryDone {
				t.Fatalf("channels %d: delivery %s without an error", channels, d)
			}
			if err != nil {
				return transfer.Outcome{}, err
			}
			rec, gerr := store.Get(ctx, transfer.StoreKey(wallet, in.ClientKey))
			if gerr != nil || rec.Result == nil {
				t.Fatalf("channels %d: after the run: %+v %v", channels, rec, gerr)
			}
			return transfer.Outcome{TransactionHash: rec.Result.TransactionHash}, nil
		}
		_, err = run()
		var u *transfer.UnavailableError
		if !errors.As(err, &u) || u.Code != transfer.CodeVaultUnderfunded {
			t.Fatalf("channels %d async %v: %v, want 503 VAULT_UNDERFUNDED", channels, async, err)
		}
		if rec, gerr := store.Get(ctx, transfer.StoreKey(wallet, in.ClientKey)); async && (gerr != nil || rec.Status != transfer.StatusQueued) {
			t.Fatalf("channels %d: async item %+v %v, want it queued again", channels, rec, gerr)
		} else if !async && !errors.Is(gerr, transfer.ErrNotFound) {
			t.Fatalf("channels %d: key held (%v), want it released", channels, gerr)
		}
		if len(sent) != 1 {
			t.Fatalf("channels %d: %d envelopes sent, want 1", channels, len(sent))
		}
		old := sent[0]
		if noTrust {
			if err := trustline(); err != nil { // an operator gives the vault its trustline
				t.Fatal(err)
			}
		}
		if err := mint(10 * unit); err != nil { // an operator funds the vault
			t.Fatal(err)
		}
		before, _ := n.Balance(wallet, usdc)

		// The old envelope again, and (with a fee bump) a new fee bump around its inner transaction.
		resend := []transfer.Envelope{{XDR: old.XDR, InnerHash: old.InnerHash, OuterHash: old.OuterHash}}
		if old.OuterHash != "" {
			gen, err := txnbuild.TransactionFromXDR(old.XDR)
			if err != nil {
				t.Fatal(err)
			}
			fb, _ := gen.FeeBump()
			bump, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{
				Inner: fb.InnerTransaction(), FeeAccount: keys.Fee.Address(), BaseFee: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			if bump, err = bump.Sign(n.Passphrase(), keys.Fee); err != nil {
				t.Fatal(err)
			}
			x, _ := bump.Base64()
			h, _ := bump.HashHex(n.Passphrase())
			resend = append(resend, transfer.Envelope{XDR: x, InnerHash: old.InnerHash, OuterHash: h})
		}
		for _, e := range resend {
			if _, err := ledger.Send(ctx, e); err != nil {
				t.Fatalf("channels %d: re-send: %v", channels, err)
			}
		}
		if async {
			// The requeued item is held back for its Retry-After (notBefore): its message comes
			// back no sooner.
			clock.Advance(u.RetryAfter)
		}
		out, err := run()
		if err != nil || out.Replayed {
			t.Fatalf("channels %d: retry after funding: %+v %v", channels, out, err)
		}
		clock.Advance(30 * time.Second) // let anything still queued close
		for _, e := range resend {
			if _, err := ledger.Send(ctx, e); err != nil {
				t.Fatalf("channels %d: re-send: %v", channels, err)
			}
		}
		clock.Advance(30 * time.Second)
		if got, _ := n.Balance(wallet, usdc); got != before+5*unit {
			t.Fatalf("channels %d: wallet %d -> %d, want exactly one payment of 5", channels, before, got)
		}
		for _, tx := range n.Applied() {
			if tx.Hash == old.InnerHash || tx.Hash == old.OuterHash || len(resend) > 1 && tx.Hash == resend[1].OuterHash {
				if tx.Status == "SUCCESS" {
					t.Fatalf("channels %d: the FAILED incarnation's envelope landed later: %+v", channels, tx)
				}
			}
		}
	}
}

type queueRecorder struct{ sent []transfer.QueueMessage }

func (q *queueRecorder) Send(_ context.Context, m transfer.QueueMessage) error {
	q.sent = append(q.sent, m)
	return nil
}

// A vault without a trustline for the asset when the ledger applies its payment (it had one when
// Prepare checked it, and lost it before the send): the payment is included FAILED
// op_src_no_trust on the local network. The answer is VAULT_UNDERFUNDED with the key released (not a stored 422
// blaming the destination); once an operator adds the trustline and funds the vault, the retry
// with the same key pays exactly once and the FAILED envelope never lands.
func TestVaultWithoutTrustlineFailedIsReleasedAndRetryPaysOnce(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			failedShortfallNeverLands(t, "rpc", 2, async, true)
		})
	}
}

// shortfallLedger is what the test needs of either backend.
type shortfallLedger interface {
	transfer.Ledger
	EnsureChannels(ctx context.Context) ([]stellar.ChannelAccount, error)
}

package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Proofs of death: the one envelope of a key is rebuilt only once the ledger proves it can no
// longer land (a ledger closed after its maxTime and shown by RPC, whose history covers the
// submission, or the source's sequence number used by another transaction). A lost answer, a
// refused re-send, the local clock, short history or a short budget prove nothing; a transaction
// applied FAILED is the key's answer.

// TestLostOrLateSendAnswerPaysOnceWithoutRebuild: a send whose answer is lost (accepted, EOF),
// refused after the write (closed without an answer) or late (accepted, lands three ledgers on)
// settles on its one envelope: one transaction applied, the caller told its hash, the item
// replayable with it, and no new envelope built while the first could still land.
func TestLostOrLateSendAnswerPaysOnceWithoutRebuild(t *testing.T) {
	for _, f := range []stellarsim.Fault{
		{Kind: stellarsim.FaultDropResponse},               // accepted, answer lost (EOF)
		{Kind: stellarsim.FaultRefuse},                     // closed without an answer after the write
		{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3}, // accepted, lands late
	} {
		t.Run(faultName(f), func(t *testing.T) {
			r := quietRig(t)
			r.arm(t, f)
			out, err := r.call(0)
			if f.Kind == stellarsim.FaultRefuse {
				// Nothing was accepted: the re-send of the same envelope lands.
				if err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			r.assertOnce(t, 0, out)
		})
	}
}

// TestRefusalOfAResendProvesNothing: a refusal of a re-send (TRY_AGAIN_LATER, or txBAD_SEQ) says
// nothing of the first send of the same envelope. The first send is accepted and its answer lost
// while ledgers stall; the re-send is refused; then ledgers close within its timebounds and the
// first send lands: the call settles on it, one transaction and no rebuild.
func TestRefusalOfAResendProvesNothing(t *testing.T) {
	for _, answer := range []stellarsim.Fault{
		{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater, Count: 20},
		{Kind: stellarsim.FaultAnswer, Code: "txBAD_SEQ", Count: 20},
	} {
		t.Run(faultName(answer), func(t *testing.T) {
			r := quietRig(t)
			// The first send is accepted but its answer is lost, and ledgers stall so it cannot
			// land yet; the re-send is refused. Then ledgers close again, within its timebounds.
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall})
			sent := 0
			r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
				if step != transfer.StepSent {
					return nil
				}
				switch sent++; sent {
				case 1:
					r.arm(t, answer)
				case 2:
					r.net.ClearFaults() // the refused re-send is behind us: ledgers resume
				}
				return nil
			}
			out, err := r.call(0)
			if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			if sent < 2 {
				t.Fatalf("only %d sends: the test needs a refused re-send", sent)
			}
			want := answer.Status
			if want == "" {
				want = stellarsim.StatusError
			}
			if got := r.net.Envelopes()[1]; got.Status != want || got.Code != answer.Code && answer.Code != "" {
				t.Fatalf("the re-send was answered %s %s, want the injected refusal %s %s", got.Status, got.Code, want, answer.Code)
			}
			r.assertOnce(t, 0, out)
		})
	}
}

// TestLocalClockDoesNotProveExpiry: only a ledger closed after an envelope's maxTime, and shown
// by RPC, proves it can no longer land; the local clock does not. With the send's answer lost
// and no ledger closing, every retry is TRANSFER_IN_DOUBT, an hour past maxTime too, and still
// while the first ledger after maxTime has closed but RPC does not show it yet; once RPC shows
// it, the retry builds exactly one new envelope, which is the one applied.
func TestLocalClockDoesNotProveExpiry(t *testing.T) {
	r := quietRig(t)
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall}) // no ledger closes; the clock runs on
	_, err := r.call(0)
	var d *transfer.InDoubtError
	if !errors.As(err, &d) {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT", err)
	}
	rec, _ := r.store.Get(context.Background(), r.storeKey(0))
	if !r.clock.Now().After(time.Unix(rec.Envelope.MaxTime, 0)) {
		t.Fatal("the local clock should be past maxTime for this test to mean anything")
	}
	// A retry with the clock long past maxTime, but no ledger closed after it, is still 409.
	r.clock.Advance(time.Hour)
	if _, err := r.call(0); !errors.As(err, &d) {
		t.Fatalf("retry: %v, want TRANSFER_IN_DOUBT", err)
	}
	r.net.ClearFaults()
	r.clock.Advance(ledgerInterval) // the first ledger closes: the envelope is already too late
	// Until RPC shows that ledger (1-3 s after it closed), nothing proves the envelope dead.
	if _, err := r.call(0); !errors.As(err, &d) {
		t.Fatalf("retry before RPC shows the ledger: %v, want TRANSFER_IN_DOUBT", err)
	}
	r.shown(t)
	out, err := r.call(0)
	if err != nil {
		t.Fatalf("after the ledger proved it dead: %v", err)
	}
	if n := r.events.snapshot()["rebuilds"]; n != 1 {
		t.Fatalf("rebuilds = %d, want 1: exactly one new envelope once the ledger proved the first dead", n)
	}
	if applied := r.net.Applied(); len(applied) != 1 || applied[0].Hash != out.TransactionHash {
		t.Fatalf("applied = %+v", applied)
	}
}

// TestShortHistoryDoesNotProveAbsence: a NOT_FOUND from history that starts after the submission
// proves nothing. The envelope lands, every answer is lost and the lookups' history no longer
// reaches the submission: the call ends TRANSFER_IN_DOUBT, and once full history is back the
// retry replays the landed transaction.
func TestShortHistoryDoesNotProveAbsence(t *testing.T) {
	r := quietRig(t)
	// The envelope lands, but every answer is lost and the lookups' history is shortened so it
	// no longer covers the submission.
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 1})
	once := false
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent && !once {
			once = true
			for range 3 {
				r.net.CloseLedger() // it lands, then falls out of the one-ledger history
			}
		}
		return nil
	}
	_, err := r.call(0)
	var d *transfer.InDoubtError
	if !errors.As(err, &d) {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT: NOT_FOUND from history that starts after the submission proves nothing", err)
	}
	if len(r.net.Applied()) != 1 {
		t.Fatal("the envelope should have landed")
	}
	r.orch.Hooks = nil
	r.net.ClearFaults() // full history again
	out, err := r.call(0)
	if err != nil || !out.Replayed {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	r.assertOnce(t, 0, out)
}

// TestShortBudgetEndsInDoubtNotReleased: a call whose envelope can still land after its budget
// ends is answered TRANSFER_IN_DOUBT, never releases the key or says nothing was submitted, and a
// retry before a ledger closes after maxTime builds no other envelope. A call whose invocation has
// less time left than MinValidity + ProofWindow builds its one envelope with maxTime MinValidity
// away, past the end of its budget (so stellar-core does not refuse it as too late); no ledger
// closes before the budget ends.
func TestShortBudgetEndsInDoubtNotReleased(t *testing.T) {
	r := quietRig(t)
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall}) // accepted, no ledger closes yet
	s := transfer.DefaultSettings()
	ctx, cancel := context.WithTimeout(actorCtx(r, "short"), s.DeadlineMargin+s.MinValidity/2)
	defer cancel()
	start := r.clock.Now()
	_, err := r.orch.Transfer(ctx, r.input(0))
	var d *transfer.InDoubtError
	if !errors.As(err, &d) {
		t.Fatalf("short call = %v; want TRANSFER_IN_DOUBT: its envelope was sent and can land after the call", err)
	}
	rec := r.item(t, 0)
	if rec.Status != transfer.StatusInDoubt || rec.Envelope == nil || time.Unix(rec.Envelope.MaxTime, 0).Before(start.Add(s.MinValidity)) {
		t.Fatalf("item = %s, maxTime %v after the start; want in_doubt with maxTime at least MinValidity away", describe(rec),
			time.Unix(rec.Envelope.MaxTime, 0).Sub(start))
	}
	retry := told{who: "retry"}
	retry.out, retry.err = r.callAs("retry", 0)
	if !errors.As(retry.err, &d) {
		t.Errorf("retry before any ledger closed = %+v, %v; want TRANSFER_IN_DOUBT", retry.out, retry.err)
	}
	r.net.ClearFaults()
	r.clock.Advance(ledgerInterval) // the envelope lands
	r.shown(t)
	last := told{who: "last"}
	last.out, last.err = r.callAs("last", 0)
	if last.err != nil || !last.out.Replayed {
		t.Errorf("last = %+v, %v; want the landed envelope replayed", last.out, last.err)
	}
	r.assertPaidOnce(t, 0, last)
}

// TestTakeOverRefusedTryAgainLaterIsNotBusy: a take-over's re-send answered TRY_AGAIN_LATER proves
// nothing: the retry neither releases the key nor answers CHANNELS_BUSY, and it (or the next) is
// told E1's hash once E1 lands. A vault envelope's TRY_AGAIN_LATER is answered CHANNELS_BUSY with
// the key released only on a first send (SendResult.SourceBusy through refused); a take-over
// re-sends an envelope an earlier invocation sent, which may sit in the queue or have landed. A
// call with a short budget (maxTime MinValidity away, past its lease) sends E1 and dies; its lease
// ends while E1 is still valid and no ledger has closed, and the retry's re-send is refused, as
// the vault's slot, held by E1 itself, says.
func TestTakeOverRefusedTryAgainLaterIsNotBusy(t *testing.T) {
	r := quietRig(t)
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall}) // E1 accepted, no ledger closes yet
	s := transfer.DefaultSettings()
	ctx, cancel := context.WithTimeout(actorCtx(r, "short"), s.DeadlineMargin+s.MinValidity/2)
	defer cancel()
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash // the short call dies right after its send
		}
		return nil
	}
	if _, err := r.orch.Transfer(ctx, r.input(0)); !errors.Is(err, errCrash) {
		t.Fatalf("short call = %v", err)
	}
	r.orch.Hooks = nil
	e1 := r.item(t, 0)
	for !e1.LeaseExpired(r.clock.Now()) {
		r.clock.Advance(250 * time.Millisecond)
	}
	if e1.Envelope == nil || !r.clock.Now().Before(time.Unix(e1.Envelope.MaxTime, 0)) {
		t.Fatalf("E1's item %s; the test needs its lease over before its maxTime", describe(e1))
	}
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater})
	sent := 0
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			if sent++; sent == 1 {
				r.net.ClearFaults() // the refused re-send is behind us: ledgers resume
			}
		}
		return nil
	}
	retry := told{who: "retry"}
	retry.out, retry.err = r.callAs("retry", 0)
	r.orch.Hooks = nil
	if envs := r.net.Envelopes(); len(envs) < 2 || envs[1].Status != stellarsim.StatusTryAgainLater || envs[1].InnerHash != e1.Envelope.InnerHash {
		t.Fatalf("envelopes %+v; the test needs the take-over's re-send of E1 answered TRY_AGAIN_LATER", envs)
	}
	var u *transfer.UnavailableError
	if errors.As(retry.err, &u) {
		t.Fatalf("retry = %v: E1 could still land", retry.err)
	}
	answers := []told{retry}
	if retry.err != nil {
		r.clock.Advance(2 * time.Minute)
		last := told{who: "last"}
		last.out, last.err = r.callAs("last", 0)
		answers = append(answers, last)
	}
	r.assertPaidOnce(t, 0, answers...)
	if got := answers[len(answers)-1]; got.err != nil || got.out.TransactionHash != e1.Envelope.InnerHash {
		t.Errorf("%s = %+v, %v; want E1 %s", got.who, got.out, got.err, e1.Envelope.InnerHash)
	}
}

// TestEnvelopeFailedByASignerRotationIsReleasedNotRejected: a transaction applied FAILED on the
// service's side is not the client's rejection. The operator rotates the vault's signing key
// (README.md, "Signing keys in KMS": a SetOptions from the vault adds the new key and sets the old
// key's weight to 0) while a channel's envelope, signed by the old key, is in the queue of the same
// ledger. stellar-core applies it FAILED (opBAD_AUTH at apply, TransactionFrame::commonPreApply's
// processSignatures; fee charged, the channel's sequence number consumed, so it can never land):
// nothing is paid, the caller is told 503 SERVICE_SIDE_FAILURE (retryable) with its key free, and
// the call builds no second envelope. A retry before the service signs with the new key is refused
// before inclusion (the network checks the signatures first: txFAILED opBAD_AUTH, no fee), again
// retryable: never a payment, never a stored rejection.
func TestEnvelopeFailedByASignerRotationIsReleasedNotRejected(t *testing.T) {
	// The rotation must apply before the payment of the same ledger: submission order (core's
	// order is a shuffle of the set, which this test does not mean to exercise).
	r, cleanup, err := newRig(Config{Seed: 1, Keys: 10, Callers: 1, Wave: 1, Channels: 2, applyInSubmissionOrder: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	vault := r.vaultKey
	newKey := keypair.MustRandom()
	var rotation string
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
		if step != transfer.StepAttached || rotation != "" {
			return nil
		}
		// Before the envelope is sent: the rotation is queued ahead of it, in the same ledger.
		acct, ok := r.net.Account(vault.Address())
		if !ok {
			t.Fatal("no vault")
		}
		zero, one := txnbuild.Threshold(0), txnbuild.Threshold(1)
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
			SourceAccount: &txnbuild.SimpleAccount{AccountID: vault.Address(), Sequence: acct.Sequence}, IncrementSequenceNum: true,
			BaseFee: txnbuild.MinBaseFee,
			Operations: []txnbuild.Operation{&txnbuild.SetOptions{
				Signer: &txnbuild.Signer{Address: newKey.Address(), Weight: 1}, MasterWeight: &zero,
				LowThreshold: &one, MediumThreshold: &one, HighThreshold: &one,
			}},
			Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, r.clock.Now().Add(5*time.Minute).Unix())},
		})
		if err == nil {
			tx, err = tx.Sign(r.net.Passphrase(), vault)
		}
		if err != nil {
			t.Fatal(err)
		}
		b64, _ := tx.Base64()
		rotation, _ = tx.HashHex(r.net.Passphrase())
		c := rpcclient.NewClient(r.net.RPCURL(), nil)
		defer func() { _ = c.Close() }()
		if res, err := c.SendTransaction(ctx, protocol.SendTransactionRequest{Transaction: b64}); err != nil || res.Status != "PENDING" {
			t.Fatalf("the rotation: %+v %v", res, err)
		}
		return nil
	}
	before, _ := r.net.Balance(r.wallet, stellarsim.Asset{})
	sent := len(r.net.Envelopes())
	_, err = r.call(0)
	var pe transfer.ProblemError
	if !errors.As(err, &pe) || pe.Problem().Code != transfer.CodeServiceSideFailure || pe.Problem().Classification != transfer.Retryable {
		t.Fatalf("the transfer: %v, want a retryable SERVICE_SIDE_FAILURE", err)
	}
	if tx, ok := r.net.Transaction(rotation); !ok || tx.Status != "SUCCESS" {
		t.Fatalf("the rotation did not apply: %+v", tx)
	}
	if n := len(r.net.Envelopes()) - sent; n != 2 {
		t.Fatalf("the call sent %d envelopes, want 2 (the rotation and one payment)", n)
	}
	if rec, err := r.store.Get(context.Background(), r.storeKey(0)); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("item = %+v, %v; want the key free", rec, err)
	}
	_, err = r.call(0)
	if !errors.As(err, &pe) || pe.Problem().Classification != transfer.Retryable || pe.Problem().Code == transfer.CodeTransactionFailed {
		t.Fatalf("the retry: %v, want a retryable answer (the service still signs with the old key), never a rejection", err)
	}
	failed := 0
	for _, tx := range r.net.Applied()[r.setupTxs:] {
		switch {
		case tx.Hash == rotation:
		case tx.Status == "SUCCESS":
			t.Fatalf("a transaction paid: %+v", tx)
		default:
			failed++
		}
	}
	if failed != 1 {
		t.Fatalf("%d FAILED transactions applied, want 1 (the envelope signed by the rotated key)", failed)
	}
	if after, _ := r.net.Balance(r.wallet, stellarsim.Asset{}); after != before {
		t.Fatalf("wallet's native balance moved %d", after-before)
	}
}

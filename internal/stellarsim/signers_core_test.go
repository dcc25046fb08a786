package stellarsim_test

import (
	"bytes"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Adversary's checks of the signers and thresholds model against stellar-core's own code (the
// stellar/stellar-core repository; each test names the file and function). Each test asserts what
// core does.

// stellar-core signs the transaction set's transactions again when it applies them
// (src/transactions/TransactionFrame.cpp TransactionFrame::commonPreApply: commonValid with
// applying=true, then processSignatures -> checkOperationSignatures). The nominating node trims
// the set against the last closed ledger only (HerderImpl::triggerNextLedger ->
// TxSetUtils::trimInvalid), so a transaction whose signer an earlier transaction of the same
// ledger removed is still in the set: it is applied as FAILED with opBAD_AUTH, its fee charged and
// its sequence number consumed (commonPreApply: processSeqNum once commonValid got past the
// sequence check). It is in history, found by its hash. This is the operator rotating the vault's
// KMS key (SetOptions removing the old key) while a channel's payment signed by the old key is
// queued.
func TestApplyTimeSignatureCheckIncludesFailed(t *testing.T) {
	// The removal must apply first: submission order (core shuffles the set: txset.go, applyOrder).
	e := newEnv(t, stellarsim.Options{ApplyInSubmissionOrder: true})
	vault := e.funded(1000 * xlm)
	channel := e.funded(10 * xlm)
	wallet := e.funded(10 * xlm)
	old, _ := keypair.Random() // the vault's signer being rotated out
	one := txnbuild.Threshold(1)

	add := e.build(vault, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer: &txnbuild.Signer{Address: old.Address(), Weight: 1}, LowThreshold: &one, MediumThreshold: &one, HighThreshold: &one,
	}}, 0, 0)
	if r := e.send(b64(t, add)); r.Status != "PENDING" {
		t.Fatalf("add signer: %s", r.Status)
	}
	e.n.CloseLedger()

	// In one ledger: the vault removes the old signer (signed by its master key), then the
	// channel's payment from the vault, signed by the channel and the old signer.
	remove := e.build(vault, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer: &txnbuild.Signer{Address: old.Address(), Weight: 0},
	}}, 0, 0)
	pay := e.build(channel, []txnbuild.Operation{&txnbuild.Payment{
		Destination: wallet.Address(), Asset: txnbuild.NativeAsset{}, Amount: "1", SourceAccount: vault.Address(),
	}}, 0, 0, channel, old)
	if r := e.send(b64(t, remove)); r.Status != "PENDING" {
		t.Fatalf("remove: %s", r.Status)
	}
	if r := e.send(b64(t, pay)); r.Status != "PENDING" {
		t.Fatalf("payment: %s (valid against the last closed ledger)", r.Status)
	}
	before, _ := e.n.Account(channel.Address())
	e.n.CloseLedger()
	if g := e.getTx(hashOf(t, remove, e.n.Passphrase())); g.Status != "SUCCESS" {
		t.Fatalf("remove: %s", g.Status)
	}
	after, _ := e.n.Account(channel.Address())
	g := e.getTx(hashOf(t, pay, e.n.Passphrase()))
	if g.Status != protocol.TransactionStatusFailed {
		t.Fatalf("payment signed by the removed signer: getTransaction %s, want FAILED (core applies it and fails it "+
			"at apply, TransactionFrame::commonPreApply); channel sequence %d -> %d", g.Status, before.Sequence, after.Sequence)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(g.ResultXDR, &res); err != nil {
		t.Fatal(err)
	}
	if res.Result.Code != xdr.TransactionResultCodeTxFailed || res.Result.Results == nil ||
		len(*res.Result.Results) != 1 || (*res.Result.Results)[0].Code != xdr.OperationResultCodeOpBadAuth {
		t.Fatalf("result %s %+v, want txFAILED [opBAD_AUTH]", res.Result.Code, res.Result.Results)
	}
	if after.Sequence != before.Sequence+1 || after.Balance != before.Balance-100 {
		t.Fatalf("channel sequence %d -> %d, balance %d -> %d: want the sequence number consumed and the fee charged",
			before.Sequence, after.Sequence, before.Balance, after.Balance)
	}
}

// A fee bump's own signatures are checked for extras before its inner transaction is judged:
// src/transactions/FeeBumpTransactionFrame.cpp FeeBumpTransactionFrame::checkValidImpl runs
// commonValid (fee, fee source, txBAD_AUTH, balance), then checkAllSignaturesUsed
// (txBAD_AUTH_EXTRA), and only then mInnerTx->checkValidWithOptionallyChargedFee. A fee bump with
// an extra outer signature around an invalid inner transaction is txBAD_AUTH_EXTRA.
func TestFeeBumpExtraOuterSignatureBeforeInner(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	src := e.funded(10 * xlm)
	payer := e.funded(10 * xlm)
	wallet := e.funded(10 * xlm)
	stranger, _ := keypair.Random()
	acct, _ := e.n.Account(src.Address())
	// The inner transaction's sequence number is one too far: txBAD_SEQ.
	inner := e.buildSeq(src, acct.Sequence+2, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	if err != nil {
		t.Fatal(err)
	}
	if fb, err = fb.Sign(e.n.Passphrase(), payer, stranger); err != nil {
		t.Fatal(err)
	}
	outer, in := errorCode(t, e.send(b64(t, fb)))
	if outer != xdr.TransactionResultCodeTxBadAuthExtra {
		t.Fatalf("fee bump with an extra outer signature and a bad inner sequence: %s (inner %s), want txBAD_AUTH_EXTRA "+
			"(FeeBumpTransactionFrame::checkValidImpl checks the outer signatures first)", outer, in)
	}
}

// stellar-core keeps an account's signers sorted by SignerKey, its XDR order (key type, then the
// key's bytes): src/transactions/SetOptionsOpFrame.cpp SetOptionsOpFrame::addOrChangeSigner
// inserts at findSignerByKey's position (src/transactions/TransactionUtils.h: the first signer
// not less than the key). The G... strkey's base32 text sorts differently (its digits 2-7 encode
// 26-31 but sort before A-Z), so an account entry read with getLedgerEntries lists signers in key
// byte order.
func TestSignersSortedBySignerKey(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	acct := e.funded(100 * xlm)
	// Two keys whose byte order and strkey order disagree.
	var a, b *keypair.Full
	for a == nil {
		x, _ := keypair.Random()
		y, _ := keypair.Random()
		xb, yb := strkey.MustDecode(strkey.VersionByteAccountID, x.Address()), strkey.MustDecode(strkey.VersionByteAccountID, y.Address())
		if (bytes.Compare(xb, yb) < 0) != (x.Address() < y.Address()) {
			a, b = x, y
		}
	}
	for _, k := range []*keypair.Full{a, b} {
		tx := e.build(acct, []txnbuild.Operation{&txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: k.Address(), Weight: 1}}}, 0, 0)
		if r := e.send(b64(t, tx)); r.Status != "PENDING" {
			t.Fatalf("SetOptions: %s", r.Status)
		}
		e.n.CloseLedger()
	}
	var key xdr.LedgerKey
	if err := key.SetAccount(xdr.MustAddress(acct.Address())); err != nil {
		t.Fatal(err)
	}
	r, err := e.rpc.GetLedgerEntries(e.ctx, protocol.GetLedgerEntriesRequest{Keys: []string{mustKey(t, key)}})
	if err != nil || len(r.Entries) != 1 {
		t.Fatalf("getLedgerEntries: %v %v", r, err)
	}
	var data xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(r.Entries[0].DataXDR, &data); err != nil {
		t.Fatal(err)
	}
	signers := data.MustAccount().Signers
	if len(signers) != 2 {
		t.Fatalf("%d signers, want 2", len(signers))
	}
	k0, k1 := signers[0].Key.Ed25519, signers[1].Key.Ed25519
	if bytes.Compare(k0[:], k1[:]) >= 0 {
		t.Fatalf("signers %s, %s: not in key byte order (SetOptionsOpFrame::addOrChangeSigner)",
			signers[0].Key.Address(), signers[1].Key.Address())
	}
}

// A signer added inside a sponsorship sandwich is sponsored: its base reserve is the sponsor's
// (src/transactions/SetOptionsOpFrame.cpp SetOptionsOpFrame::addOrChangeSigner ->
// createSignerWithPossibleSponsorship, src/transactions/SponsorshipUtils.cpp), so an account with
// no spare XLM can add one, and the sponsor's numSponsoring grows. The local network says it does
// not model sponsored signers; it must then refuse the operation loudly (opNOT_SUPPORTED, as for
// the SetOptions fields it does not model) rather than charge the account itself.
func TestSponsoredSignerReserveIsTheSponsors(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	sponsor := e.funded(100 * xlm)
	// Exactly the minimum balance of an account without subentries, and the fee.
	acct := e.funded(2*5_000_000 + 100)
	signer, _ := keypair.Random()
	tx := e.build(sponsor, []txnbuild.Operation{
		&txnbuild.BeginSponsoringFutureReserves{SponsoredID: acct.Address()},
		&txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: signer.Address(), Weight: 1}, SourceAccount: acct.Address()},
		&txnbuild.EndSponsoringFutureReserves{SourceAccount: acct.Address()},
	}, 0, 0, sponsor, acct)
	r := e.send(b64(t, tx))
	if r.Status == "ERROR" {
		if ops := opCodes(t, sendAnswer{r.ErrorResultXDR}); len(ops) == 3 && ops[1] == xdr.OperationResultCodeOpNotSupported {
			return // refused loudly: acceptable
		}
		t.Fatalf("sponsored signer refused: %s", r.ErrorResultXDR)
	}
	e.n.CloseLedger()
	g := e.getTx(hashOf(t, tx, e.n.Passphrase()))
	a, _ := e.n.Account(acct.Address())
	s, _ := e.n.Account(sponsor.Address())
	if g.Status != protocol.TransactionStatusSuccess || a.NumSubEntries != 1 || a.NumSponsored != 1 || s.NumSponsoring != 1 {
		t.Fatalf("sponsored signer: %s; account subentries %d sponsored %d, sponsor sponsoring %d; want SUCCESS, 1, 1, 1 "+
			"(createSignerWithPossibleSponsorship)", g.Status, a.NumSubEntries, a.NumSponsored, s.NumSponsoring)
	}
}

// A fee bump's own (outer) signatures are not judged again when it is applied:
// src/transactions/FeeBumpTransactionFrame.cpp FeeBumpTransactionFrame::apply removes the fee
// source's one-time signers and applies the inner transaction (mInnerTx->apply), whose signatures
// are judged again (TransactionFrame::commonPreApply); the fee was charged with the set's fees. A
// fee bump in the set whose fee source's signer an earlier transaction of the same ledger removed
// is therefore applied, and its payment made.
func TestFeeBumpOuterSignaturesNotJudgedAtApply(t *testing.T) {
	// The removal must apply first: submission order (core shuffles the set: txset.go, applyOrder).
	e := newEnv(t, stellarsim.Options{ApplyInSubmissionOrder: true})
	payer := e.funded(100 * xlm)
	src := e.funded(10 * xlm)
	wallet := e.funded(10 * xlm)
	key, _ := keypair.Random() // the fee account's signer, removed in the fee bump's ledger
	one := txnbuild.Threshold(1)
	add := e.build(payer, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer: &txnbuild.Signer{Address: key.Address(), Weight: 1}, LowThreshold: &one, MediumThreshold: &one, HighThreshold: &one,
	}}, 0, 0)
	if r := e.send(b64(t, add)); r.Status != "PENDING" {
		t.Fatalf("add signer: %s", r.Status)
	}
	e.n.CloseLedger()

	remove := e.build(payer, []txnbuild.Operation{&txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: key.Address(), Weight: 0}}}, 0, 0)
	inner := e.build(src, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	if err != nil {
		t.Fatal(err)
	}
	if fb, err = fb.Sign(e.n.Passphrase(), key); err != nil {
		t.Fatal(err)
	}
	if r := e.send(b64(t, remove)); r.Status != "PENDING" {
		t.Fatalf("remove: %s", r.Status)
	}
	if r := e.send(b64(t, fb)); r.Status != "PENDING" {
		t.Fatalf("fee bump: %s", r.Status)
	}
	before := e.balance(wallet.Address(), stellarsim.Asset{})
	e.n.CloseLedger()
	if g := e.getTx(hashOf(t, inner, e.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("fee bump whose fee source's signer was removed in its ledger: %s, want SUCCESS "+
			"(FeeBumpTransactionFrame::apply does not judge the outer signatures again)", g.Status)
	}
	if got := e.balance(wallet.Address(), stellarsim.Asset{}); got != before+xlm {
		t.Fatalf("wallet %d, want %d", got, before+xlm)
	}
}

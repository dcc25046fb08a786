package stellarsim_test

import (
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// opCodes decodes a txFAILED answer's operation results: the outer code of each, and the inner
// code of a SetOptions or Payment.
func opCodes(t *testing.T, r interface{ GetErrorResultXDR() string }) []xdr.OperationResultCode {
	t.Helper()
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.GetErrorResultXDR(), &res); err != nil {
		t.Fatalf("errorResultXdr: %v", err)
	}
	var out []xdr.OperationResultCode
	for _, op := range *res.Result.Results {
		out = append(out, op.Code)
	}
	return out
}

type sendAnswer struct{ xdr string }

func (s sendAnswer) GetErrorResultXDR() string { return s.xdr }

// An account's signers and thresholds, as stellar-core checks them: an added signer's signature
// authorizes by weight, the transaction source at the low threshold (else txBAD_AUTH), each
// operation at its level (payments medium, SetOptions of thresholds or signers high; else
// opBAD_AUTH inside txFAILED), and master weight 0 disables the master key.
func TestSignersAndThresholds(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	vault := e.funded(1000 * xlm)
	wallet := e.funded(10 * xlm)
	signer, _ := keypair.Random()   // the added signer (KMS's key in production): not an account
	stranger, _ := keypair.Random() // signs for nobody
	native := txnbuild.NativeAsset{}
	u := func(v uint32) *txnbuild.Threshold { th := txnbuild.Threshold(v); return &th }

	apply := func(name string, tx *txnbuild.Transaction) {
		t.Helper()
		if r := e.send(b64(t, tx)); r.Status != "PENDING" {
			t.Fatalf("%s: status %s (%s), want PENDING", name, r.Status, r.ErrorResultXDR)
		}
		e.n.CloseLedger()
		if g := e.getTx(hashOf(t, tx, e.n.Passphrase())); g.Status != "SUCCESS" {
			t.Fatalf("%s: %s, want SUCCESS", name, g.Status)
		}
	}
	refused := func(name string, tx *txnbuild.Transaction, want xdr.TransactionResultCode, wantOp xdr.OperationResultCode) {
		t.Helper()
		r := e.send(b64(t, tx))
		code, _ := errorCode(t, r)
		if code != want {
			t.Fatalf("%s: %s, want %s", name, code, want)
		}
		if want == xdr.TransactionResultCodeTxFailed {
			if ops := opCodes(t, sendAnswer{r.ErrorResultXDR}); len(ops) != 1 || ops[0] != wantOp {
				t.Fatalf("%s: operation codes %v, want [%s]", name, ops, wantOp)
			}
		}
	}

	// Add the signer at weight 2; master weight 1; thresholds low 1, medium 2, high 3. The master
	// key alone may: its thresholds are still 0 when this is checked.
	apply("add signer", e.build(vault, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer:       &txnbuild.Signer{Address: signer.Address(), Weight: 2},
		MasterWeight: u(1), LowThreshold: u(1), MediumThreshold: u(2), HighThreshold: u(3),
	}}, 0, 0))
	// /_sim/transactions names the result as Horizon does (it was op_unknown).
	if ap := e.n.Applied(); len(ap) == 0 || len(ap[len(ap)-1].OpResults) != 1 || ap[len(ap)-1].OpResults[0] != "op_success" {
		t.Fatalf("the SetOptions applied as %+v, want op_results [op_success]", ap[len(ap)-1])
	}
	info, _ := e.n.Account(vault.Address())
	if info.NumSubEntries != 1 {
		t.Fatalf("subentries %d, want 1 (the signer)", info.NumSubEntries)
	}

	pay := []txnbuild.Operation{payment(wallet.Address(), native, "1")}
	// The added signer alone: weight 2 >= medium 2.
	before := e.balance(wallet.Address(), stellarsim.Asset{})
	apply("payment signed by the signer", e.build(vault, pay, 0, 0, signer))
	if got := e.balance(wallet.Address(), stellarsim.Asset{}); got != before+xlm {
		t.Fatalf("wallet %d, want %d", got, before+xlm)
	}
	// The master key alone: weight 1 meets low (the transaction) but not medium (the payment).
	refused("payment signed by the master key", e.build(vault, pay, 0, 0, vault), xdr.TransactionResultCodeTxFailed, xdr.OperationResultCodeOpBadAuth)
	// A key that is no signer: below low.
	refused("payment signed by a stranger", e.build(vault, pay, 0, 0, stranger), xdr.TransactionResultCodeTxBadAuth, 0)
	// A signer and a stranger: the stranger's signature is extra.
	refused("an extra signature", e.build(vault, pay, 0, 0, signer, stranger), xdr.TransactionResultCodeTxBadAuthExtra, 0)

	// Changing thresholds is high (3): the signer alone (2) may not, signer and master (3) may.
	zeroMaster := []txnbuild.Operation{&txnbuild.SetOptions{MasterWeight: u(0)}}
	refused("SetOptions signed by the signer", e.build(vault, zeroMaster, 0, 0, signer), xdr.TransactionResultCodeTxFailed, xdr.OperationResultCodeOpBadAuth)
	// The account's own key as an added signer is SET_OPTIONS_BAD_SIGNER (checked after the
	// signatures, as core does).
	refused("the account as its own signer", e.build(vault, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer: &txnbuild.Signer{Address: vault.Address(), Weight: 1}}}, 0, 0, signer, vault),
		xdr.TransactionResultCodeTxFailed, xdr.OperationResultCodeOpInner)
	apply("master weight 0", e.build(vault, zeroMaster, 0, 0, signer, vault))
	// With master weight 0 the master key signs for nothing, not even low.
	refused("payment signed by the disabled master key", e.build(vault, pay, 0, 0, vault), xdr.TransactionResultCodeTxBadAuth, 0)
	apply("payment signed by the signer, master disabled", e.build(vault, pay, 0, 0, signer))

	// The signer alone (2) is now below high (3) for good: the account can no longer change its
	// signers or thresholds. Raise the signer's weight to high before disabling the master key.
	refused("SetOptions with the master key disabled", e.build(vault, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer: &txnbuild.Signer{Address: stranger.Address(), Weight: 1}}}, 0, 0, signer),
		xdr.TransactionResultCodeTxFailed, xdr.OperationResultCodeOpBadAuth)
}

// RPC's getLedgerEntries shows the account entry's thresholds and signers as SetOptions left them.
func TestSignersInTheAccountEntry(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	acct := e.funded(100 * xlm)
	signer, _ := keypair.Random()
	two, one := txnbuild.Threshold(2), txnbuild.Threshold(1)
	tx := e.build(acct, []txnbuild.Operation{&txnbuild.SetOptions{
		Signer: &txnbuild.Signer{Address: signer.Address(), Weight: 2}, MediumThreshold: &two, MasterWeight: &one,
	}}, 0, 0)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("SetOptions: %s", r.Status)
	}
	e.n.CloseLedger()
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
	a := data.MustAccount()
	if a.Thresholds != (xdr.Thresholds{1, 0, 2, 0}) || len(a.Signers) != 1 || a.Signers[0].Weight != 2 ||
		a.Signers[0].Key.Address() != signer.Address() || a.NumSubEntries != 1 {
		t.Fatalf("account entry thresholds %v signers %+v subentries %d", a.Thresholds, a.Signers, a.NumSubEntries)
	}
}

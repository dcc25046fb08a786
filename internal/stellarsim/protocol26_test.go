package stellarsim_test

// Protocol 26, the protocol pubnet runs, through the official clients: the version every answer
// reports, frozen ledger keys (CAP-77) and the fee bump result shape of protocol 25 on. Each test
// names the stellar-core file and function it follows.

import (
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Every place the network names its protocol says 26: getVersionInfo, getNetwork,
// getLatestLedger, getLedgers and its header, Horizon's root and /ledgers.
func TestProtocol26EverywhereTheNetworkReportsOne(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	e.n.CloseLedger()
	v, err := e.rpc.GetVersionInfo(e.ctx)
	if err != nil || v.ProtocolVersion != 26 || !strings.HasPrefix(v.CaptiveCoreVersion, "stellar-core 26.") {
		t.Fatalf("getVersionInfo %+v %v, want protocol 26 and a stellar-core 26 build", v, err)
	}
	nw, err := e.rpc.GetNetwork(e.ctx)
	if err != nil || nw.ProtocolVersion != 26 {
		t.Fatalf("getNetwork %+v %v, want protocol 26", nw, err)
	}
	ll, err := e.rpc.GetLatestLedger(e.ctx)
	if err != nil || ll.ProtocolVersion != 26 {
		t.Fatalf("getLatestLedger %+v %v, want protocol 26", ll, err)
	}
	ls, err := e.rpc.GetLedgers(e.ctx, protocol.GetLedgersRequest{StartLedger: ll.Sequence, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	if err != nil || len(ls.Ledgers) != 1 {
		t.Fatalf("getLedgers %+v %v", ls, err)
	}
	var hdr xdr.LedgerHeaderHistoryEntry
	if err := xdr.SafeUnmarshalBase64(ls.Ledgers[0].LedgerHeader, &hdr); err != nil || hdr.Header.LedgerVersion != 26 {
		t.Fatalf("ledger header %v ledgerVersion %d, want 26", err, hdr.Header.LedgerVersion)
	}
	var meta xdr.LedgerCloseMeta
	if err := xdr.SafeUnmarshalBase64(ls.Ledgers[0].LedgerMetadata, &meta); err != nil || meta.LedgerHeaderHistoryEntry().Header.LedgerVersion != 26 {
		t.Fatalf("ledger close meta %v, want a header at protocol 26", err)
	}
	root, err := e.horizon().Root()
	if err != nil || root.CurrentProtocolVersion != 26 || root.CoreSupportedProtocolVersion != 26 || root.SupportedProtocolVersion < 26 {
		t.Fatalf("Horizon root %+v %v, want current and core protocol 26, Horizon's at least 26", root, err)
	}
	page, err := e.horizon().Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 1})
	if err != nil || len(page.Embedded.Records) != 1 || page.Embedded.Records[0].ProtocolVersion != 26 {
		t.Fatalf("Horizon /ledgers %+v %v, want protocol_version 26", page.Embedded.Records, err)
	}
}

func accountKey(t *testing.T, address string) xdr.LedgerKey {
	t.Helper()
	var id xdr.AccountId
	if err := id.SetAddress(address); err != nil {
		t.Fatal(err)
	}
	var k xdr.LedgerKey
	if err := k.SetAccount(id); err != nil {
		t.Fatal(err)
	}
	return k
}

// CAP-77 (TransactionFrame::accessesFrozenKey, PaymentOpFrame::doesAccessFrozenKey): a payment to
// a frozen account is refused at submission with txFROZEN_KEY_ACCESSED, before its sequence number
// is judged; unfrozen, the same envelope is accepted and lands.
func TestFrozenDestinationRefusedThenAcceptedOnceUnfrozen(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	src, dest := e.funded(10*xlm), e.funded(10*xlm)
	if err := e.n.FreezeAccount(dest.Address()); err != nil {
		t.Fatal(err)
	}
	tx := e.build(src, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if outer, _ := errorCode(t, e.send(b64(t, tx))); outer != xdr.TransactionResultCodeTxFrozenKeyAccessed {
		t.Fatalf("payment to a frozen account: %s, want txFROZEN_KEY_ACCESSED", outer)
	}
	// Judged before the sequence number (commonValidPreSeqNum): a stale one still reads frozen.
	stale := e.buildSeq(src, e.sequence(src.Address())+5, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if outer, _ := errorCode(t, e.send(b64(t, stale))); outer != xdr.TransactionResultCodeTxFrozenKeyAccessed {
		t.Fatalf("frozen destination with a bad sequence number: %s, want txFROZEN_KEY_ACCESSED first", outer)
	}
	if err := e.n.UnfreezeKeys(accountKey(t, dest.Address())); err != nil {
		t.Fatal(err)
	}
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("after unfreezing: %s, want PENDING", r.Status)
	}
	e.n.CloseLedger()
	if g := e.getTx(hashOf(t, tx, e.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("after unfreezing: %s, want SUCCESS", g.Status)
	}
}

// A credit payment reads both trustlines (PaymentOpFrame::doesAccessFrozenKey); a fee bump's
// frozen fee source is refused at the top level (FeeBumpTransactionFrame::checkValid), a frozen
// inner source inside txFEE_BUMP_INNER_FAILED.
func TestFrozenTrustlineAndFeeBumpSources(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := e.funded(10 * xlm)
	usd := e.n.IssueAsset("USD", issuer)
	src, dest, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	for _, a := range []string{src.Address(), dest.Address()} {
		if err := e.n.AddTrustline(a, usd, 1_000*xlm); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.n.Mint(src.Address(), usd, 100*xlm); err != nil {
		t.Fatal(err)
	}
	var id xdr.AccountId
	if err := id.SetAddress(dest.Address()); err != nil {
		t.Fatal(err)
	}
	asset, err := usd.XDR()
	if err != nil {
		t.Fatal(err)
	}
	var line xdr.LedgerKey
	if err := line.SetTrustline(id, asset.ToTrustLineAsset()); err != nil {
		t.Fatal(err)
	}
	if err := e.n.FreezeKeys(line); err != nil {
		t.Fatal(err)
	}
	credit := txnbuild.CreditAsset{Code: "USD", Issuer: issuer.Address()}
	tx := e.build(src, []txnbuild.Operation{payment(dest.Address(), credit, "1")}, 100, 0)
	if outer, _ := errorCode(t, e.send(b64(t, tx))); outer != xdr.TransactionResultCodeTxFrozenKeyAccessed {
		t.Fatalf("payment to a frozen trustline: %s, want txFROZEN_KEY_ACCESSED", outer)
	}
	// The same destination in XLM reads its account, not its trustline: accepted.
	native := e.build(src, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if err := e.n.UnfreezeKeys(line); err != nil {
		t.Fatal(err)
	}
	if err := e.n.FreezeAccount(payer.Address()); err != nil {
		t.Fatal(err)
	}
	fb := e.feeBump(native, payer, 100)
	if outer, inner := errorCode(t, e.send(b64(t, fb))); outer != xdr.TransactionResultCodeTxFrozenKeyAccessed || inner != 0 {
		t.Fatalf("fee bump with a frozen fee source: %s / %s, want txFROZEN_KEY_ACCESSED at the top level", outer, inner)
	}
	if err := e.n.UnfreezeKeys(accountKey(t, payer.Address())); err != nil {
		t.Fatal(err)
	}
	if err := e.n.FreezeAccount(src.Address()); err != nil {
		t.Fatal(err)
	}
	if outer, inner := errorCode(t, e.send(b64(t, e.feeBump(native, payer, 100)))); outer != xdr.TransactionResultCodeTxFeeBumpInnerFailed || inner != xdr.TransactionResultCodeTxFrozenKeyAccessed {
		t.Fatalf("fee bump with a frozen inner source: %s / %s, want txFEE_BUMP_INNER_FAILED / txFROZEN_KEY_ACCESSED", outer, inner)
	}
	if err := e.n.FreezeKeys(xdr.LedgerKey{Type: xdr.LedgerEntryTypeOffer, Offer: &xdr.LedgerKeyOffer{SellerId: id}}); err == nil {
		t.Fatal("an offer key was frozen; CAP-77 allows accounts, trustlines and contract entries only")
	}
}

// A key frozen while a transaction waits in the queue: the nomination judges it again
// (TxSetUtils::trimInvalid), so it is dropped and banned, never applied, its sequence number
// unused and no fee charged.
func TestFrozenWhileQueuedIsDroppedAtClose(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	src, dest := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(src, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("send: %s", r.Status)
	}
	seq, bal := e.sequence(src.Address()), e.balance(src.Address(), stellarsim.Asset{})
	if err := e.n.FreezeAccount(dest.Address()); err != nil {
		t.Fatal(err)
	}
	e.n.CloseLedger()
	if g := e.getTx(hashOf(t, tx, e.n.Passphrase())); g.Status != protocol.TransactionStatusNotFound {
		t.Fatalf("frozen while queued: %s, want NOT_FOUND", g.Status)
	}
	if e.sequence(src.Address()) != seq || e.balance(src.Address(), stellarsim.Asset{}) != bal {
		t.Fatal("a dropped transaction consumed its sequence number or was charged")
	}
}

// From protocol 25 a fee bump's inner result carries feeCharged 0, the whole fee in the outer one
// (FeeBumpTransactionFrame::processFeeSeqNum: innerFeeCharged only before V_25;
// FeeBumpMutableTransactionResult::finalizeFeeRefund).
func TestFeeBumpInnerResultChargesNothing(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	src, dest, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	fb := e.feeBump(e.build(src, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0), payer, 100)
	if r := e.send(b64(t, fb)); r.Status != "PENDING" {
		t.Fatalf("send: %s", r.Status)
	}
	e.n.CloseLedger()
	g := e.getTx(hashOf(t, fb.InnerTransaction(), e.n.Passphrase()))
	if g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("fee bump: %s", g.Status)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(g.ResultXDR, &res); err != nil {
		t.Fatalf("result %v", err)
	}
	p, ok := res.Result.GetInnerResultPair()
	if !ok {
		t.Fatalf("result %s without an inner result pair", res.Result.Code)
	}
	if res.FeeCharged != 200 || p.Result.FeeCharged != 0 {
		t.Fatalf("feeCharged outer %d inner %d, want 200 and 0", res.FeeCharged, p.Result.FeeCharged)
	}
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshalBase64(g.ResultMetaXDR, &meta); err != nil || meta.V != 4 {
		t.Fatalf("meta %v v%d, want TransactionMeta v4", err, meta.V)
	}
}

// Protocol 25 (TransactionFrame::commonValidPreSeqNum, validateSorobanMemo): an InvokeHostFunction
// transaction with a memo is txSOROBAN_INVALID; the same call without one is accepted.
func TestSorobanInvocationWithMemoIsInvalid(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	op := v.invokeOp("deposit", v.operator.Address(), 5)
	sim := v.simulate(v.operator, op)
	if sim.Error != "" {
		t.Fatalf("simulate: %s", sim.Error)
	}
	plain := v.assemble(op, sim)
	acct, err := v.rpc.LoadAccount(v.ctx, v.operator.Address())
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := acct.GetSequenceNumber()
	withMemo, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: v.operator.Address(), Sequence: seq + 1},
		Operations:    []txnbuild.Operation{op},
		BaseFee:       100,
		Memo:          txnbuild.MemoText("invoice 7"),
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, v.clock.Now().Unix()+300)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if withMemo, err = withMemo.Sign(v.n.Passphrase(), v.operator); err != nil {
		t.Fatal(err)
	}
	if outer, _ := errorCode(t, v.send(b64(t, withMemo))); outer != xdr.TransactionResultCodeTxSorobanInvalid {
		t.Fatalf("invocation with a memo: %s, want txSOROBAN_INVALID", outer)
	}
	if g := v.land(plain, hashOf(t, plain, v.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("the same call without a memo: %s", g.Status)
	}
}

// Protocol 26 (TxSetFrame.cpp, useCrossPhaseFeeMap; TxSetUtils::getInvalidTxListWithErrors with
// one accountFeeMap, classic phase first): a fee account that can pay its classic fee bump but not
// that and its Soroban fee bump keeps the classic one and loses the Soroban one. Judging the
// phases apart (before 26) would keep both; judging them as one set would drop both.
func TestFeeSourceCheckSpansPhasesClassicFirst(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	a, dest := v.funded(10*xlm), v.funded(10*xlm)
	op := v.invokeOp("deposit", dest.Address(), 5)
	sim := v.simulate(v.operator, op)
	if sim.Error != "" {
		t.Fatalf("simulate: %s", sim.Error)
	}
	invocation := v.assemble(op, sim)
	payment1 := v.build(a, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	// The fee account: its reserve, both full fees and 1 XLM to send away.
	payer := v.funded(1)
	classic := v.feeBump(payment1, payer, 100)
	soroban := v.feeBump(invocation, payer, 100)
	f1, f2 := classic.ToXDR().FeeBumpFee(), soroban.ToXDR().FeeBumpFee()
	payer = keypair.MustRandom()
	if err := v.n.CreateAccount(payer.Address(), reserve+f1+f2+xlm); err != nil {
		t.Fatal(err)
	}
	classic, soroban = v.feeBump(payment1, payer, 100), v.feeBump(invocation, payer, 100)
	if err := v.n.AddFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Count: 2, Ledgers: 1}); err != nil {
		t.Fatal(err)
	}
	for _, fb := range []*txnbuild.FeeBumpTransaction{classic, soroban} {
		if r := v.send(b64(t, fb)); r.Status != "PENDING" {
			t.Fatalf("fee bump: %+v", r)
		}
	}
	// The fee account sends 1 XLM away in the next ledger, for a fee of 100: then it holds
	// f1 + f2 - 100 above its reserve, enough for the classic fee bump alone.
	drain := v.build(payer, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if g := v.land(drain, hashOf(t, drain, v.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("drain: %s", g.Status)
	}
	v.clock.Advance(5 * time.Second)
	v.n.CloseLedger()
	if g := v.getTx(hashOf(t, payment1, v.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("classic fee bump: %s, want SUCCESS (its phase is judged first, on its own fees)", g.Status)
	}
	if g := v.getTx(hashOf(t, invocation, v.n.Passphrase())); g.Status != protocol.TransactionStatusNotFound {
		t.Fatalf("Soroban fee bump: %s, want NOT_FOUND (the classic fee counts against it)", g.Status)
	}
}

// The admin routes of the Horizon profiles and the frozen keys, through HTTP and horizonclient.
func TestAdminHorizonVersionAndFrozenKeys(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	var hv struct {
		Profile  string   `json:"horizon_version"`
		Release  string   `json:"release"`
		Profiles []string `json:"profiles"`
	}
	if code := e.admin("GET", "/_sim/horizon_version", "", &hv); code != 200 || hv.Profile != "current" || hv.Release != "28.0.0" || len(hv.Profiles) != 5 {
		t.Fatalf("GET horizon_version %d %+v", code, hv)
	}
	if code := e.admin("PUT", "/_sim/horizon_version", `{"horizon_version":"v25"}`, &hv); code != 200 || hv.Release != "25.1.0" {
		t.Fatalf("PUT horizon_version %d %+v", code, hv)
	}
	root, err := e.horizon().Root()
	if err != nil || root.HorizonVersion != "25.1.0-stellarsim" || root.SupportedProtocolVersion != 25 || root.CurrentProtocolVersion != 26 {
		t.Fatalf("root under v25: %+v %v", root, err)
	}
	if code := e.admin("PUT", "/_sim/horizon_version", `{"horizon_version":"v2"}`, nil); code != 400 {
		t.Fatalf("unknown profile: %d, want 400", code)
	}
	if code := e.admin("PUT", "/_sim/horizon_version", `{}`, nil); code != 400 {
		t.Fatalf("no profile: %d, want 400", code)
	}

	acct := e.funded(10 * xlm)
	key, err := xdr.MarshalBase64(accountKey(t, acct.Address()))
	if err != nil {
		t.Fatal(err)
	}
	var fk struct {
		Frozen []string `json:"frozen"`
	}
	if code := e.admin("PUT", "/_sim/frozen_keys", `{"freeze":["`+key+`"]}`, &fk); code != 200 || len(fk.Frozen) != 1 || fk.Frozen[0] != key {
		t.Fatalf("PUT frozen_keys %d %+v", code, fk)
	}
	tx := e.build(acct, []txnbuild.Operation{payment(e.funded(xlm).Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if outer, _ := errorCode(t, e.send(b64(t, tx))); outer != xdr.TransactionResultCodeTxFrozenKeyAccessed {
		t.Fatalf("frozen source: %s, want txFROZEN_KEY_ACCESSED", outer)
	}
	if code := e.admin("PUT", "/_sim/frozen_keys", `{"freeze":["not xdr"]}`, nil); code != 400 {
		t.Fatalf("bad key: %d, want 400", code)
	}
	if code := e.admin("PUT", "/_sim/frozen_keys", `{"unfreeze":["`+key+`"]}`, &fk); code != 200 || len(fk.Frozen) != 0 {
		t.Fatalf("unfreeze %d %+v", code, fk)
	}
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("after unfreezing: %s", r.Status)
	}
}

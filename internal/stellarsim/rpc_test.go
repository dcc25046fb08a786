package stellarsim_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

func TestPaymentLands(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(100*xlm), e.funded(100*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "10")}, 0, 0)
	hash := hashOf(t, tx, e.n.Passphrase())

	r := e.send(b64(t, tx))
	if r.Status != "PENDING" || r.Hash != hash {
		t.Fatalf("send: %+v", r)
	}
	nf := e.getTx(hash)
	if nf.Status != "NOT_FOUND" || nf.LatestLedger != 1 || nf.OldestLedger != 1 || nf.LatestLedgerCloseTime == 0 || nf.OldestLedgerCloseTime == 0 {
		t.Fatalf("before close: %+v", nf)
	}
	e.clock.Advance(5 * time.Second)
	l := e.n.CloseLedger()
	if l.Sequence != 2 || !l.CloseTime.Equal(e.clock.Now()) {
		t.Fatalf("closed %+v, clock %v", l, e.clock.Now())
	}
	got := e.getTx(hash)
	if got.Status != "SUCCESS" || got.Ledger != 2 || got.LedgerCloseTime != l.CloseTime.Unix() || got.TransactionHash != hash ||
		got.ApplicationOrder != 1 || got.FeeBump || got.EnvelopeXDR == "" {
		t.Fatalf("after close: %+v", got)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(got.ResultXDR, &res); err != nil || res.Result.Code != xdr.TransactionResultCodeTxSuccess || res.FeeCharged != 100 {
		t.Fatalf("result %v %+v", err, res)
	}
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshalBase64(got.ResultMetaXDR, &meta); err != nil {
		t.Fatalf("meta: %v", err)
	}
	if bal := e.balance(a.Address(), stellarsim.Native); bal != 90*xlm-100 {
		t.Fatalf("source balance %d", bal)
	}
	if bal := e.balance(b.Address(), stellarsim.Native); bal != 110*xlm {
		t.Fatalf("destination balance %d", bal)
	}
	acct, err := e.rpc.LoadAccount(e.ctx, a.Address())
	if err != nil {
		t.Fatal(err)
	}
	if seq, _ := acct.GetSequenceNumber(); seq != tx.SequenceNumber() {
		t.Fatalf("sequence %d, want %d", seq, tx.SequenceNumber())
	}
	applied := e.n.Applied()
	if len(applied) != 1 || applied[0].Hash != hash || applied[0].Status != "SUCCESS" || applied[0].Ledger != 2 ||
		applied[0].Ops[0].Type != "payment" || applied[0].Ops[0].Amount != 10*xlm || applied[0].OpResults[0] != "op_success" {
		t.Fatalf("applied %+v", applied)
	}
	envs := e.n.Envelopes()
	if len(envs) != 1 || envs[0].Status != "PENDING" || !envs[0].Accepted || envs[0].Outcome == "" {
		t.Fatalf("envelopes %+v", envs)
	}
}

func TestRefusedWithCode(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(100*xlm), e.funded(100*xlm)
	mallory := keypair.MustRandom()
	pay := []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}
	seqA, _ := e.n.Account(a.Address())
	poor := e.funded(1 * xlm) // exactly the 2-reserve minimum: cannot pay a fee

	cases := []struct {
		name string
		tx   *txnbuild.Transaction
		want xdr.TransactionResultCode
	}{
		{"bad signature", e.buildSeq(a, seqA.Sequence+1, pay, 0, 0, mallory), xdr.TransactionResultCodeTxBadAuth},
		{"no signature of op source", e.buildSeq(a, seqA.Sequence+1, []txnbuild.Operation{
			&txnbuild.Payment{Destination: a.Address(), Asset: txnbuild.NativeAsset{}, Amount: "1", SourceAccount: b.Address()},
		}, 0, 0), xdr.TransactionResultCodeTxFailed},
		{"extra signature", e.buildSeq(a, seqA.Sequence+1, pay, 0, 0, a, mallory), xdr.TransactionResultCodeTxBadAuthExtra},
		{"sequence too high", e.buildSeq(a, seqA.Sequence+2, pay, 0, 0), xdr.TransactionResultCodeTxBadSeq},
		{"sequence used", e.buildSeq(a, seqA.Sequence, pay, 0, 0), xdr.TransactionResultCodeTxBadSeq},
		{"expired", e.buildSeq(a, seqA.Sequence+1, pay, 0, e.clock.Now().Unix()-1), xdr.TransactionResultCodeTxTooLate},
		{"missing source", e.buildSeq(mallory, 1, pay, 0, 0), xdr.TransactionResultCodeTxNoAccount},
		{"unfunded source", e.buildSeq(poor, 4294967297, pay, 0, 0), xdr.TransactionResultCodeTxInsufficientBalance},
		{"negative amount", e.buildSeq(a, seqA.Sequence+1, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "0")}, 0, 0), xdr.TransactionResultCodeTxFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.send(b64(t, c.tx))
			if code, _ := errorCode(t, r); code != c.want {
				t.Fatalf("code %s, want %s", stellarsim.TxCodeName(code), stellarsim.TxCodeName(c.want))
			}
		})
	}

	// Low fee needs a network whose base fee is above txnbuild's minimum of 100.
	e2 := newEnv(t, stellarsim.Options{BaseFee: 200})
	c := e2.funded(10 * xlm)
	r := e2.send(b64(t, e2.build(c, []txnbuild.Operation{payment(e2.n.Root().Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)))
	if code, _ := errorCode(t, r); code != xdr.TransactionResultCodeTxInsufficientFee {
		t.Fatalf("low fee: %s", stellarsim.TxCodeName(code))
	}

	e.n.CloseLedger()
	e2.n.CloseLedger()
	if len(e.n.Applied()) != 0 || len(e2.n.Applied()) != 0 {
		t.Fatalf("refused transactions applied: %+v", e.n.Applied())
	}
	if after, _ := e.n.Account(a.Address()); after.Sequence != seqA.Sequence || after.Balance != 100*xlm {
		t.Fatalf("source changed: %+v", after)
	}
}

func TestUnderfundedCreditPaymentFails(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := keypair.MustRandom()
	usd := e.n.IssueAsset("USD", issuer)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	for _, k := range []*keypair.Full{a, b} {
		if err := e.n.AddTrustline(k.Address(), usd, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.n.Mint(a.Address(), usd, 5*xlm); err != nil {
		t.Fatal(err)
	}
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), usd.Txnbuild(), "10")}, 0, 0)
	hash := hashOf(t, tx, e.n.Passphrase())
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("send %+v", r)
	}
	e.n.CloseLedger()
	got := e.getTx(hash)
	if got.Status != "FAILED" {
		t.Fatalf("status %s", got.Status)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(got.ResultXDR, &res); err != nil {
		t.Fatal(err)
	}
	ops, _ := res.OperationResults()
	if res.Result.Code != xdr.TransactionResultCodeTxFailed || len(ops) != 1 ||
		ops[0].Tr.PaymentResult.Code != xdr.PaymentResultCodePaymentUnderfunded || res.FeeCharged != 100 {
		t.Fatalf("result %+v", res)
	}
	if bal := e.balance(a.Address(), stellarsim.Native); bal != 10*xlm-100 {
		t.Fatalf("fee not charged: %d", bal)
	}
	if bal := e.balance(a.Address(), usd); bal != 5*xlm {
		t.Fatalf("USD moved: %d", bal)
	}
	if acct, _ := e.n.Account(a.Address()); acct.Sequence != tx.SequenceNumber() {
		t.Fatalf("sequence not consumed: %d", acct.Sequence)
	}
	if ap := e.n.Applied(); len(ap) != 1 || ap[0].Status != "FAILED" || ap[0].OpResults[0] != "op_underfunded" || ap[0].ResultCode != "txFAILED" {
		t.Fatalf("applied %+v", ap)
	}
}

func TestCreditPaymentErrors(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := keypair.MustRandom()
	usd := e.n.IssueAsset("USD", issuer)
	a, b, c := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	_ = e.n.AddTrustline(a.Address(), usd, 0)
	_ = e.n.AddTrustline(b.Address(), usd, 3*xlm)
	_ = e.n.Mint(a.Address(), usd, 5*xlm)
	cases := []struct {
		src  *keypair.Full
		to   string
		want string
	}{
		{a, c.Address(), "op_no_trust"},
		{a, keypair.MustRandom().Address(), "op_no_destination"},
		{a, b.Address(), "op_line_full"},
		{c, a.Address(), "op_src_no_trust"},
	}
	for _, cs := range cases {
		tx := e.build(cs.src, []txnbuild.Operation{payment(cs.to, usd.Txnbuild(), "4")}, 0, 0)
		if r := e.send(b64(t, tx)); r.Status != "PENDING" {
			t.Fatalf("%s: %+v", cs.want, r)
		}
		e.n.CloseLedger()
		ap, ok := e.n.Transaction(hashOf(t, tx, e.n.Passphrase()))
		if !ok || ap.Status != "FAILED" || ap.OpResults[0] != cs.want {
			t.Fatalf("want %s, got %+v", cs.want, ap)
		}
	}
	// The issuer mints by paying.
	tx := e.build(issuer, []txnbuild.Operation{payment(b.Address(), usd.Txnbuild(), "2")}, 0, 0)
	e.send(b64(t, tx))
	e.n.CloseLedger()
	if bal := e.balance(b.Address(), usd); bal != 2*xlm {
		t.Fatalf("minted %d", bal)
	}
}

func TestResendOfLandedEnvelope(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(100*xlm), e.funded(100*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	env := b64(t, tx)
	if r := e.send(env); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	if r := e.send(env); r.Status != "DUPLICATE" {
		t.Fatalf("queued resend: %+v", r)
	}
	other := e.buildSeq(a, tx.SequenceNumber(), []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	if r := e.send(b64(t, other)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("second tx from the same source: %+v", r)
	}
	// Core bans an applied transaction while the last closed ledger is
	// N..N+8 (TransactionQueue::removeApplied, then shift), then its
	// sequence number is used.
	landed := e.n.CloseLedger().Sequence
	for i := 0; i < 9; i++ {
		if r := e.send(env); r.Status != "TRY_AGAIN_LATER" {
			t.Fatalf("resend %d ledgers after inclusion: %+v", i, r)
		}
		e.n.CloseLedger()
	}
	if latest := e.n.LatestLedger().Sequence; latest != landed+9 {
		t.Fatalf("latest %d", latest)
	}
	r := e.send(env)
	if code, _ := errorCode(t, r); code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("resend after ban: %s", stellarsim.TxCodeName(code))
	}
	e.n.CloseLedger()
	if n := len(e.n.Applied()); n != 1 {
		t.Fatalf("applied %d times", n)
	}
}

func TestFeeBump(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	if err != nil {
		t.Fatal(err)
	}
	fb, err = fb.Sign(e.n.Passphrase(), payer)
	if err != nil {
		t.Fatal(err)
	}
	outerHash, _ := fb.HashHex(e.n.Passphrase())
	innerHash := hashOf(t, inner, e.n.Passphrase())
	r := e.send(b64(t, fb))
	if r.Status != "PENDING" || r.Hash != outerHash {
		t.Fatalf("send %+v", r)
	}
	if got := e.getTx(innerHash); got.Status != "NOT_FOUND" {
		t.Fatalf("before close: %+v", got)
	}
	e.n.CloseLedger()
	for _, h := range []string{outerHash, innerHash} {
		got := e.getTx(h)
		if got.Status != "SUCCESS" || !got.FeeBump || got.TransactionHash != outerHash || got.Ledger != 2 {
			t.Fatalf("by %s: %+v", h, got)
		}
		var res xdr.TransactionResult
		if err := xdr.SafeUnmarshalBase64(got.ResultXDR, &res); err != nil || res.Result.Code != xdr.TransactionResultCodeTxFeeBumpInnerSuccess {
			t.Fatalf("result %v %+v", err, res)
		}
		if hex := res.Result.InnerResultPair.TransactionHash.HexString(); hex != innerHash {
			t.Fatalf("inner pair hash %s", hex)
		}
	}
	if bal := e.balance(payer.Address(), stellarsim.Native); bal != 10*xlm-200 {
		t.Fatalf("fee source paid %d", 10*xlm-bal)
	}
	if bal := e.balance(a.Address(), stellarsim.Native); bal != 9*xlm {
		t.Fatalf("inner source balance %d", bal)
	}
	// The inner transaction alone is now a stale sequence number.
	if code, _ := errorCode(t, e.send(b64(t, inner))); code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("inner resend: %s", stellarsim.TxCodeName(code))
	}

	// An expired inner transaction is reported inside txFEE_BUMP_INNER_FAILED.
	late := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, e.clock.Now().Unix()-10)
	fb2, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: late, FeeAccount: payer.Address(), BaseFee: 200})
	fb2, _ = fb2.Sign(e.n.Passphrase(), payer)
	outer, innerCode := errorCode(t, e.send(b64(t, fb2)))
	if outer != xdr.TransactionResultCodeTxFeeBumpInnerFailed || innerCode != xdr.TransactionResultCodeTxTooLate {
		t.Fatalf("got %s / %s", stellarsim.TxCodeName(outer), stellarsim.TxCodeName(innerCode))
	}
}

func TestFeeBumpReplacesQueuedAtTenTimesFee(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	if r := e.send(b64(t, inner)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	bump := func(fee int64) *txnbuild.FeeBumpTransaction {
		fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: fee})
		if err != nil {
			t.Fatal(err)
		}
		fb, _ = fb.Sign(e.n.Passphrase(), payer)
		return fb
	}
	// Below 10x the queued fee rate core refuses the replacement.
	if code, _ := errorCode(t, e.send(b64(t, bump(500)))); code != xdr.TransactionResultCodeTxInsufficientFee {
		t.Fatalf("5x bump: %s", stellarsim.TxCodeName(code))
	}
	fb := bump(1000)
	if r := e.send(b64(t, fb)); r.Status != "PENDING" {
		t.Fatalf("10x bump: %+v", r)
	}
	e.n.CloseLedger()
	ap := e.n.Applied()
	outer, _ := fb.HashHex(e.n.Passphrase())
	if len(ap) != 1 || ap[0].FeeBumpHash != outer || ap[0].FeeSource != payer.Address() {
		t.Fatalf("applied %+v", ap)
	}
}

func TestRetentionWindow(t *testing.T) {
	e := newEnv(t, stellarsim.Options{RetentionLedgers: 5})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	hash := hashOf(t, tx, e.n.Passphrase())
	e.send(b64(t, tx))
	landed := e.n.CloseLedger().Sequence // 2
	for i := 0; i < 4; i++ {
		e.n.CloseLedger()
	}
	if got := e.getTx(hash); got.Status != "SUCCESS" || got.OldestLedger != 2 {
		t.Fatalf("inside window: %+v", got)
	}
	e.n.CloseLedger()
	got := e.getTx(hash)
	if got.Status != "NOT_FOUND" || got.OldestLedger != landed+1 || got.LatestLedger != landed+5 || got.OldestLedgerCloseTime == 0 {
		t.Fatalf("outside window: %+v", got)
	}
	h, err := e.rpc.GetHealth(e.ctx)
	if err != nil || h.LedgerRetentionWindow != 5 || h.OldestLedger != landed+1 {
		t.Fatalf("health %v %+v", err, h)
	}
}

func TestExpiredWhileQueuedIsDroppedNotApplied(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	maxTime := e.clock.Now().Add(10 * time.Second).Unix()
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, maxTime)
	hash := hashOf(t, tx, e.n.Passphrase())
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.clock.Advance(11 * time.Second)
	closed := e.n.CloseLedger()
	if closed.CloseTime.Unix() <= maxTime {
		t.Fatalf("close time %v not after maxTime", closed.CloseTime)
	}
	if got := e.getTx(hash); got.Status != "NOT_FOUND" || got.OldestLedger > 1 {
		t.Fatalf("%+v", got)
	}
	if len(e.n.Applied()) != 0 || e.n.Queued() != 0 {
		t.Fatal("expired transaction applied or still queued")
	}
	if acct, _ := e.n.Account(a.Address()); acct.Balance != 10*xlm {
		t.Fatalf("fee charged for a dropped tx: %+v", acct)
	}
}

func TestSponsoredChannelAccount(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	sponsor := e.funded(10 * xlm)
	channel := keypair.MustRandom()
	tx := e.build(sponsor, []txnbuild.Operation{
		&txnbuild.BeginSponsoringFutureReserves{SponsoredID: channel.Address()},
		&txnbuild.CreateAccount{Destination: channel.Address(), Amount: "0"},
		&txnbuild.EndSponsoringFutureReserves{SourceAccount: channel.Address()},
	}, 0, 0, sponsor, channel)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.n.CloseLedger()
	ap := e.n.Applied()
	if len(ap) != 1 || ap[0].Status != "SUCCESS" {
		t.Fatalf("%+v", ap)
	}
	ch, ok := e.n.Account(channel.Address())
	sp, _ := e.n.Account(sponsor.Address())
	if !ok || ch.Balance != 0 || ch.NumSponsored != 2 || sp.NumSponsoring != 2 || ch.Sequence != int64(2)<<32 {
		t.Fatalf("channel %+v sponsor %+v", ch, sp)
	}
	// Without the End, the sponsorship is left open: txBAD_SPONSORSHIP, nothing created.
	other := keypair.MustRandom()
	tx = e.build(sponsor, []txnbuild.Operation{
		&txnbuild.BeginSponsoringFutureReserves{SponsoredID: other.Address()},
		&txnbuild.CreateAccount{Destination: other.Address(), Amount: "0"},
	}, 0, 0)
	e.send(b64(t, tx))
	e.n.CloseLedger()
	if a, ok := e.n.Transaction(hashOf(t, tx, e.n.Passphrase())); !ok || a.Status != "FAILED" || a.ResultCode != "txBAD_SPONSORSHIP" {
		t.Fatalf("%+v", a)
	}
	if _, ok := e.n.Account(other.Address()); ok {
		t.Fatal("account created despite failed transaction")
	}
	// Unsponsored creation below two reserves fails with op_low_reserve.
	tx = e.build(sponsor, []txnbuild.Operation{&txnbuild.CreateAccount{Destination: other.Address(), Amount: "0.5"}}, 0, 0)
	e.send(b64(t, tx))
	e.n.CloseLedger()
	if a, _ := e.n.Transaction(hashOf(t, tx, e.n.Passphrase())); a.Status != "FAILED" || a.OpResults[0] != "op_low_reserve" {
		t.Fatalf("%+v", a)
	}
}

func TestChangeTrustAndLedgerEntries(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := keypair.MustRandom()
	usd := e.n.IssueAsset("USDC", issuer)
	a := e.funded(10 * xlm)
	ct, err := usd.Txnbuild().(txnbuild.CreditAsset).ToChangeTrustAsset()
	if err != nil {
		t.Fatal(err)
	}
	tx := e.build(a, []txnbuild.Operation{&txnbuild.ChangeTrust{Line: ct, Limit: "1000"}}, 0, 0)
	e.send(b64(t, tx))
	e.n.CloseLedger()
	if ap := e.n.Applied(); len(ap) != 1 || ap[0].Status != "SUCCESS" {
		t.Fatalf("%+v", ap)
	}
	var lk xdr.LedgerKey
	xa, _ := usd.XDR()
	if err := lk.SetTrustline(xdr.MustAddress(a.Address()), xa.ToTrustLineAsset()); err != nil {
		t.Fatal(err)
	}
	k64, _ := xdr.MarshalBase64(lk)
	resp, err := e.rpc.GetLedgerEntries(e.ctx, protocol.GetLedgerEntriesRequest{Keys: []string{k64}})
	if err != nil || len(resp.Entries) != 1 {
		t.Fatalf("%v %+v", err, resp)
	}
	var data xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &data); err != nil || data.TrustLine == nil ||
		data.TrustLine.Limit != xdr.Int64(1000*xlm) || resp.Entries[0].LastModifiedLedger != 2 {
		t.Fatalf("%v %+v", err, data)
	}
	if info, _ := e.n.Account(a.Address()); info.NumSubEntries != 1 {
		t.Fatalf("%+v", info)
	}
}

func TestInfoMethods(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	nw, err := e.rpc.GetNetwork(e.ctx)
	if err != nil || nw.Passphrase != "Standalone Network ; February 2017" || nw.ProtocolVersion == 0 {
		t.Fatalf("%v %+v", err, nw)
	}
	e.clock.Advance(time.Minute)
	l := e.n.CloseLedger()
	ll, err := e.rpc.GetLatestLedger(e.ctx)
	if err != nil || ll.Sequence != l.Sequence || ll.LedgerCloseTime != l.CloseTime.Unix() || ll.Hash == "" {
		t.Fatalf("%v %+v", err, ll)
	}
	// No transaction in the window: stellar-rpc's fee window answers zeros (feewindow.go,
	// computeFeeDistribution).
	fs, err := e.rpc.GetFeeStats(e.ctx)
	if err != nil || fs.InclusionFee.Max != 0 || fs.InclusionFee.LedgerCount != 0 || fs.LatestLedger != l.Sequence {
		t.Fatalf("%v %+v", err, fs)
	}
	h, err := e.rpc.GetHealth(e.ctx)
	if err != nil || h.Status != "healthy" || h.LatestLedger != 2 || h.OldestLedger != 1 || h.LedgerRetentionWindow != 120960 {
		t.Fatalf("%v %+v", err, h)
	}
	// Close times never go backwards and always advance by at least a second.
	e.clock.Advance(-time.Hour)
	if l2 := e.n.CloseLedger(); l2.CloseTime.Unix() != l.CloseTime.Unix()+1 {
		t.Fatalf("close time %v after %v", l2.CloseTime, l.CloseTime)
	}
}

func TestMalformedRequests(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	if _, err := e.rpc.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: "not xdr"}); err == nil {
		t.Fatal("malformed XDR accepted")
	}
	if _, err := e.rpc.GetTransaction(e.ctx, protocol.GetTransactionRequest{Hash: "abc"}); err == nil {
		t.Fatal("short hash accepted")
	}
	if _, err := e.rpc.GetLedgerEntries(e.ctx, protocol.GetLedgerEntriesRequest{Keys: []string{"!!"}}); err == nil {
		t.Fatal("bad key accepted")
	}
	if _, err := e.rpc.GetEvents(e.ctx, protocol.GetEventsRequest{}); err == nil {
		t.Fatal("getEvents without a start or cursor answered")
	}
	if envs := e.n.Envelopes(); len(envs) != 1 || envs[0].Status != "INVALID" {
		t.Fatalf("%+v", envs)
	}
}

func TestInvokeHostFunctionRefused(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a := e.funded(10 * xlm)
	op := &txnbuild.InvokeHostFunction{HostFunction: xdr.HostFunction{
		Type: xdr.HostFunctionTypeHostFunctionTypeUploadContractWasm,
		Wasm: &[]byte{0, 1, 2},
	}}
	tx := e.build(a, []txnbuild.Operation{op}, 0, 0)
	if code, _ := errorCode(t, e.send(b64(t, tx))); code != xdr.TransactionResultCodeTxMalformed {
		t.Fatalf("got %s", stellarsim.TxCodeName(code))
	}
}

func TestJSONRPCProtocol(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(e.n.RPCURL(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cases := []struct{ body, want string }{
		{`{`, `"code":-32700`},
		{`{"jsonrpc":"1.0","id":1,"method":"getHealth"}`, `"code":-32600`},
		{`{"jsonrpc":"2.0","id":1,"method":"nope"}`, `"code":-32601`},
		{`{"jsonrpc":"2.0","id":1,"method":"getTransaction","params":[1]}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":1,"method":"sendTransaction","params":{"transaction":"AAAA"}}`, `"code":-32602`},
		{`{"jsonrpc":"2.0","id":"x","method":"getHealth"}`, `"id":"x","result":{"status":"healthy"`},
		{`[{"jsonrpc":"2.0","id":1,"method":"getHealth"},{"jsonrpc":"2.0","id":2,"method":"getNetwork"}]`, `"passphrase":"Standalone Network ; February 2017"`},
	}
	for _, c := range cases {
		code, body := post(c.body)
		if code != 200 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s", c.body, code, body)
		}
	}
	if _, err := e.rpc.LoadAccount(e.ctx, keypair.MustRandom().Address()); err == nil {
		t.Fatal("missing account loaded")
	}
}

func TestLedgerBoundsAndOpSourceMissing(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	acct, _ := e.n.Account(a.Address())
	build := func(lb *txnbuild.LedgerBounds, ops []txnbuild.Operation, signers ...*keypair.Full) *txnbuild.Transaction {
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
			SourceAccount: &txnbuild.SimpleAccount{AccountID: a.Address(), Sequence: acct.Sequence + 1},
			Operations:    ops,
			BaseFee:       100,
			Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(300), LedgerBounds: lb},
		})
		if err != nil {
			t.Fatal(err)
		}
		tx, _ = tx.Sign(e.n.Passphrase(), signers...)
		return tx
	}
	pay := []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}
	// txnbuild's NewTimeout is relative to the real clock; move the fake one there.
	e.clock.Advance(time.Until(e.clock.Now()) * -1)
	if code, _ := errorCode(t, e.send(b64(t, build(&txnbuild.LedgerBounds{MinLedger: 5}, pay, a)))); code != xdr.TransactionResultCodeTxTooEarly {
		t.Fatalf("min ledger: %s", stellarsim.TxCodeName(code))
	}
	if code, _ := errorCode(t, e.send(b64(t, build(&txnbuild.LedgerBounds{MinLedger: 0, MaxLedger: 2}, pay, a)))); code != xdr.TransactionResultCodeTxTooLate {
		t.Fatalf("max ledger: %s", stellarsim.TxCodeName(code))
	}
	// An operation whose source account does not exist fails at apply with
	// op_no_source_account (its signature is still required at submission).
	ghost := keypair.MustRandom()
	tx := build(nil, []txnbuild.Operation{&txnbuild.Payment{Destination: b.Address(), Asset: txnbuild.NativeAsset{}, Amount: "1", SourceAccount: ghost.Address()}}, a, ghost)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.n.CloseLedger()
	if ap, _ := e.n.Transaction(hashOf(t, tx, e.n.Passphrase())); ap.Status != "FAILED" || ap.OpResults[0] != "op_no_source_account" {
		t.Fatalf("%+v", ap)
	}
}

func TestSponsoredTrustline(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := keypair.MustRandom()
	usd := e.n.IssueAsset("USD", issuer)
	sponsor := e.funded(10 * xlm)
	poor, err := e.n.CreateKeypair(0) // a 0 XLM account cannot hold a trustline on its own
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := usd.Txnbuild().(txnbuild.CreditAsset).ToChangeTrustAsset()
	tx := e.build(sponsor, []txnbuild.Operation{
		&txnbuild.BeginSponsoringFutureReserves{SponsoredID: poor.Address()},
		&txnbuild.ChangeTrust{Line: ct, Limit: "100", SourceAccount: poor.Address()},
		&txnbuild.EndSponsoringFutureReserves{SourceAccount: poor.Address()},
	}, 0, 0, sponsor, poor)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.n.CloseLedger()
	if ap, _ := e.n.Transaction(hashOf(t, tx, e.n.Passphrase())); ap.Status != "SUCCESS" {
		t.Fatalf("%+v", ap)
	}
	p, _ := e.n.Account(poor.Address())
	s, _ := e.n.Account(sponsor.Address())
	if p.NumSubEntries != 1 || p.NumSponsored != 1 || s.NumSponsoring != 1 {
		t.Fatalf("%+v %+v", p, s)
	}
	if err := e.n.Mint(poor.Address(), usd, 5*xlm); err != nil {
		t.Fatal(err)
	}
}

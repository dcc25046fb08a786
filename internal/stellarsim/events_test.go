package stellarsim_test

import (
	"errors"
	"testing"

	"github.com/creachadair/jrpc2"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/toid"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

func accountSeg(t *testing.T, address string) protocol.SegmentFilter {
	t.Helper()
	id := xdr.MustAddress(address)
	v := xdr.ScVal{Type: xdr.ScValTypeScvAddress, Address: &xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeAccount, AccountId: &id}}
	return protocol.SegmentFilter{ScVal: &v}
}

func symbolSeg(s string) protocol.SegmentFilter {
	sym := xdr.ScSymbol(s)
	return protocol.SegmentFilter{ScVal: &xdr.ScVal{Type: xdr.ScValTypeScvSymbol, Sym: &sym}}
}

func wildSeg(w string) protocol.SegmentFilter { return protocol.SegmentFilter{Wildcard: &w} }

// decodedEvent is an EventInfo's topics and value decoded.
type decodedEvent struct {
	info   protocol.EventInfo
	topics []xdr.ScVal
	value  xdr.ScVal
}

func decodeEvents(t *testing.T, evs []protocol.EventInfo) []decodedEvent {
	t.Helper()
	var out []decodedEvent
	for _, e := range evs {
		d := decodedEvent{info: e}
		for _, s := range e.TopicXDR {
			var v xdr.ScVal
			if err := xdr.SafeUnmarshalBase64(s, &v); err != nil {
				t.Fatal(err)
			}
			d.topics = append(d.topics, v)
		}
		if err := xdr.SafeUnmarshalBase64(e.ValueXDR, &d.value); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// toMuxedID is the to_muxed_id entry of a transfer's map data (nil when the data is a bare
// amount), and the amount.
func toMuxedID(t *testing.T, v xdr.ScVal) (int64, *xdr.ScVal) {
	t.Helper()
	if v.Type == xdr.ScValTypeScvI128 {
		return int64(v.I128.Lo), nil
	}
	if v.Type != xdr.ScValTypeScvMap || v.Map == nil || len(**v.Map) != 2 {
		t.Fatalf("data %+v", v)
	}
	m := **v.Map
	if m[0].Key.MustSym() != "amount" || m[1].Key.MustSym() != "to_muxed_id" {
		t.Fatalf("map keys %+v", m)
	}
	return int64(m[0].Val.I128.Lo), &m[1].Val
}

// The events of a classic payment with a text memo, a fee bump around a payment to a muxed
// account, a failed payment and a lumen payment, as stellar-core emits them (CAP-67) and
// stellar-rpc's getEvents serves them: each transaction's fee event from its fee source (the fee
// bump's: the fee account), the payments' SAC transfer events from the asset's contract, the
// memo or muxed id in to_muxed_id, a fee bump's events under its outer hash, a failed
// transaction's fee alone; the filters by topic, the paging by cursor, and the refusals.
func TestGetEventsOfClassicPayments(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := keypair.MustRandom()
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	usd := e.n.IssueAsset("USD", issuer)
	for _, acct := range []string{a.Address(), b.Address()} {
		if err := e.n.AddTrustline(acct, usd, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.n.Mint(a.Address(), usd, 100*xlm); err != nil {
		t.Fatal(err)
	}
	credit := txnbuild.CreditAsset{Code: "USD", Issuer: issuer.Address()}
	first := e.n.LatestLedger().Sequence + 1

	acct, _ := e.n.Account(a.Address())
	memoTx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: a.Address(), Sequence: acct.Sequence}, IncrementSequenceNum: true,
		BaseFee: 100, Memo: txnbuild.MemoText("inv-1"), Operations: []txnbuild.Operation{payment(b.Address(), credit, "1.5")},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, e.clock.Now().Unix()+300)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if memoTx, err = memoTx.Sign(e.n.Passphrase(), a); err != nil {
		t.Fatal(err)
	}
	memoHash := hashOf(t, memoTx, e.n.Passphrase())
	if r := e.send(b64(t, memoTx)); r.Status != "PENDING" {
		t.Fatalf("memo payment: %+v", r)
	}
	e.n.CloseLedger()

	muxed, err := xdr.MuxedAccountFromAccountId(b.Address(), 7)
	if err != nil {
		t.Fatal(err)
	}
	inner := e.build(a, []txnbuild.Operation{payment(muxed.Address(), credit, "2")}, 0, 0)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	if err != nil {
		t.Fatal(err)
	}
	if fb, err = fb.Sign(e.n.Passphrase(), payer); err != nil {
		t.Fatal(err)
	}
	outer, _ := fb.HashHex(e.n.Passphrase())
	if r := e.send(b64(t, fb)); r.Status != "PENDING" {
		t.Fatalf("fee bump: %+v", r)
	}
	e.n.CloseLedger()
	over := e.build(a, []txnbuild.Operation{payment(b.Address(), credit, "1000")}, 0, 0)
	overHash := hashOf(t, over, e.n.Passphrase())
	e.send(b64(t, over))
	e.n.CloseLedger()
	lumens := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "3")}, 0, 0)
	lumensHash := hashOf(t, lumens, e.n.Passphrase())
	e.send(b64(t, lumens))
	e.n.CloseLedger()
	if got := e.getTx(overHash); got.Status != "FAILED" {
		t.Fatalf("the overdraft: %+v", got)
	}

	// Everything a sends or pays a fee for, and what b receives: five filters' worth in two.
	req := protocol.GetEventsRequest{StartLedger: first, Filters: []protocol.EventFilter{
		{EventType: protocol.EventTypeSet{protocol.EventTypeContract: nil}, Topics: []protocol.TopicFilter{
			{symbolSeg("transfer"), accountSeg(t, a.Address()), wildSeg("**")},
		}},
		{Topics: []protocol.TopicFilter{{symbolSeg("fee"), accountSeg(t, a.Address())}, {symbolSeg("fee"), accountSeg(t, payer.Address())}}},
	}}
	resp, err := e.rpc.GetEvents(e.ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	evs := decodeEvents(t, resp.Events)
	usdSAC, _ := usdXDR(t, usd).ContractID(e.n.Passphrase())
	nativeSAC, _ := xdr.MustNewNativeAsset().ContractID(e.n.Passphrase())
	usdID, nativeID := strkey.MustEncode(strkey.VersionByteContract, usdSAC[:]), strkey.MustEncode(strkey.VersionByteContract, nativeSAC[:])
	type want struct {
		ledger   uint32
		hash     string
		contract string
		first    string
		txIndex  uint32
		amount   int64
		muxedID  *xdr.ScVal
	}
	text, id7 := xdr.ScString("inv-1"), xdr.Uint64(7)
	wants := []want{
		{first, memoHash, nativeID, "fee", 0, 100, nil},
		{first, memoHash, usdID, "transfer", 1, 15_000_000, &xdr.ScVal{Type: xdr.ScValTypeScvString, Str: &text}},
		// The fee bump is charged the base fee for its two slots (the inner operation and itself).
		{first + 1, outer, nativeID, "fee", 0, 200, nil},
		{first + 1, outer, usdID, "transfer", 1, 20_000_000, &xdr.ScVal{Type: xdr.ScValTypeScvU64, U64: &id7}},
		{first + 2, overHash, nativeID, "fee", 0, 100, nil},
		{first + 3, lumensHash, nativeID, "fee", 0, 100, nil},
		{first + 3, lumensHash, nativeID, "transfer", 1, 30_000_000, nil},
	}
	if len(evs) != len(wants) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(wants), resp.Events)
	}
	for i, w := range wants {
		d := evs[i]
		amount, mid := toMuxedID(t, d.value)
		if uint32(d.info.Ledger) != w.ledger || d.info.TransactionHash != w.hash || d.info.ContractID != w.contract ||
			d.topics[0].MustSym() != xdr.ScSymbol(w.first) || d.info.TxIndex != w.txIndex || amount != w.amount ||
			d.info.EventType != protocol.EventTypeContract {
			t.Errorf("event %d: %+v (amount %d), want %+v", i, d.info, amount, w)
		}
		if (mid == nil) != (w.muxedID == nil) || mid != nil && !mid.Equals(*w.muxedID) {
			t.Errorf("event %d: to_muxed_id %+v, want %+v", i, mid, w.muxedID)
		}
	}
	// The transfer names the muxed payment's G... account, and the asset as SEP-11 names it.
	if to := evs[3].topics[2].MustAddress(); to.AccountId.Address() != b.Address() || len(evs[3].topics) != 4 ||
		evs[3].topics[3].MustStr() != xdr.ScString("USD:"+issuer.Address()) || evs[6].topics[3].MustStr() != "native" {
		t.Fatalf("transfer topics %+v", evs[3].topics)
	}
	// A short page ends at the window's end: the latest ledger.
	if c, err := protocol.ParseCursor(resp.Cursor); err != nil || c.Ledger != e.n.LatestLedger().Sequence {
		t.Fatalf("cursor %q: %v", resp.Cursor, err)
	}

	// Paging: two events a page, each page after the last one's id.
	req.Pagination = &protocol.PaginationOptions{Limit: 2}
	var paged []protocol.EventInfo
	for range 5 {
		page, err := e.rpc.GetEvents(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page.Events...)
		if len(page.Events) < 2 {
			break
		}
		if page.Cursor != page.Events[1].ID {
			t.Fatalf("cursor %q after %q", page.Cursor, page.Events[1].ID)
		}
		c, _ := protocol.ParseCursor(page.Cursor)
		req = protocol.GetEventsRequest{Filters: req.Filters, Pagination: &protocol.PaginationOptions{Cursor: &c, Limit: 2}}
	}
	if len(paged) != len(resp.Events) {
		t.Fatalf("paged %d events, want %d", len(paged), len(resp.Events))
	}
	for i := range paged {
		if paged[i].ID != resp.Events[i].ID {
			t.Fatalf("page event %d: %s, want %s", i, paged[i].ID, resp.Events[i].ID)
		}
	}

	// Refused: six filters (-32602), a start outside the history (-32600), a start and a cursor.
	six := make([]protocol.EventFilter, 6)
	_, err = e.rpc.GetEvents(e.ctx, protocol.GetEventsRequest{StartLedger: first, Filters: six})
	var je *jrpc2.Error
	if !errors.As(err, &je) || je.Code != -32602 {
		t.Fatalf("six filters: %v", err)
	}
	_, err = e.rpc.GetEvents(e.ctx, protocol.GetEventsRequest{StartLedger: e.n.LatestLedger().Sequence + 1, Filters: req.Filters})
	if !errors.As(err, &je) || je.Code != -32600 {
		t.Fatalf("after the latest ledger: %v", err)
	}
	c, _ := protocol.ParseCursor(resp.Events[0].ID)
	_, err = e.rpc.GetEvents(e.ctx, protocol.GetEventsRequest{StartLedger: first, Filters: req.Filters, Pagination: &protocol.PaginationOptions{Cursor: &c}})
	if !errors.As(err, &je) || je.Code != -32602 {
		t.Fatalf("a start and a cursor: %v", err)
	}
}

func usdXDR(t *testing.T, a stellarsim.Asset) xdr.Asset {
	t.Helper()
	x, err := a.XDR()
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A vault contract's deposit emits the vault's own event [function, wallet] with the amount, from
// the vault's contract id; a filter by contract id finds it and its fee event does not match. Its
// fee events add up to the fee charged: the fee before all transactions (transaction index 0),
// and a refund of unused refundable fee, if any, as a negative fee after all of them (the largest
// transaction index; none when nothing is refunded: core emits no fee event of 0).
func TestGetEventsOfAVaultCall(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	wallet := keypair.MustRandom().Address()
	first := v.n.LatestLedger().Sequence + 1
	got := v.call("deposit", wallet, 25)
	if got.Status != "SUCCESS" {
		t.Fatalf("deposit: %+v", got)
	}
	resp, err := v.rpc.GetEvents(v.ctx, protocol.GetEventsRequest{StartLedger: first,
		Filters: []protocol.EventFilter{{ContractIDs: []string{v.vault}}}})
	if err != nil {
		t.Fatal(err)
	}
	evs := decodeEvents(t, resp.Events)
	if len(evs) != 1 || evs[0].info.ContractID != v.vault || evs[0].info.TransactionHash != got.TransactionHash ||
		evs[0].topics[0].MustSym() != "deposit" || evs[0].topics[1].MustAddress().AccountId.Address() != wallet ||
		evs[0].value.MustI128().Lo != 25 || evs[0].info.TxIndex != 1 || evs[0].info.OpIndex != 0 {
		t.Fatalf("vault events %+v", resp.Events)
	}
	fees, err := v.rpc.GetEvents(v.ctx, protocol.GetEventsRequest{StartLedger: first,
		Filters: []protocol.EventFilter{{Topics: []protocol.TopicFilter{{symbolSeg("fee"), accountSeg(t, v.operator.Address())}}}}})
	if err != nil {
		t.Fatal(err)
	}
	fe := decodeEvents(t, fees.Events)
	applied, _ := v.n.Transaction(got.TransactionHash)
	if len(fe) == 0 || len(fe) > 2 || fe[0].info.TxIndex != 0 {
		t.Fatalf("fee events %+v", fees.Events)
	}
	sum := int64(fe[0].value.MustI128().Lo)
	if len(fe) == 2 {
		if fe[1].info.TxIndex != toid.TransactionMask || fe[1].value.MustI128().Hi != -1 {
			t.Fatalf("refund event %+v", fees.Events[1])
		}
		sum += int64(fe[1].value.MustI128().Lo)
	}
	if sum != applied.FeeCharged {
		t.Fatalf("fee events add up to %d, fee charged %d", sum, applied.FeeCharged)
	}
}

package devstack

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// Paying an exchange on the local stack, over HTTP, as README.md's "The HTTP API" ("Paying an
// exchange: memos and muxed wallets") describes it: a memo payment and a muxed payment land with
// exactly the memo and muxed destination asked (read back from the local network's envelope and
// its Horizon-shaped record), credit the account, replay, conflict under the account's scope, show
// in GET, the history and the settlement events, and go through the queue (Prefer:
// respond-async) with both; bad memos and M... addresses are typed 4xx and write nothing.

// muxedOf is the M... address of account and id (SEP-23), as go-stellar-sdk writes it.
func muxedOf(t *testing.T, account string, id uint64) string {
	t.Helper()
	m, err := xdr.MuxedAccountFromAccountId(account, id)
	if err != nil {
		t.Fatal(err)
	}
	return m.Address()
}

func withdrawMemo(wallet, amount, memo string) string {
	if memo == "" {
		return withdraw(wallet, amount)
	}
	return fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":%q,"asset":"USDC","memo":%s}`, wallet, amount, memo)
}

// landed checks the transaction hash paid: its envelope (decoded here) holds one payment to dest
// (a muxed account with id, or the account itself when muxed is false) and memo, and the local
// network's record shows them as Horizon does.
func landed(t *testing.T, s *Stack, hash, account string, muxed bool, id uint64, memo xdr.Memo, memoType, memoText string) {
	t.Helper()
	tx, ok := s.Network.Transaction(hash)
	if !ok || tx.Status != "SUCCESS" {
		t.Fatalf("transaction %s: %+v (found %v)", hash, tx, ok)
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(tx.EnvelopeXDR, &env); err != nil {
		t.Fatal(err)
	}
	ops := env.Operations()
	if len(ops) != 1 || ops[0].Body.PaymentOp == nil {
		t.Fatalf("operations %+v", ops)
	}
	dest := ops[0].Body.PaymentOp.Destination
	got, _ := dest.GetMed25519()
	if dest.ToAccountId().Address() != account || muxed != (dest.Type == xdr.CryptoKeyTypeKeyTypeMuxedEd25519) || (muxed && uint64(got.Id) != id) {
		t.Errorf("destination %s (type %s), want %s muxed %v id %d", dest.Address(), dest.Type, account, muxed, id)
	}
	a, _ := env.Memo().MarshalBinary()
	b, _ := memo.MarshalBinary()
	if string(a) != string(b) {
		t.Errorf("memo %+v, want %+v", env.Memo(), memo)
	}
	if tx.MemoType != memoType || tx.Memo != memoText || tx.Ops[0].Destination != account {
		t.Errorf("record memo %s %q destination %s, want %s %q %s", tx.MemoType, tx.Memo, tx.Ops[0].Destination, memoType, memoText, account)
	}
	if muxed && (tx.Ops[0].DestinationMuxed != dest.Address() || tx.Ops[0].DestinationMuxedID != fmt.Sprint(id)) {
		t.Errorf("record muxed %s %s, want %s %d", tx.Ops[0].DestinationMuxed, tx.Ops[0].DestinationMuxedID, dest.Address(), id)
	}
}

func getJSON(t *testing.T, s *Stack, path string) reply {
	t.Helper()
	return do(t, mustRequest(t, http.MethodGet, s.Info.APIURL+path))
}

func TestMemoAndMuxedPaymentsOverHTTP(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	g := s.Info.Wallets[0].Account
	m7, m8 := muxedOf(t, g, 7), muxedOf(t, g, 18446744073709551615)
	stream := openEvents(t, s.Info.EventsURL)
	before, err := s.Network.Balance(g, s.usdc())
	if err != nil {
		t.Fatal(err)
	}

	// A muxed payment with a text memo: the account is credited, the envelope names M... and id.
	const textMemo = `{"type":"text","value":"customer 42 ✓"}`
	first := post(t, s, "exchange-0001", withdrawMemo(m7, "2.5", textMemo))
	hash, _ := first.body["transactionHash"].(string)
	if first.status != http.StatusOK || !hash64.MatchString(hash) {
		t.Fatalf("POST muxed = %d %v", first.status, first.body)
	}
	text := "customer 42 ✓"
	landed(t, s, hash, g, true, 7, xdr.Memo{Type: xdr.MemoTypeMemoText, Text: &text}, "text", text)
	if after, _ := s.Network.Balance(g, s.usdc()); after-before != 25_000_000 {
		t.Errorf("the account gained %d stroops, want 2.5 USDC", after-before)
	}
	// The same request, the M... in lower case: the same transfer, replayed.
	if again := post(t, s, "exchange-0001", withdrawMemo(strings.ToLower(m7), "2.50", textMemo)); again.status != 200 || again.body["replayed"] != true || again.body["transactionHash"] != hash {
		t.Errorf("replay = %d %v", again.status, again.body)
	}
	// The key belongs to the account: another id, the account itself, another memo, no memo.
	for name, body := range map[string]string{
		"another id":   withdrawMemo(m8, "2.5", textMemo),
		"the account":  withdrawMemo(g, "2.5", textMemo),
		"another memo": withdrawMemo(m7, "2.5", `{"type":"text","value":"customer 43 ✓"}`),
		"an id memo":   withdrawMemo(m7, "2.5", `{"type":"id","value":"42"}`),
		"no memo":      withdrawMemo(m7, "2.5", ""),
	} {
		if r := post(t, s, "exchange-0001", body); r.status != http.StatusConflict || r.body["code"] != "IDEMPOTENCY_KEY_CONFLICT" {
			t.Errorf("%s with the same key = %d %v, want 409 IDEMPOTENCY_KEY_CONFLICT", name, r.status, r.body)
		}
	}

	// A memo payment to the account: an id memo, written with leading zeros, stored canonical.
	second := post(t, s, "exchange-0002", withdrawMemo(g, "1", `{"type":"id","value":"0042"}`))
	hash2, _ := second.body["transactionHash"].(string)
	if second.status != http.StatusOK {
		t.Fatalf("POST memo = %d %v", second.status, second.body)
	}
	id42 := xdr.Uint64(42)
	landed(t, s, hash2, g, false, 0, xdr.Memo{Type: xdr.MemoTypeMemoId, Id: &id42}, "id", "42")

	// GET: the M... sees its own transfer with its memo and muxed account; another M... of the
	// account does not; the account sees both of its transfers.
	muxedView := map[string]any{"address": m7, "account": g, "id": "7"}
	v := getJSON(t, s, "/wallets/"+m7+"/transfers/exchange-0001")
	if v.status != 200 || v.body["transactionHash"] != hash || !maps.Equal(v.body["memo"].(map[string]any), map[string]any{"type": "text", "value": text}) ||
		!maps.Equal(v.body["muxedAccount"].(map[string]any), muxedView) {
		t.Errorf("GET by M... = %d %v", v.status, v.body)
	}
	if v := getJSON(t, s, "/wallets/"+m8+"/transfers/exchange-0001"); v.status != http.StatusNotFound {
		t.Errorf("GET by another M... = %d %v, want 404", v.status, v.body)
	}
	if v := getJSON(t, s, "/wallets/"+g+"/transfers/exchange-0001"); v.status != 200 || v.body["transactionHash"] != hash || v.body["muxedAccount"] == nil {
		t.Errorf("GET by the account = %d %v", v.status, v.body)
	}
	if v := getJSON(t, s, "/wallets/"+g+"/transfers/exchange-0002"); v.status != 200 || !maps.Equal(v.body["memo"].(map[string]any), map[string]any{"type": "id", "value": "42"}) || v.body["muxedAccount"] != nil {
		t.Errorf("GET of the memo payment = %d %v", v.status, v.body)
	}
	keysOf := func(path string) []string {
		h := getJSON(t, s, path)
		items, _ := h.body["items"].([]any)
		var keys []string
		for _, it := range items {
			keys = append(keys, it.(map[string]any)["idempotencyKey"].(string))
		}
		return keys
	}
	if got := keysOf("/wallets/" + g + "/transfers"); strings.Join(got, ",") != "exchange-0002,exchange-0001" {
		t.Errorf("the account's history %v", got)
	}
	if got := keysOf("/wallets/" + m7 + "/transfers"); strings.Join(got, ",") != "exchange-0001" {
		t.Errorf("the M...'s history %v", got)
	}
	if got := keysOf("/wallets/" + m8 + "/transfers"); len(got) != 0 {
		t.Errorf("another M...'s history %v", got)
	}

	// Asynchronous: a muxed payment with a hash memo, through the queue and the submitter.
	sum := strings.Repeat("5a", 32)
	req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdrawMemo(m8, "0.5", `{"type":"hash","value":"`+strings.ToUpper(sum)+`"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "exchange-async-0001")
	req.Header.Set("Prefer", "respond-async")
	if accepted := do(t, req); accepted.status != http.StatusAccepted || accepted.header.Get("Location") != "/wallets/"+m8+"/transfers/exchange-async-0001" {
		t.Fatalf("POST async = %d %v %v", accepted.status, accepted.header, accepted.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.ops.submit.waitRuns(ctx, 1); err != nil {
		t.Fatalf("the submitter did not run: %v", err)
	}
	av := getJSON(t, s, "/wallets/"+m8+"/transfers/exchange-async-0001")
	hash3, _ := av.body["transactionHash"].(string)
	if av.status != 200 || av.body["status"] != "success" || !maps.Equal(av.body["memo"].(map[string]any), map[string]any{"type": "hash", "value": sum}) {
		t.Fatalf("GET async = %d %v", av.status, av.body)
	}
	var h xdr.Hash
	raw, _ := hex.DecodeString(sum)
	copy(h[:], raw)
	landed(t, s, hash3, g, true, 18446744073709551615, xdr.Memo{Type: xdr.MemoTypeMemoHash, Hash: &h}, "hash", base64.StdEncoding.EncodeToString(raw))

	// The settlement events carry the memo and the muxed account.
	want := map[string]struct{ memo, muxed map[string]any }{
		"exchange-0001":       {map[string]any{"type": "text", "value": text}, muxedView},
		"exchange-0002":       {map[string]any{"type": "id", "value": "42"}, nil},
		"exchange-async-0001": {map[string]any{"type": "hash", "value": sum}, map[string]any{"address": m8, "account": g, "id": "18446744073709551615"}},
	}
	for len(want) > 0 {
		m := stream.next(t)
		var d map[string]any
		if err := json.Unmarshal(m.data.Detail, &d); err != nil {
			t.Fatal(err)
		}
		key, _ := d["idempotencyKey"].(string)
		w, ok := want[key]
		if !ok {
			continue
		}
		delete(want, key)
		gotMuxed, _ := d["muxedAccount"].(map[string]any)
		if d["status"] != "success" || !maps.Equal(d["memo"].(map[string]any), w.memo) || !maps.Equal(gotMuxed, w.muxed) {
			t.Errorf("event of %s: %v", key, d)
		}
	}

	// Bad input: typed 4xx, nothing written.
	items := itemCount(t, s)
	vault := s.Info.Vault.Account
	for name, tc := range map[string]struct {
		body   string
		status int
		code   string
	}{
		"text of 29 bytes":     {withdrawMemo(g, "1", `{"type":"text","value":"`+strings.Repeat("x", 29)+`"}`), 422, "INVALID_MEMO"},
		"text of 15 é":         {withdrawMemo(g, "1", `{"type":"text","value":"`+strings.Repeat("é", 15)+`"}`), 422, "INVALID_MEMO"},
		"a bad type":           {withdrawMemo(g, "1", `{"type":"note","value":"x"}`), 422, "INVALID_MEMO"},
		"an id not a number":   {withdrawMemo(g, "1", `{"type":"id","value":"4x2"}`), 422, "INVALID_MEMO"},
		"an id above 2^64-1":   {withdrawMemo(g, "1", `{"type":"id","value":"18446744073709551616"}`), 422, "INVALID_MEMO"},
		"a hash of 31 bytes":   {withdrawMemo(g, "1", `{"type":"hash","value":"`+strings.Repeat("ab", 31)+`"}`), 422, "INVALID_MEMO"},
		"a return not hex":     {withdrawMemo(g, "1", `{"type":"return","value":"`+strings.Repeat("zz", 32)+`"}`), 422, "INVALID_MEMO"},
		"an id as a number":    {withdrawMemo(g, "1", `{"type":"id","value":42}`), 400, "REQUEST_INVALID"},
		"a memo as a string":   {withdrawMemo(g, "1", `"customer 42"`), 400, "REQUEST_INVALID"},
		"a memo with a field":  {withdrawMemo(g, "1", `{"type":"id","value":"1","note":"x"}`), 400, "REQUEST_INVALID"},
		"a memo without type":  {withdrawMemo(g, "1", `{"value":"1"}`), 400, "REQUEST_INVALID"},
		"an M... bad checksum": {withdraw(m7[:30]+map[bool]string{true: "B", false: "A"}[m7[30] == 'A']+m7[31:], "1"), 422, "INVALID_ADDRESS"},
		"an M... of 68":        {withdraw(m7[:68], "1"), 422, "INVALID_ADDRESS"},
		"an M... of the vault": {withdraw(muxedOf(t, vault, 1), "1"), 422, "INVALID_ADDRESS"},
	} {
		if r := post(t, s, "exchange-bad-0001", tc.body); r.status != tc.status || r.body["code"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", name, r.status, r.body, tc.status, tc.code)
		}
	}
	if n := itemCount(t, s); n != items {
		t.Errorf("bad requests wrote %d items", n-items)
	}
}

// With the vault contract a memo and an M... wallet are refused as the client's mistake (422
// MEMO_NOT_SUPPORTED, never a 503 to retry for ever), for deposits and withdrawals alike, and
// nothing is written or sent; the same transfer without them lands.
func TestContractRefusesMemoAndMuxedOverHTTP(t *testing.T) {
	t.Parallel()
	s := startContractStack(t)
	wallet := s.Info.Wallets[0].Account
	items, applied := itemCount(t, s), len(s.Network.Applied())
	for name, body := range map[string]string{
		"a deposit with a memo":    `{"operationType":"deposit","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","memo":{"type":"id","value":"7"}}`,
		"a withdrawal with a memo": `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","memo":{"type":"text","value":"x"}}`,
		"a deposit from an M...":   contractTransfer("deposit", muxedOf(t, wallet, 7), "1"),
		"a withdrawal to an M...":  contractTransfer("withdraw", muxedOf(t, wallet, 7), "1"),
		"an M... with a hash memo": `{"operationType":"withdraw","walletAddress":"` + muxedOf(t, wallet, 0) + `","amount":"1","asset":"USDC","memo":{"type":"hash","value":"` + strings.Repeat("00", 32) + `"}}`,
	} {
		r := post(t, s, "contract-memo-0001", body)
		if r.status != http.StatusUnprocessableEntity || r.body["code"] != "MEMO_NOT_SUPPORTED" || r.body["classification"] != "terminal" {
			t.Errorf("%s: %d %v, want 422 MEMO_NOT_SUPPORTED", name, r.status, r.body)
		}
	}
	if n, a := itemCount(t, s), len(s.Network.Applied()); n != items || a != applied {
		t.Errorf("the refusals wrote %d items and applied %d transactions", n-items, a-applied)
	}
	if r := post(t, s, "contract-memo-0001", contractTransfer("deposit", wallet, "1")); r.status != http.StatusOK {
		t.Errorf("the same key without them: %d %v", r.status, r.body)
	}
}

// Queued (Prefer: respond-async) with the vault contract, a memo is accepted at the door, which
// does not know the ledger, and refused by the submitter's Prepare before anything is simulated:
// the key settles as the stored rejection 422 MEMO_NOT_SUPPORTED, as any refusal of a queued
// request does (internal/transfer/doc.go, "The item": rejected), and nothing is applied.
func TestContractRefusesAQueuedMemo(t *testing.T) {
	t.Parallel()
	s := startContractStack(t)
	wallet := s.Info.Wallets[0].Account
	applied := len(s.Network.Applied())
	req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(
		`{"operationType":"deposit","walletAddress":"`+wallet+`","amount":"1","asset":"USDC","memo":{"type":"id","value":"7"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "contract-async-memo-1")
	req.Header.Set("Prefer", "respond-async")
	if r := do(t, req); r.status != http.StatusAccepted {
		t.Fatalf("POST = %d %v", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.ops.submit.waitRuns(ctx, 1); err != nil {
		t.Fatalf("the submitter did not run: %v", err)
	}
	v := getJSON(t, s, "/wallets/"+wallet+"/transfers/contract-async-memo-1")
	problem, _ := v.body["error"].(map[string]any)
	if v.status != 200 || v.body["status"] != "error" || problem["code"] != "MEMO_NOT_SUPPORTED" || problem["status"] != float64(422) {
		t.Errorf("GET = %d %v, want the stored 422 MEMO_NOT_SUPPORTED", v.status, v.body)
	}
	if n := len(s.Network.Applied()); n != applied {
		t.Errorf("%d transactions applied", n-applied)
	}
}

package reconcile

import (
	"encoding/json"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An operator sees what an exchange credits by: the memo, and a muxed wallet's account and id
// (the id in decimal, exact beyond 2^53); a G... wallet without a memo shows neither.
func TestItemShowsMemoAndMuxedAccount(t *testing.T) {
	const account = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	const muxed = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK"
	rec := transfer.Record{StoreKey: "transfer:0123456789abcdef:order-0001", Status: transfer.StatusInDoubt, ClientKey: "order-0001",
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: muxed, Account: account, MuxedID: 1<<64 - 1,
			Amount: "1", Asset: "USDC", Memo: transfer.Memo{Type: transfer.MemoText, Value: "customer 42"}}}
	b, err := json.Marshal(itemOf(rec))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	memo, _ := got["memo"].(map[string]any)
	if got["walletAddress"] != muxed || got["account"] != account || got["muxedId"] != "18446744073709551615" ||
		memo["type"] != "text" || memo["value"] != "customer 42" {
		t.Errorf("item %s", b)
	}
	rec.Request = transfer.Request{OperationType: transfer.Withdraw, WalletAddress: account, Amount: "1", Asset: "USDC"}
	b, _ = json.Marshal(itemOf(rec))
	got = nil
	_ = json.Unmarshal(b, &got)
	for _, k := range []string{"memo", "account", "muxedId"} {
		if _, ok := got[k]; ok {
			t.Errorf("a G... wallet without a memo shows %s: %s", k, b)
		}
	}
}

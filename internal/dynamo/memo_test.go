package dynamo

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A transfer to a muxed wallet with a memo round-trips whole (the memo, the account, the id, 0 and
// 2^64-1 included), and its history key is its account's (transfer.Wallet.Scope), the one an
// account's own transfers carry; a G... wallet's is its own.
func TestMemoAndMuxedWalletRoundTrip(t *testing.T) {
	const account = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	const muxed = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK"
	at := time.UnixMilli(1_900_000_000_123).UTC()
	for _, req := range []transfer.Request{
		{OperationType: transfer.Withdraw, WalletAddress: muxed, Account: account, MuxedID: 0, Amount: "1", Asset: "USDC", Stroops: 1e7,
			Memo: transfer.Memo{Type: transfer.MemoText, Value: ""}},
		{OperationType: transfer.Withdraw, WalletAddress: muxed, Account: account, MuxedID: 1<<64 - 1, Amount: "1", Asset: "USDC", Stroops: 1e7,
			Memo: transfer.Memo{Type: transfer.MemoID, Value: "18446744073709551615"}},
		{OperationType: transfer.Withdraw, WalletAddress: account, Amount: "1", Asset: "USDC", Stroops: 1e7,
			Memo: transfer.Memo{Type: transfer.MemoReturn, Value: "ab"}},
		{OperationType: transfer.Withdraw, WalletAddress: account, Amount: "1", Asset: "USDC", Stroops: 1e7},
	} {
		rec := transfer.Record{StoreKey: transfer.StoreKey(req.Wallet().Scope(), "order-0001"), ClaimID: "c", Status: transfer.StatusQueued,
			Request: req, ClientKey: "order-0001", Version: 1, CreatedAt: at, UpdatedAt: at, Async: true}
		av, err := marshalRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		if pk, _ := av[AttrGSI2PK].(*types.AttributeValueMemberS); pk == nil || pk.Value != transfer.WalletHash(account) {
			t.Errorf("%s: gsi2pk %v, want the account's", req.WalletAddress, av[AttrGSI2PK])
		}
		got, err := unmarshalRecord(av)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Request, req) {
			t.Errorf("read back %+v, wrote %+v", got.Request, req)
		}
	}
}

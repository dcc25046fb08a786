package stellar

import (
	"encoding/json"
	"testing"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// answerEntries makes the fake's getLedgerEntries answer every key it is asked for as a funded
// ledger holds it: an ACCOUNT at sequence number seq with 100 XLM, a TRUSTLINE authorized with
// 10^12 units. It is how the unit rigs serve the accounts read of Prepare (funds.go).
func answerEntries(t *testing.T, f *fakeRPC, seq int64) {
	t.Helper()
	f.handle("getLedgerEntries", func(params json.RawMessage) (any, *rpcError) {
		var req protocol.GetLedgerEntriesRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, &rpcError{Code: -32602, Message: err.Error()}
		}
		resp := protocol.GetLedgerEntriesResponse{LatestLedger: 77}
		for _, k := range req.Keys {
			var key xdr.LedgerKey
			if err := xdr.SafeUnmarshalBase64(k, &key); err != nil {
				return nil, &rpcError{Code: -32602, Message: err.Error()}
			}
			var data xdr.LedgerEntryData
			switch {
			case key.Account != nil:
				data = xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeAccount, Account: &xdr.AccountEntry{
					AccountId: key.Account.AccountId, Balance: 100_0000000, SeqNum: xdr.SequenceNumber(seq)}}
			case key.TrustLine != nil:
				data = xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeTrustline, TrustLine: &xdr.TrustLineEntry{
					AccountId: key.TrustLine.AccountId, Asset: key.TrustLine.Asset, Balance: 1 << 62, Limit: 1<<63 - 1,
					Flags: xdr.Uint32(xdr.TrustLineFlagsAuthorizedFlag)}}
			default:
				continue
			}
			b64, err := xdr.MarshalBase64(data)
			if err != nil {
				return nil, &rpcError{Code: -32603, Message: err.Error()}
			}
			resp.Entries = append(resp.Entries, protocol.LedgerEntryResult{KeyXDR: k, DataXDR: b64})
		}
		return resp, nil
	})
}

package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// TestStoredRejectionReplaysItsStatus: a rejected item replays the same status whether it holds
// the attribute "status" (written while the domain stored one) or not (written now): a repeat of
// the POST and the GET both answer 422, and an item holding another status answers that one.
func TestStoredRejectionReplaysItsStatus(t *testing.T) {
	const wallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	now := time.Unix(1_800_000_000, 0)
	rules := transfer.Rules{Assets: []string{"USDC"}, Addresses: anyAddress{}}
	body := `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"10","asset":"USDC"}`
	req, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: "10", Asset: "USDC"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		result transfer.Result
		want   int
	}{
		{"failed on the ledger, status stored", transfer.Result{Code: transfer.CodeTransactionFailed, HTTPStatus: 422,
			TransactionHash: strings.Repeat("ab", 32), Ledger: 7, ResultCodes: []string{"tx_failed", "op_underfunded"}}, 422},
		{"failed on the ledger, no status", transfer.Result{Code: transfer.CodeTransactionFailed,
			TransactionHash: strings.Repeat("ab", 32), Ledger: 7, ResultCodes: []string{"tx_failed", "op_underfunded"}}, 422},
		{"queued refusal, status stored", transfer.Result{Code: transfer.CodeInvalidAsset, HTTPStatus: 422, Detail: "asset USDC is not supported"}, 422},
		{"queued refusal, no status", transfer.Result{Code: transfer.CodeInvalidAsset, Detail: "asset USDC is not supported"}, 422},
		{"another status stored", transfer.Result{Code: transfer.CodeInvalidAsset, HTTPStatus: 400, Detail: "refused"}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := transfertest.NewStore()
			key := "order-0001"
			result := tc.result
			store.Put(transfer.Record{
				StoreKey: transfer.StoreKey(req.WalletAddress, key), ClaimID: "claim-1", Status: transfer.StatusRejected,
				Fingerprint: req.Fingerprint(), Request: req, ClientKey: key, Result: &result,
				ExpiresAt: now.Add(time.Hour).Unix(), Version: 3, CreatedAt: now, UpdatedAt: now,
			})
			orch := &transfer.Orchestrator{Store: store, Ledger: &landingLedger{}, Clock: vclock.New(now),
				Logger: slog.New(slog.DiscardHandler)}
			handler := api.NewHandler(orch, api.StaticRules(rules))

			post := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(body))
			post.Header.Set("Content-Type", "application/json")
			post.Header.Set(api.IdempotencyKeyHeader, key)
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, post)
			var pd api.ProblemDetails
			if err := json.Unmarshal(rec.Body.Bytes(), &pd); err != nil {
				t.Fatalf("POST: %d %s", rec.Code, rec.Body)
			}
			if rec.Code != tc.want || pd.Status != tc.want || pd.Code != tc.result.Code || rec.Header().Get(api.ReplayedHeader) != "true" {
				t.Errorf("POST replay: %d %+v (replayed %q), want %d %s", rec.Code, pd, rec.Header().Get(api.ReplayedHeader), tc.want, tc.result.Code)
			}

			get := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/wallets/"+wallet+"/transfers/"+key, nil)
			rec = httptest.NewRecorder()
			handler.ServeHTTP(rec, get)
			var view api.ViewResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("GET: %d %s", rec.Code, rec.Body)
			}
			if view.Status != "error" || view.Error == nil || view.Error.Status != tc.want || view.Error.Code != tc.result.Code {
				t.Errorf("GET: %s, want error with status %d", rec.Body, tc.want)
			}
		})
	}
}

package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// POST /transfers runs a transfer once per Idempotency-Key: the first call answers 200 with the
// landed transaction, the same call again replays it (Idempotent-Replayed: true), the same key
// with another body is a 409 problem, and a call without a key is a 400 problem that reaches
// nothing behind the handler.
func ExampleNewHandler() {
	orch := &transfer.Orchestrator{
		Store:  transfertest.NewStore(),
		Ledger: &landingLedger{},
		Clock:  vclock.New(time.Unix(1_800_000_000, 0)), // simulated time: polling waits cost nothing
		Logger: slog.New(slog.DiscardHandler),
	}
	rules := transfer.Rules{Assets: []string{"USDC"}, Addresses: anyAddress{}}
	handler := api.NewHandler(orch, api.StaticRules(rules))

	post := func(key, amount string) {
		body := `{"operationType":"withdraw","walletAddress":"GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H",` +
			`"amount":"` + amount + `","asset":"USDC"}`
		req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.AmznTraceHeader, "Root=1-67890abc-def012345678901234567890") // a fixed trace ID
		if key != "" {
			req.Header.Set(api.IdempotencyKeyHeader, key)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		res := rec.Result()
		answer, _ := io.ReadAll(res.Body)
		fmt.Print(res.StatusCode, " ", res.Header.Get("Content-Type"))
		if v := res.Header.Get(api.ReplayedHeader); v != "" {
			fmt.Print(", ", api.ReplayedHeader, ": ", v)
		}
		fmt.Println()
		if res.Header.Get("Content-Type") == "application/problem+json" {
			// RFC 9457 problem details; code is the stable member to branch on.
			var problem struct{ Code, Classification string }
			_ = json.Unmarshal(answer, &problem)
			fmt.Printf("  problem %s (%s)\n", problem.Code, problem.Classification)
			return
		}
		fmt.Printf("  %s\n", strings.TrimSpace(string(answer)))
	}

	post("order-0001", "10")
	post("order-0001", "10")
	post("order-0001", "11")
	post("", "10")
	// Output:
	// 200 application/json
	//   {"transactionHash":"f093a077f303ba3e52eae31a584be0bcf87ff73a0c1c981cf6db772fa095fa62","ledger":101,"replayed":false}
	// 200 application/json, Idempotent-Replayed: true
	//   {"transactionHash":"f093a077f303ba3e52eae31a584be0bcf87ff73a0c1c981cf6db772fa095fa62","ledger":101,"replayed":true}
	// 409 application/problem+json
	//   problem IDEMPOTENCY_KEY_CONFLICT (terminal)
	// 400 application/problem+json
	//   problem IDEMPOTENCY_KEY_MISSING (terminal)
}

// landingLedger is a network on which every envelope sent lands in ledger 101.
type landingLedger struct {
	built  int
	landed map[string]bool
}

func (l *landingLedger) Prepare(_ context.Context, _ transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	l.built++
	sum := sha256.Sum256(fmt.Appendf(nil, "envelope %d", l.built)) // a real ledger hashes the signed transaction
	hash := hex.EncodeToString(sum[:])
	return transfer.Envelope{XDR: "AAAA" + hash, InnerHash: hash, MaxTime: terms.MaxTime.Unix(), SubmittedLedger: 100,
		Channel: "GVAULT", FeeStroops: 100}, nil
}

func (l *landingLedger) Send(_ context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	if l.landed == nil {
		l.landed = map[string]bool{}
	}
	l.landed[env.InnerHash] = true
	return transfer.SendResult{Status: transfer.SendPending, LatestLedger: 100}, nil
}

func (l *landingLedger) Lookup(_ context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if !l.landed[env.InnerHash] {
		return transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: 100}, nil
	}
	return transfer.Lookup{Status: transfer.LookupSuccess, Hash: env.InnerHash, Ledger: 101, FeeChargedStroops: 100, LatestLedger: 101}, nil
}

func (l *landingLedger) Done(context.Context, transfer.Envelope) {}

// anyAddress takes every 56-character G... string as an account (the service parses strkeys).
type anyAddress struct{}

func (anyAddress) ParseAddress(s string) (transfer.AddressKind, error) {
	if len(s) != 56 || s[0] != 'G' {
		return 0, errors.New("not a G... address")
	}
	return transfer.AccountAddress, nil
}

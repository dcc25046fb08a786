package devstack

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/queue"
)

// BATCH_SIZE 10 on the local stack: ten async transfers to ten wallets, handed to
// SubmitterFunction's batch handler (queue.BatchSubmitter) as one SQS event, settle through fewer
// transactions than transfers, each wallet paid exactly once, counted from the local network's
// applied transactions.
func TestBatchSizePaysQueuedTransfersTogether(t *testing.T) {
	const n = 10
	q := queue.NewMemory()
	env := map[string]string{"BATCH_SIZE": strconv.Itoa(n)}
	s := startWith(t, Options{LedgerInterval: time.Second, APIOnly: true, DemoWallets: n, Queue: q,
		Getenv: func(k string) string { return env[k] }})
	if s.Service.Orchestrator.Batches == nil {
		t.Fatal("BATCH_SIZE 10 left the orchestrator without Batches")
	}
	before := len(s.Network.Applied())
	amount := map[string]int64{} // wallet -> stroops
	for i, w := range s.Info.Wallets[:n] {
		req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdraw(w.Account, strconv.Itoa(i+1))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("devstack-batch-%04d", i))
		req.Header.Set("Prefer", "respond-async")
		if r := do(t, req); r.status != http.StatusAccepted {
			t.Fatalf("POST %d (respond-async) = %d %v", i, r.status, r.body)
		}
		amount[w.Account] = int64(i+1) * 10_000_000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var ev events.SQSEvent
	for i := range n {
		m, err := q.Receive(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		body, err := queue.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		id := "batch-" + strconv.Itoa(i)
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, ReceiptHandle: id, Body: body, EventSource: "aws:sqs",
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	}
	// One invocation, with the template's 60 s timeout.
	ictx, icancel := context.WithTimeout(ctx, 60*time.Second)
	defer icancel()
	resp, err := queue.BatchSubmitter(s.Service.Orchestrator, queue.Visibility{}, nil)(ictx, ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("BatchSubmitter = %+v, %v; want every message acknowledged", resp, err)
	}

	usdc := s.usdc()
	asset := usdc.Code + ":" + usdc.Issuer
	paid := map[string]int{}
	type position struct {
		hash  string
		index int
		alone bool
	}
	paidBy := map[string]position{} // wallet -> the operation that paid it
	txs := 0
	for _, tx := range s.Network.Applied()[before:] {
		pays := 0
		for i, op := range tx.Ops {
			if tx.Status == "SUCCESS" && amount[op.Destination] != 0 {
				paidBy[op.Destination] = position{hash: tx.Hash, index: i, alone: len(tx.Ops) == 1}
			}
			if op.Type != "payment" || amount[op.Destination] == 0 {
				continue
			}
			pays++
			if tx.Status != "SUCCESS" {
				continue
			}
			paid[op.Destination]++
			if op.Amount != amount[op.Destination] || op.Asset != asset {
				t.Errorf("tx %s pays %s %d %s, want %d %s", tx.Hash, op.Destination, op.Amount, op.Asset, amount[op.Destination], asset)
			}
		}
		if pays > 0 {
			txs++
		}
	}
	for w := range amount {
		if paid[w] != 1 {
			t.Errorf("wallet %s paid %d times, want once", w, paid[w])
		}
	}
	if txs >= n || txs == 0 {
		t.Errorf("%d transfers went through %d transactions, want fewer transactions than transfers", n, txs)
	}
	t.Logf("%d transfers, %d transactions", n, txs)

	// Every answer of a batched key names its operation's index in the transaction (0-based): the
	// POST's replay, its GET and its wallet's history; a key paid alone has no such member.
	for i, w := range s.Info.Wallets[:n] {
		key := fmt.Sprintf("devstack-batch-%04d", i)
		want := paidBy[w.Account]
		check := func(what string, body map[string]any) {
			t.Helper()
			if body["transactionHash"] != want.hash {
				t.Errorf("%s of %s: transactionHash %v, want %s", what, key, body["transactionHash"], want.hash)
			}
			got, ok := body["operationIndex"]
			switch {
			case want.alone && ok:
				t.Errorf("%s of %s (paid alone): operationIndex %v, want none", what, key, got)
			case !want.alone && got != float64(want.index):
				t.Errorf("%s of %s: operationIndex %v, want %d", what, key, got, want.index)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdraw(w.Account, strconv.Itoa(i+1))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		r := do(t, req)
		if r.status != http.StatusOK || r.body["replayed"] != true {
			t.Fatalf("POST %s again = %d %v, want a 200 replay", key, r.status, r.body)
		}
		check("the POST's replay", r.body)
		get, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+w.Account+"/transfers/"+key, nil)
		check("GET", do(t, get).body)
		list, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+w.Account+"/transfers", nil)
		h := do(t, list)
		items, _ := h.body["items"].([]any)
		if len(items) != 1 {
			t.Fatalf("history of %s: %d items, want 1: %v", w.Account, len(items), h.body)
		}
		check("the history entry", items[0].(map[string]any))
	}

	// A synchronous transfer is paid alone: no operationIndex in any answer.
	w := s.Info.Wallets[0].Account
	req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdraw(w, "3")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "devstack-alone-0001")
	r := do(t, req)
	if r.status != http.StatusOK {
		t.Fatalf("synchronous POST = %d %v", r.status, r.body)
	}
	get, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+w+"/transfers/devstack-alone-0001", nil)
	list, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+w+"/transfers?limit=1", nil)
	h := do(t, list)
	items, _ := h.body["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["idempotencyKey"] != "devstack-alone-0001" {
		t.Fatalf("history of %s: %v, want the synchronous transfer first", w, h.body)
	}
	for what, body := range map[string]map[string]any{"POST": r.body, "GET": do(t, get).body, "history": items[0].(map[string]any)} {
		if v, ok := body["operationIndex"]; ok || body["transactionHash"] == nil {
			t.Errorf("%s of a transfer paid alone: operationIndex %v (want none), transactionHash %v", what, v, body["transactionHash"])
		}
	}
}

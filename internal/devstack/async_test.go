package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An async transfer on the local stack (README.md, "Asynchronous transfers"): Prefer:
// respond-async is answered 202 with Location at once; the in-process queue hands the message to
// SubmitterFunction's handler, which pays the wallet; the Location's GET then shows success and a
// repeat of the POST replays it (200).
func TestAsyncTransferSettlesThroughTheQueue(t *testing.T) {
	s := startStack(t)
	wallet := s.Info.Wallets[0].Account
	key := "devstack-async-0001"
	before, err := s.Network.Balance(wallet, s.usdc())
	if err != nil {
		t.Fatal(err)
	}
	postAsync := func() reply {
		req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdraw(wallet, "3.5")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Prefer", "respond-async")
		return do(t, req)
	}
	accepted := postAsync()
	location := "/wallets/" + wallet + "/transfers/" + key
	if accepted.status != http.StatusAccepted || accepted.header.Get("Location") != location ||
		accepted.header.Get("Preference-Applied") != "respond-async" || accepted.body["status"] != "pending" {
		t.Fatalf("POST (respond-async) = %d %v %v", accepted.status, accepted.header, accepted.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.ops.submit.waitRuns(ctx, 1); err != nil {
		t.Fatalf("the submitter did not run: %v", err)
	}
	get, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+location, nil)
	view := do(t, get)
	if view.status != 200 || view.body["status"] != "success" || view.body["transactionHash"] == nil {
		t.Fatalf("GET %s = %d %v", location, view.status, view.body)
	}
	bal, err := s.Network.Balance(wallet, s.usdc())
	if err != nil || bal-before != 35_000_000 {
		t.Fatalf("the wallet gained %d stroops of USDC (%v), want 3.5 USDC", bal-before, err)
	}
	again := postAsync()
	if again.status != 200 || again.body["replayed"] != true || again.body["transactionHash"] != view.body["transactionHash"] {
		t.Fatalf("repeat = %d %v, want the replay", again.status, again.body)
	}
	if n := len(s.ops.queue.Drain()); n != 0 {
		t.Fatalf("%d messages left in the queue", n)
	}
}

package devstack

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseReader reads a text/event-stream response: each event's "event" and "data" fields.
type sseReader struct {
	events chan sseMessage
	resp   *http.Response
}

type sseMessage struct {
	id, kind string
	data     busEvent
}

func openEvents(t *testing.T, url string) *sseReader {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := &sseReader{events: make(chan sseMessage, 100), resp: resp}
	ready := make(chan struct{})
	go func() {
		defer close(r.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		var m sseMessage
		first := true
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if first {
					close(ready) // the comment that opens the stream: subscribed
					first = false
				} else if m.kind != "" {
					r.events <- m
				}
				m = sseMessage{}
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				m.kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m.data); err != nil {
					t.Errorf("data %q: %v", line, err)
				}
			}
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream did not open")
	}
	return r
}

func (r *sseReader) next(t *testing.T) sseMessage {
	t.Helper()
	select {
	case m, ok := <-r.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return sseMessage{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSettlementEventOnTheLocalStack: a transfer through `make run`'s stack produces exactly one
// "Transfer Settled" event, published by the alert function through the SDK's eventbridge client
// to the local PutEvents, on the SSE stream and the console; its replay produces none.
func TestSettlementEventOnTheLocalStack(t *testing.T) {
	console := &lockedBuffer{}
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Ops: OpsOptions{Events: console}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Info.EventsURL != s.Info.LambdaURL+"/_events" {
		t.Fatalf("EventsURL %q", s.Info.EventsURL)
	}
	stream := openEvents(t, s.Info.EventsURL)
	wallet := s.Info.Wallets[0].Account

	first := post(t, s, "events-00000001", withdraw(wallet, "3.25"))
	if first.status != http.StatusOK {
		t.Fatalf("POST: %d %v", first.status, first.body)
	}
	if again := post(t, s, "events-00000001", withdraw(wallet, "3.25")); again.status != http.StatusOK || again.body["replayed"] != true {
		t.Fatalf("replay: %d %v", again.status, again.body)
	}
	// A second transfer: the stream is in order, so any second event of the first would come
	// before this one's.
	if second := post(t, s, "events-00000002", withdraw(wallet, "1")); second.status != http.StatusOK {
		t.Fatalf("POST: %d %v", second.status, second.body)
	}
	var got []sseMessage
	for {
		m := stream.next(t)
		var d struct{ IdempotencyKey string }
		_ = json.Unmarshal(m.data.Detail, &d)
		if d.IdempotencyKey == "events-00000002" {
			break
		}
		got = append(got, m)
	}
	if len(got) != 1 {
		t.Fatalf("%d events before the second transfer's, want exactly one: %+v", len(got), got)
	}
	m := got[0]
	var d map[string]any
	if err := json.Unmarshal(m.data.Detail, &d); err != nil {
		t.Fatal(err)
	}
	if m.kind != "Transfer Settled" || m.data.DetailType != "Transfer Settled" || m.data.Source != "stellar-transfer-orchestrator" ||
		m.data.Version != "0" || len(m.data.ID) != 36 || m.id == "" {
		t.Errorf("event %+v", m)
	}
	for k, v := range map[string]any{
		"status": "success", "walletAddress": wallet, "idempotencyKey": "events-00000001", "amount": "3.25", "asset": "USDC",
		"operationType": "withdraw", "transactionHash": first.body["transactionHash"], "ledger": first.body["ledger"], "schemaVersion": float64(1),
	} {
		if d[k] != v {
			t.Errorf("detail %s = %v, want %v", k, d[k], v)
		}
	}
	if at, err := time.Parse(time.RFC3339, m.data.Time); err != nil || time.Since(at) > time.Minute {
		t.Errorf("time %q: %v", m.data.Time, err)
	}
	if out := console.String(); !strings.Contains(out, `event Transfer Settled: {"version":"0"`) || !strings.Contains(out, `"idempotencyKey":"events-00000001"`) {
		t.Errorf("console:\n%s", out)
	}

	// A late reader asks for the backlog.
	late := openEvents(t, s.Info.EventsURL+"?since=0")
	if m := late.next(t); m.kind != "Transfer Settled" || !strings.Contains(string(m.data.Detail), "events-00000001") {
		t.Errorf("backlog starts with %+v", m)
	}
}

// TestLocalPutEventsRefusesWhatEventBridgeRefuses: an unknown bus and a detail that is no JSON
// object fail per entry; too many entries fail the request.
func TestLocalPutEventsRefusesWhatEventBridgeRefuses(t *testing.T) {
	b := newEventBus(localBus, nil, nil)
	srv := http.NewServeMux()
	srv.HandleFunc("POST /{$}", b.putEvents)
	call := func(body string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "AWSEvents.PutEvents")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		var out map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &out)
		return w.Code, out
	}
	status, out := call(`{"Entries":[` +
		`{"Source":"s","DetailType":"d","Detail":"{}","EventBusName":"other"},` +
		`{"Source":"s","DetailType":"d","Detail":"[1]","EventBusName":"stellar-transfers"},` +
		`{"Source":"s","DetailType":"d","Detail":"{\"a\":1}","EventBusName":"arn:aws:events:us-east-1:000000000000:event-bus/stellar-transfers"}]}`)
	entries, _ := out["Entries"].([]any)
	if status != http.StatusOK || out["FailedEntryCount"] != float64(2) || len(entries) != 3 {
		t.Fatalf("%d %v", status, out)
	}
	codes := []string{}
	for _, e := range entries {
		c, _ := e.(map[string]any)["ErrorCode"].(string)
		codes = append(codes, c)
	}
	if strings.Join(codes, ",") != "NotAuthorized,MalformedDetail," {
		t.Errorf("codes %v", codes)
	}
	if status, _ := call(`{"Entries":[` + strings.Repeat(`{"Source":"s","DetailType":"d","Detail":"{}","EventBusName":"stellar-transfers"},`, 10) +
		`{"Source":"s","DetailType":"d","Detail":"{}","EventBusName":"stellar-transfers"}]}`); status != http.StatusBadRequest {
		t.Errorf("11 entries: %d", status)
	}
}

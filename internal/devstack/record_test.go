package devstack

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A transfer's lasting record end to end on the local stack: the alert function archives the
// settlement from the stream; GET answers from the live item while it exists (marked
// outsideReplayWindow once its TTL has passed) and from the record once the item is gone; the
// wallet's history lists it once; the same key after the window is a new transfer that the record
// never refuses or replays, and both transfers stay in the history.
func TestALastingRecordOutlivesTheReplayWindow(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Clock: clock})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	wallet := s.Info.Wallets[0].Account
	const key = "devstack-record-0001"
	stream := openEvents(t, s.Info.EventsURL)
	get := func(path string) reply {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+path, nil)
		return do(t, req)
	}
	path := "/wallets/" + wallet + "/transfers/" + key

	first := post(t, s, key, withdraw(wallet, "2"))
	if first.status != http.StatusOK {
		t.Fatalf("POST = %d %v", first.status, first.body)
	}
	hash := first.body["transactionHash"]
	if m := stream.next(t); m.kind != "Transfer Settled" {
		t.Fatalf("event %q, want Transfer Settled", m.kind)
	}
	// The settled event is published after the record of the same stream record is written.
	a, err := s.Service.Store.LatestArchive(context.Background(), transfer.StoreKey(wallet, key))
	if err != nil || a.Record.Status != transfer.StatusReplayable || a.Record.Result == nil || a.Record.Result.TransactionHash != hash {
		t.Fatalf("archive %+v, %v", a, err)
	}
	if r := get(path); r.status != http.StatusOK || r.body["transactionHash"] != hash || r.body["outsideReplayWindow"] != nil {
		t.Fatalf("GET within the window = %d %v", r.status, r.body)
	}

	// Past the replay window; the item expired but is not deleted yet (DynamoDB deletes late).
	clock.Advance(25 * time.Hour)
	if r := get(path); r.status != http.StatusOK || r.body["transactionHash"] != hash || r.body["outsideReplayWindow"] != true {
		t.Fatalf("GET of the expired item = %d %v", r.status, r.body)
	}
	// The TTL deletes it: the record answers.
	live, err := s.Service.Store.Get(context.Background(), transfer.StoreKey(wallet, key))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Service.Store.Delete(context.Background(), live.StoreKey, transfer.Expect(live)); err != nil {
		t.Fatal(err)
	}
	if r := get(path); r.status != http.StatusOK || r.body["status"] != "success" || r.body["transactionHash"] != hash ||
		r.body["ledger"] != first.body["ledger"] || r.body["outsideReplayWindow"] != true {
		t.Fatalf("GET from the record = %d %v", r.status, r.body)
	}
	history := func() []map[string]any {
		t.Helper()
		r := get("/wallets/" + wallet + "/transfers?limit=1")
		var all []map[string]any
		for {
			if r.status != http.StatusOK {
				t.Fatalf("history = %d %v", r.status, r.body)
			}
			for _, it := range r.body["items"].([]any) {
				if m := it.(map[string]any); m["idempotencyKey"] == key {
					all = append(all, m)
				}
			}
			next, _ := r.body["nextCursor"].(string)
			if next == "" {
				return all
			}
			r = get("/wallets/" + wallet + "/transfers?limit=1&cursor=" + next)
		}
	}
	if h := history(); len(h) != 1 || h[0]["transactionHash"] != hash || h[0]["outsideReplayWindow"] != true {
		t.Fatalf("history of the key %v", h)
	}

	// The same key again: a new transfer, neither refused nor replayed by the record.
	second := post(t, s, key, withdraw(wallet, "2"))
	if second.status != http.StatusOK || second.body["replayed"] != false || second.body["transactionHash"] == hash {
		t.Fatalf("POST after the window = %d %v", second.status, second.body)
	}
	if r := get(path); r.status != http.StatusOK || r.body["transactionHash"] != second.body["transactionHash"] || r.body["outsideReplayWindow"] != nil {
		t.Fatalf("GET of the new transfer = %d %v", r.status, r.body)
	}
	if m := stream.next(t); m.kind != "Transfer Settled" {
		t.Fatalf("event %q, want Transfer Settled", m.kind)
	}
	h := history()
	if len(h) != 2 || h[0]["transactionHash"] != second.body["transactionHash"] || h[0]["outsideReplayWindow"] != nil ||
		h[1]["transactionHash"] != hash || h[1]["outsideReplayWindow"] != true {
		t.Fatalf("history of the key after its second transfer %v", h)
	}

	// Bad input is the client's mistake, never a 500.
	for _, p := range []string{
		"/wallets/" + wallet + "/transfers?cursor=eyJnc2kyc2siOiJ4IiwicGsiOiJyZWNvcmQ6eCJ9",
		"/wallets/" + wallet + "/transfers/short",
		"/wallets/GABC/transfers/" + key,
	} {
		if r := get(p); r.status >= 500 || r.status == http.StatusOK {
			t.Errorf("GET %s = %d %v", p, r.status, r.body)
		}
	}
}

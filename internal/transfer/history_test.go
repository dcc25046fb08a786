package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// historyStore answers ListByWallet with recs, or err; it records what it was asked.
type historyStore struct {
	recs   []transfer.Record
	next   string
	err    error
	wallet string
	limit  int
	cursor string
}

func (h *historyStore) ListByWallet(_ context.Context, wallet string, limit int, cursor string) ([]transfer.Record, string, error) {
	h.wallet, h.limit, h.cursor = wallet, limit, cursor
	return h.recs, h.next, h.err
}

// WalletHash is sha256("wallet:" + the upper-case address) in hex: a known vector (Python's
// hashlib.sha256(b"wallet:GBRP...").hexdigest()), the same for any case, never StoreKey's hash.
func TestWalletHash(t *testing.T) {
	const w = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	const want = "2a569091c1c543a1250483aa90430303325429bf7cfff08d418d44ecb78924b7"
	if got := transfer.WalletHash(w); got != want {
		t.Fatalf("WalletHash = %s, want %s", got, want)
	}
	if got := transfer.WalletHash(strings.ToLower(w)); got != want {
		t.Fatalf("WalletHash of the lower-case address = %s, want %s", got, want)
	}
	if strings.Contains(transfer.StoreKey(w, "k"), want[:16]) {
		t.Fatal("WalletHash shares StoreKey's hash: the domains are not separated")
	}
}

func TestHistory(t *testing.T) {
	const w = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: w, Amount: "12.5", Asset: "USDC", Stroops: 125_000_000}
	rec := func(key string, status transfer.Status, result *transfer.Result, expiresAt int64) transfer.Record {
		return transfer.Record{StoreKey: transfer.StoreKey(w, key), ClientKey: key, Status: status, Request: req, Result: result,
			ExpiresAt: expiresAt, CreatedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Second)}
	}
	hash := strings.Repeat("ab", 32)
	store := &historyStore{next: "next-page", recs: []transfer.Record{
		rec("order-success", transfer.StatusReplayable, &transfer.Result{TransactionHash: hash, Ledger: 7}, now.Unix()+3600),
		rec("order-expired", transfer.StatusReplayable, &transfer.Result{TransactionHash: hash, Ledger: 6}, now.Unix()-1),
		rec("order-failed", transfer.StatusRejected, &transfer.Result{Code: transfer.CodeTransactionFailed, TransactionHash: hash, ResultCodes: []string{"tx_failed"}}, now.Unix()+3600),
		rec("order-doubt", transfer.StatusInDoubt, &transfer.Result{Code: transfer.CodeTimeout}, 0),
		rec("order-flight", transfer.StatusInFlight, nil, 0),
	}}
	stranger := rec("order-stranger", transfer.StatusInFlight, nil, 0)
	stranger.Request.WalletAddress = "GDXRGXFYU77KVAF37QVLG4D27EKEESYRVLXMAFSDBA4AZIIBQJ25UZRJ"
	store.recs = append(store.recs, stranger)
	o := &transfer.Orchestrator{Clock: vclock.New(now), WalletHistory: store}
	page, err := o.History(context.Background(), transfer.Wallet{Address: w}, 5, "cursor-1")
	if err != nil {
		t.Fatal(err)
	}
	if store.wallet != w || store.limit != 5 || store.cursor != "cursor-1" {
		t.Fatalf("asked the store for %q %d %q", store.wallet, store.limit, store.cursor)
	}
	if page.Next != "next-page" {
		t.Errorf("next %q", page.Next)
	}
	var got []string
	for _, e := range page.Entries {
		got = append(got, fmt.Sprintf("%s %s %v %s %d %s %s %s %v", e.ClientKey, e.Status, e.InDoubt, e.TransactionHash, e.Ledger, e.Operation, e.Amount, e.Asset, e.OutsideReplayWindow))
		if !e.CreatedAt.Equal(now.Add(-time.Minute)) || !e.UpdatedAt.Equal(now.Add(-time.Second)) {
			t.Errorf("%s: times %v %v", e.ClientKey, e.CreatedAt, e.UpdatedAt)
		}
	}
	want := []string{
		"order-success success false " + hash + " 7 withdraw 12.5 USDC false",
		"order-expired success false " + hash + " 6 withdraw 12.5 USDC true",
		"order-failed error false " + hash + " 0 withdraw 12.5 USDC false",
		"order-doubt pending true  0 withdraw 12.5 USDC false",
		"order-flight pending false  0 withdraw 12.5 USDC false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant (the expired one outside its window, another wallet's left out):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p := page.Entries[2].Problem; p == nil || p.Code != transfer.CodeTransactionFailed || len(p.ResultCodes) != 1 {
		t.Errorf("the rejection's problem: %+v", p)
	}

	// Refusals: each a typed error with its code and status; the store is not asked.
	refused := func(name string, o *transfer.Orchestrator, limit int, cursor string, code string, kind transfer.Kind) {
		t.Helper()
		_, err := o.History(context.Background(), transfer.Wallet{Address: w}, limit, cursor)
		var pe transfer.ProblemError
		if !errors.As(err, &pe) || pe.Problem().Code != code || pe.Problem().Kind != kind {
			t.Errorf("%s: %v, want %s (%s)", name, err, code, kind)
		}
	}
	for _, limit := range []int{-1, 0, transfer.MaxHistoryLimit + 1} {
		store.limit = -100
		refused(fmt.Sprintf("limit %d", limit), o, limit, "", transfer.CodeLimitInvalid, transfer.KindMalformed)
		if store.limit != -100 {
			t.Errorf("limit %d reached the store", limit)
		}
	}
	for _, limit := range []int{1, transfer.MaxHistoryLimit} {
		if _, err := o.History(context.Background(), transfer.Wallet{Address: w}, limit, ""); err != nil {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	bad := &transfer.Orchestrator{Clock: vclock.New(now), WalletHistory: &historyStore{err: fmt.Errorf("dynamo: %w: bad", transfer.ErrBadCursor)}}
	refused("bad cursor", bad, 20, "x", transfer.CodeCursorInvalid, transfer.KindMalformed)
	down := &transfer.Orchestrator{Clock: vclock.New(now), WalletHistory: &historyStore{err: errors.New("throttled")}}
	refused("store down", down, 20, "", transfer.CodeStoreUnavailable, transfer.KindUnavailable)
	none := &transfer.Orchestrator{Clock: vclock.New(now)}
	if _, err := none.History(context.Background(), transfer.Wallet{Address: w}, 20, ""); err == nil {
		t.Error("no WalletHistory: no error")
	} else if _, typed := errors.AsType[transfer.ProblemError](err); typed {
		t.Errorf("no WalletHistory is the wiring's bug, not a typed answer: %v", err)
	}
	// A wallet with nothing: an empty page, not an error.
	empty := &transfer.Orchestrator{Clock: vclock.New(now), WalletHistory: &historyStore{}}
	if page, err := empty.History(context.Background(), transfer.Wallet{Address: w}, 20, ""); err != nil || len(page.Entries) != 0 || page.Entries == nil || page.Next != "" {
		t.Errorf("empty: %+v %v", page, err)
	}
}

package stellar_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// hookRPC is an http.RoundTripper to the network that runs after once, the first time a call
// of method has been answered, before the answer reaches the caller: a ledger closing between
// two calls of a read.
type hookRPC struct {
	method string
	after  func()
	done   bool
}

func (h *hookRPC) RoundTrip(req *http.Request) (*http.Response, error) {
	method, err := rpcMethod(req)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && !h.done && h.after != nil && method == h.method {
		h.done = true
		h.after()
	}
	return resp, err
}

// The day so far ends just after its last ledger read: a ledger that closes between the call
// that names the latest ledger (getLatestLedger) and the call that reads its close time is not
// covered by the day's end unless it is read. Otherwise the day so far claims to cover that
// ledger's close time, and a vault payment in it is neither listed nor counted.
func TestVaultDaySoFarEndsAtItsLastLedger(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	r := newDayRig(t, day.Add(time.Hour))
	r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", r.wallet.Address(), "1")}, nil, false, r.keys.Vault)
	r.closeAt(day.Add(time.Hour + 5*time.Second))
	r.clock.Advance(time.Hour)
	late := day.Add(2*time.Hour + 5*time.Second)
	hook := &hookRPC{method: "getLatestLedger"}
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.n.RPCURL(), Passphrase: r.n.Passphrase(), VaultAccount: r.keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock,
		HTTPClient: &http.Client{Transport: hook, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	hook.after = func() {
		r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", r.wallet.Address(), "2")}, nil, false, r.keys.Vault)
		r.closeAt(late)
	}
	got, err := l.VaultDay(context.Background(), day, true)
	if err != nil {
		t.Fatal(err)
	}
	if !hook.done {
		t.Fatal("no ledger closed during the read")
	}
	if !got.End.After(got.LastClose) || got.End.After(got.LastClose.Add(time.Second)) {
		t.Fatalf("the day so far ends at %s, its last ledger %d closed at %s", got.End, got.LastLedger, got.LastClose)
	}
	for _, p := range got.Payments {
		if p.Ledger > got.LastLedger {
			t.Fatalf("payment of ledger %d after the last ledger %d", p.Ledger, got.LastLedger)
		}
	}
	if !got.End.After(late) && len(got.Payments) != 1 || got.End.After(late) && len(got.Payments) != 2 {
		t.Fatalf("the day so far to %s lists %d payments: %+v", got.End, len(got.Payments), got.Payments)
	}
}

// Every payment of the vault's is found by the events that name its G... account, whichever
// form of it the operation names: an incoming payment to a muxed address of the vault, an
// outgoing one whose operation source is a muxed address of the vault inside a channel's fee bump;
// and a failed transaction of the vault's alone in the day's last ledger (whose close time is read
// from that failed transaction) is the day's, FAILED.
func TestVaultDayFindsTheVaultUnderItsMuxedAddresses(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	r := newDayRig(t, day.Add(time.Hour))
	vaultM, err := xdr.MuxedAccountFromAccountId(r.keys.Vault.Address(), 42)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := r.send(r.wallet, []txnbuild.Operation{r.pay("", vaultM.Address(), "3")}, nil, false, r.wallet)
	out, outer := r.send(r.channel, []txnbuild.Operation{r.pay(vaultM.Address(), r.wallet.Address(), "2")}, nil, true, r.channel, r.keys.Vault)
	r.closeAt(day.Add(time.Hour + 5*time.Second))
	r.clock.Advance(day.Add(24*time.Hour - 2*time.Second).Sub(r.clock.Now()))
	failed, _ := r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", r.wallet.Address(), "1000000")}, nil, false, r.keys.Vault)
	last := r.closeAt(day.Add(24*time.Hour - time.Second))
	r.closeAt(day.Add(24 * time.Hour))
	got, err := r.ledger.VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastLedger != last.Sequence || !got.LastClose.Equal(last.CloseTime) {
		t.Fatalf("last ledger %d at %s, want %d at %s", got.LastLedger, got.LastClose, last.Sequence, last.CloseTime)
	}
	if got.Failed[failed] != last.Sequence {
		t.Fatalf("failed %v, want %s in %d", got.Failed, failed, last.Sequence)
	}
	if len(got.Payments) != 2 {
		t.Fatalf("payments %+v", got.Payments)
	}
	byHash := map[string]transfer.ChainPayment{}
	for _, p := range got.Payments {
		byHash[p.Hash] = p
	}
	if p := byHash[in]; p.Direction != transfer.DirectionIn || p.Stroops != 30_000_000 || p.Counterparty != r.wallet.Address() {
		t.Fatalf("incoming to the muxed vault: %+v", p)
	}
	if p := byHash[out]; p.Direction != transfer.DirectionOut || p.Stroops != 20_000_000 || p.OuterHash != outer || p.Counterparty != r.wallet.Address() {
		t.Fatalf("outgoing from the muxed vault: %+v", p)
	}
	if m := got.Balances["USDC"]; !m.Readable || m.Net != 10_000_000 {
		t.Fatalf("USDC movement %+v, want +1", m)
	}
}

// txFaults is an http.RoundTripper to the network whose first getTransaction answer waits until
// seven more have been answered (the eight readers finishing out of order), and which answers
// 503 for every getTransaction naming fail.
type txFaults struct {
	mu       sync.Mutex
	fail     string
	answered int
	first    bool
	release  chan struct{}
}

func (f *txFaults) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	if !bytes.Contains(b, []byte(`"getTransaction"`)) {
		return http.DefaultTransport.RoundTrip(req)
	}
	if f.fail != "" && bytes.Contains(b, []byte(f.fail)) {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: io.NopCloser(strings.NewReader("busy")), Header: http.Header{}, Request: req}, nil
	}
	f.mu.Lock()
	wait := !f.first
	f.first = true
	f.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if wait {
		<-f.release
		return resp, err
	}
	f.mu.Lock()
	f.answered++
	if f.answered == 7 && f.fail == "" {
		close(f.release)
	}
	f.mu.Unlock()
	return resp, err
}

// The vault's transactions are read eight at a time: answers that come back out of order are the
// day's payments in ledger order all the same, and one that cannot be read refuses the day,
// never a day reported without it.
func TestVaultDayReadsTransactionsOutOfOrderOrNotAtAll(t *testing.T) {
	r := newDayRig(t, time.Date(2033, 5, 18, 1, 0, 0, 0, time.UTC))
	day := r.busyDay(0, 12, 12)
	want, err := r.ledger.VaultDay(context.Background(), day, false)
	if err != nil || len(want.Payments) != 12 {
		t.Fatalf("%d payments, %v", len(want.Payments), err)
	}
	ledgerOf := func(f *txFaults) *stellar.RPCLedger {
		l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.n.RPCURL(), Passphrase: r.n.Passphrase(), VaultAccount: r.keys.Vault.Address(),
			Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock,
			HTTPClient: &http.Client{Transport: f, Timeout: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	got, err := ledgerOf(&txFaults{release: make(chan struct{})}).VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want.Payments {
		if got.Payments[i] != want.Payments[i] || i > 0 && got.Payments[i].Ledger <= got.Payments[i-1].Ledger {
			t.Fatalf("payment %d: %+v, want %+v", i, got.Payments[i], want.Payments[i])
		}
	}
	f := &txFaults{fail: want.Payments[9].Hash, release: make(chan struct{})}
	close(f.release)
	f.first = true
	if got, err := ledgerOf(f).VaultDay(context.Background(), day, false); err == nil {
		t.Fatalf("a day with a transaction not read: %d payments", len(got.Payments))
	}
}

// pageCap is an http.RoundTripper to the network that answers getEvents with pages of one
// event whatever limit was asked (a proxy or an instance with a lower max-events-limit that
// caps rather than refuses): its page ends at its last event, its cursor that event's id.
type pageCap struct{}

func (pageCap) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, []byte(`"getEvents"`)) {
		b = bytes.Replace(b, []byte(`"limit":1000`), []byte(`"limit":1`), 1)
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.ContentLength = int64(len(b))
	return http.DefaultTransport.RoundTrip(req)
}

// A page ends its scan window only when its cursor says so (the window's end: the largest
// transaction, operation and event index of its last ledger), not when it holds fewer events
// than asked: a page cut short in the day's last ledger (the vault's fee event, which comes before
// every operation's event of its ledger) is followed by the next, which holds the wallet's payment to the vault in that ledger.
func TestVaultDayReadsOnUntilTheWindowsEnd(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	r := newDayRig(t, day.Add(time.Hour))
	r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", r.wallet.Address(), "1"), r.pay("", r.wallet.Address(), "1")}, nil, false, r.keys.Vault)
	in, _ := r.send(r.wallet, []txnbuild.Operation{r.pay("", r.keys.Vault.Address(), "3")}, nil, false, r.wallet)
	r.closeAt(day.Add(time.Hour + 5*time.Second))
	r.closeAt(day.Add(24 * time.Hour))
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.n.RPCURL(), Passphrase: r.n.Passphrase(), VaultAccount: r.keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock,
		HTTPClient: &http.Client{Transport: pageCap{}, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range got.Payments {
		found = found || p.Hash == in
	}
	if len(got.Payments) != 3 || !found {
		t.Fatalf("payments %+v, want the vault's two and the wallet's %s", got.Payments, in)
	}
}

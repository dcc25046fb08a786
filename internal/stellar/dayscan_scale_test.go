package stellar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// rpcCounter is an http.RoundTripper that counts the JSON-RPC calls through it by method, and
// the bytes of their responses' bodies.
type rpcCounter struct {
	mu      sync.Mutex
	calls   map[string]int
	bytes   int64
	bytesBy map[string]int64
}

func newRPCCounter() *rpcCounter {
	return &rpcCounter{calls: map[string]int{}, bytesBy: map[string]int64{}}
}

func (c *rpcCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	method, err := rpcMethod(req)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	out, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(out))
	c.mu.Lock()
	c.calls[method]++
	c.bytes += int64(len(out))
	c.bytesBy[method] += int64(len(out))
	c.mu.Unlock()
	return resp, err
}

// reset forgets what was counted.
func (c *rpcCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls, c.bytes, c.bytesBy = map[string]int{}, 0, map[string]int64{}
}

// total is the calls counted, all methods.
func (c *rpcCounter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// String lists the calls by method, sorted.
func (c *rpcCounter) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for k, v := range c.calls {
		parts = append(parts, fmt.Sprintf("%s=%d (%d bytes)", k, v, c.bytesBy[k]))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// countedLedger is an RPCLedger of r's network whose calls c counts.
func (r *dayRig) countedLedger(c *rpcCounter) *stellar.RPCLedger {
	r.t.Helper()
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.n.RPCURL(), Passphrase: r.n.Passphrase(), VaultAccount: r.keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock,
		HTTPClient: &http.Client{Transport: c, Timeout: time.Minute}})
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

// busyDay builds a day on r: ledgers every 5 s from 01:00, background payments (none the vault's)
// perLedger a ledger over ledgers ledgers, and vault payments to the wallet, one a ledger in the
// first vault ledgers; the day ends with a ledger at 00:00:01 the next day. It returns the day.
func (r *dayRig) busyDay(perLedger, ledgers, vault int) time.Time {
	r.t.Helper()
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	if perLedger > 0 {
		if err := r.n.SetCongestion(stellarsim.Congestion{Seed: 1, PerLedger: perLedger}); err != nil {
			r.t.Fatal(err)
		}
	}
	for i := 1; i <= ledgers; i++ {
		at := day.Add(time.Hour + time.Duration(i)*5*time.Second)
		if i <= vault {
			r.clock.Advance(at.Add(-time.Second).Sub(r.clock.Now()))
			r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", r.wallet.Address(), "1")}, nil, false, r.keys.Vault)
		}
		r.closeAt(at)
	}
	r.n.ClearCongestion()
	r.closeAt(day.Add(24*time.Hour + time.Second))
	return day
}

// BenchmarkVaultDayCalls reads a day of N vault payments among M background payments (none the
// vault's; 40 ledgers of M/40) from the local network in this process and reports the RPC calls
// and the bytes of their answers a read takes (README.md, "The daily reconciliation", Limits).
//
//	go test -run '^$' -bench BenchmarkVaultDayCalls -benchtime 3x ./internal/stellar/
func BenchmarkVaultDayCalls(b *testing.B) {
	for _, c := range []struct{ perLedger, ledgers, vault int }{{0, 40, 10}, {500, 40, 10}, {500, 40, 40}} {
		b.Run(fmt.Sprintf("N=%d/M=%d", c.vault, c.perLedger*c.ledgers), func(b *testing.B) {
			day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
			r := newDayRig(b, day.Add(time.Hour))
			r.busyDay(c.perLedger, c.ledgers, c.vault)
			cnt := newRPCCounter()
			l := r.countedLedger(cnt)
			b.ResetTimer()
			for b.Loop() {
				cnt.reset()
				got, err := l.VaultDay(context.Background(), day, false)
				if err != nil {
					b.Fatal(err)
				}
				if len(got.Payments) != c.vault {
					b.Fatalf("%d payments, want %d", len(got.Payments), c.vault)
				}
			}
			b.ReportMetric(float64(cnt.total()), "calls/op")
			b.ReportMetric(float64(cnt.bytes), "bytes/op")
			b.Logf("%s", cnt)
		})
	}
}

// callsOf is the calls counted by method.
func (c *rpcCounter) callsOf() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// A day read from the events that name the vault: with 6,000 background payments among its 30
// ledgers (none the vault's) it takes no more calls than a quiet day of as many ledgers, and a
// few tens of kilobytes: the binary search for the day's ledgers (getLatestLedger, then per probe
// getTransactions' first transaction, and getLedgers only for a ledger without one: a quiet
// day's ledgers mostly), one getEvents page, and one getTransaction per transaction of the
// vault's; two more vault payments are two more getTransaction calls.
func TestVaultDayCallsFollowTheVaultNotTheNetwork(t *testing.T) {
	background := 200
	if testing.Short() {
		background = 40
	}
	read := func(perLedger, vault int) (map[string]int, int64) {
		day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
		r := newDayRig(t, day.Add(time.Hour))
		r.busyDay(perLedger, 30, vault)
		cnt := newRPCCounter()
		got, err := r.countedLedger(cnt).VaultDay(context.Background(), day, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Payments) != vault || got.Transactions != vault || got.FirstLedger != 1 || got.LastLedger != 31 {
			t.Fatalf("background %d a ledger: %d payments of %d transactions read, ledgers %d to %d", perLedger,
				len(got.Payments), got.Transactions, got.FirstLedger, got.LastLedger)
		}
		if m := got.Balances["USDC"]; !m.Readable || m.Net != -int64(vault)*unit {
			t.Fatalf("balance %+v", m)
		}
		t.Logf("background %d a ledger, %d vault payments: %s; %d bytes", perLedger, vault, cnt, cnt.bytes)
		return cnt.callsOf(), cnt.bytes
	}
	want := func(ledgers, vault int) map[string]int {
		return map[string]int{"getLatestLedger": 1, "getTransactions": 13, "getLedgers": ledgers, "getEvents": 1, "getTransaction": vault}
	}
	quiet, _ := read(0, 3)
	busy, busyBytes := read(background, 3)
	busier, _ := read(background, 5)
	// Busy, only the genesis ledger, the day's last and the latest have no transaction of their
	// own to read a close time from.
	if !maps.Equal(quiet, want(11, 3)) || !maps.Equal(busy, want(3, 3)) || !maps.Equal(busier, want(3, 5)) {
		t.Fatalf("calls: quiet %v, busy %v, busy with 5 vault payments %v", quiet, busy, busier)
	}
	if busyBytes > 64<<10 {
		t.Fatalf("%d bytes read for a busy day", busyBytes)
	}
}

// Contract mode: a deposit and a withdraw of the vault contract, sent from channel accounts in
// the fee account's fee bumps, are the day's payments (the calls found by the vault contract's
// own events and the fee account's fee events), read in one getEvents page and one
// getTransaction per transaction of the vault's (the channels' creation too), not one for each
// of the background payments applied beside them.
func TestVaultDayInContractMode(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 2})
	day := r.clock.Now().UTC().Truncate(24 * time.Hour)
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 1, PerLedger: 50}); err != nil {
		t.Fatal(err)
	}
	dep := r.mustTransfer("day-deposit-01", transfer.Deposit, r.wallet, 5)
	wd := r.mustTransfer("day-withdraw-1", transfer.Withdraw, r.wallet, 2)
	r.net.ClearCongestion()
	r.clock.Advance(day.Add(24*time.Hour + 10*time.Second).Sub(r.clock.Now()))
	r.clock.Advance(contractLagMax)
	cnt := newRPCCounter()
	cfg := r.inner
	cfg.HTTPClient = &http.Client{Transport: cnt, Timeout: time.Minute}
	inner, err := stellar.NewRPCLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := stellar.NewContractLedger(inner, r.cc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ContractMode || len(got.Payments) != 2 || len(got.Failed) != 0 {
		t.Fatalf("day %+v", got)
	}
	p0, p1 := got.Payments[0], got.Payments[1]
	if p0.Hash != dep.TransactionHash || p0.Direction != transfer.DirectionIn || p0.Function != "deposit" || p0.Stroops != 5*unit ||
		p0.Contract != r.contract || p0.Counterparty != r.wallet || p0.OuterHash == "" ||
		p1.Hash != wd.TransactionHash || p1.Direction != transfer.DirectionOut || p1.Function != "withdraw" || p1.Stroops != 2*unit {
		t.Fatalf("payments %+v", got.Payments)
	}
	calls := cnt.callsOf()
	t.Logf("contract mode: %s; %d transactions read of %d applied", cnt, got.Transactions, len(r.net.Applied()))
	// The channels' creation (one transaction of the fee account's), the deposit and the withdraw.
	want := map[string]int{"getLatestLedger": 1, "getTransactions": 7, "getLedgers": 3, "getEvents": 1, "getTransaction": 3}
	if !maps.Equal(calls, want) || got.Transactions != 3 || len(r.net.Applied()) != 53 {
		t.Fatalf("calls %v for %d transactions read of %d applied", calls, got.Transactions, len(r.net.Applied()))
	}
}

// Pages of two events: three vault payments in the day's last ledgers are six events (each
// payment's fee and transfer), three full pages, the last ending in the day's last ledger, and a
// fourth page that finds nothing after it; the payments read are the same as in one page.
func TestVaultDayPagesEvents(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	r := newDayRig(t, day.Add(time.Hour))
	r.busyDay(0, 3, 3)
	cnt := newRPCCounter()
	l := r.countedLedger(cnt)
	one, err := l.VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stellar.SetDayEventsPageForTest(2))
	cnt.reset()
	paged, err := l.VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := cnt.callsOf()["getEvents"]; got != 4 || len(paged.Payments) != 3 || paged.LastLedger != paged.Payments[2].Ledger {
		t.Fatalf("%d getEvents calls, %+v", got, paged)
	}
	for i := range one.Payments {
		if paged.Payments[i] != one.Payments[i] {
			t.Fatalf("payment %d: %+v paged, %+v in one page", i, paged.Payments[i], one.Payments[i])
		}
	}
}

// A day longer than stellar-rpc's scan limit (10,000 ledgers a getEvents request): 10,010
// ledgers, a vault payment in the first and in the last; the first request's window ends before
// the day's last ledger, the second goes on from its cursor and finds the last payment.
func TestVaultDayBeyondOneEventsWindow(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	r := newDayRig(t, day.Add(time.Second))
	const ledgers = 10_010
	for i := 1; i <= ledgers; i++ {
		at := day.Add(time.Second + time.Duration(i)*5*time.Second)
		if i == 1 || i == ledgers {
			r.clock.Advance(at.Add(-time.Second).Sub(r.clock.Now()))
			r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", r.wallet.Address(), "1")}, nil, false, r.keys.Vault)
		}
		r.closeAt(at)
	}
	r.closeAt(day.Add(24*time.Hour + time.Second))
	cnt := newRPCCounter()
	got, err := r.countedLedger(cnt).VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastLedger-got.FirstLedger+1 != ledgers+1 || len(got.Payments) != 2 || got.Payments[1].Ledger != got.LastLedger {
		t.Fatalf("day %d to %d, payments %+v", got.FirstLedger, got.LastLedger, got.Payments)
	}
	if calls := cnt.callsOf(); calls["getEvents"] != 2 || calls["getTransaction"] != 2 {
		t.Fatalf("calls %v", calls)
	}
}

// trimmedRPC answers getTransaction NOT_FOUND with a history that starts at oldest, as an RPC
// whose retention trimmed the day's first ledgers while the day was being read; every other call
// goes to the network.
type trimmedRPC struct{ oldest uint32 }

func (f trimmedRPC) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method != "getTransaction" {
		return http.DefaultTransport.RoundTrip(req)
	}
	out := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"status":"NOT_FOUND","latestLedger":%d,"latestLedgerCloseTime":"0","oldestLedger":%d,"oldestLedgerCloseTime":"0"}}`,
		m.ID, f.oldest+10, f.oldest)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(out)), Request: req}, nil
}

// A transaction getEvents named that getTransaction no longer finds, RPC's history now starting
// after the day's first ledger: the day is refused as not covered, never reported without it.
func TestVaultDayRefusedWhenHistoryIsTrimmedWhileReading(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	r := newDayRig(t, day.Add(time.Hour))
	r.busyDay(0, 3, 3)
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.n.RPCURL(), Passphrase: r.n.Passphrase(), VaultAccount: r.keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock,
		HTTPClient: &http.Client{Transport: trimmedRPC{oldest: 3}, Timeout: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.VaultDay(context.Background(), day, false); !errors.Is(err, transfer.ErrHistoryNotCovered) {
		t.Fatalf("trimmed while read: %v", err)
	}
}

// rpcMethod is the JSON-RPC method a request to Stellar RPC calls, its body left readable for the
// transport that sends it. Errors: reading the body.
func rpcMethod(req *http.Request) (string, error) {
	if req.Body == nil {
		return "", nil
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return "", err
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(b, &m)
	return m.Method, nil
}

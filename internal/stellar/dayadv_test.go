package stellar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
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
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &m)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil && !h.done && h.after != nil && m.Method == h.method {
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

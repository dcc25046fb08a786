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

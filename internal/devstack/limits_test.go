package devstack

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestARejectedTransferGivesItsDailyChargeBack: on `make run`'s stack with a wallet's daily cap
// of 10 USDC, a payment of 10 to a wallet without a USDC trustline fails on the ledger (422
// TRANSACTION_FAILED, nothing moved); the alert function, reading the table's stream, gives its
// charge back before it publishes the rejection's settlement event, so once that event is out
// the wallet's counter is back to 0 and the next transfer of 10 is judged by the ledger again,
// not refused by the limit.
func TestARejectedTransferGivesItsDailyChargeBack(t *testing.T) {
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Ops: OpsOptions{Events: &lockedBuffer{}},
		Getenv: func(k string) string { return map[string]string{"LIMITS": `{"USDC":{"walletDaily":"10"}}`}[k] }})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if want := map[string]AssetLimits{"USDC": {WalletDaily: "10"}}; !reflect.DeepEqual(s.Info.Limits, want) {
		t.Errorf("Info.Limits = %+v, want %+v: the banner shows the limits in force from it", s.Info.Limits, want)
	}
	stream := openEvents(t, s.Info.EventsURL)
	kp, err := keypair.Random()
	if err != nil {
		t.Fatal(err)
	}
	wallet := kp.Address() // funded, no USDC trustline: a payment to it fails op_no_trust
	if err := s.Network.CreateAccount(wallet, 1e11); err != nil {
		t.Fatal(err)
	}
	if r := post(t, s, "limit-giveback-1", withdraw(wallet, "10")); r.status != http.StatusUnprocessableEntity || r.body["code"] != transfer.CodeTransactionFailed {
		t.Fatalf("POST to a wallet without a trustline: %d %v", r.status, r.body)
	}
	for {
		m := stream.next(t)
		var d struct{ IdempotencyKey string }
		_ = json.Unmarshal(m.data.Detail, &d)
		if d.IdempotencyKey == "limit-giveback-1" {
			break
		}
	}
	rec, err := s.Service.Store.Get(context.Background(), transfer.StoreKey(wallet, "limit-giveback-1"))
	if err != nil || rec.Status != transfer.StatusRejected || len(rec.Charges) != 1 || rec.Charges[0].Scope != transfer.LimitWallet {
		t.Fatalf("the rejected item: %+v, %v; want its wallet's charge", rec, err)
	}
	if n, err := s.Service.Store.Counter(context.Background(), rec.Charges[0].Counter); err != nil || n != 0 {
		t.Fatalf("the wallet's counter after the rejection's event: %d, %v; want 0", n, err)
	}
	if r := post(t, s, "limit-giveback-2", withdraw(wallet, "10")); r.status != http.StatusUnprocessableEntity || r.body["code"] != transfer.CodeTransactionFailed {
		t.Fatalf("the next transfer of the day: %d %v, want the ledger's TRANSACTION_FAILED again", r.status, r.body)
	}
}

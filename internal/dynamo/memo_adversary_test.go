package dynamo_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// muxedOf is the M... address (SEP-23) of account with id.
func muxedOf(t *testing.T, account string, id uint64) string {
	t.Helper()
	key, err := strkey.Decode(strkey.VersionByteAccountID, account)
	if err != nil {
		t.Fatal(err)
	}
	raw := binary.BigEndian.AppendUint64(append([]byte(nil), key...), id)
	m, err := strkey.Encode(strkey.VersionByteMuxedAccount, raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A muxed wallet sees only its own transfers (transfer doc.go, "Muxed wallets"), and that holds for
// the history's cursor too: the next cursor a muxed wallet is handed must not name another muxed
// address's transfer. The store lists the account's whole scope and transfer.History filters the
// page, but the next cursor is the scope's last evaluated key, base64url of JSON whose pk holds
// the other muxed address's idempotency key in clear (and its createdAt): M2 reads M1's key.
func TestMuxedHistoryCursorNamesNoOtherMuxedTransfer(t *testing.T) {
	f := minidynFixture(t)
	ctx := context.Background()
	m1, m2 := muxedOf(t, walletA, 1), muxedOf(t, walletA, 2)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, w := range []struct {
		addr string
		id   uint64
		key  string
	}{{m2, 2, "m2-own-order"}, {m1, 1, "m1-secret-order"}} {
		rec := walletClaim(walletA, w.key, at.Add(time.Duration(i)*time.Second)) // m1's is the newer
		rec.Request.WalletAddress, rec.Request.Account, rec.Request.MuxedID = w.addr, walletA, w.id
		mustClaim(t, f.store, rec, rec.CreatedAt)
	}
	o := &transfer.Orchestrator{Clock: vclock.New(at.Add(time.Minute)), WalletHistory: f.store}
	m2Wallet := transfer.Wallet{Address: m2, Account: walletA, MuxedID: 2}
	var page transfer.HistoryPage
	eventually(t, func() error {
		var err error
		page, err = o.History(ctx, m2Wallet, 1, "")
		if err == nil && page.Next == "" {
			err = errors.New("no next cursor yet")
		}
		return err
	})
	for _, e := range page.Entries {
		if e.ClientKey != "m2-own-order" {
			t.Fatalf("m2's page lists %q", e.ClientKey)
		}
	}
	raw, _ := base64.RawURLEncoding.DecodeString(page.Next)
	if strings.Contains(string(raw), "m1-secret-order") {
		t.Errorf("m2's next cursor %s names m1's transfer: %s", page.Next, raw)
	}
}

package dynamo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A wallet's history (gsi2, ListByWallet), against both emulators.

func TestHistoryMinidyn(t *testing.T) {
	runHistoryContract(t, func(t *testing.T) fixture {
		client, _ := dynamotest.Minidyn(t)
		return newFixture(t, client)
	})
}

func TestHistoryDynalite(t *testing.T) {
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set")
	}
	client := dynamotest.NewClient(endpoint)
	runHistoryContract(t, func(t *testing.T) fixture { return newFixture(t, client) })
}

const (
	walletA = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	walletB = "GDXRGXFYU77KVAF37QVLG4D27EKEESYRVLXMAFSDBA4AZIIBQJ25UZRJ"
)

// walletClaim is a fresh claim of (wallet, clientKey) as the orchestrator writes it, created at.
func walletClaim(wallet, clientKey string, at time.Time) transfer.Record {
	rec := claimRecord(transfer.StoreKey(wallet, clientKey), "owner", "fp-"+clientKey)
	rec.Request.WalletAddress = wallet
	rec.ClientKey = clientKey
	rec.ClaimID = "claim-" + clientKey
	rec.CreatedAt, rec.UpdatedAt = at, at
	rec.LeaseExpiresAt = at.Add(30 * time.Second)
	return rec
}

// attach is rec with its envelope, as the orchestrator's attach writes it.
func attach(rec transfer.Record) transfer.Record {
	rec.Version++
	rec.UpdatedAt = rec.UpdatedAt.Add(time.Second)
	rec.Envelope = &transfer.Envelope{XDR: "AAAAAgAAAAB" + strings.Repeat("A", 40), InnerHash: strings.Repeat("cd", 32),
		MaxTime: rec.CreatedAt.Unix() + 20, SubmittedLedger: 100, FeeStroops: 200}
	return rec
}

// listWallet pages through wallet's history with page size limit; it fails on a page over limit.
func listWallet(t *testing.T, s *dynamo.Store, wallet string, limit int) (recs []transfer.Record, pages int) {
	t.Helper()
	cursor := ""
	for {
		page, next, err := s.ListByWallet(context.Background(), wallet, limit, cursor)
		if err != nil {
			t.Fatalf("ListByWallet: %v", err)
		}
		pages++
		if len(page) > limit {
			t.Fatalf("ListByWallet returned %d items, limit %d", len(page), limit)
		}
		recs = append(recs, page...)
		if next == "" {
			return recs, pages
		}
		if pages > 100 {
			t.Fatal("ListByWallet does not end")
		}
		cursor = next
	}
}

func storeKeys(recs []transfer.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.StoreKey
	}
	return out
}

func runHistoryContract(t *testing.T, newFixture func(t *testing.T) fixture) {
	ctx := context.Background()

	t.Run("every write keeps the item in its wallet's history", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		// check asserts the raw item's index keys and the listing's view of the item.
		check := func(step string, rec transfer.Record) {
			t.Helper()
			raw := rawItem(t, f, rec.StoreKey)
			wantSK := rec.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z") + "#" + rec.StoreKey
			if pk, ok := raw["gsi2pk"].(*types.AttributeValueMemberS); !ok || pk.Value != transfer.WalletHash(walletA) {
				t.Fatalf("after %s: gsi2pk = %#v, want %s", step, raw["gsi2pk"], transfer.WalletHash(walletA))
			}
			if sk, ok := raw["gsi2sk"].(*types.AttributeValueMemberS); !ok || sk.Value != wantSK {
				t.Fatalf("after %s: gsi2sk = %#v, want %s", step, raw["gsi2sk"], wantSK)
			}
			eventually(t, func() error {
				recs, _ := listWallet(t, f.store, walletA, 10)
				i := slices.IndexFunc(recs, func(r transfer.Record) bool { return r.StoreKey == rec.StoreKey })
				if i < 0 {
					return fmt.Errorf("after %s: %s not listed (%v)", step, rec.StoreKey, storeKeys(recs))
				}
				got := recs[i]
				if got.Status != rec.Status || got.ClientKey != rec.ClientKey || got.Request.Amount != rec.Request.Amount ||
					got.Request.Asset != rec.Request.Asset || got.Request.OperationType != rec.Request.OperationType ||
					!got.CreatedAt.Equal(rec.CreatedAt) || !got.UpdatedAt.Equal(rec.UpdatedAt) || got.ExpiresAt != rec.ExpiresAt {
					return fmt.Errorf("after %s: listed %+v, want %+v", step, got, rec)
				}
				// The index projects what a history shows: never the envelope, fingerprint or trace.
				if got.Envelope != nil || got.Fingerprint != "" || got.TraceID != "" || got.ClaimID != "" {
					return fmt.Errorf("after %s: listed beyond the projection: %+v", step, got)
				}
				if (rec.Result == nil) != (got.Result == nil) || rec.Result != nil && got.Result.TransactionHash != rec.Result.TransactionHash {
					return fmt.Errorf("after %s: listed result %+v, want %+v", step, got.Result, rec.Result)
				}
				return nil
			})
		}
		t1 := t0.Add(time.Minute)

		// claim, attach, in_doubt, resolve (an operator's, with its audit)
		claim := walletClaim(walletA, "order-doubt", t0)
		mustClaim(t, f.store, claim, t0)
		check("claim", claim)
		attached := attach(claim)
		if err := f.store.Replace(ctx, attached, condOf(claim)); err != nil {
			t.Fatal(err)
		}
		check("attach", attached)
		doubt := settle(attached, transfer.StatusInDoubt, 0)
		if err := f.store.Replace(ctx, doubt, condOf(attached)); err != nil {
			t.Fatal(err)
		}
		check("in_doubt", doubt)
		resolved := settle(doubt, transfer.StatusReplayable, t1.Unix()+86400)
		resolved.Envelope = &transfer.Envelope{InnerHash: doubt.Envelope.InnerHash, MaxTime: doubt.Envelope.MaxTime}
		resolved.Audit = &transfer.Audit{Action: "resolve", Operator: "alice", Reason: "found on the ledger", At: t1}
		if err := f.store.Replace(ctx, resolved, condOf(doubt)); err != nil {
			t.Fatal(err)
		}
		check("resolve", resolved)

		// claim, attach, settle (rejected)
		claim2 := walletClaim(walletA, "order-rejected", t0.Add(time.Second))
		mustClaim(t, f.store, claim2, t0)
		attached2 := attach(claim2)
		if err := f.store.Replace(ctx, attached2, condOf(claim2)); err != nil {
			t.Fatal(err)
		}
		rejected := settle(attached2, transfer.StatusRejected, t1.Unix()+86400)
		rejected.Envelope.XDR = ""
		rejected.Result = &transfer.Result{Code: transfer.CodeTransactionFailed, TransactionHash: strings.Repeat("ef", 32), ResultCodes: []string{"tx_failed"}}
		if err := f.store.Replace(ctx, rejected, condOf(attached2)); err != nil {
			t.Fatal(err)
		}
		check("settle", rejected)

		recs, _ := listWallet(t, f.store, walletA, 10)
		if got, want := storeKeys(recs), []string{rejected.StoreKey, resolved.StoreKey}; !slices.Equal(got, want) {
			t.Fatalf("listed %v, want newest first %v", got, want)
		}
	})

	t.Run("pages run newest first and end", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		var want []string
		for i := range 7 {
			rec := walletClaim(walletA, fmt.Sprintf("order-%04d", i), t0.Add(time.Duration(i)*time.Second))
			if i%2 == 1 {
				rec = settle(rec, transfer.StatusReplayable, t0.Unix()+86400)
			}
			store(t, f.store, rec)
			want = append([]string{rec.StoreKey}, want...)
		}
		// Two claims in the same millisecond are both listed, in a stable order.
		same := walletClaim(walletA, "order-same-a", t0.Add(10*time.Second))
		same2 := walletClaim(walletA, "order-same-b", t0.Add(10*time.Second))
		store(t, f.store, same)
		store(t, f.store, same2)
		newest := []string{same.StoreKey, same2.StoreKey}
		slices.Sort(newest)
		slices.Reverse(newest)
		want = append(newest, want...)
		eventually(t, func() error {
			for _, limit := range []int{1, 3, 9, 100} {
				recs, pages := listWallet(t, f.store, walletA, limit)
				if got := storeKeys(recs); !slices.Equal(got, want) {
					return fmt.Errorf("limit %d: listed %v, want %v", limit, got, want)
				}
				if min := (len(want) + limit - 1) / limit; pages < min || pages > min+1 {
					return fmt.Errorf("limit %d: %d pages for %d items", limit, pages, len(want))
				}
			}
			return nil
		})
		// limit <= 0 is the default page size.
		page, _, err := f.store.ListByWallet(ctx, walletA, 0, "")
		if err != nil || len(page) != len(want) {
			t.Fatalf("limit 0: %d items, %v", len(page), err)
		}
	})

	t.Run("another wallet's items and channel leases are never listed", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		mine := walletClaim(walletA, "order-mine", t0)
		store(t, f.store, mine)
		for i := range 3 {
			store(t, f.store, walletClaim(walletB, fmt.Sprintf("order-theirs-%d", i), t0.Add(time.Duration(i+1)*time.Second)))
		}
		// The same client key under another wallet is another item.
		store(t, f.store, walletClaim(walletB, "order-mine", t0.Add(time.Hour)))
		leases := dynamo.NewChannelLeases(f.counter, f.table)
		if err := leases.LeaseChannel(ctx, walletA, "lease-owner", t0, t0.Add(time.Minute), t0.Add(time.Minute), t0.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if raw := rawItem(t, f, dynamo.ChannelPrefix+walletA); raw == nil || raw["gsi2pk"] != nil || raw["gsi2sk"] != nil {
			t.Fatalf("lease item %v: want one without gsi2 keys", raw)
		}
		eventually(t, func() error {
			recs, _ := listWallet(t, f.store, walletA, 2)
			if got := storeKeys(recs); !slices.Equal(got, []string{mine.StoreKey}) {
				return fmt.Errorf("wallet A lists %v, want only %s", got, mine.StoreKey)
			}
			recs, _ = listWallet(t, f.store, walletB, 2)
			if len(recs) != 4 {
				return fmt.Errorf("wallet B lists %v, want its 4 items", storeKeys(recs))
			}
			for _, r := range recs {
				if r.Request.WalletAddress != walletB || !strings.HasPrefix(r.StoreKey, transfer.StoreKey(walletB, "")) {
					return fmt.Errorf("wallet B lists %s of %s", r.StoreKey, r.Request.WalletAddress)
				}
			}
			return nil
		})
		// A wallet with nothing lists nothing.
		recs, next, err := f.store.ListByWallet(ctx, "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7", 5, "")
		if err != nil || len(recs) != 0 || next != "" {
			t.Fatalf("empty wallet: %v %q %v", storeKeys(recs), next, err)
		}
		// Wallet B's cursor is refused on wallet A.
		_, next, err = f.store.ListByWallet(ctx, walletB, 1, "")
		if err != nil || next == "" {
			t.Fatalf("wallet B's first page: next %q, %v", next, err)
		}
		if _, _, err := f.store.ListByWallet(ctx, walletA, 1, next); !errors.Is(err, transfer.ErrBadCursor) {
			t.Fatalf("wallet B's cursor on wallet A: %v, want ErrBadCursor", err)
		}
	})

	t.Run("a cursor it did not issue is refused", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		for i := range 3 {
			store(t, f.store, walletClaim(walletA, fmt.Sprintf("order-%04d", i), t0.Add(time.Duration(i)*time.Second)))
		}
		_, next, err := f.store.ListByWallet(ctx, walletA, 1, "")
		if err != nil || next == "" {
			t.Fatalf("first page: next %q, %v", next, err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(next)
		if err != nil {
			t.Fatal(err)
		}
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		pk := transfer.StoreKey(walletA, "order-0001")
		_, inDoubtNext, err := f.store.ListInDoubt(ctx, 1, "")
		if err != nil {
			t.Fatal(err)
		}
		for name, bad := range map[string]string{
			"not base64":          "%%%",
			"padded base64":       next + "==",
			"not JSON":            enc("nope"),
			"null":                enc("null"),
			"empty object":        enc("{}"),
			"an in-doubt cursor":  enc(`{"pk":"` + pk + `","gsi1pk":"in_doubt","gsi1sk":"2026-03-01T12:00:00.000Z#` + pk + `"}`),
			"with the partition":  enc(`{"pk":"` + pk + `","gsi2pk":"` + transfer.WalletHash(walletA) + `","gsi2sk":"2026-03-01T12:00:01.000Z#` + pk + `"}`),
			"sort key of another": enc(`{"pk":"` + pk + `","gsi2sk":"2026-03-01T12:00:01.000Z#` + transfer.StoreKey(walletA, "order-0002") + `"}`),
			"no time":             enc(`{"pk":"` + pk + `","gsi2sk":"#` + pk + `"}`),
			"not a time":          enc(`{"pk":"` + pk + `","gsi2sk":"2026-13-01T12:00:01.000Z#` + pk + `"}`),
			"another wallet's pk": enc(`{"pk":"` + transfer.StoreKey(walletB, "order-0001") + `","gsi2sk":"2026-03-01T12:00:01.000Z#` + transfer.StoreKey(walletB, "order-0001") + `"}`),
			"a bare prefix":       enc(`{"pk":"` + transfer.StoreKey(walletA, "") + `","gsi2sk":"2026-03-01T12:00:01.000Z#` + transfer.StoreKey(walletA, "") + `"}`),
			"a number":            enc(`{"pk":1,"gsi2sk":"x"}`),
			"too long":            strings.Repeat("A", 5000),
			"edited":              strings.Replace(next, next[len(next)-4:], "AAAA", 1),
		} {
			if _, _, err := f.store.ListByWallet(ctx, walletA, 1, bad); !errors.Is(err, transfer.ErrBadCursor) || !errors.Is(err, dynamo.ErrBadCursor) {
				t.Errorf("%s (%q): %v, want ErrBadCursor", name, bad, err)
			}
		}
		if inDoubtNext != "" {
			t.Errorf("no item is in doubt, yet the in-doubt index names a next page %q", inDoubtNext)
		}
		// The cursor as issued holds the position and the key, nothing else.
		if want := `{"gsi2sk":"2026-03-01T12:00:02.000Z#` + transfer.StoreKey(walletA, "order-0002") + `","pk":"` + transfer.StoreKey(walletA, "order-0002") + `"}`; string(raw) != want {
			t.Errorf("cursor %s, want %s", raw, want)
		}
	})
}

package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// fixture is one fresh table: store goes through counter, which wraps raw.
type fixture struct {
	store   *dynamo.Store
	counter *dynamotest.CountingClient
	raw     dynamotest.API
	table   string
}

// newFixture creates a unique table through raw and a Store on it behind a CountingClient.
func newFixture(t *testing.T, raw dynamotest.API) fixture {
	t.Helper()
	counter := dynamotest.NewCountingClient(raw)
	store := dynamotest.NewStore(t, counter)
	counter.Reset()
	return fixture{store: store, counter: counter, raw: raw, table: store.Table()}
}

// minidynFixture is a fixture on its own minidyn HTTP server, in-process.
func minidynFixture(t *testing.T) fixture {
	client, _ := dynamotest.Minidyn(t)
	return newFixture(t, client)
}

// dynaliteClient is a client of dynalite at $DYNALITE_ENDPOINT (.ci/dynalite/run.sh PORT starts
// one); it skips the test when the variable is not set.
func dynaliteClient(t *testing.T) dynamotest.API {
	t.Helper()
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set: start dynalite with .ci/dynalite/run.sh PORT and set DYNALITE_ENDPOINT=http://127.0.0.1:PORT")
	}
	return dynamotest.NewClient(endpoint)
}

// TestStoreMinidyn runs the contract against minidyn's HTTP server in-process, one server per test.
func TestStoreMinidyn(t *testing.T) {
	runStoreContract(t, minidynFixture)
}

// TestStoreDynalite runs the contract against dynalite at $DYNALITE_ENDPOINT.
func TestStoreDynalite(t *testing.T) {
	client := dynaliteClient(t)
	runStoreContract(t, func(t *testing.T) fixture { return newFixture(t, client) })
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// claimRecord is a fresh in_flight claim as the orchestrator writes it.
func claimRecord(key, owner, fingerprint string) transfer.Record {
	return transfer.Record{
		StoreKey:    key,
		Status:      transfer.StatusInFlight,
		Fingerprint: fingerprint,
		Request: transfer.Request{
			OperationType: transfer.Withdraw,
			WalletAddress: "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H",
			Amount:        "1000.5",
			Asset:         "USDC",
			Stroops:       10_005_000_000,
		},
		ClaimID:        "claim-" + owner + "-" + strings.TrimPrefix(key, "transfer:0123456789abcdef:"),
		ClientKey:      strings.TrimPrefix(key, "transfer:0123456789abcdef:"),
		TraceID:        "1-67890abc-def012345678901234567890",
		LeaseOwner:     owner,
		LeaseExpiresAt: t0.Add(30 * time.Second),
		Version:        1,
		CreatedAt:      t0,
		UpdatedAt:      t0,
	}
}

func key(name string) string { return "transfer:0123456789abcdef:" + name }

// settle returns rec moved to status at version+1, as the orchestrator's settle does.
func settle(rec transfer.Record, status transfer.Status, expiresAt int64) transfer.Record {
	rec.Status = status
	rec.Version++
	rec.ExpiresAt = expiresAt
	rec.UpdatedAt = rec.UpdatedAt.Add(time.Second)
	if status != transfer.StatusInFlight {
		rec.LeaseOwner, rec.LeaseExpiresAt = "", time.Time{}
	}
	switch status {
	case transfer.StatusReplayable:
		rec.Result = &transfer.Result{TransactionHash: strings.Repeat("ab", 32), Ledger: 1234}
	case transfer.StatusInDoubt:
		rec.Result = &transfer.Result{Code: "TRANSFER_TIMEOUT"}
	}
	return rec
}

func condOf(rec transfer.Record) transfer.Condition {
	return transfer.Expect(rec)
}

// mustClaim claims rec and fails the test unless it wins.
func mustClaim(t *testing.T, s *dynamo.Store, rec transfer.Record, now time.Time) {
	t.Helper()
	_, won, err := s.Claim(context.Background(), rec, now)
	if err != nil || !won {
		t.Fatalf("Claim(%s): won=%v err=%v", rec.StoreKey, won, err)
	}
}

// store puts rec (any status) in place by claiming it in_flight and replacing it.
func store(t *testing.T, s *dynamo.Store, rec transfer.Record) {
	t.Helper()
	first := rec
	first.Status, first.ExpiresAt, first.Version = transfer.StatusInFlight, 0, rec.Version-1
	if rec.Status == transfer.StatusInFlight {
		mustClaim(t, s, rec, t0)
		return
	}
	mustClaim(t, s, first, t0)
	if err := s.Replace(context.Background(), rec, condOf(first)); err != nil {
		t.Fatalf("Replace(%s): %v", rec.StoreKey, err)
	}
}

// normalized is rec as the store returns it: times at millisecond precision in UTC.
func normalized(rec transfer.Record) transfer.Record {
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	rec.LeaseExpiresAt, rec.CreatedAt, rec.UpdatedAt = ms(rec.LeaseExpiresAt), ms(rec.CreatedAt), ms(rec.UpdatedAt)
	return rec
}

func assertRecord(t *testing.T, what string, got, want transfer.Record) {
	t.Helper()
	want = normalized(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func rawItem(t *testing.T, f fixture, pk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := f.raw.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(f.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		t.Fatalf("raw GetItem: %v", err)
	}
	return out.Item
}

// eventually retries check for up to 10 s: the in-doubt index is a GSI, eventually consistent on
// real DynamoDB (both emulators update it synchronously).
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runStoreContract(t *testing.T, newFixture func(t *testing.T) fixture) {
	ctx := context.Background()

	t.Run("claim wins on an empty key", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		rec := claimRecord(key("empty-key-1"), "owner-a", "fp-a")
		got, won, err := f.store.Claim(ctx, rec, t0)
		if err != nil || !won {
			t.Fatalf("Claim: won=%v err=%v", won, err)
		}
		assertRecord(t, "returned", got, rec)
		if n := f.counter.Total(); n != 1 {
			t.Errorf("a won claim made %d requests %v, want 1 PutItem", n, f.counter.Counts())
		}
		stored, err := f.store.Get(ctx, rec.StoreKey)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "stored", stored, rec)
	})

	t.Run("second claim loses and returns the winner", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("second-claim")
		mustClaim(t, f.store, claimRecord(k, "owner-a", "fp-a"), t0)
		f.counter.Reset()
		got, won, err := f.store.Claim(ctx, claimRecord(k, "owner-b", "fp-b"), t0.Add(time.Second))
		if err != nil || won {
			t.Fatalf("Claim: won=%v err=%v", won, err)
		}
		if got.Status != transfer.StatusInFlight || got.Fingerprint != "fp-a" || got.Version != 1 || got.LeaseOwner != "owner-a" {
			t.Fatalf("lost claim returned %+v, want the winner's in_flight fp-a v1 owner-a", got)
		}
		if c := f.counter; c.Count("PutItem") != 1 || c.Count("GetItem") > 1 || c.Total() > 2 {
			t.Errorf("a lost claim made %v, want 1 PutItem and at most 1 GetItem", c.Counts())
		}
	})

	t.Run("claim over an expired replayable item wins", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("expired-replayable")
		now := t0.Add(48 * time.Hour)
		old := settle(claimRecord(k, "owner-a", "fp-a"), transfer.StatusReplayable, now.Unix()-1)
		store(t, f.store, old)
		rec := claimRecord(k, "owner-b", "fp-b")
		got, won, err := f.store.Claim(ctx, rec, now)
		if err != nil || !won {
			t.Fatalf("Claim over expired: won=%v err=%v got=%+v", won, err, got)
		}
		stored, err := f.store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "stored after claim over expired", stored, rec)
	})

	t.Run("claim over an unexpired settled item loses", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		now := t0.Add(time.Hour)
		for _, tc := range []struct {
			name      string
			status    transfer.Status
			expiresAt int64
		}{
			{"replayable", transfer.StatusReplayable, now.Unix() + 3600},
			{"replayable-expiring-this-second", transfer.StatusReplayable, now.Unix()}, // expiresAt < now is false
			{"rejected", transfer.StatusRejected, now.Unix() + 1},
		} {
			k := key("unexpired-" + tc.name)
			old := settle(claimRecord(k, "owner-a", "fp-a"), tc.status, tc.expiresAt)
			store(t, f.store, old)
			got, won, err := f.store.Claim(ctx, claimRecord(k, "owner-b", "fp-b"), now)
			if err != nil || won {
				t.Fatalf("%s: Claim: won=%v err=%v", tc.name, won, err)
			}
			assertRecord(t, tc.name+": holder", got, old)
		}
	})

	t.Run("claim never overwrites in_flight or in_doubt items", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		farFuture := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
		flight := claimRecord(key("never-in-flight"), "owner-a", "fp-a")
		doubt := settle(claimRecord(key("never-in-doubt"), "owner-a", "fp-a"), transfer.StatusInDoubt, 0)
		doubt.Envelope = &transfer.Envelope{XDR: "AAAA", InnerHash: strings.Repeat("cd", 32), MaxTime: t0.Unix() + 60}
		for _, old := range []transfer.Record{flight, doubt} {
			store(t, f.store, old)
			got, won, err := f.store.Claim(ctx, claimRecord(old.StoreKey, "owner-b", "fp-b"), farFuture)
			if err != nil || won {
				t.Fatalf("%s: Claim: won=%v err=%v", old.Status, won, err)
			}
			assertRecord(t, string(old.Status)+": holder", got, old)
			if _, has := rawItem(t, f, old.StoreKey)["expiresAt"]; has {
				t.Errorf("%s item has expiresAt", old.Status)
			}
		}
	})

	t.Run("replace checks status, version and owner", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("replace-cond")
		cur := claimRecord(k, "owner-a", "fp-a")
		mustClaim(t, f.store, cur, t0)
		next := cur
		next.Version = 2
		next.Envelope = &transfer.Envelope{XDR: "AAAAAgAAAAA=", InnerHash: strings.Repeat("ef", 32), MaxTime: t0.Unix() + 40}
		other := func(edit func(*transfer.Condition)) transfer.Condition { c := condOf(cur); edit(&c); return c }
		for _, bad := range []transfer.Condition{
			other(func(c *transfer.Condition) { c.Status = transfer.StatusInDoubt }),
			other(func(c *transfer.Condition) { c.LeaseOwner = "owner-b" }),
			other(func(c *transfer.Condition) { c.LeaseOwner = "" }),
			other(func(c *transfer.Condition) { c.ClaimID = "claim-of-a-later-incarnation" }),
			other(func(c *transfer.Condition) { c.ClaimID = "" }),
			other(func(c *transfer.Condition) { c.InnerHash = strings.Repeat("ef", 32) }),
		} {
			n := next
			n.ClaimID = bad.ClaimID // a write keeps the incarnation its condition names
			if err := f.store.Replace(ctx, n, bad); !errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Replace with %+v: err=%v, want ErrConditionFailed", bad, err)
			} else if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); !ok {
				t.Errorf("Replace with %+v: %v does not wrap the ConditionalCheckFailedException", bad, err)
			}
		}
		wrongVersion := next
		wrongVersion.Version = 3
		if err := f.store.Replace(ctx, wrongVersion, transfer.Condition{ClaimID: cur.ClaimID, Status: transfer.StatusInFlight, Version: 2, LeaseOwner: "owner-a"}); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Replace with a wrong version: err=%v, want ErrConditionFailed", err)
		}
		missing := next
		missing.StoreKey = key("replace-missing")
		if err := f.store.Replace(ctx, missing, condOf(cur)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Replace of a missing item: err=%v, want ErrConditionFailed", err)
		}
		if got, _ := f.store.Get(ctx, k); !reflect.DeepEqual(got, normalized(cur)) {
			t.Fatalf("failed replaces changed the item: %+v", got)
		}
		f.counter.Reset()
		if err := f.store.Replace(ctx, next, condOf(cur)); err != nil {
			t.Fatalf("Replace with the right condition: %v", err)
		}
		if n := f.counter.Total(); n != 1 {
			t.Errorf("Replace made %v, want 1 PutItem", f.counter.Counts())
		}
		got, err := f.store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "after replace", got, next)
		// The condition names the envelope: in_doubt with the envelope's inner hash.
		doubt := settle(next, transfer.StatusInDoubt, 0)
		if err := f.store.Replace(ctx, doubt, condOf(next)); err != nil {
			t.Fatalf("Replace to in_doubt: %v", err)
		}
		if err := f.store.Replace(ctx, settle(doubt, transfer.StatusReplayable, t0.Unix()+60), transfer.Condition{ClaimID: doubt.ClaimID, Status: transfer.StatusInDoubt, Version: 3}); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Replace of an in_doubt item naming no envelope: err=%v, want ErrConditionFailed", err)
		}
		if err := f.store.Replace(ctx, next, transfer.Condition{ClaimID: next.ClaimID, Status: transfer.StatusInFlight, Version: 1}); err == nil {
			t.Error("Replace naming another claim's incarnation succeeded")
		}
		// A stale writer that still believes version 2 loses.
		if err := f.store.Replace(ctx, next, transfer.Condition{Status: transfer.StatusInFlight, Version: 1, LeaseOwner: "owner-a"}); err == nil {
			t.Fatal("stale Replace succeeded")
		}
	})

	t.Run("delete checks status, version and owner", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("delete-cond")
		cur := claimRecord(k, "owner-a", "fp-a")
		mustClaim(t, f.store, cur, t0)
		for _, bad := range []transfer.Condition{
			{ClaimID: cur.ClaimID, Status: transfer.StatusReplayable, Version: 1, LeaseOwner: "owner-a"},
			{ClaimID: cur.ClaimID, Status: transfer.StatusInFlight, Version: 2, LeaseOwner: "owner-a"},
			{ClaimID: cur.ClaimID, Status: transfer.StatusInFlight, Version: 1, LeaseOwner: "owner-b"},
			{ClaimID: "claim-of-a-later-incarnation", Status: transfer.StatusInFlight, Version: 1, LeaseOwner: "owner-a"},
			{Status: transfer.StatusInFlight, Version: 1, LeaseOwner: "owner-a"},
		} {
			if err := f.store.Delete(ctx, k, bad); !errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Delete with %+v: err=%v, want ErrConditionFailed", bad, err)
			}
		}
		if err := f.store.Delete(ctx, key("delete-missing"), condOf(cur)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Delete of a missing item: err=%v, want ErrConditionFailed", err)
		}
		if _, err := f.store.Get(ctx, k); err != nil {
			t.Fatalf("failed deletes removed the item: %v", err)
		}
		if err := f.store.Delete(ctx, k, condOf(cur)); err != nil {
			t.Fatalf("Delete with the right condition: %v", err)
		}
		if _, err := f.store.Get(ctx, k); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		// Released: the key can be claimed again.
		mustClaim(t, f.store, claimRecord(k, "owner-b", "fp-a"), t0)
	})

	t.Run("get of a missing key is ErrNotFound", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		if _, err := f.store.Get(ctx, key("nothing-here")); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("Get: %v, want ErrNotFound", err)
		}
	})

	t.Run("every record field round-trips", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("round-trip")
		rec := claimRecord(k, "owner-a", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
		rec.LeaseExpiresAt = t0.Add(29*time.Second + 123456789*time.Nanosecond) // sub-ms: truncated to ms
		rec.CreatedAt = t0.Add(987654321 * time.Nanosecond).In(time.FixedZone("X", 3600))
		rec.UpdatedAt = rec.CreatedAt.Add(time.Millisecond)
		won, _, err := f.store.Claim(ctx, rec, t0)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "returned by Claim", won, rec)
		got, err := f.store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "claimed", got, rec)
		if !got.LeaseExpiresAt.Equal(time.UnixMilli(rec.LeaseExpiresAt.UnixMilli())) {
			t.Errorf("LeaseExpiresAt %v, want ms precision of %v", got.LeaseExpiresAt, rec.LeaseExpiresAt)
		}

		// Envelope attached (fee-bumped: both hashes), then rejected with result codes and a TTL.
		withEnv := rec
		withEnv.Version = 2
		withEnv.Envelope = &transfer.Envelope{
			XDR:             "AAAABQAAAADg3G3hclysZlFitS+s5zWyiiJD5B0STWy5LXCj6i5yxQAAAAAAAAGQAAAAAgAAAAA=",
			InnerHash:       strings.Repeat("12", 32),
			OuterHash:       strings.Repeat("34", 32),
			MaxTime:         t0.Unix() + 40,
			SubmittedLedger: 51234567,
			Channel:         "GCHANNELAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
			FeeStroops:      20_000,
		}
		if err := f.store.Replace(ctx, withEnv, condOf(rec)); err != nil {
			t.Fatal(err)
		}
		settled := withEnv
		// A settled item keeps the hashes; the signed XDR is dropped (it can never land again).
		settledEnv := *withEnv.Envelope
		settledEnv.XDR = ""
		settled.Envelope = &settledEnv
		settled.Status, settled.Version = transfer.StatusRejected, 3
		settled.LeaseOwner, settled.LeaseExpiresAt = "", time.Time{}
		settled.ExpiresAt = t0.Unix() + 86400
		settled.UpdatedAt = t0.Add(5 * time.Second)
		settled.Result = &transfer.Result{
			TransactionHash:   strings.Repeat("34", 32),
			Ledger:            51234568,
			Code:              "TRANSACTION_FAILED",
			HTTPStatus:        422,
			Detail:            "op_underfunded: the vault cannot cover 1000.5 USDC",
			ResultCodes:       []string{"tx_failed", "op_underfunded"},
			FeeChargedStroops: 200,
		}
		if err := f.store.Replace(ctx, settled, condOf(withEnv)); err != nil {
			t.Fatal(err)
		}
		got, err = f.store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "settled", got, settled)

		// Attribute names, types and units as internal/dynamo/doc.go, "Table layout", lists them.
		raw := rawItem(t, f, k)
		var names []string
		for n := range raw {
			names = append(names, n)
		}
		slices.Sort(names)
		want := []string{"channel", "claimId", "clientKey", "createdAt", "expiresAt", "feeStroops", "fingerprint",
			"gsi2pk", "gsi2sk", "innerHash", "maxTime", "outerHash", "pk", "request", "result", "status", "submittedLedger", "traceId",
			"updatedAt", "version"}
		if !slices.Equal(names, want) {
			t.Errorf("attributes %v, want %v", names, want)
		}
		wantN := map[string]string{
			"expiresAt": fmt.Sprint(settled.ExpiresAt), "maxTime": fmt.Sprint(settled.Envelope.MaxTime),
			"updatedAt": fmt.Sprint(settled.UpdatedAt.UnixMilli()), "createdAt": fmt.Sprint(rec.CreatedAt.UnixMilli()),
			"version": "3",
		}
		for n, v := range wantN {
			if got, ok := raw[n].(*types.AttributeValueMemberN); !ok || got.Value != v {
				t.Errorf("%s = %#v, want N %s", n, raw[n], v)
			}
		}
		req, ok := raw["request"].(*types.AttributeValueMemberM)
		if !ok || len(req.Value) != 5 {
			t.Errorf("request = %#v, want a map of operationType, walletAddress, amount, asset, stroops", raw["request"])
		}

		// ExpiresAt 0 is stored as no attribute at all; so are empty strings and nil maps.
		doubt := settled
		doubt.Envelope = withEnv.Envelope // an in_doubt item keeps its signed XDR
		doubt.Status, doubt.Version, doubt.ExpiresAt = transfer.StatusInDoubt, 4, 0
		doubt.TraceID, doubt.Result = "", nil
		if err := f.store.Replace(ctx, doubt, condOf(settled)); err != nil {
			t.Fatal(err)
		}
		raw = rawItem(t, f, k)
		for _, n := range []string{"expiresAt", "traceId", "result", "leaseOwner", "leaseExpiresAt"} {
			if _, has := raw[n]; has {
				t.Errorf("in_doubt item has %s = %#v, want absent", n, raw[n])
			}
		}
		if pk, ok := raw["gsi1pk"].(*types.AttributeValueMemberS); !ok || pk.Value != "in_doubt" {
			t.Errorf("in_doubt item gsi1pk = %#v", raw["gsi1pk"])
		}
		if sk, ok := raw["gsi1sk"].(*types.AttributeValueMemberS); !ok || sk.Value != "2026-03-01T12:00:05.000Z#"+k {
			t.Errorf("in_doubt item gsi1sk = %#v", raw["gsi1sk"])
		}
		got, err = f.store.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "in_doubt", got, doubt)
	})

	t.Run("in-doubt index lists exactly the in_doubt items", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		var want []string
		for i := range 5 {
			rec := claimRecord(key(fmt.Sprintf("in-doubt-%d", i)), "owner-a", "fp")
			rec.UpdatedAt = t0.Add(time.Duration(10-i) * time.Minute) // listed oldest first: reverse order
			store(t, f.store, settle(rec, transfer.StatusInDoubt, 0))
			want = append([]string{rec.StoreKey}, want...)
		}
		store(t, f.store, claimRecord(key("flight"), "owner-a", "fp"))
		store(t, f.store, settle(claimRecord(key("ok"), "owner-a", "fp"), transfer.StatusReplayable, t0.Unix()+60))
		store(t, f.store, settle(claimRecord(key("no"), "owner-a", "fp"), transfer.StatusRejected, t0.Unix()+60))

		eventually(t, func() error {
			f.counter.Reset()
			got, pages := transfertest.ListInDoubtAll(t, f.store, 2)
			if !slices.Equal(got, want) {
				return fmt.Errorf("listed %v, want %v", got, want)
			}
			if pages < 3 || int64(pages) != f.counter.Count("Query") {
				return fmt.Errorf("%d pages of 2 for 5 items, %d queries", pages, f.counter.Count("Query"))
			}
			return nil
		})
		if got, _ := transfertest.ListInDoubtAll(t, f.store, 0); !slices.Equal(got, want) {
			t.Errorf("default limit listed %v", got)
		}

		// Resolving one takes it out of the index.
		gone, err := f.store.Get(ctx, want[2])
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.Replace(ctx, settle(gone, transfer.StatusReplayable, t0.Unix()+60), condOf(gone)); err != nil {
			t.Fatal(err)
		}
		want = slices.Delete(want, 2, 3)
		eventually(t, func() error {
			if got, _ := transfertest.ListInDoubtAll(t, f.store, 10); !slices.Equal(got, want) {
				return fmt.Errorf("after resolving one: listed %v, want %v", got, want)
			}
			return nil
		})

		if _, _, err := f.store.ListInDoubt(ctx, 2, "not a cursor!"); err == nil {
			t.Error("ListInDoubt accepted a malformed cursor")
		}
	})

	t.Run("malformed items are errors naming the key", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		bad := map[string]map[string]types.AttributeValue{
			key("bad-version"): {"status": &types.AttributeValueMemberS{Value: "in_flight"}, "version": &types.AttributeValueMemberS{Value: "one"}},
			key("bad-status"):  {"status": &types.AttributeValueMemberS{Value: "exploded"}, "version": &types.AttributeValueMemberN{Value: "1"}},
			key("bad-request"): {"status": &types.AttributeValueMemberS{Value: "in_flight"}, "version": &types.AttributeValueMemberN{Value: "1"}, "request": &types.AttributeValueMemberS{Value: "{}"}},
		}
		for k, av := range bad {
			av["pk"] = &types.AttributeValueMemberS{Value: k}
			if _, err := f.raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: av}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.Get(ctx, k); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("Get(%s): %v, want an error naming the key", k, err)
			}
			if _, _, err := f.store.Claim(ctx, claimRecord(k, "owner-b", "fp"), t0); err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("Claim(%s): %v, want an error naming the key", k, err)
			}
		}
	})

	t.Run("writes that would break an invariant are refused", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("invariants")
		expiring := claimRecord(k, "owner-a", "fp")
		expiring.ExpiresAt = t0.Unix() + 60
		if _, _, err := f.store.Claim(ctx, expiring, t0); err == nil {
			t.Error("claimed an in_flight item with expiresAt")
		}
		noXDR := claimRecord(k, "owner-a", "fp")
		noXDR.Envelope = &transfer.Envelope{InnerHash: "ab"}
		if _, _, err := f.store.Claim(ctx, noXDR, t0); err == nil {
			t.Error("claimed an item with an envelope without XDR")
		}
		if f.counter.Total() != 0 {
			t.Errorf("refused writes reached DynamoDB: %v", f.counter.Counts())
		}
		rec := claimRecord(k, "owner-a", "fp")
		mustClaim(t, f.store, rec, t0)
		sameVersion := rec
		if err := f.store.Replace(ctx, sameVersion, condOf(rec)); err == nil || errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Replace without a version bump: %v, want a (non-condition) error", err)
		}
		doubtExpiring := settle(rec, transfer.StatusInDoubt, t0.Unix()+60)
		if err := f.store.Replace(ctx, doubtExpiring, condOf(rec)); err == nil {
			t.Error("stored an in_doubt item with expiresAt")
		}
	})

	t.Run("a lost claim whose holder vanished claims again", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("vanished")
		old := claimRecord(k, "owner-a", "fp")
		mustClaim(t, f.store, old, t0)
		// The holder is released between our failed write and our read-back.
		counter := dynamotest.NewCountingClient(releasingClient{API: f.raw, table: f.table, once: &sync.Once{}})
		s := dynamo.New(counter, f.table)
		rec := claimRecord(k, "owner-b", "fp")
		got, won, err := s.Claim(ctx, rec, t0)
		if err != nil || !won {
			t.Fatalf("Claim: won=%v err=%v", won, err)
		}
		assertRecord(t, "claimed", got, rec)
		if c := counter.Counts(); c["PutItem"] != 2 || c["GetItem"] != 1 {
			t.Errorf("requests %v, want 2 PutItem and 1 GetItem", c)
		}
	})

	t.Run("a lost claim uses the ALL_OLD item when the service returns it", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		k := key("all-old")
		old := claimRecord(k, "owner-a", "fp-a")
		mustClaim(t, f.store, old, t0)
		counter := dynamotest.NewCountingClient(allOldClient{API: f.raw})
		s := dynamo.New(counter, f.table)
		got, won, err := s.Claim(ctx, claimRecord(k, "owner-b", "fp-b"), t0)
		if err != nil || won {
			t.Fatalf("Claim: won=%v err=%v", won, err)
		}
		assertRecord(t, "holder", got, old)
		if c := counter.Counts(); c["PutItem"] != 1 || counter.Total() != 1 {
			t.Errorf("requests %v, want exactly 1 PutItem (no read-back)", c)
		}
	})

	t.Run("EnsureTable on an existing table", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		if err := dynamo.EnsureTable(ctx, f.counter, f.table); err != nil {
			t.Fatal(err)
		}
		if c := f.counter.Counts(); c["CreateTable"] != 0 || c["UpdateTimeToLive"] != 0 {
			t.Errorf("EnsureTable on an existing table made %v", c)
		}
	})
}

// releasingClient deletes the item the first time it is read: the holder of a key is released
// between a lost claim's write and its read-back.
type releasingClient struct {
	dynamotest.API
	table string
	once  *sync.Once
}

func (c releasingClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	var err error
	c.once.Do(func() {
		_, err = c.API.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(c.table), Key: in.Key})
	})
	if err != nil {
		return nil, err
	}
	return c.API.GetItem(ctx, in, optFns...)
}

// allOldClient makes an emulator behave as DynamoDB does: a failed conditional PutItem with
// ReturnValuesOnConditionCheckFailure=ALL_OLD carries the item it failed on.
type allOldClient struct{ dynamotest.API }

func (c allOldClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.API.PutItem(ctx, in, optFns...)
	ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	if !ok || in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
		return out, err
	}
	old, gerr := c.API.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: in.TableName, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": in.Item["pk"]},
	})
	if gerr != nil {
		return nil, gerr
	}
	ccf.Item = old.Item
	return nil, err
}

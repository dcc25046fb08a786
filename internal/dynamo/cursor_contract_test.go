package dynamo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// The list cursors against both emulators: the longest key the configuration allows is stored,
// listed and paged through (dynalite refuses key values over DynamoDB's sizes, as DynamoDB does),
// and every bad cursor is refused before a single request.

func TestCursorsMinidyn(t *testing.T) {
	runCursorContract(t, minidynFixture)
}

func TestCursorsDynalite(t *testing.T) {
	client := dynaliteClient(t)
	runCursorContract(t, func(t *testing.T) fixture { return newFixture(t, client) })
	// dynalite checks an ExclusiveStartKey's sizes as DynamoDB does (the failure a forged cursor
	// used to cause): the position of a client key of MaxKeyLengthBound characters is taken, one
	// character more is refused, so the bound is the largest key whose position a Query accepts.
	t.Run("a position one past the bound is refused by the Query", func(t *testing.T) {
		f := newFixture(t, client)
		query := func(n int) error {
			pk := transfer.StoreKey(walletA, strings.Repeat("k", n))
			_, err := f.raw.Query(context.Background(), &dynamodb.QueryInput{
				TableName: aws.String(f.table), IndexName: aws.String(dynamo.WalletIndex),
				KeyConditionExpression:    aws.String("gsi2pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: transfer.WalletHash(walletA)}},
				ExclusiveStartKey: map[string]types.AttributeValue{
					dynamo.AttrPK:     &types.AttributeValueMemberS{Value: pk},
					dynamo.AttrGSI2PK: &types.AttributeValueMemberS{Value: transfer.WalletHash(walletA)},
					dynamo.AttrGSI2SK: &types.AttributeValueMemberS{Value: "2026-03-01T12:00:00.000Z#" + pk},
				},
			})
			return err
		}
		if err := query(transfer.MaxKeyLengthBound); err != nil {
			t.Errorf("a position of a %d-character key: %v", transfer.MaxKeyLengthBound, err)
		}
		if err := query(transfer.MaxKeyLengthBound + 1); err == nil || !strings.Contains(err.Error(), "1024 bytes") {
			t.Errorf("a position of a %d-character key: %v, want the refusal of a sort key over 1024 bytes", transfer.MaxKeyLengthBound+1, err)
		}
	})
}

func runCursorContract(t *testing.T, newFixture func(t *testing.T) fixture) {
	ctx := context.Background()
	longest := func(last string) string { return strings.Repeat("k", transfer.MaxKeyLengthBound-1) + last }

	t.Run("keys of MaxKeyLengthBound characters are stored, listed and paged", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		for i, last := range []string{"a", "b", "c"} {
			rec := walletClaim(walletA, longest(last), t0.Add(time.Duration(i)*time.Second))
			store(t, f.store, settle(attach(rec), transfer.StatusInDoubt, 0))
		}
		eventually(t, func() error {
			if recs, pages := listWallet(t, f.store, walletA, 1); len(recs) != 3 || pages < 3 {
				return errorf("history: %d items in %d pages, want 3 in 3 or more", len(recs), pages)
			}
			if recs, pages := transfertest.ListInDoubtAll(t, f.store, 1); len(recs) != 3 || pages < 3 {
				return errorf("in doubt: %d items in %d pages, want 3 in 3 or more", len(recs), pages)
			}
			return nil
		})
	})

	t.Run("a bad cursor is refused before any request", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		// Keys of 9 characters: both listings' cursors then end in a partial group with unused bits.
		for i := range 2 {
			rec := walletClaim(walletA, fmt.Sprintf("order-%03d", i), t0.Add(time.Duration(i)*time.Second))
			store(t, f.store, settle(attach(rec), transfer.StatusInDoubt, 0))
		}
		var history, inDoubt string
		eventually(t, func() error {
			var err error
			if _, history, err = f.store.ListByWallet(ctx, walletA, 1, ""); err != nil || history == "" {
				return errorf("history's first page: next %q, %v", history, err)
			}
			if _, inDoubt, err = f.store.ListInDoubt(ctx, 1, ""); err != nil || inDoubt == "" {
				return errorf("in doubt's first page: next %q, %v", inDoubt, err)
			}
			return nil
		})
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		historyOf := func(key string) string {
			pk := transfer.StoreKey(walletA, key)
			return enc(`{"gsi2sk":"2026-03-01T12:00:00.000Z#` + pk + `","pk":"` + pk + `"}`)
		}
		indexOf := func(partition, pk, sk string) string {
			return enc(`{"gsi1pk":"` + partition + `","gsi1sk":"` + sk + `","pk":"` + pk + `"}`)
		}
		pk := transfer.StoreKey(walletA, "order-0001")
		long := transfer.StoreKey(walletA, strings.Repeat("k", 1100-51))
		badHistory := map[string]string{
			"a 1,000-character key":     historyOf(strings.Repeat("k", 1000)),
			"a key one over the bound":  historyOf(longest("kk")),
			"a space in the key":        historyOf("order 0001"),
			"é in the key":              historyOf("order-é001"),
			"edited in its unused bits": lowBitsEdited(t, history),
			"another wallet's":          enc(`{"gsi2sk":"2026-03-01T12:00:00.000Z#` + transfer.StoreKey(walletB, "order-0001") + `","pk":"` + transfer.StoreKey(walletB, "order-0001") + `"}`),
			"an in-doubt listing's":     inDoubt,
		}
		badIndex := map[string]string{
			"another partition's":       indexOf(dynamo.ClaimsPartition, pk, "2026-03-01T12:00:00.000Z#"+pk),
			"a 1,100-byte gsi1sk":       indexOf(dynamo.InDoubtPartition, long, "2026-03-01T12:00:00.000Z#"+long),
			"an empty pk":               indexOf(dynamo.InDoubtPartition, "", "2026-03-01T12:00:00.000Z#"),
			"edited in its unused bits": lowBitsEdited(t, inDoubt),
			"a history cursor":          history,
		}
		f.counter.Reset()
		for name, c := range badHistory {
			if _, _, err := f.store.ListByWallet(ctx, walletA, 1, c); !errorsIsBadCursor(err) {
				t.Errorf("history, %s: %v, want ErrBadCursor", name, err)
			}
		}
		for name, c := range badIndex {
			if _, _, err := f.store.ListInDoubt(ctx, 1, c); !errorsIsBadCursor(err) {
				t.Errorf("in doubt, %s: %v, want ErrBadCursor", name, err)
			}
			if _, _, err := f.store.ListQueued(ctx, t0, 1, c); !errorsIsBadCursor(err) {
				t.Errorf("queued, %s: %v, want ErrBadCursor", name, err)
			}
			if name == "another partition's" {
				continue // the claims listing's own
			}
			if _, _, err := f.store.ListExpiredClaims(ctx, t0, 1, c); !errorsIsBadCursor(err) {
				t.Errorf("expired claims, %s: %v, want ErrBadCursor", name, err)
			}
		}
		if n := f.counter.Total(); n != 0 {
			t.Errorf("%d DynamoDB requests for bad cursors, want 0", n)
		}
		// The cursors as issued still page.
		if _, _, err := f.store.ListByWallet(ctx, walletA, 1, history); err != nil {
			t.Errorf("the issued history cursor: %v", err)
		}
		if _, _, err := f.store.ListInDoubt(ctx, 1, inDoubt); err != nil {
			t.Errorf("the issued in-doubt cursor: %v", err)
		}
	})
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func errorsIsBadCursor(err error) bool {
	return errors.Is(err, dynamo.ErrBadCursor) && errors.Is(err, transfer.ErrBadCursor)
}

// lowBitsEdited is c with the unused low bits of its last character changed (a final group of 2
// or 3 base64url characters carries 4 or 2 bits that are not data); a lenient decoder reads the
// same bytes from it.
func lowBitsEdited(t *testing.T, c string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	unused := map[int]int{2: 4, 3: 2}[len(c)%4]
	if unused == 0 {
		t.Fatalf("cursor %q has no unused bits", c)
	}
	i := strings.IndexByte(alphabet, c[len(c)-1])
	edited := c[:len(c)-1] + string(alphabet[i^(1<<unused-1)])
	a, _ := base64.RawURLEncoding.DecodeString(c)
	if b, err := base64.RawURLEncoding.DecodeString(edited); err != nil || string(a) != string(b) {
		t.Fatalf("the edit of %q changed the data", c)
	}
	return edited
}

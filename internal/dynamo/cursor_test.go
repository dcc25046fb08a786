package dynamo

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The list cursors' decoders: a cursor is accepted only as this package writes it and only for a
// position the query could have reached.

const (
	cursorWallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	otherWallet  = "GDXRGXFYU77KVAF37QVLG4D27EKEESYRVLXMAFSDBA4AZIIBQJ25UZRJ"
)

var cursorTime = time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.UTC)

// issuedHistory is the cursor ListByWallet issues after wallet's item of clientKey created at.
func issuedHistory(t testing.TB, wallet, clientKey string, at time.Time) string {
	t.Helper()
	pk := transfer.StoreKey(wallet, clientKey)
	c, err := historyCursor(transfer.WalletHash(wallet), map[string]types.AttributeValue{
		AttrPK: s(pk), AttrGSI2PK: s(transfer.WalletHash(wallet)), AttrGSI2SK: s(historySortKey(at, pk)),
	})
	if err != nil || c == "" {
		t.Fatalf("historyCursor: %q %v", c, err)
	}
	return c
}

// issuedIndex is the cursor a gsi1 listing of partition issues after the item of clientKey.
func issuedIndex(t testing.TB, partition, clientKey string, at time.Time) string {
	t.Helper()
	pk := transfer.StoreKey(cursorWallet, clientKey)
	c, err := indexCursor(partition, map[string]types.AttributeValue{
		AttrPK: s(pk), AttrGSI1PK: s(partition), AttrGSI1SK: s(inDoubtSortKey(at, pk)),
	})
	if err != nil || c == "" {
		t.Fatalf("indexCursor: %q %v", c, err)
	}
	return c
}

// forge writes json as a cursor, as a client that read the format would.
func forge(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }

// forgedHistory is a well-formed history cursor of wallet for any client key, rules or not.
func forgedHistory(wallet, clientKey string) string {
	pk := transfer.StoreKey(wallet, clientKey)
	return forge(`{"gsi2sk":"` + historySortKey(cursorTime, pk) + `","pk":"` + pk + `"}`)
}

// editLowBits changes the unused low bits of c's last character (RawURLEncoding: a final group
// of 2 or 3 characters carries 4 or 2 bits that are not data); ok is false when c has none.
func editLowBits(c string) (string, bool) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var unused int
	switch len(c) % 4 {
	case 2:
		unused = 4
	case 3:
		unused = 2
	default:
		return "", false
	}
	i := strings.IndexByte(alphabet, c[len(c)-1])
	return c[:len(c)-1] + string(alphabet[i^(1<<unused-1)]), true
}

func wantBadCursor(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrBadCursor) || !errors.Is(err, transfer.ErrBadCursor) {
		t.Errorf("%s: %v, want ErrBadCursor", what, err)
	}
}

func TestIssuedCursorsAreAcceptedUpToTheLongestKey(t *testing.T) {
	for _, key := range []string{"order-0001", strings.Repeat("k", transfer.MinKeyLength), strings.Repeat("k", transfer.MaxKeyLengthBound)} {
		c := issuedHistory(t, cursorWallet, key, cursorTime)
		start, err := historyStart(cursorWallet, transfer.WalletHash(cursorWallet), c)
		if err != nil {
			t.Fatalf("history cursor of a %d-character key: %v", len(key), err)
		}
		if start[AttrGSI2PK].(*types.AttributeValueMemberS).Value != transfer.WalletHash(cursorWallet) ||
			start[AttrPK].(*types.AttributeValueMemberS).Value != transfer.StoreKey(cursorWallet, key) || len(start) != 3 {
			t.Errorf("history start %v", start)
		}
		if len(c) > maxCursorLen {
			t.Errorf("an issued history cursor is %d characters, over maxCursorLen %d", len(c), maxCursorLen)
		}
		for _, partition := range []string{InDoubtPartition, ClaimsPartition, QueuedPartition} {
			c := issuedIndex(t, partition, key, cursorTime)
			start, err := indexStart(partition, c)
			if err != nil {
				t.Fatalf("%s cursor of a %d-character key: %v", partition, len(key), err)
			}
			if start[AttrGSI1PK].(*types.AttributeValueMemberS).Value != partition || len(start) != 3 {
				t.Errorf("%s start %v", partition, start)
			}
			if len(c) > maxCursorLen {
				t.Errorf("an issued %s cursor is %d characters, over maxCursorLen %d", partition, len(c), maxCursorLen)
			}
		}
	}
	// A cursor written from a map (json.Marshal sorts the names) reads as the struct's.
	pk := transfer.StoreKey(cursorWallet, "order-0001")
	old := forge(`{"gsi1pk":"in_doubt","gsi1sk":"2026-03-01T12:00:00.000Z#` + pk + `","pk":"` + pk + `"}`)
	if _, err := indexStart(InDoubtPartition, old); err != nil {
		t.Errorf("a cursor of the previous version: %v", err)
	}
}

// A forged cursor: a 1,000-character key, 2,798 characters of cursor. DynamoDB would
// refuse its 1,051-byte gsi2sk; the store refuses it first.
func TestHistoryCursorWithAThousandCharacterKeyIsRefused(t *testing.T) {
	c := forgedHistory(cursorWallet, strings.Repeat("k", 1000))
	if len(c) != 2798 {
		t.Fatalf("the forged cursor is %d characters, want 2,798", len(c))
	}
	_, err := historyStart(cursorWallet, transfer.WalletHash(cursorWallet), c)
	wantBadCursor(t, "1,000-character key", err)
	// One past the bound is refused too: the key rules' length, not only DynamoDB's sizes.
	_, err = historyStart(cursorWallet, transfer.WalletHash(cursorWallet), forgedHistory(cursorWallet, strings.Repeat("k", transfer.MaxKeyLengthBound+1)))
	wantBadCursor(t, "MaxKeyLengthBound+1 key", err)
}

func TestHistoryCursorKeyPartBreakingTheKeyRulesIsRefused(t *testing.T) {
	for name, key := range map[string]string{
		"a space":         "order 0001",
		"é":               "order-é001",
		"a slash":         "order/0001",
		"a hash sign":     "order#0001",
		"a new line":      "order-0001\n",
		"under 8":         "order-1",
		"a quote escaped": `order\"0001`,
	} {
		_, err := historyStart(cursorWallet, transfer.WalletHash(cursorWallet), forgedHistory(cursorWallet, key))
		wantBadCursor(t, name, err)
	}
}

func TestCursorEditedInItsUnusedLowBitsIsRefused(t *testing.T) {
	edited := 0
	for _, key := range []string{"order-0001", "order-00001", "order-000001"} {
		for name, tc := range map[string]struct {
			cursor string
			start  func(string) (map[string]types.AttributeValue, error)
		}{
			"history": {issuedHistory(t, cursorWallet, key, cursorTime), func(c string) (map[string]types.AttributeValue, error) {
				return historyStart(cursorWallet, transfer.WalletHash(cursorWallet), c)
			}},
			"in doubt": {issuedIndex(t, InDoubtPartition, key, cursorTime), func(c string) (map[string]types.AttributeValue, error) {
				return indexStart(InDoubtPartition, c)
			}},
		} {
			bad, ok := editLowBits(tc.cursor)
			if !ok {
				continue
			}
			// The edit is invisible to a lenient decoder: the same bytes come out.
			a, _ := base64.RawURLEncoding.DecodeString(tc.cursor)
			b, err := base64.RawURLEncoding.DecodeString(bad)
			if err != nil || string(a) != string(b) || bad == tc.cursor {
				t.Fatalf("the edit is not in the unused bits: %q -> %q (%v)", tc.cursor, bad, err)
			}
			_, err = tc.start(bad)
			wantBadCursor(t, name+" edited in its low bits", err)
			edited++
		}
	}
	if edited == 0 {
		t.Fatal("no issued cursor had unused bits to edit")
	}
}

// What a lenient reader would take, and the service never writes.
func TestCursorNotAsTheServiceWritesItIsRefused(t *testing.T) {
	pk := transfer.StoreKey(cursorWallet, "order-0001")
	sk := historySortKey(cursorTime, pk)
	issued := issuedHistory(t, cursorWallet, "order-0001", cursorTime)
	for name, c := range map[string]string{
		"padded":               issued + strings.Repeat("=", (4-len(issued)%4)%4),
		"standard alphabet":    base64.RawStdEncoding.EncodeToString([]byte(`{"gsi2sk":"`+sk+`","pk":"`+pk+`"}`)) + "+/",
		"a line break inside":  issued[:8] + "\r\n" + issued[8:],
		"white space":          forge(`{ "gsi2sk":"` + sk + `", "pk":"` + pk + `" }`),
		"fields reordered":     forge(`{"pk":"` + pk + `","gsi2sk":"` + sk + `"}`),
		"a field twice":        forge(`{"gsi2sk":"` + sk + `","pk":"transfer:0000000000000000:order-0002","pk":"` + pk + `"}`),
		"a field in upper":     forge(`{"gsi2sk":"` + sk + `","PK":"` + pk + `"}`),
		"an escaped name":      forge(`{"gsi2sk":"` + sk + `","\u0070k":"` + pk + `"}`),
		"an unknown field":     forge(`{"gsi2sk":"` + sk + `","pk":"` + pk + `","x":"y"}`),
		"the partition in it":  forge(`{"gsi2pk":"` + transfer.WalletHash(cursorWallet) + `","gsi2sk":"` + sk + `","pk":"` + pk + `"}`),
		"a missing field":      forge(`{"pk":"` + pk + `"}`),
		"null":                 forge(`null`),
		"a number":             forge(`{"gsi2sk":"` + sk + `","pk":1}`),
		"trailing data":        forge(`{"gsi2sk":"` + sk + `","pk":"` + pk + `"} `),
		"a time without ms":    forge(`{"gsi2sk":"2026-03-01T12:00:00Z#` + pk + `","pk":"` + pk + `"}`),
		"a lower-case zone":    forge(`{"gsi2sk":"2026-03-01T12:00:00.000z#` + pk + `","pk":"` + pk + `"}`),
		"the 31st of February": forge(`{"gsi2sk":"2026-02-31T12:00:00.000Z#` + pk + `","pk":"` + pk + `"}`),
		"another wallet's":     issuedHistory(t, otherWallet, "order-0001", cursorTime),
		"an in-doubt cursor":   issuedIndex(t, InDoubtPartition, "order-0001", cursorTime),
		"too long":             strings.Repeat("A", maxCursorLen+1),
	} {
		_, err := historyStart(cursorWallet, transfer.WalletHash(cursorWallet), c)
		wantBadCursor(t, name, err)
	}
}

func TestIndexCursorOfAnotherPartitionIsRefused(t *testing.T) {
	for _, from := range []string{ClaimsPartition, QueuedPartition, "wallet"} {
		c := forge(`{"gsi1pk":"` + from + `","gsi1sk":"` + inDoubtSortKey(cursorTime, transfer.StoreKey(cursorWallet, "order-0001")) +
			`","pk":"` + transfer.StoreKey(cursorWallet, "order-0001") + `"}`)
		_, err := indexStart(InDoubtPartition, c)
		wantBadCursor(t, from+" cursor on the in-doubt listing", err)
	}
	_, err := indexStart(ClaimsPartition, issuedIndex(t, InDoubtPartition, "order-0001", cursorTime))
	wantBadCursor(t, "in-doubt cursor on the claims listing", err)
	_, err = indexStart(InDoubtPartition, issuedHistory(t, cursorWallet, "order-0001", cursorTime))
	wantBadCursor(t, "history cursor on the in-doubt listing", err)
}

func TestIndexCursorWithA1100ByteSortKeyIsRefused(t *testing.T) {
	pk := transfer.StoreKey(cursorWallet, strings.Repeat("k", 1100-51))
	sk := inDoubtSortKey(cursorTime, pk)
	if len(sk) != 1100 {
		t.Fatalf("gsi1sk is %d bytes", len(sk))
	}
	_, err := indexStart(InDoubtPartition, forge(`{"gsi1pk":"in_doubt","gsi1sk":"`+sk+`","pk":"`+pk+`"}`))
	wantBadCursor(t, "1,100-byte gsi1sk", err)
	// A 1,100-byte gsi1sk that does not even end in the pk.
	_, err = indexStart(InDoubtPartition, forge(`{"gsi1pk":"in_doubt","gsi1sk":"`+strings.Repeat("x", 1100)+`","pk":"transfer:0123456789abcdef:order-0001"}`))
	wantBadCursor(t, "1,100 bytes of anything", err)
}

func TestIndexCursorWithAnEmptyOrMalformedPKIsRefused(t *testing.T) {
	for name, pk := range map[string]string{
		"empty":          "",
		"a channel":      "channel:GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H",
		"a bare prefix":  transfer.StoreKey(cursorWallet, ""),
		"a space in key": transfer.StoreKey(cursorWallet, "order 0001"),
	} {
		c := forge(`{"gsi1pk":"in_doubt","gsi1sk":"` + inDoubtSortKey(cursorTime, pk) + `","pk":"` + pk + `"}`)
		_, err := indexStart(InDoubtPartition, c)
		wantBadCursor(t, name+" pk", err)
	}
	_, err := indexStart(InDoubtPartition, forge(`{"gsi1pk":"in_doubt","gsi1sk":"","pk":"`+transfer.StoreKey(cursorWallet, "order-0001")+`"}`))
	wantBadCursor(t, "empty gsi1sk", err)
}

// The bound on the key length is what the index keys hold: a record whose client key is
// MaxKeyLengthBound characters has every key attribute within DynamoDB's sizes, and one character
// more puts its index sort keys over.
func TestMaxKeyLengthBoundIsTheLongestKeyTheIndexesHold(t *testing.T) {
	keySizes := func(n int) (pk, sort int) {
		t.Helper()
		key := strings.Repeat("k", n)
		rec := transfer.Record{
			StoreKey: transfer.StoreKey(cursorWallet, key), Status: transfer.StatusInFlight, Fingerprint: "fp", ClaimID: "c",
			Request:   transfer.Request{OperationType: transfer.Withdraw, WalletAddress: cursorWallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000},
			ClientKey: key, LeaseOwner: "o", LeaseExpiresAt: cursorTime, Version: 1, CreatedAt: cursorTime, UpdatedAt: cursorTime,
		}
		item, err := marshalRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{AttrGSI1SK, AttrGSI2SK} {
			v, ok := stringAttr(item, name)
			if !ok {
				t.Fatalf("an in_flight item has no %s", name)
			}
			sort = max(sort, len(v))
		}
		for _, name := range []string{AttrGSI1PK, AttrGSI2PK} {
			v, _ := stringAttr(item, name)
			if strings.Contains(v, key) {
				t.Fatalf("%s holds the client key: the bound's derivation misses it", name)
			}
		}
		v, _ := stringAttr(item, AttrPK)
		return len(v), sort
	}
	pk, sort := keySizes(transfer.MaxKeyLengthBound)
	if pk > maxPartitionKeyBytes || sort > maxSortKeyBytes {
		t.Errorf("a %d-character key: pk %d bytes, index sort key %d bytes; over DynamoDB's %d / %d", transfer.MaxKeyLengthBound, pk, sort, maxPartitionKeyBytes, maxSortKeyBytes)
	}
	if _, sort := keySizes(transfer.MaxKeyLengthBound + 1); sort <= maxSortKeyBytes {
		t.Errorf("a %d-character key still fits (sort key %d bytes): MaxKeyLengthBound is not the largest", transfer.MaxKeyLengthBound+1, sort)
	}
}

// fuzzSeeds are the cursors the fuzz targets start from: issued ones (a short key and the
// longest), each edited in its low bits, a 2,798-character forgery, a cursor of another
// partition and of another wallet.
func fuzzSeeds(f *testing.F, issue func(key string) string) {
	for _, key := range []string{"order-0001", "order-00001", strings.Repeat("k", transfer.MaxKeyLengthBound)} {
		c := issue(key)
		f.Add(c)
		if e, ok := editLowBits(c); ok {
			f.Add(e)
		}
	}
	f.Add(forgedHistory(cursorWallet, strings.Repeat("k", 1000)))
	f.Add(issuedIndex(f, ClaimsPartition, "order-0001", cursorTime))
	f.Add(issuedHistory(f, otherWallet, "order-0001", cursorTime))
	f.Add("")
}

// Whatever a client sends as a history cursor: no panic; a refusal is ErrBadCursor; an accepted
// cursor names a position of this wallet that DynamoDB can take, and is exactly the cursor the
// store would issue for that position.
func FuzzHistoryCursor(f *testing.F) {
	fuzzSeeds(f, func(key string) string { return issuedHistory(f, cursorWallet, key, cursorTime) })
	partition := transfer.WalletHash(cursorWallet)
	f.Fuzz(func(t *testing.T, c string) {
		start, err := historyStart(cursorWallet, partition, c)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("%.200q: %v is not ErrBadCursor", c, err)
			}
			return
		}
		if c == "" {
			if start != nil {
				t.Fatalf("the empty cursor names %v", start)
			}
			return
		}
		pk, _ := stringAttr(start, AttrPK)
		sk, _ := stringAttr(start, AttrGSI2SK)
		if !strings.HasPrefix(pk, transfer.StoreKey(cursorWallet, "")) || !transfer.ValidStoreKey(pk) ||
			len(pk) > maxPartitionKeyBytes || len(sk) > maxSortKeyBytes || !strings.HasSuffix(sk, "#"+pk) {
			t.Fatalf("%.200q accepted as pk %q gsi2sk %q", c, pk, sk)
		}
		again, err := historyCursor(partition, start)
		if err != nil || again != c {
			t.Fatalf("%.200q accepted, but the store would write %.200q (%v)", c, again, err)
		}
	})
}

// The same for a gsi1 listing's cursor (the reconcile function's list: the in-doubt partition).
func FuzzIndexCursor(f *testing.F) {
	fuzzSeeds(f, func(key string) string { return issuedIndex(f, InDoubtPartition, key, cursorTime) })
	f.Fuzz(func(t *testing.T, c string) {
		start, err := indexStart(InDoubtPartition, c)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("%.200q: %v is not ErrBadCursor", c, err)
			}
			return
		}
		if c == "" {
			if start != nil {
				t.Fatalf("the empty cursor names %v", start)
			}
			return
		}
		pk, _ := stringAttr(start, AttrPK)
		part, _ := stringAttr(start, AttrGSI1PK)
		sk, _ := stringAttr(start, AttrGSI1SK)
		if part != InDoubtPartition || !transfer.ValidStoreKey(pk) || len(pk) > maxPartitionKeyBytes ||
			len(sk) > maxSortKeyBytes || !strings.HasSuffix(sk, "#"+pk) {
			t.Fatalf("%.200q accepted as gsi1pk %q pk %q gsi1sk %q", c, part, pk, sk)
		}
		again, err := indexCursor(InDoubtPartition, start)
		if err != nil || again != c {
			t.Fatalf("%.200q accepted, but the store would write %.200q (%v)", c, again, err)
		}
	})
}

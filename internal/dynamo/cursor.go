package dynamo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A list cursor is base64url without padding (RFC 4648 section 5) of a JSON object holding the
// string key attributes of a Query's LastEvaluatedKey: indexPosition for gsi1 (ListInDoubt,
// ListExpiredClaims, ListQueued), historyPosition for gsi2 (a wallet's history, whose partition
// is the wallet's own and never in the cursor).
//
// A cursor comes back from a client or an operator, so it is read as input: it is accepted only
// when it is byte for byte the cursor this package writes for the position it names, and that
// position is one the query could have reached (the key rules, the query's own partition, the
// sort key's form, DynamoDB's key sizes). Everything else is ErrBadCursor before any request is
// made: DynamoDB would answer a key over its size limits with a ValidationException, which the
// service could only report as its own failure (503), for ever, for the client's bad input.

// DynamoDB's key size limits (Amazon DynamoDB Developer Guide, "Constraints in Amazon DynamoDB",
// "Partition keys and sort keys"), in bytes of the UTF-8 value.
const (
	maxPartitionKeyBytes = 2048
	maxSortKeyBytes      = 1024
)

// sortKeyTimeLayout is the time at the start of gsi1sk and gsi2sk (inDoubtSortKey).
const sortKeyTimeLayout = "2006-01-02T15:04:05.000Z"

// maxCursorLen bounds a cursor before it is decoded. The longest position this service issues is
// a gsi1 one of a client key of transfer.MaxKeyLengthBound characters: pk 999 bytes, gsi1sk 1,024,
// gsi1pk 9, about 2,070 bytes of JSON and 2,760 characters of base64.
const maxCursorLen = 3072

// indexPosition is a gsi1 cursor. Its fields are in name order, the order json.Marshal gives a
// map's keys: cursors already in clients' hands were written from a map and keep reading.
type indexPosition struct {
	GSI1PK string `json:"gsi1pk"`
	GSI1SK string `json:"gsi1sk"`
	PK     string `json:"pk"`
}

// historyPosition is a gsi2 cursor (fields in name order, as indexPosition).
type historyPosition struct {
	GSI2SK string `json:"gsi2sk"`
	PK     string `json:"pk"`
}

// ErrBadCursor is returned (wrapped) for a list cursor this package did not issue; it wraps
// transfer.ErrBadCursor.
var ErrBadCursor = fmt.Errorf("dynamo: %w", transfer.ErrBadCursor)

func badCursor(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadCursor, fmt.Sprintf(format, args...))
}

// encodeCursor is the cursor of position p.
func encodeCursor(p any) (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeCursor reads cursor into p (a pointer to indexPosition or historyPosition) and accepts it
// only when encodeCursor(p) gives the cursor back exactly. That one comparison refuses what a
// lenient reader would take: base64 with padding, line breaks (which encoding/base64 skips even
// in Strict mode) or non-zero unused low bits (Strict refuses them too, and says so sooner); JSON
// with white space, escapes, another field order, a field named twice or in another case
// (encoding/json matches names case-insensitively and lets the last win), a missing or unknown
// field, or a value that is not a string. It checks the form only; the caller checks the position.
func decodeCursor(cursor string, p any) error {
	if len(cursor) > maxCursorLen {
		return badCursor("longer than %d characters", maxCursorLen)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil {
		return badCursor("not base64url without padding: %v", err)
	}
	if err := json.Unmarshal(b, p); err != nil {
		return badCursor("not a position: %v", err)
	}
	if again, err := encodeCursor(p); err != nil || again != cursor {
		return badCursor("not a cursor as this service writes it")
	}
	return nil
}

// validSortKey reports whether sk is the sort key inDoubtSortKey writes for pk: a time in
// sortKeyTimeLayout that formats back to itself (a valid UTC date and time, milliseconds, "Z"),
// "#", then pk exactly; within DynamoDB's sort key size.
func validSortKey(sk, pk string) bool {
	at, rest, ok := strings.Cut(sk, "#")
	if !ok || rest != pk || len(at) != len(sortKeyTimeLayout) || len(sk) > maxSortKeyBytes {
		return false
	}
	t, err := time.Parse(sortKeyTimeLayout, at)
	return err == nil && t.UTC().Format(sortKeyTimeLayout) == at
}

// validPK reports whether pk is a transfer's store key (transfer.ValidStoreKey: the key rules at
// their largest configurable length) within DynamoDB's partition key size.
func validPK(pk string) bool {
	return len(pk) <= maxPartitionKeyBytes && transfer.ValidStoreKey(pk)
}

// indexStart is the ExclusiveStartKey that cursor names in gsi1's partition, nil for "" (the
// first page). The cursor's gsi1pk must be partition, the one this query reads (a cursor of
// another listing names no position here); the key sent is partition itself, never the
// cursor's text.
func indexStart(partition, cursor string) (map[string]types.AttributeValue, error) {
	if cursor == "" {
		return nil, nil
	}
	var p indexPosition
	if err := decodeCursor(cursor, &p); err != nil {
		return nil, err
	}
	switch {
	case p.GSI1PK != partition:
		return nil, badCursor("a cursor of another listing")
	case !validPK(p.PK):
		return nil, badCursor("pk is not a transfer's store key")
	case !validSortKey(p.GSI1SK, p.PK):
		return nil, badCursor("malformed position")
	}
	return p.startKey(), nil
}

// startKey is the gsi1 Query's ExclusiveStartKey at p.
func (p indexPosition) startKey() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK:     &types.AttributeValueMemberS{Value: p.PK},
		AttrGSI1PK: &types.AttributeValueMemberS{Value: p.GSI1PK},
		AttrGSI1SK: &types.AttributeValueMemberS{Value: p.GSI1SK},
	}
}

// indexCursor is the cursor of a gsi1 Query's LastEvaluatedKey in partition, "" for none (the
// last page). A key of another shape or partition is an error (a bug: the Query ran elsewhere).
func indexCursor(partition string, last map[string]types.AttributeValue) (string, error) {
	if len(last) == 0 {
		return "", nil
	}
	var p indexPosition
	var ok [3]bool
	p.PK, ok[0] = stringAttr(last, AttrPK)
	p.GSI1PK, ok[1] = stringAttr(last, AttrGSI1PK)
	p.GSI1SK, ok[2] = stringAttr(last, AttrGSI1SK)
	if len(last) != 3 || ok != [3]bool{true, true, true} || p.GSI1PK != partition {
		return "", fmt.Errorf("unexpected LastEvaluatedKey %v", attrNames(last))
	}
	return encodeCursor(p)
}

// historyStart is the ExclusiveStartKey that cursor names in wallet's partition of gsi2, nil for
// "": pk one of this wallet's store keys (its prefix, then a client key the key rules accept),
// gsi2sk a time, "#" and that pk; or pk the record of one of them (ArchiveKey: the store key and
// a claim ID of claimIDShape), gsi2sk a time, "#", its store key and "#". gsi2pk is the wallet's (partition), never read from the cursor.
func historyStart(wallet, partition, cursor string) (map[string]types.AttributeValue, error) {
	if cursor == "" {
		return nil, nil
	}
	var p historyPosition
	if err := decodeCursor(cursor, &p); err != nil {
		return nil, err
	}
	if storeKey, _, ok := splitArchiveKey(p.PK); ok {
		// A lasting record's position: its store key one of this wallet's, its gsi2sk exactly
		// the one marshalArchive writes for that key and claim ID.
		at, _, _ := strings.Cut(p.GSI2SK, "#")
		switch {
		case !strings.HasPrefix(storeKey, transfer.StoreKey(wallet, "")):
			return nil, badCursor("not a position in this wallet's history")
		case !validSortKey(at+"#"+storeKey, storeKey) || p.GSI2SK != at+"#"+storeKey+"#" || len(p.GSI2SK) > maxSortKeyBytes:
			return nil, badCursor("malformed position")
		}
	} else {
		switch {
		case !strings.HasPrefix(p.PK, transfer.StoreKey(wallet, "")) || !validPK(p.PK):
			return nil, badCursor("not a position in this wallet's history")
		case !validSortKey(p.GSI2SK, p.PK):
			return nil, badCursor("malformed position")
		}
	}
	return map[string]types.AttributeValue{
		AttrPK:     &types.AttributeValueMemberS{Value: p.PK},
		AttrGSI2PK: &types.AttributeValueMemberS{Value: partition},
		AttrGSI2SK: &types.AttributeValueMemberS{Value: p.GSI2SK},
	}, nil
}

// historyCursor is the cursor of a gsi2 Query's LastEvaluatedKey in partition, "" for none.
func historyCursor(partition string, last map[string]types.AttributeValue) (string, error) {
	if len(last) == 0 {
		return "", nil
	}
	var p historyPosition
	var ok [3]bool
	p.PK, ok[0] = stringAttr(last, AttrPK)
	p.GSI2SK, ok[1] = stringAttr(last, AttrGSI2SK)
	var pk string
	pk, ok[2] = stringAttr(last, AttrGSI2PK)
	if len(last) != 3 || ok != [3]bool{true, true, true} || pk != partition {
		return "", fmt.Errorf("LastEvaluatedKey %v outside the wallet's partition", attrNames(last))
	}
	return encodeCursor(p)
}

func stringAttr(key map[string]types.AttributeValue, name string) (string, bool) {
	s, ok := key[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// attrNames lists key's attribute names (never their values: they hold client keys).
func attrNames(key map[string]types.AttributeValue) []string {
	return slices.Sorted(maps.Keys(key))
}

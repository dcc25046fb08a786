package dynamo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A list cursor is base64url (no padding) of a JSON object holding the string key attributes of a
// Query's LastEvaluatedKey: for gsi1 {"pk":..., "gsi1pk":..., "gsi1sk":...}; for gsi2 (a
// wallet's history) {"pk":..., "gsi2sk":...}, the partition being the wallet's (walletCursor).
// A cursor naming any other attribute, missing one, or not of that form is ErrBadCursor.

// cursorFormat is the set of attributes a cursor holds.
type cursorFormat map[string]bool

var (
	inDoubtCursor = cursorFormat{AttrPK: true, AttrGSI1PK: true, AttrGSI1SK: true}
	historyCursor = cursorFormat{AttrPK: true, AttrGSI2SK: true}
)

// maxCursorLen bounds a cursor before it is decoded: a key's attributes are at most a store key
// (about 280 bytes) and a sort key (about 310), so a cursor this service issues is under 1.5 KiB.
const maxCursorLen = 4096

func encodeCursor(key map[string]types.AttributeValue) (string, error) {
	return inDoubtCursor.encode(key)
}

func decodeCursor(cursor string) (map[string]types.AttributeValue, error) {
	return inDoubtCursor.decode(cursor)
}

// encode is the cursor of key, "" for an empty key (the last page). An attribute outside the
// format is an error (a bug: the Query ran on another index), as is a non-string one.
func (f cursorFormat) encode(key map[string]types.AttributeValue) (string, error) {
	if len(key) == 0 {
		return "", nil
	}
	m := make(map[string]string, len(key))
	for name, av := range key {
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok || !f[name] {
			return "", fmt.Errorf("unexpected attribute %q in LastEvaluatedKey", name)
		}
		m[name] = s.Value
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ErrBadCursor is returned (wrapped) for a list cursor this package did not issue; it wraps
// transfer.ErrBadCursor.
var ErrBadCursor = fmt.Errorf("dynamo: %w", transfer.ErrBadCursor)

// decode is the key a cursor names, nil for "" (the first page): exactly the format's attributes.
func (f cursorFormat) decode(cursor string) (map[string]types.AttributeValue, error) {
	if cursor == "" {
		return nil, nil
	}
	if len(cursor) > maxCursorLen {
		return nil, fmt.Errorf("%w: longer than %d characters", ErrBadCursor, maxCursorLen)
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	if len(m) != len(f) {
		return nil, fmt.Errorf("%w: want attributes %s", ErrBadCursor, strings.Join(slices.Sorted(maps.Keys(f)), ", "))
	}
	key := make(map[string]types.AttributeValue, len(m))
	for name, v := range m {
		if !f[name] {
			return nil, fmt.Errorf("%w: unexpected attribute %q", ErrBadCursor, name)
		}
		key[name] = &types.AttributeValueMemberS{Value: v}
	}
	return key, nil
}

package dynamo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The in-doubt index's cursor is base64url (no padding) of a JSON object holding the string key
// attributes of a Query's LastEvaluatedKey: {"pk":..., "gsi1pk":..., "gsi1sk":...}.

var cursorAttrs = map[string]bool{AttrPK: true, AttrGSI1PK: true, AttrGSI1SK: true}

func encodeCursor(key map[string]types.AttributeValue) (string, error) {
	if len(key) == 0 {
		return "", nil
	}
	m := make(map[string]string, len(key))
	for name, av := range key {
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok || !cursorAttrs[name] {
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

func decodeCursor(cursor string) (map[string]types.AttributeValue, error) {
	if cursor == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCursor, err)
	}
	if len(m) != len(cursorAttrs) {
		return nil, fmt.Errorf("%w: want attributes pk, gsi1pk, gsi1sk", ErrBadCursor)
	}
	key := make(map[string]types.AttributeValue, len(m))
	for name, v := range m {
		if !cursorAttrs[name] {
			return nil, fmt.Errorf("%w: unexpected attribute %q", ErrBadCursor, name)
		}
		key[name] = &types.AttributeValueMemberS{Value: v}
	}
	return key, nil
}

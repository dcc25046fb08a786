package api

import (
	"strings"

	"github.com/dunglas/httpsfv"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// headerKey returns the idempotency key an Idempotency-Key field value names, in either of the
// two forms the header takes:
//
//   - the Structured Field form of the IETF draft (draft-ietf-httpapi-idempotency-key-header-07
//     section 2.1: the field is an Item Structured Header whose value is a String), a quoted
//     sf-string such as "order-0001". The value is parsed as an Item (RFC 8941 section 4.2.3), its
//     String (section 3.3.3) per section 4.2.5: \" and \\ are the only escapes; any other
//     backslash, a control character, a non-ASCII byte or a missing closing quote is malformed.
//     The key is the String's unquoted value. Parameters after it ("order-0001";x=1), which the draft
//     defines none of, are parsed and ignored.
//   - the bare form clients sent before the draft, order-0001, taken as it is.
//
// The key's own characters ([A-Za-z0-9._:~-], transfer.Rules.ParseKey) exclude DQUOTE, so the
// form is told by the first byte, and `"order-0001"` and `order-0001` are one key: the unquoted
// value is what is scoped to the wallet, stored and replayed, so a client that switches form
// replays its transfer rather than paying twice.
//
// The Item is parsed with github.com/dunglas/httpsfv, an RFC 8941/9651 parser checked against the
// HTTP WG's structured-field test suite, rather than by hand: parameters alone take the whole
// bare-item grammar.
//
// Errors: a malformed sf-string (or Item) is a *transfer.ValidationError IDEMPOTENCY_KEY_INVALID
// (400) whose detail says where parsing stopped and never quotes the value. A well-formed String
// holding nothing ("") is IDEMPOTENCY_KEY_INVALID, not MISSING: a key was sent. What the
// unquoted value then must satisfy is parseKey's.
func headerKey(v string) (string, error) {
	// net/http and API Gateway strip the field value's surrounding white space; a value that
	// still starts with a space has it inside, and RFC 8941 section 4.2 skips leading SP only.
	if !strings.HasPrefix(strings.TrimLeft(v, " "), `"`) {
		return v, nil
	}
	item, err := httpsfv.UnmarshalItem([]string{v})
	if err != nil {
		// httpsfv's message is a fixed phrase and an offset ("invalid string format: character
		// 5"); it quotes nothing of the value.
		return "", keyInvalid("the Idempotency-Key is not a valid structured-field String " +
			`(RFC 8941 section 3.3.3: "..." with \" and \\ the only escapes, printable ASCII only): ` + err.Error())
	}
	s, ok := item.Value.(string)
	if !ok {
		return "", keyInvalid("the Idempotency-Key must be a structured-field String (a quoted key)")
	}
	if s == "" {
		return "", keyInvalid(`the Idempotency-Key is an empty String ("")`)
	}
	return s, nil
}

func keyInvalid(detail string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeKeyInvalid, Kind: transfer.KindMalformed,
		Field: IdempotencyKeyHeader, Detail: detail}
}

package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/strictjson"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// isJSONMediaType reports whether a Content-Type is application/json, optionally with
// charset=utf-8 (RFC 8259 section 8.1: JSON exchanged between systems is UTF-8).
func isJSONMediaType(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "application/json" {
		return false
	}
	for k, v := range params {
		if k != "charset" || !(strings.EqualFold(v, "utf-8") || strings.EqualFold(v, "utf8")) {
			return false
		}
	}
	return true
}

func invalidBody(field, format string, args ...any) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeRequestInvalid, Kind: transfer.KindMalformed,
		Field: field, Detail: fmt.Sprintf(format, args...)}
}

// wireRequest is POST /transfers' body as read: transfer.RawRequest with the memo kept raw, so
// that it is decoded as strictly as the body itself (decodeMemo).
type wireRequest struct {
	OperationType string          `json:"operationType"`
	WalletAddress string          `json:"walletAddress"`
	Amount        string          `json:"amount"`
	Asset         string          `json:"asset"`
	Memo          json.RawMessage `json:"memo,omitempty"`
}

// decodeRequest reads body strictly into a RawRequest (strictjson.Decode: exactly one JSON
// object, nothing after it, only RawRequest's fields, exact case, each at most once, each a
// string but the memo, an object read by the same rules or null for none). Errors: a
// *http.MaxBytesError from a limited body as is; anything else is a *transfer.ValidationError
// REQUEST_INVALID (400) whose Field names the offending field where there is one ("memo.type"
// within the memo; as sent: redact it before showing it).
func decodeRequest(body io.Reader) (transfer.RawRequest, error) {
	var raw transfer.RawRequest
	var wire wireRequest
	data, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return raw, tooLarge
		}
		return raw, invalidBody("", "the request body could not be read")
	}
	if err := strictjson.Decode(data, &wire); err != nil {
		var e *strictjson.Error
		if !errors.As(err, &e) {
			return transfer.RawRequest{}, invalidBody("", "the request body could not be decoded as a JSON object")
		}
		return transfer.RawRequest{}, invalidBody(e.Field, "%s", e.Message("the request body"))
	}
	raw = transfer.RawRequest{OperationType: wire.OperationType, WalletAddress: wire.WalletAddress, Amount: wire.Amount, Asset: wire.Asset}
	if raw.Memo, err = decodeMemo(wire.Memo); err != nil {
		return transfer.RawRequest{}, err
	}
	return raw, nil
}

// wireMemo is a memo as read: Value a pointer, so that a memo without one is told from an empty
// text memo (which the network takes, and an exchange would credit to no one).
type wireMemo struct {
	Type  string  `json:"type"`
	Value *string `json:"value"`
}

// decodeMemo reads the body's memo: absent or null is none; else exactly one JSON object with
// only "type" and "value", exact case, each at most once, each a string (strictjson.Decode, as
// the body), "value" present ("" only as itself). Errors: *transfer.ValidationError
// REQUEST_INVALID (400) on "memo" or "memo.<field>".
func decodeMemo(data json.RawMessage) (*transfer.RawMemo, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var m wireMemo
	if err := strictjson.Decode(data, &m); err != nil {
		var e *strictjson.Error
		if !errors.As(err, &e) {
			return nil, invalidBody("memo", "memo could not be decoded as a JSON object")
		}
		field := "memo"
		if e.Field != "" {
			field += "." + e.Field
		}
		if e.Kind == strictjson.KindWrongType {
			return nil, invalidBody(field, "%s must be a %s, not a JSON %s", field, e.Want, e.JSONType)
		}
		return nil, invalidBody(field, "%s", e.Message("memo"))
	}
	if m.Value == nil {
		return nil, invalidBody("memo.value", "memo.value is required: the memo's text, id, or 64 hex digits, as a JSON string")
	}
	return &transfer.RawMemo{Type: m.Type, Value: *m.Value}, nil
}

package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// requestFields are RawRequest's JSON names, in the order the docs list them.
var requestFields = []string{"operationType", "walletAddress", "amount", "asset"}

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
	return &transfer.ValidationError{Code: transfer.CodeRequestInvalid, Status: http.StatusBadRequest,
		Field: field, Detail: fmt.Sprintf(format, args...)}
}

// decodeRequest reads body strictly into a RawRequest: exactly one JSON object, nothing after it,
// only RawRequest's fields (exact case, each at most once), each a string. Errors: a
// *http.MaxBytesError from a limited body as is; anything else is a *transfer.ValidationError
// REQUEST_INVALID (400) whose Field names the offending field where there is one.
func decodeRequest(body io.Reader) (transfer.RawRequest, error) {
	var raw transfer.RawRequest
	data, err := io.ReadAll(body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return raw, tooLarge
		}
		return raw, invalidBody("", "the request body could not be read")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return raw, invalidBody("", "the request body is empty; expected a JSON object with %s", strings.Join(requestFields, ", "))
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return transfer.RawRequest{}, jsonError(err)
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return transfer.RawRequest{}, invalidBody("", "unexpected data after the JSON object (at byte %d); send exactly one JSON object", dec.InputOffset())
	}
	if err := checkObjectKeys(data); err != nil {
		return transfer.RawRequest{}, err
	}
	return raw, nil
}

// jsonError turns an encoding/json decoding error into a REQUEST_INVALID error whose detail
// speaks about the client's body, never about Go types.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return invalidBody("", "the request body is not valid JSON: %s (at byte %d)", strings.TrimPrefix(syntax.Error(), "json: "), syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidBody("", "the request body ends in the middle of a JSON value")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return invalidBody("", "the request body must be a JSON object, not a JSON %s", typ.Value)
		}
		return invalidBody(typ.Field, "%s must be a string, not a JSON %s", typ.Field, typ.Value)
	}
	// encoding/json has no typed error for an unknown field: `json: unknown field "name"`.
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, uerr := strconv.Unquote(rest)
		if uerr != nil {
			name = rest
		}
		return invalidBody(clip(name, 64), "unknown field %q; the fields are %s", clip(name, 64), strings.Join(requestFields, ", "))
	}
	return invalidBody("", "the request body could not be decoded as a JSON object")
}

// checkObjectKeys closes two holes of encoding/json's struct decoding: it matches field names
// case-insensitively ("AMOUNT" would fill amount) and lets a repeated field silently win. data is
// already known to be one syntactically valid JSON value.
func checkObjectKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return invalidBody("", "the request body must be a JSON object")
	}
	seen := make(map[string]bool, len(requestFields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalidBody("", "the request body could not be decoded as a JSON object")
		}
		name, _ := tok.(string)
		known := false
		for _, f := range requestFields {
			if name == f {
				known = true
				break
			}
		}
		switch {
		case !known:
			hint := ""
			for _, f := range requestFields {
				if strings.EqualFold(name, f) {
					hint = fmt.Sprintf(" (field names are case-sensitive: did you mean %q?)", f)
				}
			}
			return invalidBody(clip(name, 64), "unknown field %q%s; the fields are %s", clip(name, 64), hint, strings.Join(requestFields, ", "))
		case seen[name]:
			return invalidBody(name, "field %q appears more than once", name)
		}
		seen[name] = true
		if err := dec.Decode(new(json.RawMessage)); err != nil {
			return invalidBody(name, "the request body could not be decoded as a JSON object")
		}
	}
	return nil
}

// clip bounds client input quoted back in a detail.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

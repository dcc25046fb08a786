package api

import (
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

// decodeRequest reads body strictly into a RawRequest (strictjson.Decode: exactly one JSON
// object, nothing after it, only RawRequest's fields, exact case, each at most once, each a
// string). Errors: a *http.MaxBytesError from a limited body as is; anything else is a
// *transfer.ValidationError REQUEST_INVALID (400) whose Field names the offending field where
// there is one (as sent: redact it before showing it).
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
	if err := strictjson.Decode(data, &raw); err != nil {
		var e *strictjson.Error
		if !errors.As(err, &e) {
			return transfer.RawRequest{}, invalidBody("", "the request body could not be decoded as a JSON object")
		}
		return transfer.RawRequest{}, invalidBody(e.Field, "%s", e.Message("the request body"))
	}
	return raw, nil
}

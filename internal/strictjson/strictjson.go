// Package strictjson decodes a JSON object that can be read only one way: the doors that take
// JSON from outside (POST /transfers, the reconcile function's payload) must not let two readers
// see two different requests in one document.
//
// encoding/json alone reads more than one way: it matches field names case-insensitively
// ("AMOUNT" fills amount), lets the last of a repeated field win, and with a json.Decoder ignores
// what follows the first value. A proxy, a log reader or an operator reading the same bytes may
// take the first "storeKey" where the service took the second. Decode refuses all three, so a
// document has one meaning or none (RFC 8259 section 4 leaves duplicate names to the reader;
// RFC 7493, I-JSON, forbids them).
//
// It is pure Go on the standard library, so both the API (internal/api) and the reconcile function
// (internal/reconcile) use it without one adapter importing the other.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Kind says what is wrong with a document.
type Kind int

// Kinds of Error.
const (
	// KindEmpty: nothing but white space.
	KindEmpty Kind = iota + 1
	// KindSyntax: not valid JSON (Offset is the byte where it stopped).
	KindSyntax
	// KindTruncated: the document ends inside a value.
	KindTruncated
	// KindNotObject: one JSON value, but not an object (JSONType names it).
	KindNotObject
	// KindUnknownField: a name that is not one of the fields, exactly (Field; CaseOf when it
	// differs from a field only by case).
	KindUnknownField
	// KindDuplicateField: a field named more than once (Field).
	KindDuplicateField
	// KindWrongType: a field's value of the wrong JSON type (Field, Want, JSONType).
	KindWrongType
	// KindTrailingData: data after the object (Offset is where the object ended).
	KindTrailingData
)

// MaxQuotedName is the longest field name an Error's message quotes; a longer one is described
// by its length only. A name is quoted whole or not at all, never cut, so that a secret pasted
// into it is either whole (and a redactor recognises it) or absent.
const MaxQuotedName = 64

// Error is a document that Decode refuses. Field holds the name as sent, of any length and
// content (it may hold a secret a client pasted by mistake): redact it before showing it, and
// clip only after redacting. Message quotes names only up to MaxQuotedName bytes.
type Error struct {
	Kind Kind
	// Field is the offending field's name as sent ("" when the error is about the document).
	Field string
	// CaseOf is, for KindUnknownField, the field that Field differs from only by case.
	CaseOf string
	// Want is, for KindWrongType, the JSON type the field takes ("string", "boolean", "number").
	Want string
	// JSONType is, for KindWrongType and KindNotObject, the JSON type sent.
	JSONType string
	// Offset is, for KindSyntax and KindTrailingData, a byte offset into the document.
	Offset int64
	// Fields are the document's field names, in the order of the struct.
	Fields []string

	syntax string // KindSyntax: encoding/json's description
}

func (e *Error) Error() string { return "strictjson: " + e.Message("the document") }

// Message describes the error in a sentence about subject (e.g. "the request body").
func (e *Error) Message(subject string) string {
	fields := strings.Join(e.Fields, ", ")
	switch e.Kind {
	case KindEmpty:
		return fmt.Sprintf("%s is empty; expected a JSON object with %s", subject, fields)
	case KindSyntax:
		return fmt.Sprintf("%s is not valid JSON: %s (at byte %d)", subject, e.syntax, e.Offset)
	case KindTruncated:
		return fmt.Sprintf("%s ends in the middle of a JSON value", subject)
	case KindNotObject:
		return fmt.Sprintf("%s must be a JSON object, not a JSON %s", subject, e.JSONType)
	case KindUnknownField:
		hint := ""
		if e.CaseOf != "" {
			hint = fmt.Sprintf(" (field names are case-sensitive: did you mean %q?)", e.CaseOf)
		}
		return fmt.Sprintf("unknown field %s%s; the fields are %s", quoteName(e.Field), hint, fields)
	case KindDuplicateField:
		return fmt.Sprintf("field %s appears more than once", quoteName(e.Field))
	case KindWrongType:
		return fmt.Sprintf("%s must be a %s, not a JSON %s", e.Field, e.Want, e.JSONType)
	case KindTrailingData:
		return fmt.Sprintf("unexpected data after the JSON object (at byte %d); send exactly one JSON object", e.Offset)
	}
	return fmt.Sprintf("%s could not be decoded as a JSON object", subject)
}

// quoteName quotes a field name whole when it is at most MaxQuotedName bytes, else names its length.
func quoteName(name string) string {
	if len(name) <= MaxQuotedName {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("(a name of %d bytes)", len(name))
}

// Decode reads data into v, a pointer to a struct, strictly: exactly one JSON object (white space
// around it allowed), whose names are v's fields' JSON names exactly (case-sensitive), each at
// most once, each value of a type that field takes (null leaves a field unset, as encoding/json
// does). Only the object's own names are checked; v's fields are expected to be scalars. Errors
// are *Error; v is left unchanged on error.
func Decode(data []byte, v any) error {
	fields := FieldNames(v)
	fail := func(e *Error) error {
		e.Fields = fields
		return e
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fail(&Error{Kind: KindEmpty})
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return fail(syntaxError(err))
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return fail(&Error{Kind: KindTrailingData, Offset: end})
	}
	if e := checkNames(raw, fields); e != nil {
		return fail(e)
	}
	// Every name is now one of v's fields exactly and appears once: encoding/json's
	// case-insensitive matching and last-one-wins can no longer choose.
	tmp := reflect.New(reflect.TypeOf(v).Elem())
	if err := json.Unmarshal(raw, tmp.Interface()); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return fail(&Error{Kind: KindWrongType, Field: typ.Field, Want: jsonTypeOf(typ.Type), JSONType: typ.Value})
		}
		return fail(&Error{Kind: KindSyntax, syntax: strings.TrimPrefix(err.Error(), "json: ")})
	}
	reflect.ValueOf(v).Elem().Set(tmp.Elem())
	return nil
}

func syntaxError(err error) *Error {
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return &Error{Kind: KindSyntax, Offset: syntax.Offset, syntax: strings.TrimPrefix(syntax.Error(), "json: ")}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &Error{Kind: KindTruncated}
	}
	return &Error{Kind: KindSyntax, syntax: strings.TrimPrefix(err.Error(), "json: ")}
}

// checkNames walks the top level of raw, one syntactically valid JSON value.
func checkNames(raw json.RawMessage, fields []string) *Error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if tok != json.Delim('{') {
		return &Error{Kind: KindNotObject, JSONType: tokenType(tok)}
	}
	seen := make(map[string]bool, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		name, _ := tok.(string)
		if !contains(fields, name) {
			e := &Error{Kind: KindUnknownField, Field: name}
			for _, f := range fields {
				if strings.EqualFold(name, f) {
					e.CaseOf = f
				}
			}
			return e
		}
		if seen[name] {
			return &Error{Kind: KindDuplicateField, Field: name}
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return syntaxError(err)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func tokenType(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		if tok == json.Delim('[') {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// jsonTypeOf names the JSON type a Go type is decoded from.
func jsonTypeOf(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "whole number"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Pointer:
		return jsonTypeOf(t.Elem())
	}
	return "object"
}

// FieldNames returns the JSON names of the exported fields of the struct v points to (its json
// tag's name, else the Go name; "-" skipped), in declaration order.
func FieldNames(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

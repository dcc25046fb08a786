package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/strictjson"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// seedsIn returns every secret seed inside s (upper case).
func seedsIn(s string) []string {
	var out []string
	for i := 0; i+56 <= len(s); i++ {
		if (s[i] == 'S' || s[i] == 's') && logging.ContainsSeed(s[i:i+56]) {
			out = append(out, strings.ToUpper(s[i:i+56]))
		}
	}
	return out
}

// topLevelNames returns the names of payload's top-level object in order, or ok=false when the
// payload is not one JSON object followed by nothing: a reader independent of strictjson.
func topLevelNames(payload []byte) (names []string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		names = append(names, tok.(string))
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // trailing data
	}
	return names, true
}

var reconcileCodes = []string{reconcile.CodeBadRequest, reconcile.CodeUnknownAction, reconcile.CodeNotFound,
	reconcile.CodeNotInDoubt, reconcile.CodeConflict, reconcile.CodeHashMismatch, reconcile.CodeNotLanded,
	reconcile.CodeTransactionFailed, reconcile.CodeProvenDead, reconcile.CodeLanded, reconcile.CodeStillCanLand,
	reconcile.CodeNotProvenDead, reconcile.CodeSecretInPayload, reconcile.CodeChannelsNotAvailable}

// FuzzReconcilePayload: any payload the reconcile function is invoked with gets an answer, a
// typed refusal or a typed function error (a known code, a message), never a panic; a payload with a repeated
// or case-varied name or trailing data is refused before anything happens (BAD_REQUEST); and no
// part of a seed in the payload reaches the answer, the error, the log or the items' audit
// (a payload is read one way, and secrets never leak). Each input runs against a fresh table holding one in-doubt transfer
// (transfer:7ecd83675f7b01b1:order-fuzz1) whose envelope the ledger can prove either way.
func FuzzReconcilePayload(f *testing.F) {
	for _, p := range []string{
		`{"action":"list"}`, `{"action":"sweep"}`,
		`{"action":"get","storeKey":"transfer:7ecd83675f7b01b1:order-fuzz1"}`,
		`{"action":"resolve","storeKey":"transfer:7ecd83675f7b01b1:order-fuzz1","discard":true,"force":true,"operator":"dave","reason":"r"}`,
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		fx := newFixture(t)
		rec := fx.put(t, "order-fuzz1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
		fx.afterMaxTime()
		fx.ledger.oldest = 90
		answer, err := fx.svc.Answer(invocation("req-fuzz"), json.RawMessage(payload))
		var out string
		if r, ok := answer.(*reconcile.Problem); ok {
			if err != nil || !slices.Contains(reconcileCodes, r.Code) || r.Detail == "" {
				t.Fatalf("refusal %+v (%v) is not typed", r, err)
			}
			out = r.Detail
		} else if err != nil {
			var ie messages.InvokeResponse_Error
			if !errors.As(err, &ie) || !slices.Contains(reconcileCodes, ie.Type) || ie.Message == "" {
				t.Fatalf("error %T %v is not a typed function error", err, err)
			}
			out = ie.Message
		} else {
			names, ok := topLevelNames(payload)
			if !ok {
				t.Fatalf("a payload that is not exactly one JSON object was acted on: %v", answer)
			}
			fields := strictjson.FieldNames(reconcile.Request{})
			seen := map[string]bool{}
			for _, n := range names {
				if seen[n] || !slices.Contains(fields, n) {
					t.Fatalf("a payload naming %q twice or not exactly as a field was acted on: %v", n, answer)
				}
				seen[n] = true
			}
			b, merr := json.Marshal(answer)
			if merr != nil {
				t.Fatal(merr)
			}
			out = string(b)
		}
		stored, gerr := fx.store.Get(context.Background(), rec.StoreKey)
		if gerr == nil {
			b, _ := json.Marshal(stored)
			out += string(b)
		}
		out += string(fx.logs.Bytes())
		for _, seed := range seedsIn(string(payload)) {
			if leaksSeed(out, seed) {
				t.Fatalf("part of a seed in the payload came back: %s", out)
			}
		}
	})
}

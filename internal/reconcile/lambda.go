package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/strictjson"
)

// Invoke is the reconcile function's Lambda handler, aws-lambda-go's lambda.Handler
// (lambda.Start(s)): it answers Answer's value as JSON, as the runtime's reflective handler would
// encode it (HTML characters unescaped, no trailing newline), and returns Answer's function error
// as it is.
//
// It takes the payload's bytes rather than a typed argument on purpose: for a typed argument
// (json.RawMessage included) aws-lambda-go decodes the payload with a json.Decoder, which keeps
// the first JSON value and drops whatever follows it, so `{"action":"list"}{}` would reach
// strictjson.Decode as `{"action":"list"}` and be acted on.
func (s *Service) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	answer, err := s.Answer(ctx, payload)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(answer); err != nil {
		return nil, lambdaError(&Error{Code: CodeStoreUnavailable, Message: "the answer could not be encoded", Err: err})
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Answer is what Invoke answers, as a value: the payload (every byte of it) is a Request, read one
// way only as POST /transfers' body is (strictjson.Decode: one JSON object, exact field names,
// each at most once, nothing after it), the answer the action's value.
//
// An action refused for what the operator asked (a bad payload, an unknown action, a resolve or
// discard the ledger does not allow: an *Error without Err) is answered, not failed: the answer
// is a Problem (RFC 9457: type, title, status, detail, code, action). A refusal is the function
// doing its job, so it must not count among the function's Errors, whose alarm pages for a broken
// sweep (README.md, "Monitoring"). A failure (the store, the ledger, the configuration, creating
// channels: an *Error with Err) is the function error {"errorType": <code>, "errorMessage":
// <message>}, so `aws lambda invoke` shows it and a failed sweep counts among the Errors.
func (s *Service) Answer(ctx context.Context, payload []byte) (any, error) {
	var req Request
	if err := strictjson.Decode(payload, &req); err != nil {
		msg := "the payload could not be read"
		var e *strictjson.Error
		if errors.As(err, &e) {
			msg = e.Message("the payload")
		}
		e2 := badRequest("%s; send one JSON object such as {\"action\":\"list\"}", msg)
		s.cfg.Logger.WarnContext(ctx, "reconcile payload refused", "code", e2.Code, "message", e2.Message)
		return problemOf(e2, ""), nil
	}
	answer, err := s.Do(ctx, req)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeStoreUnavailable, Message: "internal failure", Err: err}
		}
		if e.Err != nil {
			s.cfg.Logger.ErrorContext(ctx, "reconcile action failed", "action", logging.Clip(req.Action, 32), "code", e.Code, "err", e.Err)
			return nil, lambdaError(e)
		}
		s.cfg.Logger.WarnContext(ctx, "reconcile action refused", "action", logging.Clip(req.Action, 32), "code", e.Code, "message", e.Message)
		return problemOf(e, req.Action), nil
	}
	return answer, nil
}

// lambdaError is e as the function error. Its message may quote the payload, where an operator
// may have pasted a secret seed by mistake: seeds are redacted.
func lambdaError(e *Error) error {
	return messages.InvokeResponse_Error{Type: e.Code, Message: logging.Redact(e.Message)}
}

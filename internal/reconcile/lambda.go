package reconcile

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/strictjson"
)

// Invoke is the reconcile function's Lambda handler: the payload is a Request, read one way
// only as POST /transfers' body is (strictjson.Decode: one JSON object, exact field names, each
// at most once, nothing after it), the answer the action's JSON. An error is reported as the function error
// {"errorType": <code>, "errorMessage": <message>}, so `aws lambda invoke` shows the code and a
// caller (or a Step Functions Catch) can match on it; except a refusal whose code is answered
// as a Problem (ACTION_NOT_ALLOWED on a read-only service), which is the invocation's result.
func (s *Service) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	var req Request
	if err := strictjson.Decode(payload, &req); err != nil {
		msg := "the payload could not be read"
		var e *strictjson.Error
		if errors.As(err, &e) {
			msg = e.Message("the payload")
		}
		return nil, lambdaError(badRequest("%s; send one JSON object such as {\"action\":\"list\"}", msg))
	}
	answer, err := s.Do(ctx, req)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeStoreUnavailable, Message: "internal failure", Err: err}
		}
		if e.Err != nil {
			s.cfg.Logger.ErrorContext(ctx, "reconcile action failed", "action", logging.Clip(req.Action, 32), "code", e.Code, "err", e.Err)
		} else {
			s.cfg.Logger.WarnContext(ctx, "reconcile action refused", "action", logging.Clip(req.Action, 32), "code", e.Code, "message", e.Message)
		}
		if p, ok := problemOf(e, req.Action); ok {
			return p, nil
		}
		return nil, lambdaError(e)
	}
	return answer, nil
}

// lambdaError is e as the function error. Its message may quote the payload, where an operator
// may have pasted a secret seed by mistake: seeds are redacted.
func lambdaError(e *Error) error {
	return messages.InvokeResponse_Error{Type: e.Code, Message: logging.Redact(e.Message)}
}

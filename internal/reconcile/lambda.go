package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/stellar-transfer/orchestrator/internal/logging"
)

// Invoke is the reconcile function's Lambda handler: the payload is a Request (unknown fields
// refused), the answer the action's JSON. An error is reported as the function error
// {"errorType": <code>, "errorMessage": <message>}, so `aws lambda invoke` shows the code and a
// caller (or a Step Functions Catch) can match on it.
func (s *Service) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, lambdaError(badRequest("the payload must be a JSON object such as {\"action\":\"list\"}: %s", clip(err.Error(), 200)))
	}
	answer, err := s.Do(ctx, req)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = &Error{Code: CodeStoreUnavailable, Message: "internal failure", Err: err}
		}
		if e.Err != nil {
			s.cfg.Logger.ErrorContext(ctx, "reconcile action failed", "action", clip(req.Action, 32), "code", e.Code, "err", e.Err)
		} else {
			s.cfg.Logger.WarnContext(ctx, "reconcile action refused", "action", clip(req.Action, 32), "code", e.Code, "message", e.Message)
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

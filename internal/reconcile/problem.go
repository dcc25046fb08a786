package reconcile

import "github.com/stellar-transfer/orchestrator/internal/logging"

// ProblemTypeBase prefixes the type URI of a Problem; the code in lower kebab case follows it.
// The URI is a tag URI (RFC 4151), a name rather than an address, as internal/api's problem types
// are; README.md describes each code under the anchor reconcile-<the same kebab case> ("Operating
// it" and "Operator roles", checked by this package's tests).
const ProblemTypeBase = "tag:stellar-transfer-orchestrator,2026:reconcile:"

// Problem is a refusal answered as the invocation's result rather than as a function error: an
// RFC 9457 problem details object (type, title, status, detail) with the extension members code
// (an Error code) and action (the action asked for, clipped to 32 bytes; empty when it is not one
// of the actions). Status is the HTTP status the refusal would have (advisory: RFC 9457 section
// 3.1.2; a Lambda invocation has none).
//
// Every refusal (what the operator asked is refused: a bad payload, an unknown action, a resolve
// or discard the ledger does not allow, a write asked of the read-only reader) is answered this
// way, so that it is told to the operator and does not count as a function error (CloudWatch's
// Errors metric of the function, which the alarms watch: README.md, "Monitoring").
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Action string `json:"action"`
}

// problems are the refusals' titles and statuses by code; a code not listed is "Action refused",
// 422.
var problems = map[string]struct {
	title  string
	status int
}{
	CodeActionNotAllowed: {"Action not allowed on this function", 403},
	CodeBadRequest:       {"Bad request", 400},
	CodeUnknownAction:    {"Unknown action", 400},
	CodeSecretInPayload:  {"Secret in payload", 400},
	CodeNotFound:         {"Item not found", 404},
	CodeConflict:         {"Item changed", 409},
	CodeDayNotOver:       {"Day not over", 409},
	CodeReportNotFound:   {"Report not found", 404},
}

// problemOf is the refusal e as a Problem.
func problemOf(e *Error, action string) *Problem {
	p, ok := problems[e.Code]
	if !ok {
		p.title, p.status = "Action refused", 422
	}
	switch action {
	case ActionList, ActionGet, ActionResolve, ActionSweep, ActionChannels, ActionDaily, ActionReport:
	default:
		action = ""
	}
	return &Problem{
		Type: ProblemTypeBase + kebab(e.Code), Title: p.title, Status: p.status,
		Detail: logging.Redact(e.Message), Code: e.Code, Action: action,
	}
}

// kebab is an upper snake case code in lower kebab case (ACTION_NOT_ALLOWED -> action-not-allowed).
func kebab(code string) string {
	b := []byte(code)
	for i, c := range b {
		switch {
		case c == '_':
			b[i] = '-'
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

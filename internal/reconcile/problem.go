package reconcile

import "github.com/stellar-transfer/orchestrator/internal/logging"

// ProblemTypeBase prefixes the type URI of a Problem; the code in lower kebab case follows it.
// The URI is the code's anchor in README.md's "Operator roles" (checked by this package's
// tests), as internal/api's problem types point at README.md's "Problem types".
const ProblemTypeBase = "https://github.com/stellar-transfer/orchestrator/blob/main/README.md#reconcile-"

// Problem is a refusal answered as the invocation's result rather than as a function error: an
// RFC 9457 problem details object (type, title, status, detail) with the extension members code
// (an Error code) and action (the action asked for, clipped to 32 bytes). Status is the HTTP
// status the refusal would have (advisory: RFC 9457 section 3.1.2; a Lambda invocation has none).
//
// A read-only service answers ACTION_NOT_ALLOWED this way, so that an operator asking the reader
// for a write is told so and does not count as a function error (CloudWatch's Errors metric of
// the function, which the alarms watch).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Action string `json:"action"`
}

// problems are the codes answered as a Problem, with their fixed title and status.
var problems = map[string]struct {
	title  string
	status int
}{
	CodeActionNotAllowed: {"Action not allowed on this function", 403},
}

// problemOf is e as a Problem when its code is answered as one.
func problemOf(e *Error, action string) (*Problem, bool) {
	p, ok := problems[e.Code]
	if !ok {
		return nil, false
	}
	return &Problem{
		Type: ProblemTypeBase + kebab(e.Code), Title: p.title, Status: p.status,
		Detail: logging.Redact(e.Message), Code: e.Code, Action: logging.Clip(logging.Redact(action), 32),
	}, true
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

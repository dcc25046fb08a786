package api

import (
	"net/http"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// statuses is the HTTP status of each kind of problem the domain reports: the one place a
// domain problem becomes a status. The domain says what kind of problem it is (transfer.Kind)
// and its code; the code names the problem within its kind and does not choose the status,
// because one code can come with two kinds: TRANSACTION_EXPIRED is 503 as an UnavailableError
// (nothing landed, retry) and 422 when a stored rejection holds it. The HTTP layer's own
// problems (httpProblem, internalProblem) are born here with their status.
//
// The two kinds of refused request differ by RFC 9110: a malformed one (transfer.KindMalformed)
// is 400 Bad Request, "the server cannot or will not process the request due to something that
// is perceived to be a client error (e.g., malformed request syntax)" (section 15.5.1); a
// well-formed one the service does not accept (transfer.KindUnacceptable) is 422 Unprocessable
// Content: "the server understands the content type of the request content ... and the syntax
// of the request content is correct, but it was unable to process the contained instructions"
// (section 15.5.21). A stored rejection (transfer.KindRejected) is 422 for the same reason: the
// request was understood and what it asked could not be carried out.
//
// TestEveryCodeHasItsStatus walks every code the domain can produce with each kind it comes
// with and holds its status; a transfer.Code* constant it does not list, or a transfer.Kind
// without a row here, fails it.
var statuses = map[transfer.Kind]int{
	transfer.KindMalformed:    http.StatusBadRequest,
	transfer.KindUnacceptable: http.StatusUnprocessableEntity,
	transfer.KindRejected:     http.StatusUnprocessableEntity,
	transfer.KindConflict:     http.StatusConflict,
	transfer.KindNotFound:     http.StatusNotFound,
	transfer.KindUnavailable:  http.StatusServiceUnavailable,
	// A daily limit (transfer.KindLimited) is 429 Too Many Requests: "the user has sent too many
	// requests in a given amount of time ("rate limiting")", which "MAY include a Retry-After
	// header indicating how long to wait" (RFC 6585 section 4): the amount, not the count, is what
	// the day's counter limits, and it frees at the next UTC midnight.
	transfer.KindLimited: http.StatusTooManyRequests,
}

// statusOf is the HTTP status of p: the status its item was stored with when p is a replayed
// rejection whose item holds one (transfer.Result.HTTPStatus: an item replays what it was
// written with), else its kind's row in statuses, else 500 (a problem of no known kind is a bug).
func statusOf(p transfer.Problem) int {
	if s := p.StoredStatus; s >= 400 && s <= 599 {
		return s
	}
	if s, ok := statuses[p.Kind]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Package api is the HTTP face of the transfer orchestrator (README.md, "The HTTP API"; the
// contract is openapi.yaml beside this file): a net/http handler for
//
//	POST   /transfers                                           (header Idempotency-Key, JSON body)
//	GET    /wallets/{walletAddress}/transfers?limit=&cursor=     (the wallet's history)
//	GET    /wallets/{walletAddress}/transfers/{idempotencyKey}
//	DELETE /wallets/{walletAddress}/transfers/{idempotencyKey}          (cancel a queued transfer; WithCancel)
//
// and an adapter that serves it from API Gateway HTTP API events (payload format 2.0).
//
// The Idempotency-Key header takes the key bare (order-0001) or as the IETF draft's
// structured-field String ("order-0001", RFC 8941 section 3.3.3); both name the same key, the
// unquoted value (headerKey). The GET path takes the value only.
//
// Errors are RFC 9457 problem details (application/problem+json). Every problem has
//
//	type            ProblemTypeBase + the code in lower kebab case, a tag URI that names the
//	                code's row in README.md's "Problem types", e.g.
//	                tag:stellar-transfer-orchestrator,2026:problem:idempotency-key-missing
//	title           a fixed, human-readable summary of the code
//	status          the HTTP status
//	detail          what went wrong with this request (input it quotes: seeds redacted, then
//	                clipped to 512 bytes)
//	instance        the request path as decoded, seeds redacted, clipped to 256 bytes, re-escaped
//	code            the machine-readable code (transfer.Code* or this package's Code*)
//	classification  retryable | terminal | indeterminate
//	traceId         the request's trace ID (also in the X-Trace-Id response header): the Root of
//	                X-Amzn-Trace-Id only in X-Ray's format, else the API Gateway request ID, else
//	                a random one
//
// and, where they apply, retryAfterMs (milliseconds, with a Retry-After header in whole seconds,
// rounded up), transactionHash and resultCodes (a stored rejection of an included transaction),
// failingCode (what made a transfer in doubt), state (a cancellation refused or replayed), and
// limit and limitCap (the limit that refused a transfer and its cap as a decimal amount:
// AMOUNT_ABOVE_LIMIT, DAILY_LIMIT_EXCEEDED). A daily limit is 429 (status.go); API Gateway's own
// throttling is 429 too, as application/json {"message"}, never a problem.
package api

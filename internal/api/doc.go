// Package api is the HTTP face of the transfer orchestrator (DESIGN.md section 6): a net/http
// handler for
//
//	POST /transfers                                            (header Idempotency-Key, JSON body)
//	GET  /wallets/{walletAddress}/transfers/{idempotencyKey}
//
// and an adapter that serves it from API Gateway HTTP API events (payload format 2.0).
//
// Errors are RFC 9457 problem details (application/problem+json). Every problem has
//
//	type            ProblemTypeBase + the code in lower kebab case,
//	                e.g. https://stellar-transfer.dev/problems/idempotency-key-missing
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
// rounded up), transactionHash and resultCodes (a stored rejection of an included transaction) and
// failingCode (what made a transfer in doubt).
package api

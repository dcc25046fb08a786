// Package transfertest holds what tests of transfer.Store users and implementations share, as
// net/http/httptest does for HTTP: Store, a transfer.Store in memory with the conditional
// semantics of the DynamoDB store (internal/dynamo), and StoreContract, the suite that holds any
// transfer.Store to those semantics. StoreContract runs against Store here and against
// dynamo.Store on minidyn (and dynalite when DYNALITE_ENDPOINT is set) in internal/dynamo, so a
// rule an orchestrator test relies on in memory is one DynamoDB keeps.
//
// It imports internal/transfer and the standard library only (internal/repotest holds the rule).
package transfertest

// Package transfer is the domain of the Stellar Transfer Orchestrator: what a transfer request is,
// how it is canonicalised and keyed, the typed errors a caller sees, how failures are classified,
// and the Orchestrator that moves money at most once per (wallet, idempotency key).
//
// The package depends only on interfaces it declares itself (Store, Ledger, Clock, AddressParser);
// it imports no AWS or Stellar package. Rules come from the seed specification of retry-safe
// transfer orchestration (seeds/000) and from DESIGN.md sections 1, 3, 4 and 5.
package transfer

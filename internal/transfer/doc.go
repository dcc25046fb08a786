// Package transfer is the domain of the Stellar Transfer Orchestrator: what a transfer request is,
// how it is canonicalised and keyed, the typed errors a caller sees, how failures are classified,
// and the Orchestrator that moves money at most once per (wallet, idempotency key).
//
// The package depends only on interfaces it declares itself (Store, Ledger, Clock, AddressParser);
// it imports no AWS or Stellar package. Rules come from the seed specification of retry-safe
// transfer orchestration (seeds/000) and from DESIGN.md sections 1, 3, 4 and 5.
//
// # Incarnations
//
// One key can hold a sequence of items over time: releasing a key (its envelope proven dead, or
// never sent) deletes its item, and the next claim creates a new one. Each such item is an
// incarnation of the key, named by a Record.ClaimID: 16 random bytes written by the claim and kept
// by every later write of that item (attach, take-over, settle, in_doubt, operator resolve). The
// version restarts at 1 with every claim, so a version alone cannot tell two incarnations apart.
//
// The rule: every conditional write names the item exactly as its writer read it (Expect): the
// incarnation, status, version, lease owner and the inner hash of the envelope it holds. A writer
// that read an earlier incarnation (a slow sweep, an operator, a delayed take-over, a stale inline
// reconciler) therefore fails its condition against a later one; it can never settle, take over or
// delete an item it did not read. The writes go through ReplaceItem and DeleteItem, which also
// recognise a write of their own whose answer was lost (the SDK's retry fails its condition against
// the item it wrote): a claim by its ClaimID and lease owner, a replace by the item it wrote, a
// delete by the incarnation being gone. The same holds for channel account leases, whose owner ID is
// unique per lease (internal/dynamo, ChannelLeases).
//
// A ClaimID was chosen over a version that keeps rising across releases because the latter needs a
// tombstone per released key (an item that outlives the release) to remember the last version;
// a random ID needs no state beyond the item itself. Items written before claim IDs existed have
// none: a condition with an empty ClaimID matches only such an item, never a later claim.
package transfer

// Package model is a bounded exhaustive check of the transfer item's writers: no interleaving lets a stale writer change a newer claim.
//
// Its test (interleave_test.go) runs the real code, transfer.Orchestrator's Transfer and Settle and
// reconcile.Service's resolve (with a hash, or a discard), as actors on one key: a claimant, a take-over
// and an inline reconciler (three retries of the same transfer, whose role depends on what they
// find), the sweep and an operator. Every Store call, every Ledger send and look-up and every
// Clock sleep is a scheduling point: the actor's goroutine stops there until the explorer picks
// it, so exactly one actor runs at a time and a run is a function of the choices made. The
// explorer enumerates those choices depth first (stateless model checking, as CHESS does),
// replaying the prefix of choices from a fresh world for every branch. The ledger's answers are
// choices too: a send is accepted or refused, a look-up finds the envelope pending, landed or
// proven dead (decided lazily and kept), and a sleep ends the caller's budget or not. One clock
// tick, also a choice, moves time past every lease and budget begun before it.
//
// The five actors together reach more than a million states, too many for `make test`; so each
// model (interleave_test.go) holds the claimant, the take-over and one stale writer (the sweep or
// the operator; the take-over is also the inline reconciler whenever it finds the item in_doubt),
// explored completely within its bounds: one clock tick, at most one preemption (a switch away
// from an actor that could go on; a switch at a sleep or a return is free, as in CHESS), and every
// sleep may end its caller's budget. One model lets a conditional write apply and lose its answer
// (the SDK's retry then fails against the item it wrote). MODEL_FULL=1 adds an operator forcing a
// discard, a second retry (a stale inline reconciler, a delayed take-over), a take-over that
// reclaims after its backoff, and two preemptions.
//
// Two prefixes that reach the same state (the store's item, every envelope's fate, the clock, and
// each actor's history of answers, which determines all it will do) have the same futures, so the
// second is not explored again; the count of complete interleavings covered is the number of
// paths through the resulting graph of states.
//
// After every step the invariants (README.md, "What the service guarantees") are checked: at most
// one envelope of the
// key can still land, at most one has landed, every envelope that can still land or has landed is
// the one the key's item holds, no delete removes an item whose envelope can still land or has
// landed, and every answer is true (a 200 names the landed hash). A violation is reported with
// the interleaving that reached it, step by step.
//
// Cancel: the models "cancel" and "cancel, lost answer" start from the key's queued item (an
// async transfer accepted with 202) and run SubmitterFunction receiving its message
// (Orchestrator.RunQueued) beside a DELETE (Orchestrator.Cancel), the second also letting one
// write apply and lose its answer. Their invariants: a cancelled item never has an envelope that
// can land (it holds no envelope and no lease, and no envelope of the key is queued or landed),
// and a cancel's answer is true when it returns (cancelled: the item is cancelled; not
// cancellable: the item is past queued and not cancelled). MODEL_FULL=1 adds a synchronous retry
// of the same request beside them, a second cancel (a client's retry) with a lost answer, and a
// submitter that takes, is proven dead, requeues and runs again, with two preemptions.
//
// Batches: the batch models (batch_test.go, batchreal_test.go) check the protocol of
// internal/transfer/doc.go, "Batches", for two queued keys paid by one envelope, on the real
// code over the same store and scheduler: the submitter is Orchestrator.RunQueuedBatch with both
// keys' messages (BATCH_SIZE 2; it reads each item, takes each key, builds one envelope through
// the model's BatchLedger, writes the batch item, attaches it to both keys in one transaction,
// sends it, awaits the ledger and judges each key by its own operation); the synchronous caller on
// one key is Orchestrator.Transfer (it waits, takes an expired lease over and re-sends the batch's
// envelope read from the batch item, or runs its key alone when none was attached; it settles an
// in-doubt key inline); the sweep is Orchestrator.Settle of each key; the cancel is
// Orchestrator.Cancel. The store's transaction over many items (ReplaceAll) is a point that may
// apply and lose its answer; PutBatch is none, since no key names the batch before the attach.
// The ledger may answer a batch landed, FAILED on either key's destination or on the source,
// pending or proven dead; a send may be accepted, refused, or accepted with its answer lost.
// Faults: the submitter's process dying at any of its points, a write or transaction applying
// with its answer lost. The invariants hold per key and per operation: of the envelopes holding a
// key's operation at most one can still land and at most one has landed, each is the one the
// key's item names, a settled item and every answer that names an operation are true of the
// ledger (a 200 names a landed envelope holding the key's operation; a rejection one that failed
// on that operation's destination). Four mutations each make the model find its violation
// (TestBatchModelFindsBrokenRules): the store's transaction made key by key (so the attach, and a
// refused batch's requeue, are each one write per key), on the real actors; a FAILED batch
// rejecting every key and a batch in doubt requeued, rules of the domain code that the real code
// cannot be made to break, on actors written step by step as the design says (handSubmitter,
// handCaller, handSweep) over the domain's real pieces. MODEL_FULL=1 adds the submitter, the
// caller and the sweep together, lost answers beside each, and two submitters given the same
// messages (SQS delivers at least once).
//
// The package has no non-test code; it lives under internal/chaos beside the random campaign.
package model

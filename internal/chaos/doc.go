// Package chaos is the fault campaign of the retry-safety promise (issue 4): many transfers with
// repeated keys and concurrent callers, through the real orchestrator, DynamoDB store (minidyn over
// HTTP) and Stellar RPC ledger (the local network over HTTP), with faults chosen at random at every
// step: each network fault of internal/stellarsim, a refused connection, lost lookups, DynamoDB
// errors and throttling on every kind of request, a DynamoDB outage, a crash of the invocation
// between every pair of steps, ledger stalls and history that is forgotten for two waves.
//
// Stale actors (issue 11) run with the faults armed: every kind of DynamoDB write (claim, replace,
// delete, channel lease and release) may apply and lose its answer, either as an error or as the
// answer to the SDK's retry of the same request (which fails its condition against the write it
// made itself); a quarter of the callers call again 20 to 90 s later, after a dead invocation's
// lease ran out; the scheduled sweep and an operator (list, get, resolve with a hash, discard, a
// forced discard or resolve only where the ledger can no longer judge, after checking the
// network's full history) run beside every wave through internal/reconcile; and heldStore holds
// conditional writes back on the virtual clock, take-overs until a new incarnation of the key
// appears, so that writes built from a stale read meet later claims of the same key. The report
// counts each of these (faults, "stale actors", "operators"); a broken invariant prints the
// key's applied transactions and the trace of every write to its item.
//
// Then the faults heal and every key is retried until it settles, and the ledger judges:
//
//   - no key has more than one transaction applied;
//   - every applied transaction belongs to a key whose item is replayable with that hash;
//   - every success a client saw is on the ledger;
//   - after healing every key settles (nothing in_flight or in_doubt) within the time its last
//     envelope needs to be provable (maxTime, or the dead invocation's lease) plus two ledgers,
//     and one clean transfer after that.
//
// Time is virtual (internal/vclock): ledgers close every 5 s of it, and nothing waits for real
// time. Every random choice comes from the seed and the (key, caller) it concerns, so a failing
// seed reruns the same faults at the same steps (the interleaving of goroutines may still differ).
package chaos

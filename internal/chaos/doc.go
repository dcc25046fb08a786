// Package chaos is the fault campaign of the retry-safety promise (issue 4): many transfers with
// repeated keys and concurrent callers, through the real orchestrator, DynamoDB store (minidyn over
// HTTP) and Stellar RPC ledger (the local network over HTTP), with faults chosen at random at every
// step: each network fault of internal/stellarsim, a refused connection, lost lookups, DynamoDB
// errors before and after a write and throttling on every kind of request, a DynamoDB outage,
// a crash of the invocation between every pair of steps, and ledger stalls. Then the faults heal
// and every key is retried until it settles, and the ledger judges:
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

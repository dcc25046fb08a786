// Package chaos is the fault campaign of the retry-safety promise (money moves at most once per key): many transfers with
// repeated keys and concurrent callers, through the real orchestrator, DynamoDB store (minidyn over
// HTTP, in-process) and Stellar RPC ledger (the local network over HTTP), with faults chosen at
// random at every step: each network fault of internal/stellarsim, a refused connection, lost
// lookups, DynamoDB errors and throttling on every kind of request, a DynamoDB outage, a crash of
// the invocation between every pair of steps, ledger stalls and history that is forgotten for two
// waves.
//
// The local network is the realistic one by default (visibility lag, the TOO_LATE
// offset, queue ageing, protocol 23; Config.SimLegacy brings back the kinder one), and each wave
// may arm stellar-rpc's read faults for its duration (readfaults.go): read_order (a lookup racing
// ingestion or catch-up answers NOT_FOUND for a transaction in one of the latest ledgers), db_lag
// (RPC's database behind its core) and, in runs whose RPC is load balanced (Config.LoadBalanced,
// which also sets the service's STELLAR_RPC_LOAD_BALANCED for the whole run), several instances
// behind the RPC URL, each lagging differently. The Horizon run arms none of them.
//
// Stale actors (writers acting on an item read before a newer claim) run with the faults armed: every kind of DynamoDB write (claim, replace,
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
// In the async mode (Config.Async, async.go) every call posts with Prefer: respond-async and
// SubmitterFunction's real handler (queue.Submitter) settles the transfers in batches, several
// invocations at once, each dying whole when one of its records crashes, from a model of an SQS
// standard queue (sqs.go): receipt handles per receive, duplicates as the same message received
// again, visibility timeouts set by ChangeMessageVisibility (which may fail), the dead-letter
// queue, loss, and messages delivered late, after healing, which must do nothing.
//
// In the congestion run (Config.Congested, congestion.go) the network's classic lane takes 60
// operations per ledger, background payments keep it surge priced and its queue full, and a
// spike makes every background bid at least 10 times the clearing fee for 2 minutes in every 10;
// the service runs with MAX_FEE_STROOPS 2,000. In contract mode the Soroban lane is congested too
// (its instructions scaled the same way, about 19 vault calls a ledger, and 22 background
// contract calls after every close, with the same spikes), and the cap is 70,000 (a call's
// resource fee plus its inclusion fee). The congestion goes on while the faults heal.
//
// The report also gives the in-doubt rate and the rebuild rate (per 1,000 calls) and how long
// items stayed in doubt (from the write that made an item in_doubt to the one that settled or
// released it: median and longest).
//
// Then the faults heal and every key is retried until it settles, and the ledger judges:
//
//   - no key has more than one transaction applied;
//   - every applied transaction belongs to a key whose item is replayable with that hash;
//   - every success a client saw is on the ledger;
//   - after healing every key settles (nothing in_flight or in_doubt) within the time its last
//     envelope needs to be provable (maxTime, or the dead invocation's lease) plus two ledgers,
//     and one clean transfer after that. Under a load balancer an item whose envelope no proof
//     can ever settle (never applied, its source's sequence number used before the proof) is
//     settled by an operator's forced discard after a full-history check, as the README
//     prescribes, and counted (Report.LeftToOperator);
//   - in the congestion run, no envelope of the service was built, reached the network or was
//     charged above MAX_FEE_STROOPS, nothing a call sent before a FEE_ABOVE_CAP answer ever
//     landed, and every FEE_ABOVE_CAP answer carries a Retry-After of at least a second.
//
// Time is virtual (internal/vclock): ledgers close every 5 s of it, and nothing waits for real
// time. Every random choice comes from the seed and the (key, caller) it concerns, so a failing
// seed reruns the same faults at the same steps; the interleaving of goroutines may still differ,
// and with it the counts of a report (one binary, one seed, 40 keys: 402 and 392 calls on two
// runs), so a seed replays a failure's conditions, not its every step.
//
// The service's DynamoDB client reaches minidyn's HTTP handler in-process (handlerTransport):
// most of a campaign's CPU is item reads (callers coalescing on a held claim read the item every
// 250 ms of virtual time), and a loopback socket per read cost more than minidyn itself.
package chaos

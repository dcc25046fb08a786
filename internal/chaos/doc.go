// Package chaos is the fault campaign of the retry-safety promise (money moves at most once per key): many transfers with
// repeated keys and concurrent callers, through the real orchestrator, DynamoDB store (minidyn over
// HTTP, in-process) and Stellar RPC ledger (the local network over HTTP), with faults chosen at
// random at every step: each network fault of internal/stellarsim, a refused connection, lost
// lookups, DynamoDB errors and throttling on every kind of request, a DynamoDB outage, a crash of
// the invocation between every pair of steps, ledger stalls and history that is forgotten for two
// waves.
//
// The local network is the realistic one (visibility lag, the TOO_LATE offset, queue ageing,
// core's shuffled apply order, protocol 23's restore by the invocation), and each wave
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
// With limits (Config.Limits, limitfaults.go; TestCampaignLimits) the service runs with daily
// caps far above what the campaign moves, so every claim is one TransactWriteItems of the claim
// and its two counters, refused, throttled or answer-lost like every other write; besides the
// invariants below, every counter must hold exactly what the claims that applied charged it.
//
// In the async mode (Config.Async, async.go) every call posts with Prefer: respond-async and
// SubmitterFunction's real handler (queue.Submitter) settles the transfers in batches, several
// invocations at once, each dying whole when one of its records crashes, from a model of an SQS
// standard queue (sqs.go): receipt handles per receive, duplicates as the same message received
// again, visibility timeouts set by ChangeMessageVisibility (which may fail), the dead-letter
// queue, loss, and messages delivered late, after healing, which must do nothing. One key in six
// is cancelled (Orchestrator.Cancel) by its first caller right after its POST, racing the
// submitter under the same faults: a key that ends cancelled must have no transaction applied,
// no client told of a success and no envelope or lease on its item, and a DELETE answered 200
// must find its key cancelled after healing (judge).
//
// With batches (Config.BatchSizes, batches.go; TestCampaignAsync) the service runs with
// BATCH_SIZE and each wave picks its size, 1, 10 or 100 by the seed, as a redeploy changes
// TransfersPerTransaction while keys are queued, in flight or in doubt: above 1 SubmitterFunction
// is queue.BatchSubmitter over Orchestrator.RunQueuedBatch, its events carry up to BATCH_SIZE
// messages gathered for the 2 s batching window, and the keys pay 16 wallets in turn (a batch
// holds one payment per destination). Every fault above reaches the batched submissions: the
// batch item's write, the attach and the together-requeue (TransactWriteItems) and the batch
// item's TTL refused, throttled or answer-lost; the batch envelope's sends and look-ups; crashes
// at every step, after which nothing of the invocation reaches DynamoDB or the network; held
// attaches; lost destination checks (the batch is then built unchecked). In three waves of ten a
// wallet paid by the wave loses its trustline's authorization for a minute while its batches are
// checked, built and sent, so a batch lands FAILED by one key's operation (op_not_authorized):
// that key is rejected, its neighbours requeued and paid by a later transaction. A cancel of a
// batched wave comes within 20 s of its POST, racing the batch's take. The batched invocation
// runs its messages and batches one after the other (Orchestrator.Serial), on one place of the
// virtual clock; invocations, callers, the sweep and the operators still run beside each other.
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
//   - no key has more than one transaction applied; classic payments are counted from the
//     network's applied operations, each naming its key by destination and amount, so a key
//     counts the transactions that paid it (SUCCESS) or failed its own operation (FAILED), never
//     a FAILED batch in which its operation succeeded and a neighbour's failed;
//   - every applied transaction belongs to a key whose item is replayable with that hash (or,
//     for a key whose destination refused it on chain, rejected naming the FAILED transaction in
//     which its own operation failed); a batched key's item names a transaction whose operation
//     at the key's index is this key's payment and succeeded; no operation pays no key, no
//     transaction pays a key twice, no batch carries a memo;
//   - every success a client saw is on the ledger, and holds exactly one payment of the key;
//   - every envelope a key let go of (requeued, released or rebuilt from an in_flight or
//     in_doubt item) never landed SUCCESS, and either landed FAILED (its sequence number
//     consumed, nothing moved) or can land no more (past its maxTime, or its source's sequence
//     number past its own);
//   - no batch item was given its TTL while a key named it in_flight or in_doubt (checked at
//     every ExpireBatch that applied);
//   - after healing every key settles (nothing in_flight or in_doubt) within the time its last
//     envelope needs to be provable (maxTime, or the dead invocation's lease) plus two ledgers,
//     and one clean transfer after that. Under a load balancer an item whose envelope no proof
//     can ever settle (never applied, its source's sequence number used before the proof) is
//     settled by an operator's forced discard after a full-history check, as the README
//     prescribes, and counted (Report.LeftToOperator); a batched key by its batch's envelope;
//   - in the congestion run, no envelope of the service was built, reached the network or was
//     charged above MAX_FEE_STROOPS per payment it holds, nothing a call sent before a FEE_ABOVE_CAP answer ever
//     landed, and every FEE_ABOVE_CAP answer carries a Retry-After of at least a second.
//
// Time is virtual (internal/vclock): ledgers close every 5 s of it, and nothing waits for real
// time. Every random choice comes from the seed and the (key, caller) it concerns, so a failing
// seed reruns the same faults at the same steps; the interleaving of goroutines may still differ,
// and with it the counts of a report (one binary, one seed, 40 keys: 402 and 392 calls on two
// runs), so a seed replays a failure's conditions, not its every step.
//
// The rig (newRig) starts internal/devstack's stack with the API function alone, the campaign's
// keys, network options and ledger closes, and the faulty DynamoDB client. That client reaches
// minidyn's HTTP handler in-process (devstack.Options.InProcessDynamo): most of a campaign's CPU
// is item reads (callers coalescing on a held claim read the item every 250 ms of virtual time),
// and a loopback socket per read cost more than minidyn itself.
//
// # Scenarios
//
// Beside the random campaign, each known way to pay twice, lose a payment, block a key or answer
// falsely is played on purpose, one interleaving at a time, against the real store, the real RPC
// ledger and the local network (one caller, virtual time), and named after the rule it holds.
// Every scenario ends with the ledger judging the key: at most one transaction applied, the item
// replayable with it, and every success a caller saw on the ledger. By file:
//
//   - deathproof_test.go, proofs of death: an envelope is rebuilt only once the ledger proves it
//     can no longer land (a ledger closed after its maxTime and shown by RPC, with history that
//     covers the submission, or its source's sequence number used). A lost or late send answer, a
//     refused re-send (a take-over's too), the local clock, short history and a budget shorter
//     than the envelope's validity prove nothing; a transaction applied FAILED is the key's
//     answer, replayed, never rebuilt.
//   - rpcreads_test.go, reads of stellar-rpc: a NOT_FOUND read while RPC catches up (its read
//     order), answers from several instances behind one URL (on the current and the older
//     releases) and a visibility lag that has passed decide nothing, and the key pays once.
//   - takeover_test.go, stale writers and take-overs: a sweep, an operator or a caller that read
//     one incarnation of a key (its settle, park, discard, forced resolve or take-over write)
//     never changes a later one; a take-over settles the envelope it finds.
//   - lostanswers_test.go, the store's lost answers: a write applied with its answer lost (claim,
//     attach, settle, release, in_doubt, take-over, sweep and discard deletes, with the SDK's
//     real retries) is recognised by its writer, and a call's own leftover claim never blocks
//     its key.
//   - answers_test.go, what clients and operators are told: a throttled retry of a landed or
//     accepted transfer is its replay; two keys are two payments; CHANNELS_BUSY leaves the key
//     free; TRANSFER_IN_PROGRESS only while another request runs; a forced resolve is allowed
//     where the history cannot be vouched for.
//   - async_test.go, async_requeue_test.go, async_delivery_test.go and async_faults_test.go,
//     async transfers: messages delivered twice, late, out of order, in one batch or never;
//     invocations dying; the ledger's refusal, an operator's discard, a synchronous retry or the
//     sweep settling or requeueing an accepted transfer. It pays at most once, ends in a true
//     answer, and is never left queued without a message to run it.
//   - claimreadback_adversary_test.go and channelcalendar_adversary_test.go, the real DynamoDB
//     store: a claim applied with every answer lost is the caller's own, and a campaign whose
//     channel calendar bookings are refused, throttled or lose their answers pays at most once.
//   - sqs_test.go, readfaults_test.go and batches_test.go hold the campaign's own parts to their
//     models: SQS's receipt handles and dead-letter rule, stellar-rpc's read faults and the
//     report's rates, the batched judge's attribution of operations to keys and of envelopes let
//     go of (the in-process DynamoDB transport is internal/devstack's, tested there).
//
// rig_test.go holds the rig the scenarios share; stale_test.go the stale actors (slow lookups,
// held writes, a store whose answers are lost on the wire). The campaign itself is
// campaign_test.go: keys hit by 8 concurrent callers, in synchronous, asynchronous (batched),
// congested and vault-contract runs, about 5,900 calls in `make test` and 10,000 a run in `make
// chaos` (CHAOS_KEYS=1250 a run at full size; CHAOS_SEED=<seed> replays one; CHAOS_BATCH=10 or
// CHAOS_BATCH=1 holds the async run's waves to one BATCH_SIZE).
package chaos

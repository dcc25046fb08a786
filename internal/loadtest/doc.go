// Package loadtest measures the assembled service (internal/wiring, as the Lambda runs it) on
// minidyn and the local network in virtual time (internal/vclock), so a run costs seconds of real
// time whatever the ledger interval. Every rig starts internal/devstack's stack with the API
// function alone (startRig; startCongService for the congestion runs' services, side by side on
// one network):
//
//   - loadtest_test.go: concurrent callers through the service's HTTP handler, throughput against
//     the channel limit (channels per ledger interval), latency percentiles, the share of 503
//     CHANNELS_BUSY answers (callers honour their Retry-After and retry the same key) and DynamoDB
//     requests per transfer; every transfer is checked paid exactly once from the network's
//     applied payments (BenchmarkChannels, BenchmarkOverload: `make bench`);
//   - latency_test.go: one caller at a time, the service beside a direct submitter (the official
//     Go client, polling getTransaction every 25 ms) on the realistic network, with each Stellar
//     RPC and DynamoDB request's round trip on the virtual clock: latency percentiles of both,
//     their ratios and look-ups per transfer (`make bench-latency`, README "Latency");
//   - async_test.go: a burst of 10 and 100 transfers per channel posted at one instant, through
//     the sync path and through Prefer: respond-async with SubmitterFunction's SQS event source
//     modelled as template.yaml configures it (BatchSize, MaxConcurrency, visibility timeout),
//     with round trips in virtual time: throughput against the channel bound, the time to the
//     last settlement and Lambda's billed milliseconds per transfer, side by side
//     (BenchmarkAsync: `make bench-async`, README "Benchmarks"; TestAsyncBurst at 4 channels);
//   - asyncrate_test.go: async transfers arriving at a steady rate (Poisson, 0.1, 1 and 10 a
//     second) with Lambda's SQS batching modelled (BatchSize, the batching window, the 6 MB
//     payload; poller.gather, pinned by TestEventSourceBatching) under a sweep of batching
//     windows, beside the same arrivals sent synchronously: batch sizes, billed ms per invocation
//     and per transfer, end-to-end percentiles over every transfer with the unfinished ones
//     reported (BenchmarkAsyncRate: `make bench-async-rate`, README "Benchmarks"; TestAsyncSteady
//     at 4 channels);
//   - batch_test.go: a payout of many async transfers posted at one instant, paid with 1 to 100
//     transfers per fee-bumped transaction (the submitter's batches, through queue.BatchSubmitter
//     with the event source sized for the batch as template.yaml sizes it) on a network with room
//     for every channel's transaction, and once on a scaled-down classic lane beside others'
//     payments: transfers per ledger against the unbatched channel bound, fee per payment,
//     billed ms and DynamoDB write units per transfer (writeunits_test.go sizes every item
//     written), the last settlement, every transfer paid exactly once counted from the network's
//     payments and every wallet's balance (BenchmarkBatch: `make bench-batch`;
//     TestBatchPayoutSmall at 40 transfers);
//   - congestion_test.go: the local network with its classic lane scaled down, background traffic
//     that keeps it surge priced and a fee spike; the service on RPC and on Horizon beside a
//     submitter bidding fee stats p90 (re-sending after a refusal, as OpenZeppelin's relayer does)
//     and one bidding a static 100 stroops (the Stellar Disbursement Platform's default), on the
//     same arrivals and ledgers: share landed within a budget, latency percentiles, in doubt per
//     1,000 calls, fee charged against the ledger's clearing fee, and every payment counted on
//     the network (TestBenchCongestion: `make bench-congestion`; TestCongestionSmall at 6 arrivals);
//   - congestion_contract_test.go: the same in vault-contract mode, the Soroban lane congested
//     by the network's own contract calls: the service (RPC, channels fee-bumped) beside direct
//     submitters of vault deposits bidding sorobanInclusionFee p90 and a static 100 stroops, the
//     inclusion fee charged against the Soroban clearing fee (TestBenchCongestion's last table;
//     TestContractCongestionSmall at 6 arrivals).
//
// # What README.md's tables rest on
//
// The counts of the Go benchmarks (internal/wiring's BenchmarkFreshTransfer and BenchmarkReplay):
// a replay is one conditional write; on DynamoDB the failed write returns the stored item
// (ALL_OLD), minidyn does not, so there the store reads it back: the second request.
//
// BenchmarkChannelsLambda (lambda_test.go): each caller one environment with its own wiring.Build,
// pool and cadence, Stellar RPC, 5 s ledgers, 6 ms per DynamoDB and 15 ms per Stellar request
// ±50%. Its DynamoDB goal follows from the costs: a served transfer costs 6 requests, each 503 two
// more, and with 4 callers per channel one call in two is a 503.
//
// The latency benchmark pairs each transfer of the service (wiring.Build, Stellar RPC, minidyn)
// with a direct payment from the same phase of a ledger, 15 ms per Stellar and 6 ms per DynamoDB
// request in virtual time, each ledger shown 1 to 3 s after it closes; the ledger clock
// uniform:0.2 draws gaps within ±20%, pubnet replays pubnet's recorded close times.
//
// BenchmarkAsync posts its burst once without Prefer (every caller in one process, honouring
// Retry-After) and once with Prefer: respond-async (each SubmitterFunction invocation a process
// of its own), on 5 s ledgers with 15 ms per Stellar, 6 ms per DynamoDB and 10 ms per SQS request.
// Throughput is against one transfer per channel per ledger; billed ms sum every invocation's
// duration, rounded up to the ms, per transfer. SubmitterFunction waits three ledger intervals
// for a channel (wiring.SubmitterChannelWaitLedgers) where the API waits one; with one, its busy
// answers requeued transfers into other environments, which booked again further ahead while the
// slots booked for them lapsed (0.04 to 0.32 of the bound, up to 133 dead-lettered). An
// invocation's runs book their BatchSize tickets together and the invocation lasts until the last
// of them settles, so async holds the bound only when a batch lands in one ledger. The channel
// calendar books from the start of the ledger a call falls in and leases a ledger's tickets at
// that ledger's release point (internal/stellar/sources/channelsched.go): an invocation that
// starts once its previous batch settled, about half a ledger in, lands its whole batch at the
// next close and lasts one ledger. Booked from now, with every slot moved to the release point at
// or after it, a batch spans BatchSize spacings, its later slots fall in the next ledger, and the
// invocation lasts two: 0.56 to 0.71 of the bound. With the submitters' pools unscheduled
// (BENCH_UNSCHEDULED=1) every row is at 1.00 of the bound too, but a trickle of synchronous calls
// beside the burst then waits minutes for channels the submitters take (BenchmarkMixed), so the
// submitters book on the calendar. At 4 channels (BatchSize 2) an invocation still lasts about a
// ledger for 2 transfers, so async costs about half of sync's billed ms there, not a fifth.
//
// BenchmarkBatch's submitter event source is template.yaml's batched one (batch_test.go:
// batchSetting): an invocation receives k x TransfersPerTransaction messages, k the unbatched
// BatchSize of the channel count, and pays up to k transactions (SUBMITTER_TRANSACTIONS_PER_INVOCATION),
// the unbatched MaxConcurrency invocations at once. Its containers' RunQueuedBatch goroutines (the
// k batches, each message alone, each batch's per-key takes and settlements) are participants of
// the virtual clock (Orchestrator.Parallel: vclock.Parallel), so an invocation's batches wait for
// their ledger together, as in Lambda; the channel pool's releases get a minute of real time
// (wiring.Deps.ChannelReleaseTimeout), since among hundreds of participants a round trip of virtual
// time can take longer than the 2 s default in real time, and a release never written would leave
// its channel leased. A submitter reads its event's items with one BatchGetItem per 100.
// BENCH_BATCH_SERIAL=1 runs the orchestrators Serial instead, their per-key writes' round trips
// deferred and slept as the longest key's chain, as concurrent requests would take (batch_test.go:
// perKeyPhase): cheaper in real time, and refused where k is above 1, whose batches it would pay
// one after another.
//
// BenchmarkAsyncRate uses Stellar RPC and the burst's round trips; its Poisson arrivals are
// seeded, so every row of a rate sees the same; SubmitterFunction's batches are formed as
// Lambda's SQS poller forms them (Lambda developer guide, "Batching behavior"); the sync side runs
// in one process.
//
// The congestion benchmark's background is 66 payments per ledger bidding 100 to 1,000 stroops;
// the service runs on RPC and on Horizon with 16 channels. With others' contract calls on top
// (congestion_soroban_traffic_test.go, 22 vault deposits per ledger) Horizon's /fee_stats p90 is
// a resource fee.
package loadtest

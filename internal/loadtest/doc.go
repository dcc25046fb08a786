// Package loadtest measures the assembled service (internal/wiring, as the Lambda runs it) on
// minidyn and the local network in virtual time (internal/vclock), so a run costs seconds of real
// time whatever the ledger interval:
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
package loadtest

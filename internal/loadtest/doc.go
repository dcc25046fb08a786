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
//     (BenchmarkAsync: `make bench-async`, README "Benchmarks"; TestAsyncBurst at 4 channels).
package loadtest

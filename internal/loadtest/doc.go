// Package loadtest measures the assembled service (internal/wiring, as the Lambda runs it) on
// minidyn and the local network in virtual time (internal/vclock), so a run costs seconds of real
// time whatever the ledger interval:
//
//   - loadtest_test.go: concurrent callers, throughput against the channel limit (channels per
//     ledger interval), latency percentiles and DynamoDB requests per transfer (`make bench`);
//   - latency_test.go: one caller at a time, the service beside a direct submitter (the official
//     Go client, polling getTransaction every 25 ms) on the realistic network, with each Stellar
//     RPC and DynamoDB request's round trip on the virtual clock: latency percentiles of both,
//     their ratios and look-ups per transfer (`make bench-latency`, README "Benchmarks").
package loadtest

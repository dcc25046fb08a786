// Package loadtest measures the assembled service (internal/wiring, as the Lambda runs it, called
// through its HTTP handler) under concurrent callers: throughput against the channel limit
// (channels per ledger interval), latency percentiles, the share of 503 CHANNELS_BUSY answers
// (callers honour their Retry-After and retry the same key) and DynamoDB requests per transfer, on
// minidyn and the local network in virtual time (internal/vclock), so a run costs seconds of real
// time whatever the ledger interval. It checks every transfer was paid exactly once from the
// network's applied payments. Its benchmarks (BenchmarkChannels, BenchmarkOverload) and tests are
// in loadtest_test.go; `make bench` runs them.
package loadtest

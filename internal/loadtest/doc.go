// Package loadtest measures the assembled service (internal/wiring, as the Lambda runs it) under
// concurrent callers: throughput against the channel limit (channels per ledger interval),
// latency percentiles and DynamoDB requests per transfer, on minidyn and the local network in
// virtual time (internal/vclock), so a run costs seconds of real time whatever the ledger
// interval. Its benchmarks and tests are in loadtest_test.go; `make bench` runs them.
package loadtest

// Package devstack is the whole service assembled on one machine: the API function behind an
// HTTP server, the alert, reconcile, reader and submitter functions behind a local Lambda Invoke
// API, an embedded DynamoDB-compatible server (minidyn) with the table's stream, a local Stellar
// network (internal/stellarsim) with a funded vault, an asset and demo wallets, and, on demand, a
// KMS emulator and an OTLP receiver. Every function is assembled by internal/wiring, as in AWS,
// so what runs here is what is deployed.
//
// Start(ctx, Options) returns a running *Stack; Stack.Info says where everything listens and
// which accounts it made; Stack.Close stops it. Empty addresses in Options are free ports on
// 127.0.0.1, so tests start as many stacks as they need side by side. `make run` is the thin
// command in cmd/devstack, which reads its addresses and settings from the environment.
//
// It is never deployed, and it differs from AWS where a machine cannot follow it: one process
// runs every function, the stream and the SQS event source are in-memory loops, and the
// Stellar network is the local model (internal/stellarsim's doc.go lists what it does not model).
package devstack

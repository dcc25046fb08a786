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
// Tests and benchmarks of the whole service start it too. Options.Clock runs the service and the
// network on one virtual clock (internal/vclock), Options.WrapDynamo wraps the DynamoDB client the
// functions send through (counting, recording), Options.APIOnly leaves out the operating side (the
// stream, alert, reconcile and submitter functions, the sweep and the Invoke API), and Stack.Config
// and Stack.Keys let a test assemble another function, or the API function anew, over the same
// stack: internal/wiring's benchmark rig and doors' fuzz rig and this package's signer benchmark
// do so. These still assemble their stacks by hand, and each would need, to start this one:
//
//   - internal/lambdatest (the functions under aws-lambda-rie, separate processes): a wrapper of
//     the embedded DynamoDB's and the network's HTTP handlers (it logs every request a function
//     sends) and the signing secret's document for its fake Secrets Manager; this package never
//     hands out seeds, so that would be a test-only accessor.
//   - internal/loadtest: a wrapper of the service's Stellar HTTP transport (round trips of virtual
//     time, request counts), network options (ExpectedCloseInterval, lanes, congestion, fee
//     settings), a vault contract deployed with its own spec, and more than one service (an
//     execution environment per caller, each its own wiring.Build over one table and network:
//     Stack.Config and Stack.Keys give the parts). The backend it has: STELLAR_BACKEND=horizon in
//     Options.Getenv runs the service on the stack's Horizon.
//   - internal/chaos: all of loadtest's, plus stellarsim's ordering options (ApplyOrderSeed,
//     ApplyInSubmissionOrder), minidyn reached in-process without a socket (its handlerTransport)
//     and the fault injectors around the DynamoDB and Stellar clients.
//   - internal/stellar's own rigs test the ledger, not the service: they start the network alone
//     and need none of this.
//
// It is never deployed, and it differs from AWS where a machine cannot follow it: one process
// runs every function, the stream and the SQS event source are in-memory loops, and the
// Stellar network is the local model (internal/stellarsim's doc.go lists what it does not model).
package devstack

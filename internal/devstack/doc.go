// Package devstack is the whole service assembled on one machine: the API function behind an
// HTTP server, the alert, reconcile, reader and submitter functions behind a local Lambda Invoke
// API, an embedded DynamoDB-compatible server (minidyn) with the table's stream, a local Stellar
// network (internal/stellarsim) with a funded vault, an asset and demo wallets, and, on demand, a
// KMS emulator and an OTLP receiver. Every function is assembled by internal/wiring, as in AWS,
// so what runs here is what is deployed.
//
// Start(ctx, Options) returns a running *Stack; Stack.Info says where everything listens and
// which accounts it made; Stack.Close stops it and frees its ports, once (a second Close, a
// test's cleanup after its own, does nothing; a failed Start has closed what it opened). Empty
// addresses in Options are free ports on 127.0.0.1, so tests start as many stacks as they need
// side by side. `make run` is the thin command in cmd/devstack, which reads its addresses and
// settings from the environment and prints Info as its banner.
//
// Every test and benchmark of the whole service starts it too, so one library assembles them all:
// internal/loadtest's rigs, the fault campaign (internal/chaos), the bootstraps under the Lambda
// emulator (internal/lambdatest), internal/wiring's benchmark and the doors' fuzz rig, and this
// package's signer benchmark. The options they need:
//
//   - the clock: Options.Clock runs the service and the network on one virtual clock
//     (internal/vclock); CloseLedgers replaces the close rule (a schedule of its own, work after
//     every close), Network adjusts the network's options (ExpectedCloseInterval, lanes and surge
//     pricing, apply order);
//   - the service: Getenv's settings (STELLAR_BACKEND=horizon runs it on the stack's Horizon,
//     CHANNEL_COUNT, VAULT_CONTRACT=local, MAX_FEE_STROOPS), Keys (a test's own seeds: channel
//     accounts the same in every run, the vault's key for an operator), VaultUSDC and FeeXLM (the
//     opening balances), APIOnly (the API function alone: no stream, alert, reconcile or
//     submitter function, no sweep, no Invoke API) and Queue (its async transfers);
//   - the clients and servers: WrapDynamo wraps the DynamoDB client (counting, round trips in
//     virtual time, injected faults), DynamoOptions adjusts it, InProcessDynamo reaches the
//     embedded DynamoDB without a socket; WrapStellar wraps the service's Stellar transport (round
//     trips, request counts); WrapHandler wraps the embedded DynamoDB's and the network's handlers
//     (logging what separate processes send);
//   - more than one service: Stack.Deps builds another process of the same deployment over the
//     same table and network (an execution environment per caller, SubmitterFunction's
//     containers), and Options.Beside starts a second service with its own accounts and table on
//     a stack's network (services compared under the same congestion). Stack.Minidyn (failure
//     emulation) and Stack.Vaults (the contract host) reach the emulators.
//
// internal/stellar's own rigs test the ledger, not the service: they start the network alone.
//
// It is never deployed, and it differs from AWS where a machine cannot follow it: one process
// runs every function, the stream and the SQS event source are in-memory loops, and the
// Stellar network is the local model (internal/stellarsim's doc.go lists what it does not model).
package devstack

// Package repotest holds the repository to its own rules, in tests that read its files:
//
//   - it explains itself: no file cites a document that a clone of the repository does not hold
//     (design notes, numbered source documents or seeds kept outside it; the design lives in
//     README.md and the packages' doc.go files, "The house" below);
//   - no tracked file is over 1 MiB (build outputs never enter git);
//   - the house: internal/transfer, the domain, imports no AWS, Stellar or other internal package,
//     and the adapters internal/dynamo and internal/stellar never import each other; inside
//     internal/stellar the imports point one way, the ledger to the transaction sources
//     (internal/stellar/sources) to the signing keys (internal/stellar/signing), never back up
//     (repotest_test.go, houseImportRules);
//   - each file one idea: no Go file is longer than MaxGoFileLines (length_test.go);
//   - internal/transfer/transfertest, the domain's importable test helpers, imports only
//     internal/transfer and the standard library (transfertest_test.go);
//   - comments say why, never history: no text file but fixtures (testdata), vendored code and
//     lock files refers to an issue by number ("issue N", "issues #N"), unless the word just
//     before it names another project's owner/repo, a cited source (issues_test.go).
//   - README.md's links to its own sections land: every [text](#anchor) names a heading (by
//     GitHub's slug) or an <a id> (readme_test.go).
//
// The files checked are those git tracks plus the untracked ones it does not ignore (so a file is
// caught before its commit); without git, every file under the root but .git, .ci/venv,
// .ci/bin, .ci/work, .aws-sam, .build and node_modules.
//
// The package has no non-test code.
//
// # The house
//
// The packages:
//
//	functions/api        ApiFunction: API Gateway HTTP API (payload 2.0) -> internal/api (wiring only)
//	functions/alert      AlertFunction: the table's stream -> internal/alert
//	functions/reconcile  ReconcileFunction: operator actions and the sweep -> internal/reconcile;
//	                     InDoubtReaderFunction: the same binary, list and get only (RECONCILE_ACTIONS=read)
//	functions/submitter  SubmitterFunction: TransferQueue's SQS events -> internal/queue -> the orchestrator
//	functions/webhook    WebhookFunction: the webhook queue's settlement events -> internal/webhook -> the receiver
//	internal/transfer    the domain: requests, keys, typed errors, proof rules, the orchestrator, Settle
//	  transfer/transfertest  the domain's importable test helpers
//	internal/dynamo      transfer.Store and the channel leases on DynamoDB (conditional writes, the sparse index)
//	internal/stellar     transfer.Ledger on Stellar RPC and Horizon: fees, fee bumps, the vault contract
//	  stellar/sources    the transaction sources: the vault's slot, the channel pool and its calendar
//	  sources/sourcestest  their importable test helpers: a lease store in memory, test keys
//	  stellar/signing    the signing keys: the secret, KMS, the signers
//	internal/stellarsim  a local Stellar network: RPC, Horizon, friendbot, a vault contract, faults
//	internal/api         net/http handler (problem+json), the API Gateway adapter, openapi.yaml
//	internal/alert       stream records -> alert lines, SNS, the in-doubt gauge, settlement events (EventBridge)
//	internal/queue       asynchronous transfers: transfer.Queue on SQS, the submitter's handler, an in-process queue
//	internal/webhook     settlement events to one HTTPS receiver, signed (Standard Webhooks), rotated, retried
//	internal/reconcile   list, get, resolve, sweep, channels, daily, report
//	internal/metrics     CloudWatch Embedded Metric Format
//	internal/logging     slog JSON with request and trace IDs, seed redaction (Redact, Clip)
//	internal/strictjson  the one strict JSON object decoder of POST /transfers and the reconcile payload
//	internal/tracing     X-Ray or OpenTelemetry (TRACING); otlpreceiver, the local OTLP receiver
//	internal/config      environment configuration
//	internal/wiring      assembles the service for the functions and the local stack
//	internal/devstack    the local stack as a library (Start), its KMS emulator: every full-service test and
//	                     benchmark starts it; cmd/devstack is `make run` (never deployed)
//	internal/chaos       the fault campaign; chaos/model the exhaustive check
//	internal/loadtest    the throughput and latency benchmarks
//	internal/vclock      virtual time for tests and the campaign
//	internal/cfntemplate the template's checks against the code
//	internal/lambdatest  the real bootstraps under the Lambda Runtime Interface Emulator
//	internal/repotest    the repository's own rules: citations, file sizes, issue numbers, the imports below
//
// internal/transfer is the domain: it declares the ports it needs (Store, Ledger, Clock) and
// imports no AWS, Stellar or other package of the module. internal/dynamo and internal/stellar
// are adapters that implement those ports and never import each other; internal/wiring assembles
// them, and each functions/*/main.go is wiring only. Packages are named for what they provide,
// split by concept into files. The design lives in the packages' doc.go (the item, the flow, the
// proof rules and incarnations: internal/transfer/doc.go; the table: internal/dynamo/doc.go,
// "Table layout"; the local network and the stellar-core behaviour it models:
// internal/stellarsim/doc.go; the campaign: internal/chaos/doc.go); comments cite only what a
// clone holds, and public sources: CAPs and SEPs, the AWS and Stellar documentation,
// stellar-core's and stellar-rpc's code.
//
// # Fuzzing the doors
//
// Every door that takes input from outside has a native Go fuzz target; its checked-in corpus
// (testdata/fuzz/<target>/) runs in every go test, `make fuzz` explores each for FUZZTIME, and an
// input it finds is checked in with its fix (CI does not fuzz: random exploration could fail a
// gate on code that did not change). The corpora's seeds are derived from published text (sha256
// of a phrase), never keys of anything. What must hold, whatever the input:
//
//   - FuzzCanonicalize (internal/transfer): the canonical form is a fixed point; equal canonical
//     forms give equal fingerprints, different ones different.
//   - FuzzHandler (internal/wiring): one HTTP request (method, path, key, Content-Type, trace
//     header, body) to the deployed service on the embedded DynamoDB and the local network: never
//     a 5xx or a panic; every 4xx application/problem+json with a code; no part of a seed sent in
//     the answer, the log, a stored item or its alert.
//   - FuzzLambdaAdapter (internal/wiring): the same for a whole API Gateway HTTP API event through
//     the adapter.
//   - FuzzReconcilePayload (internal/reconcile): an answer, a typed refusal or a typed function
//     error; only a payload that reads one way is acted on; no part of a seed echoed or written
//     into the audit.
//   - FuzzStreamRecord (internal/alert): any stream record: no panic, no failed batch, no seed in
//     the SNS message or the log.
//   - FuzzHistoryCursor (internal/dynamo): any history cursor: refused as ErrBadCursor (400
//     CURSOR_INVALID) before any DynamoDB request, or a position in this wallet's partition whose
//     keys fit DynamoDB's sizes and whose cursor, written again, is the input byte for byte.
//   - FuzzIndexCursor (internal/dynamo): the same for the reconcile function's list cursor:
//     refused (BAD_REQUEST) or a position in the in-doubt partition.
package repotest

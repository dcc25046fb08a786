// Package tracing is everything the service traces with: the AWS SDK clients and the Stellar HTTP
// client are instrumented, Observer opens a span for each orchestrator step (claim, prepare, send,
// await, settle), and Lambda wraps a function's handler. TRACING, read once at init (Configure),
// picks the SDK:
//
//   - xray (the default): AWS X-Ray's SDK (github.com/aws/aws-xray-sdk-go/v2). Lambda's active
//     tracing opens the function's segment; the SDK adds subsegments under it and sends them to
//     the X-Ray daemon Lambda runs beside the function (UDP 127.0.0.1:2000).
//   - otel: OpenTelemetry (go.opentelemetry.io/otel and its SDK), exported as OTLP/HTTP to X-Ray's
//     OTLP endpoint, below.
//   - off: neither; every call here is a no-op.
//
// Only one SDK is ever active in a process: under otel no X-Ray segment is made and its emitter
// never dials (the X-Ray package's variable initialisation still runs at start, as for any linked
// package: it parses its default sampling rules and, in Lambda, touches /tmp/.aws-xray/initialized);
// under xray the OpenTelemetry provider is never built and the global one stays the no-op.
// Where there is no trace (tests, the local stack without TRACING=otel, a call outside an
// invocation) nothing is recorded, logged or failed.
//
// Both SDKs are linked into every bootstrap so that switching is a configuration change, not a
// build; README.md ("Tracing: X-Ray or OpenTelemetry") gives what that costs in bootstrap size and
// init time, per function.
//
// AWS puts the X-Ray SDKs in maintenance from 2026-02-25 and ends their support on 2027-02-25
// (AWS X-Ray Developer Guide, "X-Ray SDK and daemon end of support timeline"), recommending
// OpenTelemetry. The X-Ray SDK stays the default until then: it is what a deployed stack already
// traces with (its service map, its sampling rules, the daemon Lambda runs), so switching is the
// operator's choice, one variable away; otel is the way off before support ends.
//
// # The OpenTelemetry path
//
// Joining AWS's traces. Lambda hands each invocation the X-Ray trace header of the caller (API
// Gateway, SQS's AWSTraceHeader, EventBridge) or one it started, with Parent the function's own
// segment and Sampled its sampling decision (aws-lambda-go puts it in the context under
// "x-amzn-trace-id", and in _X_AMZN_TRACE_ID while one invocation runs at a time). The handler
// wrapper (Lambda, StartInvocation) reads it from the context with the X-Ray propagator (go.opentelemetry.io/contrib/propagators/aws/xray) and
// starts the invocation's span, kind SERVER and named for the function (AWS_LAMBDA_FUNCTION_NAME),
// as the remote parent's child; the steps, the AWS calls (otelaws) and the Stellar requests
// (otelhttp) are its children. The sampler is ParentBased(NeverSample): Lambda's decision is
// followed and nothing outside an invocation is recorded (the init's Secrets Manager and KMS calls,
// as under the X-Ray SDK, where no segment exists then). Trace and span IDs come from the X-Ray ID
// generator (the trace ID's first 32 bits are the epoch seconds), so a trace started here is a
// valid X-Ray trace too. Outgoing AWS and Stellar requests carry X-Amzn-Trace-Id, as the X-Ray SDK
// sends it, so SQS passes the trace on to the submitter.
//
// Flushing. Lambda freezes the process once the invocation's answer is sent, so spans waiting in
// the batch processor would leave only at the next invocation, or never. The handler wrapper ends
// the invocation's span and force-flushes the provider before it returns the answer: one OTLP request
// per sampled invocation, bounded by ExportTimeout, without retries (a lost batch of spans costs
// less than an answer held back). An export that fails is logged (WARN "traces not exported") and
// fails nothing.
//
// Export: OTLP/HTTP to X-Ray's OTLP endpoint, signed with SigV4. The two ways without a collector
// layer are (a) UDP to the X-Ray daemon Lambda runs, in X-Ray's segment format, and (b) OTLP/HTTP
// to https://xray.<region>.amazonaws.com/v1/traces signed with SigV4 (service "xray"). This
// package does (b):
//
//   - every piece but the signing is a maintained library: the OTLP/HTTP exporter (otlptracehttp)
//     and the SDK's SigV4 signer (aws-sdk-go-v2's aws/signer/v4); the signing RoundTripper
//     (sigv4.go) is the only code of our own. (a) needs a translator from OpenTelemetry spans to
//     segment documents, as the collector's awsxrayexporter has (subsegment nesting, namespace
//     "aws" or "remote", the aws and http blocks, annotations versus metadata, the 64 KB datagram
//     limit). AWS's own Go exporter for it, aws-otel-go's xrayudp (which sends OTLP
//     inside the daemon's datagrams, as ADOT's Lambda layers do), is not served by the module
//     proxy here;
//   - OTLP is where AWS is taking X-Ray: the ADOT documentation retires the collector's X-Ray
//     exporter in favour of this endpoint, which keeps the spans' attributes and semantic
//     conventions; the daemon has the SDKs' end-of-support date;
//   - the costs: the endpoint needs CloudWatch Transaction Search enabled once per account and
//     region (spans land in the aws/spans log group, billed as CloudWatch Logs; README.md says how),
//     the role needs xray:PutSpans (template.yaml grants it with Tracing=otel), and each sampled
//     invocation waits for one HTTPS request to X-Ray before it answers (the daemon's UDP send
//     costs microseconds).
//
// What (a) would need instead: the span-to-segment translator above (or a served build of the
// xrayudp exporter), AWS_XRAY_DAEMON_ADDRESS for the daemon's address, and xray:PutTraceSegments
// (the role has it already), without Transaction Search; the flush would be a UDP write.
//
// The exporter's endpoint is https://xray.$AWS_REGION.amazonaws.com/v1/traces, or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT when set (the tests' receiver, the local stack's); the
// request is signed for AWS_REGION with the execution role's credentials, which Lambda puts in
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (Configure fails without them).
//
// Upstream status. The X-Ray propagator and ID generator (go.opentelemetry.io/contrib/propagators/aws
// v1.47.0) and otelaws (v0.72.0) are marked deprecated in that release for want of an owner
// (opentelemetry-go-contrib #9706, #9707); they work and are the latest, and are small enough to
// carry in the module if they go. otellambda's last release is v0.70.0; Lambda here is our own
// wrapper instead, because it reads the trace header from the invocation's context (otellambda reads
// _X_AMZN_TRACE_ID, which aws-lambda-go leaves unset when invocations run concurrently), logs
// through the service's logger, and records the handler's error on the span.
//
// The local stack (internal/devstack) with TRACING=otel plays Lambda's part: it gives each
// invocation a sampled X-Ray trace header and receives the spans on its own OTLP receiver
// (internal/tracing/otlpreceiver), which lists them.
package tracing

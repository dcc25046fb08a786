# Stellar Transfer Orchestrator. `make` alone lists the targets (each public target's `## ` text);
# `make run` starts the local stack; `make test-short` is the quick loop, `make test` every test;
# `make check` is what CI runs. SAM's makefile builder calls the build-<LogicalId> targets.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Where `make build` puts the bootstraps; SAM sets ARTIFACTS_DIR itself for build-<LogicalId>.
BUILD_DIR ?= .build
LAMBDA_GOFLAGS := -trimpath -tags lambda.norpc -ldflags='-s -w -buildid='
# The binaries under functions/<dir>; the template's six functions run them (build-<LogicalId>
# below: InDoubtReaderFunction runs reconcile's).
FUNCTIONS := api alert reconcile submitter webhook

# Python tools (cfn-lint, SAM CLI, schemathesis), pinned in .ci/requirements.txt.
VENV := .ci/venv
TOOLS := $(VENV)/.installed
SAM := env SAM_CLI_TELEMETRY=0 AWS_REGION=us-east-1 $(VENV)/bin/sam
# The Lambda Runtime Interface Emulator, built from source (go install) at a pinned version.
RIE_MODULE := github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE := .ci/bin/rie-$(RIE_VERSION)/aws-lambda-rie
# schemathesis examples per operation: enough to reach every branch of the contract, a minute or two.
CONTRACT_MAX_EXAMPLES ?= 300

.PHONY: help build run test test-short fuzz chaos scan-secrets check lint bench bench-latency bench-async bench-async-rate bench-congestion clean tools test-dynalite check-template \
	sam-build test-lambda test-contract test-clients test-openapi-clients build-api build-alert build-reconcile build-submitter build-webhook \
	build-ApiFunction build-AlertFunction build-ReconcileFunction build-InDoubtReaderFunction build-SubmitterFunction build-WebhookFunction

.DEFAULT_GOAL := help

# Every target whose rule line carries `## text`, in the order of this file.
help: ## this list
	@echo "Stellar Transfer Orchestrator: make <target> (README.md, \"Commands\"; times on 2 shared cores)"
	@echo
	@awk -F ':.*## ' '/^[a-z][a-z-]*:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(firstword $(MAKEFILE_LIST))
	@echo
	@echo "Variables: FUZZTIME (make fuzz, 60s), CHAOS_KEYS and CHAOS_SEED (make chaos; CHAOS_BATCH=10 and CHAOS_WAVE=30 hold the async run to one BATCH_SIZE and a wave size), SCAN_SECRETS_RUN=1 (make scan-secrets runs the tests again), BENCH_ASYNC_MAX (make bench-async, 1600), BENCH_ASYNC_WINDOWS (make bench-async-rate, 0,1,2,5,10), BENCH_UNSCHEDULED=1 (both: submitters without the channel calendar)"

# One linux/arm64 `bootstrap` per function (provided.al2023).
define lambda_build
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_GOFLAGS) -o $(2)/bootstrap ./functions/$(1)
endef

build: $(addprefix build-,$(FUNCTIONS)) ## each function's linux/arm64 bootstrap in .build/<function>/ (292 s on an empty build cache, 11 s warm)

$(addprefix build-,$(FUNCTIONS)): build-%:
	$(call lambda_build,$*,$(BUILD_DIR)/$*)
	@ls -l $(BUILD_DIR)/$*/bootstrap

build-ApiFunction:
	$(call lambda_build,api,$(ARTIFACTS_DIR))

build-AlertFunction:
	$(call lambda_build,alert,$(ARTIFACTS_DIR))

build-ReconcileFunction:
	$(call lambda_build,reconcile,$(ARTIFACTS_DIR))

build-SubmitterFunction:
	$(call lambda_build,submitter,$(ARTIFACTS_DIR))

build-WebhookFunction:
	$(call lambda_build,webhook,$(ARTIFACTS_DIR))

# The read-only operators' function is the reconcile binary; the template sets RECONCILE_ACTIONS=read.
build-InDoubtReaderFunction:
	$(call lambda_build,reconcile,$(ARTIFACTS_DIR))

# Built, then exec'd rather than `go run`: go run exits 1 on Ctrl-C even when the stack stops cleanly.
run: ## the local stack until Ctrl-C, new and empty each start: API :3000, Lambda :3001, DynamoDB :8000, Stellar :8010 (KMS :8020, traces :4318); PORT_BASE=N moves all six to N..N+5 (first start 179 to 391 s on an empty build cache, 20 to 48 s beside a built checkout, later 7 to 11 s)
	$(GO) build -o .ci/bin/devstack ./internal/devstack/cmd/devstack
	exec .ci/bin/devstack

# Every test once with the race detector (the fuzz targets' checked-in corpora included), verbose
# into .ci/work/test-output.txt (scan-secrets scans it), a line per package here (.ci/go-test.sh).
# No new fuzzing: a gate must give the same answer on the same code, and a fuzzer's few seconds
# do not (they explore at random). `make fuzz` explores; what it finds is checked in as corpus,
# which every run of make test then replays.
test: ## every test with -race, the fuzz corpora included (514 s in a fresh clone's .ci/run at a load of 4 to 9 on 2 cores; output in .ci/work/test-output.txt)
	.ci/go-test.sh

# The quick loop: every test with -short, which skips the fault campaign and shrinks the longest
# tests (the model checker without preemptions, the 16-channel load test at 4 channels); the
# devstack's tests wait on real ledgers, not the CPU, hence -parallel 8. No benchmarks, no fuzzing.
# Packages whose code and tests did not change answer from the test cache (add -count=1 to rerun).
test-short: ## every test but the fault campaign and the benchmarks, with -race (227 to 246 s with the build cached, every package run again; 3 s when nothing changed; ~11 min on an empty build cache)
	$(GO) test -short -race -parallel 8 ./...

# The fuzz targets at the doors, as package:target. `go test -fuzz` takes one target per
# run, so they run one after another, FUZZTIME each (60s).
# A failing input is written to the package's testdata/fuzz/<target>/: check it in with the fix.
# New inputs are minimised by count (100 runs), not time: a 10s budget stalled both workers on
# each new input of the slower targets (a fresh table per reconcile input).
FUZZ_TARGETS := ./internal/transfer:FuzzCanonicalize ./internal/wiring:FuzzHandler \
	./internal/wiring:FuzzLambdaAdapter ./internal/reconcile:FuzzReconcilePayload ./internal/alert:FuzzStreamRecord \
	./internal/dynamo:FuzzHistoryCursor ./internal/dynamo:FuzzIndexCursor ./internal/stellar:FuzzFailedCodesOf
FUZZTIME ?= 60s
fuzz: ## each fuzz target at the doors for FUZZTIME (60s), one after another
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		$(GO) test -count=1 -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x $$pkg; \
	done

# The DynamoDB store's contract suite again, against dynalite (validates requests as DynamoDB does),
# and the channel calendar's tests that run on the table's stores.
test-dynalite: ## the DynamoDB store's contract suite against dynalite
	.ci/with-dynalite.sh $(GO) test -race -count=1 -run 'Dynalite' ./internal/dynamo/... ./internal/stellar/sources/...

lint: ## gofmt, go vet, staticcheck (3 to 6 s when nothing changed, 76 s after a change to one package that many import)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.ci/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# The Python virtual environment and the RIE; .ci/run calls this on a fresh clone.
tools: $(TOOLS) $(RIE) ## the pinned Python tools in .ci/venv and the Lambda Runtime Interface Emulator

$(TOOLS): .ci/requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check --no-input -q -r .ci/requirements.txt
	touch $@

$(RIE):
	GOBIN=$(abspath $(dir $(RIE))) $(GO) install $(RIE_MODULE)@$(RIE_VERSION)

# The template: AWS's linter and SAM's own transform and linter (no AWS account needed).
check-template: $(TOOLS) ## cfn-lint, sam validate --lint, samconfig.toml's parameters
	$(VENV)/bin/cfn-lint template.yaml
	$(SAM) validate --lint --template-file template.yaml
	$(VENV)/bin/python .ci/check-samconfig.py

# `sam build` (no container) of the template's six functions, each checked to be a linux/arm64 bootstrap.
sam-build: $(TOOLS) ## sam build of every function, each checked to be a linux/arm64 bootstrap
	SAM="$(SAM)" .ci/sam-build.sh

# Each function's real bootstrap under the Lambda RIE, with real event shapes (internal/lambdatest).
test-lambda: $(RIE) ## each function's real bootstrap under the Lambda Runtime Interface Emulator
	AWS_LAMBDA_RIE=$(abspath $(RIE)) $(GO) test -race -count=1 -v -run 'RIE' ./internal/lambdatest/

# The API's OpenAPI document exercised by schemathesis against a local stack started for it.
test-contract: $(TOOLS) ## schemathesis against internal/api/openapi.yaml on a local stack
	CONTRACT_MAX_EXAMPLES=$(CONTRACT_MAX_EXAMPLES) .ci/contract.sh

# The official JavaScript (@stellar/stellar-sdk, .ci/clients/package-lock.json) and Python
# (stellar-sdk, .ci/requirements.txt) SDKs against the local network, as `make run` serves it.
CLIENTS_NODE_MODULES := .ci/clients/node_modules/.package-lock.json
$(CLIENTS_NODE_MODULES): .ci/clients/package-lock.json
	npm ci --prefix .ci/clients --no-audit --no-fund

test-clients: $(TOOLS) $(CLIENTS_NODE_MODULES) ## the official JavaScript and Python Stellar SDKs against the local network
	.ci/clients/run.sh

# internal/api/openapi.yaml held to the tools client developers use (.ci/openapi/run.sh): Redocly's
# linter, then clients generated by oapi-codegen (go tool, .ci/openapi/go.mod), openapi-typescript
# with openapi-fetch (.ci/openapi/package-lock.json) and openapi-python-client
# (.ci/openapi/requirements.txt), each compiled or type-checked and driven against a local stack.
OPENAPI_NODE_MODULES := .ci/openapi/node_modules/.package-lock.json
OPENAPI_VENV := .ci/openapi/venv/.installed
$(OPENAPI_NODE_MODULES): .ci/openapi/package-lock.json
	npm ci --prefix .ci/openapi --no-audit --no-fund

$(OPENAPI_VENV): .ci/openapi/requirements.txt
	python3 -m venv .ci/openapi/venv
	.ci/openapi/venv/bin/pip install --disable-pip-version-check --no-input -q -r .ci/openapi/requirements.txt
	touch $@

test-openapi-clients: $(OPENAPI_NODE_MODULES) $(OPENAPI_VENV) ## openapi.yaml linted, and clients generated from it (Go, TypeScript, Python) driven against a local stack
	.ci/openapi/run.sh

# Each test runs once: scan-secrets scans the output of test's run (in this order: no -j).
check: lint test scan-secrets test-dynalite check-template sam-build test-lambda test-contract test-clients test-openapi-clients ## what CI runs (.ci/run): all of the checks (.ci/run on a fresh clone, installs from the lock files included: 14 min 36 s; warm: not timed whole)

# The output of make test's run (or of a run of its own when there is none, it is older than a Go
# file, or SCAN_SECRETS_RUN=1) scanned for anything shaped like a secret seed.
scan-secrets: ## fail if make test's output holds anything shaped like a secret seed
	.ci/scan-secrets.sh

bench: ## the Go benchmarks (README.md, "Benchmarks")
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The latency benchmark side by side: the service and a direct submitter interleaved on the local
# network at 5 s and 1 s ledgers, 0 and 4 channel accounts, under three ledger clocks (a fixed beat,
# each gap within +-20%, pubnet's recorded gaps); prints a Markdown table. BENCH_LATENCY_N=<n> sets
# the transfers of each side per row (default 400); BENCH_LATENCY_CLOCKS=fixed,uniform,pubnet picks
# the clocks (all three by default).
bench-latency: ## the latency benchmark: the service beside a direct submitter (README.md: figures in "Benchmarks", design in "Latency")
	BENCH_LATENCY=1 $(GO) test -count=1 -v -run '^TestBenchLatency$$' ./internal/loadtest

# The burst benchmark of asynchronous transfers: 10 and 100 transfers per channel posted at one instant, at 4, 16
# and 64 channels, synchronously and with Prefer: respond-async through SubmitterFunction's event
# source as template.yaml configures it; prints a Markdown table. BENCH_ASYNC_MAX=<n> skips the
# bursts of more than n transfers: 1600 by default (13.5 min on 2 cores at a load average of 6 to 17); 6400 adds 64 channels at 100x
# (about 9 min more, the synchronous side's 85,000 calls per backend). BENCH_UNSCHEDULED=1 runs the
# submitters' channel pools without the channel calendar (here and in bench-async-rate).
bench-async: ## the async burst benchmark: throughput, last settlement, Lambda billed ms, sync against async (README.md, "Benchmarks")
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkAsync$$' -benchtime 1x -timeout 30m ./internal/loadtest

# The steady-rate benchmark of asynchronous transfers: transfers arriving at 0.1, 1 and 10 a second
# (Poisson, seeded) on 16 and 64 channels, through SubmitterFunction's event source with Lambda's
# SQS batching modelled (BatchSize, the batching window, the 6 MB payload), under each batching
# window of BENCH_ASYNC_WINDOWS (seconds, comma-separated; 0,1,2,5,10 and the template's by
# default), beside the same transfers without Prefer; prints a Markdown table.
bench-async-rate: ## the async steady-rate benchmark: batch sizes, billed ms and end-to-end percentiles per batching window (README.md, "Benchmarks")
	$(GO) test -count=1 -run '^$$' -bench '^BenchmarkAsyncRate$$' -benchtime 1x -timeout 60m ./internal/loadtest

# The congestion benchmark: on a local network with 60 classic operations per ledger, background
# traffic that keeps the lane surge priced and a 10x spike for two minutes, the service (RPC and
# Horizon, 16 channels) beside a fee-stats p90 submitter and a static 100-stroop submitter, at
# MAX_FEE_STROOPS 100,000 and 2,000; prints Markdown tables with the goals met or missed.
# BENCH_CONGESTION_N=<n> sets the arrivals per side (default 120: 136 to 172 s for every table on 2 shared cores).
bench-congestion: ## the congestion benchmark: the service beside a fee-stats and a static-fee submitter under surge pricing and a fee spike, payments, payments beside others' contract calls, then vault-contract calls (README.md, "Benchmarks")
	BENCH_CONGESTION=1 $(GO) test -count=1 -v -run '^TestBenchCongestion(SorobanTraffic)?$$' -timeout 30m ./internal/loadtest

# The fault campaign at full size: 10,000 calls in each of its six runs, the congested networks
# among them (make test runs about 5,900 in all), then its async mode at 1,250 keys (make test:
# 100). CHAOS_SEED=<seed> replays a failing seed.
CHAOS_KEYS ?= 1250
chaos: ## the fault campaign at full size (CHAOS_KEYS=1250 a run; CHAOS_SEED=<seed> replays one; over an hour on 2 shared cores at load ~12)
	CHAOS_KEYS=$(CHAOS_KEYS) $(GO) test -count=1 -timeout 120m -v -run '^TestCampaign(Async)?$$' ./internal/chaos

clean: ## remove the build outputs (.build, .aws-sam, .ci/sam, .ci/work) and the test cache
	rm -rf $(BUILD_DIR) .aws-sam .ci/sam .ci/work .ci/openapi/gen
	$(GO) clean -testcache

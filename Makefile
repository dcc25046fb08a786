# Stellar Transfer Orchestrator. `make run` starts the local stack; `make test` runs the tests;
# `make check` is what CI runs. SAM's makefile builder calls the build-<LogicalId> targets.
SHELL := /bin/bash
GO ?= go
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Where `make build` puts the bootstraps; SAM sets ARTIFACTS_DIR itself for build-<LogicalId>.
BUILD_DIR ?= .build
LAMBDA_GOFLAGS := -trimpath -tags lambda.norpc -ldflags='-s -w -buildid='
FUNCTIONS := api

.PHONY: all build run test check lint bench clean test-dynalite $(addprefix build-,$(FUNCTIONS))

all: check

# One linux/arm64 `bootstrap` per function (provided.al2023).
define lambda_build
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_GOFLAGS) -o $(2)/bootstrap ./functions/$(1)
endef

build: $(addprefix build-,$(FUNCTIONS))

build-api:
	$(call lambda_build,api,$(BUILD_DIR)/api)
	@ls -l $(BUILD_DIR)/api/bootstrap

build-ApiFunction:
	$(call lambda_build,api,$(ARTIFACTS_DIR))

run:
	$(GO) run ./internal/devstack

test:
	$(GO) test -race -count=1 ./...

# The DynamoDB store's contract suite again, against dynalite (validates requests as DynamoDB does).
test-dynalite:
	.ci/with-dynalite.sh $(GO) test -race -count=1 -run 'Dynalite' ./internal/dynamo/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.ci/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

check: lint test test-dynalite

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BUILD_DIR)
	$(GO) clean -testcache

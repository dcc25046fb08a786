#!/usr/bin/env bash
# The API's OpenAPI document (internal/api/openapi.yaml) exercised by schemathesis against a local
# stack started for it: the devstack binary on free 127.0.0.1 ports, stopped afterwards whatever
# the outcome. Checks: no 5xx, and every response (status, content type, headers, body) conforms
# to the document; invalid input is refused, other methods answer 405 with Allow. A 503
# VAULT_UNDERFUNDED is state, not a server error (.ci/contract_hooks.py).
# CONTRACT_MAX_EXAMPLES bounds the examples per operation and phase.
set -euo pipefail
cd "$(dirname "$0")/.."
work=.ci/work
mkdir -p "$work"
go build -o "$work/devstack" ./internal/devstack/cmd/devstack
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
api=$(port) ddb=$(port) xlm=$(port) fn=$(port)
log="$work/devstack.log"
API_ADDR=127.0.0.1:$api DYNAMODB_ADDR=127.0.0.1:$ddb STELLAR_ADDR=127.0.0.1:$xlm LAMBDA_ADDR=127.0.0.1:$fn LEDGER_INTERVAL_MS=1000 \
	"$work/devstack" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true' EXIT
# The banner is printed once every listener is up.
for i in $(seq 1 300); do
	if grep -q "local stack" "$log" && (exec 3<>"/dev/tcp/127.0.0.1/$api") 2>/dev/null; then break; fi
	if ! kill -0 "$pid" 2>/dev/null || [ "$i" = 300 ]; then cat "$log" >&2; echo "the local stack did not start" >&2; exit 1; fi
	sleep 0.1
done
echo "local stack: API on http://127.0.0.1:$api" >&2
status=0
# Run from .ci/work, so schemathesis' and Hypothesis' caches stay there (ignored by git).
# One worker: with two, Hypothesis parses its lambdas' sources in both threads at once and
# CPython 3.11.7's ast module fails with "SystemError: AST constructor recursion depth mismatch"
# (python/cpython gh-106905); one worker takes about as long here.
# not_a_state_free_server_error (.ci/contract_hooks.py) is not_a_server_error that lets a 503
# VAULT_UNDERFUNDED through: a withdrawal above what the local vault holds is refused before
# sending, retryable, which is state, not a server error.
(cd "$work" && SCHEMATHESIS_TELEMETRY=false PYTHONPATH=.. SCHEMATHESIS_HOOKS=contract_hooks ../venv/bin/schemathesis run ../../internal/api/openapi.yaml \
	--url "http://127.0.0.1:$api" \
	--checks not_a_state_free_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,missing_required_header,unsupported_method,allow_header_conformance \
	--phases examples,coverage,fuzzing \
	--max-examples "${CONTRACT_MAX_EXAMPLES:-150}" \
	--generation-database none --request-timeout 35 --workers 1 --no-color \
	--continue-on-failure --seed "${CONTRACT_SEED:-8}") || status=$?
if [ $status -ne 0 ]; then
	echo "== local stack log (last 50 lines)" >&2; tail -50 "$log" >&2
fi
exit $status

#!/usr/bin/env bash
# `make test-openapi-clients`: internal/api/openapi.yaml held to the tools client developers use.
#  1. @redocly/cli lint (redocly.yaml: the recommended rules as errors, and more), clean.
#  2. Clients generated as their users would, each into gen/ (never committed): oapi-codegen with
#     its default configuration (go tool, pinned in go.mod), openapi-typescript for openapi-fetch
#     (package-lock.json) and openapi-python-client (requirements.txt).
#  3. Each compiled or type-checked: go build and go vet; tsc (strict); the Python package imported
#     and checked with mypy beside its driver.
#  4. Each driven (goclient/main.go, client.ts, client.py) through the main operations against a
#     local stack (the devstack binary of `make run` on free 127.0.0.1 ports) and, for API
#     Gateway's own 500 and 503, against gateway.py's stand-in; both stopped whatever the outcome.
# Needs .ci/openapi/node_modules and .ci/openapi/venv; the Makefile target provides both.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=.ci/openapi
spec=internal/api/openapi.yaml
work=.ci/work/openapi
mkdir -p "$work"
bin=$dir/node_modules/.bin
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

echo "== @redocly/cli lint"
"$bin/redocly" lint --config "$dir/redocly.yaml" --format stylish "$spec"

echo "== generate: oapi-codegen, openapi-typescript, openapi-python-client"
rm -rf "$dir/gen"
mkdir -p "$dir/gen/goclient" "$dir/gen/ts" "$dir/gen/py"
(cd "$dir" && go tool oapi-codegen -package goclient -o gen/goclient/client.go "../../$spec")
"$bin/openapi-typescript" "$spec" -o "$dir/gen/ts/schema.ts"
# ruff (a dependency of the generator, in the venv) formats what it writes.
PATH="$PWD/$dir/venv/bin:$PATH" "$dir/venv/bin/openapi-python-client" generate --path "$spec" \
	--output-path "$dir/gen/py/sto_client" --meta none --fail-on-warning

echo "== compile and type-check"
(cd "$dir" && go build -o gen/goclient.bin ./goclient && go vet ./goclient ./gen/goclient)
(cd "$dir" && node_modules/.bin/tsc -p tsconfig.json)
(cd "$dir" && PYTHONPATH=gen/py venv/bin/python -c 'import sto_client.api.transfers.create_transfer, sto_client.api.history.list_transfers, sto_client.api.transfers.get_transfer' \
	&& venv/bin/mypy --config-file mypy.ini client.py gateway.py)

echo "== the local stack and API Gateway's stand-in"
go build -o "$work/devstack" ./internal/devstack/cmd/devstack
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
api=$(port) ddb=$(port) xlm=$(port) fn=$(port) gw=$(port)
log="$work/devstack.log"
: >"$log"
API_ADDR=127.0.0.1:$api DYNAMODB_ADDR=127.0.0.1:$ddb STELLAR_ADDR=127.0.0.1:$xlm LAMBDA_ADDR=127.0.0.1:$fn LEDGER_INTERVAL_MS=1000 \
	"$work/devstack" >"$log" 2>&1 &
pids=($!)
python3 "$dir/gateway.py" "$gw" &
pids+=($!)
stop() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT
# The banner is printed once every listener is up.
for i in $(seq 1 300); do
	if grep -q "local stack" "$log" && (exec 3<>"/dev/tcp/127.0.0.1/$api") 2>/dev/null && (exec 3<>"/dev/tcp/127.0.0.1/$gw") 2>/dev/null; then break; fi
	if ! kill -0 "${pids[0]}" 2>/dev/null || [ "$i" = 300 ]; then cat "$log" >&2; echo "the local stack did not start" >&2; exit 1; fi
	sleep 0.1
done
export API_URL=http://127.0.0.1:$api STACK_URL=http://127.0.0.1:$xlm/_sim/stack GATEWAY_URL=http://127.0.0.1:$gw
echo "local stack: API on $API_URL; API Gateway's stand-in on $GATEWAY_URL" >&2

echo "== the three clients against it"
status=0
"$dir/gen/goclient.bin" || status=1
node "$dir/gen/ts-out/client.js" || status=1
(cd "$dir" && PYTHONPATH=gen/py venv/bin/python client.py) || status=1
if [ $status -ne 0 ]; then
	echo "== local stack log (last 50 lines)" >&2; tail -50 "$log" >&2
fi
exit $status

#!/usr/bin/env bash
# `make test-clients`: the official JavaScript and Python Stellar SDKs (clients.mjs, clients.py)
# against the local network as `make run` serves it. Two devstacks on free 127.0.0.1 ports, one
# with the classic vault (as `make run`) and one with VAULT_CONTRACT=local (transfers through the
# vault contract), both stopped afterwards whatever the outcome. Needs .ci/venv (`make tools`) and
# .ci/clients/node_modules (`npm ci --prefix .ci/clients`); the Makefile target provides both.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=.ci/work/clients
mkdir -p "$work"
go build -o "$work/devstack" ./internal/devstack/cmd/devstack
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
pids=()
stop() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop EXIT
# start NAME [ENV=VALUE...]: a devstack on free ports; prints its /_sim/stack URL once it is up.
start() {
	local name=$1 api ddb xlm fn log="$work/$1.log"
	shift
	api=$(port) ddb=$(port) xlm=$(port) fn=$(port)
	env "$@" API_ADDR=127.0.0.1:$api DYNAMODB_ADDR=127.0.0.1:$ddb STELLAR_ADDR=127.0.0.1:$xlm \
		LAMBDA_ADDR=127.0.0.1:$fn LEDGER_INTERVAL_MS=1000 "$work/devstack" >"$log" 2>&1 &
	pids+=($!)
	# The banner is printed once every listener is up.
	for i in $(seq 1 300); do
		if grep -q "local stack" "$log"; then break; fi
		if ! kill -0 "${pids[-1]}" 2>/dev/null || [ "$i" = 300 ]; then cat "$log" >&2; echo "$name: the local stack did not start" >&2; exit 1; fi
		sleep 0.1
	done
	echo "$name: local network on http://127.0.0.1:$xlm, API on http://127.0.0.1:$api" >&2
	STACK="http://127.0.0.1:$xlm/_sim/stack"
}
start classic VAULT_CONTRACT=
export STACK_URL=$STACK
start contract VAULT_CONTRACT=local
export CONTRACT_STACK_URL=$STACK
status=0
node .ci/clients/clients.mjs || status=1
.ci/venv/bin/python .ci/clients/clients.py || status=1
if [ $status -ne 0 ]; then
	for name in classic contract; do echo "== $name stack log (last 30 lines)" >&2; tail -30 "$work/$name.log" >&2; done
fi
exit $status

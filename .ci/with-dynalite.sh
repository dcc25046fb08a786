#!/usr/bin/env bash
# Runs a command with dynalite (pinned in .ci/dynalite) listening on a free 127.0.0.1 port, its URL
# in DYNALITE_ENDPOINT, and stops dynalite afterwards whatever the command's outcome.
# Usage: .ci/with-dynalite.sh COMMAND [ARGS...]
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$dir/dynalite/node_modules/dynalite/cli.js" ]; then
	npm ci --prefix "$dir/dynalite" --no-audit --no-fund >&2
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
log=$(mktemp)
node "$dir/dynalite/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	if ! kill -0 "$pid" 2>/dev/null; then cat "$log" >&2; echo "dynalite did not start" >&2; exit 1; fi
	sleep 0.1
done
export DYNALITE_ENDPOINT="http://127.0.0.1:$port"
echo "dynalite on $DYNALITE_ENDPOINT" >&2
"$@"

#!/bin/sh
# Start dynalite 4.0.0 (pinned by package-lock.json) in the foreground on 127.0.0.1:PORT,
# in memory. Installs it first if node_modules is missing. Usage: .ci/dynalite/run.sh PORT
# Then: DYNALITE_ENDPOINT=http://127.0.0.1:PORT go test ./internal/dynamo/...
# (make test-dynalite does all of it on a free port through .ci/with-dynalite.sh.)
set -eu
port=${1:?usage: run.sh PORT}
dir=$(cd "$(dirname "$0")" && pwd)
if [ ! -f "$dir/node_modules/dynalite/cli.js" ]; then
	npm ci --prefix "$dir" --no-audit --no-fund >&2
fi
exec node "$dir/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$port"

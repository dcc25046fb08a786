#!/usr/bin/env bash
# `make test`'s one run of the suite: every test once, with the race detector and -v, so that the
# whole output (every log line of the code under test, passing tests' included) is in
# .ci/work/test-output.txt, which .ci/scan-secrets.sh scans for secret seeds without running the
# suite again. Prints a line per package here and, when a test fails, the lines before each
# failure; the file has the rest. Arguments are passed to go test (before ./...).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .ci/work
out=.ci/work/test-output.txt
rm -f "$out"
start=$(date +%s.%N)
status=0
# -timeout 40m: the fault campaign's package runs about 12 minutes here (699 s with -race on the
# shared 2-core machine, load average 4 to 7), past go test's default of 10 minutes for one package
# binary.
go test -race -count=1 -v -timeout 40m "$@" ./... >"$out.partial" 2>&1 || status=$?
mv "$out.partial" "$out"
# The file's time is the run's start, so scan-secrets sees a Go file changed during the run as newer.
touch -d "@$start" "$out"
grep -E '^(ok|FAIL|\?)\s+\S|^panic: ' "$out" || true
if [ "$status" -ne 0 ]; then
	echo
	echo "== the lines before each failure (the whole output: $out)"
	grep -n -B 30 -E -- '--- FAIL|^panic: |\[build failed\]|\[setup failed\]' "$out" | tail -400 || true
	exit "$status"
fi
echo "$(grep -c -- '--- PASS' "$out") tests passed, $(grep -c -- '--- SKIP' "$out") skipped; output in $out"

#!/usr/bin/env bash
# Runs every test verbosely (all log output of the code under test included) and fails if any
# line holds something shaped like a Stellar secret seed (SEP-23 strkey "S...", 56 characters):
# no log line in the whole suite may carry a secret (issue 7).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .ci/work
log=.ci/work/verbose-tests.log
go test -count=1 -v ./... >"$log" 2>&1 || { tail -50 "$log"; echo "tests failed; see $log" >&2; exit 1; }
if grep -nE '\bS[A-Z2-7]{55}\b' "$log" | cut -c1-24 | head -20 | grep .; then
	echo "secret-shaped strings in the test output (line numbers above, values not shown); see $log" >&2
	exit 1
fi
echo "secret scan: $(wc -l <"$log") lines of test output, no secret seed"

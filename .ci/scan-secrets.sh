#!/usr/bin/env bash
# Fails if any line of the test suite's verbose output (all log output of the code under test
# included) holds something shaped like a Stellar secret seed (SEP-23 strkey "S...", 56
# characters): no log line in the whole suite may carry a secret, since secrets never reach logs.
#
# It scans .ci/work/test-output.txt, the output of `make test`'s one run (.ci/go-test.sh), so that
# `make check` runs each test once. It runs the suite itself only when that file is missing, when a
# Go file (or go.mod, go.sum, a testdata file) changed after it was written, or when asked
# (SCAN_SECRETS_RUN=1 make scan-secrets).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.ci/work/test-output.txt
why=""
if [ "${SCAN_SECRETS_RUN:-}" = 1 ]; then
	why="asked (SCAN_SECRETS_RUN=1)"
elif [ ! -f "$out" ]; then
	why="no $out yet"
elif changed=$(find functions internal go.mod go.sum -newer "$out" \( -name '*.go' -o -path '*/testdata/*' -o -name 'go.*' \) -type f -print -quit) && [ -n "$changed" ]; then
	why="$changed changed after $out was written"
fi
if [ -n "$why" ]; then
	echo "secret scan: running the tests first: $why"
	.ci/go-test.sh >/dev/null || { echo "tests failed; see $out (make test shows the failures)" >&2; exit 1; }
fi
# Only the line numbers are printed: a line's first characters may be the seed itself.
if lines=$(grep -nE '\bS[A-Z2-7]{55}\b' "$out" | cut -d: -f1 | head -20 | paste -sd, -) && [ -n "$lines" ]; then
	echo "secret-shaped strings in the test output at lines $lines (values not shown); see $out" >&2
	exit 1
fi
echo "secret scan: $(wc -l <"$out") lines of test output ($(date -r "$out" '+%Y-%m-%d %H:%M:%S')), no secret seed"

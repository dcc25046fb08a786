#!/usr/bin/env bash
# `sam build` of the template's six functions (makefile builder, no container), then checks that
# each artifact is a linux/arm64 ELF `bootstrap` and prints its size. Output in .ci/sam/build.
# SAM is the sam command (make passes the venv's, with telemetry off).
set -euo pipefail
cd "$(dirname "$0")/.."
sam=${SAM:-sam}
build_dir=.ci/sam/build
$sam build --template-file template.yaml --build-in-source --cache-dir .ci/sam/cache --build-dir "$build_dir" --parallel
for id in ApiFunction AlertFunction ReconcileFunction InDoubtReaderFunction SubmitterFunction WebhookFunction; do
	f="$build_dir/$id/bootstrap"
	[ -x "$f" ] || { echo "sam build: $f missing or not executable" >&2; exit 1; }
	# ELF magic, 64-bit, and e_machine 0xb7 (EM_AARCH64) at offset 18.
	magic=$(od -An -tx1 -N5 "$f" | tr -d ' \n')
	machine=$(od -An -tx1 -j18 -N2 "$f" | tr -d ' \n')
	if [ "$magic" != "7f454c4602" ] || [ "$machine" != "b700" ]; then
		echo "sam build: $f is not a linux/arm64 ELF executable (magic $magic, machine $machine)" >&2; exit 1
	fi
	printf 'sam build: %-21s %s bytes (linux/arm64)\n' "$id" "$(stat -c %s "$f")"
done

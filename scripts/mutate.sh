#!/usr/bin/env bash
# mutate.sh breaks one rule on purpose and measures how soon the simulation
# finds it: it applies PATCH (a rule broken, scripts/mutations/*.patch),
# runs the simulation's search (make simulate's test) on each SEED for
# STEPS steps, prints the steps to the first violation (or "not found in
# N"), and reverts the patch, also when interrupted.
#
#   scripts/mutate.sh scripts/mutations/settled-dead-letter.patch 300000 1 2 3
#
# A violation that panics a goroutine of the worker ends the test before
# it reports: it is counted at the run it happened in (the steps of the
# runs before it, from SIMPROGRESS). Never commit with a patch applied:
# `git diff` must show no mutation.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 PATCH STEPS SEED..." >&2; exit 2; }
patch=$1 steps=$2
shift 2
cd "$(dirname "$0")/.."
git apply --check "$patch"
git apply "$patch"
trap 'git apply -R "$patch"' EXIT
prog=$(mktemp) log=$(mktemp)
for seed in "$@"; do
	rm -rf pkg/worker/testdata/rapid/TestSimulation_search
	: >"$prog"
	rc=0
	SIMPROGRESS=$prog nice go test -count=1 -timeout 3h -run '^TestSimulation$' -v ./pkg/worker \
		-rapid.seed="$seed" -rapid.checks=$((steps / 21)) -rapid.steps=30 >"$log" 2>&1 || rc=$?
	rm -rf pkg/worker/testdata/rapid/TestSimulation_search
	found=$(grep -m1 -o 'first found after [0-9]* steps' "$log" || true)
	if [ -n "$found" ]; then
		echo "SEED=$seed: ${found#first }: $(grep -m1 -o 'VIOLATION: .\{0,160\}' "$log")"
	elif grep -q '^panic: ' "$log"; then
		echo "SEED=$seed: panic after $(cat "$prog") steps: $(grep -m1 '^panic: ' "$log")"
	elif [ "$rc" -eq 0 ]; then
		echo "SEED=$seed: not found in $(grep -o 'search: [0-9]* runs, [0-9]* steps' "$log" | grep -o '[0-9]* steps')"
	else
		echo "SEED=$seed: failed otherwise (exit $rc): $(grep -m1 -v 'rapid\] draw' "$log" | head -c 300)"
	fi
done
rm -f "$prog" "$log"

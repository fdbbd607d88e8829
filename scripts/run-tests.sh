#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every CTest test of a build and ends with one plain line: "N passed, N failed[, N skipped]".
# Usage: scripts/run-tests.sh [BUILD_DIR] [extra ctest arguments...]
set -uo pipefail

build=${1:-build}
shift || true
log=$build/Testing/run-tests.log
mkdir -p "$build/Testing"

ctest --test-dir "$build" --output-on-failure -j2 "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

# ctest: "100% tests passed, 0 tests failed out of 12"; skipped ones are listed as "(Skipped)".
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
if [[ -z $summary ]]; then
  echo "run-tests: ctest ran no test (exit status $rc)" >&2
  echo "0 passed, 0 failed"
  exit 1
fi
failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$summary")
total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$summary")
skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
passed=$((total - failed - skipped))
echo
if ((skipped > 0)); then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
exit "$rc"

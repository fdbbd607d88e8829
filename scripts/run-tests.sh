#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every CTest test of one or more builds and ends with one plain line over all of them:
# "N passed, N failed[, N skipped]".
# Usage: scripts/run-tests.sh [BUILD_DIR...] [extra ctest arguments...]
#        (leading arguments that are CTest build folders are builds; default: build)
set -uo pipefail

builds=()
while (($#)) && [[ -f $1/CTestTestfile.cmake ]]; do
  builds+=("$1")
  shift
done
((${#builds[@]})) || builds=(build)

total_passed=0 total_failed=0 total_skipped=0 rc=0
for build in "${builds[@]}"; do
  log=$build/Testing/run-tests.log
  mkdir -p "$build/Testing"
  echo "run-tests: $build"
  ctest --test-dir "$build" --output-on-failure -j2 "$@" 2>&1 | tee "$log"
  brc=${PIPESTATUS[0]}
  ((brc == 0)) || rc=$brc

  # ctest: "100% tests passed, 0 tests failed out of 12"; skipped ones are listed as "(Skipped)".
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
  if [[ -z $summary ]]; then
    echo "run-tests: ctest ran no test in $build (exit status $brc)" >&2
    rc=1
    continue
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$summary")
  total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$summary")
  skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
  # Disabled tests (the sanitizer build's crash tests, tests/CMakeLists.txt) are not in ctest's
  # count and not in ours: shown here only.
  disabled=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Disabled\)$' "$log" || true)
  passed=$((total - failed - skipped))
  echo "run-tests: $build: $passed passed, $failed failed, $skipped skipped ($disabled disabled)"
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
done

echo
if ((total_passed + total_failed + total_skipped == 0)); then
  echo "0 passed, 0 failed"
  exit 1
fi
if ((total_skipped > 0)); then
  echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
else
  echo "$total_passed passed, $total_failed failed"
fi
exit "$rc"

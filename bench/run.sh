#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the benchmarks (if needed) and runs them all, then prints a summary against the issue's
# goals. Usage: bench/run.sh [build-dir]   (default: build-bench at the top of the tree; the
# environment's BUILD is used if set). TMPDIR chooses where bench_crash and bench_snapshot write
# their reports. bench_snapshot also runs eu-stack and gdb against its target (if ptrace works).
# Nothing here asserts on time: the exit status is non-zero only if a benchmark failed to run.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-$ROOT/build-bench}}
JOBS=$(nproc 2>/dev/null || echo 2)

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  # The tests are not needed here; leaving them out keeps this independent of their sources.
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFL_BUILD_BENCH=ON \
    -DFL_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$BUILD" -j"$JOBS" --target bench_install bench_unwind bench_crash \
  bench_snapshot >/dev/null

model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1)
[ -n "$model" ] || model=$(uname -m)
os=$(sed -n 's/^PRETTY_NAME="\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /etc/os-release 2>/dev/null | head -n1)
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
echo "# faultline benchmarks"
echo
echo "machine: $(nproc) CPUs, $model, $(uname -m), ${os:-unknown OS}, kernel $(uname -r)"
echo "build:   $BUILD ($btype; benchmarks at -O2, frame pointers on), $($cc --version | head -n1)"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ); load average before the run: $(cut -d" " -f1-3 /proc/loadavg)"
echo

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
for b in bench_install bench_unwind bench_crash bench_snapshot; do
  if ! "$BUILD/bench/$b" >>"$out"; then
    echo "run.sh: $b failed" >&2
    status=1
  fi
done
grep -v '^GOAL|' "$out"

echo "## Summary against the issue's goals"
echo
printf '| %-34s | %-96s | %-16s | %-7s |\n' metric measured goal verdict
printf '|%s|%s|%s|%s|\n' "------------------------------------" \
  "--------------------------------------------------------------------------------------------------" \
  "------------------" "---------"
grep '^GOAL|' "$out" | while IFS='|' read -r _ metric measured goal verdict; do
  printf '| %-34s | %-96s | %-16s | %-7s |\n' "$metric" "$measured" "$goal" "$verdict"
done
exit $status

#!/bin/sh
# SPDX-License-Identifier: MIT
# Crash -> report of this tree against an earlier revision, in one go: both builds' bench_crash
# for THREADS threads x 64 frames, alternately, ROUNDS times (RUNS crashes each), so that the
# machine's load falls on both alike. Prints each round's medians and their median, and the ratio.
# Usage: bench/before.sh REV [THREADS=256] [ROUNDS=7] [RUNS=9]   (env BUILD: this tree's build
# directory, default build-bench; the revision is built in a temporary git worktree)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REV=${1:?usage: bench/before.sh REV [THREADS] [ROUNDS] [RUNS]}
THREADS=${2:-256}
ROUNDS=${3:-7}
RUNS=${4:-9}
BUILD=${BUILD:-$ROOT/build-bench}
JOBS=$(nproc 2>/dev/null || echo 2)

TMP=$(mktemp -d)
WT=$TMP/before
cleanup() {
    git -C "$ROOT" worktree remove --force "$WT" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
git -C "$ROOT" worktree add --detach "$WT" "$REV" >/dev/null 2>&1
for d in "$WT/build" "$BUILD"; do
    src=$ROOT
    [ "$d" = "$WT/build" ] && src=$WT
    [ -f "$d/CMakeCache.txt" ] || cmake -S "$src" -B "$d" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DFL_BUILD_BENCH=ON -DFL_BUILD_TESTS=OFF >/dev/null
    cmake --build "$d" -j"$JOBS" --target bench_crash >/dev/null
done

# The median "report renamed" time (ms) of one bench_crash run: the row of THREADS threads.
median_of() {
    "$1/bench/bench_crash" "$RUNS" "$THREADS" | awk -v t="$THREADS" -F'|' \
        '$2+0 == t { split($4, a, "/"); print a[1] + 0 }'
}

echo "crash -> report renamed, $THREADS threads x 64 frames, median of $RUNS crashes per round (ms)"
echo "before: $(git -C "$ROOT" log -1 --format='%h %s' "$REV" | cut -c1-90)"
echo "after:  this tree ($(git -C "$ROOT" log -1 --format=%h HEAD)$(git -C "$ROOT" diff --quiet HEAD || echo ', with uncommitted changes'))"
echo
echo "| round | before | after |"
echo "|------:|-------:|------:|"
b_all="" a_all=""
for i in $(seq "$ROUNDS"); do
    b=$(median_of "$WT/build")
    a=$(median_of "$BUILD")
    echo "| $i | $b | $a |"
    b_all="$b_all $b"
    a_all="$a_all $a"
done
med() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
b=$(med $b_all)
a=$(med $a_all)
echo
echo "median of the rounds: before $b ms, after $a ms: $(awk -v b="$b" -v a="$a" 'BEGIN { printf "%.2f", b / a }')x faster"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs the libFuzzer targets of a build made with -DFL_BUILD_FUZZERS=ON (listed in
# BUILD/fuzz/targets.tsv by tests/CMakeLists.txt), each for a bounded time on its own corpus in
# BUILD/fuzz/<target>/corpus, which starts as a copy of the checked-in seeds
# (tests/<module>/corpus/<target>/; the source tree is never written) and keeps what the runs
# add. Prints per target its executions and the result, and exits 1 if any target found
# something (a crash, an ASan or UBSan report, a leak, a timeout, running out of memory) or could
# not run. A finding is left as BUILD/fuzz/<target>/crash-<sha1> (or leak-, timeout-, oom-): the
# input, which `BUILD/tests/<module>/<target> FILE` replays. Each run's log: BUILD/fuzz/<target>/log.
# Usage: scripts/fuzz.sh [--seconds N] [--jobs N] BUILD [TARGET...]
#        (defaults: 600 s per target, one target at a time, every target)
set -uo pipefail

seconds=600 jobs=1
while (($#)); do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
(($#)) || { echo "usage: scripts/fuzz.sh [--seconds N] [--jobs N] BUILD [TARGET...]" >&2; exit 2; }
build=$(cd "$1" 2>/dev/null && pwd) || { echo "fuzz: no build folder $1" >&2; exit 2; }
shift
manifest=$build/fuzz/targets.tsv
[[ -f $manifest ]] || {
  echo "fuzz: $manifest missing: configure $build with -DFL_BUILD_FUZZERS=ON (make fuzz does)" >&2
  exit 2
}

# The sanitizers' options, unless the caller set them (cmake/sanitizer-env.cmake explains them).
: "${ASAN_OPTIONS:=halt_on_error=1:detect_leaks=1:strict_string_checks=1}"
: "${UBSAN_OPTIONS:=halt_on_error=1:print_stacktrace=1}"
: "${LSAN_OPTIONS:=use_tls=0:suppressions=$(cd "$(dirname "$0")/.." && pwd)/cmake/lsan.supp}"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS

declare -A bin seeds flags
names=()
while IFS=$'\t' read -r name exe seed opts; do
  [[ -n $name ]] || continue
  names+=("$name")
  bin[$name]=$exe seeds[$name]=$seed flags[$name]=$opts
done <"$manifest"
if (($#)); then
  for t in "$@"; do
    [[ -n ${bin[$t]:-} ]] || { echo "fuzz: no target $t in $manifest" >&2; exit 2; }
  done
  names=("$@")
fi

findings() {
  find "$1" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \)
}

# One target: runs it and writes its one-line result to BUILD/fuzz/<target>/result.
run_one() {
  local name=$1 work=$build/fuzz/$1
  mkdir -p "$work/corpus"
  rm -f "$work/result"
  if [[ ! -x ${bin[$name]} ]]; then
    echo "$name: FAILED: ${bin[$name]} not built" >"$work/result"
    return
  fi
  if [[ -d ${seeds[$name]} ]]; then
    cp -n "${seeds[$name]}"/* "$work/corpus/" 2>/dev/null
  fi
  local before
  before=$(findings "$work" | wc -l)
  local start=$SECONDS
  # -timeout: one input running this long is a finding (a hang); -rss_limit_mb: so is growing
  # past this; the artifacts go next to the corpus, not into the working directory.
  # shellcheck disable=SC2086 # (the manifest's options are separate words)
  (cd "$work" && "${bin[$name]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
     -print_final_stats=1 -artifact_prefix="$work/" ${flags[$name]} "$work/corpus") \
    >"$work/log" 2>&1
  local rc=$? took=$((SECONDS - start))
  local execs
  execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$work/log" | tail -n 1)
  [[ -n $execs ]] || execs=$(grep -oE '^#[0-9]+' "$work/log" | tail -n 1 | tr -d '#')
  local now
  now=$(findings "$work" | wc -l)
  local corpus
  corpus=$(find "$work/corpus" -type f | wc -l)
  if ((rc == 0 && now == before)); then
    echo "$name: ok, ${execs:-0} executions in ${took} s, corpus $corpus files" >"$work/result"
  else
    local what
    what=$(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|CHECK failed|ALARM|out-of-memory|deadly signal' \
             "$work/log")
    local artifact
    artifact=$(findings "$work" | xargs -r ls -t | head -n 1)
    echo "$name: FOUND (exit $rc) after ${execs:-0} executions in ${took} s: ${what:-see the log}" \
         "; input ${artifact:-none saved}; log $work/log" >"$work/result"
  fi
}

echo "fuzz: ${#names[@]} targets, ${seconds} s each, $jobs at a time, in $build/fuzz"
running=0
for name in "${names[@]}"; do
  run_one "$name" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n
    running=$((running - 1))
  fi
done
wait

rc=0
for name in "${names[@]}"; do
  line=$(cat "$build/fuzz/$name/result" 2>/dev/null || echo "$name: FAILED: no result")
  echo "  $line"
  [[ $line == "$name: ok,"* ]] || rc=1
done
if ((rc)); then
  echo "fuzz: FAILED (a finding is replayed by running the target with its input file)"
else
  echo "fuzz: all ${#names[@]} targets ok"
fi
exit "$rc"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The demo scenario behind `make demo`: an app crashes, then on its next start shows the report.
# Usage: scripts/demo.sh [BUILD_DIR]   (default: build)
set -euo pipefail

build=${1:-build}
demo=$build/demo/faultline-demo
reports=$build/demo-reports
[[ -x $demo ]] || { echo "demo: $demo not built (run: make build)" >&2; exit 1; }

rm -rf "$reports"
ulimit -c 0 # the kernel's core dump is not what this demo is about

step() { printf '\n\033[1m== %s\033[0m\n\n' "$*"; }
[[ -t 1 ]] || step() { printf '\n== %s\n\n' "$*"; }

step "1/2  The app starts, installs faultline, and crashes"
echo "\$ $demo $reports"
# Run it with the shell's own "Segmentation fault" notice silenced (fd 3 keeps the app's stderr).
set +e
{ "$demo" "$reports" 2>&3; } 3>&2 2>/dev/null
status=$?
set -e
if ((status > 128)); then
  sig=$((status - 128))
  name=$(kill -l "$sig" 2>/dev/null || echo "?")
  if ((sig == 11)); then
    echo "demo crashed with signal $sig (SIG$name) as intended"
  else
    echo "demo: crashed with signal $sig (SIG$name), expected 11 (SIGSEGV)" >&2
    exit 1
  fi
else
  echo "demo: exited with status $status instead of crashing" >&2
  exit 1
fi

step "2/2  The app starts again and picks up the report of its last crash"
echo "\$ $demo --next-start $reports"
"$demo" --next-start "$reports"

step "Done"
echo "The report stays in $reports; show it again with:"
echo "  $demo --next-start $reports"
if [[ -x $build/tools/faultline ]]; then
  echo "or read it with the CLI (--json for JSON):"
  echo "  $build/tools/faultline show $reports/*.flr"
fi

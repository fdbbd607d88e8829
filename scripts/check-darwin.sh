#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the outputs of `make darwin` (built, never run here): each is Mach-O for its build's
# architecture; the static library and the dylib define _fl_install, and the dylib exports exactly
# the public API of cmake/faultline.map (pthread_create aside, a Linux-only interposition).
# Usage: scripts/check-darwin.sh [BUILD_DIR...]   (default build-darwin-arm64 build-darwin-x86_64)
# Exit status: 0 all good, 1 a check failed, 77 (CTest's skip) no Darwin build to check.
set -uo pipefail
cd "$(dirname "$0")/.."
OBJDUMP=${OBJDUMP:-llvm-objdump-14}
NM=${NM:-llvm-nm-14}
dirs=("$@")
((${#dirs[@]})) || dirs=(build-darwin-arm64 build-darwin-x86_64)

fail=0
bad() { echo "check-darwin: FAIL: $*"; fail=1; }

# The public API, as ld64 names it.
want=$(sed -e 's|/\*.*\*/||g' cmake/faultline.map | tr -s ' \t;' '\n' |
       awk '/global:/ {on=1; next} /local:/ {on=0} on && /^[A-Za-z_][A-Za-z0-9_]*$/ && $0 != "pthread_create" {print "_" $0}' |
       sort)

checked=0
for d in "${dirs[@]}"; do
  [[ -f $d/CMakeCache.txt ]] || continue
  case $(sed -n 's/^FL_ZIG_TARGET:[A-Z]*=//p' "$d/CMakeCache.txt") in
    aarch64-macos) cpu=ARM64 ;;
    x86_64-macos) cpu=X86_64 ;;
    *) bad "$d: cannot tell its architecture from CMakeCache.txt"; continue ;;
  esac
  checked=$((checked + 1))
  lib=$d/libfaultline.a
  dylib=$(ls "$d"/libfaultline.*.dylib 2>/dev/null | head -n 1)
  for f in "$lib" "$dylib" "$d/demo/faultline-demo" "$d/tools/faultline"; do
    if [[ ! -f $f ]]; then bad "$d: missing ${f#$d/}"; continue; fi
    # For an archive every member's header is printed: all must be Mach-O 64-bit of this cpu.
    heads=$("$OBJDUMP" --macho --private-headers "$f" 2>/dev/null | grep -E '^ *MH_MAGIC')
    if [[ -z $heads ]]; then bad "$f: not Mach-O"; continue; fi
    others=$(grep -vcE "^ *MH_MAGIC_64 +$cpu " <<<"$heads")
    ((others == 0)) || bad "$f: $others Mach-O header(s) not MH_MAGIC_64 $cpu"
  done
  if [[ -f $lib ]]; then
    syms=$("$NM" --defined-only "$lib" 2>/dev/null)
    grep -qE ' T _fl_install$' <<<"$syms" || bad "$lib: does not define _fl_install"
  fi
  if [[ -n $dylib ]]; then
    got=$("$NM" --extern-only --defined-only "$dylib" 2>/dev/null | awk '{print $NF}' | sort)
    grep -qx _fl_install <<<"$got" || bad "$dylib: does not export _fl_install"
    extra=$(comm -13 <(echo "$want") <(echo "$got"))
    missing=$(comm -23 <(echo "$want") <(echo "$got"))
    [[ -z $extra ]] || bad "$dylib: exports beyond the public API: $(echo $extra | head -c 300)"
    [[ -z $missing ]] || bad "$dylib: does not export: $(echo $missing)"
  fi
  ((fail)) || echo "check-darwin: $d: Mach-O $cpu; libfaultline.a, $(basename "$dylib"), faultline-demo, faultline; exports = the public API ($(wc -l <<<"$want") symbols)"
done
if ((checked == 0)); then
  echo "check-darwin: no Darwin build directory (make darwin makes them)"
  exit 77
fi
exit "$fail"

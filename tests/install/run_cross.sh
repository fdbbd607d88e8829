#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install test of a cross build (make arm64): `cmake --install` into a scratch prefix, then
#   $CC app.c $(PKG_CONFIG_PATH=prefix/lib/pkgconfig pkg-config --cflags --libs --static faultline)
# exactly as an application would, and the result run under the emulator. Ends with
# "N passed, N failed".
# Usage: run_cross.sh --build DIR --work DIR --cmake CMAKE --cc CC --nm NM --runner "qemu-aarch64 -L ..."
#                     --machine AArch64 [--libdir lib]
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build= work= cmake=cmake cc= nm=nm runner= machine= libdir=lib
while (($#)); do
  case $1 in
    --build) build=$2 ;; --work) work=$2 ;; --cmake) cmake=$2 ;; --cc) cc=$2 ;; --nm) nm=$2 ;;
    --runner) runner=$2 ;; --machine) machine=$2 ;; --libdir) libdir=$2 ;;
    *) echo "run_cross.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done

passed=0 failed=0
ok() { echo "ok   - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; failed=$((failed + 1)); }
check() {
  local name=$1; shift
  if "$@" >"$work/log" 2>&1; then ok "$name"; else fail "$name"; sed 's/^/       | /' "$work/log"; fi
}

rm -rf "$work"
mkdir -p "$work/scratch"
prefix=$work/prefix

check "cmake --install into $prefix" "$cmake" --install "$build" --prefix "$prefix"
for f in include/faultline/faultline.h include/faultline/faultline.pb-c.h \
         include/protobuf-c/protobuf-c.h "$libdir/libfaultline.a" "$libdir/libprotobuf-c.a" \
         "$libdir/pkgconfig/faultline.pc" "$libdir/pkgconfig/libprotobuf-c.pc"; do
  [[ -e $prefix/$f ]] && ok "installed $f" || fail "installed $f"
done
[[ ! -e $prefix/$libdir/libfaultline.so ]] && ok "no libfaultline.so (static prefix)" \
  || fail "no libfaultline.so (static prefix)"

# The application's command line, with the prefix named relatively as in the README.
flags=$(cd "$work" && PKG_CONFIG_PATH=prefix/$libdir/pkgconfig pkg-config --cflags --libs --static faultline)
echo "pkg-config --cflags --libs --static faultline: $flags"
[[ $flags == *-lfaultline* && $flags == *-lprotobuf-c* && $flags == *"-L$prefix/$libdir"* ]] \
  && ok "pkg-config names the prefix's libfaultline and protobuf-c" \
  || fail "pkg-config names the prefix's libfaultline and protobuf-c"
check "$cc app.c \$(pkg-config --cflags --libs --static faultline)" \
  "$cc" -std=c11 -Wall -Wextra -Werror "$here/app.c" -o "$work/app" $flags
check "app is an $machine executable" bash -c "readelf -h '$work/app' | grep -q 'Machine:.*$machine'"
check "app runs under $runner" $runner "$work/app" "$work/scratch"
check "fully static app (-static) builds" \
  "$cc" -std=c11 -static "$here/app.c" -o "$work/app_static" $flags
check "fully static app runs under $runner" $runner "$work/app_static" "$work/scratch"
if "$nm" -u "$prefix/$libdir/libfaultline.a" 2>/dev/null | awk '{print $NF}' | grep -qx dl_iterate_phdr; then
  fail "libfaultline.a never references dl_iterate_phdr"
else
  ok "libfaultline.a never references dl_iterate_phdr"
fi

echo
echo "$passed passed, $failed failed"
((failed == 0))

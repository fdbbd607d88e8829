#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install test: `cmake --install` into a scratch prefix, then build and run apps against it through
# pkg-config (shared, libfaultline.a, fully static) and find_package(faultline), and check what
# the installed libraries export and import. Ends with "N passed, N failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build=build work=install-work cmake=cmake cc=cc nm=nm libdir=lib tools=ON
header=$here/../../include/faultline/faultline.h consumer=$here/cmake-consumer upload=OFF
while (($#)); do
  case $1 in
    --build) build=$2 ;; --work) work=$2 ;; --cmake) cmake=$2 ;; --cc) cc=$2 ;; --nm) nm=$2 ;;
    --libdir) libdir=$2 ;; --header) header=$2 ;; --consumer) consumer=$2 ;; --tools) tools=$2 ;;
    --upload) upload=$2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift 2
done

passed=0 failed=0
ok() { echo "ok   - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; shift; [[ $# -gt 0 ]] && printf '       %s\n' "$@"; failed=$((failed + 1)); }
# check NAME CMD...: runs CMD with its output in $work/log, and shows that output on failure.
check() {
  local name=$1; shift
  if "$@" >"$work/log" 2>&1; then ok "$name"; else fail "$name"; sed 's/^/       | /' "$work/log"; fi
}

# has/lacks CMD... PATTERN: CMD succeeds and its output does / does not match PATTERN.
has() {
  local out; out=$("${@:1:$#-1}") || return 1
  grep -qE -- "${@: -1}" <<<"$out" || { echo "$out"; return 1; }
}
lacks() {
  local out; out=$("${@:1:$#-1}") || return 1
  ! grep -E -- "${@: -1}" <<<"$out"
}

rm -rf "$work"
mkdir -p "$work/scratch"
prefix=$work/prefix
lib=$prefix/$libdir
cflags=(-std=c11 -Wall -Wextra -Werror)

# 1. Install.
check "cmake --install into $prefix" "$cmake" --install "$build" --prefix "$prefix"
for f in include/faultline/faultline.h "$libdir/libfaultline.a" "$libdir/libfaultline.so" \
         "$libdir/pkgconfig/faultline.pc" "$libdir/cmake/faultline/faultline-config.cmake" \
         "$libdir/cmake/faultline/faultline-config-version.cmake"; do
  [[ -e $prefix/$f ]] && ok "installed $f" || fail "installed $f"
done
if [[ $tools == ON ]]; then
  [[ -x $prefix/bin/faultline ]] && ok "installed bin/faultline" || fail "installed bin/faultline"
  # Start-up cost: only faultline-upload may bring libcurl (and its libraries) or libdw.
  check "bin/faultline needs neither libcurl, libdw nor libstdc++" lacks readelf -d \
    "$prefix/bin/faultline" 'NEEDED.*(libcurl|libdw|libstdc)'
  if [[ $upload == ON ]]; then
    [[ -x $prefix/bin/faultline-upload ]] && ok "installed bin/faultline-upload" \
      || fail "installed bin/faultline-upload"
    # Run from the prefix with an empty PATH: faultline must find faultline-upload beside it.
    usage=$(env PATH=/nonexistent "$prefix/bin/faultline" upload 2>&1)
    [[ $usage == *"usage: faultline upload"* ]] && ok "installed faultline upload runs faultline-upload" \
      || fail "installed faultline upload runs faultline-upload" "$usage"
  fi
fi

export PKG_CONFIG_PATH=$lib/pkgconfig
pc() { pkg-config "$@" faultline; }
check "pkg-config faultline --modversion" pc --modversion

# 2. pkg-config, shared: cc app.c $(pkg-config --cflags --libs faultline)
check "pkg-config build against libfaultline.so" \
  "$cc" "${cflags[@]}" "$here/app.c" -o "$work/app_shared" $(pc --cflags --libs)
check "app linked to libfaultline.so runs" env LD_LIBRARY_PATH="$lib" "$work/app_shared" "$work/scratch"
check "app_shared needs libfaultline.so" has readelf -d "$work/app_shared" 'NEEDED.*libfaultline\.so'

# 3. pkg-config --static with libfaultline.a and a dynamic libc (-lfaultline -> -l:libfaultline.a).
static_libs=$(pc --static --libs | sed -E 's/(^| )-lfaultline( |$)/\1-l:libfaultline.a\2/')
check "pkg-config --static build against libfaultline.a" \
  "$cc" "${cflags[@]}" "$here/app.c" -o "$work/app_static" $(pc --cflags) $static_libs
check "app linked to libfaultline.a runs" "$work/app_static" "$work/scratch"
check "app_static does not need libfaultline.so" \
  lacks readelf -d "$work/app_static" 'NEEDED.*libfaultline'

# 4. Fully static: cc -static app.c $(pkg-config --cflags --libs --static faultline)
check "pkg-config --static build, fully static (-static)" \
  "$cc" "${cflags[@]}" -static "$here/app.c" -o "$work/app_full_static" $(pc --cflags --libs --static)
check "fully static app runs" "$work/app_full_static" "$work/scratch"
check "app_full_static has no program interpreter" lacks readelf -l "$work/app_full_static" INTERP

# 5. find_package(faultline) from a CMake project.
check "find_package(faultline) consumer configures" "$cmake" -S "$consumer" -B "$work/consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo
check "find_package(faultline) consumer builds" "$cmake" --build "$work/consumer"
check "consumer app (faultline::faultline) runs" "$work/consumer/app_shared" "$work/scratch"
check "consumer app (faultline::faultline_static) runs" "$work/consumer/app_static" "$work/scratch"

# 6. What the libraries export and import.
so=$lib/libfaultline.so a=$lib/libfaultline.a
exported=$("$nm" -D --defined-only "$so" 2>/dev/null | awk 'NF >= 3 {print $3}' | sort -u)
# pthread_create: interposed so that every thread gets an alternate signal stack (crash/altstack_linux.c).
bad=$(grep -vE '^(fl_|pthread_create$)' <<<"$exported" | grep -v '^$')
lu=$(grep -E '^fl_lu_' <<<"$exported")
[[ -n $exported && -z $bad ]] && ok "libfaultline.so exports only fl_* symbols and pthread_create" \
  || fail "libfaultline.so exports only fl_* symbols and pthread_create" ${bad:-"(nothing exported)"}
[[ -z $lu ]] && ok "libfaultline.so exports no privatised libunwind (fl_lu_*) symbol" \
  || fail "libfaultline.so exports no privatised libunwind (fl_lu_*) symbol" $lu
unw=$("$nm" -D "$so" 2>/dev/null | awk '{print $NF}' | grep -E '^(unw_|_Unwind_|_U_)')
[[ -z $unw ]] && ok "libfaultline.so has no unw_*/_Unwind_* dynamic symbol" \
  || fail "libfaultline.so has no unw_*/_Unwind_* dynamic symbol" $unw
api=$(sed -nE 's/^FL_API [^(]*[ *]([a-z_0-9]+)\(.*/\1/p' "$header" | sort -u)
missing=$(comm -23 <(echo "$api") <(echo "$exported"))
[[ -n $api && -z $missing ]] && ok "libfaultline.so exports every FL_API function ($(echo $api | wc -w))" \
  || fail "libfaultline.so exports every FL_API function" ${missing:-"(no FL_API in $header)"}
if "$nm" -u "$a" 2>/dev/null | awk '{print $NF}' | grep -qx dl_iterate_phdr; then
  fail "libfaultline.a never references dl_iterate_phdr"
else
  ok "libfaultline.a never references dl_iterate_phdr"
fi

# 7. libfaultline-upload: a library of its own, so that libfaultline never needs libcurl.
check "libfaultline.so does not need libcurl or zlib" lacks readelf -d "$so" 'NEEDED.*(libcurl|libz\.)'
if [[ $upload == ON ]]; then
  for f in include/faultline/upload.h "$libdir/libfaultline-upload.a" \
           "$libdir/libfaultline-upload.so" "$libdir/pkgconfig/faultline-upload.pc"; do
    [[ -e $prefix/$f ]] && ok "installed $f" || fail "installed $f"
  done
  check "pkg-config build against libfaultline-upload.so" \
    "$cc" "${cflags[@]}" "$here/upload_app.c" -o "$work/upload_app" \
    $(pkg-config --cflags --libs faultline-upload)
  check "upload app runs" env LD_LIBRARY_PATH="$lib" "$work/upload_app" "$work/scratch"
  check "libfaultline-upload.so needs libcurl" has readelf -d "$lib/libfaultline-upload.so" \
    'NEEDED.*libcurl'
  up_exported=$("$nm" -D --defined-only "$lib/libfaultline-upload.so" 2>/dev/null | awk 'NF >= 3 {print $3}' | sort -u)
  up_api=$(sed -nE 's/^FL_API [^(]*[ *]([a-z_0-9]+)\(.*/\1/p' "$(dirname "$header")/upload.h" | sort -u)
  up_missing=$(comm -23 <(echo "$up_api") <(echo "$up_exported"))
  up_bad=$(grep -vE '^fl_' <<<"$up_exported" | grep -v '^$')
  [[ -n $up_api && -z $up_missing && -z $up_bad ]] \
    && ok "libfaultline-upload.so exports its FL_API functions and only fl_* symbols" \
    || fail "libfaultline-upload.so exports its FL_API functions and only fl_* symbols" $up_missing $up_bad
  if [[ -x $work/consumer/app_upload ]]; then
    check "consumer app (faultline::faultline_upload) runs" "$work/consumer/app_upload" "$work/scratch"
    check "consumer app (faultline::faultline_upload_static) runs" \
      "$work/consumer/app_upload_static" "$work/scratch"
  else
    fail "find_package(faultline) consumer built app_upload (faultline::faultline_upload)"
  fi
fi

echo
echo "$passed passed, $failed failed"
((failed == 0))

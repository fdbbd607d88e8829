#!/bin/sh
# SPDX-License-Identifier: MIT
# Makes one relocatable object from LLVM's libunwind.a in which
#  - every defined global symbol is renamed fl_lu_<name>, so the copy inside faultline never
#    interposes on (or is interposed by) the application's unwinder, and
#  - the calls that are not async-signal-safe are redirected to faultline's shims:
#    dl_iterate_phdr (takes the loader lock), dlsym/dladdr, malloc/free, the pthread rwlock, stdio,
#    getenv, abort and __assert_fail (see frames/unwind_shims_linux.c).
# Usage: privatize-libunwind.sh libunwind.a out.o   (env LD, OBJCOPY, NM may name the tools)
set -eu
in=$1; out=$2
LD=${LD:-ld}; OBJCOPY=${OBJCOPY:-objcopy}; NM=${NM:-nm}
tmp=$out.tmp; map=$out.syms
$LD -r --whole-archive "$in" -o "$tmp"
: > "$map"
$NM -g --defined-only "$tmp" | awk 'NF==3 {print $3}' | sort -u | while read -r s; do
  echo "$s fl_lu_$s" >> "$map"
done
for s in dl_iterate_phdr dlsym dladdr malloc free calloc realloc pthread_rwlock_rdlock \
         pthread_rwlock_wrlock pthread_rwlock_unlock fprintf __fprintf_chk fwrite fflush \
         snprintf __snprintf_chk getenv abort __assert_fail stderr; do
  echo "$s fl_lu_shim_$s" >> "$map"
done
$OBJCOPY --redefine-syms="$map" "$tmp" "$out"
rm -f "$tmp"
# Fail the build if anything the crash path must not reach is still referenced.
bad=$($NM -u "$out" | awk '{print $2}' | grep -Ex 'dl_iterate_phdr|dlsym|dladdr|malloc|free|calloc|realloc|pthread_.*|fprintf|__fprintf_chk|fwrite|fflush|snprintf|getenv|abort|__assert_fail|stderr' || true)
if [ -n "$bad" ]; then echo "privatize-libunwind: still referenced: $bad" >&2; exit 1; fi

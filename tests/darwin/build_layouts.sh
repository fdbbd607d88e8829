#!/bin/sh
# SPDX-License-Identifier: MIT
# Compiles apple_layouts.c for x86_64-macos and aarch64-macos with zig (its _Static_asserts are
# the compile-time check of base/mach_layouts.h against Apple's headers) and dumps each instance
# section to OUT/<arch>/<name>.bin for the Linux tests.
# Usage: build_layouts.sh ZIG LLVM_OBJCOPY SOURCE_DIR OUT
set -eu
zig=$1 objcopy=$2 src=$3 out=$4
names="x86ss x86es armss infos15 infos15b infosnull infobig infos1 array img0 img1 dyldimg
exc_ok exc_prot exc_gpflt exc_ill exc_fpe exc_brk exc_abort exc_soft exc_guard exc_ool
exc_simple exc_3codes exc_1code exc_reply"
for arch in x86_64 aarch64; do
  mkdir -p "$out/$arch"
  obj=$out/$arch/apple_layouts.o
  "$zig" cc -target "$arch-macos" -std=c11 -Wall -Wextra -Werror -I "$src" -c \
    "$src/tests/darwin/apple_layouts.c" -o "$obj"
  args=
  for n in $names; do
    case $arch:$n in x86_64:armss | aarch64:x86ss | aarch64:x86es) continue ;; esac
    args="$args --dump-section __DATA,$n=$out/$arch/$n.bin"
  done
  # shellcheck disable=SC2086
  "$objcopy" $args "$obj" "$out/$arch/discard.o"
done
echo "build_layouts: base/mach_layouts.h matches Apple's headers (x86_64, aarch64); instances in $out"

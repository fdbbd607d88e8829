#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the compact unwind test binaries with zig cc (never committed). Usage: build.sh ZIG OUT
# Outputs, for ARCH in arm64 and x86_64 (zig targets aarch64-macos, x86_64-macos):
#   OUT/ARCH/kinds-fp-O1                kinds.c + main.c, frame pointers kept, -O1
#   OUT/ARCH/kinds-omitfp-O2            the same with -fomit-frame-pointer, -O2
#   OUT/ARCH/libkinds-fp-O2.dylib       kinds.c as a dylib, frame pointers kept, -O2
#   OUT/ARCH/libkinds-omitfp-O1.dylib   kinds.c as a dylib, -fomit-frame-pointer, -O1
#   OUT/ARCH/many                       many.sh's 512 functions, -fomit-frame-pointer, -O1: a
#                                       regular second-level page then a compressed one
#   OUT/list                            the binaries above, one path a line
#   OUT/ARCH/cfi-omitfp-O1              cfi.c + cfi_ARCH.s, -fomit-frame-pointer -fexceptions,
#                                       -O1: hand-written CFI (signal frames, CFA in odd
#                                       registers, remember/restore, expressions, ...) and C
#                                       functions compact unwind cannot encode (preserve_most,
#                                       ms_abi, arm64 frames without frame pointer): DWARF-mode
#                                       entries, for test_macho_dwarf
#   OUT/ARCH/libcfi-fp-O2.dylib         the same as a dylib, frame pointers kept, -O2
#   OUT/cfi-list                        those two, one path a line
#   OUT/stamp                           written last; nothing is rebuilt while it is newer
#                                       than the inputs
set -eu
zig=$1
mkdir -p "$2"
out=$(cd "$2" && pwd) # the list holds absolute paths
here=$(cd "$(dirname "$0")" && pwd)

if [ -f "$out/stamp" ]; then
    stale=0
    for f in "$here"/build.sh "$here"/kinds.c "$here"/main.c "$here"/many.sh "$here"/cfi.c \
             "$here"/cfi_arm64.s "$here"/cfi_x86_64.s; do
        [ "$f" -nt "$out/stamp" ] && stale=1
    done
    [ $stale = 0 ] && exit 0
fi
rm -f "$out/stamp" "$out/list" "$out/cfi-list"
mkdir -p "$out/arm64" "$out/x86_64"
sh "$here/many.sh" > "$out/many.c"

for arch in arm64 x86_64; do
    case $arch in arm64) target=aarch64-macos ;; x86_64) target=x86_64-macos ;; esac
    d=$out/$arch
    cc() { "$zig" cc -target "$target" "$@"; }
    cc -O1 -fno-omit-frame-pointer -o "$d/kinds-fp-O1" "$here/kinds.c" "$here/main.c"
    cc -O2 -fomit-frame-pointer -o "$d/kinds-omitfp-O2" "$here/kinds.c" "$here/main.c"
    cc -O2 -fno-omit-frame-pointer -shared -o "$d/libkinds-fp-O2.dylib" "$here/kinds.c"
    cc -O1 -fomit-frame-pointer -shared -o "$d/libkinds-omitfp-O1.dylib" "$here/kinds.c"
    cc -O1 -fomit-frame-pointer -o "$d/many" "$out/many.c"
    for f in kinds-fp-O1 kinds-omitfp-O2 libkinds-fp-O2.dylib libkinds-omitfp-O1.dylib many; do
        echo "$d/$f" >> "$out/list"
    done
    cc -O1 -fomit-frame-pointer -fexceptions -o "$d/cfi-omitfp-O1" "$here/cfi.c" "$here/cfi_$arch.s"
    cc -O2 -fno-omit-frame-pointer -fexceptions -shared -o "$d/libcfi-fp-O2.dylib" "$here/cfi.c" \
        "$here/cfi_$arch.s"
    echo "$d/cfi-omitfp-O1" >> "$out/cfi-list"
    echo "$d/libcfi-fp-O2.dylib" >> "$out/cfi-list"
done
touch "$out/stamp"

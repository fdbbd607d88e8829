#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the emulation test programs with zig cc (never committed). Usage: build.sh ZIG OUT
# For ARCH in arm64 and x86_64 (zig targets aarch64-macos, x86_64-macos, macOS 11):
#   OUT/ARCH/walker/*.o        the walker for Darwin: the frames/, macho/ and base/ files a walk
#                              needs, with the project's flags (-O2, frame pointers kept), not
#                              the files that need Mach or libSystem (regs_darwin_*.c,
#                              memory_darwin.c, sys_darwin.c, images_darwin.c); emu_walk.c, the
#                              entry; emu_rt.c (memcpy, memset, bzero: -ffreestanding)
#                              The walker is not built -ffreestanding: that would keep
#                              fl_memcpy's byte loop, which the real build turns into calls to
#                              memcpy, and distort the instruction counts; it calls nothing but
#                              what emu_rt.c defines (emu.py refuses binds to libraries).
#   OUT/ARCH/ref/*.o           the benchmark's reference (emu_ref.c): LLVM libunwind from zig's
#                              lib/libunwind (libunwind.cpp, -O2, no threads, no exceptions)
#                              and emu_ref.c, its entry and the libSystem names it needs
#   OUT/ARCH/FP-OPT            cases.c (FP: fp = -fno-omit-frame-pointer, omitfp =
#                              -fomit-frame-pointer; OPT: O0, O2, Os), cases_ARCH.s, emu_rt.c,
#                              emu_walk.c and the walker, then the reference (linked last, so
#                              that the functions ahead of the cases' are the walker's alone:
#                              frame 0's LC_FUNCTION_STARTS scan passes over them), linked
#                              -nostdlib: no libSystem call
#   OUT/list                   "ARCH FP-OPT path" for each program
#   OUT/stamp                  written last; nothing is rebuilt while it is newer than the inputs
# Zig's caches go to OUT/zig-cache.
set -eu
zig=$1
mkdir -p "$2"
out=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export ZIG_GLOBAL_CACHE_DIR="$out/zig-cache" ZIG_LOCAL_CACHE_DIR="$out/zig-cache"
unwind=$("$zig" env | sed -n 's/.*"lib_dir": *"\([^"]*\)".*/\1/p')/libunwind
[ -f "$unwind/src/libunwind.cpp" ] || { echo "build.sh: no libunwind sources in $unwind" >&2; exit 1; }

WALKER="base/errors.c base/strings.c base/reader.c base/images.c base/maps.c
        macho/macho_image.c macho/macho_symbols.c macho/compact_unwind.c
        frames/walk.c frames/regs_names.c frames/cfi_dwarf.c frames/cfi_apply.c frames/cfi_step.c
        frames/cfi_cache.c frames/cfi_macho.c frames/cfi_darwin.c"

if [ -f "$out/stamp" ]; then
    newer=$(find "$here" "$root/base" "$root/frames" "$root/macho" "$root/include" \
                 -newer "$out/stamp" \( -name '*.c' -o -name '*.h' -o -name '*.s' -o -name '*.sh' \) \
                 -print | head -n 1)
    [ -z "$newer" ] && exit 0
fi
rm -f "$out/stamp" "$out/list"

for arch in x86_64 arm64; do
    case $arch in arm64) target=aarch64-macos.11.0 ;; x86_64) target=x86_64-macos.11.0 ;; esac
    d=$out/$arch
    mkdir -p "$d/walker"
    rm -f "$d/walker"/*.o
    lib="-O2 -DNDEBUG -std=c11 -fno-stack-protector -fno-omit-frame-pointer
         -fvisibility=hidden -D_GNU_SOURCE -DFL_BUILDING_LIBRARY -Wall -Wextra
         -I$root -I$root/include"
    for f in $WALKER frames/arch_$arch.c; do
        # shellcheck disable=SC2086
        "$zig" cc -target $target -c $lib -o "$d/walker/$(echo "$f" | tr / _ | sed 's/\.c$//').o" \
            "$root/$f"
    done
    # shellcheck disable=SC2086
    "$zig" cc -target $target -c $lib -o "$d/walker/emu_walk.o" "$here/emu_walk.c"
    # shellcheck disable=SC2086
    "$zig" cc -target $target -c $lib -ffreestanding -o "$d/walker/emu_rt.o" "$here/emu_rt.c"
    mkdir -p "$d/ref"
    rm -f "$d/ref"/*.o
    "$zig" c++ -target $target -c -O2 -DNDEBUG -D_LIBUNWIND_HAS_NO_THREADS \
        -D_LIBUNWIND_IS_NATIVE_ONLY -fno-exceptions -fno-rtti -fno-threadsafe-statics \
        -fno-stack-protector -nostdinc++ -I"$unwind/include" -o "$d/ref/libunwind.o" \
        "$unwind/src/libunwind.cpp"
    # shellcheck disable=SC2086
    "$zig" cc -target $target -c $lib -I"$unwind/include" -o "$d/ref/emu_ref.o" "$here/emu_ref.c"
    for fp in fp omitfp; do
        case $fp in fp) fpflag=-fno-omit-frame-pointer ;; omitfp) fpflag=-fomit-frame-pointer ;; esac
        for opt in O0 O2 Os; do
            # zig cc adds UBSan traps at -O0 (a NULL load would be a ud2/brk, not a fault).
            # (compiled apart, so that the link's order - the order of the text - is the
            # walker's, the cases', then the reference's: zig places sources after objects)
            "$zig" cc -target $target -"$opt" "$fpflag" -fno-stack-protector \
                -fno-sanitize=undefined -c -o "$d/cases-$fp-$opt.o" "$here/cases.c"
            "$zig" cc -target $target -c -o "$d/cases_asm.o" "$here/cases_$arch.s"
            # (-O2 and -Os links strip functions nothing reaches, as they did with the sources)
            "$zig" cc -target $target -"$opt" -nostdlib -Wl,-e,_emu_main -Wl,-u,_emu_walk \
                -Wl,-u,_emu_ref_walk -o "$d/$fp-$opt" "$d"/walker/*.o "$d/cases-$fp-$opt.o" \
                "$d/cases_asm.o" "$d"/ref/*.o
            echo "$arch $fp-$opt $d/$fp-$opt" >> "$out/list"
        done
    done
done
touch "$out/stamp"

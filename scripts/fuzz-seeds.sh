#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Remakes the fuzz targets' checked-in seed corpora, tests/<module>/corpus/<target>/, from real
# reports and binaries: sample reports (tests/report/sample.c through fl_mkreport, one with a
# Mach exception), a crash report of faultline-demo, hostile report directories made of those,
# small ELF files of both architectures (gcc, from tests/elf/fixtures), small Mach-O fixtures
# (tests/macho/fixtures/build.sh's, which the macho_fixtures test builds), symbol index cache
# entries of the ELF files and binaries to index, DWARF CFI tables (tests/frames/fuzz_cfi_seeds.sh) and `faultline
# unwind`'s example state. Run by hand when a format changes; the result is committed (a few
# hundred KB at most). Existing seeds are replaced, except regress-*: inputs of past findings,
# kept so that a regression shows at once.
# Usage: scripts/fuzz-seeds.sh BUILD   (a build with the tests and the CLI, e.g. build-san after
#        `ctest -R macho_fixtures`)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${1:?usage: scripts/fuzz-seeds.sh BUILD}" && pwd)
cli=$build/tools/faultline
for f in "$cli" "$build/tests/tools/fl_mkreport" "$build/demo/faultline-demo" \
         "$build/tests/frames/test_cfi_malformed" "$build/tests/macho/fixtures/x86_64/libfixture.dylib"; do
  [[ -e $f ]] || { echo "fuzz-seeds: $f missing (build, then ctest -R macho_fixtures)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() {
  local d=$src/tests/$1/corpus/$2
  mkdir -p "$d" && find "$d" -type f ! -name 'regress-*' -delete && echo "$d"
}

# ---- Reports: fuzz_report, fuzz_render ----
mkdir -p "$tmp/rep" "$tmp/demo"
sample=$("$build/tests/tools/fl_mkreport" "$tmp/rep" \
  --image /opt/sample/lib/libfixture.dylib,macho,00112233445566778899aabbccddeeff,0,100000000,100100000 \
  --frame 100000f40 --frame 100000f81 --frame 7f0000001234)
demo_bin=$build/demo/faultline-demo
if grep -q '^FL_SANITIZE:BOOL=ON' "$build/CMakeCache.txt"; then
  # The demo's NULL dereference is undefined behaviour, which this build's UBSan stops before it
  # faults: the demo again, without that check, on the build's libfaultline.so.
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
  demo_bin=$tmp/faultline-demo
  "$cc" -g -O1 -D_GNU_SOURCE -fno-optimize-sibling-calls -fsanitize=address,undefined \
    -fno-sanitize=null,pointer-overflow -DFL_DEMO_VERSION='"0.1.0"' -I"$src/include" \
    "$src/demo/demo.c" "$src/demo/demo_thread_linux.c" -L"$build" -lfaultline \
    -Wl,-rpath,"$build" -o "$demo_bin"
fi
ASAN_OPTIONS=detect_leaks=0 "$demo_bin" "$tmp/demo" >/dev/null 2>&1 || true
demo=$(find "$tmp/demo" -name 'faultline-*.flr' | head -n 1)
[[ -n $demo ]] || { echo "fuzz-seeds: $demo_bin wrote no report" >&2; exit 1; }
python3 - "$sample" "$tmp/mach.flr" "$src/tests/tools" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
from tooltest import field, varint
codes = b"".join(varint(c) for c in (1, 0x10))
mach = field(1, 0, varint(1)) + field(2, 2, b"EXC_BAD_ACCESS") + field(3, 2, codes) + \
    field(4, 2, b"KERN_INVALID_ADDRESS")
open(sys.argv[2], "wb").write(open(sys.argv[1], "rb").read() + field(10, 2, mach))
# A Hang record (docs/hangs.md) and the recovery record appended after `complete`.
def hang(duration, recovered):
    return field(11, 2, field(1, 0, varint(1001)) + field(2, 0, varint(1714564800000000000)) +
                 field(3, 0, varint(duration)) + field(4, 0, varint(800)) +
                 field(5, 0, varint(200000000)) + field(6, 0, varint(recovered)) + field(7, 0, varint(1)))
open(sys.argv[2][:-len("mach.flr")] + "hang.flr", "wb").write(
    open(sys.argv[1], "rb").read() + hang(812000000, 0) + hang(1813000000, 1))
PY
for d in "$(fresh report fuzz_report)" "$(fresh tools fuzz_render)"; do
  cp "$sample" "$d/sample.flr"
  cp "$tmp/hang.flr" "$d/sample-hang.flr"
  cp "$tmp/mach.flr" "$d/sample-mach.flr"
  cp "$demo" "$d/demo-crash.flr"
  head -c 700 "$sample" >"$d/sample-cut.flr"
done

# ---- Report directories: fuzz_store (the layout is in fuzz_store.c) ----
d=$(fresh report fuzz_store)
python3 - "$d" "$sample" "$demo" "$tmp/mach.flr" <<'PY'
import struct, sys
out, sample, demo, mach = sys.argv[1], *[open(p, "rb").read() for p in sys.argv[2:]]
# Name indices of fuzz_store.c's g_names.
REP_A, REP_B, REP_C, REP_X, REP_EMPTY, TMP_A, TMP_B, TMP_EMPTY, STATE, STATE_TMP, STATE_LOCK, \
    STORE_LOCK, QDIR, QREP, QREASON, QX, QXREASON, QDOTREASON, ODD, LONG, REASON, NOTES = range(22)
RUN_A, RUN_X, RUN_TMP = range(24, 27)
def run(state, hang):  # report/report.h's fl_run_record_t: 120 bytes, little-endian here
    return (b"flrun01\n" + struct.pack("<iIQ", 4242, state, 1714564800000000000)
            + b"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".ljust(40, b"\0") + bytes(range(16))
            + struct.pack("<II", hang, 1) + bytes(range(16, 32)) + struct.pack("<QQ", 1, 900000000))
FILE, DIR, LINK, FIFO = range(4)
NOW, SEC10, HOUR, DAYS = (a << 2 for a in range(4))
def entry(name, kind, data=b""):
    return bytes([name, kind]) + struct.pack("<H", len(data)) + data
state = (b"faultline-state 1\nannounced 1 00112233445566778899aabbccddeeff\n"
         b"removed 2 1714564800123000000 0000000000000000000000000000000a 11\n")
seeds = {
    "two-reports": bytes([0x07]) + entry(REP_A, FILE, sample[:60000]) + entry(REP_B, FILE, demo[:60000]),
    "caps": bytes([0x48]) + entry(REP_A, FILE, sample[:60000]) + entry(REP_B, FILE | HOUR, mach[:60000])
            + entry(REP_C, FILE | DAYS, demo[:60000]) + entry(QREP, FILE | DAYS, sample[:900])
            + entry(QREASON, FILE, b"does not decode\n") + entry(QX, FILE | HOUR, b"x"),
    "tmp-files": bytes([0x43]) + entry(TMP_A, FILE | DAYS, sample[:60000])
                 + entry(TMP_B, FILE | DAYS, sample[:40]) + entry(TMP_EMPTY, FILE | SEC10)
                 + entry(REP_A, FILE, demo[:60000]),
    "state": bytes([0x85]) + entry(REP_A, FILE, demo[:60000]) + entry(REP_B, FILE, sample[:60000])
             + entry(STATE, FILE, state) + entry(STATE_TMP, FILE, b"faultline-state 1\n"),
    "run-markers": bytes([0x01]) + entry(RUN_A, FILE, run(1, 1)) + entry(RUN_X, FILE, run(3, 0))
                   + entry(RUN_TMP, FILE, run(2, 0)[:60]) + entry(REP_A, FILE, sample[:60000]),
    "hostile-names": bytes([0x83]) + entry(REP_A, LINK, bytes([REP_B])) + entry(REP_B, FILE, sample[:60000])
                     + entry(REP_C, FIFO) + entry(REP_X, DIR) + entry(ODD, FILE, mach[:60000])
                     + entry(LONG, FILE, b"faultline") + entry(QDIR, LINK, bytes([22]))
                     + entry(STATE, DIR) + entry(STORE_LOCK, FILE, b"") + entry(REASON, FILE, b"r")
                     + entry(NOTES, FILE, b"not a report") + entry(REP_EMPTY, FILE, b""),
}
for name, data in seeds.items():
    open(f"{out}/{name}", "wb").write(data)
PY

# ---- ELF files: fuzz_elf; their symbol index cache entries: fuzz_symindex ----
d=$(fresh elf fuzz_elf)
fix=$src/tests/elf/fixtures
small=("-Wl,--build-id=sha1" "-Wl,-z,max-page-size=4096" "-Wl,-z,noseparate-code")
gcc -O1 -g -shared -fPIC "${small[@]}" -o "$d/lib.so" "$fix/fixture_lib.c"
objcopy --only-keep-debug "$d/lib.so" "$d/lib.debug"
objcopy --strip-debug --add-gnu-debuglink="$d/lib.debug" "$d/lib.so" "$d/lib-debuglink.so"
strip --strip-all -o "$d/lib-stripped.so" "$d/lib.so"
aarch64-linux-gnu-gcc -O1 -shared -fPIC "${small[@]}" -o "$d/lib-arm64.so" "$fix/fixture_lib.c"
d=$(fresh tools fuzz_symindex)
for f in lib.so lib.debug lib-stripped.so lib-arm64.so; do
  rm -rf "$tmp/cache"
  FAULTLINE_CACHE_DIR=$tmp/cache ASAN_OPTIONS=detect_leaks=0 \
    "$cli" symbolicate "$src/tests/elf/corpus/fuzz_elf/$f" 0x1100 >/dev/null
  for e in "$tmp"/cache/symbols-v*/*.fsi; do
    { printf '\001'; cat "$e"; } >"$d/${f//./-}.fsi"
  done
done
for f in "$src"/tests/elf/corpus/fuzz_elf/{lib.so,lib-stripped.so,lib-arm64.so} \
         "$build/tests/macho/fixtures/x86_64/libfixture.dylib"; do
  { printf '\200'; cat "$f"; } >"$d/bin-$(basename "$f")"
done

# ---- Mach-O files: fuzz_macho ----
d=$(fresh macho fuzz_macho)
mf=$build/tests/macho/fixtures
cp "$mf/x86_64/libfixture.dylib" "$d/x86_64-libfixture.dylib"
cp "$mf/arm64/libfixture-stripx.dylib" "$d/arm64-libfixture-stripx.dylib"

# ---- DWARF CFI tables: fuzz_cfi ----
d=$(fresh frames fuzz_cfi)
FUZZ_CFI_SEED_MAX=6000 sh "$src/tests/frames/fuzz_cfi_seeds.sh" "$d" "$build/tests/frames/test_cfi_malformed" >/dev/null

# ---- `faultline unwind` states: fuzz_unwind_state ----
d=$(fresh tools fuzz_unwind_state)
cp "$src/docs/examples/unwind-state.json" "$d/"

chmod -R u=rwX,go=rX "$src"/tests/*/corpus
du -sh "$src"/tests/*/corpus

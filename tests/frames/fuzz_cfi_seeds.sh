#!/bin/sh
# SPDX-License-Identifier: MIT
# Seeds for fuzz_cfi (see fuzz_cfi.c for the input's layout): the .eh_frame of system libraries,
# cut at a record boundary under $FUZZ_CFI_SEED_MAX bytes (default 60000) and ended with a
# terminator, each behind the 8-byte header that asks for a synthesised .eh_frame_hdr; and the
# valid tables of test_cfi_malformed. (The checked-in corpus/fuzz_cfi/ is this with 6000 bytes:
# scripts/fuzz-seeds.sh.)
# Usage: fuzz_cfi_seeds.sh CORPUS_DIR [TEST_CFI_MALFORMED]
set -eu
out=$1
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for lib in /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libstdc++.so.6 \
           /lib64/ld-linux-x86-64.so.2 /usr/aarch64-linux-gnu/lib/libc.so.6 \
           /usr/aarch64-linux-gnu/lib/libstdc++.so.6; do
  [ -e "$lib" ] || continue
  # (the host's GNU objcopy does not know other architectures; llvm-objcopy does)
  { llvm-objcopy-14 -O binary --only-section=.eh_frame "$lib" "$tmp/ehf" ||
    objcopy -O binary --only-section=.eh_frame "$lib" "$tmp/ehf"; } 2>/dev/null || continue
  case $(od -An -tx1 -j18 -N1 "$lib" | tr -d ' ') in b7) arch=1 ;; *) arch=0 ;; esac
  name=$(echo "$lib" | tr / _)
  python3 - "$tmp/ehf" "$out/$name" "$arch" "${FUZZ_CFI_SEED_MAX:-60000}" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
end = 0
while end + 4 <= len(data):
    n = struct.unpack_from('<I', data, end)[0]
    if n == 0 or n == 0xffffffff or end + 4 + n > int(sys.argv[4]):
        break
    end += 4 + n
flags = 0x02 | 0x08 | int(sys.argv[3])  # synthesised hdr, size known, arch
header = bytes([flags, 0, 0, 0x10, 0x31, 0x52, 0x73, 0x94])
open(sys.argv[2], 'wb').write(header + data[:end] + b'\0\0\0\0')
PY
done
if [ $# -gt 1 ]; then "$2" 1 "$out" > /dev/null || true; fi
ls -l "$out"

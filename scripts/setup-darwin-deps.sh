#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Puts the protobuf-c runtime (protobuf-c.c and protobuf-c.h, from Debian's source package 1.4.1,
# the version of the host's protoc-c) in .deps/protobuf-c-darwin/protobuf-c/ for the Darwin build,
# which compiles it like our own sources. Uses apt-get with private lists and cache only: the
# system's apt configuration is not touched. Fast when already there. Prints the directory.
# Usage: scripts/setup-darwin-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ver=1.4.1
sha256=4cc4facd508172f3e0a4d3a8736225d472418aee35b4ad053384b137b220339f # the .dsc's, for the orig tarball
dest=$PWD/.deps/protobuf-c-darwin
if [[ -f $dest/VERSION && $(cat "$dest/VERSION") == "$ver" && -f $dest/protobuf-c/protobuf-c.c ]]; then
  echo "$dest"
  exit 0
fi
command -v apt-get >/dev/null || { echo "setup-darwin-deps: apt-get not found (Debian 12 only)" >&2; exit 1; }

mkdir -p .deps && work=$(mktemp -d "$PWD/.deps/.protobuf-c.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial"
printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
  > "$work/parts/src.sources"
apto=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/parts"
      -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache"
      -o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
echo "setup-darwin-deps: fetching Debian's protobuf-c $ver source package" >&2
apt-get "${apto[@]}" -qq update >&2
(cd "$work" && apt-get "${apto[@]}" -qq source --download-only "protobuf-c=$ver-1" >&2)
tgz=$work/protobuf-c_$ver.orig.tar.gz
echo "$sha256  $tgz" | sha256sum -c --quiet - || {
  echo "setup-darwin-deps: protobuf-c_$ver.orig.tar.gz does not have the expected sha256" >&2
  exit 1
}
# Debian's 1.4.1-1 carries no patches (debian/patches is absent), so the upstream files are
# Debian's. Only the runtime is needed: the generated code comes from the host's protoc-c.
tar -xzf "$tgz" -C "$work" "protobuf-c-$ver/protobuf-c/protobuf-c.c" \
  "protobuf-c-$ver/protobuf-c/protobuf-c.h" "protobuf-c-$ver/LICENSE"
# Laid out as upstream: protobuf-c.c includes "protobuf-c.h" beside it, and the generated code
# includes <protobuf-c/protobuf-c.h> from $dest.
rm -rf "$dest" && mkdir -p "$dest/protobuf-c"
cp "$work/protobuf-c-$ver/protobuf-c/protobuf-c.h" "$work/protobuf-c-$ver/protobuf-c/protobuf-c.c" \
  "$dest/protobuf-c/"
cp "$work/protobuf-c-$ver/LICENSE" "$dest/"
echo "$ver" > "$dest/VERSION"
echo "$dest"

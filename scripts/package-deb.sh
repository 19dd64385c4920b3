#!/usr/bin/env bash
# A Debian package of the static binary, with its manual pages and shell completions:
#   scripts/package-deb.sh    -> dist/overload_<version>_<arch>.deb
# Installs cargo-deb first if it is missing (crates.io).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/build-static.sh)
# The one path the package's metadata names (Cargo.toml: [package.metadata.deb]).
mkdir -p target/static && cp "$bin" target/static/overload
assets=target/assets
rm -rf "$assets"
"$bin" generate man --out "$assets/man"
gzip -9n "$assets"/man/*.1
for shell in bash zsh fish; do
  "$bin" generate "$shell" --out "$assets/completions"
done
command -v cargo-deb >/dev/null 2>&1 || scripts/cargo install cargo-deb --locked
mkdir -p dist
scripts/cargo deb --no-build --no-strip --output dist/ >&2
deb=$(ls -t dist/*.deb | head -1)
dpkg-deb --info "$deb" >/dev/null
echo "$deb"

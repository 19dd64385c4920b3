#!/usr/bin/env bash
# A fully static overload binary, for machines without Rust or with another libc: musl where
# that Rust target is installed, else glibc with +crt-static (glibc >= 2.34 has its `files`
# and `dns` name services built in, so name resolution works without the shared NSS modules).
# Prints the binary's path; fails unless `file` and `ldd` both call it static.
#   scripts/build-static.sh            -> dist/overload-<version>-<arch>-linux-static (stripped)
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
arch=${host%%-*}
musl="$arch-unknown-linux-musl"
if [ -d "$(rustc --print sysroot)/lib/rustlib/$musl/lib" ]; then
  triple=$musl
  flags=""
else
  triple=$host
  # Only with an explicit --target does RUSTFLAGS spare build scripts and proc macros, which
  # must stay dynamic to be loaded by cargo and rustc.
  flags="-C target-feature=+crt-static"
fi
RUSTFLAGS="${RUSTFLAGS:-} $flags" scripts/cargo build --release --locked --target "$triple" >&2
bin="target/$triple/release/overload"
desc=$(file -b "$bin")
case "$desc" in
  *"statically linked"* | *"static-pie linked"*) ;;
  *) echo "build-static: $bin is not static: $desc" >&2; exit 1 ;;
esac
if ldd "$bin" >/dev/null 2>&1 && ! ldd "$bin" 2>&1 | grep -q "statically linked"; then
  echo "build-static: ldd lists shared libraries for $bin:" >&2
  ldd "$bin" >&2
  exit 1
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
mkdir -p dist
out="dist/overload-$version-$arch-linux-static"
# Stripped: the debug info the release profile keeps for profiling is 3/4 of the file.
strip -o "$out.tmp" "$bin" && mv "$out.tmp" "$out"
echo "$out"

#!/usr/bin/env bash
# Packs the release build and the tools the benches compare against (nginx, wrk, h2load, oha,
# and openssl for tls.py's certificate, where installed), with the shared libraries they need
# beyond glibc, into one archive, so the benches run on a quiet many-core machine that has no
# Rust, no packages and no network.
#
#   bash bench/portable.sh pack [OUT.tar.xz]     # here: target/release/overload + the tools
#   eval "$(bash bench/portable.sh env DIR)"     # there, after `tar xf`: PATH and OVERLOAD=
#
# OVERLOAD_BEFORE=PATH also packs another build (e.g. main's before a change) as
# bin/overload-before; `env` then exports OVERLOAD_BEFORE for bench/uring.py and bench/tls.py.
# Each tool is a wrapper in bin/ that runs the real binary (real/) with lib/ first on the
# library path; glibc itself is not packed (the far machine's, newer, runs these binaries).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"

pack() {
    local out="${1:-$ROOT/target/portable.tar.xz}"
    local dir
    dir="$(mktemp -d)"
    trap 'rm -rf "$dir"' RETURN
    mkdir -p "$dir/bin" "$dir/real" "$dir/lib"
    local ov="${OVERLOAD:-$ROOT/target/release/overload}"
    [ -x "$ov" ] || { echo "portable.sh: $ov not found: cargo build --release first" >&2; exit 2; }
    add "$dir" overload "$ov"
    if [ -n "${OVERLOAD_BEFORE:-}" ]; then add "$dir" overload-before "$OVERLOAD_BEFORE"; fi
    local t p
    for t in nginx wrk h2load oha openssl; do
        p="$(command -v "$t" || true)"
        [ -z "$p" ] && [ "$t" = oha ] && [ -x /work/tools/oha/bin/oha ] && p=/work/tools/oha/bin/oha
        if [ -n "$p" ]; then add "$dir" "$t" "$p"; else echo "portable.sh: $t not installed, left out" >&2; fi
    done
    tar -C "$dir" -cJf "$out" .
    echo "$out ($(du -h "$out" | cut -f1)): $(ls "$dir/bin" | tr '\n' ' ')"
}

# add DIR NAME PATH: the binary, stripped, its non-glibc libraries, and a wrapper.
add() {
    local dir="$1" name="$2" path="$3" lib
    cp "$path" "$dir/real/$name"
    strip "$dir/real/$name" 2>/dev/null || true
    ldd "$path" | awk '/=> \// {print $3}' | while read -r lib; do
        case "$(basename "$lib")" in
            libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
            *) cp -n "$lib" "$dir/lib/" ;;
        esac
    done
    cat >"$dir/bin/$name" <<EOF
#!/bin/sh
D="\$(cd "\$(dirname "\$0")/.." && pwd)"
LD_LIBRARY_PATH="\$D/lib" exec "\$D/real/$name" "\$@"
EOF
    chmod +x "$dir/bin/$name"
}

env_of() {
    local d
    d="$(cd "$1" && pwd)"
    echo "export PATH=\"$d/bin:\$PATH\" OVERLOAD=\"$d/bin/overload\""
    [ -x "$d/bin/overload-before" ] && echo "export OVERLOAD_BEFORE=\"$d/bin/overload-before\""
    # Debian's nginx makes its compiled-in temp and log folders at start, before reading -p.
    echo "mkdir -p /var/lib/nginx /var/log/nginx 2>/dev/null || true"
}

case "${1:-}" in
    pack) shift; pack "$@" ;;
    env) [ $# -eq 2 ] || { echo "usage: portable.sh env DIR" >&2; exit 2; }; env_of "$2" ;;
    *) echo "usage: portable.sh pack [OUT.tar.xz] | env DIR" >&2; exit 2 ;;
esac

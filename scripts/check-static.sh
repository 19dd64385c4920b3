#!/usr/bin/env bash
# Proves the static binary needs nothing of the machine it was built on: runs `overload demo`
# inside an empty root (only the binary, /proc, /dev/null and /tmp: no libc, no Rust, no
# shell), then checks its report was written. Needs root (chroot, mount).
#   scripts/check-static.sh [BINARY]   (default: what scripts/build-static.sh builds)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "check-static: needs root (chroot and mount)" >&2; exit 2; }
bin=${1:-$(scripts/build-static.sh)}
root=$(mktemp -d)
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
mkdir -p "$root/proc" "$root/dev" "$root/tmp" "$root/bin"
mount -t proc proc "$root/proc"
touch "$root/dev/null" && mount --bind /dev/null "$root/dev/null"
cp "$bin" "$root/bin/overload"
echo "check-static: the root holds: $(cd "$root" && find . -path ./proc -prune -o -type f -print | tr '\n' ' ')"
# A short demo: 1 s steps are enough to show it runs and writes its report.
chroot "$root" /bin/overload demo --step 1s --quiet --out /tmp/demo
umount "$root/dev/null"
test -s "$root/tmp/demo/report.html" || { echo "check-static: no report written" >&2; exit 1; }
echo "check-static: ok: $bin ran the demo in an empty root and wrote its report"

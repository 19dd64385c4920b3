#!/usr/bin/env bash
# Soak test of the generator (a benchmark, not CI): a long open-loop run with connections
# recycled, sampling the generator's RSS and open fds every 10 s. Wanted: RSS growth after the
# first minute < 5%, and no fd leak.
#
#   bench/soak.sh                       10 min at 5000 req/s against `overload target`
#   DURATION=120 RATE=2000 bench/soak.sh
#   URL=http://127.0.0.1:8080/ bench/soak.sh   against a server you started (e.g. nginx from
#                                       /work/shared/bench/start_nginx.sh); no target started
#
# Generator and target are pinned to different cores (GEN_CPU, TARGET_CPU) with taskset.
set -euo pipefail

DURATION=${DURATION:-600}     # seconds of load
RATE=${RATE:-5000}            # requests/s
CALLS=${CALLS:-100}           # requests per connection before it is closed
# Most connections the open loop may hold. When the server stalls (a shared machine), the
# arrivals due meanwhile each open a connection; the cap keeps that pool, and so the fd
# count, bounded, so that a leak (fds beyond the cap) stands out.
CONNS=${CONNS:-1000}
INTERVAL=${INTERVAL:-10}      # seconds between samples
GEN_CPU=${GEN_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}
BIN=${BIN:-target/release/overload}
OUT=${OUT:-/tmp/overload-soak-$$}
URL=${URL:-}

[ -x "$BIN" ] || { echo "soak: $BIN not found (cargo build --release first, or set BIN)" >&2; exit 2; }
mkdir -p "$OUT"
TPID=""
GPID=""
cleanup() {
    [ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true
    [ -n "$TPID" ] && kill "$TPID" 2>/dev/null || true
}
trap cleanup EXIT

if [ -z "$URL" ]; then
    taskset -c "$TARGET_CPU" "$BIN" target --listen 127.0.0.1:0 --threads 1 >"$OUT/target.out" 2>&1 &
    TPID=$!
    for _ in $(seq 50); do
        grep -q "^listening on" "$OUT/target.out" 2>/dev/null && break
        sleep 0.1
    done
    URL="$(sed -n 's/^listening on //p' "$OUT/target.out")/"
    [ "$URL" != "/" ] || { echo "soak: the target did not start" >&2; exit 1; }
fi

echo "soak: ${DURATION}s at ${RATE} req/s, ${CALLS} requests per connection, $URL; output in $OUT"
taskset -c "$GEN_CPU" "$BIN" run "$URL" --rate "$RATE" --duration "${DURATION}s" \
    --calls-per-connection "$CALLS" --connections "$CONNS" --threads 1 -q --json "$OUT/run.json" >"$OUT/summary.txt" 2>&1 &
GPID=$!

printf 't_s\trss_kb\tfds\n' >"$OUT/samples.tsv"
start=$(date +%s)
while kill -0 "$GPID" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$GPID/status" 2>/dev/null || true)
    fds=$(ls "/proc/$GPID/fd" 2>/dev/null | wc -l || true)
    [ -n "$rss" ] && printf '%s\t%s\t%s\n' "$(( $(date +%s) - start ))" "$rss" "$fds" >>"$OUT/samples.tsv"
    sleep "$INTERVAL"
done
wait "$GPID" && rc=0 || rc=$?
GPID=""
cat "$OUT/summary.txt"

# Growth is judged from the first sample at or after 60 s to the last sample taken under load.
awk -F'\t' -v dur="$DURATION" -v conns="$CONNS" '
    NR == 1 { next }
    $1 >= 60 && base == "" { base = $2; base_t = $1; fd_base = $3 }
    $1 <= dur { last = $2; last_t = $1; fd_last = $3 }
    { if (fd_max == "" || $3 > fd_max) fd_max = $3; if (fd_min == "" || $3 < fd_min) fd_min = $3 }
    END {
        if (base == "") { print "soak: run shorter than a minute, no growth figure"; exit }
        g = (last - base) * 100.0 / base
        printf "soak: RSS %d kB at %ds, %d kB at %ds: growth %+.1f%% (wanted < 5%%) %s\n",
            base, base_t, last, last_t, g, (g < 5 ? "OK" : "TOO MUCH")
        # Open fds = open connections (at most --connections) + a few of the process own.
        printf "soak: open fds %d at %ds, %d at %ds, min %d, max %d (cap: %d connections + ~20 own) %s\n",
            fd_base, base_t, fd_last, last_t, fd_min, fd_max, conns, (fd_max <= conns + 20 ? "no leak" : "LEAK?")
    }' "$OUT/samples.tsv" | tee "$OUT/verdict.txt"
exit "$rc"

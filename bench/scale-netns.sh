#!/usr/bin/env bash
# Scale-out proof on one machine: N network namespaces with veth pairs act as N generator
# hosts, one more as the server host (the embedded `overload target` inside it); all traffic
# stays inside namespaces this script makes and removes. The same plan (RATE req/s for STEP)
# runs on 1, 2 and 4 generators (--segment I/N --start-at T), each split is merged with
# `overload merge`, and the table shows offered rate, throughput, percentiles and generator
# CPU per response. Last, S1's two-generator check: whether the single generator was the
# limit (two generators at R/2 merged do better than one at R beyond noise).
#
# Root only (ip netns, veth). Server pinned to the last core, generators to the others
# (taskset), so they do not measure each other.
#
#   sudo bash bench/scale-netns.sh                 # RATE=4000 STEP=10s GENERATORS="1 2 4"
#   sudo RATE=20000 STEP=20s bash bench/scale-netns.sh
set -euo pipefail

RATE=${RATE:-4000}
STEP=${STEP:-10s}
WARMUP=${WARMUP:-2s}
GENERATORS=${GENERATORS:-1 2 4}
WORK=${WORK:-/sleep?ms=1}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/overload}
OUT=${OUT:-$(mktemp -d /tmp/overload-scale.XXXXXX)}

if [ "$(id -u)" -ne 0 ]; then
    echo "scale-netns: skipped: needs root (ip netns, veth pairs)" >&2
    exit 77
fi
command -v ip >/dev/null || { echo "scale-netns: skipped: no 'ip' (iproute2)" >&2; exit 77; }
[ -x "$BIN" ] || { echo "scale-netns: $BIN missing: cargo build --release" >&2; exit 2; }

cores=$(nproc)
server_core=$((cores - 1))
if [ "$cores" -gt 1 ]; then gen_cores="0-$((cores - 2))"; else gen_cores=0; fi
max_gen=0
for n in $GENERATORS; do [ "$n" -gt "$max_gen" ] && max_gen=$n; done

# Names unique to this run, so two runs (or other users of ip netns) never collide.
tag="ovs$$"
srv="$tag-srv"
target_pid=""
cleanup() {
    [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null && wait "$target_pid" 2>/dev/null
    for ((i = 0; i < max_gen; i++)); do ip netns del "$tag-g$i" 2>/dev/null || true; done
    ip netns del "$srv" 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# The server host: a bridge that every generator's veth joins, 10.201.0.1/24.
ip netns add "$srv"
ip -n "$srv" link set lo up
ip -n "$srv" link add br0 type bridge
ip -n "$srv" addr add 10.201.0.1/24 dev br0
ip -n "$srv" link set br0 up
for ((i = 0; i < max_gen; i++)); do
    g="$tag-g$i"
    ip netns add "$g"
    ip -n "$g" link set lo up
    ip link add "${tag}a$i" netns "$g" type veth peer name "${tag}b$i" netns "$srv"
    ip -n "$g" addr add "10.201.0.$((10 + i))/24" dev "${tag}a$i"
    ip -n "$g" link set "${tag}a$i" up
    ip -n "$srv" link set "${tag}b$i" master br0
    ip -n "$srv" link set "${tag}b$i" up
done

ip netns exec "$srv" taskset -c "$server_core" "$BIN" target --listen 10.201.0.1:8080 \
    --allow-remote >"$OUT/target.log" 2>&1 &
target_pid=$!
for _ in $(seq 50); do
    ip netns exec "$tag-g0" "$BIN" run "http://10.201.0.1:8080/" --requests 1 --users 1 -q \
        >/dev/null 2>&1 && break
    sleep 0.1
done

url="http://10.201.0.1:8080$WORK"
echo "plan: $RATE req/s for $STEP (+$WARMUP warm-up) of GET $WORK; results in $OUT"
for n in $GENERATORS; do
    start_at=$(($(date +%s) + 2))
    pids=()
    for ((i = 0; i < n; i++)); do
        ip netns exec "$tag-g$i" taskset -c "$gen_cores" "$BIN" sweep "$url" --rates "$RATE" \
            --warmup "$WARMUP" --step "$STEP" --rest 0s --threads 1 \
            --segment "$i/$n" --start-at "$start_at" --out "$OUT/n$n-seg$i" -q \
            >"$OUT/n$n-seg$i.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    segs=()
    for ((i = 0; i < n; i++)); do segs+=("$OUT/n$n-seg$i"); done
    "$BIN" merge "${segs[@]}" --out "$OUT/n$n" >"$OUT/n$n-merge.log"
done

python3 - "$OUT" $GENERATORS <<'EOF'
import json, sys
out, ns = sys.argv[1], [int(n) for n in sys.argv[2:]]
rows = {}
print(f"{'generators':>10} {'offered':>9} {'throughput':>10} {'p50 ms':>8} {'p90 ms':>8} "
      f"{'p99 ms':>8} {'send lag p99':>12} {'gen CPU us/resp':>15}")
for n in ns:
    s = json.loads(open(f"{out}/n{n}/steps.jsonl").readline())
    r = s["response_time_ms"]
    rows[n] = s
    print(f"{n:>10} {s['offered']:>9.0f} {s['throughput']:>10.1f} {r['p50']:>8.3f} "
          f"{r['p90']:>8.3f} {r['p99']:>8.3f} {s['send_lag_ms']['p99']:>12.3f} "
          f"{s['generator']['cpu_us_per_response']:>15.1f}")
if 1 in rows and 2 in rows:
    one, two = rows[1], rows[2]
    more = two["throughput"] / max(one["throughput"], 1e-9) - 1
    p1, p2 = one["response_time_ms"]["p99"], two["response_time_ms"]["p99"]
    # Noise: 3% of throughput; p99 moves by a quarter between equal runs on a shared machine.
    limit = more > 0.03 or p1 > 1.25 * p2
    verdict = ("the single generator WAS the limit" if limit
               else "the single generator was not the limit")
    print(f"S1 two-generator check: 2 generators merged give {more:+.1%} throughput, p99 "
          f"{p2:.2f} ms against {p1:.2f} ms for one: {verdict}")
EOF

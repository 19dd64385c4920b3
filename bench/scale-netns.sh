#!/usr/bin/env bash
# Scale-out proof on one machine: N network namespaces with veth pairs act as N generator
# hosts, one more as the server host (the embedded `overload target` inside it), one as the
# controller's host; all traffic stays inside namespaces this script makes and removes.
#
# MODE=static: the same plan (RATE req/s for STEP) runs on 1, 2 and 4 generators (--segment
# I/N --start-at T), each split is merged with `overload merge`, and the table shows offered
# rate, throughput, percentiles and generator CPU per response. Last, S1's two-generator
# check: whether the single generator was the limit (two generators at R/2 merged do better
# than one at R beyond noise).
#
# MODE=controller: a generator agent (`agent --generate`) in each generator namespace, and a
# controller (`sweep --generators FILE`) in its own, driving 1, 2 and 4 of them through the
# levels RATE/4, RATE/2, 3RATE/4, RATE (CSTEP each, no rest): offered rate, throughput and
# generator CPU per response of each merged step, the controller's overhead per step (from
# one step's end to the next one's start, which holds the 0.5 s common-start lead) and its
# own CPU. Then the saturation check: a controller sweep over 2 agents and a single-host
# sweep of the same plan against a target of limited capacity (2 workers × 10 ms: about
# 200 req/s) must saturate within one step of each other.
#
# Root only (ip netns, veth). Server pinned to the last core, generators and controller to
# the others (taskset), so they do not measure each other.
#
#   sudo bash bench/scale-netns.sh              # MODE="static controller" RATE=4000 STEP=10s
#   sudo MODE=controller RATE=2000 CSTEP=5s bash bench/scale-netns.sh
#   sudo MODE=static RATE=20000 STEP=20s GENERATORS="1 2" bash bench/scale-netns.sh
set -euo pipefail

RATE=${RATE:-4000}
STEP=${STEP:-10s}
WARMUP=${WARMUP:-2s}
GENERATORS=${GENERATORS:-1 2 4}
MODE=${MODE:-static controller saturation}
CSTEP=${CSTEP:-5s}
WORK=${WORK:-/sleep?ms=1}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/overload}
OUT=${OUT:-$(mktemp -d /tmp/overload-scale.XXXXXX)}
mkdir -p "$OUT"

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
ctl="$tag-ctl"
pids_to_stop=()
cleanup() {
    for p in "${pids_to_stop[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    for ((i = 0; i < max_gen; i++)); do ip netns del "$tag-g$i" 2>/dev/null || true; done
    ip netns del "$ctl" 2>/dev/null || true
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
# The controller's host, 10.201.0.2.
ip netns add "$ctl"
ip -n "$ctl" link set lo up
ip link add "${tag}ca" netns "$ctl" type veth peer name "${tag}cb" netns "$srv"
ip -n "$ctl" addr add 10.201.0.2/24 dev "${tag}ca"
ip -n "$ctl" link set "${tag}ca" up
ip -n "$srv" link set "${tag}cb" master br0
ip -n "$srv" link set "${tag}cb" up

ip netns exec "$srv" taskset -c "$server_core" "$BIN" target --listen 10.201.0.1:8080 \
    --allow-remote >"$OUT/target.log" 2>&1 &
pids_to_stop+=($!)
# The saturation check's target: 2 requests at once, 10 ms each.
ip netns exec "$srv" taskset -c "$server_core" "$BIN" target --listen 10.201.0.1:8081 \
    --allow-remote --workers 2 >"$OUT/target-limited.log" 2>&1 &
pids_to_stop+=($!)
for port in 8080 8081; do
    for _ in $(seq 50); do
        ip netns exec "$tag-g0" "$BIN" run "http://10.201.0.1:$port/" --requests 1 --users 1 \
            -q >/dev/null 2>&1 && break
        sleep 0.1
    done
done

url="http://10.201.0.1:8080$WORK"

static() {
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
}

# CPU seconds (user + system) a process has used so far, from /proc.
cpu_of() {
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

# A generator agent in each generator namespace (once), plain HTTP on the namespaces' own
# network, with the bearer token; `lines` are their generators-file lines.
agents=()
lines=()
start_agents() {
    [ "${#agents[@]}" -gt 0 ] && return
    local token="$OUT/token" i
    head -c 24 /dev/urandom | base64 >"$token"
    chmod 600 "$token"
    for ((i = 0; i < max_gen; i++)); do
        ip netns exec "$tag-g$i" taskset -c "$gen_cores" "$BIN" agent --generate \
            --listen "10.201.0.$((10 + i)):9443" --allow-remote --token-file "$token" \
            --allow-target 10.201.0.1:8080 --allow-target 10.201.0.1:8081 \
            --max-rate 100000 --max-duration 2m >"$OUT/agent-$i.log" 2>&1 &
        agents+=($!)
        pids_to_stop+=($!)
        lines+=("http://10.201.0.$((10 + i)):9443 token-file=$token")
    done
    for ((i = 0; i < max_gen; i++)); do
        for _ in $(seq 50); do
            grep -q "listening" "$OUT/agent-$i.log" 2>/dev/null && break
            sleep 0.1
        done
    done
}

controller() {
    local n i
    start_agents
    local q=$((RATE / 4))
    local rates="$q,$((2 * q)),$((3 * q)),$((4 * q))"
    echo "controller: levels $rates req/s, $CSTEP each (+$WARMUP warm-up, no rest) of GET $WORK"
    for n in $GENERATORS; do
        printf '%s\n' "${lines[@]:0:n}" >"$OUT/generators-$n"
        local before=()
        for ((i = 0; i < n; i++)); do before+=("$(cpu_of "${agents[$i]}")"); done
        # The controller's own CPU: its children's rusage, as it exits (ip netns exec and
        # taskset exec into it).
        ip netns exec "$ctl" taskset -c "$gen_cores" python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(f"{r.ru_utime + r.ru_stime}\n")
sys.exit(rc)' "$OUT/ctl-n$n.cpu" "$BIN" sweep "$url" --rates "$rates" --warmup "$WARMUP" \
            --step "$CSTEP" --rest 0s --threads 1 --past-saturation 9 \
            --generators "$OUT/generators-$n" --out "$OUT/ctl-n$n" -q >"$OUT/ctl-n$n.log" 2>&1 ||
            { echo "controller over $n agent(s) failed:"; cat "$OUT/ctl-n$n.log"; exit 1; }
        local used=0
        for ((i = 0; i < n; i++)); do
            used=$(echo "$used + $(cpu_of "${agents[$i]}") - ${before[$i]}" | bc -l)
        done
        echo "$used" >"$OUT/ctl-n$n.agents-cpu"
    done
    python3 - "$OUT" $GENERATORS <<'EOF'
import json, sys
out, ns = sys.argv[1], [int(n) for n in sys.argv[2:]]
def steps(d):
    return [json.loads(l) for l in open(f"{out}/{d}/steps.jsonl")]
print(f"{'generators':>10} {'offered':>9} {'throughput':>10} {'p50 ms':>8} {'p99 ms':>8} "
      f"{'send lag p99':>12} {'gen CPU us/resp':>15}")
summary = []
for n in ns:
    st = steps(f"ctl-n{n}")
    for s in st:
        r = s["response_time_ms"]
        print(f"{n:>10} {s['offered']:>9.0f} {s['throughput']:>10.1f} {r['p50']:>8.3f} "
              f"{r['p99']:>8.3f} {s['send_lag_ms']['p99']:>12.3f} "
              f"{s['generator']['cpu_us_per_response']:>15.1f}")
    gaps = [b["start_unix_ms"] - a["end_unix_ms"] for a, b in zip(st, st[1:])]
    ctl_cpu = float(open(f"{out}/ctl-n{n}.cpu").read())
    agents_cpu = float(open(f"{out}/ctl-n{n}.agents-cpu").read())
    responses = sum(s["responses"] for s in st)
    summary.append((n, len(st), gaps, ctl_cpu, agents_cpu, responses))
print()
print(f"{'generators':>10} {'steps':>5} {'gap ms (min/mean/max)':>22} {'controller CPU':>14} "
      f"{'agents CPU us/resp':>18}")
for n, k, gaps, ctl_cpu, agents_cpu, responses in summary:
    g = f"{min(gaps)}/{sum(gaps) / len(gaps):.0f}/{max(gaps)}" if gaps else "-"
    print(f"{n:>10} {k:>5} {g:>22} {ctl_cpu * 1e3:>11.0f} ms "
          f"{agents_cpu / max(responses, 1) * 1e6:>18.1f}")
print("(gap: from a step's end to the next one's start, with --rest 0s: the controller's "
      "overhead, of which 500 ms is the common-start lead; controller CPU: the whole "
      "process, start and report included; agents CPU: their processes' whole CPU over "
      "the run, sampling included, per response)")
EOF
}

# The same sweep from one host, then from the controller over 2 agents, against a target
# of limited capacity: the saturation points must be within one step.
saturation() {
    start_agents
    local sat_url="http://10.201.0.1:8081/sleep?ms=10"
    local sat=(--rates 100:350:50 --warmup 0s --step 2s --rest 300ms --past-saturation 1
        --threads 1 -q)
    ip netns exec "$tag-g0" taskset -c "$gen_cores" "$BIN" sweep "$sat_url" "${sat[@]}" \
        --out "$OUT/sat-single" >"$OUT/sat-single.log" 2>&1
    printf '%s\n' "${lines[@]:0:2}" >"$OUT/generators-sat"
    ip netns exec "$ctl" taskset -c "$gen_cores" "$BIN" sweep "$sat_url" "${sat[@]}" \
        --generators "$OUT/generators-sat" --out "$OUT/sat-controlled" \
        >"$OUT/sat-controlled.log" 2>&1
    python3 - "$OUT" <<'EOF'
import json, sys
out = sys.argv[1]
def steps(d):
    return [json.loads(l) for l in open(f"{out}/{d}/steps.jsonl")]
def saturation(d):
    for s in steps(d):
        if "saturated" in s["flags"]:
            return s["offered"]
    return None
for d in ("sat-single", "sat-controlled"):
    print(d + ": " + ", ".join(
        f"{s['offered']:.0f}→{s['throughput']:.0f}/s p99 {s['response_time_ms']['p99']:.0f} ms"
        + (" saturated" if "saturated" in s["flags"] else "") for s in steps(d)))
s1, s2 = saturation("sat-single"), saturation("sat-controlled")
same = s1 is not None and s2 is not None and abs(s1 - s2) <= 50 + 1e-9
print(f"saturation check (2 workers x 10 ms, steps of 50 req/s): single host {s1}, controller "
      f"over 2 agents {s2}: {'same within one step' if same else 'NOT within one step'}")
EOF
}

for m in $MODE; do
    case "$m" in
    static) static ;;
    controller) controller ;;
    saturation) saturation ;;
    *) echo "scale-netns: MODE '$m': use static, controller, saturation" >&2; exit 2 ;;
    esac
done

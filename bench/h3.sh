#!/usr/bin/env bash
# HTTP/3: the generator's CPU per answered request, overload --http 3 beside overload's own
# HTTP/2 over TLS and oha's HTTP/3 build, with 10 connections x 10 streams, against the
# embedded target (`target --tls --http3`) and, when it is installed, Caddy (h1/h2/h3 on one
# port, `tls internal`, respond "ok").
#
#   bench/h3.sh [ROUNDS] [SECONDS]        (defaults 5 rounds of 5 s)
#
# The server runs on CPU 0, the generator on CPU 1 (taskset), one generator thread; CPU is
# user + sys of the generator's process from /usr/bin/time, divided by the answers it
# counted. Rounds interleave the generators; each line is the median and the spread
# (min..max) over the rounds, and the ratios are of medians within this one run. A shared
# machine moves the absolute figures: compare the ratios. All traffic stays on 127.0.0.1;
# every run is bounded by `timeout`.
#
# OVERLOAD=PATH picks the binary (default: target/release/overload, built if missing);
# OHA=PATH oha built with HTTP/3 (`cargo install oha --features http3`; default
# /work/tools/oha/bin/oha, skipped when absent: no figure is made up for it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
OVERLOAD=${OVERLOAD:-target/release/overload}
OHA=${OHA:-/work/tools/oha/bin/oha}
[ -x "$OVERLOAD" ] || cargo build --release
RUN=$(mktemp -d /tmp/overload-h3bench.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$RUN"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The embedded target, HTTP/1.1, HTTP/2 and HTTP/3 on one port number.
taskset -c 0 "$OVERLOAD" target --listen 127.0.0.1:0 --tls --http3 --threads 1 \
    --ca-out "$RUN/ca.pem" >"$RUN/target.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q https:// "$RUN/target.out" 2>/dev/null && break; sleep 0.1; done
TARGET=$(grep -o 'https://[0-9.:]*' "$RUN/target.out" | head -1)
SERVERS=("target $TARGET/ $RUN/ca.pem")

if command -v caddy >/dev/null; then
    CPORT=$(free_port)
    cat >"$RUN/Caddyfile" <<EOF
{
	admin off
	auto_https disable_redirects
	storage file_system $RUN/caddy-data
	servers {
		protocols h1 h2 h3
	}
}
https://localhost:$CPORT {
	tls internal
	respond "ok"
}
EOF
    taskset -c 0 caddy run --config "$RUN/Caddyfile" --adapter caddyfile >"$RUN/caddy.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do ss -uln | grep -q ":$CPORT " && break; sleep 0.1; done
    # Caddy's internal CA is not ours to pass: --insecure (the handshake is still verified).
    SERVERS+=("caddy https://localhost:$CPORT/ -")
fi

# One run: prints "CPU_US_PER_ANSWER ANSWERS", or "- 0" when it failed.
run_one() {
    local gen=$1 url=$2 ca=$3
    local tls=(--insecure)
    [ "$ca" != - ] && tls=(--cacert "$ca")
    local out="$RUN/out.json" t="$RUN/time"
    rm -f "$out"
    case $gen in
    overload-h3 | overload-h2)
        local v=${gen#overload-h}
        timeout $((SECS + 30)) /usr/bin/time -f '%U %S' -o "$t" taskset -c 1 "$OVERLOAD" run "$url" \
            --http "$v" "${tls[@]}" --users 100 --streams 10 --threads 1 -d "${SECS}s" \
            --json "$out" -q >/dev/null 2>&1 || true
        local n
        n=$(python3 -c "import json;print(json.load(open('$out'))['responses'])" 2>/dev/null || echo 0)
        ;;
    oha-h3)
        # oha waits about 30 s after its last answer before it exits (its QUIC close).
        timeout $((SECS + 60)) /usr/bin/time -f '%U %S' -o "$t" taskset -c 1 "$OHA" --no-tui \
            --http-version 3 --insecure -c 10 -p 10 -z "${SECS}s" --output-format json "$url" \
            >"$out" 2>/dev/null || true
        n=$(python3 -c "
import json; v=json.load(open('$out'))
print(sum(v.get('statusCodeDistribution', {}).values()))" 2>/dev/null || echo 0)
        ;;
    esac
    if [ "${n:-0}" -gt 0 ]; then
        awk -v n="$n" '{ printf "%.2f %d\n", ($1 + $2) * 1e6 / n, n }' "$t"
    else
        echo "- 0"
    fi
}

GENS=(overload-h3 overload-h2)
[ -x "$OHA" ] && GENS+=(oha-h3) || echo "(no oha with HTTP/3 at $OHA: its row is left out)"
for s in "${SERVERS[@]}"; do
    read -r name url ca <<<"$s"
    declare -A cpu=()
    for r in $(seq "$ROUNDS"); do
        for g in "${GENS[@]}"; do
            read -r us n < <(run_one "$g" "$url" "$ca")
            cpu[$g]="${cpu[$g]:-} $us"
        done
    done
    echo "== $name ($url), $ROUNDS rounds of ${SECS}s, 10 connections x 10 streams"
    for g in "${GENS[@]}"; do
        python3 - "$g" ${cpu[$g]} <<'EOF'
import statistics, sys
g, xs = sys.argv[1], [float(x) for x in sys.argv[2:] if x != "-"]
if xs:
    print(f"  {g:12} {statistics.median(xs):8.2f} µs CPU per answer  (min {min(xs):.2f} .. max {max(xs):.2f}, {len(xs)} runs)")
else:
    print(f"  {g:12} failed in every round")
EOF
    done
    python3 - ${cpu[overload-h3]} -- ${cpu[overload-h2]} -- ${cpu[oha-h3]:-} <<'EOF'
import statistics, sys
parts, cur = [], []
for a in sys.argv[1:] + ["--"]:
    if a == "--":
        parts.append([float(x) for x in cur if x != "-"]); cur = []
    else:
        cur.append(a)
h3, h2, oha = (parts + [[], [], []])[:3]
med = lambda xs: statistics.median(xs) if xs else None
if med(h3) and med(h2):
    print(f"  ratio overload h3 / overload h2: {med(h3) / med(h2):.2f} (goal <= 2)")
if med(h3) and med(oha):
    print(f"  ratio overload h3 / oha h3:      {med(h3) / med(oha):.2f} (goal <= 1)")
EOF
    unset cpu
done

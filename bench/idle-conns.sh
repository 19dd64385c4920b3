#!/usr/bin/env bash
# Memory per held keep-alive connection: N connections (100,000 by default) to nginx on
# loopback, each sending about one request a second, and the generator's RSS per connection:
# overload (each --io backend in IO), wrk and oha at the same count.
#
# Per connection = (RSS with N connections − RSS of the same tool holding 1 per thread) / N:
# what each connection adds, the tool's fixed start-up cost left out. VmRSS and VmHWM (its
# peak) from /proc/PID/status, read once every connection is established (counted with ss).
# Kernel memory of the sockets is not RSS: /proc/net/sockstat's line is printed beside.
#
# overload: closed loop, --users N --think 1s, over --source 127.0.0.1-127.0.0.250 (one source
# address has at most ~64,000 ports to one server). Each user holds its connection and sends,
# waits for the answer, thinks 1 s: 1 request/s per connection at most (fewer when the two
# cores cannot serve N requests/s: the figure printed says what each got).
# wrk: no rate; a delay script makes each connection wait 1 s between requests (bench/compare.py
# does the same). oha: -q N (N requests/s over N connections). Neither binds a source
# address, so each runs as ceil(N/60000) processes, each to its own loopback address
# (127.0.0.1, .2, …), their RSS added.
#
# Runs in a network namespace of its own (unshare --net): its loopback, port range, listen
# backlog and SYN queue are set there, nothing of the host's changes. Root only.
#
#   sudo bash bench/idle-conns.sh                          # N=100000 IO=epoll
#   sudo N=10000 bash bench/idle-conns.sh
#   sudo IO="epoll uring" TOOLS="overload" bash bench/idle-conns.sh
set -euo pipefail

N=${N:-100000}
IO=${IO:-epoll}
TOOLS=${TOOLS:-overload wrk oha}
THREADS=${THREADS:-2}
# Longest wait for every connection to be established, and how long they are held after.
WAIT=${WAIT:-180}
SETTLE=${SETTLE:-5}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release/overload}
OHA=${OHA:-$(command -v oha || echo /work/tools/oha/bin/oha)}
PORT=18080

if [ "$(id -u)" -ne 0 ]; then
    echo "idle-conns: skipped: needs root (a network namespace of its own)" >&2
    exit 77
fi
for t in nginx ss unshare; do
    command -v "$t" >/dev/null || { echo "idle-conns: skipped: no $t" >&2; exit 77; }
done
[ -x "$BIN" ] || { echo "idle-conns: $BIN missing: cargo build --release" >&2; exit 2; }

if [ -z "${IDLE_CONNS_NETNS:-}" ]; then
    exec unshare --net -- env IDLE_CONNS_NETNS=1 bash "$0" "$@"
fi

ip link set lo up
sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
sysctl -qw net.core.somaxconn=65535
sysctl -qw net.ipv4.tcp_max_syn_backlog=65535
# Root may raise the hard limit up to fs.nr_open: a shell's default (often 20,000 or less)
# would cap every tool below N.
ulimit -Hn "$(cat /proc/sys/fs/nr_open)" 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $((N + 100)) ]; then
    echo "idle-conns: the fd limit is $(ulimit -n) per process (no CAP_SYS_RESOURCE to raise it):" \
        "each process holds fewer than N connections; the table says how many were held" >&2
fi

WORK=$(mktemp -d /tmp/idle-conns.XXXXXX)
trap 'stop_all; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/logs"
conns_per_worker=$((N + 10000))
cat >"$WORK/nginx.conf" <<EOF
worker_processes 2;
worker_rlimit_nofile $((2 * conns_per_worker + 1000));
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log crit;
events { worker_connections $conns_per_worker; multi_accept on; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    client_body_temp_path $WORK/body; proxy_temp_path $WORK/proxy;
    fastcgi_temp_path $WORK/fastcgi; uwsgi_temp_path $WORK/uwsgi; scgi_temp_path $WORK/scgi;
    server {
        listen $PORT backlog=65535 reuseport;
        location / { return 200 "ok"; }
    }
}
EOF
nginx -p "$WORK" -c "$WORK/nginx.conf"
echo 'function delay() return 1000 end' >"$WORK/delay1s.lua"

PIDS=()
stop_all() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -INT "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]:-}"; do
        [ -n "$p" ] || continue
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$p" 2>/dev/null || true
    done
    PIDS=()
    [ -f "$WORK/nginx.pid" ] && [ "${1:-}" != keep-nginx ] && kill -QUIT "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
}

established() { ss -Htn state established "( dport = :$PORT )" | wc -l; }
# kB of a field (VmRSS, VmHWM) added over the given pids.
kb() {
    local f=$1 sum=0 v; shift
    for p in "$@"; do
        v=$(awk -v f="$f:" '$1 == f { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)
        sum=$((sum + ${v:-0}))
    done
    echo "$sum"
}

# Starts the command lines given (one per process), waits until `want` connections are
# established (or WAIT s), lets them settle, writes "held rss_kb hwm_kb" to $WORK/result, stops
# them and waits for their connections to close.
hold() {
    local want=$1; shift
    PIDS=()
    for cmd in "$@"; do
        bash -c "exec $cmd" >"$WORK/out.$((${#PIDS[@]}))" 2>&1 &
        PIDS+=($!)
    done
    local end=$((SECONDS + WAIT)) held
    while held=$(established); [ "$held" -lt "$want" ] && [ $SECONDS -lt $end ]; do sleep 1; done
    sleep "$SETTLE"
    held=$(established)
    echo "$held $(kb VmRSS "${PIDS[@]}") $(kb VmHWM "${PIDS[@]}")" >"$WORK/result"
    grep -h "TCP:" /proc/net/sockstat >"$WORK/sockstat"
    stop_all keep-nginx
    # The connections close before the next tool starts counting.
    end=$((SECONDS + 60))
    while [ "$(established)" -gt 0 ] && [ $SECONDS -lt $end ]; do sleep 1; done
}

# The command lines of a tool holding n connections (per_proc at most per process).
lines() {
    local tool=$1 n=$2 io=${3:-} procs per k url cmds=()
    procs=$(((n + 59999) / 60000))
    per=$(((n + procs - 1) / procs))
    case $tool in
        overload)
            local ioflag=""
            if "$BIN" run --help 2>/dev/null | grep -q -- '--io '; then ioflag="--io $io"; fi
            cmds+=("$BIN run http://127.0.0.1:$PORT/ --users $n --think 1s --threads $THREADS \
                --source 127.0.0.1-127.0.0.250 --connect-timeout 60s --timeout 60s -d 600s -q $ioflag")
            ;;
        wrk | oha)
            for k in $(seq 1 "$procs"); do
                local c=$per
                [ "$k" -eq "$procs" ] && c=$((n - per * (procs - 1)))
                url="http://127.0.0.$k:$PORT/"
                local t=$((THREADS / procs)); [ "$t" -ge 1 ] || t=1; [ "$t" -le "$c" ] || t=$c
                if [ "$tool" = wrk ]; then
                    cmds+=("wrk -t$t -c$c -d600s --timeout 60s -s $WORK/delay1s.lua $url")
                else
                    cmds+=("$OHA -c $c -q $c -z 600s --no-tui $url")
                fi
            done
            ;;
    esac
    printf '%s\n' "${cmds[@]}"
}

run_tool() {
    local label=$1 tool=$2 io=${3:-}
    local -a small big
    mapfile -t small < <(lines "$tool" "$THREADS" "$io")
    mapfile -t big < <(lines "$tool" "$N" "$io")
    hold "$THREADS" "${small[@]}"
    read -r h0 r0 w0 <"$WORK/result"
    hold "$N" "${big[@]}"
    read -r h1 r1 w1 <"$WORK/result"
    local per=$(( (r1 - r0) * 1024 / (h1 > 0 ? h1 : 1) ))
    local perw=$(( (w1 - w0) * 1024 / (h1 > 0 ? h1 : 1) ))
    printf '%-18s %9d %11s %11s %12d %12d   %s\n' "$label" "$h1" "$((r1 / 1024))" \
        "$((w1 / 1024))" "$per" "$perw" "$(cat "$WORK/sockstat")"
}

echo "idle-conns: N=$N threads=$THREADS, nginx 2 workers on 127.0.0.1:$PORT (netns of its own)"
printf '%-18s %9s %11s %11s %12s %12s   %s\n' tool held "RSS MB" "HWM MB" "B/conn RSS" "B/conn HWM" \
    "kernel (/proc/net/sockstat at N)"
for tool in $TOOLS; do
    case $tool in
        overload)
            for io in $IO; do
                if [ "$io" != epoll ] && ! "$BIN" run --help | grep -q -- '--io '; then
                    echo "overload --io $io: skipped: this build has no --io"
                    continue
                fi
                run_tool "overload ($io)" overload "$io"
            done
            ;;
        wrk)
            command -v wrk >/dev/null && run_tool wrk wrk || echo "wrk: skipped: not installed"
            ;;
        oha)
            [ -x "$OHA" ] && run_tool oha oha || echo "oha: skipped: not installed ($OHA)"
            ;;
    esac
done

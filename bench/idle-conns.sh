#!/usr/bin/env bash
# Memory per held keep-alive connection: N connections (100,000 by default) to nginx on
# loopback, each sending about one request a second, and the generator's RSS per connection:
# overload (each --io backend in IO), wrk and oha at the same count.
#
# Every tool runs as P = ceil(N/PER) processes, each holding its share (N/P connections), their
# RSS added: one mechanism for the three tools. Why split: a process holds at most its
# RLIMIT_NOFILE of descriptors, and a sandbox without CAP_SYS_RESOURCE cannot raise the hard
# limit (20,000 on the machine the figures come from). PER defaults to that hard limit less
# 1,000 (at most 60,000: one destination address gives a source address ~64,000 ports). nginx
# likewise: enough workers (reuseport, each at most PER connections) that none nears the limit.
#
# Per connection = (sum of the P processes' RSS holding N connections − sum of the RSS of the
# same P processes, same threads, holding one connection per thread) / connections held: what
# each connection adds, the processes' fixed start-up cost left out. VmRSS and VmHWM (its peak)
# from /proc/PID/status, read once every connection is established (counted with ss). Kernel
# memory of the sockets is not RSS: /proc/net/sockstat's TCP line is printed beside (both ends
# of each connection, the generator's and nginx's; mem in 4 KiB pages). Requests/s is what
# nginx answered over the SETTLE window (stub_status): it depends on the load of the machine,
# the RSS figures do not.
# A fixed cost touched only under load counts in the figure: --io uring's 8 MiB of receive
# buffers per thread (bench/README.md says how much of its figure that is).
#
# overload: closed loop, --users N/P --think 1s per process, each process over its own slice of
# --source 127.0.0.1-127.0.0.250. Each user holds its connection and sends, waits for the
# answer, thinks 1 s: 1 request/s per connection at most (fewer when the cores cannot serve N
# requests/s: the req/s column says what they got).
# wrk: no rate; a delay script makes each connection wait 1 s between requests (bench/compare.py
# does the same). oha: -q n (n requests/s over n connections). Neither binds a source
# address, so process k connects to its own loopback address 127.0.0.k: a destination address
# of its own gives it a port range of its own.
#
# Runs in a network namespace of its own (unshare --net): its loopback, port range, listen
# backlog and SYN queue are set there, nothing of the host's changes. Root only.
#
#   sudo bash bench/idle-conns.sh                          # N=100000 IO=epoll
#   sudo N=10000 bash bench/idle-conns.sh
#   sudo IO="epoll uring" TOOLS="overload" bash bench/idle-conns.sh
#   sudo PER=10000 bash bench/idle-conns.sh               # at most 10,000 per process
set -euo pipefail

N=${N:-100000}
IO=${IO:-epoll}
TOOLS=${TOOLS:-overload wrk oha}
# Threads in all, per tool: each of its P processes gets max(1, THREADS / P).
THREADS=${THREADS:-2}
# Longest wait for every connection to be established; then SETTLE s held (req/s measured there).
WAIT=${WAIT:-180}
SETTLE=${SETTLE:-10}
# The binaries: OVERLOAD (or BIN), NGINX, WRK, OHA name them where they are not on PATH.
BIN=${BIN:-${OVERLOAD:-$(cd "$(dirname "$0")/.." && pwd)/target/release/overload}}
OHA=${OHA:-$(command -v oha || echo /work/tools/oha/bin/oha)}
NGINX=${NGINX:-nginx}
WRK=${WRK:-wrk}
PORT=18080

if [ "$(id -u)" -ne 0 ]; then
    echo "idle-conns: skipped: needs root (a network namespace of its own)" >&2
    exit 77
fi
for t in "$NGINX" ss unshare curl; do
    command -v "$t" >/dev/null || { echo "idle-conns: skipped: no $t" >&2; exit 77; }
done
[ -x "$BIN" ] || { echo "idle-conns: $BIN missing: cargo build --release" >&2; exit 2; }
case $N in '' | *[!0-9]* | 0) echo "idle-conns: N=$N: a count of connections, ≥ 1" >&2; exit 2 ;; esac
for tool in $TOOLS; do
    case $tool in
        overload | wrk | oha) ;;
        *) echo "idle-conns: TOOLS: '$tool' is not one of overload, wrk, oha" >&2; exit 2 ;;
    esac
done
for tool in $TOOLS; do
    case $tool in
        overload | wrk | oha) ;;
    esac
done

if [ -z "${IDLE_CONNS_NETNS:-}" ]; then
    exec unshare --net -- env IDLE_CONNS_NETNS=1 bash "$0" "$@"
fi

ip link set lo up
sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
sysctl -qw net.core.somaxconn=65535
sysctl -qw net.ipv4.tcp_max_syn_backlog=65535
# Root with CAP_SYS_RESOURCE may raise the hard limit up to fs.nr_open; without it (a sandbox)
# the hard limit stays and PER follows it.
ulimit -Hn "$(cat /proc/sys/fs/nr_open)" 2>/dev/null || true
ulimit -n "$(ulimit -Hn)"
FDS=$(ulimit -n)
default_per=$((FDS - 1000))
[ "$default_per" -le 60000 ] || default_per=60000
PER=${PER:-$default_per}
case $PER in '' | *[!0-9]* | 0) echo "idle-conns: PER=$PER: connections per process, ≥ 1" >&2; exit 2 ;; esac
if [ "$PER" -gt $((FDS - 500)) ] || [ "$PER" -gt 60000 ]; then
    echo "idle-conns: PER=$PER: above this process's fd limit ($FDS) less 500, or above 60,000" >&2
    exit 2
fi
P=$(((N + PER - 1) / PER))
if [ "$P" -gt 250 ]; then
    echo "idle-conns: N=$N needs $P processes of PER=$PER: more than the 250 loopback addresses" >&2
    exit 2
fi
TPP=$((THREADS / P)); [ "$TPP" -ge 1 ] || TPP=1

WORK=$(mktemp -d /tmp/idle-conns.XXXXXX)
trap 'stop_all; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/logs"
# nginx: reuseport spreads connections over the workers by a hash of the four-tuple, so each
# worker's share varies; at most 3/4 of PER on average leaves the busiest far from its limit.
WORKERS=$(((N * 4 + PER * 3 - 1) / (PER * 3)))
[ "$WORKERS" -ge 2 ] || WORKERS=2
cat >"$WORK/nginx.conf" <<EOF
worker_processes $WORKERS;
worker_rlimit_nofile $((PER + 400));
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log crit;
events { worker_connections $PER; multi_accept on; }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    client_body_temp_path $WORK/body; proxy_temp_path $WORK/proxy;
    fastcgi_temp_path $WORK/fastcgi; uwsgi_temp_path $WORK/uwsgi; scgi_temp_path $WORK/scgi;
    server {
        listen $PORT backlog=65535 reuseport;
        location / { return 200 "ok"; }
        location = /nginx_status { stub_status; }
    }
}
EOF
# env -u: nginx reads a variable NGINX itself (sockets inherited on an upgrade).
env -u NGINX "$NGINX" -p "$WORK" -c "$WORK/nginx.conf"
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
# Requests nginx has answered so far (stub_status; its own requests are a handful).
answered() {
    curl -s --max-time 10 "http://127.0.0.1:$PORT/nginx_status" | awk 'NR == 3 { print $3 }'
}
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
# established (or WAIT s), holds them SETTLE s, writes "held rss_kb hwm_kb req_per_s" to
# $WORK/result, stops them and waits for their connections to close.
hold() {
    local want=$1; shift
    PIDS=()
    for cmd in "$@"; do
        bash -c "exec $cmd" >"$WORK/out.${#PIDS[@]}" 2>&1 &
        PIDS+=($!)
    done
    local end=$((SECONDS + WAIT)) held
    while held=$(established); [ "$held" -lt "$want" ] && [ $SECONDS -lt $end ]; do sleep 1; done
    local a0 a1 t0 t1
    a0=$(answered); t0=$(date +%s%N)
    sleep "$SETTLE"
    a1=$(answered); t1=$(date +%s%N)
    held=$(established)
    echo "$held $(kb VmRSS "${PIDS[@]}") $(kb VmHWM "${PIDS[@]}")" \
        "$(( (${a1:-0} - ${a0:-0}) * 1000000000 / (t1 - t0) ))" >"$WORK/result"
    grep -h "TCP:" /proc/net/sockstat >"$WORK/sockstat"
    stop_all keep-nginx
    # The connections close before the next tool starts counting.
    end=$((SECONDS + 60))
    while [ "$(established)" -gt 0 ] && [ $SECONDS -lt $end ]; do sleep 1; done
}

# The command lines of a tool holding n connections in all, over its P processes (TPP threads
# each): process k (1..P) holds its share; overload's takes the k-th slice of the 250 source
# addresses, wrk's and oha's connect to 127.0.0.k.
lines() {
    local tool=$1 n=$2 io=${3:-} k c lo hi ioflag="" cmds=()
    if [ "$tool" = overload ] && "$BIN" run --help-all 2>/dev/null | grep -q -- '--io '; then
        ioflag="--io $io"
    fi
    for k in $(seq 1 "$P"); do
        c=$(( n * k / P - n * (k - 1) / P ))
        case $tool in
            overload)
                lo=$(( 1 + 250 * (k - 1) / P )); hi=$(( 250 * k / P ))
                cmds+=("$BIN run http://127.0.0.1:$PORT/ --users $c --think 1s --threads $TPP \
--source 127.0.0.$lo-127.0.0.$hi --connect-timeout 60s --timeout 60s -d 600s -q $ioflag")
                ;;
            wrk)
                cmds+=("$WRK -t$TPP -c$c -d600s --timeout 60s -s $WORK/delay1s.lua http://127.0.0.$k:$PORT/")
                ;;
            oha)
                cmds+=("$OHA -c $c -q $c -z 600s --no-tui http://127.0.0.$k:$PORT/")
                ;;
        esac
    done
    printf '%s\n' "${cmds[@]}"
}

run_tool() {
    local label=$1 tool=$2 io=${3:-}
    local -a small big
    mapfile -t small < <(lines "$tool" $((P * TPP)) "$io")
    mapfile -t big < <(lines "$tool" "$N" "$io")
    hold $((P * TPP)) "${small[@]}"
    read -r h0 r0 w0 _ <"$WORK/result"
    hold "$N" "${big[@]}"
    read -r h1 r1 w1 q1 <"$WORK/result"
    local per=$(( (r1 - r0) * 1024 / (h1 > 0 ? h1 : 1) ))
    local perw=$(( (w1 - w0) * 1024 / (h1 > 0 ? h1 : 1) ))
    printf '%-16s %9d %9d %8s %8s %10d %10d %9d   %s\n' "$label" "$h0" "$h1" "$((r1 / 1024))" \
        "$((w1 / 1024))" "$per" "$perw" "$q1" "$(cat "$WORK/sockstat")"
    echo "  ${big[0]}  (× $P processes)"
    if [ "$h1" -lt "$N" ]; then
        # Fewer held than asked: what the processes said (an fd limit, a refused connect, …).
        for f in "$WORK"/out.*; do
            [ -s "$f" ] && echo "  process ${f##*.}: $(tail -n 1 "$f")"
        done
    fi
}

echo "idle-conns: N=$N as $P processes of at most PER=$PER connections ($TPP threads each; fd" \
    "limit $FDS), nginx $WORKERS workers on :$PORT (netns of its own), held ${SETTLE}s"
printf '%-16s %9s %9s %8s %8s %10s %10s %9s   %s\n' tool "held at 1" held "RSS MB" "HWM MB" \
    "B/conn RSS" "B/conn HWM" "req/s" "kernel (/proc/net/sockstat at N)"
for tool in $TOOLS; do
    case $tool in
        overload)
            for io in $IO; do
                if [ "$io" != epoll ] && ! "$BIN" run --help-all | grep -q -- '--io '; then
                    echo "overload --io $io: skipped: this build has no --io"
                    continue
                fi
                run_tool "overload ($io)" overload "$io"
            done
            ;;
        wrk)
            command -v "$WRK" >/dev/null && run_tool wrk wrk || echo "wrk: skipped: not installed"
            ;;
        oha)
            [ -x "$OHA" ] && run_tool oha oha || echo "oha: skipped: not installed ($OHA)"
            ;;
    esac
done

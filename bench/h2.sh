#!/usr/bin/env bash
# HTTP/2 generator efficiency: CPU per request of overload vs h2load (nghttp2-client), and
# vs `oha --http2` when oha is installed, at 10 connections x 10 streams (closed loop: 100
# requests in flight), against nginx h2c on 127.0.0.1. nginx is pinned to CPU 0, every
# generator to CPU 1 and one thread; all run in this one invocation, so the ratios compare
# like with like. Every run is bounded by `timeout`.
#
#   bench/h2.sh [SECONDS] [ROUNDS]      (defaults: 10 s, 3 rounds; the median is reported)
#
# Needs nginx with http_v2_module, h2load (apt-get install nghttp2-client), optionally oha
# (/work/shared/bench/README.md: cargo install oha --locked).
set -euo pipefail
D=${1:-10}
ROUNDS=${2:-3}
BIN=${OVERLOAD:-$(dirname "$0")/../target/release/overload}
PORT=${PORT:-18480}
URL="http://127.0.0.1:$PORT/"
DIR=$(mktemp -d)
chmod 755 "$DIR"   # mktemp makes it 0700: nginx's workers (nobody) must read index.html
trap 'nginx -c "$DIR/nginx.conf" -p "$DIR" -s stop 2>/dev/null || true; rm -rf "$DIR"' EXIT

command -v h2load >/dev/null || { echo "h2load missing: apt-get install nghttp2-client" >&2; exit 2; }
mkdir -p "$DIR/logs"
printf 'OK overload bench: a small body of about one hundred bytes, as the target root page......\n' > "$DIR/index.html"
cat > "$DIR/nginx.conf" <<CONF
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/logs/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  http2_max_concurrent_streams 128;
  client_body_temp_path $DIR; proxy_temp_path $DIR; fastcgi_temp_path $DIR;
  uwsgi_temp_path $DIR; scgi_temp_path $DIR;
  server {
    listen 127.0.0.1:$PORT http2;
    root $DIR;
    location / { try_files /index.html =404; }
  }
}
CONF
taskset -c 0 nginx -c "$DIR/nginx.conf" -p "$DIR"
sleep 0.5

# run NAME CMD...: prints "NAME cpu_s requests"
run() {
    local name=$1; shift
    local out="$DIR/$name.out"
    /usr/bin/time -o "$DIR/time" -f "%U %S" taskset -c 1 timeout -k 5 $((D + 30)) "$@" > "$out" 2>&1 || true
    local cpu
    cpu=$(awk '{print $1 + $2}' "$DIR/time" | tail -1)
    local n
    case $name in
        overload) n=$(python3 -c "import json;print(sum(v for k,v in json.load(open('$DIR/o.json'))['statuses'].items() if k.startswith('2')))") ;;
        h2load) n=$(awk '/^requests:/ {print $8}' "$out") ;;
        oha) n=$(python3 -c "import json;d=json.load(open('$out'));print(sum(v for k,v in d['statusCodeDistribution'].items() if k.startswith('2')))") ;;
    esac
    echo "$name $cpu $n"
}

tools=(overload h2load)
command -v oha >/dev/null && tools+=(oha)
: > "$DIR/results"
for r in $(seq "$ROUNDS"); do
    for t in "${tools[@]}"; do
        case $t in
            overload) run overload "$BIN" run "$URL" --http 2 --users 100 --streams 10 \
                          --threads 1 --duration "${D}s" -q --json "$DIR/o.json" ;;
            h2load) run h2load h2load -c 10 -m 10 -t 1 -D "$D" "$URL" ;;
            oha) run oha oha --http2 -z "${D}s" -c 10 -p 10 --no-tui --output-format json "$URL" ;;
        esac
    done >> "$DIR/results"
done
python3 - "$DIR/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, cpu, n = line.split()
    if float(n) > 0:
        rows.setdefault(name, []).append((float(cpu) * 1e6 / float(n), float(n)))
us = {k: statistics.median(v[0] for v in vs) for k, vs in rows.items()}
print(f"{'tool':<10}{'CPU us/request':>16}{'requests/run':>14}{'vs overload':>13}")
for k, vs in rows.items():
    print(f"{k:<10}{us[k]:>16.2f}{statistics.median(v[1] for v in vs):>14.0f}"
          f"{us[k] / us['overload']:>13.2f}")
PY

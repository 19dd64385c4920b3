#!/usr/bin/env bash
# The cost of pushing metrics: the generator's CPU per request with and without
# --prometheus-remote-write, in one invocation (rounds alternate, so the machine's noise
# falls on both). The target (overload target, 1 thread) is pinned to CPU 0, the generator
# (open loop, 1 thread) to CPU 1, a local Prometheus (the sink, its remote-write receiver on)
# to whatever is left. CPU = user + sys of the generator process (/usr/bin/time), per
# completed request. The push's own cost is measured apart, in the same run, on the threads'
# own clocks (the run's --json): the push thread's CPU (`push[].cpu_ms`, `push-prometheus`
# reading CLOCK_THREAD_CPUTIME_ID after each exchange) and the frames' making on the runner's
# thread (`push[].frames_cpu_ms`) against the load threads' (`generator.cpu_ms`): free of
# the noise that other processes put on the whole process's figure. Also each thread's CPU
# ticks from /proc one second before the end. Every run is bounded by `timeout`.
#
#   bench/push-cpu.sh [SECONDS] [ROUNDS] [RATE]     (defaults: 20 s, 3 rounds, 5000 req/s)
#
# Needs a release build (cargo build --release; OVERLOAD=path overrides) and prometheus
# (apt-get install prometheus).
set -euo pipefail
D=${1:-20}
ROUNDS=${2:-3}
RATE=${3:-5000}
BIN=${OVERLOAD:-$(dirname "$0")/../target/release/overload}
TPORT=${TPORT:-18581}
PPORT=${PPORT:-18590}
DIR=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"' EXIT

command -v prometheus >/dev/null || { echo "prometheus missing: apt-get install prometheus" >&2; exit 2; }
[ -x "$BIN" ] || { echo "$BIN missing: cargo build --release" >&2; exit 2; }

printf 'global:\n  scrape_interval: 1m\n' > "$DIR/prometheus.yml"
prometheus --web.enable-remote-write-receiver --storage.tsdb.path="$DIR/data" \
  --web.listen-address=127.0.0.1:$PPORT --config.file="$DIR/prometheus.yml" \
  >"$DIR/prometheus.log" 2>&1 &
PIDS+=($!)
taskset -c 0 "$BIN" target --listen 127.0.0.1:$TPORT --threads 1 >"$DIR/target.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$PPORT/-/ready" >/dev/null 2>&1 && break
  sleep 0.5
done

# The CPU ticks (1/100 s) of each thread of the generator one second before its run ends:
# the push thread's own cost, apart from the machine's noise on the whole process.
threads() {
  local pid=$1
  sleep $((D - 1))
  # timeout -> time -> overload (taskset execs it): follow the children down to it.
  while [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" != overload ]; do
    pid=$(ps --ppid "$pid" -o pid= | head -1 | tr -d ' ')
  done
  [ -n "$pid" ] || return 0
  for t in /proc/"$pid"/task/*; do
    printf '%s=%s ' "$(cat "$t/comm")" "$(awk '{print $14 + $15}' "$t/stat")"
  done > "$DIR/threads"
}

# One run: prints "cpu_us_per_request responses push_ms frames_ms load_ms".
one() {
  local json="$DIR/run.json"
  timeout $((D + 60)) /usr/bin/time -f '%U %S' -o "$DIR/time" \
    taskset -c 1 "$BIN" run -R "$RATE" -d "${D}s" --threads 1 --connections 50 -q \
    --json "$json" --name push-bench "$@" "http://127.0.0.1:$TPORT/" >/dev/null &
  local timer=$!
  : > "$DIR/threads"
  threads "$timer" &
  wait "$timer"
  wait
  python3 - "$json" "$DIR/time" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
n = r["responses"]
push = r.get("push") or [{}]
print(f"{(u + s) * 1e6 / max(n, 1):.3f} {n} {push[0].get('cpu_ms', 0):.2f} "
      f"{push[0].get('frames_cpu_ms', 0):.2f} {r['generator']['cpu_ms']:.1f}")
PY
}

without=(); with=(); shares=()
for i in $(seq "$ROUNDS"); do
  read -r c n _ _ _ < <(one); without+=("$c"); echo "round $i without: $c µs/request ($n responses)"
  read -r c n pm fm lm < <(one --prometheus-remote-write "http://127.0.0.1:$PPORT/api/v1/write")
  with+=("$c"); echo "round $i with:    $c µs/request ($n responses)"
  share=$(python3 -c "print(f'{($pm + $fm) / max($lm, 1e-9) * 100:.3f}')")
  shares+=("$share")
  echo "  push thread $pm ms + frames $fm ms, load threads $lm ms: the push is $share% of the load's CPU"
  echo "  CPU ticks (10 ms) by thread at $((D - 1)) s: $(cat "$DIR/threads")"
done
echo "the push's own CPU against the load threads', each round: ${shares[*]} (%)"
python3 - "${without[*]}" "${with[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"median CPU per request: without {ma:.3f} µs [{min(a):.3f}-{max(a):.3f}], "
      f"with --prometheus-remote-write {mb:.3f} µs [{min(b):.3f}-{max(b):.3f}]: "
      f"{(mb / ma - 1) * 100:+.2f}%")
PY

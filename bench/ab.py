#!/usr/bin/env python3
"""CPU per request of two overload binaries (before and after a change), alternated in one run.

Same nginx, same pinning as compare.py (nginx on CPU 0, generator on CPU 1); each round runs
A then B (the order flips every round, so a drift in machine load hits both alike). The
figure is the median over rounds of CPU µs (user + sys) per completed request, and B/A.

  python3 bench/ab.py BEFORE_BINARY AFTER_BINARY [--rounds N] [--duration S] [--scenarios a,b]

a: closed loop, 50 keep-alive connections; b: open loop 5,000 req/s over 50 connections.
All traffic goes to 127.0.0.1; every run is bounded by `timeout`.
"""
import argparse, os, shutil, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (nginx control and timing, shared with the tool comparison)


def cmd(binary, scenario, d, json_path):
    load = {"a": ["--users", "50"], "b": ["--rate", "5000", "--connections", "50"]}[scenario]
    return [binary, "run", compare.URL, *load, "--duration", f"{d}s", "--threads", "1",
            "-q", "--json", json_path]


# std's TcpStream reads with recv (recvfrom) and writes with send (sendto); `read` is the timerfd.
EVENTS = ["task-clock", "context-switches", "syscalls:sys_enter_epoll_wait",
          "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_sendto", "syscalls:sys_enter_read"]


def perf_timed(cmdline, limit):
    """Runs cmdline on CPU 1 under perf stat; returns (output, {event: count})."""
    pfile = os.path.join(compare.RUN, "perf.txt")
    full = ["taskset", "-c", "1", "perf", "stat", "-x", ",", "-o", pfile, "-e", ",".join(EVENTS),
            "--", "timeout", "-k", "5", str(limit)] + cmdline
    r = subprocess.run(full, capture_output=True, text=True)
    counts = {}
    for line in open(pfile):
        f = line.strip().split(",")
        if len(f) > 2 and f[2] in EVENTS:
            counts[f[2]] = float(f[0])
    if "task-clock" not in counts:
        sys.exit(f"perf stat gave no task-clock: {open(pfile).read()[:300]}")
    return r.stdout + r.stderr, counts


def measure(cmdline, limit):
    """(output, CPU seconds, {extra per-run counts})."""
    if shutil.which("perf"):
        out, c = perf_timed(cmdline, limit)
        return out, c.pop("task-clock") / 1e3, c
    out, _, cpu, _ = compare.timed(cmdline, limit)
    return out, cpu, {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--scenarios", default="a,b")
    a = ap.parse_args()
    for b in (a.before, a.after):
        if not os.access(b, os.X_OK):
            sys.exit(f"{b}: not an executable")
    compare.start_nginx()
    try:
        j = os.path.join(compare.RUN, "o.json")
        print(f"# before/after, {a.rounds} rounds of {a.duration}s, load {os.getloadavg()[0]:.2f}\n")
        print("| scenario | before µs/req | after µs/req | after/before | per-round ratios |")
        print("|---|---|---|---|---|")
        counts = []
        for s in a.scenarios.split(","):
            per = {"before": [], "after": []}
            events = {"before": {}, "after": {}}
            for r in range(a.rounds):
                order = [("before", a.before), ("after", a.after)]
                if r % 2:
                    order.reverse()
                for name, binary in order:
                    out, cpu, extra = measure(cmd(binary, s, a.duration, j), a.duration + 30)
                    n = compare.overload_count(j)
                    if n == 0:
                        sys.exit(f"{name} completed no request in scenario {s}: {out.strip()[:300]}")
                    per[name].append(cpu / n * 1e6)
                    for e, v in extra.items():
                        events[name].setdefault(e, []).append(v / n)
                    time.sleep(1)
            ratios = [x / y for x, y in zip(per["after"], per["before"])]
            mb, ma = statistics.median(per["before"]), statistics.median(per["after"])
            print(f"| {s} | {mb:.2f} [{min(per['before']):.2f}-{max(per['before']):.2f}] "
                  f"| {ma:.2f} [{min(per['after']):.2f}-{max(per['after']):.2f}] "
                  f"| {ma / mb:.3f} (median of rounds {statistics.median(ratios):.3f}) "
                  f"| {' '.join(f'{x:.3f}' for x in ratios)} |", flush=True)
            for e in events["before"]:
                b, f = statistics.median(events["before"][e]), statistics.median(events["after"][e])
                counts.append(f"| {s} | {e.split(':')[-1]} | {b:.3f} | {f:.3f} |")
        if counts:
            print("\n| scenario | per request (median) | before | after |\n|---|---|---|---|")
            print("\n".join(counts))
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        compare.stop_nginx()


if __name__ == "__main__":
    main()

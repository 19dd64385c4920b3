#!/usr/bin/env python3
"""CPU per request of two overload binaries (before and after a change), alternated in one run.

Same nginx, same pinning as compare.py (nginx on CPU 0, generator on CPU 1); each round runs
A then B (the order flips every round, so a drift in machine load hits both alike). The
figure is the median over rounds of CPU µs (user + sys) per completed request, and B/A.

  python3 bench/ab.py BEFORE_BINARY AFTER_BINARY [--rounds N] [--duration S] [--scenarios a,b]

a: closed loop, 50 keep-alive connections; b: open loop 5,000 req/s over 50 connections.
All traffic goes to 127.0.0.1; every run is bounded by `timeout`.
"""
import argparse, os, statistics, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (nginx control and timing, shared with the tool comparison)


def cmd(binary, scenario, d, json_path):
    load = {"a": ["--users", "50"], "b": ["--rate", "5000", "--connections", "50"]}[scenario]
    return [binary, "run", compare.URL, *load, "--duration", f"{d}s", "--threads", "1",
            "-q", "--json", json_path]


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
        for s in a.scenarios.split(","):
            per = {"before": [], "after": []}
            for r in range(a.rounds):
                order = [("before", a.before), ("after", a.after)]
                if r % 2:
                    order.reverse()
                for name, binary in order:
                    out, wall, cpu, rss = compare.timed(cmd(binary, s, a.duration, j), a.duration + 30)
                    n = compare.overload_count(j)
                    if n == 0:
                        sys.exit(f"{name} completed no request in scenario {s}: {out.strip()[:300]}")
                    per[name].append(cpu / n * 1e6)
                    time.sleep(1)
            ratios = [x / y for x, y in zip(per["after"], per["before"])]
            mb, ma = statistics.median(per["before"]), statistics.median(per["after"])
            print(f"| {s} | {mb:.2f} [{min(per['before']):.2f}-{max(per['before']):.2f}] "
                  f"| {ma:.2f} [{min(per['after']):.2f}-{max(per['after']):.2f}] "
                  f"| {ma / mb:.3f} (median of rounds {statistics.median(ratios):.3f}) "
                  f"| {' '.join(f'{x:.3f}' for x in ratios)} |", flush=True)
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        compare.stop_nginx()


if __name__ == "__main__":
    main()

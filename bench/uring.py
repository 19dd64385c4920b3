#!/usr/bin/env python3
"""io_uring against epoll: CPU per request of `overload --io uring` and `--io epoll`, beside
the epoll floor (bench/floor.c: one send, one recv per request, no parsing, no timing) and wrk.

Same pinning as compare.py and tls.py: nginx (one worker, bench/nginx-tls.conf: 100-byte
answers over plain HTTP on 18180, HTTPS on 18543, HTTP/2 over TLS on 18544) on CPU 0, every
generator on CPU 1. The figure is the generator's CPU (perf stat's task-clock where perf
works, else user + sys from /usr/bin/time) per completed request. Rounds are interleaved (the
order rotates every round, so a drift in the machine's load hits every tool alike); ratios are
taken within each round, and the table gives their median with the spread [min-max].

  python3 bench/uring.py [--rounds N] [--duration S] [--scenarios k,o,s,2]

k: HTTP/1.1 keep-alive, 50 connections, closed loop: floor, wrk -t1 -c50, overload --users 50
   --threads 1 on epoll and on io_uring.
o: open loop 20,000 req/s over 50 connections: epoll vs io_uring, with send lag p99.
s: HTTPS keep-alive, 50 connections, closed loop: epoll vs io_uring.
2: HTTP/2 over TLS, 10 connections x 10 streams: epoll vs io_uring.

OVERLOAD_BEFORE=PATH adds "epoll before" (another build: with --io epoll where it has --io) to
k and o, for `--io epoll` against the build before the backend seam. All traffic goes to
127.0.0.1; every run is bounded by `timeout`.
"""
import argparse, json, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (nginx control, counts)
import ab  # noqa: E402  (perf stat task-clock, or /usr/bin/time)
import tls  # noqa: E402  (nginx with the TLS ports)

BEFORE = os.environ.get("OVERLOAD_BEFORE")


def before_io():
    """`--io epoll` for a before build that has --io (its auto runs the closed loop on
    io_uring: "epoll before" would not be epoll); nothing for one from before the seam."""
    r = compare.sh([BEFORE, "run", "--help-all"])
    return "epoll" if "--io " in r.stdout else None
# io_uring's one syscall per loop turn, beside epoll's.
ab.EVENTS = ab.EVENTS + ["syscalls:sys_enter_io_uring_enter", "syscalls:sys_enter_writev"]


def floor_count(out):
    m = compare.re.search(r"(\d+) requests in", out)
    return int(m.group(1)) if m else 0


def build_floor():
    """FLOOR=PATH: a floor binary built beforehand (a machine without a C compiler)."""
    if os.environ.get("FLOOR"):
        return os.environ["FLOOR"]
    exe = os.path.join(compare.RUN, "floor")
    src = os.path.join(compare.HERE, "floor.c")
    r = compare.sh(["cc", "-O2", "-o", exe, src])
    if r.returncode != 0:
        sys.exit(f"cc floor.c failed: {r.stderr.strip()}")
    return exe


def tools(scenario, d, floor):
    j = os.path.join(compare.RUN, "o.json")
    done = lambda o: compare.overload_count(j)  # noqa: E731

    def ov(url, *args, binary=compare.OVERLOAD, io=None):
        c = [binary, "run", url, "--duration", f"{d}s", "--threads", "1", "-q", "--json", j]
        return c + list(args) + (["--io", io] if io else [])

    if scenario == "k":
        t = {
            "floor": ([floor, "127.0.0.1", "18180", "/100b", "50", str(d)], floor_count),
            "wrk": ([compare.WRK, "-t1", "-c50", f"-d{d}s", tls.PLAIN], compare.wrk_count),
            "epoll": (ov(tls.PLAIN, "--users", "50", io="epoll"), done),
            "uring": (ov(tls.PLAIN, "--users", "50", io="uring"), done),
        }
        if BEFORE:
            t["epoll before"] = (ov(tls.PLAIN, "--users", "50", binary=BEFORE, io=before_io()),
                                 done)
        return t
    if scenario == "o":
        load = ["--rate", "20000", "--connections", "50", "--arrival", "constant"]
        t = {
            "epoll": (ov(tls.PLAIN, *load, io="epoll"), done),
            "uring": (ov(tls.PLAIN, *load, io="uring"), done),
        }
        if BEFORE:
            t["epoll before"] = (ov(tls.PLAIN, *load, binary=BEFORE, io=before_io()), done)
        return t
    if scenario == "s":
        return {io: (ov(tls.URL, "--users", "50", "--insecure", io=io), done)
                for io in ("epoll", "uring")}
    if scenario == "2":
        args = ["--http", "2", "--users", "100", "--streams", "10", "--insecure"]
        return {io: (ov(tls.URL_H2, *args, io=io), done) for io in ("epoll", "uring")}
    sys.exit(f"unknown scenario {scenario}")


TITLES = {
    "k": "HTTP/1.1 keep-alive, 50 connections, closed loop",
    "o": "open loop 20,000 req/s, 50 connections",
    "s": "HTTPS keep-alive, 50 connections, closed loop",
    "2": "HTTP/2 over TLS, 10 connections x 10 streams",
}
# The ratios each scenario reports: (numerator, denominator).
RATIOS = {
    "k": [("uring", "floor"), ("uring", "wrk"), ("uring", "epoll"), ("epoll", "floor"),
          ("wrk", "floor"), ("epoll", "epoll before")],
    "o": [("uring", "epoll"), ("epoll", "epoll before")],
    "s": [("uring", "epoll")],
    "2": [("uring", "epoll")],
}


def spread(xs):
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}-{max(xs):.3f}]"


def run(scenario, rounds, d, floor):
    ts = tools(scenario, d, floor)
    names = [n for n in ts if n != "wrk" or compare.available("wrk")]
    per = {n: [] for n in names}
    lag = {n: [] for n in names}
    calls = {n: {} for n in names}
    j = os.path.join(compare.RUN, "o.json")
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            cmd, count = ts[name]
            if os.path.exists(j):
                os.remove(j)
            out, cpu, extra = ab.measure(cmd, d + 30)
            n = count(out)
            if n == 0:
                sys.exit(f"{name} completed no request in {scenario}: {out.strip()[:300]}")
            per[name].append(cpu / n * 1e6)
            for e, v in extra.items():
                calls[name].setdefault(e, []).append(v / n)
            if os.path.exists(j) and name != "floor" and name != "wrk":
                lag[name].append(json.load(open(j))["send_lag_ms"]["p99"])
            time.sleep(1)
    print(f"## {scenario}. {TITLES[scenario]}\n")
    print("| generator | CPU µs/request | send lag p99 ms | syscalls per request |")
    print("|---|---|---|---|")
    for n in names:
        sc = "  ".join(f"{e.split(':')[-1].replace('sys_enter_', '')} "
                       f"{statistics.median(v):.2f}" for e, v in calls[n].items()
                       if e.startswith("syscalls") and statistics.median(v) > 0.005)
        lg = spread(lag[n]) if lag[n] else "-"
        print(f"| {n} | {spread(per[n])} | {lg} | {sc or '-'} |")
    print("\n| ratio (within each round) | median [min-max] |\n|---|---|")
    for a, b in RATIOS[scenario]:
        if per.get(a) and per.get(b):
            print(f"| {a} / {b} | {spread([x / y for x, y in zip(per[a], per[b])])} |")
    print(flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--scenarios", default="k,o,s,2")
    a = ap.parse_args()
    if not os.path.exists(compare.OVERLOAD):
        sys.exit(f"{compare.OVERLOAD} not found: run `cargo build --release` first")
    floor = build_floor()
    tls.start_nginx_tls()
    try:
        print(f"# io_uring vs epoll ({a.rounds} rounds of {a.duration}s, interleaved; "
              f"load average {os.getloadavg()[0]:.2f} at the start)\n")
        for s in a.scenarios.split(","):
            run(s, a.rounds, a.duration, floor)
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        compare.stop_nginx()


if __name__ == "__main__":
    main()

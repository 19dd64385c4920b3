#!/usr/bin/env python3
"""What a scenario costs: CPU per request and memory per user, beside a plain URL run and wrk.

Target: nginx (1 worker, bench/nginx-scenario.conf) on 127.0.0.1:18180 pinned to CPU 0,
serving /page: 100 bytes with a token in it, and two Set-Cookie headers. Every generator runs
pinned to CPU 1 under /usr/bin/time (bench/compare.py's `timed`), 50 keep-alive users, one
thread; the tools alternate within each round, so a drift of the machine hits all alike.

  python3 bench/scenario.py [--rounds N] [--duration S] [--users 10000] [--parts cpu,mem]

cpu: CPU µs per 2xx answer of
  plain    overload run URL (the URL list path)
  extract  a scenario of two requests, each extracting the token (a regex over the body)
           into the next one's URL, cookies kept and sent
  nothing  the same scenario's requests extracting nothing (cookies still kept and sent)
  wrk      wrk -t1 -c50 on the URL
  bars: extract <= 1.5x plain; nothing <= wrk
mem: RSS of the nothing scenario with --users N at 1 request/s each (think 1 s), and with 50:
  (RSS(N) - RSS(50)) / (N - 50) per user, jar and connection slot included; bar <= 10 KB.
  The same for a plain run, to tell the jar's share from the connection's.
All traffic goes to 127.0.0.1; every run is bounded by `timeout`.
"""
import argparse, os, shutil, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (timing under /usr/bin/time, 2xx counts, the run folder)

HERE = compare.HERE
OVERLOAD = compare.OVERLOAD
RUN = compare.RUN
med = compare.med
BASE = "http://127.0.0.1:18180"
URL = BASE + "/page"
# 100 bytes with the token that the extract scenario's regex takes.
PAGE = ('<p data-t="t0123456789">' + "a" * 100)[:99] + "\n"

EXTRACT = """
[vars]
tok = "t0"

[[request]]
name = "first"
url = "/page?t=${tok}"
[[request.extract]]
var = "tok"
regex = 'data-t="([a-z0-9]+)"'

[[request]]
name = "second"
url = "/page?t=${tok}"
[[request.extract]]
var = "tok"
regex = 'data-t="([a-z0-9]+)"'
"""

NOTHING = """
[vars]
tok = "t0"

[[request]]
name = "first"
url = "/page?t=${tok}"

[[request]]
name = "second"
url = "/page?t=${tok}"
"""


def start_nginx():
    for d in ("www", "logs", "tmp", "conf"):
        os.makedirs(os.path.join(RUN, d), exist_ok=True)
    with open(os.path.join(RUN, "www", "page"), "w") as f:
        f.write(PAGE)
    shutil.copy(os.path.join(HERE, "nginx-scenario.conf"), os.path.join(RUN, "conf", "nginx.conf"))
    r = compare.sh(["taskset", "-c", "0", "nginx", "-p", RUN + "/", "-c", "conf/nginx.conf",
                    "-e", "logs/error.log"])
    if r.returncode != 0:
        sys.exit(f"nginx failed: {r.stderr.strip()}")
    time.sleep(0.5)


def scenario_file(name, text):
    p = os.path.join(RUN, name + ".toml")
    with open(p, "w") as f:
        f.write(text)
    return p


def overload(args, d):
    j = os.path.join(RUN, "o.json")
    return ([OVERLOAD, "run", *args, "--duration", f"{d}s", "--threads", "1", "-q", "--json", j],
            lambda out: checked_count(j))


def checked_count(path):
    """2xx answers; a run with errors (an extraction that failed…) is said, not hidden."""
    import json
    try:
        errors = json.load(open(path)).get("errors") or {}
    except (OSError, ValueError):
        errors = {"no --json output": 1}
    if errors:
        print(f"warning: errors in a run: {errors}", file=sys.stderr)
    n = compare.overload_count(path)
    # A later run that writes no JSON must not be counted with this one's.
    if os.path.exists(path):
        os.remove(path)
    return n


def cpu_tools(d):
    ex, no = scenario_file("extract", EXTRACT), scenario_file("nothing", NOTHING)
    users = ["--users", "50"]
    return {
        "plain": overload([URL, *users], d),
        "extract": overload(["--scenario", ex, BASE, *users], d),
        "nothing": overload(["--scenario", no, BASE, *users], d),
        "wrk": (["wrk", "-t1", "-c50", f"-d{d}s", URL], compare.wrk_count),
    }


def cpu(rounds, d):
    tools = cpu_tools(d)
    per = {t: [] for t in tools}
    rps = {t: [] for t in tools}
    for _ in range(rounds):
        for t, (cmd, count) in tools.items():
            if t == "wrk" and not shutil.which("wrk"):
                continue
            out, wall, c, _ = compare.timed(cmd, d + 30)
            n = count(out)
            if n > 0:
                per[t].append(c / n * 1e6)
                rps[t].append(n / wall)
            time.sleep(1)
    print(f"## CPU per request ({rounds} rounds of {d} s, median [min-max])\n")
    print("| run | answers/s | CPU µs/req | / plain | / wrk |\n|---|---|---|---|---|")
    p, w = med(per["plain"]), med(per["wrk"])
    for t in tools:
        if not per[t]:
            continue
        m = med(per[t])
        print(f"| {t} | {med(rps[t]):,.0f} | {m:.2f} [{min(per[t]):.2f}-{max(per[t]):.2f}] "
              f"| {m / p:.2f} | {m / w:.2f} |")
    print(f"\nbars: extract/plain = {med(per['extract']) / p:.2f} (<= 1.5), "
          f"nothing/wrk = {med(per['nothing']) / w:.2f} (<= 1.0)\n")


def mem(rounds, users):
    no = scenario_file("nothing", NOTHING)
    d = 12  # long enough for every user to connect and be answered a few times
    print(f"## Memory per user ({rounds} rounds, peak RSS, think 1 s)\n")
    print(f"| run | RSS at 50 users MB | RSS at {users:,} users MB | KB per extra user | answers at {users:,} |\n|---|---|---|---|---|")
    for name, head in (("scenario (jar of 2 cookies)", ["--scenario", no, BASE]), ("plain", [URL])):
        small, big, answers = [], [], []
        for _ in range(rounds):
            for n, into in ((50, small), (users, big)):
                cmd, count = overload([*head, "--users", str(n), "--think", "1s", "--timeout", "20s",
                                       # 10,000 SYNs at once overflow a 4,096 backlog: retried, not lost
                                       "--connect-timeout", "20s"], d)
                out, _, _, rss = compare.timed(cmd, d + 60)
                into.append(rss)
                if n == users:
                    answers.append(count(out))
                time.sleep(2)
        s, b = med(small), med(big)
        print(f"| {name} | {s / 1024:.1f} | {b / 1024:.1f} | {(b - s) / (users - 50):.2f} | {med(answers):,.0f} |")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--users", type=int, default=10000)
    ap.add_argument("--parts", default="cpu,mem")
    a = ap.parse_args()
    if not os.path.exists(OVERLOAD):
        sys.exit(f"{OVERLOAD} not found: run `cargo build --release` first")
    start_nginx()
    try:
        parts = a.parts.split(",")
        if "cpu" in parts:
            cpu(a.rounds, a.duration)
        if "mem" in parts:
            mem(a.rounds, a.users)
    finally:
        compare.stop_nginx()


if __name__ == "__main__":
    main()

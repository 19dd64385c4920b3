#!/usr/bin/env python3
"""Side-by-side benchmark of overload against wrk, ab and oha (whichever are installed).

Target: nginx (1 worker) pinned to CPU 0; every generator pinned to CPU 1 and run under
/usr/bin/time. The figure to compare is the generator's CPU time per completed request
(user + sys), and RSS per connection — not requests/s, which nginx limits on one core.

  python3 bench/compare.py [--rounds N] [--duration S] [--scenarios a,b,c]

a: closed loop, 50 keep-alive connections, 100-byte body (wrk, ab -k, oha, overload --users)
b: open loop 5,000 req/s, 50 connections (oha -q, overload --rate)
c: 5,000 open keep-alive connections at 1 req/s each (wrk + delay script, oha -q, overload)
   -> marginal KB of RSS per connection: (RSS(5000) - RSS(50)) / 4950
All traffic goes to 127.0.0.1; every run is bounded by `timeout`.
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OVERLOAD = os.environ.get("OVERLOAD", os.path.join(ROOT, "target", "release", "overload"))
# The other tools: from PATH, or the paths given (a machine without them installed).
NGINX = os.environ.get("NGINX", "nginx")
# nginx reads a variable of that name itself (listening sockets inherited on a binary
# upgrade): it must not see ours, or it hangs at start.
NGINX_ENV = {k: v for k, v in os.environ.items() if k != "NGINX"}
WRK = os.environ.get("WRK", "wrk")
OHA = os.environ.get("OHA", "oha")
PORT = 18080
URL = f"http://127.0.0.1:{PORT}/100b"
RUN = tempfile.mkdtemp(prefix="overload-bench-")
# mkdtemp makes it 0700: nginx's workers (nobody, when started as root) could not read www/
# and would answer every request 403.
os.chmod(RUN, 0o755)


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), capture_output=True, text=True, **kw)


def start_nginx():
    for d in ("www", "logs", "tmp", "conf"):
        os.makedirs(os.path.join(RUN, d), exist_ok=True)
    with open(os.path.join(RUN, "www", "100b"), "w") as f:
        f.write("a" * 100)
    shutil.copy(os.path.join(HERE, "nginx.conf"), os.path.join(RUN, "conf", "nginx.conf"))
    r = sh(["taskset", "-c", "0", NGINX, "-p", RUN + "/", "-c", "conf/nginx.conf", "-e", "logs/error.log"],
           env=NGINX_ENV)
    if r.returncode != 0:
        sys.exit(f"nginx failed: {r.stderr.strip()}")
    time.sleep(0.5)


def stop_nginx():
    pid = os.path.join(RUN, "nginx.pid")
    if os.path.exists(pid):
        sh(f"kill $(cat {pid})")
    time.sleep(0.3)
    shutil.rmtree(RUN, ignore_errors=True)


def timed(cmd, limit):
    """Runs cmd on CPU 1 under /usr/bin/time; returns (stdout, wall, cpu_s, maxrss_kb)."""
    tfile = os.path.join(RUN, "time.txt")
    full = ["taskset", "-c", "1", "/usr/bin/time", "-f", "%e %U %S %M", "-o", tfile,
            "timeout", "-k", "5", str(limit)] + cmd
    r = subprocess.run(full, capture_output=True, text=True)
    wall, user, sys_, rss = open(tfile).read().split()[-4:]
    return r.stdout + r.stderr, float(wall), float(user) + float(sys_), int(rss)


# Every count is of 2xx answers only: a server answering 403 or 404 must not pass for one
# serving the page (it did once, when nginx's workers could not read a 0700 folder).
def wrk_count(out):
    m = re.search(r"(\d+) requests in", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return int(m.group(1)) - (int(bad.group(1)) if bad else 0) if m else 0


def ab_count(out):
    m = re.search(r"Complete requests:\s+(\d+)", out)
    f = re.search(r"Failed requests:\s+(\d+)", out)
    bad = re.search(r"Non-2xx responses:\s+(\d+)", out)
    drop = (int(f.group(1)) if f else 0) + (int(bad.group(1)) if bad else 0)
    return int(m.group(1)) - drop if m else 0


def oha_count(out):
    try:
        j = json.loads(out[out.index("{"):])
        return sum(v for k, v in j.get("statusCodeDistribution", {}).items()
                   if str(k).startswith("2"))
    except (ValueError, KeyError):
        return 0


def overload_count(path):
    try:
        st = json.load(open(path))["statuses"]
        return sum(v for k, v in st.items() if k.startswith("2"))
    except (OSError, ValueError, KeyError):
        return 0


def tools_a(d):
    j = os.path.join(RUN, "o.json")
    t = {
        "overload": (lambda: [OVERLOAD, "run", URL, "--users", "50", "--duration", f"{d}s", "--threads", "1", "-q", "--json", j], lambda o: overload_count(j)),
        "wrk": (lambda: [WRK, "-t1", "-c50", f"-d{d}s", URL], wrk_count),
        "ab -k": (lambda: ["ab", "-k", "-q", "-c", "50", "-t", str(d), "-n", "100000000", URL], ab_count),
        "oha": (lambda: [OHA, "-z", f"{d}s", "-c", "50", "--no-tui", "--output-format", "json", URL], oha_count),
    }
    return t


def tools_b(d):
    j = os.path.join(RUN, "o.json")
    return {
        "overload": (lambda: [OVERLOAD, "run", URL, "--rate", "5000", "--connections", "50", "--duration", f"{d}s", "--threads", "1", "-q", "--json", j], lambda o: overload_count(j)),
        "oha -q": (lambda: [OHA, "-z", f"{d}s", "-c", "50", "-q", "5000", "--no-tui", "--output-format", "json", URL], oha_count),
    }


def tools_c(d, conns):
    j = os.path.join(RUN, "o.json")
    delay = os.path.join(RUN, "delay1s.lua")
    with open(delay, "w") as f:
        f.write("function delay() return 1000 end\n")
    return {
        "overload": (lambda: [OVERLOAD, "run", URL, "--users", str(conns), "--think", "1s", "--duration", f"{d}s", "--threads", "1", "--timeout", "10s", "-q", "--json", j], lambda o: overload_count(j)),
        "wrk": (lambda: [WRK, "-t1", f"-c{conns}", f"-d{d}s", "--timeout", "10s", "-s", delay, URL], wrk_count),
        "oha -q": (lambda: [OHA, "-z", f"{d}s", "-c", str(conns), "-q", str(conns), "--no-tui", "--output-format", "json", URL], oha_count),
    }


def available(name):
    """Whether a tool of the table runs here (its binary from PATH or the variable naming it).
    "overload" and "overload before" (tls.py's OVERLOAD_BEFORE) are paths, not on PATH."""
    tool = name.split()[0]
    exe = {"wrk": WRK, "oha": OHA}.get(tool, tool)
    return shutil.which(exe) is not None or tool == "overload"


def run_scenario(name, tools, rounds, limit):
    rows = {}
    for r in range(rounds):
        for tool, (cmd, count) in tools.items():
            if not available(tool):
                continue
            out, wall, cpu, rss = timed(cmd(), limit)
            n = count(out)
            rows.setdefault(tool, []).append((n, wall, cpu, rss))
            time.sleep(1)
    return rows


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--scenarios", default="a,b,c")
    a = ap.parse_args()
    if not os.path.exists(OVERLOAD):
        sys.exit(f"{OVERLOAD} not found: run `cargo build --release` first")
    start_nginx()
    try:
        limit = a.duration + 30
        scen = a.scenarios.split(",")
        print(f"# overload vs other generators ({a.rounds} rounds, {a.duration}s each, median [min-max])\n")
        if "a" in scen or "b" in scen:
            for s, tools in (("a", tools_a(a.duration)), ("b", tools_b(a.duration))):
                if s not in scen:
                    continue
                title = {"a": "a. closed loop, 50 keep-alive connections, 100 B", "b": "b. open loop 5,000 req/s, 50 connections"}[s]
                rows = run_scenario(s, tools, a.rounds, limit)
                print(f"## {title}\n\n| tool | req/s | CPU µs/req | peak RSS MB |\n|---|---|---|---|")
                base = None
                for tool, rs in rows.items():
                    per = [c / n * 1e6 for n, w, c, _ in rs if n > 0]
                    rps = [n / w for n, w, _, _ in rs if w > 0]
                    mx = med(per)
                    if tool == "overload":
                        base = mx
                    print(f"| {tool} | {med(rps):,.0f} | {mx:.2f} [{min(per, default=0):.2f}-{max(per, default=0):.2f}] | {med([r[3] for r in rs]) / 1024:.1f} |")
                if base:
                    ratios = ", ".join(f"{t}: {med([c / n * 1e6 for n, _, c, _ in rs if n > 0]) / base:.2f}x" for t, rs in rows.items() if t != "overload")
                    print(f"\nCPU per request relative to overload: {ratios}\n")
        if "c" in scen:
            print("## c. open keep-alive connections at 1 req/s each: RSS\n\n| tool | RSS at 50 conns MB | RSS at 5000 conns MB | marginal KB/conn |\n|---|---|---|---|")
            small = run_scenario("c50", tools_c(a.duration, 50), a.rounds, limit)
            big = run_scenario("c5000", tools_c(a.duration, 5000), a.rounds, limit)
            for tool in big:
                r50 = med([r[3] for r in small.get(tool, [])])
                r5k = med([r[3] for r in big[tool]])
                print(f"| {tool} | {r50 / 1024:.1f} | {r5k / 1024:.1f} | {(r5k - r50) / 4950:.2f} |")
    finally:
        stop_nginx()


if __name__ == "__main__":
    main()

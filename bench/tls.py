#!/usr/bin/env python3
"""HTTPS: CPU per request and per full handshake of overload vs wrk, ab and oha.

Same pinning as compare.py (nginx, one worker, on CPU 0; the generator on CPU 1 under
/usr/bin/time); nginx serves 100 bytes over TLS on 127.0.0.1:18543 with a P-256 certificate
made by openssl at start (self-signed: every generator runs without verifying it). Figures are medians over rounds of the generator's CPU (user + sys)
per completed request; ratios are within one run.

  python3 bench/tls.py [--rounds N] [--duration S] [--scenarios k,h,p]

k: keep-alive, 50 connections, closed loop (overload --users 50, wrk -t1 -c50, oha -c 50).
h: a full handshake per request (overload --no-keep-alive --tls-resumption off, ab -c 50
   without -k, wrk -c50 with `Connection: close`): handshakes per second per generator core.
p: plain HTTP/1.1, same as compare.py's scenario a, for the same nginx in the same run.
2: HTTP/2 over TLS, 10 connections x 10 streams (overload --http 2 --users 100 --streams 10,
   h2load -c 10 -m 10 -t 1, oha --http2 -c 10 -p 10) on nginx's h2 port.
Every run is bounded by `timeout`; all traffic goes to 127.0.0.1.

OVERLOAD_BEFORE=PATH adds an "overload before" row (another build, e.g. main's) run with the
same arguments in every round, interleaved with the others, for before/after ratios. Where
`perf` works, each overload build then runs once more per scenario under `perf stat`:
task-clock and the syscalls per request (recvfrom, sendto, epoll_wait), which a loaded
shared machine moves less than it moves wall-clock figures.
"""
import argparse, os, shutil, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import ab  # noqa: E402  (perf stat counting, shared with the before/after script)

BEFORE = os.environ.get("OVERLOAD_BEFORE")
# rustls writes its records with writev (write_vectored), not sendto.
ab.EVENTS = ab.EVENTS + ["syscalls:sys_enter_writev"]

URL = "https://127.0.0.1:18543/100b"
URL_H2 = "https://127.0.0.1:18544/100b"  # ALPN h2 (nginx-tls.conf)
PLAIN = "http://127.0.0.1:18180/100b"  # ports apart from compare.py, so both can run


def start_nginx_tls():
    for d in ("www", "logs", "tmp", "conf"):
        os.makedirs(os.path.join(compare.RUN, d), exist_ok=True)
    with open(os.path.join(compare.RUN, "www", "100b"), "w") as f:
        f.write("a" * 100)
    conf = os.path.join(compare.RUN, "conf")
    shutil.copy(os.path.join(compare.HERE, "nginx-tls.conf"), os.path.join(conf, "nginx.conf"))
    r = compare.sh(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                    os.path.join(conf, "key.pem"), "-out", os.path.join(conf, "cert.pem")])
    if r.returncode != 0:
        sys.exit(f"openssl failed: {r.stderr.strip()}")
    r = compare.sh(["taskset", "-c", "0", compare.NGINX, "-p", compare.RUN + "/", "-c",
                    "conf/nginx.conf", "-e", "logs/error.log"], env=compare.NGINX_ENV)
    if r.returncode != 0:
        sys.exit(f"nginx failed: {r.stderr.strip()}")
    compare.time.sleep(0.5)


def h2load_count(out):
    m = compare.re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", out)
    return int(m.group(1)) if m else 0


def with_before(ts):
    """Adds "overload before": overload's command with the OVERLOAD_BEFORE binary."""
    if not BEFORE:
        return ts
    cmd, count = ts["overload"]
    out = {"overload": ts["overload"], "overload before": ([BEFORE] + cmd[1:], count)}
    out.update((k, v) for k, v in ts.items() if k != "overload")
    return out


def syscalls(scenario, ts, d):
    """Each overload build once under perf stat: task-clock µs and syscalls per request."""
    if not shutil.which("perf"):
        return
    for name in [k for k in ts if k.startswith("overload")]:
        cmd, count = ts[name]
        try:
            out, c = ab.perf_timed(cmd, d + 20)
        except (SystemExit, OSError) as e:
            print(f"  perf stat unusable here ({e}); skipped")
            return
        n = count(out)
        if n == 0:
            continue
        per = "  ".join(f"{e.split(':')[-1].replace('sys_enter_', '')} {v / n:.2f}"
                        for e, v in c.items() if e != "task-clock")
        print(f"  {name:16} perf: task-clock {c['task-clock'] * 1e3 / n:.2f} µs/request  "
              f"per request: {per}")


def tools(scenario, d):
    j = os.path.join(compare.RUN, "o.json")
    # --insecure: wrk, ab and oha do not verify either; the handshake's signature is still
    # checked, so the cost compared is a real handshake's.
    ov = [compare.OVERLOAD, "run", URL, "--duration", f"{d}s", "--threads", "1", "--insecure",
          "-q", "--json", j]
    done = lambda o: compare.overload_count(j)  # noqa: E731
    if scenario == "k":
        return {
            "overload": (ov + ["--users", "50"], done),
            "wrk": ([compare.WRK, "-t1", "-c50", f"-d{d}s", URL], compare.wrk_count),
            "oha": ([compare.OHA, "-z", f"{d}s", "-c", "50", "--insecure", "--no-tui",
                     "--output-format", "json", URL], compare.oha_count),
        }
    if scenario == "h":
        return {
            "overload": (ov + ["--users", "50", "--no-keep-alive", "--tls-resumption", "off"],
                         done),
            "ab": (["ab", "-q", "-c", "50", "-t", str(d), "-n", "100000000", URL],
                   compare.ab_count),
            "wrk close": ([compare.WRK, "-t1", "-c50", f"-d{d}s", "-H", "Connection: close", URL],
                          compare.wrk_count),
        }
    if scenario == "2":
        o2 = [compare.OVERLOAD, "run", URL_H2, "--duration", f"{d}s", "--threads", "1",
              "--insecure", "-q", "--json", j]
        return {
            "overload": (o2 + ["--http", "2", "--users", "100", "--streams", "10"], done),
            "h2load": (["h2load", "-c", "10", "-m", "10", "-t", "1", "-D", str(d), URL_H2],
                       h2load_count),
            "oha": ([compare.OHA, "--http2", "-z", f"{d}s", "-c", "10", "-p", "10", "--insecure",
                     "--no-tui", "--output-format", "json", URL_H2], compare.oha_count),
        }
    return {
        "overload": ([compare.OVERLOAD, "run", PLAIN, "--users", "50", "--duration",
                      f"{d}s", "--threads", "1", "-q", "--json", j], done),
        "wrk": ([compare.WRK, "-t1", "-c50", f"-d{d}s", PLAIN], compare.wrk_count),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--scenarios", default="k,h,p")
    a = ap.parse_args()
    if BEFORE and not os.access(BEFORE, os.X_OK):
        sys.exit(f"OVERLOAD_BEFORE={BEFORE}: not an executable")
    start_nginx_tls()
    try:
        print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for s in a.scenarios.split(","):
            ts = with_before(tools(s, a.duration))
            rows = compare.run_scenario(s, {k: (lambda c=c: c, n) for k, (c, n) in ts.items()},
                                        a.rounds, a.duration + 20)
            print(f"\nscenario {s}")
            base = None
            for tool, runs in rows.items():
                per = [cpu * 1e6 / n for (n, wall, cpu, rss) in runs if n > 0]
                rate = [n / cpu for (n, wall, cpu, rss) in runs if cpu > 0]
                us = compare.med(per)
                base = base or us
                print(f"  {tool:10} {us:8.2f} µs CPU/request  {compare.med(rate):9.0f} requests "
                      f"per CPU-second  ({tool}/overload = {us / base:.2f})  "
                      f"completed {[r[0] for r in runs]}")
            syscalls(s, ts, a.duration)
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        compare.stop_nginx()


if __name__ == "__main__":
    main()

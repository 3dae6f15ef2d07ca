#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What loopwatch costs a saturated service whose load generator shares its CPUs -- a
production host at peak, where the loop thread is preempted all the time.

Each service runs unpinned beside its load generator (both float over every CPU):
  aiohttp    Debian's python3 + aiohttp, GET /ping under wrk -t1 -c16
  memcached  memcached -t 2, sets from memcslap --concurrency=16
  node       Debian's node http server, GET /ping under wrk -t1 -c16
Per round, three configurations, their order rotating: untraced, the floor (empty
programs on loopwatch's hooks, tools/bench/floor) and loopwatch system-wide with its
defaults. Each is started, the load runs WARM_S (the tracer's setup of the processes
stays out), then MEASURE_S measured: requests per second, and the tracer's programs'
run time (bpf_stats, through our own BPF_ENABLE_STATS descriptor) per request -- every
program, every CPU, every process (the load generator's and other tenants' calls too:
an upper bound). Reported: medians over rounds of the per-round ratios to untraced,
and of the BPF ns per request, whole and by program.

Requests per second swing with whatever else the host runs. Beside them, the CPU a
request costs: the service's, the load generator's and loopwatch's own userspace CPU
time over the requests done (BPF runs in the traced tasks' time, so it is in there).
Where the service and its load generator are CPU-bound, untraced CPU per request over
traced is the throughput the host keeps -- a ratio other tenants move much less.

Usage: contended.py --loopwatch PATH --bin DIR [--rounds N] [--seconds S] [--services a,b]
"""
import argparse
import os
import resource
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpfstats  # noqa: E402

PYTHON = "/usr/bin/python3"
NODE = "/usr/bin/node"
WARM_S = 1.0
# the targets of issue 20, on this machine
TARGET_BPF_NS = 1000
TARGET_RATIO = 0.97


TCK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """utime + stime of a process, all its threads, in seconds; 0 once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TCK


def children_cpu_s():
    """CPU of the waited-for children: the load generators (subprocess.run)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs, fmt):
    return (fmt + ".." + fmt) % (min(xs), max(xs)) if xs else "-"


class HttpService:
    """A server that prints its port, loaded by wrk on GET /ping."""

    def __init__(self, name, argv):
        self.name = name
        self.argv = argv
        self.proc = None
        self.port = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())

    def load(self, seconds):
        """Requests done and seconds taken."""
        r = subprocess.run(["wrk", "-t1", "-c16", "-d%ds" % max(1, round(seconds)),
                            "http://127.0.0.1:%d/ping" % self.port],
                           stdout=subprocess.PIPE, text=True, check=True)
        n = int(re.search(r"(\d+) requests in", r.stdout).group(1))
        m = re.search(r"requests in ([0-9.]+)(ms|s|m)", r.stdout)
        t = float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]
        return n, t

    def describe(self):
        return "GET /ping under wrk -t1 -c16"

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()


class Memcached:
    """memcached -t 2 loaded by memcslap's sets; memcslap runs a count, not a time."""

    PORT = 22199

    def __init__(self):
        self.name = "memcached"
        self.proc = None
        self.per_second = 40000

    def start(self):
        self.proc = subprocess.Popen(["memcached", "-u", "root", "-t", "2", "-l", "127.0.0.1",
                                      "-p", str(self.PORT)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if subprocess.run(["memcslap", "--servers=127.0.0.1:%d" % self.PORT,
                               "--execute-number=10"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError("memcached did not answer")

    def load(self, seconds):
        per_thread = max(100, int(self.per_second * seconds / 16))
        t0 = time.monotonic()
        subprocess.run(["memcslap", "--servers=127.0.0.1:%d" % self.PORT, "--concurrency=16",
                        "--execute-number=%d" % per_thread], stdout=subprocess.DEVNULL,
                       check=True)
        took = time.monotonic() - t0
        # the next run's count lasts about `seconds` at this rate
        self.per_second = per_thread * 16 / took
        return per_thread * 16, took

    def describe(self):
        return "sets from memcslap --concurrency=16"

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()


def services(names):
    made = {
        "aiohttp": lambda: HttpService("aiohttp", [PYTHON, os.path.join(HERE, "aioping.py")]),
        "memcached": Memcached,
        "node": lambda: HttpService("node", [NODE, os.path.join(HERE, "nodeping.js")]),
    }
    return [made[n]() for n in names]


def tracer(config, args):
    if config == "floor":
        return bpfstats.Tracer([os.path.join(args.bin, "floor"), "-d", "600"])
    if config == "loopwatch":
        return bpfstats.Tracer([args.loopwatch, "--json", "-d", "600"])
    return None


def measure(service, config, args):
    """(requests per second, {program: ns per request}, {program: runs per request},
    CPU us per request) of one measurement."""
    t = tracer(config, args)
    try:
        ids = bpfstats.prog_ids(t.pid) if t else set()
        service.load(WARM_S)
        before = bpfstats.snapshot(ids)
        cpu0 = cpu_s(service.proc.pid) + children_cpu_s() + (cpu_s(t.pid) if t else 0)
        n, took = service.load(args.seconds)
        cpu1 = cpu_s(service.proc.pid) + children_cpu_s() + (cpu_s(t.pid) if t else 0)
        d = bpfstats.delta(before, bpfstats.snapshot(ids))
    finally:
        if t:
            t.stop()
    return n / took, {name: ns / n for name, (_, ns) in d.items()}, \
        {name: runs / n for name, (runs, _) in d.items()}, 1e6 * (cpu1 - cpu0) / n


def run_service(service, args, out):
    configs = ["none", "floor", "loopwatch"]
    rows = {c: [] for c in configs}
    service.start()
    try:
        service.load(WARM_S)
        for r in range(args.rounds):
            print("%s round %d/%d" % (service.name, r + 1, args.rounds), file=sys.stderr)
            k = r % len(configs)
            for config in configs[k:] + configs[:k]:
                rows[config].append(measure(service, config, args))
    finally:
        service.stop()
    res = {}
    # loopwatch's BPF time over the floor's, round by round: what its own code costs
    over = [sum(lw[1].values()) - sum(fl[1].values())
            for lw, fl in zip(rows["loopwatch"], rows["floor"])]
    res["over_floor"] = median(over)
    out.append("%s, %s; service and load generator unpinned on %d CPUs, %.0f s a "
               "measurement, %d interleaved rounds:" % (service.name, service.describe(),
                                                        os.cpu_count(), args.seconds,
                                                        args.rounds))
    out.append("  %-10s | %-22s | %-22s | %-18s | %s" % (
        "config", "requests/s (range)", "ratio to untraced", "BPF ns/request",
        "CPU us/request, untraced's over it"))
    for c in configs:
        rps = [x[0] for x in rows[c]]
        ratios = [x[0] / n[0] for x, n in zip(rows[c], rows["none"])]
        bpf = [sum(x[1].values()) for x in rows[c]]
        cpu = [x[3] for x in rows[c]]
        cpu_ratios = [n[3] / x[3] for x, n in zip(rows[c], rows["none"]) if x[3] > 0]
        res[c] = (median(ratios), median(bpf), median(cpu_ratios))
        out.append("  %-10s | %8.0f %-13s | %6.3f %-15s | %-18s | %5.1f: %.3f (%s)" % (
            c, median(rps), spread(rps, "%.0f"), median(ratios), spread(ratios, "%.3f"),
            "-" if c == "none" else "%.0f (%s)" % (median(bpf), spread(bpf, "%.0f")),
            median(cpu), median(cpu_ratios), spread(cpu_ratios, "%.3f")))
    out.append("  loopwatch's BPF time over the floor's: %.0f ns a request (%s)" % (
        median(over), spread(over, "%.0f")))
    for c in ("floor", "loopwatch"):
        by_program(c, rows[c], out)
    return res


def by_program(config, rows, out):
    """Each program's medians over rounds: ns per request, runs per request, ns a run
    (the floor's empty programs' ns a run is what the kernel charges for a run alone)."""
    progs = {}
    for x in rows:
        for name, ns in x[1].items():
            progs.setdefault(name, []).append((ns, x[2][name]))
    out.append("  %s by program, ns per request (runs per request, ns per run):" % config)
    for name, v in sorted(progs.items(), key=lambda kv: -median([a for a, _ in kv[1]])):
        ns, runs = median([a for a, _ in v]), median([b for _, b in v])
        if ns < 1:
            continue
        out.append("    %-20s %8.1f  (%6.2f runs, %7.1f ns a run)" % (
            name, ns, runs, ns / runs if runs else 0))


BYSTANDER = r"""
import json, sys, time
doc = {"id": 1, "name": "x", "tags": ["a", "b"]}
n, t0 = 0, time.perf_counter()
while time.perf_counter() - t0 < float(sys.argv[1]):
    for _ in range(1000):
        json.dumps(doc)
    n += 1000
print(n / (time.perf_counter() - t0))
"""


def bystander(args, out):
    """What a process loopwatch does not watch pays: a batch job (no event loop) calling
    json.dumps on a small dict in Debian's python3, beside a loop process of the same
    python3 whose _json module loopwatch probes; calls per second untraced and under
    loopwatch system-wide, interleaved rounds."""
    server = subprocess.Popen([PYTHON, os.path.join(HERE, "aioping.py")],
                              stdout=subprocess.PIPE, text=True)
    server.stdout.readline()
    ratios, rates = [], {"none": [], "loopwatch": []}
    try:
        for r in range(args.rounds):
            print("bystander round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
            got = {}
            for config in (["none", "loopwatch"] if r % 2 == 0 else ["loopwatch", "none"]):
                t = tracer(config, args)
                try:
                    if t:
                        time.sleep(1.0)     # the aiohttp process set up, its probes attached
                    got[config] = float(subprocess.run(
                        [PYTHON, "-c", BYSTANDER, str(args.seconds)], stdout=subprocess.PIPE,
                        text=True, check=True).stdout)
                finally:
                    if t:
                        t.stop()
                rates[config].append(got[config])
            ratios.append(got["loopwatch"] / got["none"])
    finally:
        server.kill()
        server.wait()
    out.append("A bystander: json.dumps of a small dict in a batch python3 (no event loop) "
               "beside a probed aiohttp loop, %d rounds:" % args.rounds)
    out.append("  untraced %.0f calls/s, under loopwatch %.0f: ratio %.3f (%s)" % (
        median(rates["none"]), median(rates["loopwatch"]), median(ratios),
        spread(ratios, "%.3f")))
    return median(ratios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loopwatch", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "5")))
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--services", default="aiohttp,memcached,node")
    ap.add_argument("--no-bystander", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("contended.py: needs root (bpf_stats, tracing)")
    bpfstats.enable()
    out, results = [], {}
    for s in services(args.services.split(",")):
        results[s.name] = run_service(s, args, out)
        out.append("")
    if not args.no_bystander:
        bystander(args, out)
        out.append("")
    out.append("Targets (issue 20): BPF <= %d ns a request; throughput >= %.2f of untraced, or "
               "within 0.01 of the floor's where the floor costs more. The floor's empty "
               "programs on the same hooks cost what they cost here (the kernel's per-run "
               "accounting included), so loopwatch's own code is the part over it:" % (
                   TARGET_BPF_NS, TARGET_RATIO))
    for name, res in results.items():
        ratio, bpf, cpu_ratio = res["loopwatch"]
        floor_ratio, floor_bpf, floor_cpu = res["floor"]
        ok_ratio = ratio >= TARGET_RATIO or ratio >= floor_ratio - 0.01
        ok_cpu = cpu_ratio >= TARGET_RATIO or cpu_ratio >= floor_cpu - 0.01
        out.append("  %-10s BPF %5.0f ns/request (floor %4.0f, over it %4.0f: %s)  throughput "
                   "%.3f (floor %.3f): %s  by CPU per request %.3f (floor %.3f): %s" % (
                       name, bpf, floor_bpf, res["over_floor"],
                       "met" if res["over_floor"] <= TARGET_BPF_NS else "MISSED", ratio,
                       floor_ratio, "met" if ok_ratio else "MISSED", cpu_ratio, floor_cpu,
                       "met" if ok_cpu else "MISSED"))
    print("\n".join(out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What loopwatch costs a saturated service whose load generator shares its CPUs -- a
production host at peak, where the loop thread is preempted all the time.

Each service runs unpinned beside its load generator (both float over every CPU):
  aiohttp    Debian's python3 + aiohttp, GET /ping under wrk -t1 -c16
  memcached  memcached -t 2, sets from memcslap --concurrency=16
  node       Debian's node http server, GET /ping under wrk -t1 -c16
Per round, five configurations (three with --modes tick), in a balanced order
(round__order(): each after each other equally often):
untraced, and two pairs of the floor (empty programs on loopwatch's hooks,
tools/bench/floor) beside loopwatch system-wide: with its defaults (CPU samples at the
scheduler tick; the floor's -F 0 hooks the tick's timer expiries as loopwatch does),
and with --sample-hz 997 (perf's cpu-clock at 997 Hz, the floor's -F 997 too). With
--timing, one more beside the tick's floor: loopwatch built with its timing core alone
(-DLW_TIMING_ONLY=1, make bench builds it), whose share of a request's CPU is the part
of a miss that no change to what names a culprit can win back.
Each is started, the load runs WARM_S (the tracer's setup of the processes
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

The verdicts are paired by round. Ratios to untraced swing by +-0.1 between rounds here,
so the median of loopwatch's beside the median of the floor's cannot resolve a 1-point
target. Each round instead gives loopwatch's requests/s over the floor's measured in the
same round (rps_lw / rps_floor), the floor's CPU per request over loopwatch's, and
loopwatch's BPF ns per request minus the floor's: the two run one after the other, so
the host's slower drift lands on both sides of a ratio. Of these per-round values: the
median, min..max, and a distribution-free interval for the median (the sign test's: the
narrowest pair of order statistics x(k)..x(n+1-k) that holds the true median with
probability >= LEVEL, from Binomial(n, 1/2), rounds taken as independent; 5 rounds give
min..max at 94 %, 10 give the 2nd..9th at 98 %; stdlib only). Fewer than 5 rounds reach
no 90 % interval: then min..max is shown with what it does hold, and nothing is called
MISSED.
Throughput (and CPU per request) against the target is then, the first that holds of
  met                when the paired median >= 0.99 (within 1 point of the floor), or
                     (and it says so) when loopwatch's median ratio to untraced >= 0.97;
  MISSED             by its BPF alone, when loopwatch's own BPF (its BPF ns per request
                     over the floor's, by the kernel's counters) is over 1 % of a
                     request's CPU at the lower end of its interval: on a CPU-bound
                     service and load generator whose other work per request stays the
                     same, that alone keeps the paired ratio under 0.99 (the floor's CPU
                     per request over loopwatch's is 1 minus that share). The assumption
                     is an event loop's to break (a slower loop batches more requests
                     into an iteration), so a paired median that resolves says more; the
                     share is printed as the measured reason;
  MISSED             when even the interval's upper end is below 0.99;
  not resolvable     otherwise: the interval spans 0.99 (it is printed, with the floor's
                     ratio to untraced beside it), or too few rounds to hold it.
The BPF verdict stays the median over the floor <= 1000 ns, its interval beside it.
Each loopwatch is judged against the floor of its own sampling.

Usage: contended.py --loopwatch PATH --bin DIR [--timing PATH] [--rounds N] [--seconds S]
                    [--services a,b] [--modes tick,997]
"""
import argparse
import math
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
# loopwatch over the floor of the same round: "within 0.01 of the floor's"
TARGET_PAIRED = 0.99
# what the interval for a median over rounds must hold (the docstring says how)
LEVEL = 0.90


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


def interval(xs, level=LEVEL):
    """(lo, hi, coverage): the sign test's interval for the median of xs, x(k)..x(n+1-k)
    of the sorted values with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) < k),
    is still >= level. With too few values for any, min..max and its own coverage."""
    s = sorted(xs)
    n = len(s)
    if not n:
        return float("nan"), float("nan"), 0.0
    best = (s[0], s[-1], 1 - 2 * 0.5 ** n)
    below = 0
    for k in range(1, (n + 1) // 2 + 1):
        below += math.comb(n, k - 1)
        cover = 1 - 2 * below / 2 ** n
        if cover < level:
            break
        best = (s[k - 1], s[n - k], cover)
    return best


def summary(xs, fmt):
    """'median (rounds min..max; the median within lo..hi at C %)' of per-round values."""
    lo, hi, cover = interval(xs)
    if xs and (lo, hi) == (min(xs), max(xs)):
        return (fmt + " (rounds %s: the median within them at %.0f %%)") % (
            median(xs), spread(xs, fmt), 100 * cover)
    return (fmt + " (rounds %s; the median within " + fmt + ".." + fmt + " at %.0f %%)") % (
        median(xs), spread(xs, fmt), lo, hi, 100 * cover)


def verdict(paired, untraced_ratio, floor_ratio, share):
    """The paired verdict on throughput or CPU per request (the docstring says how):
    'met' and by which clause, 'MISSED' and why, or why it is neither. share: loopwatch's
    BPF over the floor's, round by round, as a fraction of a request's CPU."""
    lo, hi, cover = interval(paired)
    s_lo, s_hi, s_cover = interval(share)
    if median(paired) >= TARGET_PAIRED:
        return "met"
    if untraced_ratio >= TARGET_RATIO:
        return "met (by the ratio to untraced, %.3f >= %.2f)" % (untraced_ratio, TARGET_RATIO)
    # what requests/s cannot resolve, the kernel's counters can, on one assumption
    if s_cover >= LEVEL and s_lo > 1 - TARGET_PAIRED:
        return ("MISSED by its BPF alone: %.1f %% of a request's CPU (%.1f..%.1f at %.0f %%), "
                "over the %.0f point the target leaves; the floor %.3f of untraced" % (
                    100 * median(share), 100 * s_lo, 100 * s_hi, 100 * s_cover,
                    100 * (1 - TARGET_PAIRED), floor_ratio))
    if cover < LEVEL:
        return ("not resolvable with %d rounds (min..max %.3f..%.3f holds the median at "
                "%.0f %%, under %.0f %%; the floor %.3f of untraced)" % (
                    len(paired), lo, hi, 100 * cover, 100 * LEVEL, floor_ratio))
    if hi < TARGET_PAIRED:
        return "MISSED"
    return ("not resolvable at this noise (interval %.3f..%.3f spans %.2f; the floor %.3f "
            "of untraced)" % (lo, hi, TARGET_PAIRED, floor_ratio))


def short(v):
    return next((w for w in ("met", "MISSED") if v.startswith(w)), "unresolved")


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


# each sampling mode: (loopwatch's configuration, the floor's beside it, their arguments);
# the tick's loopwatch runs with its defaults
MODES = {
    "tick": ("loopwatch", "floor", [], ["-F", "0"]),
    "997": ("loopwatch-997", "floor-997", ["--sample-hz", "997"], ["-F", "997"]),
    # loopwatch built with its timing core alone (--timing), beside the tick's floor
    "timing": ("timing-alone", "floor", [], ["-F", "0"]),
}


def tracer(config, args):
    for lw, floor, lw_args, floor_args in MODES.values():
        if config == floor:
            return bpfstats.Tracer([os.path.join(args.bin, "floor"), "-d", "600"] + floor_args)
        if config == lw:
            exe = args.timing if config == MODES["timing"][0] else args.loopwatch
            return bpfstats.Tracer([exe, "--json", "-d", "600"] + lw_args)
    return None


def tick__fallback(args):
    """loopwatch's line saying why it samples at 997 Hz, not at the tick, or None."""
    p = subprocess.run([args.loopwatch, "-d", "0.5"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return next((ln for ln in p.stderr.splitlines() if "not the scheduler tick" in ln), None)


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


def round__order(n, r):
    """The order of n configurations in round r: a Williams design, each one run after
    each other equally often (over n rounds, 2n where n is odd), beside taking every
    position. A plain rotation always ran the timing build right after loopwatch and
    loopwatch right after the floor: whatever a configuration leaves behind (the
    previous tracer's programs and maps going away, the caches it left) fell on one
    side only. Two runs here with loopwatch's builds swapped between those places put
    25 ns a request (10 %) on whichever ran after the floor."""
    seq, lo, hi = [0], 1, n - 1
    while len(seq) < n:
        seq.append(lo)
        lo += 1
        if len(seq) < n:
            seq.append(hi)
            hi -= 1
    order = [(i + r) % n for i in seq]
    return order[::-1] if n % 2 and (r // n) % 2 else order


def run_service(service, args, out):
    pairs = [MODES[m][:2] for m in args.modes]
    # a floor two modes share is measured once a round
    configs = ["none"] + list(dict.fromkeys(c for pair in pairs for c in reversed(pair)))
    rows = {c: [] for c in configs}
    service.start()
    try:
        service.load(WARM_S)
        for r in range(args.rounds):
            print("%s round %d/%d" % (service.name, r + 1, args.rounds), file=sys.stderr)
            for i in round__order(len(configs), r):
                rows[configs[i]].append(measure(service, configs[i], args))
    finally:
        service.stop()
    res = {}
    for lw, floor in pairs:
        # loopwatch's BPF time over the floor's, round by round: what its own code costs
        over = [sum(x[1].values()) - sum(f[1].values()) for x, f in zip(rows[lw], rows[floor])]
        # loopwatch over the floor of the same round: throughput, and CPU per request the
        # other way up (the floor's over loopwatch's), so that above 1 is loopwatch cheaper
        res[lw, floor] = {
            "over": over,
            "over_floor": median(over),
            "paired_rps": [x[0] / f[0] for x, f in zip(rows[lw], rows[floor])],
            "paired_cpu": [f[3] / x[3] for x, f in zip(rows[lw], rows[floor]) if x[3] > 0],
            # of a request's CPU (the BPF runs in the traced tasks' time, so it is in
            # there), the part that is loopwatch's own BPF: what it takes by itself from
            # a CPU-bound service and load generator, by the kernel's counters, which the
            # host's noise moves much less than requests/s
            "share": [o / (1000 * x[3]) for o, x in zip(over, rows[lw]) if x[3] > 0],
        }
    out.append("%s, %s; service and load generator unpinned on %d CPUs, %.0f s a "
               "measurement, %d interleaved rounds:" % (service.name, service.describe(),
                                                        os.cpu_count(), args.seconds,
                                                        args.rounds))
    out.append("  %-14s | %-22s | %-22s | %-18s | %s" % (
        "config", "requests/s (range)", "ratio to untraced", "BPF ns/request",
        "CPU us/request, untraced's over it"))
    for c in configs:
        rps = [x[0] for x in rows[c]]
        ratios = [x[0] / n[0] for x, n in zip(rows[c], rows["none"])]
        bpf = [sum(x[1].values()) for x in rows[c]]
        cpu = [x[3] for x in rows[c]]
        cpu_ratios = [n[3] / x[3] for x, n in zip(rows[c], rows["none"]) if x[3] > 0]
        res[c] = (median(ratios), median(bpf), median(cpu_ratios))
        out.append("  %-14s | %8.0f %-13s | %6.3f %-15s | %-18s | %5.1f: %.3f (%s)" % (
            c, median(rps), spread(rps, "%.0f"), median(ratios), spread(ratios, "%.3f"),
            "-" if c == "none" else "%.0f (%s)" % (median(bpf), spread(bpf, "%.0f")),
            median(cpu), median(cpu_ratios), spread(cpu_ratios, "%.3f")))
    for lw, floor in pairs:
        r = res[lw, floor]
        out.append("  %s's BPF time over %s's: %.0f ns a request (%s)" % (
            lw, floor, r["over_floor"], spread(r["over"], "%.0f")))
        out.append("  %s over %s of the same round: requests/s %s" % (
            lw, floor, summary(r["paired_rps"], "%.3f")))
        out.append("    CPU per request, %s's over %s's %s" % (
            floor, lw, summary(r["paired_cpu"], "%.3f")))
        out.append("    %s's BPF over %s's, in %% of a request's CPU: %s" % (
            lw, floor, summary([100 * x for x in r["share"]], "%.2f")))
    for c in configs[1:]:
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
    ap.add_argument("--modes", default="tick,997",
                    help="sampling modes, each beside its own floor: tick (the default), 997")
    ap.add_argument("--timing", help="loopwatch built with its timing core alone (make "
                    "bench's build/bench/timing/loopwatch): measured beside the tick's floor "
                    "too, as the least loopwatch's way of timing loops costs")
    args = ap.parse_args()
    args.modes = args.modes.split(",")
    if args.timing and "timing" not in args.modes:
        args.modes.append("timing")
    if "timing" in args.modes and not args.timing:
        sys.exit("contended.py: --modes timing needs --timing PATH")
    if not args.modes or any(m not in MODES for m in args.modes):
        sys.exit("contended.py: --modes: some of %s" % ",".join(MODES))
    if os.geteuid() != 0:
        sys.exit("contended.py: needs root (bpf_stats, tracing)")
    bpfstats.enable()
    out, results = [], {}
    if "tick" in args.modes:
        why = tick__fallback(args)
        if why:
            out.append("NOTE: loopwatch cannot sample at the tick on this kernel, so its "
                       "default measures the 997 Hz fallback (its floor still hooks the "
                       "tick): %s" % why)
            out.append("")
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
    out.append("(throughput and CPU per request judged paired, round by round against the "
               "floor of the same round: met at a paired median >= %.2f or a ratio to "
               "untraced >= %.2f; else MISSED when the %.0f %% interval for the paired "
               "median lies below %.2f or loopwatch's own BPF is over %.0f %% of a "
               "request's CPU by its interval; otherwise not resolvable at this noise)" % (
                   TARGET_PAIRED, TARGET_RATIO, 100 * LEVEL, TARGET_PAIRED,
                   100 * (1 - TARGET_PAIRED)))
    for name, res in results.items():
        for (lw, floor) in [MODES[m][:2] for m in args.modes]:
            ratio, bpf, cpu_ratio = res[lw]
            floor_ratio, floor_bpf, floor_cpu = res[floor]
            r = res[lw, floor]
            v_rps = verdict(r["paired_rps"], ratio, floor_ratio, r["share"])
            v_cpu = verdict(r["paired_cpu"], cpu_ratio, floor_cpu, r["share"])
            v_bpf = "met" if r["over_floor"] <= TARGET_BPF_NS else "MISSED"
            out.append("  %-10s %-14s BPF %5.0f ns/request (floor %4.0f, over it %4.0f: %s)  "
                       "throughput %.3f (floor %.3f): %s  by CPU per request %.3f "
                       "(floor %.3f): %s" % (
                           name, lw, bpf, floor_bpf, r["over_floor"], v_bpf, ratio,
                           floor_ratio, short(v_rps), cpu_ratio, floor_cpu, short(v_cpu)))
            out.append("  %-25s paired, over %s: throughput %s: %s" % (
                "", floor, summary(r["paired_rps"], "%.3f"), v_rps))
            out.append("  %-25s by CPU per request %s: %s" % (
                "", summary(r["paired_cpu"], "%.3f"), v_cpu))
            out.append("  %-25s BPF over the floor, ns a request, %s: %s" % (
                "", summary(r["over"], "%.0f"), v_bpf))
        if "timing" in args.modes:
            out.append("  %-25s %s" % ("", timing__reason(res)))
    print("\n".join(out))


def timing__reason(res):
    """What loopwatch's timing core alone takes of a request's CPU, over the floor: with
    nothing that names a culprit, the part of a miss no change to the rest can win back."""
    lw, floor = MODES["timing"][:2]
    r = res[lw, floor]
    lo, hi, cover = interval(r["share"])
    s = ("timing alone (the record lookups and clock reads, no culprits): %.0f ns a request "
         "over the floor, %.1f %% of a request's CPU (%.1f..%.1f at %.0f %%)" % (
             r["over_floor"], 100 * median(r["share"]), 100 * lo, 100 * hi, 100 * cover))
    if cover >= LEVEL and lo > 1 - TARGET_PAIRED:
        s += (": over the %.0f point the target leaves by itself, so the target is out of "
              "reach of this way of timing loops here" % (100 * (1 - TARGET_PAIRED)))
    return s


if __name__ == "__main__":
    main()

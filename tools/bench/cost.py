#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What loopwatch costs a busy server, every target side by side from one run.

Sections (each measured in interleaved rounds, rotating the order, and reported as
medians; ranges are min..max over the rounds):
  kernel     the kernel's own per-program counters (bpf_stats, held through our own
             BPF_ENABLE_STATS descriptor): ns per run of loopwatch's programs and of
             empty programs on the same attach points (tools/bench/floor), on a hot
             epoll loop (one iteration per call), on context switches of threads that
             are no loop, and on CPU samples of a loop of 20 us iterations; plus the
             instructions the verifier processed per program
  gil        a Python loop that waits for the GIL beside two threads holding it
             (tests/apps/py_gilwork.py, Debian's python3, traced with -p): ns per run
             of the scheduler and sample programs, and loopwatch's BPF time per loop
             iteration and per second
  node       a saturated node http server (/ping under wrk; node on one CPU, wrk on
             the other): requests per second, node's CPU time per request and the
             tracer's BPF run time per request, untraced, under the floor, under
             loopwatch system-wide with its defaults, and under a bpftrace script
             timing the gaps between epoll waits (tracepoints only)
  life       from exec to the "tracing" line and to the built-in probes attached on a
             running node process (-p), whether a JSON.stringify 1.1 s after exec is
             counted, from SIGTERM to exit, and to the programs released
  collector  loopwatch's own CPU time and memory with 100 loop threads iterating
  stalls     CPU samples kept per on-CPU stall at the defaults
Then the targets, each with what was measured.

Usage: cost.py --loopwatch PATH --bin DIR [--rounds N] [--sections a,b,...] [--cpu N]
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpfstats  # noqa: E402

SECTIONS = ("kernel", "gil", "node", "life", "collector", "stalls")
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
NODE = "/usr/bin/node"

FLOOR, LW = bpfstats.FLOOR, bpfstats.LOOPWATCH

# syscost workloads of the kernel section: (case, calls)
KERNEL_CASES = (("epoll0", 1000000), ("pingpong", 40000), ("loop-busy20", 40000))

BPFTRACE_GAPS = r"""
tracepoint:syscalls:sys_exit_epoll_wait, tracepoint:syscalls:sys_exit_epoll_pwait
{ @busy_start[tid] = nsecs; }
tracepoint:syscalls:sys_enter_epoll_wait, tracepoint:syscalls:sys_enter_epoll_pwait
/@busy_start[tid]/
{ @gap_us = hist((nsecs - @busy_start[tid]) / 1000); delete(@busy_start[tid]); }
"""


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs, fmt="%.1f"):
    return (fmt + ".." + fmt) % (min(xs), max(xs)) if xs else "-"


def rotated(items, r):
    k = r % len(items)
    return items[k:] + items[:k]


# ---- gil: a Python loop waiting for the GIL ---------------------------------------

GIL_SECONDS = 3


def gil_round(args):
    """One run of py_gilwork under loopwatch -p: (what its programs ran from go to the
    workload's exit, the workload's truth)."""
    truth = tempfile.mktemp(prefix="cost-gil-", suffix=".json")
    w = subprocess.Popen(["/usr/bin/python3", os.path.join(REPO, "tests", "apps", "py_gilwork.py"),
                          truth, str(GIL_SECONDS), "2", "--go"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline())
    t = bpfstats.Tracer([args.loopwatch, "--json", "-p", str(pid), "-d", "60"],
                        cpu=args.tracer_cpu)
    try:
        ids = bpfstats.prog_ids(t.pid)
        time.sleep(1.5)
        before = bpfstats.snapshot(ids)
        w.stdin.write("go\n")
        w.stdin.flush()
        w.wait(120)
        d = bpfstats.delta(before, bpfstats.snapshot(ids))
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
        t.stop()
    with open(truth) as f:
        res = json.load(f)
    os.unlink(truth)
    return d, res


def gil_section(args, out):
    bpfstats.enable()
    rounds = [gil_round(args) for _ in range(max(args.rounds, 3))]
    progs = ("loop_sched_switch", "loop_sched_wakeup", "loop_sample", "wait_enter", "wait_exit")
    out.append("A Python loop waiting for the GIL (py_gilwork: asyncio.sleep(0) beside two "
               "pure-Python threads, %d s, Debian's python3), ns per run, medians of %d rounds "
               "(range):" % (GIL_SECONDS, len(rounds)))
    res = {}
    for prog in progs:
        v = [bpfstats.per_run(d, prog) for d, _ in rounds if bpfstats.per_run(d, prog)]
        runs = [d.get(bpfstats.short(prog), (0, 0))[0] for d, _ in rounds]
        res[prog] = median(v)
        out.append("  %-18s %8.1f ns (%s), %d runs a round" % (prog, median(v),
                                                             spread(v, "%.0f"), median(runs)))
    per_iter = [sum(ns for _, ns in d.values()) / max(truth["ticks"], 1) for d, truth in rounds]
    per_s = [sum(ns for _, ns in d.values()) / (truth["window_ms"] / 1e3) / 1e6
             for d, truth in rounds]
    gil = [truth["slept_ms"] / truth["window_ms"] for _, truth in rounds]
    res["per_iter"] = median(per_iter)
    out.append("  all programs: %.0f ns a loop iteration (%s), %.2f ms of BPF time a second "
               "(%s); the loop slept %.0f %% of the time on the GIL" % (
                   median(per_iter), spread(per_iter, "%.0f"), median(per_s),
                   spread(per_s, "%.2f"), 100 * median(gil)))
    return res


# ---- kernel: per-program counters ----------------------------------------------------

def kernel_section(args, out):
    # no process is syscost (its threads are created later): the loop threads of
    # others stay unwatched, and every scheduler run is a miss. The samples from perf's
    # cpu-clock on both sides, the rows' loop_sample and floor_sample: one run per
    # sample at a steady 997 Hz (the floor's tick program runs on every hrtimer)
    rows, verified = bpfstats.against_floor(
        [os.path.join(args.bin, "floor"), "-d", "300", "-F", "997"],
        [args.loopwatch, "--json", "--comm", "syscost", "-d", "300", "--sample-hz", "997"],
        os.path.join(args.bin, "syscost"), KERNEL_CASES, args.rounds, args.cpu,
        tracer_cpu=args.tracer_cpu,
        progress=lambda r: print("kernel round %d/%d" % (r + 1, args.rounds), file=sys.stderr))
    res = {}

    def cell(config, case, prog):
        return [bpfstats.per_run(d, prog) for d in rows[config][case]
                if bpfstats.per_run(d, prog) is not None]

    out.append("The kernel's counters (bpf_stats via our own BPF_ENABLE_STATS fd), ns per run,")
    out.append("medians of %d interleaved rounds (range):" % args.rounds)
    out.append("%-34s | %-18s | %18s | %18s | %9s" % ("case", "program", "loopwatch",
                                                      "floor (empty)", "over"))
    out.append("-" * 34 + "-+-" + "-" * 18 + "-+-" + "-" * 18 + "-+-" + "-" * 18 + "-+-" + "-" * 9)
    labels = {"epoll0": "hot loop: epoll_wait(0)", "pingpong": "switches, no loop thread",
              "loop-busy20": "loop of 20 us iterations"}
    progs = {"epoll0": ("enter", "exit"), "pingpong": ("switch", "wakeup"),
             "loop-busy20": ("sample",)}
    for case, _ in KERNEL_CASES:
        for role in progs[case]:
            lw = cell("loopwatch", case, LW[role])
            fl = cell("floor", case, FLOOR[role])
            res[(case, role)] = (median(lw), median(fl))
            out.append("%-34s | %-18s | %8.1f %9s | %8.1f %9s | %+9.1f" % (
                labels[case], LW[role], median(lw), spread(lw, "%.0f"), median(fl),
                spread(fl, "%.0f"), median(lw) - median(fl)))
    # per iteration, switch and sample: over the floor round by round, then the median
    per_iter, per_switch, sample_hit = [], [], []
    for i in range(args.rounds):
        it, sw, hit = bpfstats.over_floor(rows, i)
        per_iter.append(it)
        per_switch.append(sw)
        if None not in hit:
            sample_hit.append(list(hit))
    res["per_iter"] = per_iter
    res["per_switch"] = per_switch
    res["sample_hit"] = sample_hit
    out.append("")
    out.append("per loop iteration (entry + exit), over the floor: %+.1f ns (%s)" % (
        median(per_iter), spread(per_iter)))
    out.append("per context switch of threads that are no loop (a switch and its share of "
               "wakeups), over the floor: %+.1f ns (%s)" % (median(per_switch),
                                                             spread(per_switch)))
    if sample_hit:
        out.append("a CPU sample of the 20 us loop: %.1f ns, floor %.1f ns (the loop's CPU's "
                   "samples alone)" % (median([h[0] for h in sample_hit]),
                                       median([h[1] for h in sample_hit])))
    out.append("")
    out.append("verifier: instructions processed per program (once per load):")
    total = 0
    for name, n in sorted(verified.items(), key=lambda kv: -kv[1]):
        out.append("  %-24s %8d" % (name, n))
        total += n
    out.append("  %-24s %8d" % ("total", total))
    res["verified"] = total
    return res


# ---- node: throughput under wrk ------------------------------------------------------

def wrk_run(port, seconds, cpu):
    """(requests per second, requests) of one wrk run."""
    r = subprocess.run(["taskset", "-c", str(cpu), "wrk", "-t1", "-c16", "-d%ds" % seconds,
                        "http://127.0.0.1:%d/ping" % port], stdout=subprocess.PIPE, text=True,
                       check=True)
    rps = float(re.search(r"Requests/sec:\s+([0-9.]+)", r.stdout).group(1))
    return rps, int(re.search(r"(\d+) requests in", r.stdout).group(1))


def node_section(args, out):
    """Requests per second, node's own CPU time per request, and the BPF run time per
    request. On a shared host other tenants take node's CPU for seconds at a time,
    which moves the first by tens of percent between identical rounds; the second
    counts only what node's threads ran (a tracer's programs run in node's context, on
    its syscalls and switches), the third only the tracer's programs (on every CPU and
    for every process: wrk's and other tenants' calls too, so an upper bound)."""
    bpfstats.enable()
    server = subprocess.Popen(["taskset", "-c", str(args.cpu), NODE,
                               os.path.join(HERE, "nodeping.js")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline())
    script = tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False)
    script.write(BPFTRACE_GAPS)
    script.close()
    wrk_cpu = 0 if args.cpu != 0 else 1
    configs = ["none", "floor", "loopwatch", "bpftrace"]
    rows = {c: [] for c in configs}     # per round: (req/s, node CPU us/req, BPF ns/req)
    try:
        wrk_run(port, 1, wrk_cpu)           # node's JIT warmed up
        for r in range(args.node_rounds):
            print("node round %d/%d" % (r + 1, args.node_rounds), file=sys.stderr)
            for config in rotated(configs, r):
                t = None
                if config == "floor":
                    t = bpfstats.Tracer([os.path.join(args.bin, "floor"), "-d", "300"])
                elif config == "loopwatch":
                    t = bpfstats.Tracer([args.loopwatch, "--json", "-d", "300"])
                elif config == "bpftrace":
                    t = bpfstats.Tracer(["bpftrace", script.name], ready="Attaching",
                                        ready_on_stdout=True)
                try:
                    ids = bpfstats.prog_ids(t.pid) if t else set()
                    # the tracer's first sight of the process (its setup) stays out
                    wrk_run(port, 1, wrk_cpu)
                    time.sleep(0.3)
                    c0, b0 = threads_cpu_ns(server.pid), bpfstats.snapshot(ids)
                    rps, n = wrk_run(port, args.node_seconds, wrk_cpu)
                    cpu = threads_cpu_ns(server.pid) - c0
                    bpf = sum(ns for _, ns in bpfstats.delta(b0, bpfstats.snapshot(ids)).values())
                    rows[config].append((rps, cpu / 1e3 / n, bpf / n))
                finally:
                    if t:
                        t.stop()
    finally:
        server.kill()
        server.wait()
        os.unlink(script.name)
    ratios, cpu_ratios = {}, {}
    for c in configs:
        ratios[c] = [x[0] / b[0] for x, b in zip(rows[c], rows["none"])]
        # what node could serve with a CPU of its own: the inverse of its cost
        cpu_ratios[c] = [b[1] / x[1] for x, b in zip(rows[c], rows["none"])]
    out.append("Node /ping, saturated (wrk -t1 -c16, %d s a measurement; node on CPU %d, wrk "
               "on CPU %d), %d interleaved rounds; node's CPU: all its threads' schedstat; "
               "BPF: the tracer's programs' bpf_stats:" % (args.node_seconds, args.cpu,
                                                         wrk_cpu, args.node_rounds))
    out.append("%-34s | %6s | %7s | %11s | %7s | %7s | %11s | %8s" % (
        "", "req/s", "of none", "range", "CPU us", "of none", "range", "BPF ns"))
    labels = {"none": "untraced", "floor": "floor (empty programs, same hooks)",
              "loopwatch": "loopwatch, system-wide, defaults",
              "bpftrace": "bpftrace epoll-gap histogram"}
    for c in configs:
        col = lambda i: [x[i] for x in rows[c]]
        out.append("%-34s | %6.0f | %6.1f%% | %11s | %7.2f | %6.1f%% | %11s | %8.0f" % (
            labels[c], median(col(0)), 100 * median(ratios[c]),
            spread([100 * x for x in ratios[c]], "%.0f"), median(col(1)),
            100 * median(cpu_ratios[c]), spread([100 * x for x in cpu_ratios[c]], "%.0f"),
            median(col(2))))
    lw_ns = median([x[2] for x in rows["loopwatch"]])
    lw_cpu = median([x[1] for x in rows["none"]]) * 1e3
    out.append("loopwatch's programs, all of them, every CPU: %.0f ns per request, %.1f %% of "
               "node's untraced %.1f us (so capacity >= %.1f %% before the hooks' own cost)" % (
                   lw_ns, 100 * lw_ns / lw_cpu, lw_cpu / 1e3, 100 * lw_cpu / (lw_cpu + lw_ns)))
    return {"ratios": ratios, "cpu_ratios": cpu_ratios, "bpf_share": lw_ns / lw_cpu}


# ---- life: start and exit ------------------------------------------------------------

def uprobe_links(pid):
    """The uprobes process pid holds through its links (its fds' fdinfo): a perf-event
    link's one, or a uprobe_multi link's count (Linux 6.6+, where loopwatch makes one
    link per file, process and direction)."""
    n = 0
    d = "/proc/%d/fdinfo" % pid
    try:
        fds = os.listdir(d)
    except OSError:
        return 0
    for fd in fds:
        try:
            with open(os.path.join(d, fd)) as f:
                info = f.read()
        except OSError:
            continue
        if "event_type:\tuprobe" in info:
            n += 1
        elif "link_type:\tuprobe_multi" in info:
            m = re.search(r"^uprobe_cnt:\s*(\d+)", info, re.M)
            n += int(m.group(1)) if m else 1
    return n


class LineTimes:
    """When each line of a stream arrived (seconds since t0), read by a thread."""

    def __init__(self, stream, t0):
        self.t0, self.lines = t0, []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append((time.monotonic() - self.t0, line))

    def first(self, text):
        return next((t for t, line in self.lines if text in line), None)


def life_section(args, out):
    node = subprocess.Popen([NODE, os.path.join(HERE, "nodeping.js")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    node.stdout.readline()
    tracing, probes, exits, caught, released = [], [], [], [], []
    try:
        time.sleep(0.5)
        for r in range(args.rounds):
            print("life round %d/%d" % (r + 1, args.rounds), file=sys.stderr)
            outf = tempfile.TemporaryFile()
            t0 = time.monotonic()
            lw = subprocess.Popen([args.loopwatch, "--json", "-p", str(node.pid)],
                                  stdout=outf, stderr=subprocess.PIPE, text=True)
            err = LineTimes(lw.stderr, t0)
            # when the number of its uprobe links last changed: all of them attached
            links, t_pr = 0, None

            def poll_links():
                nonlocal links, t_pr
                n = uprobe_links(lw.pid)
                if n != links:
                    links, t_pr = n, time.monotonic() - t0
            while time.monotonic() - t0 < 1.1:
                poll_links()
                time.sleep(0.005)
            # a call 1.1 s after the start: is it counted?
            node.stdin.write("x\n")
            node.stdin.flush()
            node.stdout.readline()
            # stopped once it runs: a signal during the start waits for the attaching
            while err.first("tracing") is None and time.monotonic() - t0 < 10:
                poll_links()
                time.sleep(0.005)
            poll_links()
            time.sleep(0.4)
            ids = bpfstats.prog_ids(lw.pid)
            t1 = time.monotonic()
            lw.send_signal(signal.SIGTERM)
            lw.wait()
            exits.append(time.monotonic() - t1)
            # its child releases the programs in the background, holding the kernel's
            # tracepoint mutex a grace period at a time: the next start would wait on it
            while any(bpfstats.prog_info(i) for i in ids) and time.monotonic() - t1 < 30:
                time.sleep(0.02)
            released.append(time.monotonic() - t1)
            err.thread.join(5)
            t_tr = err.first("tracing")
            tracing.append(t_tr if t_tr is not None else float("inf"))
            probes.append(t_pr if links else float("inf"))
            outf.seek(0)
            n = 0
            for line in outf.read().decode().splitlines():
                if '"probe_summary"' in line and '"JSON.stringify"' in line:
                    m = re.search(r'"calls":(\d+)', line)
                    n = int(m.group(1)) if m else 0
            caught.append(n)
    finally:
        node.kill()
        node.wait()
    ms = lambda xs: [1000 * x for x in xs]
    out.append("Start and exit, loopwatch --json -p NODE (a running node), %d runs (ms):" %
               args.rounds)
    out.append("  exec -> \"tracing\"                  median %6.0f   %s" % (
        median(ms(tracing)), spread(ms(tracing), "%.0f")))
    out.append("  exec -> built-in probes attached   median %6.0f   %s" % (
        median(ms(probes)), spread(ms(probes), "%.0f")))
    out.append("  JSON.stringify 1.1 s after exec    counted in %d of %d runs" % (
        sum(1 for n in caught if n >= 1), len(caught)))
    out.append("  SIGTERM -> exited                  median %6.0f   %s" % (
        median(ms(exits)), spread(ms(exits), "%.0f")))
    out.append("  SIGTERM -> programs released       median %6.0f   %s  (by its child, in the "
               "background)" % (median(ms(released)), spread(ms(released), "%.0f")))
    return {"tracing": tracing, "probes": probes, "exits": exits, "caught": caught}


# ---- collector: 100 loop threads -----------------------------------------------------

def proc_cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def threads_cpu_ns(pid):
    """CPU time of all the threads of a process, in ns (their schedstat)."""
    ns = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                ns += int(f.read().split()[0])
        except OSError:
            pass        # a thread that just exited
    return ns


def proc_mem_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def collector_section(args, out, threads=100, seconds=12.0):
    fleet = subprocess.Popen([os.path.join(args.bin, "loopfleet"), "fleet", str(threads),
                              str(seconds + 8)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    pid = int(fleet.stdout.readline())
    fleet.stdin.write("go\n")
    fleet.stdin.flush()
    time.sleep(0.5)
    lw = bpfstats.Tracer([args.loopwatch, "--json", "-p", str(pid), "-d", "300"])
    lw.p.stdout = None
    try:
        time.sleep(3)           # setup and the first intervals stay out
        c0, t0 = proc_cpu_s(lw.p.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = proc_cpu_s(lw.p.pid), time.monotonic()
        rss = proc_mem_kb(lw.p.pid, "VmRSS")
        hwm = proc_mem_kb(lw.p.pid, "VmHWM")
    finally:
        lw.stop()
        fleet.kill()
        fleet.wait()
    share = (c1 - c0) / (t1 - t0)
    out.append("Collector with %d loop threads (~500 iterations/s each), over %.0f s: "
               "%.2f %% of one core; RSS %.1f MB (peak %.1f MB)" % (
                   threads, t1 - t0, 100 * share, rss / 1024, hwm / 1024))
    return {"share": share, "rss_mb": rss / 1024}


# ---- stalls: samples per on-CPU stall ------------------------------------------------

def stalls_section(args, out, count=20, ms=20):
    w = subprocess.Popen([os.path.join(args.bin, "loopfleet"), "stalls", str(count), str(ms)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = int(w.stdout.readline())
    outf = tempfile.TemporaryFile()
    lw = subprocess.Popen([args.loopwatch, "--json", "-p", str(pid)], stdout=outf,
                          stderr=subprocess.PIPE)
    while b"tracing" not in lw.stderr.readline():
        pass
    w.stdin.write("go\n")
    w.stdin.flush()
    oncpu = [int(x) / 1e6 for x in w.stdout.read().split()]
    w.wait()
    time.sleep(0.2)
    lw.send_signal(signal.SIGINT)
    lw.wait()
    outf.seek(0)
    samples = []
    for line in outf.read().decode().splitlines():
        e = json.loads(line)
        if e.get("type") == "stall" and e.get("pid") == pid:
            samples.append((sum(s.get("samples", 0) for s in e.get("stacks", [])),
                            e["oncpu_ms"]))
    per_ms = [n / c for n, c in samples if c > 0]
    out.append("CPU samples per stall of %d ms of CPU work at the defaults (%d stalls seen of "
               "%d; the workload's own on-CPU time %s ms): median %s, fewest %s; %.2f per "
               "on-CPU ms" % (ms, len(samples), count, spread(oncpu, "%.1f"),
                              median([n for n, _ in samples]),
                              min([n for n, _ in samples], default=0), median(per_ms)))
    return {"samples": [n for n, _ in samples], "count": count}


# ---- targets -------------------------------------------------------------------------

def targets(res, out):
    rows = []

    def row(what, target, measured, ok):
        rows.append((what, target, measured, "met" if ok else "NOT met"))

    k = res.get("kernel")
    if k:
        v = median(k["per_iter"])
        row("BPF per loop iteration, over the floor", "<= 150 ns", "%+.1f ns" % v, v <= 150)
        v = median(k["per_switch"])
        row("context switch, no loop thread, over floor", "<= 30 ns", "%+.1f ns" % v, v <= 30)
        if k["sample_hit"]:
            v = median([h[0] - h[1] for h in k["sample_hit"]])
            row("CPU sample of a 20 us iteration, over floor", "no stack walk (< 1 us)",
                "%+.0f ns" % v, v < 1000)
    n = res.get("node")
    if n:
        v = 100 * median(n["cpu_ratios"]["loopwatch"])
        row("node /ping capacity under loopwatch", ">= 98 %",
            "%.1f %% by CPU/request (floor %.1f %%, bpftrace %.1f %%); req/s %.0f %% (bpftrace "
            "%.0f %%); its BPF %.1f %% of a request" % (
                v, 100 * median(n["cpu_ratios"]["floor"]),
                100 * median(n["cpu_ratios"]["bpftrace"]), 100 * median(n["ratios"]["loopwatch"]),
                100 * median(n["ratios"]["bpftrace"]), 100 * n["bpf_share"]), v >= 98)
    s = res.get("stalls")
    if s and s["samples"]:
        v = min(s["samples"])
        row("CPU samples per 20 ms on-CPU stall", ">= 5", "fewest %d, median %s" % (
            v, median(s["samples"])), v >= 5 and len(s["samples"]) == s["count"])
    life = res.get("life")
    if life:
        ready = [max(t, p) for t, p in zip(life["tracing"], life["probes"])]
        v = 1000 * median(ready)
        row("start: \"tracing\" and probes attached", "<= 500 ms",
            "median %.0f ms, worst %.0f ms" % (v, 1000 * max(ready)), v <= 500)
        c = sum(1 for x in life["caught"] if x >= 1)
        row("JSON.stringify 1.1 s after start counted", "every run", "%d of %d" % (
            c, len(life["caught"])), c == len(life["caught"]))
        v = 1000 * max(life["exits"])
        row("exit after SIGTERM", "<= 300 ms", "worst %.0f ms" % v, v <= 300)
    c = res.get("collector")
    if c:
        v = 100 * c["share"]
        row("collector CPU, 100 loop threads", "<= 1 % of a core", "%.2f %% (RSS %.0f MB)" % (
            v, c["rss_mb"]), v <= 1)
    out.append("Targets:")
    for r in rows:
        out.append("  %-44s %-23s %-7s %s" % (r[0], r[1], r[3], r[2]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loopwatch", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("COST_ROUNDS", "5")))
    ap.add_argument("--node-rounds", type=int,
                    default=int(os.environ.get("COST_NODE_ROUNDS", "11")))
    ap.add_argument("--node-seconds", type=int, default=2)
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--cpu", type=int, default=os.cpu_count() - 1,
                    help="the CPU the workloads are pinned to")
    args = ap.parse_args()
    args.tracer_cpu = 0 if args.cpu != 0 and os.cpu_count() > 1 else None
    if os.geteuid() != 0:
        sys.exit("cost.py: needs root")
    res = {}
    blocks = []
    load = []
    for name in args.sections.split(","):
        if name not in SECTIONS:
            sys.exit("cost.py: no section %r (%s)" % (name, ", ".join(SECTIONS)))
        if name == "node" and not (os.path.exists(NODE) and shutil.which("wrk") and
                                   shutil.which("bpftrace")):
            print("cost.py: node, wrk and bpftrace are needed for the node rows: left out",
                  file=sys.stderr)
            continue
        out = []
        load.append("%s: load %.1f, %d other tracers" % (name, os.getloadavg()[0],
                                                     len(other_tracers())))
        res[name] = globals()[name + "_section"](args, out)
        blocks.append(out)
    for out in blocks:
        print("\n".join(out))
        print()
    out = []
    targets(res, out)
    print("\n".join(out))
    print()
    print("Host at each section's start (1-min load average; other loopwatch or bpftrace "
          "processes, whose programs run beside ours and whose detaching holds the kernel's "
          "tracepoint mutex): " + "; ".join(load))


def other_tracers():
    """Pids of loopwatch and bpftrace processes (between sections none is ours, but
    for a child of ours still releasing programs for a second)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/comm" % pid) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm in ("loopwatch", "bpftrace"):
            pids.append(int(pid))
    return pids


if __name__ == "__main__":
    main()

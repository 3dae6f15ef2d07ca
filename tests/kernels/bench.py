#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What the wait hooks cost, measured inside one VM (make bench-kernels, through
tests/kernels/run.sh): under TCG absolute times do not transfer to hardware, so what
is reported is each configuration's ratio to the same kernel with nothing attached.

Configurations, in interleaved rounds (the order rotates every round):
  none         nothing attached
  floor        empty programs on loopwatch's tracepoints (tools/bench/floor): what the
               syscall tracepoints cost whatever runs on them
  tracepoints  loopwatch with fentry pretended absent (LOOPWATCH_TEST_ABSENT=fentry,
               test-only): the syscall tracepoint hooks
  fentry       loopwatch as it starts on this kernel (fentry/fexit where allowed)
Workloads (tools/bench/syscost, median of its batches):
  getppid      an unrelated process's syscall, on a thread that never waits
  epoll0       epoll_wait(.., 0) on a loop thread: one loop iteration per call
and the kernel's own run time per run of the wait hooks' entry and exit programs
(bpf_stats, through our own BPF_ENABLE_STATS descriptor) during epoll0.

usage: bench.py BUILD [ROUNDS]
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "bench"))
import bpfstats  # noqa: E402

CONFIGS = ("none", "floor", "tracepoints", "fentry")
# (workload, calls): each a few seconds under TCG
WORKLOADS = (("getppid", 300000), ("epoll0", 50000))
# the wait hooks' programs, (entry, exit): the floor's, loopwatch's tracepoint and
# fentry ones (whichever it loaded: "fentry" is the tracepoints where fentry is refused)
FLOOR_PROGS = ("enter_epoll_wait", "exit_epoll_wait")
LW_PROGS = (("fe_epoll_wait", "fx_epoll_wait"), ("wait_enter", "wait_exit"))
HOOK_CONFIGS = ("floor", "tracepoints", "fentry")


def tracer(build, config):
    lw = os.path.join(build, "loopwatch")
    if config == "none":
        return None
    if config == "floor":
        return bpfstats.Tracer([os.path.join(build, "bench", "floor"), "-d", "600"])
    env = ["env", "LOOPWATCH_TEST_ABSENT=fentry"] if config == "tracepoints" else ["env"]
    return bpfstats.Tracer(env + [lw, "-d", "600"], timeout=120)


def syscost(build, workload, calls):
    out = subprocess.run([os.path.join(build, "bench", "syscost"), workload, str(calls)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split()[0])


def main():
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    bpfstats.enable()
    ns = {c: {w: [] for w, _ in WORKLOADS} for c in CONFIGS}
    hook_ns = {c: [] for c in HOOK_CONFIGS}
    hooks_said = {}
    start_s = {c: [] for c in CONFIGS if c != "none"}
    verified = {}
    for r in range(rounds):
        for config in CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]:
            t0 = time.monotonic()
            t = tracer(build, config)
            try:
                if t is not None:
                    start_s[config].append(time.monotonic() - t0)
                if t is not None and config != "floor":
                    t.err.seek(0)
                    for line in t.err.read().decode(errors="replace").splitlines():
                        if line.startswith("loopwatch: tracing event loops"):
                            hooks_said[config] = line
                ids = bpfstats.prog_ids(t.pid) if t else set()
                if ids and config not in verified:
                    verified[config] = sum(v[2] for v in bpfstats.snapshot(ids).values())
                for workload, calls in WORKLOADS:
                    before = bpfstats.snapshot(ids)
                    ns[config][workload].append(syscost(build, workload, calls))
                    if workload == "epoll0" and config in HOOK_CONFIGS:
                        d = bpfstats.delta(before, bpfstats.snapshot(ids))
                        for progs in (FLOOR_PROGS,) if config == "floor" else LW_PROGS:
                            enter, exit_ = (bpfstats.per_run(d, p) for p in progs)
                            if enter is not None and exit_ is not None:
                                hook_ns[config].append(enter + exit_)
                                break
            finally:
                if t is not None:
                    t.stop()
        print("[round %d of %d done]" % (r + 1, rounds), flush=True)

    print("bench %s: %d interleaved rounds; medians (min..max); ratio: to none in the "
          "same round, median of the rounds' (min..max)" % (os.uname().release, rounds))
    for config, line in sorted(hooks_said.items()):
        print("bench %s: %s" % (config, line))
    print("%-12s %22s %22s %22s %22s %14s" % ("config", "getppid ns/call", "ratio",
                                              "epoll0 ns/iteration", "ratio",
                                              "hooks BPF ns/it"))
    for config in CONFIGS:
        cells = []
        for w, _ in WORKLOADS:
            v = ns[config][w]
            r = [a / b for a, b in zip(v, ns["none"][w])]
            cells.append("%6.0f (%6.0f..%6.0f)" % (statistics.median(v), min(v), max(v)))
            cells.append("%6.3f (%6.3f..%6.3f)" % (statistics.median(r), min(r), max(r)))
        h = hook_ns.get(config)
        cells.append("%14.0f" % statistics.median(h) if h else "%14s" % "-")
        print("%-12s %s %s %s %s %s" % ((config,) + tuple(cells)))
    for config in start_s:
        print("bench %s: ready in %.1f s (median; %.1f..%.1f), %d instructions verified" % (
            config, statistics.median(start_s[config]), min(start_s[config]),
            max(start_s[config]), verified.get(config, 0)))
    print("bench done")


if __name__ == "__main__":
    main()

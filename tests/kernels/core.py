#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The core end-to-end cases test-kernels runs in each guest (tests/kernels/run.sh),
against the workloads' own ground truth, as tests/e2e's do. Under TCG a syscall's path
takes tens of microseconds more than on hardware and a vCPU is taken away at will, so
durations get 10 % + 2 ms where tests/e2e allows 3 % + 0.3 ms; what is counted
(iterations, stalls, which functions are in the stacks) stays exact.

usage: core.py BUILD [CASE...]   (cases: loop, stalls, tick, hz, prom, hooks; default all)
Prints "PASS kernel.CASE (Ns)" or "FAIL kernel.CASE (Ns)" and the reason, as run.py.
"""
import os
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

from lwtest import Workload, iteration_bounds, load_truth, nearest_rank, of_type, run_traced, tmpfile  # noqa: E402,E501
from test_features import FENTRY, FENTRY_PROGS, TRACEPOINT_PROGS, run_hooks_case  # noqa: E402,E501
from test_loop import run_loopwork  # noqa: E402
from test_prom import PromLoopwatch, one, read_metrics  # noqa: E402
from test_stalls import EXPECT, THRESHOLD_MS, frame_names, run_stallwork, with_edges  # noqa: E402

REL, ABS_MS = 0.10, 2.0
# Loading and verifying the programs takes 10-30 s under TCG (the fentry hooks verify
# the wait entry's body once per call: 7 times, not once), where the e2e tests wait 15
import lwtest  # noqa: E402
lwtest.Loopwatch.__init__.__kwdefaults__["timeout"] = 90


class Context:
    def __init__(self, build):
        self.build = build
        self.loopwatch = os.path.join(build, "loopwatch")

    def workload(self, name):
        return os.path.join(self.build, "workloads", name)


def near(got, lo, hi):
    return lo - max(REL * lo, ABS_MS) <= got <= hi + max(REL * hi, ABS_MS)


def assert_loop_tracked(truth, lines):
    by_tid = {s["tid"]: s for s in of_type(lines, "summary", pid=truth["pid"])}
    want = {t["tid"] for t in truth["threads"]}
    assert set(by_tid) == want, "loop threads %s, want %s" % (sorted(by_tid), sorted(want))
    for t in truth["threads"]:
        s, (lo, hi) = by_tid[t["tid"]], iteration_bounds(t)
        assert abs(s["iterations"] - len(lo)) <= 0.01 * len(lo), \
            "iterations %d vs %d" % (s["iterations"], len(lo))
        for key, q in (("p50", 0.5), ("p90", 0.9)):
            got, a, b = s["lag_ms"][key], nearest_rank(lo, q), nearest_rank(hi, q)
            assert near(got, a, b), "%s %.3f ms vs the workload's %.3f..%.3f" % (key, got, a, b)


def case_loop(ctx):
    """Two loop threads tracked, each with every iteration counted and its p50/p90 within
    the TCG tolerance of its own measure."""
    truth, lines = run_loopwork(ctx, "mixed,fixed3", 600)
    assert_loop_tracked(truth, lines)


def case_hooks(ctx):
    """The hooks the start line names are the programs loaded: fentry/fexit where the
    kernel allows it, and the syscall tracepoints with fentry pretended absent
    (LOOPWATCH_TEST_ABSENT, test-only), the loop tracked either way."""
    for absent in ("", "fentry"):
        hooks, progs, truth, lines = run_hooks_case(ctx, absent)
        assert len(hooks) == 1, hooks
        fentry = hooks[0] == FENTRY
        assert not (absent and fentry), hooks
        if absent:
            assert "fentry absent: LOOPWATCH_TEST_ABSENT" in hooks[0], hooks
        want, other = (FENTRY_PROGS, TRACEPOINT_PROGS) if fentry else (TRACEPOINT_PROGS,
                                                                        FENTRY_PROGS)
        assert want <= progs and not progs & other, "%s: programs %s" % (hooks[0],
                                                                         sorted(progs))
        assert_loop_tracked(truth, lines)


def case_stalls(ctx):
    """A CPU spin and a sleep, three times each: every iteration over the threshold by
    the workload's measure is a stall of about its length, each injecting function is
    in the stacks of its stall or of its blocking call, and each spin has CPU samples.
    (No fsync: the guest's /var is a tmpfs, where it never blocks.) "About": up to its
    edges more, which under TCG
    are milliseconds on CPU at times (stallwork measures them, groundtruth.h)."""
    kinds = ("cpu", "sleep")
    truth, lines = run_stallwork(ctx, ",".join(kinds), 3)
    records = with_edges(truth)
    try:
        check_stalls(truth, records, lines, kinds)
    except AssertionError:
        # what was compared, for a failure's log (the guest's is all there is)
        offset = truth["mono_to_wall"]
        for r in records:
            print("  workload %-5s at %.6f: %.3f ms busy, +%.3f ms edges (%.3f on CPU)" % (
                r["kind"], r["start_ns"] / 1e9 + offset, r["busy_ms"], r["edges_ms"],
                r["edge_cpu_ns"] / 1e6))
        for s in sorted(of_type(lines, "stall", pid=truth["pid"]), key=lambda s: s["ts"]):
            print("  stall          at %.6f: %.3f ms (cpu %.3f blocked %.3f runq %.3f)" % (
                s["ts"], s["duration_ms"], s["oncpu_ms"], s["blocked_ms"], s["runq_ms"]))
        raise


def case_tick(ctx):
    """The default sampling: three CPU spins are stalls of about their length, with their
    function and CPU samples in their stacks: from the tick and its ~1 ms timer where the
    guest's tick is an hrtimer, else from perf at 997 Hz after a line saying why. Every
    case loads the switch's program, which restarts that timer (bpf/sched.bpf.c); this
    one runs it."""
    stderr = run_spins(ctx)
    fell_back = [ln for ln in stderr.splitlines() if "not the scheduler tick" in ln]
    print("  samples: %s" % (fell_back[0] if fell_back else "at the tick"))


def case_hz(ctx):
    """--sample-hz 997: the same spins sampled by perf's cpu-clock on every CPU."""
    run_spins(ctx, "--sample-hz", "997")


def run_spins(ctx, *args):
    out = tmpfile()
    _, lines, stderr = run_traced(ctx, [ctx.workload("stallwork"), out, "cpu", "3", "--go"],
                                  "--threshold", THRESHOLD_MS, *args, with_stderr=True)
    truth = load_truth(out)
    check_stalls(truth, with_edges(truth), lines, ("cpu",))
    return stderr


def check_stalls(truth, records, lines, kinds):
    stalls = of_type(lines, "stall", pid=truth["pid"])
    blocks = of_type(lines, "blocking_call", pid=truth["pid"])
    offset = truth["mono_to_wall"]
    spans = [(r["start_ns"] / 1e9 + offset, r["start_ns"] / 1e9 + offset + r["busy_ms"] / 1e3)
             for r in records]

    def overlap(s, span):
        return min(s["ts"] + s["duration_ms"] / 1e3, span[1]) - max(s["ts"], span[0])

    # Each stall is its iteration by the most overlap, not by any: the workload and
    # loopwatch each map CLOCK_MONOTONIC to wall time with a read of both clocks, and
    # under TCG the two reads can be 0.3 ms apart, more than the gap between a sleep
    # iteration that outlasted its 40 ms tick and the next one.
    by_record = {}
    for s in stalls:
        i = max(range(len(records)), key=lambda i: overlap(s, spans[i]))
        assert overlap(s, spans[i]) > 0, "a stall the workload did not see: %s" % s
        by_record.setdefault(i, []).append(s)
    found = set()
    for i, r in enumerate(records):
        if r["busy_ms"] < THRESHOLD_MS * (1 + REL) + ABS_MS:
            continue
        mine = by_record.get(i, [])
        assert len(mine) == 1, "%s iteration of %.2f ms: stalls %s" % (
            r["kind"], r["busy_ms"], [s["duration_ms"] for s in mine])
        s = mine[0]
        # edges: what loopwatch sees beyond the workload's own timing, around the wait
        # calls before and after (stallwork's edge_ns, groundtruth.h: the thread's CPU
        # time there, and its wait for a CPU if preempted)
        assert near(s["duration_ms"], r["busy_ms"], r["busy_ms"] + r["edges_ms"]), \
            "stall %.2f ms, the workload's %s iteration %.2f ms (+%.2f ms edges)" % (
                s["duration_ms"], r["kind"], r["busy_ms"], r["edges_ms"])
        func = EXPECT[r["kind"]][0]
        names = set()
        for st in s["stacks"]:
            names |= frame_names(st["frames"])
        for blk in blocks:
            if s["ts"] - 0.001 <= blk["ts"] <= s["ts"] + s["duration_ms"] / 1e3:
                names |= frame_names(blk["stack"])
        if func in names:
            found.add(r["kind"])
        # a spin's CPU samples (bpf/sample.bpf.c)
        if r["kind"] == "cpu":
            assert any(st["cause"] == "cpu" and st["samples"] > 0 for st in s["stacks"]), \
                "no CPU sample in a %.2f ms spin: %s" % (r["busy_ms"], s["stacks"])
    assert found == set(kinds), "injecting functions found in stacks for %s of %s" % (
        sorted(found), kinds)
    summary = of_type(lines, "summary", pid=truth["pid"])
    assert summary and summary[0]["iterations"] == len(records), (summary, len(records))


def case_prom(ctx):
    """The Prometheus file: every iteration of both threads counted, no loop thread left
    untracked (table full or record refused)."""
    out = tmpfile()
    w = Workload([ctx.workload("loopwork"), out, "mixed,fixed3", "600", "--go"])
    lw = PromLoopwatch(ctx, tempfile.mkdtemp(prefix="lwk-prom-"),
                       "-p", w.pid, interval=0.5)
    try:
        lw.start()
        w.go()
        w.wait()
        time.sleep(1.5)
        samples = read_metrics(lw.path)
    finally:
        w.kill()
        lw.stop()
    truth = load_truth(out)
    n = sum(len(t["busy_ns"]) for t in truth["threads"])
    got = one(samples, "loopwatch_loop_iterations_total", comm="loopwork")[1]
    assert abs(got - n) <= 0.01 * n, "iterations %d vs the workload's %d" % (got, n)
    for name in ("loopwatch_loop_records_refused_total", "loopwatch_loop_map_full_total"):
        assert one(samples, name)[1] == 0, name


CASES = {"loop": case_loop, "stalls": case_stalls, "tick": case_tick, "hz": case_hz,
         "prom": case_prom, "hooks": case_hooks}


def main():
    ctx = Context(sys.argv[1])
    failed = 0
    for name in sys.argv[2:] or list(CASES):
        t0 = time.time()
        try:
            CASES[name](ctx)
            print("PASS kernel.%s (%.1fs)" % (name, time.time() - t0), flush=True)
        except Exception:
            failed += 1
            print("FAIL kernel.%s (%.1fs)" % (name, time.time() - t0), flush=True)
            traceback.print_exc()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

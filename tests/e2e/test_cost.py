# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Guards on what loopwatch costs the kernel, on what stays the same on a loaded host:
the instructions the verifier processes (exact for a kernel and a compiler), and the
stack walks taken, counted against what the workload itself measured. Nanoseconds are
measured by make bench (tools/bench), never asserted here: a shared host moves them by
more than any bound that would still catch a regression.
"""
import json
import math
import os
import re
import signal
import struct
import subprocess
import time

from lwtest import Loopwatch, Workload, bpfstats, load_truth, tmpfile, xlated

# make bench measured ~192k instructions (708k with the V8 walk unrolled)
VERIFIED_INSNS = 350000
# runq__walk_wanted (bpf/iteration.bpf.h): a wait for a CPU is walked back in user mode
# only in an iteration at least half the slow threshold (the default 10 ms) old
SLOW_MS = 10


def test_verifier_instructions_stay_bounded(ctx):
    lw = Loopwatch(ctx, "-p", os.getpid(), "-d", 30).start()
    try:
        verified = {n: v[2] for n, v in bpfstats.snapshot(bpfstats.prog_ids(lw.proc.pid)).items()}
    finally:
        lw.proc.send_signal(signal.SIGINT)
        lw.stop()
    total = sum(verified.values())
    print("verified %d instructions: %s" % (total, sorted(verified.items(), key=lambda kv: -kv[1])))
    assert total <= VERIFIED_INSNS, verified


KCOUNTERS = re.compile(r"(\d+) preemptions in busy periods, (\d+) stack walks")
# the sampling gate (bpf/maps.bpf.h): 1/16 of the slow threshold of an iteration's own time
GATE_MS = SLOW_MS / 16
# past the gate, samples come at most every ~1 ms: the tick's timer (bpf/sample.bpf.h's
# boost, 1/997 s where the tick is slower) or --sample-hz 997's
SAMPLE_MS = 1000 / 997
# loopwork --waker: a 20 us spin every 0.2 ms
WAKER_MS = 0.2


def test_preempted_short_iterations_take_no_stack_walk(ctx):
    """A loop of 0.1-0.4 ms iterations (loopwork's short profile) sharing one CPU with a
    thread that wakes every 0.2 ms: preempted again and again, and a preemption walks a
    stack only in an iteration already half way to a stall. CPU samples walk only past
    the gate of the iteration's own time, or once for an iteration whose wait for a CPU
    made it half way to a stall: at most that many walks, by the workload's own clock
    and schedstat."""
    out = tmpfile()
    w = Workload(["taskset", "-c", str(os.cpu_count() - 1), ctx.workload("loopwork"), out,
                  "short", "2000", "--waker", "--go"])
    lw = Loopwatch(ctx, "-p", w.pid, "-d", 120, "-v")
    try:
        lw.start()
        w.go()
        w.wait()
        lw.proc.send_signal(signal.SIGINT)
        lw.stop()
    finally:
        w.kill()
        lw.kill()
    truth = load_truth(out)["threads"][0]
    m = KCOUNTERS.search(lw.stderr)
    assert m, lw.stderr[-2000:]
    preempted, walks = (int(x) for x in m.groups())
    allowed = 0
    for busy, runq in zip(truth["busy_ns"], truth["runq_ns"]):
        busy_ms, own_ms = busy / 1e6, (busy - runq) / 1e6
        if busy_ms >= SLOW_MS / 2:
            # the sample owed its longest wait, and a walk at each preemption from then
            # on: the waker's wake-ups while the loop ran (one per WAKER_MS of its own
            # time at most), and a few by other tasks
            allowed += 1 + math.ceil(own_ms / WAKER_MS) + 2
        if own_ms > GATE_MS:
            allowed += math.ceil((own_ms - GATE_MS) / SAMPLE_MS)
    print("%d preemptions in busy periods, %d stack walks; %d allowed by the workload's "
          "own times (%d iterations)" % (preempted, walks, allowed, len(truth["busy_ns"])))
    # the setup did preempt the loop
    assert preempted >= 100, preempted
    # the workload's clocks start a little after the tracer's (read after the wait
    # returns), and its schedstat counts the wait after a wake-up approximately
    assert walks <= allowed + max(3, allowed // 5), (walks, allowed)


# the wait hooks' programs (tracepoints here, fentry where the kernel allows it): each
# runs on every wait call of the machine
WAIT_HOOKS = ("wait_enter", "wait_exit", "fe_epoll_wait", "fx_epoll_wait")
HEADER = re.compile(r"^\S.*\):$")


def test_wait_hooks_ask_the_kernel_little(ctx):
    """A loop thread's wait calls each run a hook at entry and at exit, a few hundred ns on
    a contended host where every helper call costs tens (make bench). Counted in the
    programs as the kernel translated them, their own bodies (not the out-of-line cold
    paths): the task once, its record once, the clock once, the syscall's kind from its
    number (no link cookie), and at entry the user registers (one helper call where the
    kernel has no bpf_rdonly_cast(), else only to learn where they are)."""
    lw = Loopwatch(ctx, "-p", os.getpid(), "-d", 30).start()
    try:
        bodies = {}
        for i in bpfstats.prog_ids(lw.proc.pid):
            lines = xlated(i)
            name = re.match(r"\S+ (\w+)\(", lines[0]).group(1) if lines else ""
            if name in WAIT_HOOKS:
                end = next((k for k, line in enumerate(lines[1:], 1) if HEADER.match(line)),
                           len(lines))
                bodies[name] = re.findall(r"call (\w+)#", "\n".join(lines[:end]))
    finally:
        lw.kill()
    print(bodies)
    assert len(bodies) == 2, sorted(bodies)
    for name, calls in bodies.items():
        assert not [c for c in calls if "cookie" in c], (name, calls)
        for helper in ("bpf_get_current_task_btf", "bpf_ktime_get_ns"):
            assert calls.count(helper) == 1, (name, helper, calls)
        assert len([c for c in calls if c.startswith("bpf_task_storage_get")]) == 1, (
            name, calls)
        assert calls.count("bpf_task_pt_regs") <= (1 if "enter" in name else 0), (name, calls)
        assert len(calls) <= (4 if "enter" in name else 3), (name, calls)


# bpf/maps.bpf.h's loop_tids: a byte per thread id, 64 to an entry
TIDS_PER_ENTRY = 64
LOOP_TID_RECORD = 1


def map_id(pid, name):
    """The id of the BPF map called name that process pid holds open."""
    for i in bpfstats.held_ids(pid, "map"):
        shown = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(i)],
                                          capture_output=True, text=True).stdout or "{}")
        if shown.get("name") == name:
            return i
    return None


def tid_byte(mid, tid):
    key = struct.pack("<I", tid // TIDS_PER_ENTRY)
    r = subprocess.run(["bpftool", "-j", "map", "lookup", "id", str(mid), "key"] +
                       ["0x%02x" % b for b in key], capture_output=True, text=True, check=True)
    return int(json.loads(r.stdout)["value"][tid % TIDS_PER_ENTRY], 16)


def test_loop_tids_follow_the_records(ctx):
    """The scheduler's hooks read a thread's byte in loop_tids before its task storage: a
    byte left clear while the thread has a record would blind them to its switches (its
    run-queue and blocked time booked as on CPU), one left set after it exits would cost
    whatever thread gets the tid next a lookup. Each loop thread of a workload is seen
    with its record's bit while it runs, and every bit of its byte is clear once it has
    exited."""
    out = tmpfile()
    w = Workload([ctx.workload("loopwork"), out, "short,short", "3000", "--go"])
    lw = Loopwatch(ctx, "-p", w.pid, "-d", 120)
    seen = {}
    try:
        lw.start()
        mid = map_id(lw.proc.pid, "loop_tids")
        assert mid is not None, "no loop_tids map held by loopwatch"
        w.go()
        while w.proc.poll() is None:
            try:
                tids = [int(t) for t in os.listdir("/proc/%d/task" % w.pid)]
            except OSError:
                break
            for tid in tids:
                seen[tid] = seen.get(tid, 0) | tid_byte(mid, tid)
            time.sleep(0.05)
        w.wait()
        threads = [t["tid"] for t in load_truth(out)["threads"]]
        after = {tid: tid_byte(mid, tid) for tid in threads}
    finally:
        w.kill()
        lw.kill()
    print("bytes seen while running %s; after the exit %s" % (seen, after))
    assert len(threads) == 2, threads
    for tid in threads:
        assert seen.get(tid, 0) & LOOP_TID_RECORD, (tid, seen)
        assert after[tid] == 0, (tid, after)

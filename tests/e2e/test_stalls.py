"""Stalls and blocking calls, against a workload that injects each cause in its own
named function and records every iteration's busy time and every call's duration."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lwtest import (Loopwatch, in_range, line_requests, load_truth, of_type, run_traced,
                    serve_traced, tmpfile)

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
THRESHOLD_MS = 5  # below the default 10 so that a fast disk's fsync still stalls

CLOCK_MONOTONIC_COARSE = 6  # linux/time.h

# the timer interrupt's frames above a tick's sample (userspace/events/decode.c cuts them)
TICK_FRAMES = ("asm_sysvec_apic_timer_interrupt", "hrtimer_interrupt", "__hrtimer_run_queues")

# kind -> (injecting function, the component it injects, blocking syscalls)
EXPECT = {
    "cpu": ("inject_cpu_spin", "oncpu_ms", None),
    "sleep": ("inject_nanosleep", "blocked_ms", ("clock_nanosleep", "nanosleep")),
    "fsync": ("inject_fsync", "blocked_ms", ("fsync",)),
    "mutex": ("inject_mutex_wait", "blocked_ms", ("futex",)),
    "runq": ("inject_runq_starvation", "runq_ms", None),
}
PARTS = ("oncpu_ms", "blocked_ms", "runq_ms")


def within(got, want, rel):
    return abs(got - want) <= rel * want


def run_stallwork(ctx, kinds, repeat, *flags):
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("stallwork"), out, kinds, str(repeat), "--go"],
                          "--threshold", THRESHOLD_MS, *flags)
    return load_truth(out), lines


def frame_names(stack_frames):
    return {f["func"] for f in stack_frames}


# the least time asleep a blocking kind's call guarantees, in ms: a 30 ms nanosleep sleeps
# at least that; the mutex's holder sleeps 20 ms holding it, but a waiter kept off the CPU
# meanwhile may find it free
ASLEEP_AT_LEAST = {"sleep": 29.5, "mutex": 0.0, "fsync": 0.0}


def with_edges(truth):
    """Each record's busy time as the workload measured it, in ms, how much more a tracer
    may see (the run-queue time at the edges of the waits around it), and the range
    each part of its time must lie in by the workload's own measures:
    - on CPU: at least its CPU clock (which leaves out interrupt and steal time, a VM's
      vCPU taken away; a tracer sees those as time on CPU);
    - waiting for a CPU: schedstat's run_delay, within 15 % (it runs on per-CPU run-queue
      clocks, and a wait that moves between CPUs is counted approximately: seen short by
      up to 40 %, long by up to 10 %), so at least 85 % of it;
    - asleep: none if it never went to sleep (no voluntary context switch), else at least
      what its blocking call guarantees, and at most what the other two leave."""
    recs = truth["records"]
    edges = [r["edge_ns"] for r in recs] + [truth["last_edge_ns"]]
    for i, r in enumerate(recs):
        busy = r["busy_ms"] = r["busy_ns"] / 1e6
        edge = r["edges_ms"] = (edges[i] + edges[i + 1]) / 1e6
        tol = r["tol_ms"] = 0.03 * busy + 0.3
        cpu, rd = r["oncpu_ns"] / 1e6, r["runq_ns"] / 1e6
        asleep_max = 0.0 if not r["sleeps"] else max(0.0, busy - cpu - 0.85 * rd)
        asleep_min = min(ASLEEP_AT_LEAST.get(r["kind"], 0.0), asleep_max) if r["sleeps"] \
            else 0.0
        r["parts"] = {"oncpu_ms": cpu, "runq_ms": rd, "blocked_ms": asleep_min}
        rd_lo = 0.85 * rd
        r["ranges"] = {
            "oncpu_ms": (cpu - tol, busy - rd_lo - asleep_min + tol + edge),
            "runq_ms": (rd_lo - tol, busy - cpu - asleep_min + tol + edge),
            "blocked_ms": (asleep_min - tol, asleep_max + tol),
        }
    return recs


def match_stalls(records, stalls, threshold_ms, truth):
    """Each stall to the workload's iteration it overlaps most (by time); every iteration
    over the threshold by its own measure must have one, one under it by less than its
    edges may, and each stall's duration is its iteration's busy time, plus at most its
    edges (0.3 ms and 3 %: a VM's vCPU may be taken away, steal time, unseen by the
    thread's own counters)."""
    offset = truth["mono_to_wall"]
    spans = [(r["start_ns"] / 1e9 + offset, r["start_ns"] / 1e9 + offset + r["busy_ms"] / 1e3)
             for r in records]

    def overlap(s, span):
        a, b = s["ts"], s["ts"] + s["duration_ms"] / 1e3
        return min(b, span[1]) - max(a, span[0])

    pairs, by_record = [], {}
    for s in stalls:
        i = max(range(len(records)), key=lambda i: overlap(s, spans[i]))
        r = records[i]
        assert overlap(s, spans[i]) > 0 and i not in by_record, \
            "a stall of %.2f ms the workload did not see: %s" % (s["duration_ms"], s)
        assert in_range(s["duration_ms"], r["busy_ms"], r["busy_ms"] + r["edges_ms"], rel=0.03,
                        abs_=0.3), "stall %.2f ms, the workload's %s iteration %.2f ms " \
            "(+%.2f ms edges)" % (s["duration_ms"], r["kind"], r["busy_ms"], r["edges_ms"])
        by_record[i] = s
    for i, r in enumerate(records):
        if r["busy_ms"] >= threshold_ms:
            assert i in by_record, "no stall for the workload's %.2f ms %s iteration" % (
                r["busy_ms"], r["kind"])
        if i in by_record:
            assert (r["busy_ms"] + r["edges_ms"]) * 1.03 + 0.3 >= threshold_ms, (r, by_record[i])
            pairs.append((r, by_record[i]))
    return pairs


def check_breakdown(record, stall):
    """oncpu/blocked/runq each in the range the workload's own measures allow (with_edges);
    the cause is checked where those ranges decide it."""
    ranges = dict(record["ranges"])
    # The scheduler's own clocks can count a wait for a CPU after a wake-up as time on
    # CPU: when the woken thread is picked, the run-queue clock's update is skipped (it
    # was updated at the wake-up), so the thread's CPU clock starts at the wake-up and
    # its run_delay misses the wait -- ~1 ms where an idle vCPU is slow to wake.
    # loopwatch times that wait from the wake-up and the switch-in themselves. What moved
    # between the two parts is at most loopwatch's run-queue time beyond the workload's,
    # and the two parts together still hold what the workload's counters add up to.
    moved = max(0.0, stall["runq_ms"] - record["parts"]["runq_ms"] - record["tol_ms"])
    lo, hi = ranges["oncpu_ms"]
    ranges["oncpu_ms"] = (lo - moved, hi)
    what = "%s: breakdown %s, the workload's ranges %s" % (
        record["kind"], {k: stall[k] for k in PARTS},
        {k: (round(lo, 2), round(hi, 2)) for k, (lo, hi) in ranges.items()})
    for k in PARTS:
        lo, hi = ranges[k]
        assert lo <= stall[k] <= hi, what
    both = record["parts"]["oncpu_ms"] + 0.85 * record["parts"]["runq_ms"]
    assert stall["oncpu_ms"] + stall["runq_ms"] >= both - record["tol_ms"], what
    for k in PARTS:
        if all(ranges[k][0] > ranges[o][1] for o in PARTS if o != k):
            cause = {"oncpu_ms": "cpu", "blocked_ms": "blocked", "runq_ms": "runq"}[k]
            assert stall["cause"] == cause, "cause %s; %s" % (stall["cause"], what)


def check_kind(kind, record, stall, blocks):
    func, component, syscalls = EXPECT[kind]
    check_breakdown(record, stall)
    names = set()
    for s in stall["stacks"]:
        names |= frame_names(s["frames"])
    found = {"stacks": func in names}
    # the culprit is named where the iteration was what it injected, by its own measure
    if record["clean"]:
        found["top"] = func in stall["top"]
    if not syscalls:
        return found
    call_ms = record["call_ns"] / 1e6
    # the blocking call made inside this very iteration: at most the workload's timing of
    # it (which also holds any wait for a CPU before it slept), at least what it surely
    # slept
    inside = [b for b in blocks if stall["ts"] - 0.001 <= b["ts"] <=
              stall["ts"] + stall["duration_ms"] / 1000]
    mine = [b for b in inside if b["syscall"] in syscalls and
            in_range(b["duration_ms"], ASLEEP_AT_LEAST[kind], call_ms, rel=0.05, abs_=0.2)]
    assert mine, "%s: no %s blocking_call of %.2f ms: %s" % (
        kind, syscalls, call_ms, [(b["syscall"], b["duration_ms"]) for b in blocks])
    found["call"] = func in frame_names(mine[0]["stack"])
    assert any(s["name"] in syscalls for s in stall["syscalls"]), stall["syscalls"]
    if kind == "fsync":
        assert "stallwork-" in mine[0].get("path", ""), mine[0]
        assert isinstance(mine[0].get("fd"), int), mine[0]
    return found


def test_each_cause_is_a_stall_with_the_right_breakdown_and_stack(ctx):
    kinds = list(EXPECT)
    truth, lines = run_stallwork(ctx, ",".join(kinds), 3)
    stalls = sorted(of_type(lines, "stall", pid=truth["pid"]), key=lambda s: s["ts"])
    blocks = of_type(lines, "blocking_call", pid=truth["pid"])
    records = with_edges(truth)
    pairs = match_stalls(records, stalls, THRESHOLD_MS, truth)
    # every cause was injected and checked
    assert sorted({r["kind"] for r, _ in pairs}) == sorted(EXPECT), \
        [(r["kind"], r["busy_ms"]) for r in records]
    # where the injecting function was found: in the stall's stacks, in its top frames
    # (iterations that were their kind by their own measure), in the blocking call's stack
    found = {}
    for record, stall in pairs:
        assert stall["tid"] == truth["tid"], stall
        for where, ok in check_kind(record["kind"], record, stall, blocks).items():
            found.setdefault((record["kind"], where), []).append((ok, stall["top"]))
    # each in at least one of its repeats, in a stack of the stall or of its blocking
    # call; a CPU spin also in the top frames. A stack walk from inside a libc function
    # built without frame pointers recovers its caller from the saved stack words, and
    # that fails for some captures (pthread_mutex_lock, write: see docs/limits.md)
    for kind in sorted({k for k, _ in found}):
        oks = found.get((kind, "stacks"), []) + found.get((kind, "call"), [])
        assert any(ok for ok, _ in oks), "%s: %s in no stack: %s" % (kind, EXPECT[kind][0], oks)
    cpu_tops = found.get(("cpu", "top"), [])
    assert not cpu_tops or any(ok for ok, _ in cpu_tops), cpu_tops
    # a sleep's or a preemption's kernel stack starts at the scheduler: none of
    # loopwatch's own plumbing (its programs, bpf_trace_run) on top, whichever function
    # took the walk. A CPU sample is no walk of a switch: it may land in loopwatch's own
    # hooks in the kernel (one failure in 13 runs beside two CPU hogs had
    # bpf_lru_pop_free on top, its cause not kept; 0 in 30 more runs).
    kernel_tops = [(st["cause"], st["frames"][0]["func"]) for s in stalls
                   for st in s["stacks"] if st["cause"] != "cpu" and st["frames"] and
                   st["frames"][0].get("kind") == "kernel"] + \
                  [("call", b["stack"][0]["func"]) for b in blocks
                   if b["stack"] and b["stack"][0].get("kind") == "kernel"]
    assert kernel_tops and not [f for _, f in kernel_tops if f.startswith("bpf_")], \
        kernel_tops
    # and a CPU sample's has none of the timer interrupt it was taken in
    irq = [f["func"] for s in stalls for st in s["stacks"] if st["cause"] == "cpu"
           for f in st["frames"] if f.get("kind") == "kernel" and f["func"] in TICK_FRAMES]
    assert not irq, irq
    summary = of_type(lines, "summary", pid=truth["pid"])
    assert summary and summary[0]["iterations"] == len(records), summary
    # the per-thread sums lie in the sums of the ranges
    s = summary[0]
    for k in PARTS:
        lo = sum(r["ranges"][k][0] for r in records)
        hi = sum(r["ranges"][k][1] for r in records)
        assert lo <= s[k] <= hi, "%s %.1f, the workload's range %.1f..%.1f: %s" % (
            k, s[k], lo, hi, s)
    assert abs(s["oncpu_ms"] + s["blocked_ms"] + s["runq_ms"] - s["busy_ms"]) < 0.01, s


def test_a_wait_for_a_cpu_has_its_stack_at_a_slow_tick(ctx):
    """--sample-hz tick: a stall's wait for a CPU is named by the stack the thread waited
    in, though the thread resumes and ends its iteration within a tick: a timer sample
    right after its switch-in takes it (bpf/sched.bpf.c). In at least two of three
    repeats (seen: 3 of 3 in 8 runs; a walk from inside libc's write wrapper can fail,
    test_each_cause_is_a_stall_with_the_right_breakdown_and_stack says why); left to the
    next tick, 6 of 9 runs had it in none."""
    truth, lines = run_stallwork(ctx, "runq", 3, "--sample-hz", "tick")
    stalls = sorted(of_type(lines, "stall", pid=truth["pid"]), key=lambda s: s["ts"])
    pairs = match_stalls(with_edges(truth), stalls, THRESHOLD_MS, truth)
    found = [(check_kind("runq", record, stall, [])["stacks"], stall["top"])
             for record, stall in pairs if record["kind"] == "runq"]
    assert len(found) == 3 and sum(ok for ok, _ in found) >= 2, found


def test_no_stall_under_the_threshold(ctx):
    """2 ms iterations are no stalls, unless the workload itself saw one take longer
    (a loaded host): exactly those are."""
    truth, lines = run_stallwork(ctx, "small", 40)
    records = with_edges(truth)
    stalls = sorted(of_type(lines, "stall", pid=truth["pid"]), key=lambda s: s["ts"])
    match_stalls(records, stalls, THRESHOLD_MS, truth)
    s = of_type(lines, "summary", pid=truth["pid"])
    assert s and s[0]["iterations"] == 40, s


def test_python_time_sleep_in_asyncio_handler(ctx):
    """Debian's python3: time.sleep(0.03) in a handler is a blocked stall; its time asleep
    and its blocking call are what the handler timed itself, less (for the time asleep)
    what it waited for a CPU after waking."""
    truth = tmpfile(".txt")
    app = ["/usr/bin/python3", os.path.join(APPS, "py_sleep_server.py"), "--truth", truth]
    pid, _, lines = serve_traced(ctx, app, lambda port: line_requests(port, 5), seconds=4)
    with open(truth) as f:
        sleeps = [tuple(int(v) / 1e6 for v in l.split()) for l in f if l.strip()]
    os.unlink(truth)
    assert len(sleeps) == 5, sleeps
    stalls = sorted((s for s in of_type(lines, "stall", pid=pid)
                     if any(c["name"] == "clock_nanosleep" for c in s["syscalls"])),
                    key=lambda s: s["ts"])
    assert len(stalls) == 5, [(s["duration_ms"], s["cause"]) for s in of_type(lines, "stall")]
    # asleep: at least the 30 ms asked for, at most the sleep's wall time less what the
    # thread saw itself wait for a CPU (schedstat's run_delay falls short, never over)
    for s, (sleep_ms, runq_ms) in zip(stalls, sleeps):
        assert 29.5 <= s["blocked_ms"] <= sleep_ms - runq_ms + 0.5, \
            "asleep %.2f ms; the handler slept %.2f ms, %.2f of it waiting for a CPU: %s" % (
                s["blocked_ms"], sleep_ms, runq_ms, s)
        assert s["duration_ms"] >= s["blocked_ms"], s
    blocks = sorted((b for b in of_type(lines, "blocking_call", pid=pid)
                     if b["syscall"] == "clock_nanosleep"), key=lambda b: b["ts"])
    # the wake-up's wait for a CPU is part of the call's time
    assert len(blocks) == 5 and all(29.5 <= b["duration_ms"] <= sleep_ms + 0.5
                                    for b, (sleep_ms, _) in zip(blocks, sleeps)), \
        ([b["duration_ms"] for b in blocks], sleeps)


def test_blocking_reads_name_their_own_files(ctx):
    """Alternating blocking reads on a deep and a shallow FIFO: each blocking call names
    its own file, never a mix of the two paths."""
    top = tempfile.mkdtemp(prefix="loopwatch-fifo-", dir="/var/tmp")
    try:
        pid, lines = run_traced(ctx, ["/usr/bin/python3", os.path.join(APPS, "py_fifo_reads.py"),
                                      top, "20"], duration=30)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    reads = [b for b in of_type(lines, "blocking_call", pid=pid) if b["syscall"] == "read"]
    assert len(reads) >= 16, [(b["syscall"], b.get("path")) for b in reads]
    name = os.path.basename(top)
    shallow = [b["path"] for b in reads if b["path"].endswith("shallow.fifo")]
    deep = [b["path"] for b in reads if b["path"].endswith("deep.fifo")]
    assert len(shallow) + len(deep) == len(reads), [b["path"] for b in reads]
    assert shallow and all(p == top + "/shallow.fifo" for p in shallow), shallow
    # six parts deep at most: the truncated path is marked, and holds no other file's parts
    assert deep and all(p == "...%s/a/b/c/d/deep.fifo" % ("/" + name) or
                        p.endswith("/a/b/c/d/deep.fifo") and "shallow" not in p
                        for p in deep), deep
    assert all(p.startswith("...") for p in deep), deep


def test_stop_and_continue_is_not_a_stall(ctx):
    """An idle poll loop stopped and continued (job control, a debugger attaching): the
    kernel resumes the same poll through restart_syscall; no busy period starts."""
    loop = subprocess.Popen(["/usr/bin/python3", "-c",
                             "import os, select, sys\n"
                             "p = select.poll()\n"
                             "r, w = os.pipe()\n"
                             "p.register(r, select.POLLIN)\n"
                             "print(os.getpid(), flush=True)\n"
                             "while True:\n"
                             "    p.poll(300)\n"], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(loop.stdout.readline())
        lw = Loopwatch(ctx, "-p", pid, "-d", 4).start()
        time.sleep(0.8)
        for _ in range(3):
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.15)
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.4)
        lines = lw.stop()
    finally:
        loop.kill()
        loop.wait()
    assert not of_type(lines, "stall", pid=pid), of_type(lines, "stall", pid=pid)
    s = of_type(lines, "summary", pid=pid)
    assert s and s[0]["lag_ms"]["max"] < 5 and s[0]["iterations"] >= 5, s


def test_a_cpu_stall_holds_samples_at_a_slow_tick(ctx):
    """--sample-hz tick: CPU samples ride the scheduler tick, 4 ms apart at Debian's HZ
    250; an iteration the tick finds past the sampling gate (1/16 of the threshold) is then
    sampled every ~1 ms by a timer of its own (bpf/sample.bpf.c). Each ~25 ms spin, by the
    workload's own on-CPU time: at least 5 samples and half a sample a ms once the timer
    may have started (the tick alone gives a quarter), and at most one a ms plus the
    tick's."""
    # the coarse clock (6: Python names it not) moves once a tick: its resolution is 1/HZ
    tick_ms = time.clock_getres(CLOCK_MONOTONIC_COARSE) * 1e3
    truth, lines = run_stallwork(ctx, "cpu", 6, "--sample-hz", "tick")
    stalls = sorted(of_type(lines, "stall", pid=truth["pid"]), key=lambda s: s["ts"])
    records = with_edges(truth)
    seen = []
    for record, stall in match_stalls(records, stalls, THRESHOLD_MS, truth):
        if record["kind"] != "cpu":
            continue
        samples = sum(st["samples"] for st in stall["stacks"] if st["cause"] == "cpu")
        oncpu = record["oncpu_ns"] / 1e6
        seen.append((round(oncpu, 1), samples))
        # a spin starved by a loaded host has fewer ms on CPU to sample
        if oncpu >= 15:
            assert samples >= max(5, 0.5 * (oncpu - tick_ms - THRESHOLD_MS / 16)), \
                (tick_ms, seen)
        assert samples <= (1 + 1 / tick_ms) * (oncpu + record["edges_ms"]) + 2, (tick_ms, seen)
    print("tick %.1f ms; (ms on CPU, samples) of each spin: %s" % (tick_ms, seen))
    assert len([s for s in seen if s[0] >= 15]) >= 3, seen

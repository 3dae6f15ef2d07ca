"""Stalls and blocking calls, against a workload that injects each cause in its own
named function and records every iteration's busy time and every call's duration."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lwtest import Loopwatch, line_requests, load_truth, of_type, run_traced, serve_traced, tmpfile

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
THRESHOLD_MS = 5  # below the default 10 so that a fast disk's fsync still stalls

# kind -> (injecting function, dominant component, its minimum share, blocking syscalls)
EXPECT = {
    "cpu": ("inject_cpu_spin", "oncpu_ms", 0.8, None),
    "sleep": ("inject_nanosleep", "blocked_ms", 0.8, ("clock_nanosleep", "nanosleep")),
    # fsync burns real kernel CPU on the loop thread queueing the writeback (~10-15 %
    # here): blocked must dominate, at a lower share than a pure sleep
    "fsync": ("inject_fsync", "blocked_ms", 0.7, ("fsync",)),
    "mutex": ("inject_mutex_wait", "blocked_ms", 0.8, ("futex",)),
    "runq": ("inject_runq_starvation", "runq_ms", 0.8, None),
}


def within(got, want, rel):
    return abs(got - want) <= rel * want


def run_stallwork(ctx, kinds, repeat):
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("stallwork"), out, kinds, str(repeat), "--go"],
                          "--threshold", THRESHOLD_MS)
    return load_truth(out), lines


def frame_names(stack_frames):
    return {f["func"] for f in stack_frames}


def check_kind(kind, record, stall, blocks):
    func, component, share, syscalls = EXPECT[kind]
    busy_ms = record["busy_ns"] / 1e6
    assert within(stall["duration_ms"], busy_ms, 0.05), \
        "%s: stall %.2f ms vs workload %.2f ms" % (kind, stall["duration_ms"], busy_ms)
    parts = {k: stall[k] for k in ("oncpu_ms", "blocked_ms", "runq_ms")}
    assert max(parts, key=parts.get) == component and \
        parts[component] >= share * stall["duration_ms"], "%s: breakdown %s" % (kind, parts)
    names = set()
    for s in stall["stacks"]:
        names |= frame_names(s["frames"])
    assert func in names, "%s: %s not in the stall's stacks: %s" % (kind, func, sorted(names))
    # the culprit is named: enough samples (or the blocking stack) to find the function
    assert func in stall["top"], "%s: top %r" % (kind, stall["top"])
    if not syscalls:
        return
    call_ms = record["call_ns"] / 1e6
    # the blocking call made inside this very iteration
    inside = [b for b in blocks if stall["ts"] - 0.001 <= b["ts"] <=
              stall["ts"] + stall["duration_ms"] / 1000]
    mine = [b for b in inside if b["syscall"] in syscalls and
            within(b["duration_ms"], call_ms, 0.05)]
    assert mine, "%s: no %s blocking_call of %.2f ms: %s" % (
        kind, syscalls, call_ms, [(b["syscall"], b["duration_ms"]) for b in blocks])
    assert func in frame_names(mine[0]["stack"]), "%s: %s" % (kind, mine[0]["stack"])
    assert any(s["name"] in syscalls for s in stall["syscalls"]), stall["syscalls"]
    if kind == "fsync":
        assert "stallwork-" in mine[0].get("path", ""), mine[0]
        assert isinstance(mine[0].get("fd"), int), mine[0]


def test_each_cause_is_a_stall_with_the_right_breakdown_and_stack(ctx):
    kinds = list(EXPECT)
    truth, lines = run_stallwork(ctx, ",".join(kinds), 3)
    stalls = sorted(of_type(lines, "stall", pid=truth["pid"]), key=lambda s: s["ts"])
    blocks = of_type(lines, "blocking_call", pid=truth["pid"])
    records = [r for r in truth["records"] if r["busy_ns"] >= THRESHOLD_MS * 1e6]
    assert len(stalls) == len(records), "%d stalls for %d slow iterations: %s" % (
        len(stalls), len(records), [(s["duration_ms"], s["cause"]) for s in stalls])
    # every cause was injected and checked, none slipped under the threshold
    assert sorted({r["kind"] for r in records}) == sorted(EXPECT), \
        [(r["kind"], r["busy_ns"] / 1e6) for r in truth["records"]]
    for record, stall in zip(records, stalls):
        assert stall["tid"] == truth["tid"], stall
        check_kind(record["kind"], record, stall, blocks)
    summary = of_type(lines, "summary", pid=truth["pid"])
    assert summary and summary[0]["iterations"] == len(truth["records"]), summary
    # the per-thread sums hold each injected kind's time
    kind_ms = lambda *kinds: sum(r["call_ns"] for r in truth["records"]
                                 if r["kind"] in kinds) / 1e6
    s = summary[0]
    assert s["blocked_ms"] >= 0.9 * kind_ms("sleep", "mutex") + 0.7 * kind_ms("fsync"), s
    assert s["runq_ms"] >= 0.8 * kind_ms("runq") and s["oncpu_ms"] >= 0.8 * kind_ms("cpu"), s
    assert abs(s["oncpu_ms"] + s["blocked_ms"] + s["runq_ms"] - s["busy_ms"]) < 0.01, s


def test_no_stall_under_the_threshold(ctx):
    truth, lines = run_stallwork(ctx, "small", 40)
    assert all(r["busy_ns"] < THRESHOLD_MS * 1e6 for r in truth["records"])
    assert not of_type(lines, "stall"), of_type(lines, "stall")
    s = of_type(lines, "summary", pid=truth["pid"])
    assert s and s[0]["iterations"] == 40, s


def test_python_time_sleep_in_asyncio_handler(ctx):
    """Debian's python3: time.sleep(0.03) in a handler is a blocked stall."""
    app = ["/usr/bin/python3", os.path.join(APPS, "py_sleep_server.py")]
    pid, _, lines = serve_traced(ctx, app, lambda port: line_requests(port, 5), seconds=4)
    stalls = [s for s in of_type(lines, "stall", pid=pid) if s["cause"] == "blocked"]
    assert len(stalls) >= 5, [(s["duration_ms"], s["cause"]) for s in of_type(lines, "stall")]
    for s in stalls:
        assert s["duration_ms"] >= 30 and s["blocked_ms"] >= 0.8 * s["duration_ms"], s
        assert any(c["name"] == "clock_nanosleep" for c in s["syscalls"]), s["syscalls"]
    blocks = [b for b in of_type(lines, "blocking_call", pid=pid)
              if b["syscall"] == "clock_nanosleep"]
    # the wake-up may wait a little for a CPU: that is part of the call's time
    assert len(blocks) >= 5 and all(29.5 <= b["duration_ms"] <= 40 for b in blocks), \
        [b["duration_ms"] for b in blocks]


def test_blocking_reads_name_their_own_files(ctx):
    """Alternating blocking reads on a deep and a shallow FIFO: each blocking call names
    its own file, never a mix of the two paths."""
    top = tempfile.mkdtemp(prefix="loopwatch-fifo-", dir="/var/tmp")
    try:
        server = subprocess.Popen(["/usr/bin/python3", os.path.join(APPS, "py_fifo_reads.py"),
                                   top, "20"], stdout=subprocess.PIPE, text=True)
        pid = int(server.stdout.readline())
        lw = Loopwatch(ctx, "-p", pid, "-d", 30).start()
        server.wait(timeout=30)
        lines = lw.stop()
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

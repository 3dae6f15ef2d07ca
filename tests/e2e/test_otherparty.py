"""When the loop waits on someone else, loopwatch names them: the cgroup whose CPU
quota throttled it, the task that had its CPU. The workload (hogwork: a light loop and a thread named hog, pinned
to one CPU) records its own run-queue time and its cgroup's cpu.stat over its run."""
import os
import re
import time

from lwtest import APPS_DIR, load_truth, of_type, run_traced, tmpfile

CGROUP_V1_CPU = "/sys/fs/cgroup/cpu"
STALL_MS = 20


class QuotaCgroup:
    """A v1 cpu cgroup with a quota (quota_us every period_us), removed by close()."""

    def __init__(self, name, quota_us, period_us):
        self.path = "/" + name
        self.dir = os.path.join(CGROUP_V1_CPU, name)
        os.makedirs(self.dir, exist_ok=True)
        self.write("cpu.cfs_period_us", period_us)
        self.write("cpu.cfs_quota_us", quota_us)

    def write(self, name, value):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(str(value))

    def move(self, pid):
        self.write("cgroup.procs", pid)

    def close(self):
        for _ in range(50):
            try:
                os.rmdir(self.dir)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("cgroup %s still busy" % self.dir)


def run_hogwork(ctx, seconds, *flags, cgroup=None, text=False, hog_nice=None, extra=()):
    """hogwork traced by loopwatch -p, in cgroup if given, extra: its own flags:
    (truth, loopwatch's lines)."""
    out = tmpfile()
    argv = [ctx.workload("hogwork"), out, str(seconds)] + [str(a) for a in extra]
    if hog_nice is not None:
        argv += ["--nice", str(hog_nice)]
    _, lines = run_traced(ctx, argv + ["--go"], "--threshold", STALL_MS, *flags, settle=0.5,
                          duration=seconds + 4, text=text,
                          before=cgroup.move if cgroup else None)
    return load_truth(out), lines


def throttle_dominates(s):
    """The quota's part is the largest of the stall's: on CPU, blocked, the rest of the
    wait for a CPU (another task's, on a shared host)."""
    t = s["throttled_ms"]
    return t > 0 and t >= s["oncpu_ms"] and t >= s["blocked_ms"] and t >= s["runq_ms"] - t


def test_quota_names_the_cgroup(ctx):
    """A light loop and a hog in a cgroup limited to 30 ms of CPU per 100 ms: at least
    90 % of the loop's stalls of 20 ms or more say throttled (their throttled time and
    the cgroup with its quota); every one the quota took the largest part of names the
    cgroup and its quota first, and no other does (on a shared host another task may
    hold the CPU longer); the loop's throttled time over the run is within 15 % of the
    cgroup's own cpu.stat throttled time over the same window (one CPU: the cgroup's
    sum over CPUs is the loop's CPU's)."""
    name = "lwtest-quota-%d" % os.getpid()
    cg = QuotaCgroup(name, 30000, 100000)
    try:
        truth, lines = run_hogwork(ctx, 6, cgroup=cg)
    finally:
        cg.close()
    assert truth["cgroup_dir"].endswith(cg.path), truth
    assert truth["nr_throttled"] >= 0.8 * truth["nr_periods"] > 0, \
        "the hog did not exhaust the quota: %s" % truth
    stalls = [s for s in of_type(lines, "stall", tid=truth["tid"])
              if s["duration_ms"] >= STALL_MS]
    assert len(stalls) >= 20, "only %d stalls of %d ms or more" % (len(stalls), STALL_MS)
    want = "throttled: cgroup %s quota 30ms/100ms" % cg.path
    said = [s for s in stalls if s["throttled_ms"] > 0 and
            s.get("throttle") == {"cgroup": cg.path, "quota_ms": 30.0, "period_ms": 100.0}]
    assert len(said) >= 0.9 * len(stalls), "%d of %d stalls say throttled; others: %s" % (
        len(said), len(stalls), [(s["duration_ms"], s["runq_ms"], s["throttled_ms"],
                                  s["top"]) for s in stalls if s not in said][:5])
    for s in stalls:
        assert s["throttled_ms"] <= s["runq_ms"] + 0.001, s
        assert s["top"].startswith(want) == throttle_dominates(s), \
            (s["duration_ms"], s["oncpu_ms"], s["runq_ms"], s["throttled_ms"], s["top"])
    assert sum(map(throttle_dominates, stalls)) >= 0.5 * len(stalls), \
        "the quota took the largest part of few stalls"
    summary = of_type(lines, "summary", tid=truth["tid"])
    assert summary, "no summary of the loop"
    got_ms = summary[-1]["throttled_ms"]
    want_ms = truth["throttled_ns"] / 1e6
    assert abs(got_ms - want_ms) <= 0.15 * want_ms, \
        "throttled %.1f ms, the cgroup's cpu.stat says %.1f ms" % (got_ms, want_ms)
    # throttled time is waiting for a CPU: never more than the loop's own run_delay
    assert got_ms <= truth["runq_ns"] / 1e6 * 1.02, (got_ms, truth)


def test_quota_in_text_report_and_metrics(ctx):
    """The same throttled loop in text (the stall line names the cgroup and its quota),
    in --report (the advice names the limit) and in the Prometheus textfile
    (loopwatch_loop_throttled_seconds_total within 15 % of cpu.stat)."""
    name = "lwtest-quota-text-%d" % os.getpid()
    report, prom = tmpfile(".md"), tmpfile(".prom")
    cg = QuotaCgroup(name, 30000, 100000)
    try:
        truth, lines = run_hogwork(ctx, 4, "--report", report, "--prom-file", prom,
                                   cgroup=cg, text=True)
    finally:
        cg.close()
    stall = re.compile(r" STALL %d/%d .* runq [0-9.]+ ms; throttled [0-9.]+ ms of it; " %
                       (truth["pid"], truth["tid"]))
    named = re.compile(r"; runq: throttled: cgroup /%s quota 30ms/100ms \(in " % name)
    said = [l for l in lines if stall.search(l)]
    all_stalls = [l for l in lines if " STALL " in l]
    assert len(said) >= 0.9 * len(all_stalls) and said, (len(said), all_stalls[:5])
    assert len([l for l in said if named.search(l)]) >= 0.5 * len(said), said[:5]
    with open(report) as f:
        text = f.read()
    os.unlink(report)
    assert "cgroup `/%s` may use 30 ms of CPU every 100 ms" % name in text, text[-3000:]
    assert "**The CPU quota starves this loop**" in text, text[-3000:]
    with open(prom) as f:
        metrics = f.read()
    os.unlink(prom)
    m = re.search(r'^loopwatch_loop_throttled_seconds_total\{[^}]*\} ([0-9.e+-]+)$', metrics,
                  re.M)
    assert m, "no throttled series: %s" % metrics[:2000]
    want_s = truth["throttled_ns"] / 1e9
    assert abs(float(m.group(1)) - want_s) <= 0.15 * want_s, (m.group(0), want_s)


def test_neighbour_named_when_it_held_the_cpu(ctx):
    """A loop pinned to a CPU (3 ms of work every 5 ms) and a thread named hog pinned
    beside it that takes the CPU at SCHED_FIFO for 25 ms every 100 ms, no quota: the
    run-queue stalls of 20 ms or more name the hog first (at least 90 % of them), by its
    thread id, with at most the loop's own longest wait for its CPU (its schedstat) and
    at least 80 % of the burst in the median;
    --report lists the hog first among those that held the loop's CPU."""
    burst_ms = 25
    report = tmpfile(".md")
    truth, lines = run_hogwork(ctx, 5, "--report", report, hog_nice=0,
                               extra=("--fifo", burst_ms, "--busy", 3))
    with open(report) as f:
        text = f.read()
    os.unlink(report)
    assert "CPU held by (while it waited for a CPU, in stalls): `hog` (thread %d of process " \
        "%d)" % (truth["hog_tid"], truth["pid"]) in text, text[-2000:]
    assert truth["hog_bursts"] >= 20, truth
    stalls = [s for s in of_type(lines, "stall", tid=truth["tid"])
              if s["duration_ms"] >= STALL_MS and s["cause"] == "runq"]
    assert len(stalls) >= 8, "only %d run-queue stalls: %s" % (len(stalls), truth)
    want = "CPU held by hog[%d]" % truth["hog_tid"]
    named = [s for s in stalls if s["top"].startswith(want)]
    assert len(named) >= 0.9 * len(stalls), "%d of %d say %r: %s" % (
        len(named), len(stalls), want, [(s["runq_ms"], s["top"], s["neighbours"])
                                        for s in stalls if s not in named][:4])
    held = sorted(n["ms"] for s in named for n in s["neighbours"]
                  if n["tid"] == truth["hog_tid"])
    assert len(held) == len(named), "the hog missing from a named stall's neighbours"
    # the hog held the CPU while the loop waited for it: never longer than the loop's
    # longest wait for its CPU (its schedstat), whatever the hog's edges or the host's
    # steal took; 0.1 ms for the scheduler's clock beside loopwatch's
    longest_ms = truth["runq_max_ns"] / 1e6
    assert held[-1] <= longest_ms + 0.1, "the hog held the CPU %.1f ms; the loop's " \
        "longest wait for it was %.1f ms" % (held[-1], longest_ms)
    assert held[len(held) // 2] >= 0.8 * burst_ms, held
    for s in named:
        assert all(n["comm"] and n["tid"] > 0 for n in s["neighbours"]), s["neighbours"]
        assert s["neighbours"][0]["tid"] == truth["hog_tid"], s["neighbours"]


def run_wakework(ctx, mode, iterations=40):
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("wakework"), out, str(iterations), mode, "--go"],
                          "--threshold", STALL_MS, settle=0.5,
                          duration=iterations * 0.05 + 4)
    return load_truth(out), lines


def check_woken_by_worker(ctx, mode):
    """A loop that waits (on a pipe, on a futex) inside each iteration for an answer a
    thread named answerer gives 25 ms later: at least 90 % of its stalls name the
    answerer first, by thread id and name (its process too) and the function it woke the
    loop from (its user stack at the wake-up), with the time it woke the loop from
    within 15 % of the loop's own measured wait."""
    truth, lines = run_wakework(ctx, mode)
    stalls = [s for s in of_type(lines, "stall", tid=truth["tid"])
              if s["duration_ms"] >= STALL_MS]
    waits = sorted(truth["waited_ns"])
    assert len(stalls) >= 0.8 * len(waits), "%d stalls of %d waits" % (len(stalls), len(waits))
    want = "woken by answerer[%d] answerer__run" % truth["worker_tid"]
    named = [s for s in stalls if s["top"].startswith(want) and s["wakers"] and
             s["wakers"][0]["top"].startswith("answerer__run") and
             s["wakers"][0]["tid"] == truth["worker_tid"] and
             s["wakers"][0]["comm"] == "answerer" and
             s["wakers"][0]["pid"] == (truth["worker_tid"] if mode == "process" else truth["pid"])]
    assert len(named) >= 0.9 * len(stalls), "%d of %d stalls say %r: %s" % (
        len(named), len(stalls), want, [(s["blocked_ms"], s["top"], s["wakers"])
                                        for s in stalls if s not in named][:4])
    woke = sorted(s["wakers"][0]["ms"] for s in named)
    median_wait_ms = waits[len(waits) // 2] / 1e6
    assert abs(woke[len(woke) // 2] - median_wait_ms) <= 0.15 * median_wait_ms, \
        (woke[len(woke) // 2], median_wait_ms)


def test_waker_of_a_pipe_read_is_named(ctx):
    """The loop reads a pipe the answerer thread writes: the answerer woke it."""
    check_woken_by_worker(ctx, "pipe")


def test_waker_in_another_process_is_named_with_its_function(ctx):
    """The loop reads a pipe a process of its own named answerer writes (a local
    service): the answerer woke it, by its pid, name and function."""
    check_woken_by_worker(ctx, "process")


def test_waker_of_a_futex_wait_is_named(ctx):
    """The loop waits on a condition variable the answerer signals: the answerer woke it."""
    check_woken_by_worker(ctx, "futex")


def test_waker_of_a_python_lock_is_named_with_its_function(ctx):
    """A Python loop takes a threading.Lock a thread named lockholder holds for 25 ms
    at a time, in hold_the_lock: at least 90 % of its stalls of 20 ms or more name the
    lockholder first, by thread id and name, and the Python function it released the
    lock in, from its stack at the wake-up."""
    out = tmpfile()
    _, lines = run_traced(ctx, ["/usr/bin/python3", os.path.join(APPS_DIR, "py_lockwork.py"),
                                out, "40", "--go"], "--threshold", STALL_MS, settle=1.5,
                          duration=12)
    truth = load_truth(out)
    stalls = [s for s in of_type(lines, "stall", tid=truth["tid"])
              if s["duration_ms"] >= STALL_MS]
    waits = [w for w in truth["waited_ns"] if w >= STALL_MS * 1e6]
    assert len(stalls) >= max(5, 0.5 * len(waits)), "%d stalls of %d waits" % (
        len(stalls), len(waits))
    want = "woken by lockholder[%d] hold_the_lock (py_lockwork.py:" % truth["holder_tid"]
    named = [s for s in stalls if s["top"].startswith(want) and
             s["wakers"][0]["tid"] == truth["holder_tid"] and
             s["wakers"][0]["comm"] == "lockholder" and
             s["wakers"][0]["top"].startswith("hold_the_lock")]
    assert len(named) >= 0.9 * len(stalls), "%d of %d stalls say %r: %s" % (
        len(named), len(stalls), want, [(s["top"], s["wakers"]) for s in stalls
                                        if s not in named][:3])


def test_a_timer_wake_names_no_task(ctx):
    """A 30 ms nanosleep ends at a timer interrupt, which runs on whatever task it
    interrupted (on a shared host, anyone's): no task is named its waker, the stall says
    [timer], and the culprit stays the sleeping function; a mutex held by the workload's
    thread named holder names that thread."""
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("stallwork"), out, "sleep,mutex", "6", "--go"],
                          "--threshold", 5, settle=0.5, duration=8)
    os.unlink(out)
    stalls = of_type(lines, "stall")
    sleeps = [s for s in stalls if s["top"].startswith("inject_nanosleep") or
              "inject_nanosleep" in s["top"]]
    mutexes = [s for s in stalls if "inject_mutex_wait" in s["top"]]
    assert len(sleeps) >= 5 and len(mutexes) >= 5, [s["top"] for s in stalls]
    for s in sleeps:
        assert s["wakers"] and all(x["tid"] == 0 and x["comm"] == "[timer]"
                                   for x in s["wakers"]), s["wakers"]
        assert s["top"].startswith("inject_nanosleep"), s["top"]
    named = [s for s in mutexes if s["top"].startswith("woken by holder[")]
    assert len(named) >= 0.9 * len(mutexes), [(s["top"], s["wakers"]) for s in mutexes]

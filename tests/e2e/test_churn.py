"""Churn: what loopwatch keeps of loop threads and processes that come and go must go
with them, and a process with many loop threads is set up once."""
import json
import os
import subprocess
import time

from lwtest import Workload, of_type

# no stall, blocking call or alert is sent up: no stack is named, so the kernel's symbol
# table (8 MB, read at the first kernel stack) is not what is measured
QUIET_FLAGS = ["--threshold", 1000, "--block-threshold", 1000, "--alert-ms", 1000]


def usage(pid):
    """(RSS in KiB, user+system CPU seconds) of a process."""
    with open("/proc/%d/status" % pid) as f:
        rss = [int(l.split()[1]) for l in f if l.startswith("VmRSS:")][0]
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(ctx, *args, out=subprocess.DEVNULL):
    """loopwatch with args, its output to out; returns once it traces."""
    p = subprocess.Popen([ctx.loopwatch] + [str(a) for a in args], stdout=out,
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert "tracing" in line, line
    return p


def stop(p):
    p.terminate()
    p.communicate(timeout=30)


def test_churn_of_10k_loop_threads_leaves_nothing_behind(ctx):
    """100 processes of 100 loop threads each, come and gone: a few seconds later
    loopwatch's CPU is a fresh instance's and its memory within 25 % of it."""
    lw = start(ctx, "--comm", "churnwork", *QUIET_FLAGS)
    fresh = None
    try:
        w = Workload([ctx.workload("churnwork"), "100", "100", "--go"])
        w.go()
        w.wait(timeout=300)
        # three intervals and a rescan for the exited to be read, closed and let go
        time.sleep(4)
        fresh = start(ctx, "--comm", "churnwork", *QUIET_FLAGS)
        time.sleep(2)
        (rss0, cpu0), (frss0, fcpu0) = usage(lw.pid), usage(fresh.pid)
        time.sleep(5)
        (rss, cpu), (frss, fcpu) = usage(lw.pid), usage(fresh.pid)
    finally:
        stop(lw)
        if fresh:
            stop(fresh)
    print("after churn: RSS %d KiB, CPU %.2f s in 5 s; fresh: RSS %d KiB, CPU %.2f s" % (
        rss, cpu - cpu0, frss, fcpu - fcpu0))
    assert cpu - cpu0 <= fcpu - fcpu0 + 0.05, (cpu - cpu0, fcpu - fcpu0)
    assert rss <= 1.25 * frss, "RSS %d KiB after churn, a fresh instance %d KiB" % (rss, frss)


def test_500_loop_threads_of_one_process_set_up_once(ctx):
    """One process starts 500 loop threads at once: its maps are read and it is set up
    once, not per thread: no event lost, intervals on time, little CPU."""
    lines_path = "/tmp/loopwatch-500-%d.json" % os.getpid()
    with open(lines_path, "w") as out:
        lw = start(ctx, "--json", "--comm", "churnwork", "-i", 0.5, out=out)
        try:
            _, cpu0 = usage(lw.pid)
            w = Workload([ctx.workload("churnwork"), "1", "500", "--go"])
            t_go = time.time()
            w.go()
            w.wait(timeout=120)
            time.sleep(1.5)
            _, cpu = usage(lw.pid)
        finally:
            stop(lw)
    with open(lines_path) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    os.unlink(lines_path)
    # the summary keeps only the latest exited threads: the intervals show every one
    tids = {l["tid"] for l in of_type(lines, "interval") + of_type(lines, "summary")}
    assert len(tids) >= 490, "%d loop threads shown" % len(tids)
    assert not of_type(lines, "dropped"), of_type(lines, "dropped")
    # the first interval that shows them comes on time (-i 0.5), not after their setup
    # (6 s when each thread re-read the maps; a loaded host delays it by a second or so)
    first = min(l["ts"] for l in of_type(lines, "interval"))
    assert first - t_go < 3.0, "first interval %.2f s after the threads started" % (
        first - t_go)
    assert cpu - cpu0 < 0.5, "%.2f s of CPU for 500 loop threads" % (cpu - cpu0)

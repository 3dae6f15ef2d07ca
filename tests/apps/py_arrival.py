# An asyncio loop whose iterations have known lengths: a task sleeps 2 ms, then
# burns a deterministic length of CPU (mostly 1-2 ms, some 3-6 ms, a few 15-30
# ms). The loop's selector times itself around every wait, so the iterations
# (from a wait's return to the next wait) are the app's own ground truth.
#
# usage: py_arrival.py OUT.json ITERATIONS; prints its pid, waits for a line on
# stdin, runs, writes {"enter_ns": [...], "exit_ns": [...], "edge_ns": [...]}
# (CLOCK_MONOTONIC around each select, and what a preemption at its edges may
# add) and exits.
import asyncio
import json
import os
import resource
import selectors
import sys
import time

ENTER, EXIT, EDGE = [], [], []
SCHEDSTAT = os.open("/proc/thread-self/schedstat", os.O_RDONLY)


def sched():
    """(run-queue time so far, involuntary switches so far) of this thread."""
    run_delay = int(os.pread(SCHEDSTAT, 96, 0).split()[1])
    return run_delay, resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw


class TimedSelector(selectors.EpollSelector):
    """The loop's own timer around each wait. Between the timer and the syscall
    (the selector's own Python on either side) a tracer sees busy time the timer
    does not: next to nothing, unless the thread was preempted there. Then it is at
    most the run-queue time across the call (EDGE, 0 when not preempted)."""

    def select(self, timeout=None):
        before = sched()
        ENTER.append(time.monotonic_ns())
        try:
            return super().select(timeout)
        finally:
            EXIT.append(time.monotonic_ns())
            after = sched()
            EDGE.append(after[0] - before[0] if after[1] != before[1] else 0)


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def length(seed):
    """Deterministic xorshift: the same lengths every run."""
    seed ^= (seed << 13) & 0xffffffff
    seed ^= seed >> 17
    seed ^= (seed << 5) & 0xffffffff
    r = seed % 1000
    if r < 700:
        return seed, 0.001 + (seed % 1000) / 1e6
    if r < 950:
        return seed, 0.003 + (seed % 3000) / 1e6
    return seed, 0.015 + (seed % 15000) / 1e6


async def work(n):
    seed = 2463534242
    for _ in range(n):
        await asyncio.sleep(0.002)
        seed, busy = length(seed)
        burn(busy)


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    sys.stdout.write("%d\n" % os.getpid())
    sys.stdout.flush()
    sys.stdin.readline()
    loop = asyncio.SelectorEventLoop(TimedSelector())
    loop.run_until_complete(work(n))
    loop.close()
    with open(out, "w") as f:
        json.dump({"enter_ns": ENTER, "exit_ns": EXIT, "edge_ns": EDGE}, f)


if __name__ == "__main__":
    main()

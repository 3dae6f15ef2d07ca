# An asyncio loop (the iterations of py_arrival.py: a 2 ms sleep, then a deterministic
# burst of CPU, a few of 15-30 ms) that also serves UDP requests a generator process sends
# at random (Poisson) moments. Each request's wait is measured by the app itself: from
# the kernel's receive timestamp of its datagram (SO_TIMESTAMPNS) to the return of the
# wait call that handed it to the loop -- what a request arriving at a random moment
# waits before the loop gets to it.
#
# A request that arrived while the loop slept in its wait call waited only for the
# thread to be woken and get a CPU; that wait is no iteration's, and is bounded by the
# thread's run-queue time across that call (schedstat), written beside it. Requests that
# arrive before the first wait call or after the last return are left out: loopwatch's
# window is the loop's life from its first wait call.
#
# usage: py_arrival_requests.py OUT.json SECONDS; prints its pid, waits for a line on
# stdin, runs, writes {"waits_ns": [...], "idle_ns": [...]} (per request: its wait, and
# how much of it may be a wake-up's) and exits.
import asyncio
import bisect
import json
import os
import random
import selectors
import socket
import struct
import subprocess
import sys
import time

from py_arrival import burn, length

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SCHEDSTAT = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
ENTER, EXIT, RUNQ = [], [], []


def run_delay():
    return int(os.pread(SCHEDSTAT, 96, 0).split()[1])


class TimedSelector(selectors.EpollSelector):
    """Each wait call's entry and return (CLOCK_MONOTONIC), and the run-queue time
    across it: a woken loop's wait for a CPU before the call returns."""

    def select(self, timeout=None):
        before = run_delay()
        ENTER.append(time.monotonic_ns())
        try:
            return super().select(timeout)
        finally:
            EXIT.append(time.monotonic_ns())
            RUNQ.append(run_delay() - before)


async def work(until):
    seed = 2463534242
    while time.monotonic() < until:
        await asyncio.sleep(0.002)
        seed, busy = length(seed)
        burn(busy)


def serve(sock, arrived):
    """The kernel's receive time of every queued datagram (CLOCK_MONOTONIC)."""
    offset = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.monotonic_ns()
    while True:
        try:
            _, anc, _, _ = sock.recvmsg(16, socket.CMSG_SPACE(16), socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                arrived.append(sec * 1_000_000_000 + nsec - offset)


def waits_of(arrived):
    """Each request's wait: to the return of the first wait call that returned after it
    arrived -- when the loop got back to its events. One that arrived inside that call
    (the loop asleep) waited for its wake-up only, at most the run-queue time across the
    call (idle); one that arrived between calls waited for the rest of the iteration (a
    datagram read early, by a drain in the same iteration, is still counted to the next
    return: the wait the loop's structure makes a request risk)."""
    waits, idle = [], []
    for t in arrived:
        k = bisect.bisect_left(EXIT, t)
        if k == len(EXIT) or t < ENTER[0]:
            continue
        waits.append(EXIT[k] - t)
        idle.append(RUNQ[k] if t >= ENTER[k] else 0)
    return waits, idle


def send(port, seconds):
    """The generator: datagrams at exponentially spaced moments, 2 ms apart on average,
    independent of what the loop does. At a real-time priority: a sender that waits for
    a CPU on a busy host sends late exactly while the loop, starved too, runs long
    iterations -- it would sample them less than their share of the time."""
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rng = random.Random(7)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(rng.expovariate(500.0))
        s.sendto(b"x", ("127.0.0.1", port))


def main():
    if sys.argv[1] == "--send":
        send(int(sys.argv[2]), float(sys.argv[3]))
        return
    out, seconds = sys.argv[1], float(sys.argv[2])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    sys.stdout.write("%d\n" % os.getpid())
    sys.stdout.flush()
    sys.stdin.readline()
    arrived = []
    loop = asyncio.SelectorEventLoop(TimedSelector())
    loop.add_reader(sock.fileno(), serve, sock, arrived)
    # the generator covers the loop's whole life; what it sends outside is left out
    gen = subprocess.Popen([sys.executable, __file__, "--send", str(sock.getsockname()[1]),
                            str(seconds + 5)])
    loop.run_until_complete(work(time.monotonic() + seconds))
    loop.close()
    gen.kill()
    gen.wait()
    waits, idle = waits_of(arrived)
    with open(out, "w") as f:
        json.dump({"waits_ns": waits, "idle_ns": idle}, f)


main()

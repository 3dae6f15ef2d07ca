# A loop on select(2) with two fds (a connected socket and a listening one), and a
# thread beside it that selects on its one connected socket for every "request" (a
# client, call-style). Records its own ground truth: each iteration's busy time (from
# a select returning to the next select) and what each select call held around its
# wait besides waiting (the edges): its CPU time and its waits for a CPU, by the
# thread's own clock and schedstat, as loopwork does. Prints its pid, waits for a line
# on stdin, writes the truth JSON to argv[1].
import json
import os
import select
import socket
import sys
import threading
import time

ITERATIONS = 300
STALL_EVERY = 10
STALL_S = 0.015


def spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def held_ns(fd):
    """The thread's CPU time and its waits for a CPU so far (schedstat's run_delay)."""
    return time.thread_time_ns() + int(os.pread(fd, 96, 0).split()[1])


def client(sock, stop):
    while not stop.is_set():
        select.select([sock], [], [], 0.001)


def main():
    out = sys.argv[1]
    a, b = socket.socketpair()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    print(os.getpid(), flush=True)
    sys.stdin.readline()
    stop = threading.Event()
    t = threading.Thread(target=client, args=(b, stop), name="client")
    t.start()
    sched = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
    after, before, edge = [], [], []
    for i in range(ITERATIONS + 1):
        c0 = held_ns(sched)
        before.append(time.monotonic_ns())
        select.select([a, srv], [], [], 0.001)
        after.append(time.monotonic_ns())
        edge.append(held_ns(sched) - c0)
        if i < ITERATIONS:
            spin(STALL_S if i % STALL_EVERY == STALL_EVERY - 1 else 0.0002)
    busy = [before[i + 1] - after[i] for i in range(ITERATIONS)]
    stop.set()
    t.join()
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "tid": threading.get_native_id(),
                   "client_tid": t.native_id, "busy_ns": busy, "edge_ns": edge}, f)


main()

# An asyncio loop that never sleeps in its wait call (asyncio.sleep(0): epoll_wait
# with a zero timeout) beside threads that hold the GIL: N named threads running
# pure-Python CPU work in crunch_numbers, and one named napper that mostly sleeps
# or reads (time.sleep, os.read: both release the GIL). Every sleep of the loop
# thread is then a wait for the GIL, and it records its own ground truth over the
# window the threads run: from /proc/thread-self/schedstat (time on a CPU, time
# waiting for one) and the clock, slept = wall - on CPU - waiting for a CPU.
#
# argv: TRUTH_PATH SECONDS NTHREADS [--go]. Prints its pid; with --go, waits for a
# line on stdin (inside the loop) before the threads start.
import asyncio
import ctypes
import json
import os
import sys
import threading
import time

PR_SET_NAME = 15
libc = ctypes.CDLL(None, use_errno=True)
stop = threading.Event()


def name_thread(name):
    # CPython before 3.14 leaves the OS thread name as the process's: set it, as
    # services that name their threads do
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()), 0, 0, 0)


def schedstat():
    with open("/proc/thread-self/schedstat") as f:
        oncpu, waited, _ = f.read().split()
    return int(oncpu), int(waited)


def crunch_numbers():
    n = 0
    while not stop.is_set():
        for i in range(20000):
            n += i * i % 7
    return n


def nap_and_read():
    fd = os.open("/dev/zero", os.O_RDONLY)
    while not stop.is_set():
        time.sleep(0.002)
        os.read(fd, 64)
    os.close(fd)


def worker(name, fn, tids):
    name_thread(name)
    tids[name] = threading.get_native_id() if hasattr(threading, "get_native_id") \
        else libc.syscall(186)
    fn()


def tick(state):
    state["ticks"] += 1
    return sum(range(50))


async def spin(seconds, nthreads, truth_path):
    tids = {}
    threads = [threading.Thread(target=worker, args=("cruncher%d" % (i + 1), crunch_numbers,
                                                     tids)) for i in range(nthreads)]
    threads.append(threading.Thread(target=worker, args=("napper", nap_and_read, tids)))
    for t in threads:
        t.start()
    while len(tids) < len(threads):
        await asyncio.sleep(0.01)
    state = {"ticks": 0}
    oncpu0, waited0 = schedstat()
    wall0 = time.monotonic_ns()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tick(state)
        await asyncio.sleep(0)
    oncpu1, waited1 = schedstat()
    wall1 = time.monotonic_ns()
    stop.set()
    for t in threads:
        t.join()
    slept = (wall1 - wall0) - (oncpu1 - oncpu0) - (waited1 - waited0)
    with open(truth_path, "w") as f:
        json.dump({"tid": os.getpid(), "threads": tids, "ticks": state["ticks"],
                   "window_ms": (wall1 - wall0) / 1e6, "slept_ms": slept / 1e6,
                   "oncpu_ms": (oncpu1 - oncpu0) / 1e6, "runq_ms": (waited1 - waited0) / 1e6,
                   "version": "%d.%d" % sys.version_info[:2]}, f)
    # alive a while: the tracer reads the code objects its stalls' stacks name
    await asyncio.sleep(1.5)


async def wait_for_go(loop):
    # ticks while it waits: a tracer attached now sees the loop's wait calls
    ready = loop.create_future()
    loop.add_reader(sys.stdin.fileno(), lambda: ready.done() or ready.set_result(
        sys.stdin.readline()))
    while not ready.done():
        await asyncio.sleep(0.02)
    loop.remove_reader(sys.stdin.fileno())


def main():
    truth_path, seconds, nthreads = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    go = "--go" in sys.argv
    print(os.getpid(), flush=True)
    loop = asyncio.new_event_loop()
    if go:
        loop.run_until_complete(wait_for_go(loop))
    loop.run_until_complete(spin(seconds, nthreads, truth_path))
    loop.close()


if __name__ == "__main__":
    main()

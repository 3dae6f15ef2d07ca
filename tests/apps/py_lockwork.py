# A loop on select.epoll whose every tick takes a threading.Lock that a thread named
# lockholder holds, in hold_the_lock, for 25 ms at a time: the loop sleeps on the lock
# until the holder releases it and so wakes it. Records the loop's waits and the
# holder's thread id.
#
# argv: TRUTH_PATH TICKS [--go]. Prints its pid; with --go, waits for a line on stdin.
import ctypes
import json
import os
import select
import sys
import threading
import time

PR_SET_NAME = 15
LOCK = threading.Lock()
stop = threading.Event()
held = threading.Event()


def hold_the_lock():
    while not stop.is_set():
        LOCK.acquire()
        held.set()
        time.sleep(0.025)
        LOCK.release()
        time.sleep(0.03)


def holder(tids):
    ctypes.CDLL(None).prctl(PR_SET_NAME, ctypes.c_char_p(b"lockholder"), 0, 0, 0)
    tids["holder"] = threading.get_native_id()
    hold_the_lock()


def take_the_lock():
    t0 = time.monotonic_ns()
    LOCK.acquire()
    LOCK.release()
    return time.monotonic_ns() - t0


def main():
    truth_path, ticks = sys.argv[1], int(sys.argv[2])
    print(os.getpid(), flush=True)
    ep = select.epoll()
    if "--go" in sys.argv:
        ep.register(sys.stdin.fileno(), select.EPOLLIN)
        while not ep.poll(0.02):
            pass
        sys.stdin.readline()
        ep.unregister(sys.stdin.fileno())
    tids = {}
    t = threading.Thread(target=holder, args=(tids,))
    t.start()
    held.wait()
    waits = []
    for _ in range(ticks):
        ep.poll(0.01)
        waits.append(take_the_lock())
    stop.set()
    t.join()
    with open(truth_path, "w") as f:
        json.dump({"tid": os.getpid(), "holder_tid": tids["holder"], "waited_ns": waits}, f)
    # alive a while: the tracer reads the code objects its stalls' stacks name
    time.sleep(1.5)


if __name__ == "__main__":
    main()

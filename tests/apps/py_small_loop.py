# A minimal event loop on select.epoll, the same source for every CPython from 2.7
# to 3.13: every few iterations one handler burns ~30 ms of CPU in busy_helper
# and blocks 30 ms in block_helper, a stall with both causes. Prints its pid,
# runs until killed. The lines tagged "# @name" are where the e2e test expects
# each function's frame.
import os
import select
import sys
import threading
import time

# never released: acquiring it waits in futex for the whole timeout. Not
# time.sleep, which is select() before 3.11, a wait call that ends the iteration.
HELD = threading.Lock()
HELD.acquire()


def busy_helper():
    deadline = time.time() + 0.03  # @busy_helper
    n = 0  # @busy_helper
    while time.time() < deadline:  # @busy_helper
        n += 1  # @busy_helper
    return n  # @busy_helper


def block_helper():
    try:
        HELD.acquire(True, 0.03)  # @block_helper
    except TypeError:  # 2.7: no timeout
        time.sleep(0.03)


def handle():
    busy_helper()  # @handle
    block_helper()  # @handle


def serve():
    ep = select.epoll()
    i = 0
    while True:
        ep.poll(0.02)
        i += 1
        if i % 3 == 0:
            handle()  # @serve


sys.stdout.write("%d\n" % os.getpid())
sys.stdout.flush()
serve()

"""An epoll loop whose iterations each spin ~20 ms in spin_handler, for Python's -X perf:
prints its pid, waits for a line on stdin, runs 40 iterations and exits."""
import os
import select
import sys
import time


def spin_handler():
    t = time.perf_counter()
    while time.perf_counter() - t < 0.02:
        pass


def serve():
    ep = select.epoll()
    for _ in range(40):
        ep.poll(0.02)
        spin_handler()


print(os.getpid(), flush=True)
sys.stdin.readline()
serve()

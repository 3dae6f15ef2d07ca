"""A loop thread that blocks, inside its iterations, in reads of two FIFOs in turn: one
deep in a directory tree, one shallow. A writer thread answers each read ~5 ms later.

usage: py_fifo_reads.py DIR COUNT   (prints its pid; the FIFOs are made under DIR; starts
on a line on stdin, once a tracer attached)
"""
import os
import select
import sys
import threading
import time

top, count = sys.argv[1], int(sys.argv[2])
deep_dir = os.path.join(top, "a", "b", "c", "d")
os.makedirs(deep_dir)
fifos = [os.path.join(deep_dir, "deep.fifo"), os.path.join(top, "shallow.fifo")]
for f in fifos:
    os.mkfifo(f)
# O_RDWR: opening a FIFO this way never waits for the other end
fds = [os.open(f, os.O_RDWR) for f in fifos]
ready = threading.Semaphore(0)


def writer():
    for i in range(count):
        ready.acquire()
        time.sleep(0.005)
        os.write(fds[i % 2], b"x")


threading.Thread(target=writer, daemon=True).start()
print(os.getpid(), flush=True)
ep = select.epoll()
while not ep.poll(0.05):  # iterate until a tracer attached and says go
    if select.select([sys.stdin], [], [], 0)[0]:
        sys.stdin.readline()
        break
for i in range(count):
    ep.poll(0)  # one loop iteration per read
    ready.release()
    os.read(fds[i % 2], 1)
ep.poll(0)

"""A process with no event loop (a batch job): on a line on stdin it makes CALLS json.dumps
calls, times each (wall: time.perf_counter, CPU: time.thread_time), writes the timings as
ground truth and exits. On a loaded host a call's probed time lies between the two.
NAME renames the process (its comm); with --forever it keeps calling until killed.

usage: batch_json.py OUT.json CALLS [NAME] [--forever]
Nothing here waits in epoll/poll/select: it is never a loop thread.
"""
import ctypes
import json
import os
import sys
import time

out, calls = sys.argv[1], int(sys.argv[2])
name = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "--forever" else None
forever = "--forever" in sys.argv
if name:
    # PR_SET_NAME: the comm loopwatch's --comm and outputs see
    ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)

DOC = {"items": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b"], "score": i * 0.5}
                 for i in range(15000)]}

print(os.getpid(), flush=True)
sys.stdin.readline()
dumps_s, dumps_cpu_s = [], []
while forever or len(dumps_s) < calls:
    t0, c0 = time.perf_counter(), time.thread_time()
    json.dumps(DOC)
    dumps_cpu_s.append(time.thread_time() - c0)
    dumps_s.append(time.perf_counter() - t0)
with open(out, "w") as f:
    json.dump({"dumps_s": dumps_s, "dumps_cpu_s": dumps_cpu_s}, f)

"""A loop process that, on 'go', makes a known number of json.dumps/json.loads calls on a
large object, times each with time.perf_counter, and writes the timings as ground truth.

usage: probe_json.py OUT.json CALLS [ujson]
It polls stdin through epoll (a loop thread from the start) until a line arrives.
"""
import json
import select
import sys
import time

out, calls = sys.argv[1], int(sys.argv[2])
use_ujson = len(sys.argv) > 3 and sys.argv[3] == "ujson"
if use_ujson:
    import ujson as codec
else:
    codec = json

DOC = {"items": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", "c"], "score": i * 0.5,
                  "nested": {"x": i, "y": [i, i + 1, i + 2]}} for i in range(20000)]}

print(__import__("os").getpid(), flush=True)
ep = select.epoll()
ep.register(sys.stdin.fileno(), select.EPOLLIN)
while not ep.poll(0.05):
    pass
sys.stdin.readline()

dumps_s, loads_s = [], []
text = None
for _ in range(calls):
    t0 = time.perf_counter()
    text = codec.dumps(DOC)
    dumps_s.append(time.perf_counter() - t0)
    ep.poll(0)  # one loop iteration per call
for _ in range(calls):
    t0 = time.perf_counter()
    doc = codec.loads(text)
    loads_s.append(time.perf_counter() - t0)
    del doc  # freeing 20000 dicts is not part of the call
    ep.poll(0)
with open(out, "w") as f:
    json.dump({"dumps_s": dumps_s, "loads_s": loads_s}, f)

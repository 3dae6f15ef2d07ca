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



def run_delay_s():
    """Run-queue time so far (schedstat): a loaded host's preemptions inside the timed
    window but outside the call itself."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


dumps_s, loads_s = [], []
runq = {"dumps_runq_s": 0.0, "loads_runq_s": 0.0}
text = None
for _ in range(calls):
    # run_delay read inside the timed window: a wait for a CPU it counts lies within it
    t0 = time.perf_counter()
    r0 = run_delay_s()
    text = codec.dumps(DOC)
    runq["dumps_runq_s"] += run_delay_s() - r0
    dumps_s.append(time.perf_counter() - t0)
    ep.poll(0)  # one loop iteration per call
for _ in range(calls):
    # run_delay read inside the timed window: a wait for a CPU it counts lies within it
    t0 = time.perf_counter()
    r0 = run_delay_s()
    doc = codec.loads(text)
    runq["loads_runq_s"] += run_delay_s() - r0
    loads_s.append(time.perf_counter() - t0)
    del doc  # freeing 20000 dicts is not part of the call
    ep.poll(0)
with open(out, "w") as f:
    json.dump(dict(runq, dumps_s=dumps_s, loads_s=loads_s), f)

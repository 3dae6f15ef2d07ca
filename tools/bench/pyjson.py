"""A Python loop thread's json.dumps of a small object, as syscost times its
workloads: batches of BATCH_CALLS calls, the median batch printed in ns per
call.

Usage: pyjson.py CALLS [--wait-probe]

loopwatch attaches its built-in json.dumps probe to a process only after it
has seen the process wait like a loop (one select() on a pipe here) and rescanned its
mappings, a second or two later. --wait-probe holds the timing back until a
probe has fired in this process: its return probe's trampoline lives in the
"[uprobes]" mapping the kernel adds on the first hit.
"""
import json
import os
import select
import sys
import time

BATCH_CALLS = 1000
WAIT_PROBE_S = 6.0
OBJ = {"id": 12345, "name": "loopwatch", "tags": ["a", "b"], "ok": True, "ratio": 0.5}


def probe_fired():
    with open("/proc/self/maps") as maps:
        return "[uprobes]" in maps.read()


def wait_probe():
    deadline = time.monotonic() + WAIT_PROBE_S
    while time.monotonic() < deadline:
        json.dumps(OBJ)
        if probe_fired():
            return True
        time.sleep(0.05)
    return False


def main():
    calls = int(sys.argv[1])
    # a loop thread from here on: its busy period lasts to the end (a select on
    # no fd would be a sleep, which makes no loop thread)
    select.select([os.pipe()[0]], [], [], 0)
    if "--wait-probe" in sys.argv[2:] and not wait_probe():
        sys.exit("pyjson.py: no probe fired on json.dumps within %.0f s" % WAIT_PROBE_S)
    dumps, clock = json.dumps, time.perf_counter_ns
    for _ in range(calls // 10):
        dumps(OBJ)
    batch_ns = []
    for _ in range(max(1, calls // BATCH_CALLS)):
        start = clock()
        for _ in range(BATCH_CALLS):
            dumps(OBJ)
        batch_ns.append(clock() - start)
    batch_ns.sort()
    print("%.1f" % (batch_ns[len(batch_ns) // 2] / BATCH_CALLS))


main()

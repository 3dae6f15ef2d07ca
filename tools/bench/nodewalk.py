#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What walking V8's frames costs per captured stack, A/B on one node process:
nodewalk.js's Atomics.wait ping-pong (two blocked syscalls, so two captures, per
round trip) timed with its pid in loopwatch's v8_procs map (the walk on) and with
the entry taken out (the walk off: the capture finds no process and returns),
interleaved, at two JS depths. Two measures: the round trip's wall time, and the
kernel's own bpf_stats run time of loopwatch's programs (every program of the
loopwatch process, summed), both per capture.

Usage: nodewalk.py --loopwatch PATH [--node /usr/bin/node] [--rounds N]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpfstats  # noqa: E402
CALLS = 4000            # round trips per measurement
DEPTHS = (0, 24)        # extra JS frames below the waits (nodewalk.js's own: ~4)


def bpftool(*args):
    out = subprocess.run(["bpftool", "-j"] + list(args), capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def key_hex(pid):
    return [format(b, "02x") for b in pid.to_bytes(4, "little")]


def find_map(pid):
    """The v8_procs map that holds pid: loopwatch's (other tracers may run)."""
    for m in bpftool("map", "show"):
        if m.get("name") != "v8_procs":
            continue
        r = subprocess.run(["bpftool", "-j", "map", "lookup", "id", str(m["id"]), "key", "hex"]
                           + key_hex(pid), capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return m["id"], json.loads(r.stdout)["value"]
    return None, None


def prog_runtime(map_id):
    """Summed run_time_ns and run_cnt of the programs that use map_id."""
    ns = cnt = 0
    for p in bpftool("prog", "show"):
        if map_id in p.get("map_ids", []):
            ns += p.get("run_time_ns", 0)
            cnt += p.get("run_cnt", 0)
    return ns, cnt


class Target:
    def __init__(self, node, depth):
        self.p = subprocess.Popen([node, os.path.join(HERE, "nodewalk.js"), str(depth)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = int(self.p.stdout.readline())

    def measure(self, n):
        self.p.stdin.write("go %d\n" % n)
        self.p.stdin.flush()
        return float(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def walk_cost(args, depth):
    t = Target(args.node, depth)
    lw = subprocess.Popen([args.loopwatch, "-q", "-p", str(t.pid), "--threshold", "100000"],
                          stderr=subprocess.DEVNULL)
    try:
        t.measure(CALLS)        # the loop's first wait: loopwatch sets the process up
        deadline = time.time() + 20
        map_id, value = find_map(t.pid)
        while not map_id and time.time() < deadline:
            time.sleep(0.2)
            t.measure(200)
            map_id, value = find_map(t.pid)
        if not map_id:
            sys.exit("nodewalk.py: loopwatch never configured pid %d" % t.pid)
        key = ["key", "hex"] + key_hex(t.pid)
        wall = {True: [], False: []}
        kern = {True: [], False: []}
        for r in range(args.rounds):
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                if on:
                    subprocess.run(["bpftool", "map", "update", "id", str(map_id)] + key +
                                   ["value", "hex"] + value, check=True)
                else:
                    # already out when the previous measurement was the off one
                    subprocess.run(["bpftool", "map", "delete", "id", str(map_id)] + key,
                                   stderr=subprocess.DEVNULL)
                ns0, _ = prog_runtime(map_id)
                wall[on].append(t.measure(CALLS))
                ns1, _ = prog_runtime(map_id)
                # per capture: two per round trip, CALLS plus the warm-up batch
                kern[on].append((ns1 - ns0) / (2 * (CALLS + 400)))
        subprocess.run(["bpftool", "map", "update", "id", str(map_id)] + key + ["value", "hex"]
                       + value, check=True)
    finally:
        lw.send_signal(signal.SIGINT)
        lw.wait()
        t.close()
    return (statistics.median(wall[True]) - statistics.median(wall[False])) / 2, \
        statistics.median(kern[True]) - statistics.median(kern[False])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loopwatch", required=True)
    ap.add_argument("--node", default="/usr/bin/node")
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    # run time counted while we hold our own descriptor: the sysctl is never written
    bpfstats.enable()
    res = {d: walk_cost(args, d) for d in DEPTHS}
    (w0, k0), (w1, k1) = res[DEPTHS[0]], res[DEPTHS[1]]
    per_w = (w1 - w0) / (DEPTHS[1] - DEPTHS[0])
    per_k = (k1 - k0) / (DEPTHS[1] - DEPTHS[0])
    print("V8 frame walk per captured stack (walk on minus off, same node process, %d rounds):"
          % args.rounds)
    print("                              round trip   bpf_stats")
    for d in DEPTHS:
        print("  blocking wait, +%2d JS calls   %+7.0f ns  %+7.0f ns" % (d, res[d][0], res[d][1]))
    print("  so a stack                  %+7.0f ns  %+7.0f ns, plus %+.0f / %+.0f ns a JS call"
          % (w0 - 4 * per_w, k0 - 4 * per_k, per_w, per_k))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What unwinding a user stack costs in the kernel, per stack, on real workloads.

The unwinder times itself (bpf_ktime_get_ns around the walk, bpf/unwind.bpf.c) into a
per-CPU map, uw_stats; this driver reads that map of the loopwatch it started (the one
uw_stats map that appeared with it) after a few seconds of each workload:

  C        build/workloads/chainwork: -O2 -fomit-frame-pointer, 8 frames to _start
  python3  Debian's /usr/bin/python3 (no frame pointers) in json.dumps: ~30 native frames
  node     Debian's /usr/bin/node in JSON.stringify: C++ frames, then JIT frames

under two configurations, interleaved round by round: the unwind tables (default), and
--unwind-mb 0, the same walker with frame pointers only (what the kernel's own
bpf_get_stackid did before). Prints medians and the min-max of the rounds.

usage: unwind.py --loopwatch PATH --workloads DIR [--rounds N] [--seconds S]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PY_LOOP = """
import json, os, select, sys
doc = [{"k%d" % i: [i, str(i), {"x": i * 1.5}] for i in range(200)} for _ in range(200)]
print(os.getpid(), flush=True)
ep = select.epoll()
while True:
    ep.poll(0.02)
    json.dumps(doc)
"""
NODE_LOOP = """
const big = Array.from({length: 20000}, (_, i) => ({id: i, name: 'n' + i, tags: ['a', 'b']}));
console.log(process.pid);
setInterval(() => JSON.stringify(big), 20);
"""


def uw_stats_ids():
    out = subprocess.run(["bpftool", "-j", "map", "show"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return {m["id"] for m in json.loads(out) if m.get("name") == "uw_stats"}


def uw_stats_read(map_id):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    total = {"stacks": 0, "ns": 0, "frames": 0, "fp_frames": 0}
    for entry in json.loads(out):
        for cpu in entry["formatted"]["values"]:
            for k in total:
                total[k] += cpu["value"][k]
    return total


def workload(name, build):
    if name == "C":
        argv = [os.path.join(build, "chainwork"), "/dev/null", "1000000"]
    elif name == "python3":
        argv = ["/usr/bin/python3", "-c", PY_LOOP]
    else:
        argv = ["/usr/bin/node", "-e", NODE_LOOP]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd="/tmp")
    p.pid_reported = int(p.stdout.readline())
    return p


def measure(loopwatch, build, name, config, seconds):
    w = workload(name, build)
    before = uw_stats_ids()
    args = [loopwatch, "--json", "-p", str(w.pid_reported), "-d", str(seconds + 30)]
    if config == "fp":
        args += ["--unwind-mb", "0"]
    lw = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while "tracing" not in lw.stderr.readline():
            if lw.poll() is not None:
                raise SystemExit("unwind.py: loopwatch exited early")
        mine = uw_stats_ids() - before
        if len(mine) != 1:
            return None     # another loopwatch started meanwhile: this round is unclear
        map_id = mine.pop()
        first = uw_stats_read(map_id)
        time.sleep(seconds)
        last = uw_stats_read(map_id)
    finally:
        lw.terminate()
        lw.wait()
        w.kill()
        w.wait()
    return {k: last[k] - first[k] for k in last}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loopwatch", required=True)
    ap.add_argument("--workloads", required=True)
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", 5)))
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    a.workloads = os.path.abspath(a.workloads)
    names = ["C", "python3", "node"]
    configs = ["tables", "fp"]
    got = {(n, c): [] for n in names for c in configs}
    for r in range(a.rounds):
        print("round %d:" % (r + 1), end="", file=sys.stderr, flush=True)
        for n in names:
            for c in configs:
                m = measure(a.loopwatch, a.workloads, n, c, a.seconds)
                if m and m["stacks"]:
                    got[(n, c)].append(m)
                print(" %s/%s" % (n, c), end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    print("Unwinding in the kernel, per stack (ns inside the walk; median, min-max of %d rounds):"
          % a.rounds)
    print("%-8s %-7s %8s %7s %9s %17s %8s" % ("workload", "config", "stacks", "frames",
                                             "fp frames", "ns/stack", "ns/frame"))
    for n in names:
        for c in configs:
            ms = got[(n, c)]
            if not ms:
                print("%-8s %-7s (no clean round)" % (n, c))
                continue
            per = [m["ns"] / m["stacks"] for m in ms]
            frames = statistics.median(m["frames"] / m["stacks"] for m in ms)
            fp = statistics.median(m["fp_frames"] / m["stacks"] for m in ms)
            print("%-8s %-7s %8d %7.1f %9.1f %6.0f (%4.0f-%5.0f) %8.0f" % (
                n, c, statistics.median(m["stacks"] for m in ms), frames, fp,
                statistics.median(per), min(per), max(per), statistics.median(per) / frames))


if __name__ == "__main__":
    main()

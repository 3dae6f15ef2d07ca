"""The kernel's own counters (bpf_stats: run.sh holds them on) of some BPF programs.

Usage: progstats.py IDS_FILE
  prints one line per program name among the ids in IDS_FILE (one id a line):
  NAME RUN_CNT RUN_TIME_NS (programs of one name summed)
"""
import json
import subprocess
import sys


def main():
    with open(sys.argv[1]) as f:
        ids = {int(line) for line in f if line.strip()}
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], check=True,
                                      stdout=subprocess.PIPE).stdout)
    sums = {}
    for p in progs:
        if p["id"] in ids:
            cnt, ns = sums.get(p["name"], (0, 0))
            sums[p["name"]] = (cnt + p.get("run_cnt", 0), ns + p.get("run_time_ns", 0))
    for name, (cnt, ns) in sorted(sums.items()):
        print(name, cnt, ns)


main()

"""The kernel's own counters (bpf_stats: run.sh holds them on) of some BPF programs.

Usage: progstats.py IDS_FILE
  prints one line per program name among the ids in IDS_FILE (one id a line):
  NAME RUN_CNT RUN_TIME_NS (programs of one name summed; names as the kernel keeps
  them, 15 characters at most)
"""
import sys

import bpfstats


def main():
    with open(sys.argv[1]) as f:
        ids = {int(line) for line in f if line.strip()}
    for name, (cnt, ns, _) in sorted(bpfstats.snapshot(ids).items()):
        print(name, cnt, ns)


main()

#!/usr/bin/env python3
"""Runs target.py under every CPython on this machine and checks what pywalk
captures in each context (CPU samples, sched_switch, uprobe) against the
script's own source: every target.py frame must have the tagged line for its
function, and every thread's chain of target.py functions must be one the
script can be in. Prints one row per interpreter and context; exits non-zero
on any mismatch.

Usage: tools/pywalk/verify.py [--bin build/pywalk] [--seconds 1.5] [LABEL...]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "target.py")
PYENV = os.path.expanduser("~/.pyenv/versions")

INTERPRETERS = [
    ("debian-3.11", "/usr/bin/python3.11"),
    ("3.8", PYENV + "/3.8.18/bin/python3.8"),
    ("3.9", PYENV + "/3.9.18/bin/python3.9"),
    ("3.10", PYENV + "/3.10.13/bin/python3.10"),
    ("3.11", PYENV + "/3.11.7/bin/python3.11"),
    ("3.12", PYENV + "/3.12.1/bin/python3.12"),
    ("3.13", PYENV + "/3.13.0/bin/python3.13"),
    ("2.7", PYENV + "/2.7.18/bin/python2.7"),
]

# innermost first; a thread's target.py frames must be a prefix-free match of one
CHAINS = [
    ["spin", "busy_helper", "Worker.run", "<module>"],
    ["busy_helper", "Worker.run", "<module>"],
    ["sleep_helper", "Worker.run", "<module>"],
    ["Worker.run", "<module>"],
    ["side_sleeper"],
    ["cb_key", "cb_sorter"],
    ["cb_sorter"],
]


def short(name):
    """3.8-3.10 have no co_qualname: Worker.run is just run there."""
    return name.split(".")[-1]


def tags():
    """name -> lines: the tagged ones, and the def line, where CPython itself puts a
    frame that is just starting (executing RESUME, 3.11+)."""
    lines = {}
    with open(TARGET) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# @(\S+)$", line.rstrip())
            if m:
                lines.setdefault(m.group(1), set()).add(n)
            m = re.match(r"\s*def (\w+)\(", line)
            if m:
                DEFS[m.group(1)] = n
    for name, found in lines.items():
        if short(name) in DEFS:
            found.add(DEFS[short(name)])
    return lines


DEFS = {}


TAGS = tags()


def check_stack(frames, counts):
    """Errors in one stack's Python frames (innermost first)."""
    errors = []
    mine = [f for f in frames if os.path.basename(f.get("file", "")) == "target.py"]
    for f in mine:
        counts["frames"] += 1
        counts["at_def"] += f["line"] == DEFS.get(short(f["func"]))
        want = TAGS.get(f["func"]) or next(
            (v for k, v in TAGS.items() if short(k) == f["func"]), None)
        if want is None:
            errors.append("untagged %s" % f["func"])
        elif f["line"] not in want:
            errors.append("%s:%d not in %s" % (f["func"], f["line"], sorted(want)))
    chain = [short(f["func"]) for f in mine]
    if mine and not any(chain == [short(c) for c in ch] for ch in CHAINS):
        errors.append("chain %s" % chain)
    return errors, [f["func"] for f in mine]


LIBC = "/lib/x86_64-linux-gnu/libc.so.6"


def run_mode(pywalk, pid, mode, seconds, label):
    extra = []
    if mode == "list":
        mode, extra = "switch", ["--thread-list"]
    # time.sleep is select() before 3.11, clock_nanosleep() after
    old = label in ("2.7", "3.8", "3.9", "3.10")
    uprobe = LIBC + (":select" if old else ":clock_nanosleep")
    r = subprocess.run([pywalk, "-p", str(pid), "-m", mode, "-d", str(seconds), "--json",
                        "-u", uprobe] + extra,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode or not lines or not lines[-1].get("summary"):
        return None, r.stderr.strip()[-500:]
    return lines, ""


def verify(pywalk, label, python, seconds):
    rows, ok = [], True
    proc = subprocess.Popen([python, TARGET], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        time.sleep(0.5)
        for mode in ("sample", "switch", "uprobe", "list"):
            lines, err = run_mode(pywalk, pid, mode, seconds, label)
            if lines is None:
                rows.append((label, mode, "FAIL", err))
                ok = False
                continue
            summary, events = lines[-1], lines[:-1]
            bad, chains, markers = [], set(), set()
            counts = {"frames": 0, "at_def": 0}
            for e in events:
                py = e["python"]
                markers |= {f["func"] for f in py if f["func"].startswith("[python:")}
                errs, chain = check_stack(py, counts)
                bad += errs
                if chain:
                    chains.add(" < ".join(chain))
                # the splice keeps every Python frame, in order
                if [f for f in e["stack"] if f["kind"] == "python"] != py:
                    bad.append("splice lost frames")
            # a frame is on its def line only in its first instruction: rarely
            if counts["at_def"] > max(2, counts["frames"] // 20):
                bad.append("%d of %d frames on a def line" % (counts["at_def"], counts["frames"]))
            if mode == "list" and label != "2.7" and \
                    summary["flags"]["thread_list"] != summary["with_python"]:
                bad.append("thread list not used")
            if label == "2.7":
                good = markers == {"[python: unsupported 2.7]"} and summary["detect"] == 1
            else:
                good = not bad and summary["with_python"] > 0 and not markers
                # sleeping threads are seen in every context; the busy one only sampled
                need = {"sleep_helper < run < <module>", "side_sleeper", "cb_key < cb_sorter"}
                if mode == "sample":
                    need = {"spin < busy_helper < run < <module>"}
                have = {" < ".join(short(n) for n in c.split(" < ")) for c in chains}
                missing = need - have
                if missing:
                    bad.append("never saw %s" % sorted(missing))
                    good = False
            ok &= good
            w = summary["walk_ns"]
            flags = {k: v for k, v in summary["flags"].items() if v}
            rows.append((label, mode, "ok" if good else "FAIL",
                         "%s: %d stacks, %d with Python, walk p50 %.1f us p99 %.1f us, "
                         "verifier %d insns%s%s%s" % (
                             summary["version"], summary["events"], summary["with_python"],
                             w["p50"] / 1e3, w["p99"] / 1e3, summary["verified_insns"],
                             ", flags %s" % flags if flags else "",
                             ", markers %s" % sorted(markers) if markers else "",
                             "; " + "; ".join(sorted(set(bad))[:5]) if bad else "")))
    finally:
        proc.kill()
        proc.wait()
    return ok, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "pywalk"))
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("only", nargs="*")
    args = ap.parse_args()
    pywalk = os.path.join(os.path.abspath(args.bin), "pywalk")
    all_ok = True
    for label, python in INTERPRETERS:
        if args.only and label not in args.only:
            continue
        if not os.path.exists(python):
            print("%-12s missing %s" % (label, python))
            continue
        ok, rows = verify(pywalk, label, python, args.seconds)
        all_ok &= ok
        for r in rows:
            print("%-12s %-7s %-4s %s" % r, flush=True)
    print("ALL OK" if all_ok else "FAILURES")
    sys.exit(0 if all_ok else 1)


if __name__ == "__main__":
    main()

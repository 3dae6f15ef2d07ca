#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""make docs: the generated parts of the man page and docs/ rewritten from loopwatch's own
tables (its flags: userspace/optable.c), between their BEGIN/END marker lines.
--check: change nothing, exit 1 naming each part that drifted (tests/e2e/test_docs.py).

usage: tools/docs.py LOOPWATCH [--check]"""
import os
import subprocess
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# (file, begin marker, end marker, loopwatch's arguments printing the part)
PARTS = [
    ("tools/loopwatch.8", '.\\" BEGIN OPTIONS (make docs)', '.\\" END OPTIONS',
     ["--help-format", "man"]),
    ("docs/flags.md", "<!-- BEGIN FLAGS (make docs) -->", "<!-- END FLAGS -->",
     ["--help-format", "markdown"]),
]


def splice(text, begin, end, body):
    b = text.index(begin + "\n") + len(begin) + 1
    e = text.index(end, b)
    return text[:b] + body + text[e:]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    loopwatch, check = sys.argv[1], "--check" in sys.argv[2:]
    drifted = []
    for path, begin, end, args in PARTS:
        full = os.path.join(REPO, path)
        body = subprocess.run([loopwatch, *args], check=True, stdout=subprocess.PIPE,
                              text=True).stdout
        with open(full) as f:
            text = f.read()
        new = splice(text, begin, end, body)
        if new == text:
            continue
        drifted.append(path)
        if not check:
            with open(full, "w") as f:
                f.write(new)
    if check and drifted:
        sys.exit("tools/docs.py: out of date (run make docs): " + ", ".join(drifted))


if __name__ == "__main__":
    main()

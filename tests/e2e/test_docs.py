# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The generated documentation matches the binary: the man page's OPTIONS and
docs/flags.md are what `make docs` makes from loopwatch's own table of flags, and every
flag getopt accepts is in --help."""
import os
import re
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_man_page_and_flags_doc_are_generated_from_the_binary(ctx):
    r = subprocess.run([os.path.join(REPO, "tools", "docs.py"), ctx.loopwatch, "--check"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout


def test_every_flag_in_help_is_accepted_and_described(ctx):
    """Each --flag --help names parses (a bad value is rejected as a bad value, never as
    an unknown option), and the man page and docs/flags.md name each one."""
    help_text = subprocess.run([ctx.loopwatch, "--help"], stdout=subprocess.PIPE,
                               text=True, check=True).stdout
    flags = sorted(set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", help_text, re.M)))
    assert len(flags) >= 35, flags
    with open(os.path.join(REPO, "tools", "loopwatch.8")) as f:
        man = f.read()
    with open(os.path.join(REPO, "docs", "flags.md")) as f:
        md = f.read()
    for flag in flags:
        if flag in ("--help", "--version", "--list-probes"):
            continue
        r = subprocess.run([ctx.loopwatch, flag, "\x01bad", "-d", "0.01"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert "unknown option" not in r.stderr, (flag, r.stderr)
        assert flag.replace("-", "\\-") in man and flag in md, flag


def names_in_source(pattern):
    found = set()
    for d in ("sinks", "model", "events"):
        folder = os.path.join(REPO, "userspace", d)
        for name in os.listdir(folder):
            if name.endswith(".c"):
                with open(os.path.join(folder, name)) as f:
                    found |= set(re.findall(pattern, f.read()))
    return found


def test_every_metric_family_and_json_type_is_documented(ctx):
    """Each metric family name and each JSON line type the code can write is named in the
    man page, and in docs/prometheus.md or docs/outputs.md: an output the user cannot
    look up is an output the user cannot use."""
    with open(os.path.join(REPO, "tools", "loopwatch.8")) as f:
        man = f.read().replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
    with open(os.path.join(REPO, "docs", "prometheus.md")) as f:
        prom_doc = f.read()
    with open(os.path.join(REPO, "docs", "outputs.md")) as f:
        out_doc = f.read()
    families = names_in_source(r'"(loopwatch_[a-z_]+)"')
    assert len(families) >= 25, sorted(families)
    missing = [f for f in sorted(families) if f not in man or f not in prom_doc]
    assert not missing, missing
    types = names_in_source(r'\\"type\\":\\"([a-z_]+)') | {"interval", "summary"}
    assert len(types) >= 10, sorted(types)
    missing = [t for t in sorted(types) if t not in man or '"%s"' % t not in out_doc]
    assert not missing, missing

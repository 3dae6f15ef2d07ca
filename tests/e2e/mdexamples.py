# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The command examples of the Markdown pages (README.md, docs/*.md) as a reader types
them. The convention (docs/tests.md): a command example is a ```console block; its `$ `
lines run verbatim, in order, in one bash per page at the top of the tree, with the
build's directory first on PATH (`loopwatch` as after `make install`); its other lines are
the sample output of the command before them (`…` marks output left out). A `$ ` line
anywhere else is a command no test runs: an error."""
import os
import re
import signal
import subprocess
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
MARK = "@@@loopwatch-example@@@"


class Command:
    def __init__(self, text, line):
        self.text = text        # what runs, verbatim (lines joined by a trailing \)
        self.line = line        # its line in the page, for messages
        self.sample = []        # the sample output the page shows under it

    def __repr__(self):
        return "line %d: $ %s" % (self.line, self.text)


def blocks(text):
    """The fenced blocks: (info string, line number of the opening fence, lines)."""
    out, fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        if fence is None:
            m = FENCE.match(line)
            if m:
                fence, info, start, body = m.group(1), m.group(2), n, []
            continue
        s = line.strip()
        if s and set(s) == {fence[0]} and len(s) >= len(fence):
            out.append((info, start, body))
            fence = None
        else:
            body.append(line)
    if fence is not None:
        out.append((info, start, body))
    return out


def commands(text):
    """The `$ ` commands of the ```console blocks, in order, each with its sample output."""
    cmds = []
    for info, start, body in blocks(text):
        if info != "console":
            continue
        cont = False
        for k, line in enumerate(body):
            if cont:
                cmds[-1].text += "\n" + line
            elif line.startswith("$ "):
                cmds.append(Command(line[2:], start + 1 + k))
            elif cmds:
                cmds[-1].sample.append(line)
            cont = (line.startswith("$ ") or cont) and line.endswith("\\")
    return cmds


def strays(text):
    """What breaks the convention: `$ ` lines outside ```console blocks, and console
    blocks whose first line is no command. (line number, line) each."""
    bad, inside = [], set()
    for info, start, body in blocks(text):
        inside.update(range(start, start + len(body) + 2))
        if info == "console" and body and not body[0].startswith("$ "):
            bad.append((start + 1, body[0]))
        if info != "console":
            bad += [(start + 1 + k, l) for k, l in enumerate(body) if l.startswith("$ ")]
    bad += [(n, l) for n, l in enumerate(text.splitlines(), 1)
            if n not in inside and l.startswith("$ ")]
    return sorted(bad)


def run(cmds, path_first, timeout=900):
    """Run the commands verbatim in one bash at the top of the tree (set -e, pipefail, stderr into
    stdout, background jobs killed at the end), path_first first on PATH. Returns (exit
    status, [output of each command], the whole output)."""
    script = tempfile.NamedTemporaryFile("w", suffix=".sh", prefix="lw-example-", delete=False)
    # a file, not bash -c: `pgrep -f NAME` must not find the script's own command line
    script.write("set -eo pipefail\nexec 2>&1\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
    for i, c in enumerate(cmds):
        script.write("echo; echo '%s %d'\n%s\n" % (MARK, i, c.text))
    script.write("echo; echo '%s end'\n" % MARK)
    script.close()
    env = dict(os.environ, PATH=os.path.abspath(path_first) + os.pathsep + os.environ["PATH"])
    p = subprocess.Popen(["bash", script.name], cwd=REPO, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        out += "\n(timed out after %d s)" % timeout
    finally:
        os.unlink(script.name)
    outputs = [""] * len(cmds)
    for part in out.split("\n" + MARK + " ")[1:]:
        head, _, rest = part.partition("\n")
        if head != "end":
            outputs[int(head)] = rest
    return p.returncode, outputs, out


EVENT = re.compile(r"^\d\d:\d\d:\d\d (STALL|BLOCK|PROBE|STUCK|DROPPED) ")
HEADINGS = ("Summary:", "Top offenders", "Top functions", "Probed functions",
            "Blocking syscalls", "# loopwatch diagnosis")
JSON_TYPE = re.compile(r'"type": ?"([a-z_]+)"')
METRIC = re.compile(r"^(loopwatch_[a-z_]+)[{ ]")


def kinds(lines):
    """The kinds of line an output holds: loopwatch's event lines (STALL, BLOCK, PROBE,
    STUCK), alerts, the summary's tables, JSON lines by type, metric families."""
    found = set()
    for line in lines:
        m = EVENT.match(line)
        if m:
            found.add(m.group(1))
        if " loopwatch: ALERT " in line:
            found.add("ALERT")
        found.update(h for h in HEADINGS if line.startswith(h))
        found.update('"type":"%s"' % t for t in JSON_TYPE.findall(line))
        m = METRIC.match(line)
        if m:
            found.add(m.group(1))
    return found


def shown(sample):
    """The sample's lines, the `…` marks of what was left out taken away."""
    return [l for l in sample if l.strip() and l.strip() != "…"]

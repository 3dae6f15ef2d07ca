# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The live view in a real terminal (tmux): it stays readable when loopwatch says
something on stderr mid-run, shows the culprit function at 80 columns, and its keys
work (? help, m messages, q quits with the messages written out)."""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lwtest import Workload, tmpfile

CULPRITS = ("parse_request", "render_page", "query_backend", "backoff_sleep",
            "crunch_numbers")


def tmux(*args):
    return subprocess.run(["tmux", "-L", "lwtest-tui", *args], check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def pane(history=False):
    return tmux("capture-pane", "-p", "-t", "tui", *(["-S", "-"] if history else [])
                ).splitlines()


def wait_pane(pred, what, timeout=60):
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        lines = pane()
        if pred(lines):
            return lines
        time.sleep(0.3)
    raise AssertionError("%s: not seen in %d s:\n%s" % (what, timeout, "\n".join(lines)))


def live_view(ctx, cols, rows):
    """One run at cols x rows: returns what the checks saw."""
    d = tempfile.mkdtemp(prefix="loopwatch-tui-")
    report_dir = os.path.join(d, "reports")
    os.mkdir(report_dir)
    w = Workload([ctx.workload("culprits"), tmpfile(), "400", "--go"])
    try:
        # exec: the pane's pid is loopwatch's, its stdout and stderr the terminal
        tmux("new-session", "-d", "-s", "tui", "-x", str(cols), "-y", str(rows),
             "bash", "-c", "exec %s -p %d --report %s/r.md" % (ctx.loopwatch, w.pid,
                                                              report_dir))
        tmux("set-option", "-t", "tui", "remain-on-exit", "on")
        lw_pid = int(tmux("list-panes", "-t", "tui", "-F", "#{pane_pid}").strip())
        w.go()
        before = wait_pane(lambda ls: any(c in l for l in ls for c in CULPRITS) and
                           ls[0].startswith("loopwatch "), "a culprit in the functions panel")
        assert len(before) == rows, len(before)

        # something on stderr mid-run: the report's directory gone, then a snapshot asked
        shutil.rmtree(report_dir)
        os.kill(lw_pid, signal.SIGUSR1)
        after = wait_pane(lambda ls: "cannot write" in ls[-1], "the message on the status line")
        said = [i for i, l in enumerate(after) if "cannot write" in l]
        assert said == [rows - 1], (said, "\n".join(after))
        assert after[0].startswith("loopwatch "), "\n".join(after)
        # the panels' headers in place: the layout untouched by the message
        heads = lambda ls: [i for i, l in enumerate(ls) if "PID COMM" in l]
        assert heads(after) == heads(before), ("\n".join(before), "\n".join(after))
        assert any(c in l for l in after[:-1] for c in CULPRITS), "\n".join(after)

        tmux("send-keys", "-t", "tui", "?")
        keys = wait_pane(lambda ls: any(l.startswith("Keys") for l in ls), "the help")
        assert any("quit" in l for l in keys), "\n".join(keys)
        tmux("send-keys", "-t", "tui", "x")
        tmux("send-keys", "-t", "tui", "m")
        wait_pane(lambda ls: any(l.startswith("Messages") for l in ls) and
                  sum("cannot write" in l for l in ls) >= 2, "the messages view")
        tmux("send-keys", "-t", "tui", "m")
        tmux("send-keys", "-t", "tui", "q")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                tmux("display-message", "-p", "-t", "tui", "#{pane_dead}").strip() != "1":
            time.sleep(0.2)
        # written out once the view closed, with the summary: not lost
        text = "\n".join(pane(history=True))
        assert "cannot write --report" in text and "Summary" in text, text
        return before
    finally:
        subprocess.run(["tmux", "-L", "lwtest-tui", "kill-server"], stderr=subprocess.DEVNULL)
        w.kill()
        shutil.rmtree(d, ignore_errors=True)


def test_live_view_at_80x24_keeps_its_layout_and_culprit(ctx):
    """80x24: a stderr line mid-run lands on the status line alone (title, headers and
    rows unmoved); a culprit function is visible (the compact functions row)."""
    screen = live_view(ctx, 80, 24)
    assert all(len(l) <= 80 for l in screen), screen


def test_live_view_at_200x50(ctx):
    """The same at 200x50, with the full rows."""
    screen = live_view(ctx, 200, 50)
    assert any("BLOCKEDms" in l for l in screen), "\n".join(screen)

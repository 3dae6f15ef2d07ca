# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""README's examples as a newcomer types them: every `$ ` line of its ```console blocks
runs verbatim, in order, in one shell at the top of the tree; each must succeed, and what
they print must name the demo servers' culprits (tools/demo: their functions at their
lines) -- the README's promise that following it finds both."""
import os
import re

import mdexamples

REPO = mdexamples.REPO
README = os.path.join(REPO, "README.md")


def demo_line(path, func):
    """The line in func the demo's source marks as its stall ("the stall" comment): the
    line loopwatch must name, read from the file, not written here."""
    with open(path) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if re.match(r"\s*(def|function) %s\b" % func, l))
    return next(i + 1 for i in range(start + 1, len(lines)) if "the stall" in lines[i])


def test_readme_examples_run_verbatim_and_find_both_demos(ctx):
    with open(README) as f:
        cmds = mdexamples.commands(f.read())
    assert len(cmds) >= 6, cmds
    rc, _, out = mdexamples.run(cmds, ctx.build, timeout=600)
    assert rc == 0, out[-4000:]
    py = os.path.join(REPO, "tools", "demo", "slow_asyncio.py")
    js = os.path.join(REPO, "tools", "demo", "slow_node.js")
    for path, func in ((py, "render_report"), (py, "legacy_lookup"), (js, "hashPassword"),
                       (js, "loadConfig")):
        want = "%s (%s:%d)" % (func, os.path.basename(path), demo_line(path, func))
        assert want in out, (want, out[-4000:])
    with open("/tmp/loopwatch-report.md") as f:
        report = f.read()
    assert "Advice:" in report and "legacy_lookup (slow_asyncio.py:" in report, report

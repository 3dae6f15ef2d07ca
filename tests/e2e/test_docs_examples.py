# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""docs/'s examples as a reader types them: the `$ ` lines of each page's ```console blocks
run verbatim, in order, in one shell per page at the top of the tree, `loopwatch` the
build's (the convention: docs/tests.md, the runner: mdexamples.py). Each page's script must
succeed, and each command's output must hold the kinds of line its sample shows (STALL,
BLOCK, PROBE, STUCK and ALERT lines, the summary's tables, JSON lines by type, metric
families; some output where the sample shows some). A `$ ` line anywhere else on a page
is a command no test runs, and fails."""
import os

import mdexamples

DOCS = os.path.join(mdexamples.REPO, "docs")


def pages():
    return sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))


def read(name):
    with open(os.path.join(DOCS, name)) as f:
        return f.read()


def check_page(ctx, name):
    cmds = mdexamples.commands(read(name))
    assert cmds, name
    rc, outputs, whole = mdexamples.run(cmds, ctx.build)
    assert rc == 0, (name, whole[-6000:])
    for c, out in zip(cmds, outputs):
        shown = mdexamples.shown(c.sample)
        missing = mdexamples.kinds(shown) - mdexamples.kinds(out.splitlines())
        assert not missing, (name, c, sorted(missing), out[-4000:])
        assert out.strip() or not shown, (name, c, "no output; the page shows some")


def test_no_command_outside_console_blocks(ctx):
    """Every `$ ` line of docs/ and README is in a ```console block, so it runs."""
    # the check itself: a command in a plain block, in prose, a console block not led by one
    assert mdexamples.strays("```\n$ loopwatch -d 1\n```\n") == [(2, "$ loopwatch -d 1")]
    assert mdexamples.strays("text\n$ loopwatch -d 1\n") == [(2, "$ loopwatch -d 1")]
    assert mdexamples.strays("```console\nout\n$ true\n```\n") == [(2, "out")]
    assert mdexamples.strays("````markdown\n```console\n$ true\n```\n````\n") == [(3, "$ true")]
    bad = {}
    for name in pages() + [os.path.join("..", "README.md")]:
        found = mdexamples.strays(read(name))
        if found:
            bad[name] = found
    assert not bad, bad
    run = [p for p in pages() if mdexamples.commands(read(p))]
    assert len(run) >= 7, run


def page_test(name):
    def test(ctx):
        check_page(ctx, name)
    test.__doc__ = "docs/%s: its console blocks run verbatim; outputs as the samples" % name
    return test


for _name in pages():
    if mdexamples.commands(read(_name)):
        globals()["test_" + _name[:-3].replace("-", "_")] = page_test(_name)

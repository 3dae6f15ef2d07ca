# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Culprits in the application's own code first: a helper calling requests (Debian's
python3-requests, in dist-packages) and a Node route calling a module of node_modules are
named, not the library functions under them; --innermost-culprits names those instead.
Every expectation is a line of the app's own source, tagged "@function" there."""
import os
import re

from lwtest import of_type, run_traced

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")


def tagged(app, func):
    with open(os.path.join(APPS, app)) as f:
        for n, line in enumerate(f, 1):
            if re.search(r"@%s\s*$" % func, line):
                return n
    raise AssertionError("no @%s in %s" % (func, app))


def stalls_of(ctx, argv, *flags):
    pid, lines = run_traced(ctx, argv, *flags)
    return of_type(lines, "stall", pid=pid)


def own_top(top):
    """The loop's own frames of a culprit line that names another party first
    (docs/otherparty.md: "woken by python3[12] (in fetch_user (app.py:35) < ...)")."""
    m = re.match(r"^(?:woken by|CPU held by|throttled:) .*? \(in (.*)\)$", top)
    return m.group(1) if m else top


def check(ctx, argv, app, func, library, then=None, min_stalls=4):
    """then: what the culprit line says after the app's frame (the call it made)."""
    want = "%s (%s:%d)" % (func, app, tagged(app, func))
    stalls = stalls_of(ctx, argv)
    assert len(stalls) >= min_stalls, [s["top"] for s in stalls]
    named = [s for s in stalls if own_top(s["top"]).startswith(want) and
             (not then or re.match(then, own_top(s["top"])[len(want):]))]
    # the first stall may predate the process's frames (its first wait seen)
    assert len(named) >= len(stalls) - 1, (want, [s["top"] for s in stalls])
    inner = stalls_of(ctx, argv, "--innermost-culprits")
    assert inner and all(library(own_top(s["top"])) for s in inner[1:]), \
        [s["top"] for s in inner]


def test_python_helper_is_named_not_requests(ctx):
    """fetch_user calls requests.get against a 60 ms backend: its stalls (blocked) name
    fetch_user (after the backend process that woke the loop), then the library call it
    made (requests' get) and the call it slept in on the backend's socket:
    "fetch_user (py_library_culprit.py:35) -> get (requests/api.py:73) ... poll 60.3 ms
    tcp 127.0.0.1:41234"; with --innermost-culprits the stdlib or urllib3 function
    under it."""
    check(ctx, ["/usr/bin/python3", os.path.join(APPS, "py_library_culprit.py")],
          "py_library_culprit.py", "fetch_user",
          lambda top: not top.startswith("fetch_user"),
          then=r" -> get \(requests/api\.py:\d+\) \.\.\. \w+ [\d.]+ ms tcp 127\.0\.0\.1:\d+$")


def test_node_route_is_named_not_the_module(ctx):
    """routeReport calls slowlib.crunch (node_modules) for 40 ms of CPU: the stalls name
    routeReport, then the module's function it called ("-> crunch (slowlib/index.js:9)"),
    or its caller once V8 has inlined crunch into it (no frame of crunch is left to
    name); with --innermost-culprits crunch itself."""
    check(ctx, ["node", os.path.join(APPS, "node_library_culprit.js")],
          "node_library_culprit.js", "routeReport",
          lambda top: top.startswith("crunch (slowlib/index.js:") or
          top.startswith("routeReport (node_library_culprit.js:"),
          then=r"( -> crunch \(slowlib/index\.js:\d+\)| < tick \(node_library_culprit\.js:\d+\))$")

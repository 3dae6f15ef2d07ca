"""Runtimes as distros ship them, in a root of their own (tools/testroot.sh: Debian
trixie and forky, debootstrapped once and cached under build/): CPython 3.13, 3.14
and 3.15 walked from the offsets each process publishes (_Py_DebugOffsets), not from a
table of known builds. Ground truth: the lines of the app tagged "# @function"; no
line number is written here."""
import os

from lwtest import RootMounts, of_type, serve_traced, distro_root
from test_python import PYENV, assert_chain, describe, find_frame, tagged_lines

APP = "py_asyncio_stalls.py"


def check_asyncio_stalls(ctx, argv):
    """py_asyncio_stalls.py under argv: its stalls' CPU stacks hold busy_helper <
    inject < injector, its blocking futex calls block_helper < inject < injector,
    each at the tagged line of the script."""
    tags = tagged_lines(APP)
    pid, _, lines = serve_traced(ctx, argv, None, "--threshold", 20, seconds=4)
    stalls = of_type(lines, "stall", pid=pid)
    assert len(stalls) >= 5, [(s["duration_ms"], s["cause"]) for s in stalls]
    # the first may come before the process was set up at the loop's first wait
    cpu = [st["frames"] for s in stalls[1:] for st in s["stacks"]
           if st["cause"] == "cpu" and find_frame(st["frames"], "busy_helper")]
    assert len(cpu) >= 3, "CPU stacks in busy_helper: %s" % [
        describe(st["frames"]) for s in stalls[1:] for st in s["stacks"]]
    for frames in cpu:
        assert_chain(frames, APP, tags, ["busy_helper", "inject", "injector"])
        assert not [f for f in frames if f["func"].startswith("[python:")], describe(frames)
    blocks = [b for b in of_type(lines, "blocking_call", pid=pid)
              if b["syscall"] == "futex" and b["duration_ms"] >= 29]
    assert len(blocks) >= 4, [(b["syscall"], b["duration_ms"])
                              for b in of_type(lines, "blocking_call")]
    for b in blocks[1:]:
        assert_chain(b["stack"], APP, tags, ["block_helper", "inject", "injector"])


def check_in_root(ctx, suite, python):
    root = distro_root(suite)
    with RootMounts(root):
        check_asyncio_stalls(ctx, ["chroot", root, python, "/lwapps/" + APP])


def test_trixie_python_3_13_stalls_name_the_injecting_functions(ctx):
    check_in_root(ctx, "trixie", "python3.13")


def test_forky_python_3_14_stalls_name_the_injecting_functions(ctx):
    check_in_root(ctx, "forky", "python3.14")


def test_forky_python_3_15_stalls_name_the_injecting_functions(ctx):
    check_in_root(ctx, "forky", "python3.15")


def test_pyenv_python_3_13_stalls_name_the_injecting_functions(ctx):
    versions = sorted(v for v in os.listdir(PYENV) if v.startswith("3.13."))
    assert versions, "no pyenv 3.13.* in %s" % PYENV
    for v in versions:
        check_asyncio_stalls(ctx, [os.path.join(PYENV, v, "bin", "python3.13"),
                                   os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "..", "apps", APP)])

"""Python frames in stalls and blocking calls: the CPython frame chain is walked in BPF
at capture time and spliced into the native stack. Every expectation is a line of the
app's own source, tagged "# @function" there; no line number is written here."""
import os
import re
import time
import urllib.request

from lwtest import line_requests, of_type, serve_traced

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
PYENV = os.path.expanduser("~/.pyenv/versions")
PYENV_VERSIONS = ["3.8.18", "3.9.18", "3.10.13", "3.11.7", "3.12.1", "3.13.0"]


def tagged_lines(app):
    """function name -> the lines of app tagged "# @name"."""
    tags = {}
    with open(os.path.join(APPS, app)) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# @(\S+)\s*$", line)
            if m:
                tags.setdefault(m.group(1), set()).add(n)
    return tags


def python_frames(frames):
    return [f for f in frames if f.get("kind") == "python"]


def find_frame(frames, func, app=None, lines=None):
    """The first Python frame named func (qualified, or plain before 3.11) that is in
    app at one of lines, or None."""
    for f in python_frames(frames):
        if f["func"] != func and f["func"] != func.split(".")[-1]:
            continue
        if app and os.path.basename(f.get("file", "")) != app:
            continue
        if lines and f.get("line") not in lines:
            continue
        return f
    return None


def assert_chain(frames, app, tags, chain):
    """Each function of chain (innermost first) has its frame in this stack, at a
    tagged line, and in that order."""
    pos = []
    for func in chain:
        f = find_frame(frames, func, app, tags[func])
        assert f, "%s of %s at line %s not in %s" % (
            func, app, sorted(tags[func]), describe(frames))
        pos.append(frames.index(f))
    assert pos == sorted(pos), "out of order %s: %s" % (chain, describe(frames))


def describe(frames):
    return ["%s %s:%s" % (f["func"], os.path.basename(f.get("file", "")), f.get("line"))
            if f.get("kind") == "python" else "%s (%s)" % (f["func"], f.get("kind"))
            for f in frames]


def test_tornado_json_dumps_stall_has_python_frames(ctx):
    """Debian's python3 + Tornado: a handler's helper serializing a large object with
    json.dumps stalls the loop; the stall's CPU stacks hold the helper at the
    json.dumps line, the handler at the call line, and dumps itself."""
    app = "py_tornado_json.py"
    tags = tagged_lines(app)

    def drive(port):
        for _ in range(5):
            urllib.request.urlopen("http://127.0.0.1:%d/report" % port, timeout=10).read()
            time.sleep(0.1)

    pid, _, lines = serve_traced(ctx, ["/usr/bin/python3", os.path.join(APPS, app)], drive,
                                 "--threshold", 20)
    stalls = [s for s in of_type(lines, "stall", pid=pid) if s["duration_ms"] >= 40]
    assert len(stalls) >= 5, [(s["duration_ms"], s["cause"]) for s in of_type(lines, "stall")]
    # the first may come before loopwatch saw the loop's first wait and detected Python
    for s in stalls[1:]:
        cpu = [st["frames"] for st in s["stacks"] if st["cause"] == "cpu"]
        assert cpu, s
        good = [fr for fr in cpu if find_frame(fr, "dumps") and
                find_frame(fr, "render_report", app, tags["render_report"])]
        assert good, "no CPU stack with dumps < render_report: %s" % [describe(f) for f in cpu]
        assert_chain(good[0], app, tags, ["render_report", "ReportHandler.get"])
        dumps = find_frame(good[0], "dumps")
        assert dumps["file"].endswith("json/__init__.py") and dumps["line"] > 0, dumps
        assert good[0].index(dumps) < good[0].index(
            find_frame(good[0], "render_report")), describe(good[0])


def sleep_server_blocks(ctx, uvloop):
    app = "py_sleep_server.py"
    tags = tagged_lines(app)
    argv = ["/usr/bin/python3", os.path.join(APPS, app)] + (["--uvloop"] if uvloop else [])

    # An idle loop sleeps in epoll_wait with no timeout: loopwatch sees its first
    # wait, and detects Python, only when the first request's iteration ends; on a
    # loaded host that iteration may hold the first sleep, so one request more
    pid, _, lines = serve_traced(ctx, argv, lambda port: line_requests(port, 7), seconds=4)
    blocks = [b for b in of_type(lines, "blocking_call", pid=pid)
              if b["syscall"] == "clock_nanosleep" and b["duration_ms"] >= 29]
    assert len(blocks) >= 6, [(b["syscall"], b["duration_ms"])
                              for b in of_type(lines, "blocking_call")]
    for b in blocks[1:]:
        # the GIL is released in time.sleep: the frames come from the thread's own state
        assert_chain(b["stack"], app, tags, ["blocking_helper", "handle"])
        # the libc leaf stays above the Python frames, the kernel part on top
        kinds = [f["kind"] for f in b["stack"]]
        first_py = kinds.index("python")
        assert "native" in kinds[:first_py], describe(b["stack"])


def test_asyncio_time_sleep_blocking_call_has_helper_frame(ctx):
    sleep_server_blocks(ctx, uvloop=False)


def test_uvloop_time_sleep_blocking_call_has_helper_frame(ctx):
    sleep_server_blocks(ctx, uvloop=True)


def small_loop(ctx, python, seconds=3):
    """py_small_loop.py under python (it prints its pid), traced: (pid, JSON lines)."""
    pid, _, lines = serve_traced(ctx, [python, os.path.join(APPS, "py_small_loop.py")], None,
                                 "--threshold", 20, seconds=seconds)
    return pid, lines


def test_every_pyenv_version_has_python_frames_at_the_right_lines(ctx):
    """The same epoll loop under CPython 3.8 to 3.13: a stall's CPU samples hold
    busy_helper < handle < serve, its blocking call block_helper < handle < serve,
    each at the tagged line of the script."""
    app = "py_small_loop.py"
    tags = tagged_lines(app)
    failures = []
    for version in PYENV_VERSIONS:
        python = os.path.join(PYENV, version, "bin", "python" + version.rsplit(".", 1)[0])
        pid, lines = small_loop(ctx, python)
        stalls = of_type(lines, "stall", pid=pid)
        try:
            assert len(stalls) >= 5, "%d stalls" % len(stalls)
            # the first may come before Python was detected at the loop's first wait; a
            # loaded host may keep a 30 ms spin off the CPU long enough for no sample to
            # land in it, so not every stall has one
            cpu = [st["frames"] for s in stalls[1:] for st in s["stacks"]
                   if st["cause"] == "cpu" and find_frame(st["frames"], "busy_helper")]
            assert cpu, "no CPU stack in busy_helper: %s" % [
                describe(st["frames"]) for s in stalls[1:] for st in s["stacks"]]
            for frames in cpu:
                assert_chain(frames, app, tags, ["busy_helper", "handle", "serve"])
            blocks = [b for b in of_type(lines, "blocking_call", pid=pid)
                      if b["syscall"] == "futex" and b["duration_ms"] >= 29]
            assert len(blocks) >= 5, "blocking calls: %s" % [
                (b["syscall"], b["duration_ms"]) for b in of_type(lines, "blocking_call")]
            # until the process is set up (at its first wait seen: later on a loaded host)
            # its stacks have no Python frames at all; from the first that has, every one
            # holds the chain
            first = next((i for i, b in enumerate(blocks)
                          if any(f["kind"] == "python" for f in b["stack"])), len(blocks))
            assert len(blocks) - first >= 3, "blocking calls with Python frames: %d of %d" % (
                len(blocks) - first, len(blocks))
            for b in blocks[first:]:
                assert_chain(b["stack"], app, tags, ["block_helper", "handle", "serve"])
        except AssertionError as e:
            failures.append("%s: %s" % (version, e))
    assert not failures, "\n".join(failures)


def test_python_2_7_gets_the_unsupported_marker_and_still_loops(ctx):
    """pyenv 2.7: no layout for it, so every stack says so in one marker frame, and
    the loop, its stalls and their native frames are reported as for any process."""
    python = os.path.join(PYENV, "2.7.18", "bin", "python2.7")
    pid, lines = small_loop(ctx, python)
    stalls = of_type(lines, "stall", pid=pid)
    assert len(stalls) >= 5, [(s["duration_ms"], s["cause"]) for s in stalls]
    stacks = [st["frames"] for s in stalls[1:] for st in s["stacks"]]
    assert stacks, stalls
    for frames in stacks:
        assert [f["func"] for f in python_frames(frames)] == ["[python: unsupported 2.7]"], \
            describe(frames)
    # the marker replaces nothing: the native frames are all still there
    assert any(f["kind"] == "native" and f["func"] != "[unknown]"
               for frames in stacks for f in frames), [describe(f) for f in stacks]
    summary = of_type(lines, "summary", pid=pid)
    assert summary and summary[0]["iterations"] > 20, summary


def test_a_loop_waiting_at_start_has_python_frames_in_its_first_stall(ctx):
    """An asyncio loop already in epoll_wait when a --comm run starts, which stalls 6 times
    1 ms apart as soon as it is told to: its first reported stall has the Python frame
    of first_stall at its tagged line. A process is set up at start when a thread of it
    is waiting; set up only at its first wait seen, these stalls had no Python frames (it
    takes longer than a millisecond)."""
    from lwtest import Loopwatch, Workload
    app = "py_first_stall.py"
    w = Workload(["/usr/bin/python3", os.path.join(APPS, app)])
    try:
        lw = Loopwatch(ctx, "--comm", "python3", "-d", "4").start()
        w.go()
        w.wait()
        lines = lw.stop()
    finally:
        w.kill()
    stalls = of_type(lines, "stall", pid=w.pid)
    # the first one after the go is unseen: its loop record is made at the next wait
    assert len(stalls) >= 4, [s["duration_ms"] for s in stalls]
    tags = tagged_lines(app)
    frames = [f for st in stalls[0]["stacks"] for f in st["frames"]]
    assert find_frame(frames, "first_stall", app, tags["first_stall"]), describe(frames)

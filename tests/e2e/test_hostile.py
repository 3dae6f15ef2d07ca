"""Hostile input: device nodes, FIFOs, full disks, escape-laden names, programs planted in
the working directory. loopwatch must never harm the host nor pass a traced process's
bytes to a terminal or a log unsanitized."""
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time

from lwtest import load_truth, of_type, run_traced, tmpfile, write_script

PLACEHOLDER = b"inject_named_for_patching_0123456789abcdef0123456789abcdef01234567"
# a window title, a bell, a line of its own that looks like loopwatch's, a screen clear
# and a one-byte CSI (U+009B), padded to the placeholder's length
HOSTILE = b"\x1b]0;pwn\x07\r\nloopwatch: ALERT forged\x1b[2J\xc2\x9b31m\xe2\x80\xaeZ"
HOSTILE += b"x" * (len(PLACEHOLDER) - len(HOSTILE))


def run_cli(ctx, *args, timeout=20):
    return subprocess.run([ctx.loopwatch] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def assert_one_line_status_2(r, what):
    assert r.returncode == 2, "%s: status %d: %s" % (what, r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("loopwatch: "), \
        "%s: %r" % (what, r.stderr)


def unsafe_chars(text):
    """Characters a terminal acts on: C0 but newline, DEL, C1, bidi overrides."""
    return [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or
            0x202a <= ord(c) <= 0x202e or 0x2066 <= ord(c) <= 0x2069]


def test_prom_file_never_replaces_a_device_or_fifo(ctx):
    """--prom-file on a device node (a private copy of /dev/null and /dev/zero) or a FIFO:
    exit 2 at once, the node untouched."""
    d = tempfile.mkdtemp(prefix="loopwatch-dev-")
    try:
        nodes = {"null": (1, 3), "zero": (1, 5)}
        for name, (major, minor) in nodes.items():
            os.mknod(os.path.join(d, name), 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.mkfifo(os.path.join(d, "fifo"))
        for name in ("null", "zero", "fifo"):
            path = os.path.join(d, name)
            r = run_cli(ctx, "--prom-file", path, "-d", 1)
            assert_one_line_status_2(r, name)
            assert "not a regular file" in r.stderr, r.stderr
            st = os.lstat(path)
            assert (stat.S_ISFIFO(st.st_mode) if name == "fifo" else
                    stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(*nodes[name])), \
                "%s was replaced: mode %o" % (name, st.st_mode)
        assert sorted(os.listdir(d)) == ["fifo", "null", "zero"], os.listdir(d)
    finally:
        shutil.rmtree(d)


def test_fifos_and_devices_never_block_or_swallow(ctx):
    """A FIFO with no reader as --probe file or --alert-log, /dev/full or a /proc file as
    --alert-log: a clear error in well under the timeout, never a hang."""
    d = tempfile.mkdtemp(prefix="loopwatch-fifo-")
    try:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        full = os.path.join(d, "full")
        os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
        for args in (["--probe", fifo + ":main"], ["--alert-log", fifo],
                     ["--alert-log", full], ["--alert-log", "/proc/self/status"]):
            t0 = time.time()
            r = run_cli(ctx, *args, "-d", 1, timeout=30)
            assert_one_line_status_2(r, args)
            assert time.time() - t0 < 10, "%s took %.1f s" % (args, time.time() - t0)
    finally:
        shutil.rmtree(d)


def test_prom_file_write_errors_say_why_and_stale_temp_files_go(ctx):
    """A full filesystem is "No space left on device", not "Input/output error"; the temp
    file of an instance killed mid-write (its pid gone) is removed at start, a live
    instance's is kept."""
    d = tempfile.mkdtemp(prefix="loopwatch-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], check=True)
    try:
        dead = 4194000
        while os.path.exists("/proc/%d" % dead):
            dead += 1
        stale = os.path.join(d, ".loopwatch.prom.%d.tmp" % dead)
        live = os.path.join(d, ".loopwatch.prom.1.tmp")
        for p in (stale, live):
            open(p, "w").close()
        # fill the filesystem: the metrics cannot be written
        with open(os.path.join(d, "filler"), "wb") as f:
            try:
                f.write(b"x" * (1 << 20))
            except OSError:
                pass
        r = run_cli(ctx, "--quiet", "--prom-file", os.path.join(d, "loopwatch.prom"),
                    "--prom-interval", 0.2, "-d", 1.5)
        assert "No space left on device" in r.stderr, r.stderr
        assert "Input/output error" not in r.stderr, r.stderr
        assert r.stderr.count("cannot write") == 1, r.stderr
        assert not os.path.exists(stale), os.listdir(d)
        assert os.path.exists(live), os.listdir(d)
    finally:
        subprocess.run(["umount", d])
        shutil.rmtree(d)


def hostile_copy(ctx, d):
    """stallwork with its `named` injector's symbol renamed to HOSTILE."""
    path = os.path.join(d, "stallwork")
    with open(ctx.workload("stallwork"), "rb") as f:
        image = f.read()
    assert image.count(PLACEHOLDER) >= 1
    with open(path, "wb") as f:
        f.write(image.replace(PLACEHOLDER, HOSTILE))
    os.chmod(path, 0o755)
    return path


def test_escape_laden_symbol_names_reach_no_output_raw(ctx):
    """A function named with an OSC title, BEL, CR LF + a forged "loopwatch: ALERT" line,
    a screen clear, a C1 CSI and a bidi override: every output (JSON, the alert log, text
    lines, stderr alerts and the summary) carries it made harmless, and no line is
    forged."""
    d = tempfile.mkdtemp(prefix="loopwatch-esc-")
    try:
        work = hostile_copy(ctx, d)
        alert_log = os.path.join(d, "alerts.log")
        out = tmpfile()
        pid, lines = run_traced(ctx, [work, out, "named", "2", "--go"], "--alert-log",
                                alert_log, "--alert-every", 0)
        load_truth(out)
        stalls = of_type(lines, "stall", pid=pid)
        assert len(stalls) >= 2, [(s["duration_ms"], s["top"]) for s in stalls]
        names = {f["func"] for s in stalls for st in s["stacks"] for f in st["frames"]}
        evil = [n for n in names if "forged" in n]
        assert evil, sorted(names)
        for n in evil:
            assert not unsafe_chars(n), repr(n)
            assert "\ufffd" not in n, repr(n)
        with open(alert_log, encoding="utf-8", errors="strict") as f:
            log = f.read()
        assert log.count("\n") >= 2 and not unsafe_chars(log), repr(log)
        assert all(l.startswith("loopwatch: ALERT stallwork[%d]" % pid)
                   for l in log.splitlines()), repr(log)

        out = tmpfile()
        pid, lines, stderr = run_traced(ctx, [work, out, "named", "2", "--go"],
                                        "--alert-every", 0, text=True, with_stderr=True)
        load_truth(out)
        text = "\n".join(lines)
        assert "forged" in text and "Summary:" in text, text
        assert not unsafe_chars(text), repr(text)
        assert not unsafe_chars(stderr), repr(stderr)
        alerts = [l for l in stderr.splitlines() if "ALERT" in l]
        assert len(alerts) >= 2 and all(l.startswith("loopwatch: ALERT stallwork[") for l in
                                        alerts), repr(stderr)
    finally:
        shutil.rmtree(d)


def test_one_thread_one_name_with_a_newline_and_c1_in_it(ctx):
    """A thread named "ev\\nil\\u009b1": /proc and the kernel's events give the same,
    sanitized name (not /proc's cut at the newline)."""
    script = ("import ctypes, os, select, sys, time\n"
              "ctypes.CDLL(None).prctl(15, b'ev\\nil\\xc2\\x9b1', 0, 0, 0)\n"
              "ep = select.epoll()\n"
              "print(os.getpid(), flush=True)\n"
              "sys.stdin.readline()\n"
              "for _ in range(30):\n"
              "    ep.poll(0.05)\n"
              "    time.sleep(0.02)\n")
    pid, lines = run_traced(ctx, ["/usr/bin/python3", "-c", script], "--threshold", 5)
    stalls = of_type(lines, "stall", pid=pid)
    rows = of_type(lines, "interval", pid=pid) + of_type(lines, "summary", pid=pid)
    assert stalls and rows, lines[-3:]
    names = {(l["comm"], l["thread"]) for l in stalls + rows}
    assert names == {("ev?il?1", "ev?il?1")}, names


def test_alert_exec_never_runs_a_program_from_the_working_directory(ctx):
    """--alert-exec true from a directory holding an executable ./true: the one in PATH
    runs, never ./true."""
    d = tempfile.mkdtemp(prefix="loopwatch-cwd-")
    try:
        marker = os.path.join(d, "planted-ran")
        write_script(os.path.join(d, "true"), "touch '%s'\n" % marker)
        cwd = os.getcwd()
        os.chdir(d)
        try:
            out = tmpfile()
            env_path = os.environ.get("PATH", "")
            os.environ["PATH"] = "/usr/bin:/bin:" + env_path
            try:
                pid, lines = run_traced(ctx, [ctx.workload("stallwork"), out, "cpu", "2",
                                              "--go"], "--alert-exec", "true",
                                        "--alert-every", 0)
            finally:
                os.environ["PATH"] = env_path
            load_truth(out)
        finally:
            os.chdir(cwd)
        # the two stalls' alerts (a lag alert of a second-long interval may come too)
        assert len([a for a in of_type(lines, "alert", pid=pid) if a["kind"] == "stall"]) == 2, \
            of_type(lines, "alert")
        time.sleep(0.5)
        assert not os.path.exists(marker), "./true ran as root"
    finally:
        shutil.rmtree(d)


def test_alert_programs_are_bounded(ctx):
    """--alert-every 0 and a program that takes 5 s: a stall every 40 ms starts at most 4
    of them, and the rest are counted."""
    d = tempfile.mkdtemp(prefix="loopwatch-fork-")
    try:
        starts = os.path.join(d, "starts")
        hook = write_script(os.path.join(d, "hook"), "echo $$ >> '%s'\nsleep 5\n" % starts)
        out = tmpfile()
        pid, lines, stderr = run_traced(ctx, [ctx.workload("stallwork"), out, "cpu", "20",
                                              "--go"], "--alert-exec", hook,
                                        "--alert-every", 0, with_stderr=True)
        load_truth(out)
        assert len(of_type(lines, "alert", pid=pid)) >= 15, of_type(lines, "alert")
        time.sleep(0.5)
        with open(starts) as f:
            n = len(f.read().split())
        assert 1 <= n <= 4, "%d programs started" % n
        assert "ran no program" in stderr, stderr
    finally:
        # the programs started, by the pids they wrote themselves
        if os.path.exists(starts):
            with open(starts) as f:
                for pid in f.read().split():
                    try:
                        os.kill(int(pid), 9)
                    except (ProcessLookupError, ValueError):
                        pass
        shutil.rmtree(d)


def test_exec_takes_the_new_programs_name_and_runtime(ctx):
    """A C loop that execs python3: the stalls after the exec carry the new name and
    Python frames (the runtime is detected again), not the old program's identity."""
    script = ("import os, select, sys, time\n"
              "ep = select.epoll()\n"
              "time.sleep(4.5)  # rescans (every 2 s) see the new program, on a loaded host too\n"
              "for _ in range(4):\n"
              "    ep.poll(0.02)\n"
              "    time.sleep(0.03)\n"
              "ep.poll(0)\n")
    pid, lines = run_traced(ctx, [ctx.workload("execwork"), "10", "/usr/bin/python3", "-c",
                                  script])
    stalls = of_type(lines, "stall", pid=pid)
    after = [s for s in stalls if any(c["name"] == "clock_nanosleep" for c in s["syscalls"])
             and s["duration_ms"] < 1000]
    assert len(after) >= 4, [(s["comm"], s["duration_ms"]) for s in stalls]
    assert all(s["comm"] == "python3" for s in after), [s["comm"] for s in after]
    pyframes = [f for s in after for st in s["stacks"] for f in st["frames"]
                if f["kind"] == "python"]
    assert pyframes, [st["frames"] for st in after[-1]["stacks"]]
    rows = of_type(lines, "summary", pid=pid)
    assert rows and all(r["comm"] == "python3" for r in rows), rows

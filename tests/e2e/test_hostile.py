"""Hostile input: device nodes, FIFOs, full disks, escape-laden names, programs planted in
the working directory. loopwatch must never harm the host nor pass a traced process's
bytes to a terminal or a log unsanitized."""
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import urllib.request

import craftelf
from lwtest import (REPO, Loopwatch, Workload, alert_lines, fds_of, free_port, load_truth,
                    multi_links, of_type, run_traced, tmpfile, write_script)

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


# every output written whole and renamed into place, and its file name in the temp dir
FILE_OUTPUTS = {"--report": "report.md", "--folded": "stacks.folded", "--trace": "trace.json",
                "--prom-file": "loopwatch.prom"}


def test_file_outputs_never_replace_a_device_fifo_socket_or_directory(ctx):
    """--report, --folded, --trace and --prom-file on a device node (private copies of
    /dev/null and /dev/zero), a FIFO, a socket or a directory: exit 2 at once with one
    line naming the flag and the path, the node untouched."""
    d = tempfile.mkdtemp(prefix="loopwatch-dev-")
    sock = socket.socket(socket.AF_UNIX)
    try:
        nodes = {"null": (1, 3), "zero": (1, 5)}
        for name, (major, minor) in nodes.items():
            os.mknod(os.path.join(d, name), 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.mkfifo(os.path.join(d, "fifo"))
        sock.bind(os.path.join(d, "sock"))
        os.mkdir(os.path.join(d, "dir"))
        kinds = {"null": stat.S_ISCHR, "zero": stat.S_ISCHR, "fifo": stat.S_ISFIFO,
                 "sock": stat.S_ISSOCK, "dir": stat.S_ISDIR}
        for flag in FILE_OUTPUTS:
            for name, is_kind in kinds.items():
                path = os.path.join(d, name)
                r = run_cli(ctx, flag, path, "-d", 1)
                assert_one_line_status_2(r, (flag, name))
                assert flag + " " + path in r.stderr, r.stderr
                assert ("is a directory" if name == "dir" else "not a regular file") in \
                    r.stderr, r.stderr
                st = os.lstat(path)
                assert is_kind(st.st_mode), "%s %s was replaced: mode %o" % (flag, name,
                                                                             st.st_mode)
                if name in nodes:
                    assert st.st_rdev == os.makedev(*nodes[name]), (flag, name)
        assert sorted(os.listdir(d)) == sorted(kinds), os.listdir(d)
    finally:
        sock.close()
        shutil.rmtree(d)


def test_squatters_at_the_temp_name_neither_hang_nor_are_followed(ctx):
    """A FIFO and a symlink (to a file of ours) planted at every output's temp name before
    loopwatch starts -- .NAME.PID.tmp, and NAME.PID.tmp as an older version named it: no
    hang, the link's target untouched, every output written."""
    d = tempfile.mkdtemp(prefix="loopwatch-squat-")
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("keep me\n")
    # sh's pid is loopwatch's after exec: the temp names are known before it runs
    args = " ".join("%s %s" % (flag, os.path.join(d, name)) for flag, name in
                    FILE_OUTPUTS.items())
    p = subprocess.Popen(["/bin/sh", "-c", "read go; exec %s --quiet -d 1 %s" %
                          (ctx.loopwatch, args)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for i, name in enumerate(FILE_OUTPUTS.values()):
            for tmp in (".%s.%d.tmp" % (name, p.pid), "%s.%d.tmp" % (name, p.pid)):
                if i % 2:
                    os.mkfifo(os.path.join(d, tmp))
                else:
                    os.symlink(victim, os.path.join(d, tmp))
        try:
            out, err = p.communicate("go\n", timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("loopwatch hung on a squatted temp name")
        assert p.returncode == 0, (p.returncode, err)
        with open(victim) as f:
            assert f.read() == "keep me\n"
        for name in FILE_OUTPUTS.values():
            st = os.lstat(os.path.join(d, name))
            # folded stacks may be empty: nothing stalled in one second
            assert stat.S_ISREG(st.st_mode) and (st.st_size > 0 or name == "stacks.folded"), \
                (name, st)
            assert not os.path.exists(os.path.join(d, ".%s.%d.tmp" % (name, p.pid))), name
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
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


EPOLL_LOOP = ("import os, select, sys, time\n"
              "ep = select.epoll()\n"
              "print(os.getpid(), flush=True)\n"
              "sys.stdin.readline()\n"
              "for _ in range(100):\n"
              "    ep.poll(0.02)\n"
              "    t = time.perf_counter() + 0.01\n"
              "    while time.perf_counter() < t:\n"
              "        pass\n")


def traced_into(ctx, stdout, *flags):
    """loopwatch -p on a Python epoll loop that stalls 10 ms per tick, stdout to the file
    object given: its exit status and stderr."""
    w = Workload(["/usr/bin/python3", "-c", EPOLL_LOOP])
    try:
        p = subprocess.Popen([ctx.loopwatch, "-p", str(w.pid), "-d", "30", "--threshold", "5"] +
                             [str(f) for f in flags], stdout=stdout, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True)
        # the first line on stderr says tracing runs
        first = p.stderr.readline()
        w.go()
        w.wait()
        err = first + p.stderr.read()
        p.wait(timeout=60)
        return p.returncode, err
    finally:
        w.kill()


def test_a_full_disk_or_dev_full_is_named_and_fails_the_run(ctx):
    """JSON lines to /dev/full (a private copy), and JSON lines, --report, --folded and
    --trace onto a full 64 KiB tmpfs: each failure one line naming the output and "No
    space left on device" (never "Input/output error"), and a non-zero exit."""
    d = tempfile.mkdtemp(prefix="loopwatch-full-")
    full = os.path.join(d, "full")
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    mnt = os.path.join(d, "mnt")
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], check=True)
    try:
        with open(full, "w") as out:
            status, err = traced_into(ctx, out, "--json")
        assert status != 0, err
        said = [l for l in err.splitlines() if "cannot write" in l]
        assert len(said) == 1 and "stdout: No space left on device" in said[0], err

        with open(os.path.join(mnt, "filler"), "wb") as f:
            try:
                f.write(b"x" * (1 << 20))
            except OSError:
                pass
        paths = {flag: os.path.join(mnt, name) for flag, name in FILE_OUTPUTS.items()
                 if flag != "--prom-file"}
        with open(os.path.join(mnt, "lines.json"), "w") as out:
            status, err = traced_into(ctx, out, "--json", *sum(paths.items(), ()))
        assert status != 0, err
        assert "Input/output error" not in err, err
        assert "cannot write stdout: No space left on device" in err, err
        for flag, path in paths.items():
            line = "cannot write %s %s: No space left on device" % (flag, path)
            assert err.count(line) == 1, (line, err)
        assert not [n for n in os.listdir(mnt) if n.endswith(".tmp")], os.listdir(mnt)
    finally:
        subprocess.run(["umount", mnt])
        shutil.rmtree(d)


def test_a_reader_gone_ends_the_run_within_a_second(ctx):
    """`loopwatch | head -1`: the pipe's reader goes away while loopwatch has nothing to
    write (one idle process watched, a 30 s interval). It ends as the reader closes,
    before its next write (it used to wait for it), naming the broken pipe, non-zero;
    text and JSON lines alike. poll(2) reports the hang-up at once (~10 ms here)."""
    sleeper = subprocess.Popen(["sleep", "120"])
    try:
        for fmt in ([], ["--json"]):
            r, w = os.pipe()
            p = subprocess.Popen([ctx.loopwatch, *fmt, "-p", str(sleeper.pid), "-i", "30",
                                  "-d", "60"], stdout=w, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, text=True)
            os.close(w)
            err = ""
            while "tracing" not in err:
                line = p.stderr.readline()
                assert line, (p.wait(), err)
                err += line
            time.sleep(0.5)
            assert p.poll() is None, err
            os.close(r)
            try:
                # its next write would come 30 s on: ending before that is the point
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                raise AssertionError("%s: still running 20 s after its reader went" % fmt)
            err += p.stderr.read()
            assert p.returncode != 0, (fmt, p.returncode, err)
            assert "cannot write stdout: Broken pipe" in err, (fmt, err)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_failed_write_mid_run_fails_the_run_though_the_last_one_worked(ctx):
    """--report's SIGUSR1 snapshot and --prom-file's interval writes onto a full 64 KiB
    tmpfs fail (said once each); space is freed and the writes at exit work: the files
    are there, and the exit status is still 1."""
    d = tempfile.mkdtemp(prefix="loopwatch-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], check=True)
    report, prom = os.path.join(d, "report.md"), os.path.join(d, "loopwatch.prom")
    p = None
    try:
        filler = os.path.join(d, "filler")
        with open(filler, "wb") as f:
            try:
                f.write(b"x" * (1 << 20))
            except OSError:
                pass
        # ended by SIGINT once space is back: a duration could end it before that
        p = subprocess.Popen([ctx.loopwatch, "--json", "-d", "600", "--report", report,
                              "--prom-file", prom, "--prom-interval", "0.2"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True)
        err = ""
        while "tracing" not in err:
            line = p.stderr.readline()
            assert line, err
            err += line
        p.send_signal(signal.SIGUSR1)
        while "cannot write --report" not in err or "cannot write --prom-file" not in err:
            line = p.stderr.readline()
            assert line, err
            err += line
        os.unlink(filler)
        p.send_signal(signal.SIGINT)
        err += p.stderr.read()
        p.wait(timeout=60)
        said = [l for l in err.splitlines() if "cannot write" in l]
        assert sorted(said) == sorted([
            "loopwatch: cannot write --report %s: No space left on device" % report,
            "loopwatch: cannot write --prom-file %s: No space left on device" % prom]), said
        for path in (report, prom):
            assert os.path.getsize(path) > 0, os.listdir(d)
        assert p.returncode == 1, (p.returncode, err)
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
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
        alerts = alert_lines(log)
        assert len(alerts) == log.count("\n") and all(
            a.startswith("stallwork[%d]" % pid) for _, a in alerts), repr(log)

        out = tmpfile()
        pid, lines, stderr = run_traced(ctx, [work, out, "named", "2", "--go"],
                                        "--alert-every", 0, text=True, with_stderr=True)
        load_truth(out)
        text = "\n".join(lines)
        assert "forged" in text and "Summary:" in text, text
        assert not unsafe_chars(text), repr(text)
        assert not unsafe_chars(stderr), repr(stderr)
        alerts = alert_lines(stderr)
        assert len(alerts) >= 2 and all(a.startswith("stallwork[") for _, a in alerts), \
            repr(stderr)
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


def test_a_process_named_with_a_newline_is_set_up_like_any_other(ctx):
    """A Python loop that names itself "a\\nb) 1 (" (prctl): /proc/PID/stat's comm is
    read to its last ')', so the process is set up -- its stalls' CPU stacks hold the
    Python function spin, as under any other name."""
    script = ("import ctypes, os, select, sys, time\n"
              "ctypes.CDLL(None).prctl(15, b'a\\nb) 1 (', 0, 0, 0)\n"
              "def spin():\n"
              "    t = time.perf_counter() + 0.02\n"
              "    while time.perf_counter() < t:\n"
              "        pass\n"
              "ep = select.epoll()\n"
              "print(os.getpid(), flush=True)\n"
              "sys.stdin.readline()\n"
              "for _ in range(40):\n"
              "    ep.poll(0.01)\n"
              "    spin()\n")
    pid, lines = run_traced(ctx, ["/usr/bin/python3", "-c", script], "--threshold", 5)
    stalls = of_type(lines, "stall", pid=pid)
    assert len(stalls) >= 10, len(stalls)
    assert {s["comm"] for s in stalls} == {"a?b) 1 ("}, {s["comm"] for s in stalls}
    py = [f for s in stalls for st in s["stacks"] for f in st["frames"]
          if f.get("kind") == "python"]
    assert any(f["func"] == "spin" for f in py), \
        "no Python frame in %d stalls: %s" % (len(stalls), [
            [f["func"] for f in st["frames"]] for s in stalls[:3] for st in s["stacks"]])


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


# A Python epoll loop of 30 ms iterations for SECONDS that runs SETUP (maps hostile files,
# writes a perf map…) after its first 2 s, once loopwatch follows it; the time it started
# written to TRUTH.
HOSTILE_LOOP = ("import json, mmap, os, select, sys, time\n"
                "def setup():\n"
                "{setup}\n"
                "    return locals()\n"
                "print(os.getpid(), flush=True)\n"
                "sys.stdin.readline()\n"
                "json.dump({{'start': time.time()}}, open({truth!r}, 'w'))\n"
                "ep = select.epoll()\n"
                "end, at, kept = time.time() + {seconds}, time.time() + 2, None\n"
                "while time.time() < end:\n"
                "    ep.poll(0.02)\n"
                "    t = time.perf_counter() + 0.01\n"
                "    while time.perf_counter() < t and not kept:\n"
                "        pass\n"
                "    if kept is None and time.time() >= at:\n"
                "        kept = setup()\n"
                "    if kept and 'spin' in kept:\n"
                "        kept['spin']()\n"
                "    if kept and kept.get('until') and time.time() >= kept['until']:\n"
                "        kept['undo']()\n"
                "        kept['until'] = None\n")

# maps each path given (as the loader maps code: readable and executable) and keeps it
MAP_EXEC = ("    maps = []\n"
            "    for path in {paths!r}:\n"
            "        fd = os.open(path, os.O_RDONLY)\n"
            "        maps.append(mmap.mmap(fd, 0, prot=mmap.PROT_READ | mmap.PROT_EXEC))\n")


def asan_built(ctx):
    """Whether loopwatch was built with AddressSanitizer (make check-sanitize)."""
    with open(ctx.loopwatch, "rb") as f:
        return b"__asan_init" in f.read()


def peak_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM for %d" % pid)


# the last hostile_run's loopwatch: (wall time, its threads' waits for a CPU so far in s)
CPU_WAITS = []
# /healthz answers within HEALTHZ_S of loopwatch's own time (less its waits for a CPU),
# asked with HEALTHZ_WAIT_S to see how long it did take
HEALTHZ_S, HEALTHZ_WAIT_S = 2.0, 10.0


def cpu_waits_s(pid):
    """The waits for a CPU of pid's threads so far, by their schedstat, in seconds (None:
    it is gone)."""
    total = 0
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def hostile_run(ctx, setup, seconds=8, interval=1.0, wrap=(), procs=1, flags=(), argvs=(),
                during=None, lw_wrap=()):
    """loopwatch --json -p on PROCS HOSTILE_LOOPs (or the workloads argvs, started with
    --go) with --listen, /healthz asked every 0.2 s from its start to the loops' end,
    during(loopwatch's pid) called every 0.5 s meanwhile: (JSON lines, stderr, peak RSS
    in KiB, /healthz failures, the first HOSTILE_LOOP's start time). loopwatch's waits for
    a CPU are read beside each /healthz into CPU_WAITS; an answer that took more than
    HEALTHZ_S less them is a failure, as are errors and no answer in HEALTHZ_WAIT_S."""
    truth = tmpfile()
    ws = [Workload(list(wrap) + ["/usr/bin/python3", "-c", HOSTILE_LOOP.format(
        setup=setup, truth=truth if not i else os.devnull, seconds=seconds)])
        for i in range(procs if not argvs else 0)] + [Workload(a) for a in argvs]
    w = ws[0]
    port = free_port()
    # loopwatch ends with the last of its -p processes: one that outlives the loops keeps
    # it serving until it is stopped, so that no /healthz asked as the loops end finds it
    # closing (a connection accepted, not answered: reset)
    anchor = subprocess.Popen(["sleep", str(seconds + 300)])
    lw = Loopwatch(ctx, "-p", ",".join(str(w.pid) for w in ws + [anchor]), "-i", interval,
                   "--listen", "127.0.0.1:%d" % port, *flags, wrap=lw_wrap)
    failures, took, done = [], [], threading.Event()
    CPU_WAITS.clear()

    def ask():
        while not done.is_set():
            t = time.time()
            waited = cpu_waits_s(lw.proc.pid)
            if waited is not None:
                CPU_WAITS.append((t, waited))
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port,
                                            timeout=HEALTHZ_WAIT_S) as r:
                    if r.status != 200:
                        failures.append((t, r.status))
                took.append((t, time.time() - t))
            except OSError as e:
                failures.append((t, str(e)))
            done.wait(0.2)

    def watch():
        while not done.is_set():
            during(lw.proc.pid)
            done.wait(0.5)
    try:
        lw.start()
        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        watcher = threading.Thread(target=watch, daemon=True)
        if during:
            watcher.start()
        for w in ws:
            w.go()
        for w in ws:
            w.wait(timeout=seconds + 60)
        done.set()
        asker.join()
        if during:
            watcher.join()
        rss_kb = peak_rss_kb(lw.proc.pid)
        lines = lw.stop(signal.SIGINT)
        failures += ["answered in %.2f s, %.2f s not waiting for a CPU" % (s, s - w)
                     for t, s in took for w in [waited_between(t, t + s)]
                     if s - w > HEALTHZ_S]
        return lines, lw.stderr, rss_kb, failures, \
            None if argvs else load_truth(truth)["start"]
    finally:
        done.set()
        for w in ws:
            w.kill()
        lw.kill()
        anchor.kill()
        anchor.wait()
        if os.path.exists(truth):
            os.unlink(truth)


def waited_between(a, b):
    """What the last hostile_run's loopwatch waited for a CPU from about a to b: from its
    last reading before a to its first after b (readings 0.2 s apart, or more where the
    reader was held up), so at most that much more."""
    before = [w for t, w in CPU_WAITS if t <= a]
    after = [w for t, w in CPU_WAITS if t >= b]
    return after[0] - before[-1] if before and after else 0.0


def assert_cadence(lines, start, interval=1.0):
    """Interval lines every interval, none more than twice that apart, the first within
    two intervals of the loop's start (it was set up, hostile file and all, in between).
    A gap is counted less the time loopwatch's threads waited for a CPU in it (their
    schedstat): on a loaded host other tasks' time is not loopwatch's slowness."""
    stamps = sorted({round(l["ts"], 3) for l in of_type(lines, "interval")})
    assert stamps, "no interval lines"
    gaps = [b - a for a, b in zip([start] + stamps, stamps)]
    own = [g - waited_between(a, b) for g, a, b in zip(gaps, [start] + stamps, stamps)]
    print("interval stamps at most %.2f s apart, %.2f s less loopwatch's waits for a CPU "
          "(%d of them)" % (max(gaps), max(own), len(gaps)))
    assert max(own) <= 2 * interval, "interval stamps %.2f s apart (the first %.2f s " \
        "after the loop started), less loopwatch's waits for a CPU: %s" % (
            max(gaps), gaps[0], ["%.2f" % g for g in own])
    return stamps


# what the open handles may hold inflated at once (proc/elf.c), and a margin for the rest
INFLATE_TOTAL_KB = 512 << 10


def test_decompression_bombs_stay_compressed(ctx):
    """Two ~1 MB files whose compressed sections inflate to 1 GiB each: one through the
    sections loopwatch reads itself (.eh_frame_hdr, .gnu_debuglink, .debug_frame, .plt),
    one through libdw, which inflates every .debug_* section of a file whose .debug_frame
    it evaluates. Both mapped by a loop: loopwatch's peak RSS stays under the inflation
    budget (512 MiB at once; it was ~1 GB per file), the refusal is said, and intervals
    and /healthz go on."""
    d = tempfile.mkdtemp(prefix="loopwatch-bomb-")
    mib = 1 << 20
    own, dw = os.path.join(d, "own.so"), os.path.join(d, "libdw.so")
    craftelf.write(own, [(n, b"", 255 * mib) for n in
                         (".eh_frame_hdr", ".gnu_debuglink", ".debug_frame", ".plt")])
    craftelf.write(dw, [(".debug_frame", craftelf.debug_frame(), None)] +
                   [(n, b"", 256 * mib) for n in
                    (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line")])
    try:
        lines, err, rss_kb, failures, start = hostile_run(
            ctx, MAP_EXEC.format(paths=[own, dw]))
    finally:
        shutil.rmtree(d)
    print("peak RSS %d MiB" % (rss_kb >> 10))
    assert rss_kb < INFLATE_TOTAL_KB, "peak RSS %d MiB" % (rss_kb >> 10)
    said = [l for l in err.splitlines() if "compressed sections claim" in l]
    assert len(said) == 1 and ("1020 MiB" in said[0] or "1024 MiB" in said[0]), err
    assert not failures, failures
    assert_cadence(lines, start)


def test_a_debuglink_to_a_huge_file_is_not_read_whole(ctx):
    """Five small files, no build-id, each with a .gnu_debuglink naming one sparse 2 GiB
    file beside them (an ELF header, then a hole): reading it for its CRC took ~7 s each
    on the collection path. It is over the CRC budget (256 MiB): not read; intervals and
    /healthz go on while a loop maps all five."""
    d = tempfile.mkdtemp(prefix="loopwatch-debuglink-")
    big = os.path.join(d, "big.debug")
    craftelf.write(big, [])
    os.truncate(big, 2 << 30)
    link = b"big.debug\0\0\0" + (12345).to_bytes(4, "little")
    paths = [os.path.join(d, "lib%d.so" % i) for i in range(5)]
    for path in paths:
        craftelf.write(path, [(".debug_frame", craftelf.debug_frame(), None),
                              (".gnu_debuglink", link, None)])
    try:
        lines, err, rss_kb, failures, start = hostile_run(ctx, MAP_EXEC.format(paths=paths))
    finally:
        shutil.rmtree(d)
    assert not failures, failures
    assert_cadence(lines, start)


def test_a_hostile_build_id_debug_file_in_the_process_namespace_stays_compressed(ctx):
    """A loop maps a small file that has only a build-id, in a mount namespace of its own
    whose /usr/lib/debug holds that build-id's debug file: a .debug_frame and four
    .debug_* sections that inflate to 256 MiB each (it took 1.97 GB and an 18 s freeze).
    The debug file is read through the process's root, within the inflation budget:
    loopwatch's peak RSS stays under it, and intervals and /healthz go on."""
    d = tempfile.mkdtemp(prefix="loopwatch-buildid-")
    build_id = bytes.fromhex("5a17c0ffee0ddba11ca75eedfacade0123456789")
    note = (".note.gnu.build-id", craftelf.build_id_note(build_id), None, craftelf.SHT_NOTE)
    lib = os.path.join(d, "lib.so")
    craftelf.write(lib, [note])
    debug = os.path.join(d, "debug", ".build-id", build_id[:1].hex())
    os.makedirs(debug)
    craftelf.write(os.path.join(debug, build_id[1:].hex() + ".debug"),
                   [note, (".debug_frame", craftelf.debug_frame(), None)] +
                   [(n, b"", 256 << 20) for n in
                    (".debug_info", ".debug_abbrev", ".debug_str", ".debug_line")])
    # only the loop's namespace sees it: loopwatch must read it through the process's root
    wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /usr/lib/debug && exec "$@"', os.path.join(d, "debug")]
    try:
        lines, err, rss_kb, failures, start = hostile_run(
            ctx, MAP_EXEC.format(paths=[lib]), wrap=wrap)
    finally:
        shutil.rmtree(d)
    print("peak RSS %d MiB" % (rss_kb >> 10))
    assert rss_kb < INFLATE_TOTAL_KB, "peak RSS %d MiB" % (rss_kb >> 10)
    said = [l for l in err.splitlines() if "compressed sections claim" in l]
    assert said, "the debug file's claim is not said: %s" % err
    assert not failures, failures
    assert_cadence(lines, start)


def test_an_eh_frame_hdr_that_lies_costs_its_budget_at_most(ctx):
    """A 0.6 MB file whose .eh_frame_hdr claims an FDE at each of 60,000 rows of its one
    FDE (it froze collection 70 s, each claimed start evaluating the FDE from its
    beginning), beside a good file, mapped by a loop: the lies are seen for what they
    are within the file's budget; intervals and /healthz go on."""
    d = tempfile.mkdtemp(prefix="loopwatch-ehlie-")
    lie = os.path.join(d, "lie.so")
    craftelf.write(lie, craftelf.eh_frame_lie(60000))
    try:
        lines, err, rss_kb, failures, start = hostile_run(ctx, MAP_EXEC.format(paths=[lie]))
    finally:
        shutil.rmtree(d)
    said = [l for l in err.splitlines() if "lie.so" in l and "over its budget" in l]
    assert len(said) == 1, err
    assert not failures, failures
    assert_cadence(lines, start)


def test_many_large_perf_maps_are_read_within_a_budget(ctx):
    """Two JIT loops (jitwork, half a CPU each at nice -10), each with a perf map of 3M
    lines before the one that names its code (90 MB each): the maps are read in steps within a budget (1 MiB a step,
    16 MiB and 0.2 s of CPU a second for all maps), sorted by merging each step in;
    intervals and /healthz go on while they are read."""
    trunc = tmpfile(".so")
    with open("/lib/x86_64-linux-gnu/libz.so.1", "rb") as src, open(trunc, "wb") as dst:
        dst.write(src.read(12000))
    outs = [tmpfile() for _ in range(2)]
    try:
        lines, err, rss_kb, failures, _ = hostile_run(
            ctx, None, flags=("--threshold", "5"),
            argvs=[["env", "JITWORK_MAP_LINES=3000000", ctx.workload("jitwork"), out, "450",
                    trunc, "--go"] for out in outs])
        start = min(r["start"] for out in outs for r in load_truth(out)["records"])
    finally:
        os.unlink(trunc)
        for out in outs:
            if os.path.exists(out):
                os.unlink(out)
    print("peak RSS %d MiB" % (rss_kb >> 10))
    # the maps' bound (2M entries of 24 bytes, merged through a copy, and 128 MiB of
    # names) above the ~70 MiB loopwatch takes anyway; ASan's quarantine keeps up to
    # 256 MiB of what was freed
    assert rss_kb < (320 + 256 * asan_built(ctx)) << 10, "peak RSS %d MiB" % (rss_kb >> 10)
    # the budget's timing is the optimized build's: under ASan (make check-sanitize, for
    # memory errors) reading 180 MB of maps may still hold /healthz past 2 s
    if not asan_built(ctx):
        assert not failures, failures
        assert_cadence(lines, start)


def symbol_bomb(path, nsyms):
    """A shared library whose spin(ms) burns CPU, beside nsyms local symbols (a label
    each, one instruction apart): a .symtab just under the per-file symbol bound."""
    src = path + ".s"
    with open(src, "w") as f:
        f.write(".text\n")
        f.write("".join("lw_sym_%d:\n\tnop\n" % i for i in range(nsyms)))
        f.write('.section .note.GNU-stack,"",@progbits\n')
    spin = path + ".c"
    with open(spin, "w") as f:
        f.write("#include <time.h>\n"
                "__attribute__((noinline)) void spin(int ms)\n{\n"
                "\tstruct timespec a, b;\n\tclock_gettime(CLOCK_MONOTONIC, &a);\n"
                "\tdo\n\t\tclock_gettime(CLOCK_MONOTONIC, &b);\n"
                "\twhile ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);\n"
                "}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", path, spin, src], check=True)
    os.unlink(src)
    os.unlink(spin)


def test_many_large_symbol_tables_are_loaded_within_a_budget(ctx):
    """Ten libraries of 1M symbols each (39 MB files; 0.3-0.5 s of CPU to load each
    table), each called for 30 ms of CPU by a loop: their tables are loaded a few a
    second (0.3 s of CPU a second for all files), the rest named "[symbols deferred]"
    until their turn; intervals and /healthz go on, and loopwatch's memory stays within
    the symbol cache's bound."""
    d = tempfile.mkdtemp(prefix="loopwatch-syms-")
    paths = [os.path.join(d, "libsym%d.so" % i) for i in range(10)]
    try:
        symbol_bomb(paths[0], 1000000)
        for p in paths[1:]:
            shutil.copy(paths[0], p)
        setup = ("    import ctypes\n"
                 "    libs = [ctypes.CDLL(p) for p in %r]\n"
                 "    def spin():\n"
                 "        for l in libs:\n"
                 "            l.spin(30)\n") % paths
        lines, err, rss_kb, failures, start = hostile_run(ctx, setup, seconds=12)
    finally:
        shutil.rmtree(d)
    names = {f["func"] for s in of_type(lines, "stall") for st in s["stacks"]
             for f in st["frames"] if f.get("module", "").startswith("libsym")}
    print("peak RSS %d MiB; frames in the libraries: %s" % (rss_kb >> 10, sorted(names)))
    assert "spin" in names, names
    # the budget's timing is the optimized build's: under ASan (make check-sanitize, for
    # memory errors) sorting one table may hold /healthz past 2 s
    if not asan_built(ctx):
        assert not failures, failures
        assert_cadence(lines, start)
    # the ~70 MiB loopwatch takes anyway, the cache's 256 MiB, and the one table being
    # loaded: its symbols (40 MiB for 1 Mi), names (32 MiB at most) and libelf's copy of
    # its sections (~40 MiB here); under ASan its quarantine keeps up to 256 MiB of what
    # was freed, and its shadow an eighth of the heap more
    bound = 440 + (256 + 440 // 8) * asan_built(ctx)
    assert rss_kb < bound << 10, "peak RSS %d MiB (bound %d)" % (rss_kb >> 10, bound)


def test_costly_call_frame_information_is_built_within_a_budget(ctx):
    """A 2.4 MB file of 100 FDEs of 8,000 rows each (libdw evaluates each row from its
    FDE's start: 3.2G steps, seconds of CPU) and ten files just under the budget of
    evaluation steps (4 FDEs of 3,900 rows: 30M steps, ~0.1 s each) mapped by a loop:
    the first is given up at the budget and said, the others built a few a second;
    intervals and /healthz go on."""
    d = tempfile.mkdtemp(prefix="loopwatch-cfi-")
    bomb = os.path.join(d, "bomb.so")
    craftelf.write(bomb, [(".debug_frame", craftelf.debug_frame_rows(100, 8000), None)])
    near = [os.path.join(d, "near%d.so" % i) for i in range(10)]
    for path in near:
        craftelf.write(path, [(".debug_frame", craftelf.debug_frame_rows(4, 3900), None)])
    try:
        lines, err, rss_kb, failures, start = hostile_run(
            ctx, MAP_EXEC.format(paths=[bomb] + near), seconds=10)
    finally:
        shutil.rmtree(d)
    assert not failures, failures
    assert_cadence(lines, start)
    said = [l for l in err.splitlines() if "call-frame information" in l]
    assert len(said) == 1 and bomb in said[0] and "evaluation steps" in said[0], err


def catalog_names():
    """Every function name of loopwatch's probe catalog (userspace/tracker/catalog.c)."""
    with open(os.path.join(REPO, "userspace", "tracker", "catalog.c")) as f:
        text = f.read()
    return sorted(set(re.findall(r'\{ "[^"]+",\s*"[^"]+",\s*"([^"]+)"', text)))


def catalog_libs(d, count, names):
    """count shared objects in d, each defining a function of every name (compiled here,
    one copy each: a file of its own to the kernel)."""
    src = os.path.join(d, "lib.c")
    with open(src, "w") as f:
        for i, name in enumerate(names):
            f.write("__attribute__((noinline)) int %s(void) { return %d; }\n" % (name, i))
    first = os.path.join(d, "lib0.so")
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", first, src], check=True)
    paths = [first] + [os.path.join(d, "lib%d.so" % i) for i in range(1, count)]
    for path in paths[1:]:
        shutil.copy(first, path)
    return paths


# dlopens each path given, keeps them
DLOPEN = ("    import ctypes\n"
          "    libs = [ctypes.CDLL(path) for path in {paths!r}]\n")


def uprobes_under(pid, d):
    """Uprobes loopwatch has attached in files under directory d."""
    return sum(n for path, n in multi_links(pid) if path.startswith(d + "/"))


def test_a_storm_of_uprobes_is_attached_off_the_collection_path(ctx):
    """A loop dlopens 20 shared objects, each defining every catalog function (64
    uprobes a file, 1,280 in all): they are attached by a thread of their own, a
    uprobe_multi link a file and way; intervals come every second and /healthz answers
    meanwhile (on the main loop, a link a function, this kept loopwatch from collecting
    for 107 s); every uprobe is attached."""
    d = tempfile.mkdtemp(prefix="loopwatch-storm-")
    names = catalog_names()
    paths = catalog_libs(d, 20, names)
    seen = []
    try:
        lines, err, _, failures, start = hostile_run(
            ctx, DLOPEN.format(paths=paths), seconds=10,
            during=lambda pid: seen.append(uprobes_under(pid, d)))
    finally:
        shutil.rmtree(d)
    print("uprobes over time: %s" % seen)
    assert not failures, failures
    assert_cadence(lines, start)
    assert max(seen) == 20 * 2 * len(names), seen


def test_uprobe_caps_leave_loopwatch_its_fds(ctx):
    """Under `ulimit -n 1024` a loop dlopens 300 shared objects of one catalog function
    each: their links may hold at most 512 fds (half of what loopwatch may open), so the
    last files go unprobed, said once; the fd table never fills (before: a link per
    function took two fds and filled it), the report, the metrics file and /healthz go
    on, and intervals come every second."""
    d = tempfile.mkdtemp(prefix="loopwatch-fds-")
    paths = catalog_libs(d, 300, ["deflate"])
    report, prom = os.path.join(d, "report.md"), os.path.join(d, "loopwatch.prom")
    seen = []
    try:
        lines, err, _, failures, start = hostile_run(
            ctx, DLOPEN.format(paths=paths), seconds=10,
            flags=("--report", report, "--prom-file", prom),
            lw_wrap=("prlimit", "--nofile=1024:1024", "--"),
            during=lambda pid: seen.append((fds_of(pid), uprobes_under(pid, d))))
        with open(report) as f:
            assert "loopwatch" in f.read()
        with open(prom) as f:
            assert "loopwatch_loop_iterations_total" in f.read()
    finally:
        shutil.rmtree(d)
    print("(fds, uprobes) over time: %s" % seen)
    said = [l for l in err.splitlines() if "uprobe links hold 512 fds, the most there may "
            "be" in l]
    assert len(said) == 1, err
    assert "Too many open files" not in err, err
    assert max(f for f, _ in seen) < 1024, seen
    # 2 fds a file: 256 files at most, 2 uprobes each
    assert 200 <= max(u for _, u in seen) // 2 <= 256, seen
    assert not failures, failures
    assert_cadence(lines, start)


def test_unmapping_many_probed_files_leaves_collection_alone(ctx):
    """A loop maps 200 shared objects of every catalog function (12,800 uprobes), then
    unmaps them all and dlopens one more: the 400 links are removed by a thread of their
    own (before, 2,048 links removed a grace period each kept the next attach waiting:
    51 s without collecting), the late file is probed meanwhile, intervals come every
    second and /healthz answers."""
    d = tempfile.mkdtemp(prefix="loopwatch-unmap-")
    names = catalog_names()
    paths = catalog_libs(d, 201, names)
    late = paths.pop()
    setup = ("    import ctypes\n"
             "    maps = []\n"
             "    for path in {paths!r}:\n"
             "        fd = os.open(path, os.O_RDONLY)\n"
             "        maps.append(mmap.mmap(fd, 0, prot=mmap.PROT_READ | mmap.PROT_EXEC))\n"
             "        os.close(fd)\n"
             "    until = time.time() + 6\n"
             "    def undo():\n"
             "        for m in maps:\n"
             "            m.close()\n"
             "        maps.clear()\n"
             "        maps.append(ctypes.CDLL({late!r}))\n").format(paths=paths, late=late)
    seen = []
    try:
        lines, err, _, failures, start = hostile_run(
            ctx, setup, seconds=16, during=lambda pid: seen.append(multi_links(pid)))
    finally:
        shutil.rmtree(d)
    counts = [sum(n for p, n in s if p.startswith(d + "/")) for s in seen]
    print("uprobes over time: %s" % counts)
    assert not failures, failures
    assert_cadence(lines, start)
    assert 200 * 2 * len(names) in counts, counts
    # the late file probed, the others removed after
    assert any(late in [p for p, _ in s] for s in seen), counts
    assert late in [p for p, _ in seen[-1]] and counts[-1] < max(counts), counts


AS_NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--")


def test_a_symlinked_perf_map_is_not_followed(ctx):
    """A JIT loop run as nobody (jitwork) swaps its perf map for a symlink to a root-only
    file that names its JIT code SECRET_…: loopwatch (root) does not read it; the JIT
    frames say the map was refused, and no output holds the secret."""
    d = tempfile.mkdtemp(prefix="loopwatch-perfmap-")
    os.chmod(d, 0o777)
    trunc, out, secret = (os.path.join(d, n) for n in ("trunc.so", "out.json", "secret"))
    with open("/lib/x86_64-linux-gnu/libz.so.1", "rb") as src, open(trunc, "wb") as dst:
        dst.write(src.read(12000))
    os.chmod(trunc, 0o644)
    w = Workload(list(AS_NOBODY) + [ctx.workload("jitwork"), out, "150", trunc, "--go"])
    lw = None
    try:
        with open("/proc/%d/maps" % w.pid) as f:
            jit = [int(l.split("-")[0], 16) for l in f if l.split()[1] == "rwxp"]
        assert jit, "no JIT mapping"
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, b"%x 1000 SECRET_ROOT_ONLY_NAME\n" % jit[0])
        os.close(fd)
        subprocess.run(list(AS_NOBODY) + ["ln", "-sf", secret, "/tmp/perf-%d.map" % w.pid],
                       check=True)
        lw = Loopwatch(ctx, "-p", w.pid, "--threshold", "5").start()
        w.go()
        w.wait()
        lines = lw.stop(signal.SIGINT)
    finally:
        w.kill()
        if lw:
            lw.kill()
        if os.path.lexists("/tmp/perf-%d.map" % w.pid):
            os.unlink("/tmp/perf-%d.map" % w.pid)
        shutil.rmtree(d)
    text = "\n".join(json.dumps(l) for l in lines) + "\n" + lw.stderr
    assert "SECRET" not in text, [l[:300] for l in text.splitlines() if "SECRET" in l][:3]
    refused = [f for l in of_type(lines, "stall") for st in l["stacks"] for f in st["frames"]
               if f["func"].startswith("[perf map refused")]
    assert refused, "no JIT frame says the map was refused"
    assert "a perf map is a symlink or not its process's own file" in lw.stderr, lw.stderr

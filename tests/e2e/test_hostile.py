"""Hostile input: device nodes, FIFOs, full disks, escape-laden names, programs planted in
the working directory. loopwatch must never harm the host nor pass a traced process's
bytes to a terminal or a log unsanitized."""
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time

from lwtest import Workload, alert_lines, load_truth, of_type, run_traced, tmpfile, write_script

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
        p = subprocess.Popen([ctx.loopwatch, "--json", "-d", "6", "--report", report,
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

"""Loop lag from the wait calls, against workloads that record their own ground truth."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lwtest import (APPS_DIR, Loopwatch, Workload, in_range, iteration_bounds, load_truth,
                    nearest_rank, of_type, run_traced, tmpfile)


def run_loopwork(ctx, profiles, iterations, extra=()):
    """Run loopwork under `loopwatch -p PID`; return (ground truth, loopwatch lines)."""
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("loopwork"), out, profiles, str(iterations),
                                "--go"] + list(extra))
    return load_truth(out), lines


def assert_matches_truth(summary, thread):
    """loopwatch's summary against the workload's own per-iteration busy times: each
    percentile lies between the workload's percentile of what it measured and of that
    plus what it saw a preemption at a wait's edge may add (on a loaded host)."""
    lo, hi = iteration_bounds(thread)
    n = len(lo)
    assert abs(summary["iterations"] - n) <= 0.01 * n, \
        "iterations %d vs %d" % (summary["iterations"], n)
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        want_lo, want_hi = nearest_rank(lo, q), nearest_rank(hi, q)
        got = summary["lag_ms"][key]
        assert in_range(got, want_lo, want_hi), "%s %.3f ms vs workload's %.3f..%.3f ms" % (
            key, got, want_lo, want_hi)
    assert in_range(summary["lag_ms"]["max"], max(lo), max(hi)), \
        "max %.3f vs %.3f..%.3f" % (summary["lag_ms"]["max"], max(lo), max(hi))
    assert in_range(summary["busy_ms"], sum(lo), sum(hi), rel=0.03, abs_=1.0), \
        "busy %.1f vs %.1f..%.1f" % (summary["busy_ms"], sum(lo), sum(hi))


def test_a_select_loop_and_a_select_client(ctx):
    """A Python loop on select(2) over two fds is a loop thread: its lag matches its own
    busy times and each of its 15 ms iterations is a stall. The thread beside it that
    selects on its one connected socket for every request is a client, no loop. Both
    are told apart by the select's sets, scanned in the kernel (bpf/wait.bpf.h)."""
    out = tmpfile()
    _, lines = run_traced(ctx, ["/usr/bin/python3", os.path.join(APPS_DIR, "py_select_loop.py"),
                                out])
    truth = load_truth(out)
    by_tid = {s["tid"]: s for s in of_type(lines, "summary", pid=truth["pid"])}
    assert set(by_tid) == {truth["tid"]}, "loop threads %s: the loop is %d, the client %d" % (
        sorted(by_tid), truth["tid"], truth["client_tid"])
    assert_matches_truth(by_tid[truth["tid"]], truth)
    lo, hi = iteration_bounds(truth)
    stalls = of_type(lines, "stall", tid=truth["tid"])
    assert sum(x >= 10 for x in lo) <= len(stalls) <= sum(x >= 10 for x in hi), \
        "%d stalls, the workload's own iterations of 10 ms or more: %d..%d" % (
            len(stalls), sum(x >= 10 for x in lo), sum(x >= 10 for x in hi))


def test_percentiles_match_workload_ground_truth(ctx):
    """Two loop threads with different profiles, reported apart, each matching its
    own recorded busy times; the spinner thread never waits and never shows up."""
    truth, lines = run_loopwork(ctx, "mixed,fixed3", 1500, ["--spinner"])
    summaries = of_type(lines, "summary", pid=truth["pid"])
    by_tid = {s["tid"]: s for s in summaries}
    want_tids = {t["tid"] for t in truth["threads"]}
    assert set(by_tid) == want_tids, "loop threads %s, want exactly %s" % (
        sorted(by_tid), sorted(want_tids))
    for t in truth["threads"]:
        s = by_tid[t["tid"]]
        assert s["thread"] == t["profile"], s
        assert s["comm"] == "loopwork", s
        assert_matches_truth(s, t)
    mixed, fixed = (by_tid[t["tid"]] for t in truth["threads"])
    assert fixed["lag_ms"]["p50"] > 5 * mixed["lag_ms"]["p50"], "profiles not told apart"
    intervals = of_type(lines, "interval", pid=truth["pid"])
    assert intervals, "no interval rows"
    for row in intervals:
        assert 0 <= row["utilization"] <= 1
        assert row["lag_ms"]["p50"] <= row["lag_ms"]["p99"] <= row["lag_ms"]["max"] + 1e-3
    assert sum(r["iterations"] for r in intervals if r["tid"] == mixed["tid"]) == \
        mixed["iterations"], "interval rows do not add up to the summary"


def test_exiting_and_late_processes(ctx):
    """A process that exits mid-run keeps its final numbers; one started after
    loopwatch is picked up without naming it."""
    lw = Loopwatch(ctx, "--comm", "loopwork", "-d", 8)
    outs = [tmpfile(), tmpfile()]
    lw.start()
    try:
        w1 = Workload([ctx.workload("loopwork"), outs[0], "mixed", "300"], go=False)
        w1.wait()
        time.sleep(1.5)
        w2 = Workload([ctx.workload("loopwork"), outs[1], "fixed3", "300"], go=False)
        w2.wait()
        lines = lw.stop()
    finally:
        lw.kill()
    for out, w in zip(outs, (w1, w2)):
        with open(out) as f:
            truth = json.load(f)
        os.unlink(out)
        tid = truth["threads"][0]["tid"]
        s = of_type(lines, "summary", pid=w.pid, tid=tid)
        assert len(s) == 1, "no summary for pid %d: %s" % (w.pid, lines[-5:])
        # the first wait may race with loopwatch for a process started after it
        assert_matches_truth(s[0], truth["threads"][0])


def test_sigint_prints_summary(ctx):
    out = tmpfile()
    w = Workload([ctx.workload("loopwork"), out, "mixed", "100000", "--go"])
    lw = Loopwatch(ctx, "-p", w.pid)
    try:
        lw.start()
        w.go()
        time.sleep(2.5)
        lines = lw.stop(signal.SIGINT)
    finally:
        w.kill()
        lw.kill()
        os.unlink(out)
    rows = of_type(lines, "interval", pid=w.pid)
    assert rows, "no interval rows before SIGINT"
    s = of_type(lines, "summary", pid=w.pid)
    # every iteration shown before, and the ones since the last interval
    assert len(s) == 1 and s[0]["iterations"] >= sum(r["iterations"] for r in rows) > 0, s


def run_cli(ctx, *args):
    return subprocess.run([ctx.loopwatch] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=30)


def test_bad_input_is_one_line_and_status_2(ctx):
    cases = [["--bogus"], ["-i", "abc"], ["-i", "0"], ["-d", "-1"], ["-p", "x"],
             ["-p", "0"], ["--comm", "a" * 40], ["extra"], ["-p"], ["--ring-buffer", "3"],
             ["--ring-buffer", "512"], ["-p", ","], ["-p", ""], ["--comm", "a,"],
             ["--comm", ""], ["--comm", ",node"], ["-d", "1", "12x"],
             ["-p", ",".join(str(i) for i in range(1, 66))],
             ["--comm", ",".join("n%d" % i for i in range(17))]]
    for args in cases:
        r = run_cli(ctx, *args)
        assert r.returncode == 2, "%s: status %d" % (args, r.returncode)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("loopwatch: "), \
            "%s: %r" % (args, r.stderr)
    # a pid that does not exist
    pid = 4194000
    while os.path.exists("/proc/%d" % pid):
        pid += 1
    r = run_cli(ctx, "-p", str(pid), "-d", "1")
    assert r.returncode == 2 and "no such process" in r.stderr, r
    r = run_cli(ctx, "--version")
    assert r.returncode == 0 and r.stdout.startswith("loopwatch "), r
    r = run_cli(ctx, "--help")
    assert r.returncode == 0 and "EXAMPLES" in r.stdout and "--duration" in r.stdout


def test_pid_and_comm_filters_combine(ctx):
    """-p and --comm name processes together: comma and blank lists, repeated flags, pids
    after the options (loopwatch -p $(pidof x)), a thread id for its process, and a
    process either flag names (a union, not an intersection)."""
    name = "lwF%d" % os.getpid()
    link_dir = tempfile.mkdtemp(prefix="loopwatch-comm-")
    named = os.path.join(link_dir, name)
    os.symlink(ctx.workload("loopwork"), named)
    outs = [tmpfile() for _ in range(3)]
    a, b, c = (Workload([argv0, out, "fixed3", "100000"], go=False)
               for argv0, out in zip((ctx.workload("loopwork"), named, ctx.workload("loopwork")),
                                     outs))
    try:
        # loopwork's loop runs in a thread of its own: its id is no process id
        tid = next(int(t) for t in os.listdir("/proc/%d/task" % a.pid) if int(t) != a.pid)
        cases = [
            (["-p", "%d,%d" % (a.pid, c.pid)], {a.pid, c.pid}),
            (["-p", "%d %d" % (a.pid, c.pid)], {a.pid, c.pid}),
            (["-p", str(a.pid), str(c.pid)], {a.pid, c.pid}),
            (["-p", str(tid)], {a.pid}),
            (["-p", str(a.pid), "--comm", name], {a.pid, b.pid}),
            (["--comm", "nosuchname", "--comm", name], {b.pid}),
        ]
        for args, want in cases:
            lw = Loopwatch(ctx, "-d", 2, "-i", 0.5, *args).start()
            lines = lw.stop()
            got = {l["pid"] for l in of_type(lines, "interval")} & {a.pid, b.pid, c.pid}
            assert got == want, (args, got, want)
            others = {l["pid"] for l in of_type(lines, "interval")} - want
            assert not others, (args, others)
    finally:
        for w in (a, b, c):
            w.kill()
        for out in outs:
            if os.path.exists(out):
                os.unlink(out)
        shutil.rmtree(link_dir, ignore_errors=True)


def test_cgroup_and_service_filters(ctx):
    """--cgroup (a v2 path as /proc/PID/cgroup shows it, or under the mount) and --service
    (a unit's name) keep the processes in that cgroup and under it, and with --comm the
    processes either names; an unknown cgroup is a one-line error and status 2."""
    from lwtest import CGROUP2, Cgroups
    name = "lwsvc%d" % os.getpid()
    top = "/lwtest-cg-%d" % os.getpid()
    outs = [tmpfile() for _ in range(2)]
    cg = Cgroups()
    a, b = (Workload([ctx.workload("loopwork"), out, "fixed3", "100000"], go=False)
            for out in outs)
    try:
        cg.move(a.pid, top + "/" + name + ".service")
        cases = [
            (["--cgroup", top], {a.pid}),
            (["--cgroup", CGROUP2 + top], {a.pid}),
            (["--service", name], {a.pid}),
            (["--service", name, "-p", str(b.pid)], {a.pid, b.pid}),
        ]
        for args, want in cases:
            lines = Loopwatch(ctx, "-d", 2, "-i", 0.5, *args).start().stop()
            got = {l["pid"] for l in of_type(lines, "interval")}
            assert got & {a.pid, b.pid} == want and not got - want, (args, got, want)
        for flag, arg in (("--cgroup", top + "/nope"), ("--service", name + "x")):
            r = subprocess.run([ctx.loopwatch, flag, arg, "-d", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, timeout=30)
            assert r.returncode == 2 and r.stderr.count("\n") == 1, (flag, r)
    finally:
        for w in (a, b):
            w.kill()
        cg.cleanup()
        for out in outs:
            if os.path.exists(out):
                os.unlink(out)


def test_missing_privileges_named(ctx):
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        ctx.loopwatch, "-d", "1"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode == 2, r
    assert "CAP_BPF" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_plain_text_when_piped(ctx):
    out = tmpfile()
    w = Workload([ctx.workload("loopwork"), out, "fixed3", "400", "--go"])
    try:
        p = subprocess.Popen([ctx.loopwatch, "-p", str(w.pid), "-d", "20"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        w.go()
        w.wait()
        text, _ = p.communicate(timeout=30)
    finally:
        w.kill()
        os.unlink(out)
    assert p.returncode == 0
    assert "P99ms" in text and "Summary:" in text, text
    summary = text[text.index("Summary:"):].split("\n\n")[0].splitlines()
    rows = [l for l in summary if l.split()[:1] == [str(w.pid)]]
    assert len(rows) == 1 and "fixed3" in rows[0], text


def test_a_hung_loop_stays_in_view(ctx):
    """A loop stuck in one iteration has no iteration to report: it must still show,
    with how long it has been busy, worst first."""
    pid, lines = run_traced(ctx, ["/usr/bin/python3", "-c",
                                  "import os, select, sys, time\n"
                                  "ep = select.epoll()\n"
                                  "print(os.getpid(), flush=True)\n"
                                  "sys.stdin.readline()\n"
                                  "for _ in range(20):\n"
                                  "    ep.poll(0.01)\n"
                                  "time.sleep(3)  # hung\n"
                                  "ep.poll(0)\n"], "-i", 0.5, duration=30)
    stuck = [r for r in of_type(lines, "interval", pid=pid) if r["iterations"] == 0]
    assert len(stuck) >= 3, [(r["iterations"], r["busy_now_ms"]) for r in
                             of_type(lines, "interval", pid=pid)]
    busy = [r["busy_now_ms"] for r in stuck]
    assert busy == sorted(busy) and busy[-1] >= 2000, busy
    s = of_type(lines, "summary", pid=pid)[0]
    assert 2950 <= s["lag_ms"]["max"] <= 3300, s


def stall_storm(ctx, text, *flags):
    """A Python loop making ~5k stalls a second (--threshold 0.02) while loopwatch is
    stopped for a second: its ring buffer (1 MiB, ~300 stalls) overflows. Loopwatch's
    JSON lines (text: its text lines)."""
    script = ("import os, select, sys, time\n"
              "ep = select.epoll()\n"
              "print(os.getpid(), flush=True)\n"
              "sys.stdin.readline()\n"
              "end = time.monotonic() + 2.5\n"
              "while time.monotonic() < end:\n"
              "    ep.poll(0)\n"
              "    t = time.perf_counter() + 0.0001\n"
              "    while time.perf_counter() < t:\n"
              "        pass\n")
    w = Workload(["/usr/bin/python3", "-c", script])
    lw = Loopwatch(ctx, "-p", w.pid, "-d", 30, "--threshold", 0.02, "--sample-hz", 100,
                   "--ring-buffer", 1, *flags, text=text)
    try:
        lw.start()
        w.go()
        time.sleep(0.3)
        os.kill(lw.proc.pid, signal.SIGSTOP)
        time.sleep(1.0)
        os.kill(lw.proc.pid, signal.SIGCONT)
        w.wait()
        return lw.stop()
    finally:
        w.kill()
        lw.kill()


def test_dropped_events_are_said_in_every_output(ctx):
    """Events the kernel could not send up (a full ring buffer) are counted in the JSON
    lines and the text, each interval and in the summary, and in the report's and the
    trace's totals: never silently lost."""
    report, trace = tmpfile(".md"), tmpfile(".json")
    try:
        lines = stall_storm(ctx, False, "--report", report, "--trace", trace)
        with open(report) as f:
            md = f.read()
        with open(trace) as f:
            other = json.load(f)["otherData"]
    finally:
        os.unlink(report)
        os.unlink(trace)
    dropped = of_type(lines, "dropped")
    # one line per interval that lost events, and the summary's total last
    assert len(dropped) >= 2 and all(d["events"] > 0 for d in dropped[:-1]), dropped
    assert dropped[-1]["total"] == sum(d["events"] for d in dropped), dropped
    assert "**Events lost: %d**" % dropped[-1]["total"] in md, md[:600]
    assert other["events_lost_ring_buffer"] == dropped[-1]["total"], other
    text = "\n".join(stall_storm(ctx, True))
    assert " DROPPED " in text and "Dropped: " in text, text[-2000:]


def test_a_process_with_no_loop_thread_is_said_once(ctx):
    """-p on a process that never waits in epoll/poll/select: said once on stderr, not
    left as "0 active loop threads" forever."""
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        r = subprocess.run([ctx.loopwatch, "-p", str(sleeper.pid), "-d", "4", "-i", "0.5"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=60)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert r.returncode == 0, r.stderr
    said = [l for l in r.stderr.splitlines() if "has no loop thread" in l]
    assert len(said) == 1 and "(sleep)" in said[0] and str(sleeper.pid) in said[0], r.stderr


def test_loopwatch_never_watches_itself_in_a_pid_namespace(ctx):
    """loopwatch in a pid namespace of its own (a container without hostPID), watching
    the whole machine: an epoll loop beside it is watched, loopwatch's own main loop
    (getpid() 1 there, another pid to the kernel) never is -- no row, stall or alert."""
    script = ("import os, select, sys, time\n"
              "ep = select.epoll()\n"
              "print(os.getpid(), flush=True)\n"
              "sys.stdin.readline()\n"
              "for _ in range(60):\n"
              "    ep.poll(0.02)\n"
              "    t = time.perf_counter() + 0.01\n"
              "    while time.perf_counter() < t:\n"
              "        pass\n")
    w = Workload(["/usr/bin/python3", "-c", script])
    lw = Loopwatch(ctx, "-d", 4, "-i", 0.25, "--threshold", 5, "--alert-ms", 0.5,
                   wrap=["unshare", "--pid", "--fork", "--mount-proc"])
    try:
        lw.start()
        with open("/proc/%d/task/%d/children" % (lw.proc.pid, lw.proc.pid)) as f:
            host_pid = int(f.read().split()[0])
        with open("/proc/%d/comm" % host_pid) as f:
            assert f.read().strip() == "loopwatch"
        w.go()
        w.wait()
        lines = lw.stop()
    finally:
        w.kill()
        lw.kill()
    assert of_type(lines, "interval", pid=w.pid), "the workload's loop was not watched"
    mine = [l for l in lines if l.get("pid") == host_pid]
    assert not mine, "loopwatch (pid %d) watched itself: %s" % (host_pid, mine[:3])
    assert "ALERT loopwatch[%d]" % host_pid not in lw.stderr, lw.stderr[-1000:]


def test_a_system_wide_screen_leads_with_the_stalling_server(ctx):
    """What a first system-wide run shows: an interactive shell (in tmux) running a 3 s
    command, a curl loop and a server whose handlers stall (tools/demo/slow_asyncio.py).
    The shell is no loop thread (it waits for its command: --exclude-comm's default
    shells), loopwatch is not in its own output, and of the processes started here the
    server leads the summary and every interval it is active in."""
    demo = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "demo",
                        "slow_asyncio.py")
    server = subprocess.Popen(["/usr/bin/python3", demo, "--seconds", "60"],
                              stdout=subprocess.PIPE, text=True)
    tmux = ["tmux", "-L", "lwtest-sw"]
    curl = None
    try:
        port = int(server.stdout.readline().rsplit(":", 1)[1])
        subprocess.run(tmux + ["new-session", "-d", "-s", "sh", "-x", "100", "-y", "30",
                               "bash", "--norc", "-i"], check=True)
        shell = int(subprocess.run(tmux + ["list-panes", "-t", "sh", "-F", "#{pane_pid}"],
                                   stdout=subprocess.PIPE, text=True).stdout)
        curl = subprocess.Popen(["bash", "-c", "while :; do curl -s -o /dev/null "
                                 "http://127.0.0.1:%d/fast; sleep 0.05; done" % port])
        lw = subprocess.Popen([ctx.loopwatch, "-d", "6", "-i", "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        subprocess.run(tmux + ["send-keys", "-t", "sh", "sleep 3", "Enter"], check=True)
        # a host full of other loops to set up can stretch a 6 s run (each is set up once)
        out, err = lw.communicate(timeout=240)
        assert lw.returncode == 0, err
    finally:
        subprocess.run(tmux + ["kill-server"], stderr=subprocess.DEVNULL)
        for p in (curl, server):
            if p:
                p.kill()
                p.wait()
    ours = {server.pid, shell, curl.pid}
    tables, rows = [], None
    for line in out.splitlines():
        f = line.split()
        if line.lstrip().startswith("PID ") and "ITER/s" in line:
            rows = []
            tables.append(rows)
        elif rows is not None and len(f) > 4 and f[0].isdigit() and f[1].isdigit():
            rows.append((int(f[0]), f[2]))
        elif not line.strip():
            rows = None
    assert len(tables) >= 2, out[-3000:]
    everything = [r for t in tables for r in t]
    # other loopwatch instances on a shared host are processes like any other
    assert not [r for r in everything if r[1] == "bash" or r[0] == lw.pid], everything
    assert "ALERT bash" not in err and "loopwatch[%d]" % lw.pid not in err, err[-2000:]
    led = 0
    for t in tables:
        mine = [pid for pid, comm in t if pid in ours or comm == "curl"]
        if server.pid in mine:
            assert mine[0] == server.pid, (t, out[-3000:])
            led += 1
    # the summary and at least one interval (a loaded host may stretch them)
    assert led >= 2, out[-3000:]

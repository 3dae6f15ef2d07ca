"""Alerts: over --alert-ms only, rate-limited per process, and a program run with the
facts in its environment, never through a shell."""
import os
import shutil
import stat
import subprocess
import tempfile

from lwtest import load_truth, of_type, run_traced, tmpfile


def stall_alerts(lines, pid):
    """The alerts of single slow iterations (a lag alert may come beside them: the
    arrival-weighted p99 of an interval of at least a second, tests/e2e/test_arrival.py)."""
    return [a for a in of_type(lines, "alert", pid=pid) if a["kind"] == "stall"]


def run(ctx, argv0, kinds, repeat, *flags):
    """stallwork (or a copy of it) under loopwatch with --threshold 1: (truth, lines, stderr)"""
    out = tmpfile()
    _, lines, stderr = run_traced(ctx, [argv0, out, kinds, str(repeat), "--go"],
                                  "--threshold", 1, *flags, with_stderr=True)
    return load_truth(out), lines, stderr


def test_stall_over_alert_ms_alerts_and_a_small_one_does_not(ctx):
    # small: 2 ms (a stall at --threshold 1, under --alert-ms 10); cpu: 25 ms
    truth, lines, stderr = run(ctx, ctx.workload("stallwork"), "small,cpu", 1,
                               "--alert-every", 0)
    stalls = of_type(lines, "stall", pid=truth["pid"])
    assert len(stalls) == 2, [s["duration_ms"] for s in stalls]
    alerts = stall_alerts(lines, truth["pid"])
    # the small one alerts too if the workload itself saw it take 10 ms (a loaded host)
    small = truth["records"][0]
    want = 1 + (small["busy_ns"] >= 10e6)
    assert len(alerts) == want and alerts[-1]["lag_ms"] >= 20, (alerts, small)
    # a spin that was mostly a spin (by its own measure) is named by its samples
    if truth["records"][1]["clean"]:
        assert "spin" in alerts[-1]["top"], alerts[-1]
    assert stderr.count(" stalled ") == want and "stallwork" in stderr, stderr


def test_rate_limit_suppresses_and_counts(ctx):
    truth, lines, stderr = run(ctx, ctx.workload("stallwork"), "cpu", 5, "--alert-every", 60)
    assert len(of_type(lines, "stall", pid=truth["pid"])) == 5
    alerts = stall_alerts(lines, truth["pid"])
    assert len(alerts) == 1, alerts
    assert "4 more stalls held back" in stderr, stderr


def test_alert_exec_gets_variables_and_no_shell_runs(ctx):
    d = tempfile.mkdtemp(prefix="loopwatch-alert-")
    try:
        hostile = os.path.join(d, "$(touch x);")
        shutil.copy(ctx.workload("stallwork"), hostile)
        env_out = os.path.join(d, "env.txt")
        hook = os.path.join(d, "hook")
        with open(hook, "w") as f:
            # a stall's alert; a lag alert (kind lag) may follow it
            f.write("#!/bin/sh\n[ \"$LOOPWATCH_KIND\" = stall ] && env > '%s'\n" % env_out)
        os.chmod(hook, stat.S_IRWXU)
        cwd = os.getcwd()
        os.chdir(d)
        try:
            truth, lines, _ = run(ctx, hostile, "cpu", 1, "--alert-exec", hook)
        finally:
            os.chdir(cwd)
        for _ in range(50):
            if os.path.exists(env_out) and os.path.getsize(env_out):
                break
            subprocess.run(["sleep", "0.1"])
        with open(env_out) as f:
            env = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
        assert env["LOOPWATCH_COMM"] == "$(touch x);", env
        assert env["LOOPWATCH_PID"] == str(truth["pid"]), env
        assert float(env["LOOPWATCH_LAG_MS"]) >= 20 and env["LOOPWATCH_CAUSE"], env
        assert "spin" in env["LOOPWATCH_TOP_FRAME"], env
        assert not os.path.exists(os.path.join(d, "x")), "a shell ran the process name"
    finally:
        shutil.rmtree(d)


def test_bad_alert_flags_fail_clearly(ctx):
    r = subprocess.run([ctx.loopwatch, "--alert-exec", "/nonexistent/hook", "-d", "1"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=30)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "alert-exec" in r.stderr, r


def test_alert_ms_below_the_stall_threshold_still_alerts(ctx):
    """--alert-ms 1 with the default --threshold 10: 2 ms iterations alert, yet are no
    stalls (they are below --threshold)."""
    out = tmpfile()
    pid, lines = run_traced(ctx, [ctx.workload("stallwork"), out, "small", "3", "--go"],
                            "--alert-ms", 1, "--alert-every", 0)
    truth = load_truth(out)
    # 2 ms each, or what the workload itself saw one take on a loaded host
    over = [r for r in truth["records"] if r["busy_ns"] >= 10e6]
    assert len(of_type(lines, "stall")) == len(over), (of_type(lines, "stall"), over)
    alerts = stall_alerts(lines, pid)
    assert len(alerts) == 3 and all(1.9 <= a["lag_ms"] for a in alerts), alerts

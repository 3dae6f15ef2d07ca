"""Prometheus textfile export: ground truth, atomic rewrites, promtool, node_exporter."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from lwtest import ALERT_LINE, Workload, arrival_excess, free_port, iteration_bounds, tmpfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# a kernel bucket is at most 1/32 of its lower bound wide: one that straddles an le
# bound counts above it, so values down to le * 31/32 may land above le
BUCKET_WIDTH = 1 / 32
# what loopwatch writes last: a file that ends with it was not cut short
LAST_SAMPLE = "loopwatch_loop_map_full_total"
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')


def parse_labels(text):
    """name="value",... with the exposition format's escapes (\\\\, \\", \\n)."""
    labels, i = {}, 0
    while i < len(text):
        m = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="').match(text, i)
        if not m:
            raise ValueError("bad label at %r" % text[i:])
        i, value = m.end(), []
        while text[i] != '"':
            if text[i] == "\\":
                value.append({"\\": "\\", '"': '"', "n": "\n"}[text[i + 1]])
                i += 2
            else:
                value.append(text[i])
                i += 1
        labels[m.group(1)] = "".join(value)
        i += 1
        if i < len(text):
            if text[i] != ",":
                raise ValueError("bad label separator at %r" % text[i:])
            i += 1
    return labels


def parse_exposition(text):
    """[(name, labels, value)]; raises on anything the text format does not allow."""
    if not text.endswith("\n"):
        raise ValueError("does not end with a newline")
    samples, typed = [], {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            typed[name] = kind
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("bad sample line %r" % line)
        name = m.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        if name not in typed and family not in typed:
            raise ValueError("sample %s before its TYPE" % name)
        samples.append((name, parse_labels(m.group(2) or ""), float(m.group(3))))
    return samples


def select(samples, name, **labels):
    return [(l, v) for n, l, v in samples if n == name and
            all(l.get(k) == v2 for k, v2 in labels.items())]


def one(samples, name, **labels):
    found = select(samples, name, **labels)
    assert len(found) == 1, "want one %s%s, found %s" % (name, labels, found)
    return found[0]


def read_metrics(path):
    with open(path) as f:
        return parse_exposition(f.read())


class PromLoopwatch:
    """loopwatch --quiet --prom-file DIR/loopwatch.prom in the background.

    start() returns once the first file is written: loopwatch writes it right
    after the BPF programs are attached."""

    def __init__(self, ctx, directory, *args, interval=0.5):
        self.path = os.path.join(directory, "loopwatch.prom")
        self.cmd = [ctx.loopwatch, "--quiet", "--prom-file", self.path,
                    "--prom-interval", str(interval)] + [str(a) for a in args]
        self.proc = None

    def start(self, timeout=15):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if os.path.exists(self.path):
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        raise AssertionError("loopwatch wrote no %s: %r (cmd %s)" % (
            self.path, self.proc.stderr.read(), self.cmd))

    def stop(self, sig=None, timeout=60):
        """Wait for exit (or send sig first); --quiet: nothing on stdout, and on stderr
        nothing but alerts (a daemon's log)."""
        if sig is not None:
            self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, "loopwatch exited %d: %s" % (
            self.proc.returncode, err[-2000:])
        chatter = [l for l in err.splitlines() if not ALERT_LINE.match(l)]
        assert out == "" and not chatter, "--quiet printed: %r %r" % (out[:500], chatter[:5])

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def ground_truth(path):
    with open(path) as f:
        truth = json.load(f)
    os.unlink(path)
    return truth


def assert_histogram_matches(samples, labels, threads, what):
    """One series of loopwatch_loop_iteration_seconds against the busy times the
    threads recorded: each between what it measured and that plus its waits' edges."""
    busy_ns, busy_hi_ns = [], []
    for t in threads:
        lo, hi = iteration_bounds(t)
        busy_ns += [b * 1e6 for b in lo]
        busy_hi_ns += [b * 1e6 for b in hi]
    n, tol = len(busy_ns), max(2, 0.005 * len(busy_ns))
    buckets = {l["le"]: v for l, v in select(samples, "loopwatch_loop_iteration_seconds_bucket",
                                             **labels)}
    les = sorted((float(le) for le in buckets if le != "+Inf"))
    assert les == [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], les
    prev = 0
    for le in les:
        got = buckets[("%g" % le)]
        assert got >= prev, "%s: le %g bucket %d below the previous %d" % (what, le, got, prev)
        prev = got
        # the kernel's iteration includes the syscall return and the loop's own
        # overhead, so it is a little above the workload's: never below it
        most = sum(1 for b in busy_ns if b <= le * 1e9)
        least = sum(1 for b in busy_hi_ns if b <= le * 1e9 * (1 - BUCKET_WIDTH) - 50000)
        assert least - tol <= got <= most + tol, \
            "%s: le %g has %d, the workload's durations allow %d..%d" % (what, le, got, least,
                                                                         most)
    inf = buckets["+Inf"]
    assert inf >= prev and abs(inf - n) <= 0.01 * n, "%s: +Inf %d vs %d" % (what, inf, n)
    count = one(samples, "loopwatch_loop_iteration_seconds_count", **labels)[1]
    iterations = one(samples, "loopwatch_loop_iterations_total", **labels)[1]
    assert count == inf and abs(iterations - n) <= 0.01 * n, \
        "%s: count %d, iterations_total %d vs %d" % (what, count, iterations, n)
    total_s, total_hi_s = sum(busy_ns) / 1e9, sum(busy_hi_ns) / 1e9
    sum_s = one(samples, "loopwatch_loop_iteration_seconds_sum", **labels)[1]
    assert total_s * 0.999 <= sum_s <= total_hi_s * 1.03, \
        "%s: _sum %.4f s vs the workload's %.4f s" % (what, sum_s, total_s)
    busy = one(samples, "loopwatch_loop_busy_seconds_total", **labels)[1]
    assert abs(busy - sum_s) < 1e-6, "%s: busy_seconds_total %f vs _sum %f" % (what, busy, sum_s)
    assert one(samples, "loopwatch_loop_idle_seconds_total", **labels)[1] > 0, what
    # a stall is an iteration at or over --threshold, 10 ms by default
    stalls = one(samples, "loopwatch_stalls_total", **labels)[1]
    least = sum(1 for b in busy_ns if b >= 10e6)
    most = sum(1 for b in busy_hi_ns if b >= 10e6 - 50000)
    assert least - tol <= stalls <= most + tol, \
        "%s: %d stalls, the workload's durations allow %d..%d" % (what, stalls, least, most)


def assert_arrival_matches(samples, labels, thread, what):
    """loopwatch_loop_arrival_lag_seconds of one thread against its own iterations: the
    time watched within 1 % of the workload's span, and at every le the share of time
    an arriving event waits more than le, 1 - bucket / count, within 2 % (or 0.2 % of
    the time) of sum max(0, d - le) / span over the workload's durations."""
    name = "loopwatch_loop_arrival_lag_seconds"
    lo, hi = iteration_bounds(thread)
    span = thread["span_ns"] / 1e9
    count = one(samples, name + "_count", **labels)[1]
    assert abs(count - span) <= 0.01 * span, "%s: count %.3f s vs span %.3f s" % (what,
                                                                                 count, span)
    buckets = {l["le"]: v for l, v in select(samples, name + "_bucket", **labels)}
    assert abs(buckets["+Inf"] - count) < 1e-6, (what, buckets)
    prev = 0
    for le in ["0", "0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
               "2.5"]:
        got = 1 - buckets[le] / count
        x = float(le) * 1e3
        want_lo, want_hi = arrival_excess(lo, x) / 1e3 / span, arrival_excess(hi, x) / 1e3 / span
        assert want_lo * 0.98 - 0.002 <= got <= want_hi * 1.02 + 0.002, \
            "%s: P(wait > %s s) %.5f, the workload's %.5f..%.5f" % (what, le, got, want_lo,
                                                                    want_hi)
        assert buckets[le] >= prev, (what, le, buckets)
        prev = buckets[le]
    stall_s = one(samples, "loopwatch_loop_stall_seconds_total", **labels)[1]
    least = sum(b for b in lo if b >= 10) / 1e3
    most = sum(b for b in hi if b >= 10 * (1 - BUCKET_WIDTH)) / 1e3
    assert least * 0.98 - 0.001 <= stall_s <= most * 1.02 + 0.001, \
        "%s: stall seconds %.4f vs %.4f..%.4f" % (what, stall_s, least, most)


def promtool_check_metrics(path):
    with open(path) as f:
        r = subprocess.run(["promtool", "check", "metrics"], stdin=f, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=30)
    assert r.returncode == 0, "promtool check metrics %s: %s" % (path, r.stdout)


def run_agg_and_per(ctx, w, interval=0.5, ready=None, watch=None):
    """The Workload w under two loopwatches -p PID, one summing per program and one with
    --prom-per-pid: ready(per_path) before go, watch(per_path) every 0.1 s until w exits.
    Both files pass promtool, have mode 0644 and no temp file beside them. Returns their
    samples: (aggregate, per pid)."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    agg = PromLoopwatch(ctx, os.path.join(tmp, "agg"), "-p", w.pid, interval=interval)
    per = PromLoopwatch(ctx, os.path.join(tmp, "per"), "-p", w.pid, "--prom-per-pid",
                        interval=interval)
    try:
        for lw in (agg, per):
            os.mkdir(os.path.dirname(lw.path))
            lw.start()
        if ready:
            ready(per.path)
        w.go()
        while watch and w.proc.poll() is None:
            watch(per.path)
            time.sleep(0.1)
        w.wait()
        for lw in (agg, per):
            lw.stop()
            promtool_check_metrics(lw.path)
            assert os.stat(lw.path).st_mode & 0o777 == 0o644, oct(os.stat(lw.path).st_mode)
            assert os.listdir(os.path.dirname(lw.path)) == ["loopwatch.prom"], \
                "temp files left: %s" % os.listdir(os.path.dirname(lw.path))
        return read_metrics(agg.path), read_metrics(per.path)
    finally:
        w.kill()
        agg.kill()
        per.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def test_prom_metrics_match_workload_ground_truth(ctx):
    """Two loop threads of one process: summed into one series by default, a series
    each with --prom-per-pid; iterations within 1 %, every le bucket consistent with
    the workload's recorded durations, and promtool check metrics passes."""
    out = tmpfile()
    w = Workload([ctx.workload("loopwork"), out, "mixed,fixed3", "1500", "--go"])
    agg, per = run_agg_and_per(ctx, w)
    truth = ground_truth(out)
    exe = os.path.realpath(ctx.workload("loopwork"))

    series = select(agg, "loopwatch_loop_iterations_total", comm="loopwork")
    assert len(series) == 1, "one series for both threads, got %s" % series
    labels = series[0][0]
    assert labels["exe"] == exe and "cgroup" in labels and "pid" not in labels, labels
    assert_histogram_matches(agg, labels, truth["threads"], "both threads")
    assert one(agg, "loopwatch_loop_threads_tracked")[1] == 0, "threads exited"
    assert one(agg, "loopwatch_build_info")[0]["version"]

    for t in truth["threads"]:
        labels = {"pid": str(truth["pid"]), "tid": str(t["tid"]), "comm": "loopwork"}
        assert_histogram_matches(per, labels, [t], "thread %s" % t["profile"])
        assert_arrival_matches(per, labels, t, "thread %s" % t["profile"])


def wait_for_metric(path, pred, timeout=15):
    """Poll the file until pred(samples) holds; every value seen must never go back."""
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        samples = read_metrics(path)
        if pred(samples):
            return samples
        last = samples
        time.sleep(0.1)
    raise AssertionError("condition never held; last file: %s" % last)


def test_prom_counters_keep_exited_processes(ctx):
    """Two processes of one program, one after the other: their series is one and
    its counters keep the first process's iterations after it is gone."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    # a name of its own: other runs of loopwork on the machine must not count here
    comm = "lwprom%06x" % (os.getpid() & 0xffffff)
    exe = os.path.join(tmp, "bin", comm)
    os.mkdir(os.path.dirname(exe))
    shutil.copy(ctx.workload("loopwork"), exe)
    lw = PromLoopwatch(ctx, tmp, "--comm", comm, "-d", 60, interval=0.2)
    total, w = 0, None
    try:
        lw.start()
        for n in (300, 200):
            out = tmpfile()
            w = Workload([exe, out, "mixed", str(n), "--go"])
            w.go()
            w.wait()
            total += len(ground_truth(out)["threads"][0]["busy_ns"])

            def done(samples, want=total):
                it = select(samples, "loopwatch_loop_iterations_total", comm=comm)
                return (it and it[0][1] >= 0.99 * want and
                        one(samples, "loopwatch_loop_threads_tracked")[1] == 0)
            samples = wait_for_metric(lw.path, done)
            it = one(samples, "loopwatch_loop_iterations_total", comm=comm, exe=exe)[1]
            assert abs(it - total) <= 0.01 * total, "iterations %d vs %d" % (it, total)
        lw.stop(signal.SIGTERM)
        samples = read_metrics(lw.path)
        it = one(samples, "loopwatch_loop_iterations_total", comm=comm, exe=exe)[1]
        assert abs(it - total) <= 0.01 * total, "after exit: iterations %d vs %d" % (it, total)
    finally:
        if w:
            w.kill()
        lw.kill()
        shutil.rmtree(tmp, ignore_errors=True)


# stallwork's kinds and the syscall each sleeps in: nanosleep(2) is clock_nanosleep
# in glibc, a contended pthread mutex waits in futex
SYSCALL_OF_KIND = {"sleep": "clock_nanosleep", "mutex": "futex"}
# 12 quiet 40 ms iterations (2 ms of CPU each, no syscall sleeps) first: the model
# reads exe and cgroup when it first sees a loop thread, and the injected calls
# alone are over in ~0.2 s, gone before loopwatch's next drain on a busy machine
PREROLL = "small,small,small,small,"


def blocked_ns_by_kind(truth):
    """The workload's own timing of its injected blocking calls, summed by kind."""
    total = {}
    for r in truth["records"]:
        if r["kind"] in SYSCALL_OF_KIND:
            total[r["kind"]] = total.get(r["kind"], 0) + r["call_ns"]
    return total


# what each blocking call surely slept, in seconds: a 30 ms nanosleep at least 29.5 ms; a
# wait on the mutex another thread holds for 20 ms, maybe nothing (kept off the CPU
# meanwhile, the waiter may find it free)
ASLEEP_AT_LEAST_S = {"sleep": 0.0295, "mutex": 0.0}


def assert_blocking_syscalls_match(samples, labels, truth, repeat, what):
    """Per syscall: one blocked call per injected one; blocked time at most what the
    workload timed around the calls (5 %: that also holds any wait for a CPU before the
    call slept, on a loaded host), at least what the calls surely slept."""
    for kind, call_ns in blocked_ns_by_kind(truth).items():
        name = SYSCALL_OF_KIND[kind]
        calls = one(samples, "loopwatch_blocking_syscalls_total", syscall=name, **labels)[1]
        secs = one(samples, "loopwatch_blocking_syscall_seconds_total", syscall=name,
                   **labels)[1]
        # a wait that never slept (the mutex found free, by the thread's own count of
        # voluntary switches) is no blocked call
        never = sum(1 for r in truth["records"] if r["kind"] == kind and not r["sleeps"])
        assert repeat - never <= calls <= repeat, \
            "%s: %d blocked %s calls, the workload made %d (%d never slept)" % (
                what, calls, name, repeat, never)
        assert repeat * ASLEEP_AT_LEAST_S[kind] <= secs <= 1.05 * call_ns / 1e9 + 0.0005, \
            "%s: %s blocked %.4f s, the workload timed %.4f s" % (what, name, secs,
                                                                 call_ns / 1e9)


def test_prom_blocking_syscalls_match_workload_ground_truth(ctx):
    """3 nanosleeps of 30 ms and 3 waits of 20 ms on a held mutex: 3 clock_nanosleep
    and 3 futex calls with the workload's timed durations within 5 %, labelled like the
    process's loop series (pid too, but no tid, with --prom-per-pid); promtool passes."""
    out = tmpfile()
    repeat = 3
    w = Workload([ctx.workload("stallwork"), out, PREROLL + "sleep,mutex", str(repeat),
                  "--go"])
    agg, per = run_agg_and_per(ctx, w, interval=0.1)
    truth = ground_truth(out)
    exe = os.path.realpath(ctx.workload("stallwork"))

    loop, _ = one(agg, "loopwatch_loop_iterations_total", comm="stallwork", exe=exe)
    assert "pid" not in loop, loop
    assert_blocking_syscalls_match(agg, loop, truth, repeat, "aggregate")
    for name, labels, _ in agg:
        if name.startswith("loopwatch_blocking_syscall"):
            assert set(labels) == set(loop) | {"syscall"}, \
                "%s: labels %s, the loop's %s" % (name, labels, loop)

    loop, _ = one(per, "loopwatch_loop_iterations_total", comm="stallwork", exe=exe,
                  pid=str(truth["pid"]), tid=str(truth["tid"]))
    process = {k: v for k, v in loop.items() if k != "tid"}
    assert_blocking_syscalls_match(per, process, truth, repeat, "per pid")
    assert not [l for n, l, _ in per
                if n.startswith("loopwatch_blocking_syscall") and "tid" in l], \
        "a tid label on a per-process aggregate"


def test_prom_blocking_syscalls_keep_exited_processes(ctx):
    """Two processes of one program, one after the other, each 3 nanosleeps: one
    clock_nanosleep series that reaches 6 and, in every file written meanwhile,
    never goes back."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    # a name of its own: other runs of stallwork on the machine must not count here
    comm = "lwsys%06x" % (os.getpid() & 0xffffff)
    exe = os.path.join(tmp, "bin", comm)
    os.mkdir(os.path.dirname(exe))
    shutil.copy(ctx.workload("stallwork"), exe)
    lw = PromLoopwatch(ctx, tmp, "--comm", comm, "-d", 60, interval=0.1)
    want_calls, want_ns, w = 0, 0, None
    seen = {"loopwatch_blocking_syscalls_total": 0,
            "loopwatch_blocking_syscall_seconds_total": 0}

    def values(samples):
        """(calls, seconds) of the one clock_nanosleep series; never below the last."""
        for name in seen:
            found = select(samples, name, syscall="clock_nanosleep", comm=comm)
            assert len(found) <= 1, "more than one series: %s" % found
            v = found[0][1] if found else 0
            assert v >= seen[name], "%s went back from %g to %g" % (name, seen[name], v)
            seen[name] = v
        return (seen["loopwatch_blocking_syscalls_total"],
                seen["loopwatch_blocking_syscall_seconds_total"])

    try:
        lw.start()
        for _ in range(2):
            out = tmpfile()
            w = Workload([exe, out, PREROLL + "sleep", "3", "--go"])
            w.go()
            w.wait()
            want_calls += 3
            want_ns += blocked_ns_by_kind(ground_truth(out))["sleep"]
            deadline = time.time() + 15
            while values(read_metrics(lw.path))[0] < want_calls and time.time() < deadline:
                time.sleep(0.05)
        lw.stop(signal.SIGTERM)
        samples = read_metrics(lw.path)
        calls, secs = values(samples)
        assert calls == want_calls, "%d calls vs %d" % (calls, want_calls)
        assert abs(secs - want_ns / 1e9) <= 0.05 * want_ns / 1e9, \
            "%.4f s vs %.4f s" % (secs, want_ns / 1e9)
        labels, _ = one(samples, "loopwatch_blocking_syscalls_total", syscall="clock_nanosleep",
                        comm=comm)
        assert labels["exe"] == exe, labels
        promtool_check_metrics(lw.path)
    finally:
        if w:
            w.kill()
        lw.kill()
        shutil.rmtree(tmp, ignore_errors=True)


APPS = os.path.join(REPO, "tests", "apps")
PYENV_311 = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")
PROBE_FAMILIES = ("loopwatch_probe_calls_total", "loopwatch_probe_seconds_total",
                  "loopwatch_probe_busy_seconds_total")


def wait_for_probes(path, pid, timeout=15):
    """Until loopwatch has attached its probes to the loop process pid: its loop series
    is in the file (the model knows the thread), then the next probe rescan (every 2 s,
    at the end of a 1 s interval) has had time to run."""
    wait_for_metric(path, lambda samples: select(samples, "loopwatch_loop_iterations_total",
                                                 pid=str(pid)), timeout)
    time.sleep(3.5)


def test_prom_probes_match_json_ground_truth(ctx):
    """pyenv python3.11 makes 10 json.dumps and 10 json.loads on its loop thread:
    per probe, calls exactly 10, seconds within 10 % of the interpreter's perf_counter
    sum, busy seconds at most the seconds and at most the loop's busy time; labelled
    like the process's loop series (pid, no tid, with --prom-per-pid); the counters
    never go back while the file is rewritten; promtool passes."""
    out = tmpfile()
    calls = 10
    w = Workload([PYENV_311, os.path.join(APPS, "probe_json.py"), out, str(calls)])
    seen = {}

    def never_back(path):
        samples = read_metrics(path)
        for name in PROBE_FAMILIES:
            for l, v in select(samples, name, pid=str(w.pid)):
                key = (name, l["probe"])
                assert v >= seen.get(key, 0), "%s %s went back from %g to %g" % (
                    name, l, seen[key], v)
                seen[key] = v

    agg, per = run_agg_and_per(ctx, w, interval=0.2,
                               ready=lambda path: wait_for_probes(path, w.pid),
                               watch=never_back)
    truth = ground_truth(out)
    exe = os.path.realpath(PYENV_311)
    assert seen, "no probe series while the workload ran"

    loop, _ = one(per, "loopwatch_loop_iterations_total", comm="python3.11", exe=exe,
                  pid=str(w.pid))
    process = {k: v for k, v in loop.items() if k != "tid"}
    loop_busy = one(per, "loopwatch_loop_busy_seconds_total", **loop)[1]
    for probe, key in (("json.dumps", "dumps_s"), ("json.loads", "loads_s")):
        want_s = sum(truth[key])
        n = one(per, "loopwatch_probe_calls_total", probe=probe, **process)[1]
        secs = one(per, "loopwatch_probe_seconds_total", probe=probe, **process)[1]
        busy = one(per, "loopwatch_probe_busy_seconds_total", probe=probe, **process)[1]
        assert n == calls, "%s: %d calls, the workload made %d" % (probe, n, calls)
        # less what the workload waited for a CPU around its calls, on a loaded host
        runq_s = truth[key.replace("_s", "_runq_s")]
        assert 0.9 * (want_s - runq_s) - 0.0005 <= secs <= 1.1 * want_s + 0.0005, \
            "%s: %.4f s, perf_counter timed %.4f s, %.4f s of it waiting for a CPU" % (
                probe, secs, want_s, runq_s)
        # every call ran between two of the loop's wait calls
        assert 0.9 * secs <= busy <= secs and busy <= loop_busy, \
            "%s: busy %.4f s, seconds %.4f s, loop busy %.4f s" % (probe, busy, secs,
                                                                  loop_busy)
    for name, labels, _ in per:
        if name in PROBE_FAMILIES and labels.get("pid") == str(w.pid):
            assert set(labels) == set(process) | {"probe"}, \
                "%s: labels %s, the loop's %s" % (name, labels, loop)

    # without pid labels: -p leaves no other loop process of that exe in the model
    loop, _ = one(agg, "loopwatch_loop_iterations_total", comm="python3.11", exe=exe)
    assert "pid" not in loop, loop
    for probe in ("json.dumps", "json.loads"):
        assert one(agg, "loopwatch_probe_calls_total", probe=probe, **loop)[1] == calls


HOSTILE = r'''
import ctypes, os, select, sys
ctypes.CDLL(None).prctl(15, b'a"b\\c\xffd\xc3\xa9', 0, 0, 0)
print("ready", flush=True)
sys.stdin.readline()
r, w = os.pipe()
for _ in range(200):
    select.select([r], [], [], 0.001)
'''


def test_prom_hostile_process_names_stay_valid(ctx):
    """A process named a"b\\c, an invalid UTF-8 byte and an é: the label is escaped,
    the bad byte replaced, and promtool accepts the file."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    py = subprocess.Popen(["/usr/bin/python3", "-c", HOSTILE], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    lw = PromLoopwatch(ctx, tmp, "-p", py.pid, "--prom-per-pid")
    try:
        assert py.stdout.readline().strip() == "ready"
        lw.start()
        py.stdin.write("go\n")
        py.stdin.flush()
        py.wait(timeout=30)
        lw.stop()
        samples = read_metrics(lw.path)
        _, it = one(samples, "loopwatch_loop_iterations_total", comm='a"b\\c?d\u00e9')
        assert it >= 190, "iterations %d" % it
        promtool_check_metrics(lw.path)
    finally:
        if py.poll() is None:
            py.kill()
            py.wait()
        lw.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def test_prom_reader_never_sees_a_partial_file(ctx):
    """A reader polling the file while it is rewritten every 20 ms sees only whole
    files: each parses, ends with a newline and has the build_info and the last
    family; no temp file ever matches *.prom."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    out = tmpfile()
    # six threads with pid/tid labels: a file of several pages, so a torn write shows
    w = Workload([ctx.workload("loopwork"), out, "mixed,mixed,mixed,mixed,fixed3,fixed3", "500",
                  "--go"])
    lw = PromLoopwatch(ctx, tmp, "-p", w.pid, "--prom-per-pid", interval=0.02)
    # the filesystem reuses inode numbers: versions are told apart by their content
    reads, versions, biggest = 0, set(), 0
    try:
        lw.start()
        w.go()
        deadline = time.time() + 60
        while w.proc.poll() is None and time.time() < deadline:
            with open(lw.path) as f:
                text = f.read()
            reads += 1
            versions.add(hash(text))
            biggest = max(biggest, len(text))
            assert "\nloopwatch_build_info{" in text, "read %d: no build_info: %r" % (
                reads, text[-300:])
            assert text.endswith("\n") and \
                text.splitlines()[-1].startswith(LAST_SAMPLE + " "), \
                "read %d: cut short: %r" % (reads, text[-300:])
            parse_exposition(text)
            stray = [f for f in os.listdir(tmp) if f.endswith(".prom") and f != "loopwatch.prom"]
            assert not stray, stray
        w.wait()
        lw.stop()
        os.unlink(out)
        assert reads >= 200 and len(versions) >= 50, \
            "only %d reads of %d versions of the file" % (reads, len(versions))
        assert biggest > 8192, "the file stayed small (%d bytes)" % biggest
    finally:
        w.kill()
        lw.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def scrape(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return parse_exposition(r.read().decode())


def node_exporter_start(directory, timeout=15):
    """Debian's prometheus-node-exporter on loopback with only the textfile collector."""
    for _ in range(3):
        port = free_port()
        proc = subprocess.Popen(["prometheus-node-exporter",
                                 "--web.listen-address=127.0.0.1:%d" % port,
                                 "--collector.disable-defaults", "--collector.textfile",
                                 "--collector.textfile.directory=" + directory,
                                 "--web.disable-exporter-metrics"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        url = "http://127.0.0.1:%d/metrics" % port
        deadline = time.time() + timeout
        while time.time() < deadline and proc.poll() is None:
            try:
                scrape(url, timeout=1)
                return proc, url
            except OSError:
                time.sleep(0.1)
        node_exporter_stop(proc)
    raise AssertionError("prometheus-node-exporter did not start: %s" % proc.stderr.read())


def node_exporter_stop(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_prom_node_exporter_serves_loopwatch_series(ctx):
    """node_exporter's textfile collector on loopwatch's directory serves its series
    over HTTP, while loopwatch runs and after: iterations as the workload counted."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    os.chmod(tmp, 0o755)
    out = tmpfile()
    ne, w = None, None
    lw = None
    try:
        ne, url = node_exporter_start(tmp)
        w = Workload([ctx.workload("loopwork"), out, "mixed", "500", "--go"])
        lw = PromLoopwatch(ctx, tmp, "-p", w.pid, interval=0.2)
        lw.start()
        samples = scrape(url)
        assert one(samples, "node_textfile_scrape_error")[1] == 0, samples
        assert select(samples, "loopwatch_build_info"), "no loopwatch series: %s" % samples
        w.go()
        w.wait()
        lw.stop()
        n = len(ground_truth(out)["threads"][0]["busy_ns"])
        samples = scrape(url)
        assert one(samples, "node_textfile_scrape_error")[1] == 0
        labels, it = one(samples, "loopwatch_loop_iterations_total", comm="loopwork")
        assert abs(it - n) <= 0.01 * n, "scraped iterations %d vs %d" % (it, n)
        assert one(samples, "loopwatch_loop_iteration_seconds_bucket", le="+Inf",
                   comm="loopwork")[1] == one(read_metrics(lw.path),
                                              "loopwatch_loop_iteration_seconds_bucket",
                                              le="+Inf", comm="loopwork")[1]
        assert labels["exe"].endswith("/loopwork"), labels
    finally:
        if ne:
            node_exporter_stop(ne)
        if w:
            w.kill()
        if lw:
            lw.kill()
        shutil.rmtree(tmp, ignore_errors=True)


def run_fast(ctx, *args):
    return subprocess.run([ctx.loopwatch] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=20)


def test_prom_and_service_flags_fail_clearly(ctx):
    """A --prom-file directory that cannot take the file, and every bad value of the
    new flags: one line on stderr, exit status 2, before any tracing starts."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-prom-")
    try:
        bad = [
            ["--prom-file", "/nonexistent-loopwatch-dir/sub/loopwatch.prom"],
            ["--prom-file", "/etc/passwd/loopwatch.prom"],
            ["--prom-file", tmp],
            ["--prom-file", tmp + "/"],
            ["--prom-file", tmp + "/x.prom", "--prom-interval", "0"],
            ["--prom-file", tmp + "/x.prom", "--prom-interval", "soon"],
            ["--prom-per-pid"],
            ["--threshold", "-1"],
            ["--threshold", "10ms"],
            ["--block-threshold", ""],
            ["--sample-hz", "0"],
            ["--sample-hz", "1.5"],
            ["--alert-ms", "x"],
            ["--alert-every", "-1"],
            ["--alert-log", tmp + "/"],
            ["--alert-exec", "/nonexistent-loopwatch-dir/notify"],
            ["--alert-exec", "no-such-loopwatch-program"],
            ["--alert-exec", tmp],
            ["--probe", "nocolon"],
            ["--probe", ":malloc"],
            ["--probe", "libc.so.6:"],
            ["--probe", "libc.so.6:malloc="],
            ["--probe-threshold", "0"],
            sum((["--probe", "libc.so.6:f%d" % i] for i in range(33)), []),
            ["--listen", "9977"],
            ["--listen", ":0"],
            ["--listen", "127.0.0.1:65536"],
            ["--listen", "[::1:9977"],
            ["--prom-stale", "0"],
            ["--prom-stale", "forever"],
            ["--prom-max-series", "-1"],
            ["--prom-max-series", "1e3"],
            ["--prom-min-iterations", "x"],
            ["--kubelet-logs", ""],
        ]
        for args in bad:
            r = run_fast(ctx, *args)
            assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, \
                "%s: exit %d, stderr %r" % (args, r.returncode, r.stderr)
            assert "tracing" not in r.stderr, args
        r = run_fast(ctx, "--prom-file", "/nonexistent-loopwatch-dir/sub/loopwatch.prom")
        assert "/nonexistent-loopwatch-dir/sub" in r.stderr, r.stderr
        assert not os.listdir(tmp), os.listdir(tmp)

        # good values are taken (--version exits once everything before it parsed)
        r = run_fast(ctx, "--quiet", "--prom-file", tmp + "/x.prom", "--prom-interval", "0.05",
                     "--prom-per-pid", "--listen", "127.0.0.1:9977", "--prom-stale", "30",
                     "--prom-max-series", "500", "--prom-min-iterations", "0",
                     "--kubelet-logs", "/host/var/log", "--threshold", "20", "--block-threshold", "0.5",
                     "--sample-hz", "99", "--alert-ms", "15", "--alert-log", tmp + "/alerts",
                     "--alert-exec", "true", "--alert-every", "0", "--probe",
                     "libc.so.6:malloc=alloc", "--no-builtin-probes", "--probe-threshold", "2",
                     "--list-probes", "--version")
        assert r.returncode == 0 and r.stdout.startswith("loopwatch "), r
        r = run_fast(ctx, "--help")
        for flag in ("--quiet", "--prom-file", "--prom-interval", "--prom-per-pid", "--listen",
                     "--prom-stale", "--prom-max-series", "--prom-min-iterations",
                     "--kubelet-logs",
                     "--threshold", "--block-threshold", "--sample-hz", "--alert-ms",
                     "--alert-log", "--alert-exec", "--alert-every", "--probe",
                     "--no-builtin-probes", "--list-probes"):
            assert flag + " " in r.stdout or flag + "\n" in r.stdout, "--help lacks " + flag
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit("run through tests/run.py: python3 tests/run.py --build build test_prom")

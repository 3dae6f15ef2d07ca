"""Where the loop's time went: per-function attribution, folded stacks, the timeline and
the diagnosis report, against a workload whose culprits share iterations and time each
of their own calls; and a hung loop reported while it hangs."""
import json
import os
import re
import subprocess
import time

from lwtest import Loopwatch, Workload, alert_lines, load_truth, of_type, run_traced, tmpfile

HERE = os.path.dirname(os.path.abspath(__file__))
CULPRITS = ("render_page", "query_backend", "parse_request", "crunch_numbers", "backoff_sleep")
_run = {}


def culprits_run(ctx):
    """One traced run of the culprits workload with every output on, shared by the tests
    of this file: (truth, JSON lines, folded text, trace path, report text)."""
    if "run" in _run:
        return _run["run"]
    truth_path, folded, trace, report = tmpfile(), tmpfile(".folded"), tmpfile(), tmpfile(".md")
    _, lines = run_traced(ctx, [ctx.workload("culprits"), truth_path, "48", "--go"],
                          "--folded", folded, "--trace", trace, "--report", report)
    with open(folded) as f:
        folded_text = f.read()
    with open(report) as f:
        report_text = f.read()
    os.unlink(folded)
    os.unlink(report)
    _run["run"] = (load_truth(truth_path), lines, folded_text, trace, report_text)
    return _run["run"]


def truth_by_function(truth):
    """ms each culprit spent in its own calls, as the workload timed them"""
    ms = {}
    for it in truth["iterations"]:
        for c in it["calls"]:
            ms[c["func"]] = ms.get(c["func"], 0) + c["ns"] / 1e6
    return ms


def samples_by_culprit(lines):
    """CPU samples in the stalls' stacks by the culprit they name, and by their
    leaf where that is not the culprit (a syscall's kernel path): what a failed
    attribution was made of"""
    n = {}
    for s in of_type(lines, "stall"):
        for st in s["stacks"]:
            funcs = [f["func"] for f in st["frames"] if f["kind"] != "kernel"]
            if st["cause"] != "cpu" or not funcs:
                continue
            who = next((f for f in funcs if f in CULPRITS), "-")
            key = who if funcs[0] == who else "%s<%s" % (funcs[0], who)
            n[key] = n.get(key, 0) + st["samples"]
    return n


def test_attributed_self_time_per_function_matches_the_workloads_own(ctx):
    truth, lines, _, _, _ = culprits_run(ctx)
    want = truth_by_function(truth)
    funcs = {f["func"]: f for f in of_type(lines, "function_summary", pid=truth["pid"])}
    got = {name: sum(funcs[name]["self_ms"].values()) for name in CULPRITS if name in funcs}
    assert set(got) == set(CULPRITS), (sorted(funcs), got)
    for name in CULPRITS:
        assert abs(got[name] - want[name]) <= 0.10 * want[name], \
            "%s: attributed %.1f ms, the workload timed %.1f ms (all: %s vs %s; by cause: %s;" \
            " CPU samples by culprit: %s)" % (
                name, got[name], want[name], got, want,
                {n: funcs[n]["self_ms"] for n in CULPRITS}, samples_by_culprit(lines))
    # each by its own cause: CPU burners on CPU or waiting for it, blockers blocked
    assert funcs["query_backend"]["self_ms"]["blocked"] >= 0.6 * got["query_backend"], funcs
    assert funcs["query_backend"]["via"] == "read", funcs["query_backend"]
    assert funcs["backoff_sleep"]["via"] == "clock_nanosleep", funcs["backoff_sleep"]
    for name in ("render_page", "parse_request"):
        assert funcs[name]["self_ms"]["blocked"] < 0.05 * got[name], funcs[name]
    assert funcs["crunch_numbers"]["self_ms"]["runq"] >= 0.5 * got["crunch_numbers"], \
        funcs["crunch_numbers"]
    # inclusive: iteration__run holds every culprit's time
    run = funcs["iteration__run"]
    assert sum(run["incl_ms"].values()) >= 0.95 * sum(got.values()), run


def parse_folded(text):
    stacks = []
    for line in text.splitlines():
        m = re.match(r"^(.+) (\d+)$", line)
        assert m, "not a folded line: %r" % line
        stacks.append((m.group(1).split(";"), int(m.group(2))))
    return stacks


def test_folded_stacks_add_up_to_the_stall_time_they_cover(ctx):
    truth, lines, folded, _, _ = culprits_run(ctx)
    stacks = parse_folded(folded)
    assert stacks, "empty folded file"
    assert all(frames[0] in ("cpu", "blocked", "runq") for frames, _ in stacks), \
        {frames[0] for frames, _ in stacks}
    assert all(frames[1] == "culprits-%d" % truth["pid"] for frames, _ in stacks)
    total_ms = sum(us for _, us in stacks) / 1000
    stalls_ms = sum(s["duration_ms"] for s in of_type(lines, "stall", pid=truth["pid"]))
    busy_ms = sum((it["end_ns"] - it["start_ns"]) / 1e6 for it in truth["iterations"])
    assert abs(total_ms - stalls_ms) <= 0.05 * stalls_ms, (total_ms, stalls_ms)
    assert abs(total_ms - busy_ms) <= 0.05 * busy_ms, (total_ms, busy_ms)
    for name in CULPRITS:
        mine = sum(us for frames, us in stacks if name in frames) / 1000
        assert mine > 0, "%s not in the folded stacks" % name
    # CPU and blocked time side by side under their own roots
    assert any(f[0] == "blocked" and "query_backend" in f for f, _ in stacks)
    assert any(f[0] == "cpu" and f[-1] == "render_page" for f, _ in stacks)


def test_trace_loads_and_holds_each_stall_at_its_time_and_duration(ctx):
    truth, _, _, trace, _ = culprits_run(ctx)
    r = subprocess.run(["node", os.path.join(HERE, "tracecheck.js"), trace,
                        os.path.join(ctx.build, "node", "node_modules")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    model = json.loads(r.stdout)
    threads = [t for t in model["threads"] if t["tid"] == truth["tid"]]
    assert len(threads) == 1 and threads[0]["name"] == "culprits %d" % truth["tid"], threads
    slices = threads[0]["slices"]
    stalls = [s for s in slices if s["cat"] == "stall"]
    to_us = lambda ns: (ns / 1e9 + truth["mono_to_wall"]) * 1e6
    for it in truth["iterations"]:
        start, dur = to_us(it["start_ns"]), (it["end_ns"] - it["start_ns"]) / 1e3
        near = [s for s in stalls if abs(s["start"] - start) <= 2000]
        assert len(near) == 1, "iteration at %.0f: %d slices near" % (start, len(near))
        got = near[0]["end"] - near[0]["start"]
        assert abs(got - dur) <= max(0.05 * dur, 500), (got, dur)
        assert {"oncpu_ms", "blocked_ms", "runq_ms", "stacks"} <= set(near[0]["args"])
    assert len(stalls) == len(truth["iterations"]), (len(stalls), len(truth["iterations"]))
    calls = [s for s in slices if s["cat"] == "blocking_call"]
    assert calls and all(s["parent"] == "stall" for s in calls), calls[:3]
    assert {s["name"] for s in calls} >= {"read", "clock_nanosleep"}
    os.unlink(trace)


def test_report_names_the_culprits_in_rank_order(ctx):
    truth, _, _, _, report = culprits_run(ctx)
    want = truth_by_function(truth)
    ranked = []
    for line in report.splitlines():
        m = re.match(r"^\d+\. .*`(\w+)` — ", line)
        if m:
            ranked.append(m.group(1))
    assert set(CULPRITS) <= set(ranked), (ranked, report)
    # wherever the workload's own times differ clearly, the report agrees on the order
    for a in CULPRITS:
        for b in CULPRITS:
            if want[a] > 1.15 * want[b]:
                assert ranked.index(a) < ranked.index(b), (a, b, ranked, want)
    assert "Advice:" in report and "of stall time" in report, report
    assert "## culprits (pid %d)" % truth["pid"] in report, report


def prom_gauge(path, pid_comm="culprits"):
    """loopwatch_loop_busy_now_seconds of the culprits series in the textfile, or None"""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("loopwatch_loop_busy_now_seconds{") and \
                        'comm="%s"' % pid_comm in line:
                    return float(line.rsplit(" ", 1)[1])
    except FileNotFoundError:
        pass
    return None


def test_a_hung_loop_is_reported_while_it_hangs(ctx):
    """deadlock_handler: 0.5 s on CPU, then 4.5 s asleep. Within --stuck-after + 1 s of
    the hang's start: a stuck event naming it and the call it sleeps in; meanwhile the
    busy-now gauge in the textfile and an alert line, before the iteration ends."""
    truth_path, prom, alerts = tmpfile(), tmpfile(".prom"), tmpfile(".log")
    os.unlink(prom)
    w = Workload([ctx.workload("culprits"), truth_path, "2", "--hang", "--go"])
    lw = Loopwatch(ctx, "-p", w.pid, "--prom-file", prom, "--prom-interval", "0.2",
                   "--alert-log", alerts)
    gauge, alert_before_end = 0.0, False
    try:
        lw.start()
        w.go()
        while w.proc.poll() is None:
            gauge = max(gauge, prom_gauge(prom) or 0)
            with open(alerts) as f:
                alert_before_end |= "stuck for" in f.read()
            time.sleep(0.1)
        w.wait()
        lines = lw.stop()
    finally:
        w.kill()
        lw.kill()
    truth = load_truth(truth_path)
    hang = truth["iterations"][-1]
    hang_start = hang["start_ns"] / 1e9 + truth["mono_to_wall"]
    stuck = of_type(lines, "stuck", pid=truth["pid"])
    assert stuck, [l["type"] for l in lines]
    first = stuck[0]
    assert first["report"] == 1 and first["ts"] - hang_start <= 1.0 + 1.0, \
        (first["ts"] - hang_start, first)
    assert abs(first["start_ts"] - hang_start) < 0.01, (first["start_ts"], hang_start)
    assert "deadlock_handler" in first["top"], first["top"]
    assert first["syscall"] == "clock_nanosleep", first
    names = {f["func"] for s in first["stacks"] for f in s["frames"]}
    assert "deadlock_handler" in names, names
    # its 0.5 s of CPU before the sleep is in the stacks sampled so far
    assert any(s["cause"] == "cpu" and s["samples"] > 0 for s in first["stacks"]), first
    # again while it lasts (--stuck-every 5 by default: at most one more here)
    assert all(s["report"] == i + 1 for i, s in enumerate(stuck)), stuck
    assert gauge >= 1.0, gauge
    assert alert_before_end, open(alerts).read()
    with open(alerts) as f:
        text = f.read()
    # the stall that ends the hang was alerted already: no second alert for it
    assert text.count("deadlock_handler") == 1, text
    # stamped when raised: the stuck alert after the hang began, before the run ended
    stamped = [ts for ts, alert in alert_lines(text) if "stuck for" in alert]
    assert stamped and all(hang_start <= ts <= time.time() + 1 for ts in stamped), \
        (hang_start, text)
    os.unlink(alerts)
    os.unlink(prom)

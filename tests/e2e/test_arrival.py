"""Arrival-weighted lag (what an event arriving at a random moment waits) against the
iterations the workloads timed themselves, and the lag alert it drives.

Windows: loopwatch counts a loop thread from its first wait call on; each workload here
starts its loop only after loopwatch is attached (--go), times the same stretch (from
its first wait call to the return of its last) and exits, so both windows are the
thread's whole life as a loop."""
import json
import math
import os

from lwtest import (APPS_DIR, arrival_quantile, of_type, run_traced, tmpfile, load_truth)

# the kernel's bucket math: a quantile within half a bucket (1.6 %); the issue asks 2 %
REL = 0.02


def assert_within(got_ms, lo_ms, hi_ms, abs_ms, what):
    """got within REL (or abs_ms) of [lo, hi]: the truth lies between what the workload
    timed (lo) and that plus what it knows a tracer may also see at each wait's edges."""
    assert lo_ms * (1 - REL) - abs_ms <= got_ms <= hi_ms * (1 + REL) + abs_ms, \
        "%s: %.3f ms, the workload's own iterations give %.3f..%.3f ms" % (what, got_ms,
                                                                           lo_ms, hi_ms)


def assert_arrival_matches(summary, lo_ns, hi_ns, span_ns, abs_ms, what):
    lag = summary["arrival_lag_ms"]
    assert abs(summary["window_ms"] - span_ns / 1e6) <= 0.01 * span_ns / 1e6 + 1, \
        "%s: window %.1f ms, the workload's %.1f ms" % (what, summary["window_ms"],
                                                        span_ns / 1e6)
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        assert_within(lag[key], arrival_quantile(lo_ns, span_ns, q) / 1e6,
                      arrival_quantile(hi_ns, span_ns, q) / 1e6, abs_ms, "%s %s" % (what, key))
    assert_within(lag["max"], max(lo_ns) / 1e6, max(hi_ns) / 1e6, abs_ms, what + " max")


def test_c_loop_arrival_lag_matches_its_own_iterations(ctx):
    """An epoll loop whose busy times span 0.1-20 ms (mixed) and one always behind its
    timer (fixed3): arrival-weighted p50/p90/p99/max within 2 % of the values computed
    from the workload's own iteration list over the same window."""
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("loopwork"), out, "mixed,fixed3", "1200",
                                "--go"])
    truth = load_truth(out)
    for t in truth["threads"]:
        s = of_type(lines, "summary", pid=truth["pid"], tid=t["tid"])
        assert len(s) == 1, "no summary for %s" % t["profile"]
        busy, edge = t["busy_ns"], t["edge_ns"]
        hi = [b + edge[i] + edge[i + 1] for i, b in enumerate(busy)]
        assert_arrival_matches(s[0], busy, hi, t["span_ns"], 0.01, t["profile"])
    mixed = of_type(lines, "summary", pid=truth["pid"], tid=truth["threads"][0]["tid"])[0]
    assert 0 < mixed["stall_share"] < 1, mixed


def test_asyncio_arrival_lag_matches_its_own_iterations(ctx):
    """An asyncio loop (Debian's python3) timing itself around each select: loopwatch's
    arrival-weighted p50/p90/p99/max within 2 % of the app's own. The app times from
    Python, a few microseconds inside the syscalls' edges (0.05 ms of slack), and a
    preemption there can add more: the app bounds it by its run-queue time."""
    out = tmpfile()
    _, lines = run_traced(ctx, ["/usr/bin/python3", os.path.join(APPS_DIR, "py_arrival.py"),
                                out, "800"])
    truth = load_truth(out)
    enter, leave, edge = truth["enter_ns"], truth["exit_ns"], truth["edge_ns"]
    busy = [enter[i + 1] - leave[i] for i in range(len(enter) - 1)]
    hi = [b + edge[i] + edge[i + 1] for i, b in enumerate(busy)]
    span = leave[-1] - enter[0]
    s = [x for x in of_type(lines, "summary") if x["comm"].startswith("python")]
    assert len(s) == 1, "want the app's one loop thread: %s" % s
    assert abs(s[0]["iterations"] - len(busy)) <= 0.01 * len(busy), (s[0], len(busy))
    assert_arrival_matches(s[0], busy, hi, span, 0.05, "asyncio")


def test_requests_arriving_at_random_wait_what_the_arrival_lag_says(ctx):
    """Requests a generator sends at random (Poisson) moments to an asyncio loop: their
    own waits (from the kernel's receive timestamp to the loop's return from the wait
    call that saw them, measured by the app) agree with loopwatch's arrival-weighted p90
    and p99 within the sample's error: no more than 1-q (+3 sigma) of them waited longer,
    no fewer than 1-q (-3 sigma) waited as long. A request that came while the loop slept
    waited for its wake-up, which is no iteration's: the app bounds that part (its
    run-queue time across the call) and the first check leaves it out."""
    out = tmpfile()
    _, lines = run_traced(ctx, ["/usr/bin/python3",
                                os.path.join(APPS_DIR, "py_arrival_requests.py"), out, "8"])
    truth = load_truth(out)
    waits = [w / 1e6 for w in truth["waits_ns"]]
    busy = [(w - i) / 1e6 for w, i in zip(truth["waits_ns"], truth["idle_ns"])]
    n = len(waits)
    assert n >= 1500, "%d requests" % n
    s = [x for x in of_type(lines, "summary") if x["comm"].startswith("python")]
    assert len(s) == 1, "want the app's one loop thread: %s" % s
    lag = s[0]["arrival_lag_ms"]
    for key, q in (("p90", 0.9), ("p99", 0.99)):
        tail, sigma = 1 - q, math.sqrt(q * (1 - q) / n)
        longer = sum(1 for w in busy if w > lag[key] * (1 + REL) + 0.1) / n
        as_long = sum(1 for w in waits if w >= lag[key] * (1 - REL) - 0.1) / n
        print("arrival %s %.2f ms (per iteration %.2f): of %d requests %.4f waited longer, "
              "%.4f as long" % (key, lag[key], s[0]["lag_ms"][key], n, longer, as_long))
        assert longer <= tail + 3 * sigma, \
            "%s %.2f ms: %.4f of %d requests waited longer (want <= %.4f)" % (
                key, lag[key], longer, n, tail + 3 * sigma)
        assert as_long >= tail - 3 * sigma, \
            "%s %.2f ms: %.4f of %d requests waited as long (want >= %.4f)" % (
                key, lag[key], as_long, n, tail - 3 * sigma)


def test_ten_stalls_among_fast_iterations_fire_the_lag_alert(ctx):
    """10 stalls of 30 ms among 50,000 iterations of 50 us: the per-iteration p99 stays
    under --alert-ms, the arrival-weighted p99 (the workload's own: ~25 ms) is over it,
    and lag alerts fire, beside the stalls' own."""
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("lagwork"), out, "50000", "10", "30", "--go"],
                          "--alert-ms", "20")
    truth = load_truth(out)
    want = arrival_quantile(truth["busy_ns"], truth["span_ns"], 0.99) / 1e6
    assert want >= 20, "the workload's own arrival p99 is %.1f ms" % want
    s = of_type(lines, "summary", pid=truth["pid"])
    assert len(s) == 1, s
    assert s[0]["lag_ms"]["p99"] < 20, "per-iteration p99 %s" % s[0]["lag_ms"]
    assert_within(s[0]["arrival_lag_ms"]["p99"], want, want, 0.1, "arrival p99")
    alerts = of_type(lines, "alert", pid=truth["pid"])
    lag_alerts = [a for a in alerts if a["kind"] == "lag"]
    assert lag_alerts, "no lag alert: %s" % of_type(lines, "alert")
    assert all(a["arrival_p99_ms"] >= 20 > a["iteration_p99_ms"] for a in lag_alerts), \
        lag_alerts
    assert [a for a in alerts if a["kind"] == "stall"], "the stalls' own alerts"


def test_node_arrival_lag_agrees_with_monitor_event_loop_delay(ctx):
    """Node's own perf_hooks.monitorEventLoopDelay over a loop stalling 30 ms every ~100
    ms: loopwatch's arrival-weighted p90 and p99 agree with its p90 and p99 within the
    timer's resolution + 10 %, its quantiles taken within their sampling error (the
    ranks q +- 3 sigma of its count firings: a p99 of 300 firings rests on 3 of them). The histogram records the time between two firings of a
    10 ms timer (10 ms on an idle loop: its p50 here), so its lateness is that minus the
    10 ms; it samples once per firing, not uniformly in time, hence the resolution's
    slack."""
    out = tmpfile()
    _, lines = run_traced(ctx, ["node", os.path.join(APPS_DIR, "node_eld.js"), out, "10"])
    with open(out) as f:
        eld = json.load(f)
    os.unlink(out)
    assert eld["count"] > 20, eld
    s = of_type(lines, "summary")
    s = [x for x in s if x["comm"] == "node"]
    assert len(s) == 1, s
    lag = s[0]["arrival_lag_ms"]

    def late(q):
        """The histogram's lateness at quantile q (clamped to [0.5, 1]), to a quarter
        percentile: the next one below for a lower bound... both rounded outwards."""
        q = min(max(q, 0.5), 1.0)
        return eld["pct"]["%.2f" % (math.floor(q * 400) / 4)] - 10, \
            eld["pct"]["%.2f" % (math.ceil(q * 400) / 4)] - 10
    for key, q in (("p90", 0.9), ("p99", 0.99)):
        # ELD's quantile from count firings: its rank is known to within 3 sigma
        sigma = math.sqrt(q * (1 - q) / eld["count"])
        lo, hi = late(q - 3 * sigma)[0], late(q + 3 * sigma)[1]
        print("arrival %s %.1f ms; monitorEventLoopDelay's lateness at q %.1f ms, "
              "within its sample %.1f..%.1f ms (%d firings)" % (
                  key, lag[key], eld[key] - 10, lo, hi, eld["count"]))
        assert lo - 10 - 0.1 * lo <= lag[key] <= hi + 10 + 0.1 * hi, (key, lag, eld)

"""One accounting everywhere: a hung loop's live reports split its time as its finished
stall does (on CPU, blocked, waiting for a CPU)."""
from lwtest import load_truth, of_type, run_traced, tmpfile


def test_stuck_reports_split_time_as_the_finished_stall_does(ctx):
    """stallwork's hung iteration: 2.4 s of spinning on a CPU shared half and half with
    a SCHED_FIFO competitor, then 0.6 s asleep. Reported live at 1 s and 2 s: each
    report's parts add up to its time so far, no part is above the finished stall's
    (parts only grow), and the wait for a CPU is counted as it happens (about half of
    the spin so far), not left for the end to find."""
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("stallwork"), out, "hung", "1", "--go"],
                          "--stuck-after", "1", "--stuck-every", "1")
    truth = load_truth(out)
    rec = truth["records"][0]
    stalls = [s for s in of_type(lines, "stall", pid=truth["pid"]) if s["duration_ms"] > 2000]
    assert len(stalls) == 1, of_type(lines, "stall")
    final = stalls[0]
    stuck = of_type(lines, "stuck", pid=truth["pid"])
    assert len(stuck) >= 2, stuck
    # the finished stall against the workload's own count (schedstat): the same split
    assert abs(final["runq_ms"] - rec["runq_ns"] / 1e6) <= 0.05 * final["duration_ms"], \
        (final, rec)
    for k in stuck:
        parts = (k["oncpu_ms"], k["blocked_ms"], k["runq_ms"])
        assert abs(sum(parts) - k["busy_ms"]) <= 0.01, k
        slack = 0.02 * final["duration_ms"] + 5
        for name in ("oncpu_ms", "blocked_ms", "runq_ms"):
            assert k[name] <= final[name] + slack, \
                "report %d: %s %.1f ms so far, the finished stall's %.1f ms" % (
                    k["report"], name, k[name], final[name])
        # during the spin, the competitor takes about half of the CPU
        if k["busy_ms"] <= 2300 and rec["clean"]:
            assert k["runq_ms"] >= 0.25 * k["busy_ms"], k

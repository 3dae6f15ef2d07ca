"""Where users' telemetry already lives: --pprof read by Debian's `go tool pprof`, held
against the folded stacks of the same run; --otlp pushed into Debian testing's
Prometheus 3 (its OTLP receiver), and a receiver that fails, hangs or is absent."""
import os
import re
import subprocess

from lwtest import load_truth, run_traced, tmpfile
from test_outputs import CULPRITS, parse_folded

_run = {}


def pprof_run(ctx):
    """One traced run of the culprits workload writing --folded and --pprof."""
    if "run" in _run:
        return _run["run"]
    truth_path, folded, profile = tmpfile(), tmpfile(".folded"), tmpfile(".pb.gz")
    run_traced(ctx, [ctx.workload("culprits"), truth_path, "48", "--go"],
               "--folded", folded, "--pprof", profile)
    with open(folded) as f:
        stacks = parse_folded(f.read())
    os.unlink(folded)
    _run["run"] = (load_truth(truth_path), stacks, profile)
    return _run["run"]


def go_pprof(*args):
    r = subprocess.run(["go", "tool", "pprof"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       env=dict(os.environ, HOME="/tmp", PPROF_TMPDIR="/tmp"))
    assert r.returncode == 0, r.stderr
    return r.stdout


UNITS_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1, "s": 1e3, "mins": 6e4, "hrs": 3.6e6}


def to_ms(text):
    m = re.match(r"^([0-9.]+)([a-zµ]*)$", text)
    assert m, text
    return float(m.group(1)) * UNITS_MS[m.group(2) or "ns"]


def pprof_top(profile, sample):
    """{function: (flat ms, cum ms)} from `go tool pprof -top` of one sample type."""
    out = go_pprof("-top", "-nodecount=100000", "-nodefraction=0", "-edgefraction=0",
                   "-sample_index=" + sample, profile)
    funcs = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)$", line)
        if m:
            funcs[m.group(3).strip()] = (to_ms(m.group(1)), to_ms(m.group(2)))
    return funcs


def test_pprof_holds_each_functions_stall_time_as_the_folded_stacks_do(ctx):
    _, stacks, profile = pprof_run(ctx)
    top = pprof_top(profile, "stall")
    total_folded = sum(us for _, us in stacks) / 1000
    for name in CULPRITS + ("iteration__run",):
        folded_ms = sum(us for frames, us in stacks if name in frames) / 1000
        assert name in top, "%s not in go tool pprof -top: %s" % (name, sorted(top))
        cum_ms = top[name][1]
        assert folded_ms > 0
        assert abs(cum_ms - folded_ms) <= 0.05 * folded_ms, \
            "%s: pprof %.1f ms, folded %.1f ms" % (name, cum_ms, folded_ms)
    # the causes' columns split the stall column, as the folded roots do
    for sample, root in (("cpu", "cpu"), ("blocked", "blocked"), ("runq", "runq")):
        want = sum(us for frames, us in stacks if frames[0] == root) / 1000
        got = sum(flat for flat, _ in pprof_top(profile, sample).values())
        assert abs(got - want) <= max(0.05 * want, 0.5), (sample, got, want)
    got_total = sum(flat for flat, _ in top.values())
    assert abs(got_total - total_folded) <= 0.05 * total_folded, (got_total, total_folded)


def test_pprof_traces_carry_the_labels_and_the_callers(ctx):
    truth, _, profile = pprof_run(ctx)
    out = go_pprof("-traces", profile)
    traces = out.split("-----------+-")
    blocked = [t for t in traces if re.search(r"cause:\s*\[?blocked\]?\n", t) and
               "query_backend" in t]
    assert blocked, out[:3000]
    t = blocked[0]
    assert re.search(r"\bpid:\s*\[?%d\]?\n" % truth["pid"], t), t
    assert re.search(r"\btid:\s*\[?%d\]?\n" % truth["tid"], t), t
    assert re.search(r"comm:\s*\[?culprits\]?\n", t), t
    # leaf first: query_backend is called from iteration__run
    frames = [ln.split()[-1] for ln in t.splitlines() if re.match(r"^\s+(\S+\s+)?\w+$", ln)]
    assert frames.index("query_backend") < frames.index("iteration__run"), frames
    os.unlink(profile)

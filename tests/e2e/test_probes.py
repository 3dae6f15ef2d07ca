"""Built-in and custom uprobes on real runtimes: exact call counts, durations against the
programs' own timing, share of loop busy time, stalls that name the probe."""
import glob
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from lwtest import (Loopwatch, Workload, in_range, load_truth, node_native, of_type, run_traced,
                    tmpfile, wait_for_uprobes)

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
CALLS = 10
PYENV_311 = os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3.11")


# a machine without debug symbols: loopwatch in its own mount namespace, with an empty
# /usr/lib/debug (make test installs python3.11-dbg, whose files would be found by build-id)
NO_DEBUG_FILES = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                  'mount -t tmpfs none /usr/lib/debug && exec "$0" "$@"']


def traced(ctx, argv, *flags, wrap=()):
    """A workload that loops until 'go' under loopwatch -p: loopwatch sees the loop and
    attaches its probes (however long a loaded host takes) before the work starts."""
    return run_traced(ctx, argv, *flags, settle=0.3, wrap=wrap, probes=True)


def debian_json_listing(ctx, wrap=()):
    """--list-probes' lines for Debian's own (stripped) _json module."""
    r = subprocess.run(list(wrap) + [ctx.loopwatch, "--list-probes"],
                       stdout=subprocess.PIPE, text=True, timeout=60)
    return [l for l in r.stdout.splitlines()
            if "/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64" in l]


def summary(lines, pid, probe):
    rows = [r for r in of_type(lines, "probe_summary", pid=pid) if r["probe"] == probe]
    assert len(rows) == 1, "no summary of %s for %d: %s" % (
        probe, pid, [(r["probe"], r["calls"]) for r in of_type(lines, "probe_summary")])
    return rows[0]


def assert_probe_time(name, got_ms, truth, key):
    """A probe's total time against the program's own timing of its calls: within 10 %,
    after taking off what the program saw itself wait for a CPU around each call (in its
    timed window, maybe outside the call)."""
    want_ms = sum(truth[key]) * 1000
    runq_ms = truth[key.replace("_s", "_runq_s")] * 1000
    assert in_range(got_ms, want_ms - runq_ms, want_ms, rel=0.1, abs_=0.5), \
        "%s: %.1f ms vs the program's %.1f ms (%.1f of it waiting for a CPU)" % (
            name, got_ms, want_ms, runq_ms)


def check_python_json(ctx, python, codec=(), wrap=()):
    out = tmpfile()
    pid, lines = traced(ctx, [python, os.path.join(APPS, "probe_json.py"), out, str(CALLS)]
                        + list(codec), wrap=wrap)
    truth = load_truth(out)
    names = ("ujson.dumps", "ujson.loads") if codec else ("json.dumps", "json.loads")
    for name, key in zip(names, ("dumps_s", "loads_s")):
        s = summary(lines, pid, name)
        assert s["calls"] == CALLS, "%s: %d calls, want %d" % (name, s["calls"], CALLS)
        assert_probe_time(name, s["total_ms"], truth, key)
        # every call ran inside a loop iteration
        assert abs(s["busy_ms"] - s["total_ms"]) < 0.01 and 0 < s["busy_share"] <= 1, s
        calls_over = [c for c in of_type(lines, "probe_call", pid=pid) if c["probe"] == name]
        assert len(calls_over) == sum(1 for t in truth[key] if t >= 0.0011) or \
            len(calls_over) == CALLS, (name, len(calls_over))
    # a stall caused by json.dumps lists the probe's time inside it
    stalls = of_type(lines, "stall", pid=pid)
    with_dumps = [s for s in stalls for p in s["probes"] if p["probe"] == names[0]]
    assert with_dumps, [s["probes"] for s in stalls]
    p = [p for p in with_dumps[0]["probes"] if p["probe"] == names[0]][0]
    assert 0 < p["ms"] <= with_dumps[0]["duration_ms"], with_dumps[0]
    return lines


def test_pyenv_311_json_dumps_loads(ctx):
    check_python_json(ctx, PYENV_311)


def test_debian_python_stripped_json_found_without_symbols(ctx):
    os.makedirs("/usr/lib/debug", exist_ok=True)
    check_python_json(ctx, "/usr/bin/python3", wrap=NO_DEBUG_FILES)
    listing = debian_json_listing(ctx, NO_DEBUG_FILES)
    assert len(listing) == 2 and all("PyType_Spec slot" in l for l in listing), listing


def test_debian_python_json_through_debug_symbols(ctx):
    """python3.11-dbg (installed by make test, upgrading python3.11 to the build it
    matches) provides the symbols through /usr/lib/debug/.build-id."""
    listing = debian_json_listing(ctx)
    assert len(listing) == 2 and all("debug file (build-id)" in l for l in listing), listing
    # the two ways agree on where the functions are
    stripped = debian_json_listing(ctx, NO_DEBUG_FILES)
    offsets = lambda ls: sorted(l.split("+")[1].split()[0] for l in ls)
    assert offsets(listing) == offsets(stripped), (listing, stripped)
    check_python_json(ctx, "/usr/bin/python3")


def test_ujson(ctx):
    check_python_json(ctx, "/usr/bin/python3", ["ujson"])


def test_node_json_stringify_parse(ctx):
    out = tmpfile()
    pid, lines = traced(ctx, ["/usr/bin/node", os.path.join(APPS, "probe_json.js"), out,
                              str(CALLS)])
    truth = load_truth(out)
    for name, key in (("JSON.stringify", "stringify_s"), ("JSON.parse", "parse_s")):
        s = summary(lines, pid, name)
        assert s["calls"] == CALLS, "%s: %d calls" % (name, s["calls"])
        assert_probe_time(name, s["total_ms"], truth, key)


def test_c_json_libraries_exact_counts(ctx):
    # nested entry points (cJSON_Parse -> ParseWithOpts -> ParseWithLengthOpts, json-c's
    # to_json_string -> _ext -> _length) must still count one per call
    expect = {"json_c": ("json-c parse", "json-c to_json_string"),
              "json_jansson": ("jansson load", "jansson dump"),
              "json_cjson": ("cJSON parse", "cJSON print")}
    for prog, probes in expect.items():
        pid, lines = traced(ctx, [ctx.workload(prog), str(CALLS)])
        for probe in probes:
            s = summary(lines, pid, probe)
            assert s["calls"] == CALLS, "%s %s: %d calls" % (prog, probe, s["calls"])
            assert s["total_ms"] > 0 and s["ms"]["max"] >= s["ms"]["p50"] > 0, s


def test_custom_probe_on_a_test_binary(ctx):
    binary = os.path.abspath(ctx.workload("json_cjson"))
    pid, lines = traced(ctx, [binary, str(CALLS)], "--no-builtin-probes",
                        "--probe", binary + ":work_unit=unit of work")
    s = summary(lines, pid, "unit of work")
    assert s["calls"] == CALLS, s
    # each spins 0.2 ms
    assert 0.19 <= s["ms"]["p50"] <= 0.5, s
    assert not [r for r in of_type(lines, "probe_summary") if r["probe"].startswith("cJSON")], \
        "--no-builtin-probes still attached the catalog"


def test_bad_custom_probes_fail_clearly(ctx):
    for spec in ("/nonexistent/lib.so:f", "libz.so.1:no_such_function", "nocolon"):
        r = subprocess.run([ctx.loopwatch, "--probe", spec, "-d", "1"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "probe" in r.stderr, \
            (spec, r.returncode, r.stderr)


def test_list_probes_says_where_and_what_is_unavailable(ctx):
    r = subprocess.run([ctx.loopwatch, "--list-probes"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for label in ("json.dumps", "json.loads", "ujson.dumps", "JSON.stringify", "JSON.parse",
                  "json-c parse", "jansson load", "cJSON parse", "yajl parse", "zlib compress",
                  "PBKDF2", "bcrypt", "pickle.dumps", "re.match"):
        assert any(l.split()[:1] == [label.split()[0]] for l in lines), label
    # an entry is shown with a location exactly when its library is here
    yajl = [l for l in lines if "yajl parse" in l]
    if glob.glob("/usr/lib/x86_64-linux-gnu/libyajl.so*"):
        assert any("libyajl" in l and "+0x" in l for l in yajl), yajl
    else:
        assert yajl == [l for l in yajl if "unavailable" in l] and yajl, yajl
    # Debian's python3.11 is stripped: its regex functions cannot be found, and say so
    assert any("unavailable" in l for l in lines), "nothing reported unavailable"
    # each real file once per entry: not again as /lib/... or under a symlinked name
    at = lambda l: [t for t in l.split() if "+0x" in t][0].split("+0x")
    where = [(l[:36], os.stat(at(l)[0]).st_ino, at(l)[1]) for l in lines if "+0x" in l]
    assert len(where) == len(set(where)), [w for w in where if where.count(w) > 1][:4]
    assert not [l for l in lines if "/lib/x86_64-linux-gnu/" in l and "/usr/lib" not in l]
    # found where no glob points: node's bundled OpenSSL and zlib
    assert any(l.split()[0] == "PBKDF2" and "/usr/bin/node+0x" in l for l in lines), \
        [l for l in lines if "PBKDF2" in l]


def test_node_pbkdf2_sync_timed_by_the_builtin_probe(ctx):
    """Node bundles OpenSSL: PKCS5_PBKDF2_HMAC is node's own symbol, and the PBKDF2 entry
    finds it there. Each crypto.pbkdf2Sync is one call, as long as node's own timing."""
    pid, truth, lines = node_native(ctx, [], ["login"])
    s = summary(lines, pid, "PBKDF2")
    wall = sum(t["wall"] for t in truth["login"])
    cpu = sum(t["cpu"] for t in truth["login"])
    assert s["calls"] == 3, s
    # inside node's own timing of each call; at least the CPU it spent (other threads
    # of node count in its CPU time too: a little slack)
    assert 0.9 * cpu <= s["total_ms"] <= wall + 0.5, (s["total_ms"], truth["login"])


def named_python(name):
    """Debian's python3 run under another name (its comm): a symlink named so."""
    d = tempfile.mkdtemp(prefix="loopwatch-comm-")
    os.symlink("/usr/bin/python3.11", os.path.join(d, name))
    return d, os.path.join(d, name)


def probed_until_done(lw, w):
    """Start loopwatch, wait for its probes, let the workload run to its end: the lines."""
    try:
        lw.start()
        wait_for_uprobes(lw.proc.pid)
        w.go()
        w.wait()
        time.sleep(0.6)
        return lw.stop(signal.SIGINT)
    finally:
        w.kill()
        lw.kill()


def test_filters_cover_every_probe_output(ctx):
    """Probes fire in every process that maps the file: under -p and --comm no line, no
    metric names another process calling json.dumps meanwhile (lwB...)."""
    # names of this run's own (another suite on the host runs the same test)
    name_a, name_b = "lwA%d" % os.getpid(), "lwB%d" % os.getpid()
    da, python_a = named_python(name_a)
    db, python_b = named_python(name_b)
    other = Workload([python_b, os.path.join(APPS, "batch_json.py"), tmpfile(), "0",
                      "--forever"])
    try:
        other.go()
        for target in (("-p", "PID"), ("--comm", name_a)):
            prom = tmpfile(".prom")
            out = tmpfile()
            w = Workload([python_a, os.path.join(APPS, "probe_json.py"), out, str(CALLS)])
            args = [a.replace("PID", str(w.pid)) for a in target]
            lw = Loopwatch(ctx, *args, "-d", 60, "--prom-file", prom, "--prom-interval", 0.5)
            lines = probed_until_done(lw, w)
            load_truth(out)
            with open(prom) as f:
                metrics = f.read()
            os.unlink(prom)
            s = summary(lines, w.pid, "json.dumps")
            assert s["calls"] == CALLS, (target, s)
            others = [l for l in lines if l.get("pid", w.pid) != w.pid or
                      l.get("comm", name_a) != name_a]
            assert not others, (target, others[:3])
            assert name_a in metrics and name_b not in metrics, target
    finally:
        other.kill()
        shutil.rmtree(da, ignore_errors=True)
        shutil.rmtree(db, ignore_errors=True)


def test_probes_go_into_loop_processes_alone(ctx):
    """A file's probes go into the processes with a loop thread alone: a batch job calling
    json.dumps in the same Debian python3, under the same name as a probed loop process
    (so --comm selects both), gets no breakpoint -- it pays no uprobe trap -- and shows in
    no output, while every call of the loop process is counted."""
    name = "lwP%d" % os.getpid()
    d, python = named_python(name)
    batch = Workload([python, os.path.join(APPS, "batch_json.py"), tmpfile(), "0",
                      "--forever"])
    out = tmpfile()
    w = Workload([python, os.path.join(APPS, "probe_json.py"), out, str(CALLS)])
    lw = Loopwatch(ctx, "--comm", name, "-d", 60)
    try:
        batch.go()
        lines = probed_until_done(lw, w)
    finally:
        batch.kill()
        shutil.rmtree(d, ignore_errors=True)
    load_truth(out)
    assert summary(lines, w.pid, "json.dumps")["calls"] == CALLS
    probed = [l for l in lines if l.get("type", "").startswith("probe") and
              l.get("pid") == batch.pid]
    assert not probed, probed[:3]


def test_non_loop_process_given_with_p(ctx):
    """A batch job with no event loop, named with -p: probed all the same, every
    json.dumps counted, each slow call with its stack (to _start); no loop rows."""
    out = tmpfile()
    pid, lines = run_traced(ctx, ["/usr/bin/python3", os.path.join(APPS, "batch_json.py"), out,
                                  "12"], probes=True)
    truth = load_truth(out)
    s = summary(lines, pid, "json.dumps")
    wall, cpu = sum(truth["dumps_s"]) * 1000, sum(truth["dumps_cpu_s"]) * 1000
    # each probed call lies inside the program's own timing and took nearly its CPU: the
    # probe is the C encoder, and json.dumps' Python around it (the join of its chunks,
    # 1-4 % of the call measured here) lies outside
    assert s["calls"] == 12 and 0.9 * cpu <= s["total_ms"] <= wall + 0.5, (s, wall, cpu)
    assert s["busy_ms"] == 0, s
    calls = of_type(lines, "probe_call", pid=pid)
    assert len(calls) == sum(1 for t in truth["dumps_s"] if t >= 0.0011) or len(calls) == 12
    assert calls and all(c["stack"][-1]["func"] == "_start" and
                         any(f["func"] == "dumps" for f in c["stack"]) for c in calls), \
        [[f["func"] for f in c["stack"]] for c in calls][:2]
    assert not of_type(lines, "summary", pid=pid), "a batch job is no loop"


def test_process_exiting_while_probed(ctx):
    """A process killed in the middle of json.dumps: loopwatch carries on and still
    counts the next process exactly."""
    out = tmpfile()
    w = Workload([PYENV_311, os.path.join(APPS, "probe_json.py"), out, "1000"])
    lw = Loopwatch(ctx, "-i", "0.5").start()
    try:
        wait_for_uprobes(lw.proc.pid)
        w.go()
        time.sleep(0.5)
        w.kill()
        out2 = tmpfile()
        w2 = Workload([PYENV_311, os.path.join(APPS, "probe_json.py"), out2, str(CALLS)])
        time.sleep(1.0)
        w2.go()
        w2.wait()
        time.sleep(0.6)
        lines = lw.stop(signal.SIGINT)
    finally:
        w.kill()
        lw.kill()
    s = summary(lines, w2.pid, "json.dumps")
    assert s["calls"] == CALLS, s
    for f in (out, out2):
        if os.path.exists(f):
            os.unlink(f)


def test_nested_and_raising_calls_count_once(ctx):
    """An inner json.dumps inside the outer one's C encoder counts once (the outermost);
    a call that raises from inside the encoder still returns through the uretprobe."""
    pid, lines = traced(ctx, [PYENV_311, os.path.join(APPS, "probe_nested.py"), "7", "5"])
    s = summary(lines, pid, "json.dumps")
    assert s["calls"] == 7 + 5, s

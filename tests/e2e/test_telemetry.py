"""Where users' telemetry already lives: --pprof read by Debian's `go tool pprof`, held
against the folded stacks of the same run; --otlp pushed into Debian testing's
Prometheus 3 (its OTLP receiver), its JSON encoding held against the protobuf one, and a
receiver that fails, hangs or is absent."""
import os
import re
import shutil
import subprocess
import tempfile

from lwtest import PrometheusServer, load_truth, run_traced, tmpfile
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
    print("pprof cum / folded ms:", {n: (round(top.get(n, (0, 0))[1], 1), round(
        sum(us for f, us in stacks if n in f) / 1000, 1)) for n in CULPRITS})
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


def test_pprof_python_frames_carry_file_and_line(ctx):
    """Debian's python3 blocking its asyncio loop in time.sleep from a helper: the
    profile's Python locations name the script and the tagged lines."""
    from lwtest import APPS_DIR, line_requests, serve_traced
    app = os.path.realpath(os.path.join(APPS_DIR, "py_sleep_server.py"))
    tags = {}
    with open(app) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"# @(\S+)\s*$", line)
            if m:
                tags[m.group(1)] = n
    profile = tmpfile(".pb.gz")
    serve_traced(ctx, ["/usr/bin/python3", app], lambda port: line_requests(port, 7),
                 "--pprof", profile, seconds=4)
    out = go_pprof("-top", "-lines", "-nodecount=100000", "-nodefraction=0", profile)
    os.unlink(profile)
    for func in ("blocking_helper", "handle"):
        want = "%s %s:%d" % (func, app, tags[func])
        assert any(line.rstrip().endswith(want) for line in out.splitlines()), \
            "%s not in go tool pprof -top -lines:\n%s" % (want, out[:4000])


# --- OTLP -------------------------------------------------------------------------------
# Debian's Prometheus 3.5 is built without its OTLP receiver (debian/changelog: "Disable
# OTLP Ingestion endpoint ... until golang-opentelemetry-collector is in Debian"): the
# requests are read here by Debian's protoc against opentelemetry-proto's own schema
# (forky's /usr/include/opentelemetry/proto), the histogram's quantiles computed as
# Prometheus's histogram_quantile does for native histograms.

def forky_root():
    """tools/testroot.sh forky: the cached root (built on a fresh machine)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                          "testroot.sh")
    r = subprocess.run([script, "forky"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=1800)
    assert r.returncode == 0, "tools/testroot.sh forky: %s" % r.stderr[-2000:]
    return r.stdout.strip()


PROTO_MSG = {"metrics": ("opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
                         "opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest"),
             "logs": ("opentelemetry/proto/collector/logs/v1/logs_service.proto",
                      "opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest")}


def otlp_decode(root, kind, body):
    """One request through protoc --decode with the official schema: a nested dict of
    lists (every field repeated), or an AssertionError if the schema refuses it."""
    proto, msg = PROTO_MSG[kind]
    r = subprocess.run(["protoc", "-I", os.path.join(root, "usr", "include"),
                        "--decode=" + msg, proto], input=body, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return text_format(r.stdout.decode())


def text_format(text):
    """protoc's text format as {field: [values]} (messages as dicts)."""
    import codecs
    stack = [{}]
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
        elif line.endswith("{"):
            child = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(child)
            stack.append(child)
        else:
            key, value = line.split(": ", 1)
            if value.startswith('"'):
                value = codecs.escape_decode(value[1:-1].encode())[0].decode("utf-8", "replace")
            elif re.match(r"^-?[0-9]+$", value):
                value = int(value)
            elif re.match(r"^-?[0-9.e+-]+$", value):
                value = float(value)
            stack[-1].setdefault(key, []).append(value)
    return stack[0]


def attrs(kvs):
    """KeyValue list -> {key: python value}"""
    out = {}
    for kv in kvs:
        v = kv["value"][0]
        for k in ("string_value", "int_value", "double_value", "bool_value"):
            if k in v:
                out[kv["key"][0]] = v[k][0]
    return out


class Receiver:
    """An OTLP/HTTP receiver on loopback that keeps every body it accepts. mode: "ok"
    (200), "503", "hang" (reads the request, never answers), "absent" (not listening)."""

    def __init__(self):
        import socket
        import threading
        self.port = None
        self.mode = "ok"
        self.bodies = []        # (path, body, time) of accepted requests
        self.types = {}         # path -> the Content-Types its requests came with
        self.seen = []          # (path, mode, time) of every request read
        self.sock = None
        self.lock = threading.Lock()
        self.hung = []
        self._listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.stopped = False
        self.thread.start()
        _ = socket

    def _listen(self):
        import socket
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port or 0))
        s.listen(64)
        s.settimeout(0.2)
        self.port = s.getsockname()[1]
        self.sock = s

    def set_mode(self, mode):
        with self.lock:
            if mode == "absent" and self.sock:
                self.sock.close()
                self.sock = None
            elif mode != "absent" and not self.sock:
                self._listen()
            self.mode = mode

    def _read(self, conn):
        conn.settimeout(5)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None, None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        length = 0
        for h in lines[1:]:
            k, v = h.split(":", 1)
            if k.lower() == "content-length":
                length = int(v)
            if k.lower() == "content-type":
                self.types.setdefault(lines[0].split()[1], set()).add(v.strip())
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None, None
            body += chunk
        return lines[0].split()[1], body

    def _serve(self):
        import socket
        import time as t
        while not self.stopped:
            with self.lock:
                sock = self.sock
            if not sock:
                t.sleep(0.05)
                continue
            try:
                conn, _ = sock.accept()
            except (socket.timeout, OSError):
                continue
            try:
                path, body = self._read(conn)
            except OSError:
                conn.close()
                continue
            mode = self.mode
            self.seen.append((path, mode, t.time()))
            if mode == "hang":
                self.hung.append(conn)
                continue
            if mode == "ok" and path is not None:
                self.bodies.append((path, body, t.time()))
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
                             b"Content-Length: 0\r\nConnection: close\r\n\r\n")
            else:
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
            conn.close()

    def stop(self):
        self.stopped = True
        self.thread.join(timeout=5)
        for c in self.hung:
            c.close()
        if self.sock:
            self.sock.close()


def exp_quantile(q, dp):
    """histogram_quantile over one exponential data point, as Prometheus computes it for
    native histograms: the bucket holding the rank, interpolated exponentially."""
    scale = dp.get("scale", [0])[0]
    base = 2 ** (2 ** -scale)
    zero = dp.get("zero_count", [0])[0]
    pos = dp.get("positive", [{}])[0]
    offset = pos.get("offset", [0])[0]
    counts = pos.get("bucket_counts", [])
    total = zero + sum(counts)
    rank = q * total
    if rank <= zero:
        return 0.0
    seen = zero
    for i, c in enumerate(counts):
        if c and seen + c >= rank:
            lo, hi = base ** (offset + i), base ** (offset + i + 1)
            return lo * (hi / lo) ** ((rank - seen) / c)
        seen += c
    return base ** (offset + len(counts))


def test_otlp_metrics_give_the_workloads_own_percentiles_and_name_the_process(ctx):
    from lwtest import in_range, iteration_bounds, nearest_rank, of_type
    root = forky_root()
    rx = Receiver()
    out = tmpfile()
    try:
        _, lines = run_traced(ctx, [ctx.workload("loopwork"), out, "mixed", "1500", "--go"],
                              "--otlp", "http://127.0.0.1:%d/" % rx.port, "--otlp-interval",
                              "1")
    finally:
        rx.stop()
    truth = load_truth(out)
    paths = {p for p, _, _ in rx.bodies}
    assert paths == {"/v1/metrics", "/v1/logs"}, paths
    metrics = [otlp_decode(root, "metrics", b) for p, b, _ in rx.bodies if p == "/v1/metrics"]
    # the last push holds the whole run: cumulative since loopwatch first saw the process
    mine = [rm for rm in metrics[-1]["resource_metrics"]
            if attrs(rm["resource"][0]["attributes"]).get("process.pid") == truth["pid"]]
    assert len(mine) == 1, [attrs(rm["resource"][0]["attributes"])
                            for rm in metrics[-1]["resource_metrics"]]
    res = attrs(mine[0]["resource"][0]["attributes"])
    assert res["process.executable.name"] == "loopwork", res
    assert res["service.name"], res
    by_name = {m["name"][0]: m for m in mine[0]["scope_metrics"][0]["metrics"]}
    hist = by_name["loopwatch.loop.iteration.duration"]
    assert hist["unit"] == ["s"]
    eh = hist["exponential_histogram"][0]
    assert eh["aggregation_temporality"] == ["AGGREGATION_TEMPORALITY_CUMULATIVE"], eh
    dp = eh["data_points"][0]
    thread = truth["threads"][0]
    lo, hi = iteration_bounds(thread)
    assert abs(dp["count"][0] - len(lo)) <= 0.01 * len(lo), (dp["count"], len(lo))
    got_all = {}
    for q in (0.5, 0.9, 0.99):
        got = exp_quantile(q, dp) * 1e3
        want_lo, want_hi = nearest_rank(lo, q), nearest_rank(hi, q)
        got_all[q] = (round(got, 3), want_lo, want_hi)
        # a bucket of the kernel's (<= 3.1 %) counted at its middle, in one of 0.27 %:
        # as close as loopwatch's own percentiles (test_loop: 3 %)
        assert in_range(got, want_lo, want_hi, rel=0.02 if q == 0.99 else 0.03, abs_=0.005), \
            "p%g: %.3f ms from OTLP, the workload's %.3f..%.3f ms" % (q * 100, got, want_lo,
                                                                       want_hi)
    print("OTLP quantiles (ms, got / workload lo..hi):", got_all)
    its = by_name["loopwatch.loop.iterations"]["sum"][0]
    assert its["is_monotonic"] == [True] or its["is_monotonic"] == ["true"], its
    assert abs(its["data_points"][0]["as_int"][0] - len(lo)) <= 0.01 * len(lo)
    busy = by_name["loopwatch.loop.busy.time"]["sum"][0]["data_points"][0]["as_double"][0]
    assert in_range(busy * 1e3, sum(lo), sum(hi), abs_=1.0), (busy, sum(lo), sum(hi))
    # every stall as a log record with its culprit and stack, under the same resource
    stalls = of_type(lines, "stall", pid=truth["pid"])
    assert stalls, "the mixed profile's tail makes stalls"
    records = []
    for p, b, _ in rx.bodies:
        if p != "/v1/logs":
            continue
        for rl in otlp_decode(root, "logs", b)["resource_logs"]:
            if attrs(rl["resource"][0]["attributes"]).get("process.pid") != truth["pid"]:
                continue
            for sl in rl["scope_logs"]:
                records += sl["log_records"]
    stall_records = [r for r in records if attrs(r["attributes"])["loopwatch.event"] == "stall"]
    assert len(stall_records) == len(stalls), (len(stall_records), len(stalls))
    for r in stall_records:
        a = attrs(r["attributes"])
        assert a["loopwatch.culprit"] and a["code.stacktrace"], a
        assert a["thread.id"] == thread["tid"], a
        # every part of the stall, the other parties' included, as in its JSON line
        assert {"loopwatch.oncpu_ms", "loopwatch.blocked_ms", "loopwatch.runq_ms",
                "loopwatch.gil_ms", "loopwatch.throttled_ms"} <= set(a), sorted(a)
        assert r["severity_number"] == ["SEVERITY_NUMBER_WARN"], r
    durations = sorted(attrs(r["attributes"])["loopwatch.duration_ms"] for r in stall_records)
    assert durations == sorted(round(s["duration_ms"], 3) for s in stalls) or all(
        abs(a - b) < 0.01 for a, b in zip(durations, sorted(s["duration_ms"] for s in stalls)))


# OTLP/JSON: the fields whose protobuf type is 64-bit (decimal strings in JSON) and enums
JSON_INT64 = {"timeUnixNano", "startTimeUnixNano", "observedTimeUnixNano", "count", "zeroCount",
              "asInt", "intValue"}
JSON_ENUMS = {"aggregationTemporality", "severityNumber"}
# Debian's python3-protobuf (/usr/bin/python3's): the reference parser of proto3's JSON
JSON_TO_PROTO = """
import sys
sys.path.insert(0, sys.argv[1])
from google.protobuf import json_format
if sys.argv[2] == "metrics":
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as m
    msg = m.ExportMetricsServiceRequest()
else:
    from opentelemetry.proto.collector.logs.v1 import logs_service_pb2 as m
    msg = m.ExportLogsServiceRequest()
json_format.Parse(sys.stdin.buffer.read(), msg)
sys.stdout.buffer.write(msg.SerializeToString())
"""
OTLP_PROTOS = ["common/v1/common", "resource/v1/resource", "metrics/v1/metrics", "logs/v1/logs",
               "collector/metrics/v1/metrics_service", "collector/logs/v1/logs_service"]


def json_conventions(node, path=""):
    """Where a JSON body breaks OTLP's JSON encoding: a key not lowerCamelCase, a 64-bit
    integer not a decimal string, an enum not an integer."""
    bad = []
    if isinstance(node, list):
        for i, v in enumerate(node):
            bad += json_conventions(v, "%s[%d]" % (path, i))
    elif isinstance(node, dict):
        for k, v in node.items():
            where = path + "." + k
            if not re.match(r"^[a-z][a-zA-Z]*$", k):
                bad.append(where + ": not lowerCamelCase")
            if k in JSON_INT64 and not (isinstance(v, str) and re.match(r"^-?[0-9]+$", v)):
                bad.append("%s: %r, not a decimal string" % (where, v))
            if k == "bucketCounts" and not all(isinstance(c, str) and c.isdigit() for c in v):
                bad.append(where + ": counts not decimal strings")
            if k in JSON_ENUMS and not isinstance(v, int):
                bad.append("%s: %r, not an integer" % (where, v))
            bad += json_conventions(v, where)
    return bad


def json_decode(root, gen, kind, body):
    """A JSON body through the reference parser into the schema's message, then protoc
    --decode as the protobuf bodies are: the same nested dict, or an AssertionError."""
    r = subprocess.run(["/usr/bin/python3", "-c", JSON_TO_PROTO, gen, kind], input=body,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert r.returncode == 0, "OTLP JSON refused by protobuf's parser: %s" % r.stderr.decode()
    return otlp_decode(root, kind, r.stdout)


def without_times(node):
    """A decoded message without what two exporters of one run cannot share: timestamps."""
    if isinstance(node, list):
        return [without_times(v) for v in node]
    if isinstance(node, dict):
        return {k: without_times(v) for k, v in node.items()
                if k not in ("time_unix_nano", "start_time_unix_nano", "observed_time_unix_nano")}
    return node


def test_otlp_json_encodes_the_same_requests_as_protobuf(ctx):
    """--otlp-encoding json beside the default protobuf, two loopwatches on one workload
    from its first iteration: every JSON body is application/json, follows OTLP's JSON
    encoding and parses with protobuf's own JSON parser into the official schema; the
    last (cumulative) metrics and the stall records hold what the protobuf run's hold."""
    import json
    from lwtest import Loopwatch, Workload, in_range, iteration_bounds, of_type
    root = forky_root()
    gen = tempfile.mkdtemp(prefix="loopwatch-otlp-py-")
    rx = Receiver()
    out = tmpfile()
    inc = os.path.join(root, "usr", "include")
    subprocess.run(["protoc", "-I", inc, "--python_out=" + gen] +
                   ["opentelemetry/proto/%s.proto" % p for p in OTLP_PROTOS], check=True)
    w = Workload([ctx.workload("loopwork"), out, "mixed", "1500", "--go"])
    common = ("-p", w.pid, "-d", 60, "--otlp-interval", "1")
    pb = Loopwatch(ctx, *common, "--otlp", "http://127.0.0.1:%d/pb" % rx.port)
    js = Loopwatch(ctx, *common, "--otlp", "http://127.0.0.1:%d/js" % rx.port,
                   "--otlp-encoding", "json")
    try:
        pb.start()
        js.start()
        w.go()
        w.wait()
        pb_lines, js_lines = pb.stop(), js.stop()
    finally:
        w.kill()
        pb.kill()
        js.kill()
        rx.stop()
        truth = load_truth(out) if os.path.exists(out) else None
    assert rx.types.get("/js/v1/metrics") == {"application/json"}, rx.types
    assert rx.types.get("/pb/v1/metrics") == {"application/x-protobuf"}, rx.types
    decoded = {"pb": {"metrics": [], "logs": []}, "js": {"metrics": [], "logs": []}}
    for path, body, _ in rx.bodies:
        enc, kind = path.split("/")[1], path.split("/")[-1]
        if enc == "js":
            bad = json_conventions(json.loads(body))
            assert not bad, bad[:5]
            decoded[enc][kind].append(json_decode(root, gen, kind, body))
        else:
            decoded[enc][kind].append(otlp_decode(root, kind, body))
    shutil.rmtree(gen)

    def mine(msg):
        return [rm for rm in msg["resource_metrics"]
                if attrs(rm["resource"][0]["attributes"]).get("process.pid") == w.pid]
    last = {enc: mine(decoded[enc]["metrics"][-1]) for enc in ("pb", "js")}
    assert len(last["pb"]) == len(last["js"]) == 1, last
    pb_rm, js_rm = last["pb"][0], last["js"][0]
    # the same resource, scope, metrics and units, field for field
    assert js_rm["resource"] == pb_rm["resource"], (js_rm["resource"], pb_rm["resource"])
    pb_metrics = pb_rm["scope_metrics"][0]["metrics"]
    js_metrics = js_rm["scope_metrics"][0]["metrics"]
    assert [(m["name"], m["unit"], m["description"]) for m in js_metrics] == \
        [(m["name"], m["unit"], m["description"]) for m in pb_metrics]
    # the values: each exporter's own BPF programs timed the same iterations
    lo, hi = iteration_bounds(truth["threads"][0])
    for jm, pm in zip(js_metrics, pb_metrics):
        if "exponential_histogram" in jm:
            jd = jm["exponential_histogram"][0]["data_points"][0]
            pd = pm["exponential_histogram"][0]["data_points"][0]
            assert set(jd) == set(pd), (set(jd), set(pd))
            assert jd["scale"] == pd["scale"] and jd["count"] == pd["count"], (jd, pd)
            assert abs(jd["count"][0] - len(lo)) <= 0.01 * len(lo)
            for q in (0.5, 0.9, 0.99):
                assert in_range(exp_quantile(q, jd), exp_quantile(q, pd),
                                exp_quantile(q, pd), rel=0.03, abs_=5e-6), q
            continue
        js_sum, pb_sum = without_times(jm["sum"]), without_times(pm["sum"])
        for k in ("as_int", "as_double"):
            if k in pb_sum[0]["data_points"][0]:
                jv = js_sum[0]["data_points"][0].pop(k)[0]
                pv = pb_sum[0]["data_points"][0].pop(k)[0]
                assert in_range(jv, pv, pv, rel=0.01, abs_=0.001), (jm["name"], jv, pv)
        assert js_sum == pb_sum, (jm["name"], js_sum, pb_sum)
    # every stall a log record in both, with the same attributes but the timed ones
    records = {}
    for enc in ("pb", "js"):
        records[enc] = [r for msg in decoded[enc]["logs"] for rl in msg["resource_logs"]
                        if attrs(rl["resource"][0]["attributes"]).get("process.pid") == w.pid
                        for sl in rl["scope_logs"] for r in sl["log_records"]]
    stalls = {"pb": of_type(pb_lines, "stall", pid=w.pid), "js": of_type(js_lines, "stall",
                                                                        pid=w.pid)}
    assert stalls["pb"] and len(records["js"]) == len(stalls["js"]) and \
        len(records["pb"]) == len(stalls["pb"]), ({k: len(v) for k, v in records.items()},
                                                  {k: len(v) for k, v in stalls.items()})
    js_r, pb_r = records["js"][0], records["pb"][0]
    assert set(js_r) == set(pb_r) and js_r["severity_number"] == pb_r["severity_number"] and \
        set(attrs(js_r["attributes"])) == set(attrs(pb_r["attributes"])), (js_r, pb_r)
    size = {enc: [len(b) for p, b, _ in rx.bodies if p == "/%s/v1/metrics" % enc][-1]
            for enc in ("pb", "js")}
    print("OTLP JSON: %d metrics bodies, %d log bodies, %d stall records (protobuf: %d); "
          "last metrics request %d bytes (protobuf %d)" % (
              len(decoded["js"]["metrics"]), len(decoded["js"]["logs"]), len(records["js"]),
              len(records["pb"]), size["js"], size["pb"]))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


OTLP_BACKOFF_MAX_S = 30


def test_otlp_receiver_down_hung_or_absent_costs_collection_nothing_and_drops_are_counted(ctx):
    """503, then a receiver that reads and never answers, then none at all: every
    interval still comes out on time, memory stays put, what the small queue cannot hold
    is dropped and counted (stderr, /metrics), and pushes resume when it is back."""
    import json
    import time as t
    import urllib.request
    from lwtest import Loopwatch, Workload, free_port, of_type
    root = forky_root()
    rx = Receiver()
    out = tmpfile()
    port = free_port()
    # ~2.5 ms an iteration: it outlasts the phases, the last one's 35 s included
    w = Workload([ctx.workload("loopwork"), out, "mixed", "24000", "--go"])
    lw = Loopwatch(ctx, "-p", w.pid, "-d", 90, "--otlp", "http://127.0.0.1:%d" % rx.port,
                   "--otlp-interval", "0.2", "--otlp-queue", "4", "--listen",
                   "127.0.0.1:%d" % port)
    # back: until the sender's backoff (doubling up to 30 s, sinks/otlpsend.c) has run
    # out and its next try arrived, then 2 s more
    phases = (("ok", 3), ("503", 4), ("hang", 7), ("absent", 4), ("ok", None))
    marks, rss, dropped_metric = [], [], None

    def pushed_since(t0):
        return any(p == "/v1/metrics" and ts >= t0 for p, _, ts in rx.bodies)
    try:
        lw.start()
        w.go()
        for mode, seconds in phases:
            rx.set_mode(mode)
            marks.append((mode, len(lw.out), t.time()))
            end = t.time() + (seconds if seconds else OTLP_BACKOFF_MAX_S + 5)
            while t.time() < end:
                rss.append((mode, rss_kb(lw.proc.pid)))
                t.sleep(0.25)
                if not seconds and pushed_since(marks[-1][2]):
                    end = min(end, t.time() + 2)
            if mode == "absent":
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                            timeout=5) as r:
                    m = re.search(r"^loopwatch_otlp_requests_dropped_total (\d+)$",
                                  r.read().decode(), re.M)
                    dropped_metric = int(m.group(1)) if m else None
        marks.append(("end", len(lw.out), t.time()))
        lw.proc.send_signal(2)
        lw.stop()
    finally:
        w.kill()
        lw.kill()
        rx.stop()
    if os.path.exists(out):
        os.unlink(out)
    # collection went on: an interval line of the workload for (nearly) every second
    for (mode, start, t0), (_, end, t1) in zip(marks, marks[1:]):
        lines = [json.loads(x) for x in lw.out[start:end] if x.strip()]
        n = len(of_type(lines, "interval", pid=w.pid))
        assert n >= int(t1 - t0) - 1, "%s: %d interval lines in %.1f s" % (mode, n, t1 - t0)
    # the receiver was tried in every state, and retried
    tried = {mode for _, mode, _ in rx.seen}
    assert {"ok", "503", "hang"} <= tried, tried
    # memory: flat across the outage (a 4 KiB queue; the rest dropped)
    base = max(kb for mode, kb in rss if mode == "ok")
    worst = max(kb for _, kb in rss)
    assert worst - base < 4096, "RSS %d KiB before, %d KiB at worst" % (base, worst)
    # drops counted, in loopwatch's own metrics and its last words
    assert dropped_metric and dropped_metric > 0, dropped_metric
    m = re.search(r"--otlp: (\d+) requests sent, (\d+) dropped, (\d+) refused, (\d+) attempts "
                  r"retried", lw.stderr)
    assert m, lw.stderr[-2000:]
    sent, dropped, _, retried = (int(x) for x in m.groups()[:4])
    assert dropped >= dropped_metric and retried > 0 and sent > 0, m.group(0)
    # resumed: the last phase's pushes arrived, counting on from before the outage
    resume_t = marks[-2][2]
    before = [b for p, b, ts in rx.bodies if p == "/v1/metrics" and ts < marks[1][2]]
    after = [b for p, b, ts in rx.bodies if p == "/v1/metrics" and ts >= resume_t]
    assert before and after, (len(before), len(after))

    def iterations(body):
        for rm in otlp_decode(root, "metrics", body)["resource_metrics"]:
            if attrs(rm["resource"][0]["attributes"]).get("process.pid") == w.pid:
                for m in rm["scope_metrics"][0]["metrics"]:
                    if m["name"] == ["loopwatch.loop.iterations"]:
                        return m["sum"][0]["data_points"][0]["as_int"][0]
        return None
    assert iterations(after[-1]) > iterations(before[-1]) > 0
    print("RSS %d -> %d KiB, sent %d dropped %d retried %d" % (base, worst, sent, dropped,
                                                                retried))


# --- Prometheus 3 native histograms ----------------------------------------------------

class ForkyPrometheus(PrometheusServer):
    """Debian testing's Prometheus 3.5 (tools/testroot.sh forky) under chroot, on
    loopback, native histograms on, scraping target every second. /proc and /dev are
    bound into the root while it runs."""

    def __init__(self, root, target):
        import tempfile
        from lwtest import free_port
        self.root = root
        self.mounts = []
        for d in ("proc", "dev"):
            path = os.path.join(root, d)
            subprocess.run(["mount", "--bind", "/" + d, path], check=True)
            self.mounts.append(path)
        self.dir = tempfile.mkdtemp(prefix="lw-prom-", dir=os.path.join(root, "tmp"))
        inside = "/tmp/" + os.path.basename(self.dir)
        with open(os.path.join(self.dir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: loopwatch\n    static_configs:\n"
                    "      - targets: ['%s']\n" % target)
        self.port = free_port()
        self.api = "http://127.0.0.1:%d/api/v1/" % self.port
        self.proc = subprocess.Popen(
            ["chroot", root, "prometheus", "--config.file=%s/prometheus.yml" % inside,
             "--storage.tsdb.path=%s/data" % inside,
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--enable-feature=native-histograms"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def query(self, expr, timeout=5):
        """The API's result list as it comes (native histograms have no one value)."""
        return self.query_raw(expr, timeout)

    def stop(self):
        import shutil
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for path in reversed(self.mounts):
            subprocess.run(["umount", "-l", path])
        shutil.rmtree(self.dir, ignore_errors=True)


def test_native_histogram_scraped_by_prometheus_3_gives_the_workloads_p99(ctx):
    """--listen --prom-native scraped by forky's Prometheus 3.5 with native histograms
    on: histogram_quantile over the native series within 2 % of the workload's own
    percentiles (the classic buckets are exact only at their edges: 10 ms, 25 ms)."""
    from lwtest import Loopwatch, Workload, free_port, in_range, iteration_bounds, nearest_rank
    root = forky_root()
    port = free_port()
    out = tmpfile()
    w = Workload([ctx.workload("loopwork"), out, "mixed", "2000", "--go"])
    # by name, not -p: loopwatch outlives the workload, its series stay to be scraped
    lw = Loopwatch(ctx, "--comm", "loopwork", "-d", 120, "--listen", "127.0.0.1:%d" % port,
                   "--prom-native")
    prom = ForkyPrometheus(root, "127.0.0.1:%d" % port)
    try:
        lw.start()
        w.go()
        w.wait()
        truth = load_truth(out)
        lo, hi = iteration_bounds(truth["threads"][0])
        exe = os.path.realpath(ctx.workload("loopwork"))
        sel = 'loopwatch_loop_iteration_seconds{exe="%s"}' % exe
        # the whole run scraped: the native series' count is the workload's iterations
        prom.wait("histogram_count(%s)" % sel,
                  lambda r: r and float(r[0]["value"][1]) >= 0.99 * len(lo), timeout=60)
        got = {}
        for q in (0.5, 0.9, 0.99):
            r = prom.query("histogram_quantile(%g, %s)" % (q, sel))
            assert len(r) == 1, r
            got[q] = float(r[0]["value"][1]) * 1e3
        # a classic-only exposition has no native series: histogram_count() needs one
        classic = prom.query('loopwatch_loop_iteration_seconds_bucket{exe="%s"}' % exe)
        lw.proc.send_signal(2)
        lw.stop()
    finally:
        w.kill()
        lw.kill()
        prom.stop()
    print("native histogram_quantile (ms):", {q: (round(v, 3), nearest_rank(lo, q))
                                               for q, v in got.items()})
    for q, v in got.items():
        # a kernel bucket (<= 3.1 % wide) counted at its middle, in a native bucket of
        # 0.27 % that Prometheus interpolates in: p99 within 2 %, p50 and p90 as close as
        # loopwatch's own (test_loop: 3 %; where iterations crowd, the kernel's view of
        # each, a microsecond longer than the workload's, moves the rank a bucket)
        rel = 0.02 if q == 0.99 else 0.03
        assert in_range(v, nearest_rank(lo, q), nearest_rank(hi, q), rel=rel, abs_=0.005), \
            "p%g: %.3f ms from Prometheus, the workload's %.3f..%.3f ms" % (
                q * 100, v, nearest_rank(lo, q), nearest_rank(hi, q))
    assert not classic, "scraped as classic buckets too: %s" % classic[:2]


def test_bad_telemetry_flags_are_one_line_and_status_2(ctx):
    """A URL loopwatch cannot send to, a flag missing its partner, a queue of nothing:
    one line naming the flag, status 2, before any BPF is loaded."""
    cases = [(["--otlp", "https://collector:4318"], "--otlp"),
             (["--otlp", "http://"], "--otlp"),
             (["--otlp", "http://collector:99999"], "--otlp"),
             (["--otlp", "http://collector:4318/v1?x=1"], "--otlp"),
             (["--otlp", "http://127.0.0.1:4318", "--otlp-queue", "0"], "--otlp-queue"),
             (["--otlp", "http://127.0.0.1:4318", "--otlp-interval", "0"], "--otlp-interval"),
             (["--otlp", "http://127.0.0.1:4318", "--otlp-encoding", "xml"], "--otlp-encoding"),
             (["--prom-native"], "--prom-native"),
             (["--pprof", "/tmp/"], "--pprof")]
    for args, flag in cases:
        r = subprocess.run([ctx.loopwatch] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and flag in lines[0], (args, r.stderr)
    r = subprocess.run([ctx.loopwatch, "--help"], stdout=subprocess.PIPE, text=True, timeout=30)
    for flag in ("--pprof", "--otlp", "--otlp-interval", "--otlp-queue", "--otlp-encoding",
                 "--prom-native"):
        assert flag + " " in r.stdout, "--help lacks " + flag

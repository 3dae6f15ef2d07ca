"""JavaScript frames in stalls and blocking calls of node processes started with no
flags before loopwatch: V8's frames are walked in BPF at capture time, named from the
heap and spliced into the native stack. Ground truth: the app's own record of when each
route function ran (and how many GCs it saw), and the lines of its source tagged
"// @function"; no line number is written here."""
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.request

from lwtest import of_type, serve_traced

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
APP = "node_routes.js"
# npm's node builds tools/deps.sh unpacks into build/nodes/ (besides Debian's node 20)
NODE_VERSIONS = ["18.20.8", "22.23.3", "24.21.0", "26.12.1"]
# the routes driven after loopwatch attached, and the function each names
ROUTES = {"json": "routeJson", "pbkdf2": "routePbkdf2", "read": "routeReadFile",
          "spin": "routeSpin", "wait": "routeWait", "late": "routeLate"}
# functions a route calls whose frame may be the innermost of the app's
CALLEES = {"routeSpin": {"spinInner"}}
# routes that sleep rather than run: their iterations' CPU samples are the code around them
SLEEPERS = {"routeWait"}
REQUESTS = 4
THRESHOLD_MS = 15
BIG_FILE_MB = 96


def app_source():
    with open(os.path.join(APPS, APP)) as f:
        return f.read().splitlines()


def tagged_lines():
    """function name -> the lines of the app tagged "// @name"."""
    tags = {}
    for n, line in enumerate(app_source(), 1):
        m = re.search(r"// @(\w+)\s*$", line)
        if m:
            tags.setdefault(m.group(1), set()).add(n)
    return tags


def function_ranges():
    """function name -> (first, last) line of each top-level `function name(` in the app."""
    ranges, lines = {}, app_source()
    for n, line in enumerate(lines, 1):
        m = re.match(r"function (\w+)\(", line)
        if m:
            end = next(k for k in range(n, len(lines) + 1) if lines[k - 1] == "}")
            ranges[m.group(1)] = (n, end)
    return ranges


def app_frames(frames):
    return [f for f in frames if f.get("kind") == "js" and os.path.basename(f.get("file", "")) == APP]


def describe(frames):
    return ["%s %s:%s %s" % (f["func"], os.path.basename(f.get("file", "")), f.get("line"),
                             f.get("tier", "")) if f.get("kind") == "js"
            else "%s (%s)" % (f["func"], f.get("kind")) for f in frames]


def get(port, path):
    return urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30).read()


def overlap_ms(stall, req):
    """How much of the request's work (ms) lies inside the stall's iteration."""
    s0 = stall["ts"] * 1000
    s1 = s0 + stall["duration_ms"]
    return max(0.0, min(s1, req["end"]) - max(s0, req["start"]))


def big_file():
    path = os.path.join(tempfile.gettempdir(), "loopwatch-test-node-big.bin")
    if not os.path.exists(path) or os.path.getsize(path) != BIG_FILE_MB << 20:
        with open(path, "wb") as f:
            f.write(os.urandom(1 << 20) * BIG_FILE_MB)
    return path


def traced_routes(ctx, node):
    """The app under node: routeJson made hot first (TurboFan), then loopwatch, then
    each route REQUESTS times, then each again with an allocation storm after every
    request: (pid, truth, lines, loopwatch's stderr, when the storms began in ms)."""

    def warm(port):
        # hot enough for TurboFan on every version; it compiles concurrently, in the pauses
        for _ in range(5):
            get(port, "/json?small=1&n=40000")
            time.sleep(0.2)

    def drive(port):
        # the loop's first wait after attach: loopwatch then sets the process up
        get(port, "/json?small=1")
        time.sleep(1.0)
        for route in ROUTES:
            for _ in range(REQUESTS):
                get(port, "/" + route)
                time.sleep(0.3)
        storms = time.time() * 1000
        for route in ROUTES:
            for _ in range(REQUESTS):
                get(port, "/" + route)
                get(port, "/garbage")
        return storms, json.loads(get(port, "/truth"))

    pid, (storms, truth), lines, stderr = serve_traced(
        ctx, [node, os.path.join(APPS, APP)], drive, "--threshold", THRESHOLD_MS,
        seconds=180, before=warm, interrupt=True, with_stderr=True,
        env={"BIG_FILE": big_file()})
    return pid, truth, lines, stderr, storms


def check_names_right(lines, pid, tags, ranges):
    """Every JS frame of the app names one of its functions at a line inside that
    function; the only markers are the ones that say why a frame has no name."""
    moved = 0
    for ev in of_type(lines, "stall", pid=pid) + of_type(lines, "blocking_call", pid=pid):
        stacks = [s["frames"] for s in ev["stacks"]] if "stacks" in ev else [ev["stack"]]
        for frames in stacks:
            for f in frames:
                if f.get("kind") != "js":
                    continue
                if f["func"].startswith("[js:"):
                    # marked, never invented: a GC moved it before naming, its
                    # capture-time read failed (a frame being deoptimised), or the walk's end
                    # "not a function": the frame's function slot held no function
                    # at capture (mid-move in a GC)
                    assert f["func"] in ("[js: moved by GC]", "[js: unreadable]",
                                         "[js: truncated]", "[js: not a function]"), \
                        describe(frames)
                    moved += f["func"] == "[js: moved by GC]"
            for f in app_frames(frames):
                assert f["func"] in ranges, "unknown function %s: %s" % (f["func"], describe(frames))
                lo, hi = ranges[f["func"]]
                assert lo <= f["line"] <= hi, "%s at line %d, outside %d-%d: %s" % (
                    f["func"], f["line"], lo, hi, describe(frames))
    return moved


def route_stalls(stalls, req):
    """The stalls that hold a request's work."""
    return [s for s in stalls if overlap_ms(s, req) >= 0.8 * (req["end"] - req["start"])]


def innermost_app(frames):
    app = app_frames(frames)
    return app[0] if app else None


def check_node(ctx, node):
    tags, ranges = tagged_lines(), function_ranges()
    major = int(subprocess.run([node, "--version"], capture_output=True, text=True,
                               check=True).stdout.strip().lstrip("v").split(".")[0])
    pid, truth, lines, stderr, storms = traced_routes(ctx, node)
    assert "JavaScript frames walked" in stderr, stderr
    stalls = of_type(lines, "stall", pid=pid)
    blocks = [b for b in of_type(lines, "blocking_call", pid=pid) if b["syscall"] == "futex"]
    reqs = [r for r in truth if r["fn"] in ROUTES.values() and
            r["end"] - r["start"] >= 2 * THRESHOLD_MS]
    calm = [r for r in reqs if r["end"] < storms]
    assert len(calm) >= len(ROUTES) * REQUESTS - 2, "requests too short: %s" % truth
    tiers, lines_seen = set(), {"tagged": 0, "other": 0, "inexact": 0}

    def line_ok(name, line):
        """A line of the function (which ones, counted below)."""
        return ranges[name][0] <= line <= ranges[name][1]

    # without GC storms: every stall names its route function at the line that blocked
    for req in calm:
        fn = req["fn"]
        names = {fn} | CALLEES.get(fn, set())
        mine = route_stalls(stalls, req)
        assert mine, "%s at %.0f-%.0f: no stall (%d stalls)" % (
            fn, req["start"], req["end"], len(stalls))
        for s in mine:
            top = re.match(r"(\S+) \((\S+):(\d+)\)", s["top"])
            if s["cause"] != "runq":
                assert top and top.group(2) == APP and top.group(1) in names and \
                    line_ok(top.group(1), int(top.group(3))), "%s stall named %r" % (fn, s["top"])
            # starved of CPU, the culprit is where it was preempted; the CPU samples
            # in the app's code still name the route function
            cpu = [st for st in s["stacks"] if st["cause"] == "cpu" and app_frames(st["frames"])]
            named = sum(st["samples"] for st in cpu
                        if any(f["func"] == fn for f in app_frames(st["frames"])))
            total = sum(st["samples"] for st in cpu)
            # a starved thread gets few samples, taken anywhere in its iteration
            assert s["cause"] == "blocked" or named * 2 > total or (total < 10 and named), \
                "%s: %d of %d samples: %s" % (fn, named, total,
                                              [describe(st["frames"]) for st in cpu])
            for st in s["stacks"]:
                for f in app_frames(st["frames"]):
                    if f["func"] not in names:
                        continue
                    # every line lies in its function; an exact one (the pc's) is counted
                    # against the lines tagged as where the function blocks
                    lo, hi = ranges[f["func"]]
                    assert lo <= f["line"] <= hi, "%s: %s" % (fn, describe(st["frames"]))
                    if not f.get("line_exact", True):
                        lines_seen["inexact"] += 1
                    else:
                        lines_seen["tagged" if f["line"] in tags[f["func"]] else "other"] += 1
                    if f["func"] == fn:
                        tiers.add(f.get("tier"))
        if fn == "routeWait":
            mine_b = [b for b in blocks if overlap_ms(b, req) >= 0.8 * (req["end"] - req["start"])]
            assert mine_b, "routeWait at %.0f: no futex blocking call" % req["start"]
            for b in mine_b:
                assert any(f["func"] == fn and (f["line"] in tags[fn] if f.get("line_exact", True)
                                                else ranges[fn][0] <= f["line"] <= ranges[fn][1])
                           for f in app_frames(b["stack"])), describe(b["stack"])
        if fn == "routeJson":
            # made hot before loopwatch started: optimised by TurboFan (inlined or not); from
            # node 26 (V8 14) on, the warm-up's loop in handle is TurboFan'd on stack with
            # routeJson inlined, and routeJson's own code stops at Maglev (--trace-opt:
            # handle TURBOFAN_JS OSR, routeJson MAGLEV only)
            optimised = ("turbofan", "inlined") + (("maglev",) if major >= 26 else ())
            opt = [f for s in mine for st in s["stacks"] for f in app_frames(st["frames"])
                   if f["func"] == fn and f.get("tier") in optimised]
            assert opt, "routeJson never seen optimised: %s" % [
                describe(st["frames"]) for s in mine for st in s["stacks"]]
    # an allocation storm after every request: GCs move the heap under the names,
    # which stay right (lines may fall back to the function's first line)
    stormy = [r for r in reqs if r["start"] > storms]
    gcs = [r["gcs"] for r in truth if r["start"] > storms]
    assert len(stormy) >= len(ROUTES) * REQUESTS // 2 and gcs[-1] - gcs[0] >= 20, \
        "storm: %d requests, GCs %s" % (len(stormy), gcs)
    for req in stormy:
        fn = req["fn"]
        for s in route_stalls(stalls, req):
            # its CPU samples still find the route function (every name is checked below)
            inner = [innermost_app(st["frames"]) for st in s["stacks"] if st["cause"] == "cpu"]
            inner = [f["func"] for f in inner if f]
            assert not inner or s["cause"] == "blocked" or fn in SLEEPERS or \
                ({fn} | CALLEES.get(fn, set())) & set(inner), "%s: innermost %s" % (fn, inner)
    moved = check_names_right(lines, pid, tags, ranges)
    # the pc's own line, and the one that blocks: most of the route functions' frames
    # (the others: setup lines of the function, or the line is inexact: bytecode gone
    # before naming, a running interpreted frame's last call)
    n = sum(lines_seen.values())
    assert lines_seen["tagged"] * 3 >= n * 2, "route frame lines: %s" % lines_seen
    return ("%d stalls, tiers %s, route frames %d: at tagged lines %d, other exact lines %d, "
            "inexact %d; %d GCs in the storms, %d frames marked moved by GC" % (
                len(stalls), sorted(t for t in tiers if t), n, lines_seen["tagged"],
                lines_seen["other"], lines_seen["inexact"], gcs[-1] - gcs[0], moved))


def test_debian_node_names_route_functions(ctx):
    """Debian's node 20: every stall of a route names its function at the tagged line
    (JSON.stringify, pbkdf2Sync, readFileSync, pure JS, Atomics.wait), a function
    compiled only after loopwatch started included, the hot one optimised by TurboFan,
    and under GC pressure no frame of the app is misnamed."""
    print("node 20 (Debian):", check_node(ctx, "/usr/bin/node"))


def test_npm_node_versions_name_route_functions(ctx):
    """The same on npm's node 18, 22, 24 and 26 (tools/deps.sh unpacks them into build/)."""
    failures = []
    for v in NODE_VERSIONS:
        node = os.path.join(ctx.build, "nodes", v, "bin", "node")
        assert os.access(node, os.X_OK), "%s missing: tools/deps.sh test unpacks it" % node
        try:
            print("node %s:" % v, check_node(ctx, node))
        except AssertionError as e:
            failures.append("node %s: %s" % (v, e))
    assert not failures, "\n".join(failures)


def elf_rename_dynstr(path, old, new):
    """Rename every old to new (same length) inside the .dynstr section of an ELF64 file."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
        sh = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names_off = sh[shstrndx][4]
        count = 0
        for s in sh:
            name = data[names_off + s[0]:data.index(b"\0", names_off + s[0])]
            if name != b".dynstr":
                continue
            sec = data[s[4]:s[4] + s[5]]
            count = sec.count(old)
            data[s[4]:s[4] + s[5]] = sec.replace(old, new)
        f.seek(0)
        f.write(data)
    return count


def test_node_without_v8_metadata_gets_a_marker(ctx):
    """A node whose v8dbg_* symbols are gone (renamed in a copy of the binary): every
    stack says so in one marker frame, no JS name is invented, the native frames stay."""
    d = tempfile.mkdtemp(prefix="loopwatch-test-node-")
    node = os.path.join(d, "node")
    try:
        shutil.copy("/usr/bin/node", node)
        assert elf_rename_dynstr(node, b"v8dbg_", b"v8gone") > 400

        def drive(port):
            get(port, "/json?small=1")
            time.sleep(1.0)
            attached = time.time()
            for _ in range(REQUESTS):
                get(port, "/json")
                time.sleep(0.05)
            return attached

        pid, attached, lines, stderr = serve_traced(ctx, [node, os.path.join(APPS, APP)], drive,
                                             "--threshold", THRESHOLD_MS, seconds=60,
                                             interrupt=True, with_stderr=True)
    finally:
        shutil.rmtree(d)
    assert "JavaScript frames not walked, marked (no usable V8 metadata: no v8dbg_* symbols)" \
        in stderr, stderr
    # the first iteration ends with the loop's first wait, when loopwatch sets the process up
    stalls = [s for s in of_type(lines, "stall", pid=pid)
              if s["duration_ms"] >= 40 and s["ts"] > attached]
    assert len(stalls) >= REQUESTS, [(s["duration_ms"], s["top"]) for s in stalls]
    for s in stalls:
        for st in s["stacks"]:
            js = [f["func"] for f in st["frames"] if f["kind"] == "js"]
            assert js == ["[js: no V8 metadata: no v8dbg_* symbols]"], describe(st["frames"])
    # the native frames are all still there: V8's JSON serializer for the CPU samples
    assert any("JsonStringifier" in f["func"] for s in stalls for st in s["stacks"]
               for f in st["frames"]), [describe(st["frames"]) for s in stalls for st in s["stacks"]]

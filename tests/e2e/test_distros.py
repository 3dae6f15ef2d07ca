"""Runtimes as distros ship them, in a root of their own (tools/testroot.sh: Debian
trixie and forky, debootstrapped once and cached under build/): CPython 3.13, 3.14
and 3.15 walked from the offsets each process publishes (_Py_DebugOffsets), not from a
table of known builds; every file of theirs (executables, libraries, perf maps) read
through the process's own root, in a chroot and in a mount namespace of its own with
a private /tmp. Ground truth: the lines of the apps tagged "# @function" or
"// @function"; no line number is written here."""
import os
import re
import shlex
import time
import urllib.request

from lwtest import APPS_DIR, RootMounts, of_type, serve_traced, distro_root
from test_node import function_ranges
from test_node import tagged_lines as node_tagged_lines
from test_python import PYENV, assert_chain, describe, find_frame, tagged_lines

APP = "py_asyncio_stalls.py"


def task_of(frames):
    """The asyncio Task a stack names ("[asyncio task: NAME]"), or None."""
    marks = [f["func"] for f in frames if f["func"].startswith("[asyncio task")]
    return marks[0] if marks else None


def check_asyncio_stalls(ctx, argv, tasks=False):
    """py_asyncio_stalls.py under argv: its stalls' CPU stacks hold busy_helper <
    inject < injector, its blocking futex calls block_helper < inject < injector,
    each at the tagged line of the script. tasks (3.14+): each also names the Task
    that ran it and its coroutine, "stall-injector" running injector(), and main_spin's
    the unnamed main Task, "Task-1" running main(); without, none names a Task."""
    tags = tagged_lines(APP)
    pid, _, lines = serve_traced(ctx, argv, None, "--threshold", 20, seconds=4)
    want = "[asyncio task: stall-injector, coroutine injector]" if tasks else None
    stalls = of_type(lines, "stall", pid=pid)
    assert len(stalls) >= 5, [(s["duration_ms"], s["cause"]) for s in stalls]
    # the first may come before the process was set up at the loop's first wait
    cpu = [st["frames"] for s in stalls[1:] for st in s["stacks"]
           if st["cause"] == "cpu" and find_frame(st["frames"], "busy_helper")]
    assert len(cpu) >= 3, "CPU stacks in busy_helper: %s" % [
        describe(st["frames"]) for s in stalls[1:] for st in s["stacks"]]
    for frames in cpu:
        assert_chain(frames, APP, tags, ["busy_helper", "inject", "injector"])
        assert not [f for f in frames if f["func"].startswith("[python:")], describe(frames)
        assert task_of(frames) == want, describe(frames)
    blocks = [b for b in of_type(lines, "blocking_call", pid=pid)
              if b["syscall"] == "futex" and b["duration_ms"] >= 29]
    assert len(blocks) >= 4, [(b["syscall"], b["duration_ms"])
                              for b in of_type(lines, "blocking_call")]
    for b in blocks[1:]:
        assert_chain(b["stack"], APP, tags, ["block_helper", "inject", "injector"])
        assert task_of(b["stack"]) == want, describe(b["stack"])
    mains = [st["frames"] for s in stalls[1:] for st in s["stacks"]
             if st["cause"] == "cpu" and find_frame(st["frames"], "main_spin")]
    assert mains, "no CPU stack in main_spin"
    for frames in mains:
        assert_chain(frames, APP, tags, ["main_spin", "main"])
        assert task_of(frames) == ("[asyncio task: Task-1, coroutine main]" if tasks
                                   else None), \
            describe(frames)


def check_in_root(ctx, suite, python, tasks=False):
    root = distro_root(suite)
    with RootMounts(root):
        check_asyncio_stalls(ctx, ["chroot", root, python, "/lwapps/" + APP], tasks)


def test_trixie_python_3_13_stalls_name_the_injecting_functions(ctx):
    check_in_root(ctx, "trixie", "python3.13")


def test_forky_python_3_14_stalls_name_the_injecting_functions_and_task(ctx):
    check_in_root(ctx, "forky", "python3.14", tasks=True)


def test_forky_python_3_15_stalls_name_the_injecting_functions_and_task(ctx):
    check_in_root(ctx, "forky", "python3.15", tasks=True)


def check_short_lived_tasks(ctx, python):
    """py_asyncio_requests.py in forky's root: a Task per request ("request-N"), freed once
    it is done and its memory reused by the next. Each stall's stacks in handle_busy
    name the Task of the request whose burn the stall overlaps most, and its coroutine
    handle: the name is copied when the stack is taken, not read from freed memory
    later (which gave "[asyncio task: unreadable]" for aiohttp's per-request Tasks)."""
    root = distro_root("forky")
    truth = "/tmp/lw-requests-%d.txt" % os.getpid()
    app = "py_asyncio_requests.py"
    tags = tagged_lines(app)
    try:
        with RootMounts(root):
            pid, _, lines = serve_traced(ctx, ["chroot", root, python, "/lwapps/" + app, truth],
                                         None, "--threshold", 15, seconds=4)
        with open(root + truth) as f:
            reqs = [(int(n), float(a), float(b)) for n, a, b in (l.split() for l in f)]
    finally:
        if os.path.exists(root + truth):
            os.unlink(root + truth)

    def overlap(s, r):
        return min(s["ts"] + s["duration_ms"] / 1e3, r[2]) - max(s["ts"], r[1])

    stalls = of_type(lines, "stall", pid=pid)
    assert len(stalls) >= 20 and len(reqs) >= 20, (len(stalls), len(reqs))
    named = 0
    # the first may come before the process was set up at the loop's first wait
    for s in stalls[1:]:
        req = max(reqs, key=lambda r: overlap(s, r))
        for st in s["stacks"]:
            if st["cause"] != "cpu" or not find_frame(st["frames"], "handle_busy"):
                continue
            assert_chain(st["frames"], app, tags, ["handle_busy", "handle"])
            want = "[asyncio task: request-%d, coroutine handle]" % req[0]
            assert task_of(st["frames"]) == want, (want, describe(st["frames"]))
            named += 1
    assert named >= 15, "%d stacks in handle_busy of %d stalls" % (named, len(stalls))


def test_forky_python_3_14_short_lived_tasks_named_as_they_ran(ctx):
    check_short_lived_tasks(ctx, "python3.14")


def test_forky_python_3_15_short_lived_tasks_named_as_they_ran(ctx):
    check_short_lived_tasks(ctx, "python3.15")


def test_pyenv_python_3_13_stalls_name_the_injecting_functions(ctx):
    versions = sorted(v for v in os.listdir(PYENV) if v.startswith("3.13."))
    assert versions, "no pyenv 3.13.* in %s" % PYENV
    for v in versions:
        check_asyncio_stalls(ctx, [os.path.join(PYENV, v, "bin", "python3.13"),
                                   os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "..", "apps", APP)])


def private_ns_argv(root, argv):
    """argv run in root inside a mount namespace of its own whose /tmp is a fresh tmpfs
    (what it writes there, no other namespace sees), with /proc and tests/apps (as
    /lwapps) bound in: those mounts go with the namespace. unshare and sh exec, so the
    pid is the program's."""
    script = ("mount -t tmpfs lwtmp {r}/tmp && mount --bind /proc {r}/proc && "
              "mkdir -p {r}/lwapps && mount --bind -o ro {a} {r}/lwapps && "
              "exec chroot {r} {cmd}").format(r=shlex.quote(root), a=shlex.quote(APPS_DIR),
                                             cmd=" ".join(shlex.quote(a) for a in argv))
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", script]


def assert_map_private(root, pid):
    """The process's perf map is in its own /tmp only: not in ours, not in the root's."""
    assert os.path.exists("/proc/%d/root/tmp/perf-%d.map" % (pid, pid)), "no perf map"
    for outside in ("/tmp", os.path.join(root, "tmp")):
        assert not os.path.exists(os.path.join(outside, "perf-%d.map" % pid)), outside


def test_python_3_14_in_a_mount_namespace_with_a_private_tmp(ctx):
    """forky's python3.14 -X perf (its perf map goes to the private /tmp) in a chroot
    inside its own mount namespace, the app visible only there: the walker names the
    injecting functions as in a plain chroot."""
    root = distro_root("forky")
    argv = private_ns_argv(root, ["python3.14", "-X", "perf", "/lwapps/" + APP])
    seen = []

    def drive(pid):
        time.sleep(2)
        assert_map_private(root, pid)
        seen.append(pid)

    tags = tagged_lines(APP)
    pid, _, lines = serve_traced(ctx, argv, drive, "--threshold", 20, seconds=4)
    assert seen == [pid], "the namespace was not checked"
    stalls = of_type(lines, "stall", pid=pid)
    cpu = [st["frames"] for s in stalls[1:] for st in s["stacks"]
           if st["cause"] == "cpu" and find_frame(st["frames"], "busy_helper")]
    assert len(cpu) >= 3, [describe(st["frames"]) for s in stalls[:3] for st in s["stacks"]]
    for frames in cpu:
        assert_chain(frames, APP, tags, ["busy_helper", "inject", "injector"])


NODE_APP = "node_routes.js"


def listener_pid(port):
    """The process listening on a TCP port on 127.0.0.1 or any address (its socket's
    inode in /proc/net/tcp, then the fd that holds it)."""
    inodes = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(path) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add("socket:[%s]" % fields[9])
    for pid in (d for d in os.listdir("/proc") if d.isdigit()):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
            if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes for fd in fds):
                return int(pid)
        except OSError:
            continue
    raise AssertionError("nobody listens on port %d" % port)


def test_debian_node_in_a_mount_namespace_names_routes_from_its_private_perf_map(ctx):
    """forky's node 24 (a 26 KB /usr/bin/node over libnode.so.137) with --perf-basic-prof
    in a chroot inside its own mount namespace: /spin's stalls name routeSpin, /wait's
    futex calls routeWait, each with its file and a line of
    that function (a perf map gives where it starts), from the map in the process's
    private /tmp."""
    root = distro_root("forky")
    argv = private_ns_argv(root, ["node", "--perf-basic-prof",
                                  "--interpreted-frames-native-stack", "/lwapps/" + NODE_APP])
    ranges = function_ranges()

    def get(port, path):
        return urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30).read()

    seen = []

    def drive(port):
        pid = listener_pid(port)
        assert_map_private(root, pid)
        seen.append(pid)
        # the loop's first wait after attach: loopwatch then sets the process up, which
        # takes longer on a fresh machine (libnode.so's tables read from a cold cache)
        get(port, "/spin?small=1")
        time.sleep(2.0)
        for _ in range(6):
            for route in ("spin", "wait"):
                get(port, "/" + route)
                time.sleep(0.2)

    pid, _, lines = serve_traced(ctx, argv, drive, "--threshold", 15, seconds=9)
    assert seen == [pid], "the namespace was not checked"
    def named(frames, fns):
        return [f for f in frames if f["func"] in fns and f.get("file", "").endswith(NODE_APP)
                and ranges[f["func"]][0] <= (f.get("line") or 0) <= ranges[f["func"]][1]]

    def route(frames, fn):
        """fn's frame, or where TurboFan inlined fn into handle (the one call site of every
        route: a perf map names an optimized code object by its outermost function), the
        frame of what fn called followed by handle's, or handle's first of all."""
        app = [f["func"] for f in frames
               if f.get("file", "").endswith(NODE_APP) and f["func"] in ranges]
        if named(frames, (fn,)):
            return True
        inner = {"routeSpin": ["spinInner"], "routeWait": []}[fn]
        return app[:len(inner) + 1] == inner + ["handle"]

    spins = [s for s in of_type(lines, "stall", pid=pid)
             if any(named(st["frames"], ("routeSpin", "spinInner")) for st in s["stacks"])]
    assert len(spins) >= 3, [[(f["func"], f.get("line")) for f in st["frames"]]
                             for s in of_type(lines, "stall", pid=pid)[:3] for st in s["stacks"]]
    # spinInner may be inlined into routeSpin, routeSpin into handle: the route, or the
    # function it was inlined into, is always there
    for s in spins:
        assert any(route(st["frames"], "routeSpin") for st in s["stacks"]), [
            (f["func"], f.get("line")) for st in s["stacks"] for f in st["frames"]]
    waits = [b for b in of_type(lines, "blocking_call", pid=pid)
             if b["syscall"] == "futex" and b["duration_ms"] >= 35]
    routes = [b for b in waits if route(b["stack"], "routeWait")]
    assert len(routes) >= 3, [(b["syscall"], b["duration_ms"],
                               [(f["func"], f.get("line")) for f in b["stack"]])
                              for b in of_type(lines, "blocking_call", pid=pid)]
    # any other long futex is V8's own (a wait for its GC helpers, seen at load 20 in
    # makeBig), never another JS function's
    for b in waits:
        assert b in routes or any(f["func"].startswith("v8::base::") for f in b["stack"]), \
            [(f["func"], f.get("line")) for f in b["stack"]]


def forky_node_stalls(ctx, warm, paths, rounds):
    """forky's node 24 in a chroot serving NODE_APP, traced with a 15 ms threshold: warm
    (the small variants, so the routes are compiled before they are measured), then each
    of paths rounds times; (stalls, stderr), stderr checked to say the frames are walked."""
    root = distro_root("forky")

    def get(port, path):
        return urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30).read()

    def drive(port):
        for path in warm:
            get(port, path)
        time.sleep(1.0)
        for _ in range(rounds):
            for path in paths:
                get(port, path)
                time.sleep(0.2)

    with RootMounts(root):
        pid, _, lines, stderr = serve_traced(
            ctx, ["chroot", root, "node", "/lwapps/" + NODE_APP], drive, "--threshold", 15,
            seconds=5, with_stderr=True)
    assert re.search(r"JavaScript frames walked \(V8 13\.", stderr), stderr
    return of_type(lines, "stall", pid=pid), stderr


def test_debian_node_24_over_libnode_names_routes_that_block_in_cpp(ctx):
    """forky's node 24 in a chroot: stalls whose CPU is spent in libnode's C++ (pbkdf2,
    JSON.stringify) hold the JS route that called in. The walk starts from the isolate's
    c_entry_fp: the isolate from libnode's general-dynamic TLS (the GOT's tls_index that
    v8::Isolate::GetCurrent passes to __tls_get_addr, through glibc's dtv), c_entry_fp's
    place from the CEntry builtins' code found by pattern (their symbols are stripped)."""
    tags, ranges = node_tagged_lines(), function_ranges()
    stalls, _ = forky_node_stalls(ctx, ["/pbkdf2?small=1", "/json?small=1"],
                                  ["/pbkdf2", "/json"], 4)
    for fn in ("routePbkdf2", "routeJson"):
        named = [f for s in stalls for st in s["stacks"] for f in st["frames"]
                 if f["kind"] == "js" and f["func"] == fn]
        assert len(named) >= 3, (fn, [[(f["func"], f.get("line")) for f in st["frames"]][:16]
                                      for s in stalls[:4] for st in s["stacks"]])
        for f in named:
            assert f["file"].endswith(NODE_APP) and \
                ranges[fn][0] <= f["line"] <= ranges[fn][1], f
        assert sum(f["line"] in tags[fn] for f in named) >= 3, (fn, [f["line"] for f in named])


def test_debian_node_24_over_libnode_names_the_route_function(ctx):
    """forky's node 24 in a chroot, no flags: V8's layout from libnode.so.137's .dynsym,
    its builtins from the globals the process keeps them in (their symbols are
    stripped). /spin's stalls hold JS frames walked in BPF and named from the heap:
    routeSpin (or the spinInner it calls) at a tagged line, in the app's file."""
    tags, ranges = node_tagged_lines(), function_ranges()
    stalls, _ = forky_node_stalls(ctx, ["/spin?small=1"], ["/spin"], 5)
    fns = ("routeSpin", "spinInner")
    spins = [s for s in stalls if any(f["kind"] == "js" and f["func"] in fns
                                      for st in s["stacks"] for f in st["frames"])]
    assert len(spins) >= 4, [[(f["func"], f.get("line")) for f in st["frames"]][:12]
                             for s in stalls[:3] for st in s["stacks"]]
    exact = 0
    for s in spins:
        for st in s["stacks"]:
            for f in st["frames"]:
                if f["kind"] != "js" or f["func"] not in fns:
                    continue
                assert f["file"].endswith(NODE_APP) and \
                    ranges[f["func"]][0] <= f["line"] <= ranges[f["func"]][1], f
                exact += f["line"] in tags[f["func"]]
    assert exact >= 4, "frames at a tagged line: %d" % exact

"""Helpers shared by the end-to-end tests: run loopwatch and workloads, read JSON lines."""
import datetime
import json
import math
import os
import re
import signal
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

# the kernel's per-program counters and the measurement the cost guard shares with make bench
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "bench"))
import bpfstats  # noqa: E402,F401

APPS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")


def nearest_rank(values, q):
    """The percentile definition loopwatch uses, on exact data."""
    s = sorted(values)
    rank = max(1, math.ceil(q * len(s)))
    return s[rank - 1]


def close_enough(got, want, rel=0.03, abs_=0.1):
    """Within rel of want, or within abs_ (same unit) for small values."""
    return abs(got - want) <= max(rel * abs(want), abs_)


def in_range(got, lo, hi, rel=0.03, abs_=0.1):
    """close_enough to some value in [lo, hi]: what the workload measured, lo, plus what
    it knows a tracer may also have seen, hi (preemptions and interrupts at a wait call's
    edges)."""
    return lo - max(rel * lo, abs_) <= got <= hi + max(rel * hi, abs_)


def iteration_bounds(thread):
    """A loopwork thread's truth: per iteration, the busy time it measured (lo) and that
    plus the edge time around its two waits (hi), in ms. A bare list of busy times: no
    edges known."""
    if isinstance(thread, list):
        thread = {"busy_ns": thread, "edge_ns": [0] * (len(thread) + 1)}
    busy, edge = thread["busy_ns"], thread["edge_ns"]
    lo = [b / 1e6 for b in busy]
    hi = [(b + edge[i] + edge[i + 1]) / 1e6 for i, b in enumerate(busy)]
    return lo, hi


def arrival_excess(durations, x):
    """sum max(0, d - x): over a window of T, P(an event arriving at a random moment
    waits more than x) = arrival_excess / T."""
    return sum(d - x for d in durations if d > x)


def arrival_quantile(durations, span, q):
    """The q-quantile of the wait of an event arriving at a uniformly random moment of
    a window of length span holding iterations of these durations (same unit), exactly:
    arrival_excess is piecewise linear, solved from the longest iteration down."""
    a, total = (1 - q) * span, 0
    s = sorted(durations, reverse=True)
    for i, d in enumerate(s):
        nxt = s[i + 1] if i + 1 < len(s) else 0
        total += d
        if total - nxt * (i + 1) >= a:
            return (total - a) / (i + 1)
    return 0


# A stall's parts -- on CPU, blocked, waiting for a CPU -- split its duration, so they
# never add up to more. Printed to the us in JSON (four roundings: 2 us) and to 0.1 ms
# in text (0.2 ms); run-queue time of an earlier iteration booked into it would exceed it.
BREAKDOWN_SLACK_MS = {"json": 0.003, "text": 0.2}
TEXT_STALL = re.compile(r" STALL \d+/\d+ .* ([0-9.]+) ms: cpu ([0-9.]+) blocked ([0-9.]+) "
                        r"runq ([0-9.]+) ms;")


def breakdowns_over(lines, text=False):
    """The stalls among loopwatch's output lines whose parts add up to more than the
    stall (beyond printing's rounding): (duration, on CPU, blocked, run queue) in ms."""
    over = []
    for line in lines:
        if text:
            m = TEXT_STALL.search(line)
            parts = tuple(float(x) for x in m.groups()) if m else None
        elif line.get("type") == "stall":
            parts = (line["duration_ms"], line["oncpu_ms"], line["blocked_ms"], line["runq_ms"])
        else:
            parts = None
        slack = BREAKDOWN_SLACK_MS["text" if text else "json"]
        if parts and sum(parts[1:]) > parts[0] + slack:
            over.append(parts)
    return over


class Loopwatch:
    """loopwatch --json in the background; start() returns once BPF is attached. Every
    run's stalls are checked to add up (breakdowns_over) when it stops."""

    def __init__(self, ctx, *args, timeout=15, wrap=(), text=False):
        """wrap: a command loopwatch runs under (e.g. in its own mount namespace); text:
        its plain text output instead of JSON lines."""
        self.text = text
        self.cmd = list(wrap) + [ctx.loopwatch] + ([] if text else ["--json"]) + \
            [str(a) for a in args]
        self.timeout = timeout
        self.proc = None
        self.stderr = ""
        self.out = []
        self.err = []
        self.readers = []

    def _read(self, stream, lines, seen=None):
        for line in stream:
            lines.append(line)
            if seen and "tracing" in line:
                seen.set()
        if seen:
            seen.set()

    def _reader(self, stream, lines, seen=None):
        t = threading.Thread(target=self._read, args=(stream, lines, seen), daemon=True)
        t.start()
        self.readers.append(t)

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        # read as it comes: a full pipe would stall loopwatch until the target is gone.
        # (A reader thread, not select() on the stream: lines that came in one read wait
        # in the stream's buffer, where select() does not see them.)
        self._reader(self.proc.stdout, self.out)
        attached = threading.Event()
        self._reader(self.proc.stderr, self.err, attached)
        attached.wait(self.timeout)
        if any("tracing" in line for line in self.err):
            return self
        self.proc.kill()
        self.proc.wait()
        for t in self.readers:
            t.join(5)
        raise AssertionError("loopwatch did not attach: %r (cmd %s)" % (
            "".join(self.err), self.cmd))

    def stop(self, sig=None, timeout=60):
        """Wait for exit (or send sig first); return the parsed JSON lines (text: the
        lines as printed)."""
        if sig is not None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=timeout)
        for t in self.readers:
            t.join(timeout)
        self.stderr += "".join(self.err)
        assert self.proc.returncode == 0, "loopwatch exited %d: %s" % (
            self.proc.returncode, self.stderr[-2000:])
        if self.text:
            lines = [line.rstrip("\n") for line in self.out]
        else:
            lines = [json.loads(line) for line in self.out if line.strip()]
        over = breakdowns_over(lines, self.text)
        assert not over, "stalls whose parts exceed them (ms: duration, cpu, blocked, " \
            "runq): %s" % over
        return lines

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Workload:
    """A test workload that prints its pid and, with --go, waits for a line on stdin."""

    def __init__(self, argv, go=True):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.pid = int(self.proc.stdout.readline())
        self.go_sent = not go

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.go_sent = True

    def wait(self, timeout=120):
        self.proc.wait(timeout=timeout)
        assert self.proc.returncode == 0, "workload exited %d" % self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# an alert line: when it was raised (RFC 3339, UTC, ms), then the alert
ALERT_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) loopwatch: ALERT (.*)$")


def alert_lines(text):
    """(unix seconds, the alert after "loopwatch: ALERT ") of each alert line; any other
    line that says ALERT fails: no line is half an alert."""
    out = []
    for line in text.splitlines():
        if "ALERT" not in line:
            continue
        m = ALERT_LINE.match(line)
        assert m, "not an alert line: %r" % line
        ts = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        out.append((ts, m.group(2)))
    return out


def xlated(prog_id):
    """One BPF program as the kernel translated it (bpftool's listing, lines; [] if it
    is gone): what it calls, helpers and subprograms, after the verifier's rewrites."""
    return subprocess.run(["bpftool", "prog", "dump", "xlated", "id", str(prog_id)],
                          capture_output=True, text=True, timeout=60).stdout.splitlines()


def tmpfile(suffix=".json"):
    fd, path = tempfile.mkstemp(prefix="loopwatch-test-", suffix=suffix)
    os.close(fd)
    return path


def of_type(lines, kind, **match):
    return [l for l in lines if l.get("type") == kind and
            all(l.get(k) == v for k, v in match.items())]


def multi_links(pid):
    """The process's uprobe_multi links as the kernel shows them: (path, uprobes) each.
    (Kernels before 6.6 have none: loopwatch attaches a link per function there.)"""
    out = []
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = f.read()
        except OSError:
            continue
        if re.search(r"^link_type:\s+u(ret)?probe_multi$", info, re.M):
            out.append((re.search(r"^path:\s+(.*)$", info, re.M).group(1),
                        int(re.search(r"^uprobe_cnt:\s+(\d+)", info, re.M).group(1))))
    return out


def uprobes_of(pid):
    """How many uprobes and uretprobes the process has attached, as the kernel says: its
    uprobe_multi links' counts (their /proc fdinfo) and its single ones (bpftool perf)."""
    n = sum(count for _, count in multi_links(pid))
    r = subprocess.run(["bpftool", "perf", "show"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True, timeout=30)
    return n + sum(1 for l in r.stdout.splitlines()
                   if l.split()[:2] == ["pid", str(pid)] and ("uprobe" in l or "uretprobe" in l))


def fds_of(pid):
    """How many fds the process holds."""
    return len(os.listdir("/proc/%d/fd" % pid))


def wait_for_uprobes(pid, timeout=30):
    """Until loopwatch has attached its probes: at least one entry/return pair, and
    no new one for half a second. A loaded host may take seconds to get there."""
    deadline, last, since = time.time() + timeout, -1, time.time()
    while time.time() < deadline:
        n = uprobes_of(pid)
        if n != last:
            last, since = n, time.time()
        elif n >= 2 and time.time() - since >= 0.5:
            return n
        time.sleep(0.1)
    raise AssertionError("loopwatch attached %d uprobes in %d s" % (last, timeout))


def run_traced(ctx, argv, *flags, settle=0.0, duration=60, wrap=(), with_stderr=False,
               text=False, probes=False, before=None, started=None):
    """Start a --go workload, attach `loopwatch --json -p PID` with flags, let it settle
    (so loopwatch sees the loop first), send go, wait for both: (pid, lines), plus
    loopwatch's stderr when with_stderr. text: its plain text lines instead of JSON.
    probes: wait for loopwatch to attach its uprobes (to the workload's libraries).
    before(pid): called before loopwatch starts (to move the workload into a cgroup);
    started(loopwatch's pid): once it says it is tracing."""
    w = Workload(argv)
    lw = Loopwatch(ctx, "-p", w.pid, "-d", duration, *flags, wrap=wrap, text=text)
    try:
        if before:
            before(w.pid)
        lw.start()
        if started:
            started(lw.proc.pid)
        if probes:
            wait_for_uprobes(lw.proc.pid)
        if settle:
            time.sleep(settle)
        w.go()
        w.wait()
        lines = lw.stop()
    finally:
        w.kill()
        lw.kill()
    return (w.pid, lines, lw.stderr) if with_stderr else (w.pid, lines)


def write_script(path, text):
    """An executable shell script at path."""
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + text)
    os.chmod(path, 0o755)
    return path


def load_truth(path):
    """A workload's ground-truth JSON file, removed once read."""
    with open(path) as f:
        truth = json.load(f)
    os.unlink(path)
    return truth


def serve_traced(ctx, argv, drive, *flags, seconds=5, system_wide=False, before=None,
                 env=None, interrupt=False, with_stderr=False, cwd=None, text=False):
    """Start a program that prints one number first (a server: its port), call
    before(number) if given, trace it (-p, or the whole machine), call drive(number)
    and stop (at the end of -d seconds, or at once with SIGINT when interrupt):
    (pid, what drive returned, loopwatch's lines), plus its stderr when with_stderr.
    cwd: where the program runs; text: loopwatch's plain text instead of JSON."""
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, **env) if env else None, cwd=cwd)
    lw = None
    try:
        port = int(server.stdout.readline())
        if before:
            before(port)
        target = () if system_wide else ("-p", server.pid)
        lw = Loopwatch(ctx, *target, "-d", seconds, *flags, text=text).start()
        result = drive(port) if drive else None
        lines = lw.stop(signal.SIGINT if interrupt else None)
    finally:
        server.kill()
        server.wait()
        if lw:
            lw.kill()
    if with_stderr:
        return server.pid, result, lines, lw.stderr
    return server.pid, result, lines


def line_requests(port, n, pause=0.05):
    """n requests to a line server on loopback ("x\\n" in, a line back), pause apart."""
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"x\n")
            s.recv(16)
        time.sleep(pause)


# cgroup v2: the unified tree of a hybrid host, or the whole of /sys/fs/cgroup
CGROUP2 = ("/sys/fs/cgroup/unified"
           if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else "/sys/fs/cgroup")


class Cgroups:
    """Cgroup directories made in the v2 tree (paths as /proc/PID/cgroup shows them),
    processes moved into them, everything removed again by cleanup()."""

    def __init__(self):
        self.made = []

    def make(self, path):
        """path: "/a/b/c" under the v2 root; every missing level is made."""
        parts = [p for p in path.split("/") if p]
        for i in range(1, len(parts) + 1):
            d = os.path.join(CGROUP2, *parts[:i])
            if not os.path.isdir(d):
                os.mkdir(d)
                self.made.append(d)
        return path

    def move(self, pid, path):
        self.make(path)
        with open(os.path.join(CGROUP2, path.lstrip("/"), "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def cleanup(self):
        """rmdir deepest first; a directory still holding a process is left, and said."""
        left = []
        for d in sorted(self.made, key=len, reverse=True):
            for _ in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                left.append(d)
        self.made = []
        assert not left, "cgroups still busy: %s" % left


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """Debian's prometheus on loopback, scraping `targets` (host:port) every
    `interval` as job "loopwatch", its TSDB in a temp directory."""

    def __init__(self, targets, interval="1s"):
        self.dir = tempfile.mkdtemp(prefix="loopwatch-prometheus-")
        self.port = free_port()
        self.api = "http://127.0.0.1:%d/api/v1/" % self.port
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: %s\n  scrape_timeout: %s\n"
                    "scrape_configs:\n  - job_name: loopwatch\n    static_configs:\n"
                    "      - targets: [%s]\n" % (interval, interval,
                                                  ", ".join("'%s'" % t for t in targets)))
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + config, "--storage.tsdb.path=" +
             os.path.join(self.dir, "data"), "--web.listen-address=127.0.0.1:%d" % self.port],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def query_raw(self, expr, timeout=5):
        """An instant query: the API's result list as it comes."""
        import urllib.parse
        import urllib.request
        url = self.api + "query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def query(self, expr, timeout=5):
        """An instant query: [(labels, float value)]."""
        return [(s["metric"], float(s["value"][1])) for s in self.query_raw(expr, timeout)]

    def wait(self, expr, pred, timeout=60):
        """Until pred(query(expr)) holds: its result, or an AssertionError."""
        deadline, last = time.time() + timeout, None
        while time.time() < deadline:
            assert self.proc.poll() is None, "prometheus exited: %s" % self.proc.stderr.read()
            try:
                last = self.query(expr)
                if pred(last):
                    return last
            except OSError as e:
                last = e
            time.sleep(0.5)
        raise AssertionError("prometheus: %s never satisfied the test, last %r" % (expr, last))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        import shutil
        shutil.rmtree(self.dir, ignore_errors=True)
def user_funcs(frames):
    """The names of a stack's frames below the kernel's, leaf first."""
    return [f["func"] for f in frames if f["kind"] != "kernel"]


def in_order(names, chain):
    """Every name of chain (leaf first) appears in names, in that order."""
    it = iter(names)
    return all(any(n == c for n in it) for c in chain)


def node_native(ctx, node_flags, routes, *flags, text=False):
    """node_native.js under loopwatch -p: each route requested in turn, three times, only
    once loopwatch is attached. (pid, node's own timings, loopwatch's lines; text: its
    plain text)."""
    d = tempfile.mkdtemp(prefix="loopwatch-node-")
    argv = ["/usr/bin/node"] + list(node_flags) + [os.path.join(APPS_DIR, "node_native.js")]

    def drive(port):
        for _ in range(3):
            for r in routes:
                urllib.request.urlopen("http://127.0.0.1:%d/%s" % (port, r), timeout=30).read()
        return json.loads(urllib.request.urlopen("http://127.0.0.1:%d/truth" % port).read())

    pid = None
    try:
        # 5 ms: a route on a fast, idle machine still stalls
        pid, truth, lines = serve_traced(ctx, argv, drive, "--threshold", 5, *flags, seconds=5,
                                         cwd=d, text=text)
        return pid, truth, lines
    finally:
        # node --perf-basic-prof leaves its map and an isolate log behind
        shutil.rmtree(d, ignore_errors=True)
        if pid and os.path.exists("/tmp/perf-%d.map" % pid):
            os.unlink("/tmp/perf-%d.map" % pid)


REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def distro_root(suite):
    """The cached Debian root of suite (tools/testroot.sh builds it the first time):
    its path. A root that cannot be had fails the test; there is no skip."""
    r = subprocess.run([os.path.join(REPO, "tools", "testroot.sh"), suite],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0 and r.stdout.strip().startswith("/"), \
        "tools/testroot.sh %s: %s" % (suite, r.stderr.strip()[-500:])
    return r.stdout.strip()


class RootMounts:
    """For a with block: /proc and tests/apps (read-only, as /lwapps) bound into a
    root for the programs started there, unmounted again however the block ends."""

    def __init__(self, root):
        self.root = root
        self.done = []

    def bind(self, src, dst, readonly=False):
        os.makedirs(dst, exist_ok=True)
        subprocess.run(["mount", "--bind", src, dst], check=True)
        self.done.append(dst)
        if readonly:
            subprocess.run(["mount", "-o", "remount,bind,ro", dst], check=True)

    def __enter__(self):
        try:
            self.bind("/proc", os.path.join(self.root, "proc"))
            self.bind(APPS_DIR, os.path.join(self.root, "lwapps"), readonly=True)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for dst in reversed(self.done):
            subprocess.run(["umount", "-l", dst])
        self.done = []
        return False

"""Running on a fleet: the scrape endpoint read by a real Prometheus, textfile and
endpoint agreeing, series of churned cgroups expiring, service identity labels, slow
scrapers, the hardened unit's syscall filter, rules, dashboard and manifests."""
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from lwtest import Cgroups, PrometheusServer, Workload, arrival_excess, free_port, tmpfile
from test_prom import (PromLoopwatch, ground_truth, one, parse_exposition, parse_labels,
                       read_metrics, select)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LES = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
# a kernel bucket is at most 1/32 of its lower bound wide, and the kernel's iteration
# includes the syscall return the workload does not time: see test_prom
BUCKET_WIDTH = 1 / 32


def get(url, accept=None, timeout=10):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def openmetrics_samples(text):
    """OpenMetrics 1.0 text: ends in # EOF; counter families are named without _total."""
    assert text.endswith("# EOF\n"), text[-200:]
    samples, typed = [], {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert not (kind == "counter" and name.endswith("_total")), line
            typed[name] = kind
        elif line and not line.startswith("#"):
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
            assert m, line
            family = re.sub(r"_(bucket|sum|count|total)$", "", m.group(1))
            assert m.group(1) in typed or family in typed, "no TYPE for %s" % m.group(1)
            samples.append((m.group(1), parse_labels(m.group(2) or ""), float(m.group(3))))
    return samples


def histogram_quantile(q, buckets):
    """Prometheus' histogram_quantile on [(le, cumulative count)], +Inf last."""
    total = buckets[-1][1]
    rank = q * total
    prev_le, prev_count = 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * (rank - prev_count) / (count - prev_count)
        prev_le, prev_count = le, count
    return prev_le


def truth_buckets(busy_ns, stretch):
    """Cumulative le counts of the workload's own durations, each stretched as the
    kernel may see it (0: as timed; 1: the most the kernel adds)."""
    out = []
    for le in LES:
        bound = le * 1e9 * (1 - BUCKET_WIDTH * stretch) - 50000 * stretch
        out.append((le, sum(1 for b in busy_ns if b <= bound)))
    return out + [(float("inf"), len(busy_ns))]


def arrival_buckets(busy_ns, span_ns):
    """loopwatch_loop_arrival_lag_seconds' buckets for these iterations over span_ns:
    the seconds at which an arriving event waits at most le (le 0 first), +Inf last."""
    span = span_ns / 1e9
    return [(le, span - arrival_excess(busy_ns, le * 1e9) / 1e9) for le in [0.0] + LES] + \
        [(float("inf"), span)]


def test_fleet_prometheus_reads_quantiles_matching_ground_truth(ctx):
    """A real Prometheus scrapes --listen on loopback every second (OpenMetrics, as it
    asks); histogram_quantile over the scraped buckets, read back through its HTTP API,
    matches the same quantile of the workload's own iteration times in the same buckets,
    per iteration and arrival-weighted;
    the textfile, the text endpoint and the OpenMetrics endpoint hold the same samples."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    out = tmpfile()
    port = free_port()
    w = Workload([ctx.workload("loopwork"), out, "mixed", "3000", "--go"])
    # not -p: loopwatch would stop with the workload, before the last scrape
    lw = PromLoopwatch(ctx, tmp, "--comm", "loopwork", "--listen", "127.0.0.1:%d" % port,
                       interval=0.5)
    prom = None
    try:
        lw.start()
        prom = PrometheusServer(["127.0.0.1:%d" % port])
        prom.wait('up{job="loopwatch"}', lambda r: r and r[0][1] == 1)
        w.go()
        w.wait()
        thread = ground_truth(out)["threads"][0]
        busy_ns = thread["busy_ns"]
        n = len(busy_ns)
        # this build's loopwork: other checkouts' tests may run theirs meanwhile
        sel = '{job="loopwatch",comm="loopwork",exe="%s"}' % os.path.realpath(
            ctx.workload("loopwork"))
        # until a scrape after the workload's last iteration is in
        got = prom.wait("loopwatch_loop_iterations_total" + sel,
                        lambda r: r and abs(r[0][1] - n) <= 0.01 * n)
        assert got[0][0]["instance"] == "127.0.0.1:%d" % port, got
        time.sleep(1.5)
        for q in (0.5, 0.9, 0.99):
            (labels, value), = prom.query("histogram_quantile(%g, sum by (le) "
                                          "(loopwatch_loop_iteration_seconds_bucket%s))" % (q, sel))
            exact = histogram_quantile(q, truth_buckets(busy_ns, 0))
            stretched = histogram_quantile(q, truth_buckets(busy_ns, 1))
            lo, hi = min(exact, stretched), max(exact, stretched)
            print("p%g: prometheus %.6f s, workload's durations in the same buckets %.6f s"
                  " (%.6f with the kernel's margin)" % (q * 100, value, exact, stretched))
            assert lo * 0.97 - 1e-5 <= value <= hi * 1.03 + 1e-5, \
                "p%g: Prometheus says %.6f s, the workload's durations %.6f..%.6f s" % (
                    q * 100, value, lo, hi)
        # the arrival-weighted lag, a histogram of time: the same interpolation over the
        # workload's own iterations and span (each with what its waits' edges may add)
        edge = thread["edge_ns"]
        stretched_ns = [b + edge[i] + edge[i + 1] for i, b in enumerate(busy_ns)]
        for q in (0.9, 0.99):
            (labels, value), = prom.query(
                "histogram_quantile(%g, sum by (le) (loopwatch_loop_arrival_lag_seconds_bucket%s))"
                % (q, sel))
            lo, hi = (histogram_quantile(q, arrival_buckets(d, thread["span_ns"]))
                      for d in (busy_ns, stretched_ns))
            print("arrival p%g: prometheus %.6f s, the workload's iterations %.6f..%.6f s" % (
                q * 100, value, lo, hi))
            assert lo * 0.97 - 1e-5 <= value <= hi * 1.03 + 1e-5, \
                "arrival p%g: Prometheus says %.6f s, the workload's %.6f..%.6f s" % (
                    q * 100, value, lo, hi)

        # the three outputs of one registry, once nothing moves any more
        _, ctype, text = get("http://127.0.0.1:%d/metrics" % port)
        assert ctype.startswith("text/plain; version=0.0.4"), ctype
        _, ctype, om = get("http://127.0.0.1:%d/metrics" % port,
                           accept="application/openmetrics-text;version=1.0.0")
        assert ctype.startswith("application/openmetrics-text; version=1.0.0"), ctype
        time.sleep(1.2)
        filed = read_metrics(lw.path)
        scraped = parse_exposition(text)
        om_samples = openmetrics_samples(om)

        exe = os.path.realpath(ctx.workload("loopwork"))

        def loops(samples):
            return {(name, tuple(sorted(l.items()))): v for name, l, v in samples
                    if l.get("exe") == exe}
        a, b, c = loops(filed), loops(scraped), loops(om_samples)
        assert a and a == b == c, "textfile %d, endpoint %d, OpenMetrics %d samples; differ: %s" % (
            len(a), len(b), len(c), sorted(set(a.items()) ^ set(b.items()))[:6])
        print("textfile, /metrics and OpenMetrics agree on %d samples" % len(a))
        status, _, body = get("http://127.0.0.1:%d/healthz" % port)
        assert status == 200 and body == "ok\n", (status, body)
        lw.stop(signal.SIGTERM)
    finally:
        w.kill()
        lw.kill()
        if prom:
            prom.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def cleanup(procs, lw, outs, cgroups):
    """Workloads and loopwatch killed, ground-truth files removed, cgroups emptied."""
    for p in procs:
        p.kill()
    lw.kill()
    for o in outs:
        if os.path.exists(o):
            os.unlink(o)
    time.sleep(0.2)
    cgroups.cleanup()


def scrape_text(port, timeout=10):
    return parse_exposition(get("http://127.0.0.1:%d/metrics" % port, timeout=timeout)[2])


def test_fleet_churned_cgroups_expire_and_survivors_stay_monotonic(ctx):
    """50 short-lived loop processes, each in its own cgroup (a scope, like pods or
    systemd-run): each one's series is there while it runs and gone within the
    staleness window (--prom-stale 3) after it exits; a loop that lives through the
    churn keeps its series, and none of its counters ever goes back."""
    cg = Cgroups()
    base = "/lwtest-churn-%d" % os.getpid()
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    stale = 3.0
    lw = PromLoopwatch(ctx, tmp, "--comm", "loopwork", "--listen", "127.0.0.1:%d" % port,
                       "--prom-stale", stale, interval=0.5)
    survivor, churn = None, []
    outs = []
    last_seen = {}

    def check_survivor(samples):
        for name, labels, v in samples:
            # counters and histogram parts: gauges (busy now) go up and down
            # this run's survivor: another suite's on the machine has the same service
            if labels.get("cgroup") == base + "/survivor.service" and \
                    re.search(r"_(total|bucket|count|sum)$", name):
                key = (name, labels.get("le"))
                assert v >= last_seen.get(key, 0), "%s %s went back: %g -> %g" % (
                    name, labels, last_seen[key], v)
                last_seen[key] = v

    def churn_services(samples):
        return {l.get("service") for l, _ in select(samples, "loopwatch_loop_iterations_total")
                if l.get("cgroup", "").startswith(base + "/")} - {"survivor.service"}

    try:
        lw.start()
        out = tmpfile()
        outs.append(out)
        survivor = Workload([ctx.workload("loopwork"), out, "fixed3", "100000", "--go"])
        cg.move(survivor.pid, base + "/survivor.service")
        survivor.go()
        seen_alive, exit_time = set(), {}
        for batch in range(5):
            procs = []
            for i in range(10):
                k = batch * 10 + i
                out = tmpfile()
                outs.append(out)
                # 5 ms an iteration (3 ms busy on a 2 ms timer): 300 take about 1.5 s
                p = Workload([ctx.workload("loopwork"), out, "fixed3", "300", "--go"])
                cg.move(p.pid, "%s/churn-%d.scope" % (base, k))
                procs.append((k, p))
                churn.append(p)
            for _, p in procs:
                p.go()
            pending = {k for k, _ in procs}
            deadline = time.time() + 60
            while pending and time.time() < deadline:
                samples = scrape_text(port)
                check_survivor(samples)
                alive = churn_services(samples)
                for k, p in procs:
                    if "churn-%d.scope" % k in alive:
                        seen_alive.add(k)
                    if k in pending and p.proc.poll() is not None:
                        exit_time[k] = time.time()
                        pending.discard(k)
                time.sleep(0.2)
            for _, p in procs:
                p.wait()
        assert seen_alive == set(range(50)), "never seen alive: %s" % sorted(
            set(range(50)) - seen_alive)
        # gone within the window (plus an interval to see the exit, a write to drop it)
        gone_by = max(exit_time.values()) + stale + 2.5
        while time.time() < gone_by:
            samples = scrape_text(port)
            check_survivor(samples)
            time.sleep(0.3)
        samples = scrape_text(port)
        check_survivor(samples)
        left = churn_services(samples)
        assert not left, "%d churned series still there %.1f s after the last exit: %s" % (
            len(left), stale + 2.5, sorted(left)[:5])
        # by its own cgroup: another suite's survivor may share the service name
        _, it = one(samples, "loopwatch_loop_iterations_total",
                    cgroup=base + "/survivor.service")
        assert it > 0 and last_seen, "the survivor's series"
        expired = one(samples, "loopwatch_series_expired_total")[1]
        assert expired >= 50, "loopwatch_series_expired_total %d" % expired
        print("50 churned cgroups: all seen alive, all gone %.1f s after the last exit; "
              "%d series expired; the survivor's %d counters never went back" % (
                  stale + 2.5, expired, len(last_seen)))
        lw.stop(signal.SIGTERM)
    finally:
        cleanup(churn + ([survivor] if survivor else []), lw, outs, cg)
        shutil.rmtree(tmp, ignore_errors=True)


CID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abc%03x"
UID = "1d2c3b4a-0000-4111-8222-333344445%03x"


def test_fleet_service_labels_from_systemd_and_kubernetes_cgroups(ctx):
    """A loop in a systemd-scope-shaped cgroup gets service="<scope>"; one in a
    Kubernetes-shaped one (kubepods.slice/…pod<uid>.slice/cri-containerd-<id>.scope,
    made in this host's v2 tree) gets pod_uid and container_id, and namespace, pod and
    container from kubelet's log directory names (--kubelet-logs)."""
    cg = Cgroups()
    tag = os.getpid() % 4096
    cid, uid = CID % tag, UID % tag
    base = "/lwtest-svc-%d" % os.getpid()
    scope = base + "/lwtest.slice/lwtest-web-%d.scope" % tag
    pod = (base + "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/"
           "cri-containerd-%s.scope" % (uid.replace("-", "_"), cid))
    logs = tempfile.mkdtemp(prefix="loopwatch-kubelet-")
    os.mkdir(os.path.join(logs, "containers"))
    os.mkdir(os.path.join(logs, "pods"))
    open(os.path.join(logs, "containers", "checkout-7d9f-x2x_shop_api-%s.log" % cid), "w").close()
    os.mkdir(os.path.join(logs, "pods", "shop_checkout-7d9f-x2x_%s" % uid))
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    lw = PromLoopwatch(ctx, tmp, "--comm", "loopwork", "--listen", "127.0.0.1:%d" % port,
                       "--kubelet-logs", logs, interval=0.5)
    ws, outs = [], []
    try:
        lw.start()
        for path in (scope, pod):
            outs.append(tmpfile())
            w = Workload([ctx.workload("loopwork"), outs[-1], "fixed3", "400", "--go"])
            cg.move(w.pid, path)
            with open("/proc/%d/cgroup" % w.pid) as f:
                assert "0::%s\n" % path in f.read(), "not moved into %s" % path
            w.go()
            ws.append(w)
        for w in ws:
            w.wait()
        deadline = time.time() + 15
        while time.time() < deadline:
            samples = read_metrics(lw.path)
            mine = [l for l, _ in select(samples, "loopwatch_loop_iterations_total")
                    if l.get("cgroup", "").startswith(base)]
            if len(mine) == 2:
                break
            time.sleep(0.3)
        by_cgroup = {l["cgroup"]: l for l in mine}
        assert set(by_cgroup) == {scope, pod}, by_cgroup
        s = by_cgroup[scope]
        assert s["service"] == "lwtest-web-%d.scope" % tag and "pod_uid" not in s, s
        k = by_cgroup[pod]
        want = {"service": "shop/api", "pod_uid": uid, "container_id": cid, "namespace": "shop",
                "pod": "checkout-7d9f-x2x", "container": "api"}
        assert {x: k.get(x) for x in want} == want, k
        print("systemd scope:", s)
        print("kubernetes pod:", k)
        # the endpoint says the same
        scraped = scrape_text(port)
        one(scraped, "loopwatch_loop_iterations_total", service="shop/api", pod_uid=uid)
        lw.stop(signal.SIGTERM)
    finally:
        cleanup(ws, lw, outs, cg)
        shutil.rmtree(logs, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)



def inotify_opens(path):
    """An inotify descriptor counting opens of the directory path itself (ctypes: the
    kernel's own count of who opened it, here only loopwatch)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    # IN_OPEN and IN_CLOSE_NOWRITE: events alternate, so none is merged with the one before
    assert fd >= 0 and libc.inotify_add_watch(fd, path.encode(), 0x20 | 0x10) >= 0
    return fd


def opens_of(fd):
    """The IN_OPEN events of the watched directory itself read so far from fd."""
    import struct
    n = 0
    while True:
        try:
            buf = os.read(fd, 65536)
        except BlockingIOError:
            return n
        off = 0
        while off < len(buf):
            _, mask, _, size = struct.unpack_from("iIII", buf, off)
            n += bool(mask & 0x20) and size == 0
            off += 16 + size


def test_fleet_kind_pods_labelled_and_kubelet_read_once_per_container(ctx):
    """A kind node's pod cgroup (the kubelet's slice prefixing kubelet-kubepods-…, 300+
    bytes, past the 255 of the label) still gives pod_uid, the innermost container_id and
    the kubelet's names; six loop processes of one pod container (six new loop threads)
    read the kubelet's 3,000-entry containers directory once, not six times (counted by
    inotify)."""
    cg = Cgroups()
    tag = os.getpid() % 4096
    cid, uid = CID % tag, UID % tag
    outer = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543%03x" % tag
    base = "/lwtest-kind-%d" % os.getpid()
    kind = (base + "/system.slice/docker-%s.scope/kubelet.slice/kubelet-kubepods.slice/"
            "kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod%s.slice/"
            "cri-containerd-%s.scope" % (outer, uid.replace("-", "_"), cid))
    assert len(kind) > 300, len(kind)
    cid2 = CID % ((tag + 1) % 4096)
    uid2 = UID % ((tag + 1) % 4096)
    pod = (base + "/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope" %
           (uid2.replace("-", "_"), cid2))
    logs = tempfile.mkdtemp(prefix="loopwatch-kubelet-")
    containers = os.path.join(logs, "containers")
    os.mkdir(containers)
    os.mkdir(os.path.join(logs, "pods"))
    for i in range(3000):
        open(os.path.join(containers, "other-%d_ns_c-%064x.log" % (i, i)), "w").close()
    open(os.path.join(containers, "web-0_kind_app-%s.log" % cid), "w").close()
    open(os.path.join(containers, "api-0_shop_api-%s.log" % cid2), "w").close()
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    lw = PromLoopwatch(ctx, tmp, "--comm", "loopwork", "--kubelet-logs", logs, interval=0.5)
    ino = inotify_opens(containers)
    ws, outs = [], []
    try:
        lw.start()
        for path in [kind] + [pod] * 6:
            outs.append(tmpfile())
            w = Workload([ctx.workload("loopwork"), outs[-1], "fixed3", "300", "--go"])
            cg.move(w.pid, path)
            w.go()
            ws.append(w)
        for w in ws:
            w.wait()
        deadline = time.time() + 15
        while time.time() < deadline:
            mine = [l for l, _ in select(read_metrics(lw.path),
                                         "loopwatch_loop_iterations_total")
                    if l.get("cgroup", "").startswith(base)]
            if len(mine) == 2:
                break
            time.sleep(0.3)
        lw.stop(signal.SIGTERM)
        by_uid = {l.get("pod_uid"): l for l in mine}
        assert set(by_uid) == {uid, uid2}, mine
        k = by_uid[uid]
        want = {"service": "kind/app", "pod_uid": uid, "container_id": cid,
                "namespace": "kind", "pod": "web-0", "container": "app"}
        assert {x: k.get(x) for x in want} == want, k
        assert k["cgroup"] == kind[:252] + "...", k["cgroup"]
        assert by_uid[uid2].get("service") == "shop/api", by_uid[uid2]
        opens = opens_of(ino)
        print("kubelet containers directory opened %d times for 7 loop processes" % opens)
        # one read per pod container: the kind pod's and the six processes' shared one
        assert opens == 2, "%d opens for 2 pod containers" % opens
    finally:
        os.close(ino)
        cleanup(ws, lw, outs, cg)
        shutil.rmtree(logs, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def test_fleet_a_loop_gone_before_the_interval_keeps_its_labels(ctx):
    """Eight short-lived Python loops (named lwshort, in a cgroup of their own), each
    gone long before the next 3-second interval drains it: their iterations count under
    their own exe and cgroup (read at their first wait), none under exe="" and
    cgroup="", and all of them are counted (the loops' own tally). Each waits 1 s first,
    so loopwatch reads its labels while it lives: one gone before loopwatch gets to its
    first wait has none (docs/limits.md). The main loop may be setting up the one before
    meanwhile (uprobes take 0.5-1 s to attach on a loaded host); their detaching, which
    also waits on the kernel, is done by a thread of its own (tracker/reaper.c)."""
    cg = Cgroups()
    path = cg.make("/lwtest-short-%d/app.scope" % os.getpid())
    script = ("import ctypes, os, select, sys\n"
              "ctypes.CDLL(None).prctl(15, b'lwshort', 0, 0, 0)\n"
              "ep = select.epoll()\n"
              "n = 0\n"
              "ep.poll(1.0)\n"
              "for _ in range(60):\n"
              "    ep.poll(0.002)\n"
              "    n += 1\n"
              "print(n, flush=True)\n")
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    lw = PromLoopwatch(ctx, tmp, "--comm", "lwshort", "-i", 3, "--prom-min-iterations", 0,
                       interval=3)
    procs = []
    try:
        lw.start()
        time.sleep(1.0)
        for _ in range(8):
            # moved into the cgroup before it runs: sh waits for its line, then execs
            p = subprocess.Popen(["/bin/sh", "-c", "read go; exec %s -c \"$0\"" %
                                  sys.executable, script], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            cg.move(p.pid, path)
            procs.append(p)
        ran = 0
        for p in procs:
            out, _ = p.communicate("go\n", timeout=60)
            ran += int(out)
        # two intervals later every one of them is drained, long gone
        time.sleep(6.5)
        series = select(read_metrics(lw.path), "loopwatch_loop_iterations_total",
                        comm="lwshort")
        lw.stop(signal.SIGTERM)
        exe = os.path.realpath(sys.executable)
        print("series:", series, "iterations the loops ran:", ran)
        assert [l for l, _ in series if not l.get("exe") or not l.get("cgroup")] == [], series
        assert [(l["exe"], l["cgroup"]) for l, _ in series] == [(exe, path)], series
        # each loop's last wait is no iteration of the kernel's count (none followed)
        assert ran - 8 <= series[0][1] <= ran, (series, ran)
    finally:
        for p in procs:
            p.kill()
        lw.kill()
        time.sleep(0.2)
        cg.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)

class IntervalClock:
    """loopwatch --json -i 0.2 with the given flags, its stdout read as it comes: the
    wall times loopwatch itself stamped on its interval lines, one per collection."""

    def __init__(self, ctx, *flags):
        import threading
        self.stamps = []
        self.proc = subprocess.Popen([ctx.loopwatch, "--json", "-i", "0.2"] +
                                     [str(f) for f in flags], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.proc.stdout:
            if '"type":"interval"' in line:
                ts = json.loads(line)["ts"]
                if not self.stamps or ts != self.stamps[-1]:
                    self.stamps.append(ts)

    def gaps(self, seconds):
        """The gaps between collections over the next `seconds`."""
        first = len(self.stamps)
        time.sleep(seconds)
        got = self.stamps[first:]
        return [b - a for a, b in zip(got, got[1:])]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_fleet_stuck_scrapers_do_not_delay_collection(ctx):
    """Collection every 0.2 s, timed by loopwatch's own interval stamps (a reader of ours
    starved on a loaded host cannot skew them), for 8 s with no scraper and 8 s while 40
    clients connect and never send and 16 send a /metrics request and never read (a
    4 KiB receive window: the answer cannot leave): the gaps stay at the interval
    (median, 90th percentile), a real scrape during the attack is answered, and the
    stuck connections are cut and counted."""
    port = free_port()
    out = tmpfile()
    # a loop that is always active, so that every interval has a line
    w = Workload([ctx.workload("loopwork"), out, "fixed3", "1000000", "--go"])
    w.go()
    # every thread of the machine with pid labels: a large answer
    lw = IntervalClock(ctx, "--listen", "127.0.0.1:%d" % port, "--prom-per-pid",
                       "--prom-min-iterations", "0", "-d", "60")
    socks = []
    try:
        deadline = time.time() + 20
        while len(lw.stamps) < 5:
            assert time.time() < deadline and lw.proc.poll() is None, "no intervals"
            time.sleep(0.1)
        before = lw.gaps(8)
        size = len(get("http://127.0.0.1:%d/metrics" % port)[2])
        for _ in range(40):
            socks.append(socket.create_connection(("127.0.0.1", port)))
        for _ in range(16):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
        t0 = time.time()
        status, _, body = get("http://127.0.0.1:%d/metrics" % port, timeout=10)
        scrape_s = time.time() - t0
        during = lw.gaps(8)
        samples = parse_exposition(get("http://127.0.0.1:%d/metrics" % port)[2])
        dropped = one(samples, "loopwatch_scrape_connections_dropped_total")[1]
        p90 = sorted(during)[int(0.9 * len(during))]
        print("answer %d bytes; gaps between collections without scrapers: median %.3f s, "
              "max %.3f s; with 56 stuck connections: median %.3f s, p90 %.3f s, max %.3f s; "
              "a real scrape then took %.3f s; %d connections cut" % (
                  size, statistics.median(before), max(before), statistics.median(during),
                  p90, max(during), scrape_s, dropped))
        assert status == 200 and len(body) > 1000 and scrape_s < 2.0, (status, scrape_s)
        assert len(during) >= 25, "only %d collections in 8 s" % len(during)
        assert statistics.median(during) < 0.3 and p90 < 0.5, \
            "collection was held up: gaps %s (before: %s)" % (during, before)
        # 56 stuck connections and a slot for 16: the oldest are pushed out
        assert dropped >= 40, "only %d connections cut" % dropped
    finally:
        for s in socks:
            s.close()
        lw.kill()
        w.kill()
        if os.path.exists(out):
            os.unlink(out)


def test_fleet_endpoint_answers_and_refuses_clearly(ctx):
    """/healthz, /, 404, 405 for POST, 400 for garbage, HEAD without a body; a port in
    use or a bad --listen: exit status 2 and one line, before tracing starts."""
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    port = free_port()
    lw = PromLoopwatch(ctx, tmp, "--listen", "127.0.0.1:%d" % port, "-p", os.getpid())
    try:
        lw.start()
        assert get("http://127.0.0.1:%d/healthz" % port)[:3:2] == (200, "ok\n")
        assert get("http://127.0.0.1:%d/" % port)[0] == 200
        for method, path, want in (("GET", "/nope", 404), ("POST", "/metrics", 405)):
            req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method)
            try:
                urllib.request.urlopen(req, timeout=5)
                raise AssertionError("%s %s answered 2xx" % (method, path))
            except urllib.error.HTTPError as e:
                assert e.code == want, (method, path, e.code)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"\x16\x03\x01\x00\x05hello\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 400 "), "garbage"
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"HEAD /metrics HTTP/1.0\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ") and b"Content-Length: " in head and \
                body == b"", data[:300]
        # the port is taken now
        r = subprocess.run([ctx.loopwatch, "--listen", "127.0.0.1:%d" % port, "-d", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=20)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and \
            "Address already in use" in r.stderr, r
        lw.stop(signal.SIGTERM)
    finally:
        lw.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    for bad in ("9977", "127.0.0.1:0", "127.0.0.1:70000", "[::1:9977", "nonexistent.invalid:9977"):
        r = subprocess.run([ctx.loopwatch, "--listen", bad, "-d", "1"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and \
            "tracing" not in r.stderr, (bad, r)


def syscall_closure(groups):
    """Every syscall name a SystemCallFilter= list allows, groups expanded."""
    allowed, todo = set(), list(groups)
    while todo:
        g = todo.pop()
        if not g.startswith("@"):
            allowed.add(g)
            continue
        out = subprocess.run(["systemd-analyze", "syscall-filter", g], stdout=subprocess.PIPE,
                             text=True, check=True).stdout
        for line in out.splitlines():
            line = line.strip()
            if not line or line.startswith("#") or line == g:
                continue
            if line.startswith("@"):
                todo.append(line)
            else:
                allowed.add(line)
    return allowed


def test_fleet_systemd_unit_hardened_and_its_filter_allows_every_syscall(ctx):
    """The unit's exposure (systemd-analyze security --offline) is at most 2.0; every
    syscall loopwatch makes in a run (strace -f, textfile and endpoint, a loop workload,
    its exit) is in the unit's SystemCallFilter; and loopwatch runs with only the
    unit's capability bounding set."""
    unit = os.path.join(REPO, "tools", "systemd", "loopwatch.service")
    r = subprocess.run(["systemd-analyze", "security", "--offline=yes", unit],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    m = re.search(r"Overall exposure level for loopwatch.service: ([0-9.]+)", r.stdout)
    assert m and float(m.group(1)) <= 2.0, r.stdout[-2000:]
    text = open(unit).read()
    groups = re.search(r"^SystemCallFilter=(.*)$", text, re.M).group(1).split()
    caps = re.search(r"^CapabilityBoundingSet=(.*)$", text, re.M).group(1).split()
    allowed = syscall_closure(groups)

    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    out = tmpfile()
    port = free_port()
    trace = os.path.join(tmp, "strace")
    w = Workload([ctx.workload("loopwork"), out, "mixed", "300", "--go"])
    exe = os.path.realpath(ctx.workload("loopwork"))
    bounding = "-all," + ",".join("+" + c[len("CAP_"):].lower() for c in caps)
    cmd = ["strace", "-f", "-qq", "-o", trace, "-e", "trace=all", "setpriv",
           "--bounding-set=" + bounding, ctx.loopwatch, "--quiet", "--comm", "loopwork",
           "--prom-file", os.path.join(tmp, "loopwatch.prom"), "--prom-interval", "0.3",
           "--listen", "127.0.0.1:%d" % port]
    lw = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(tmp, "loopwatch.prom")):
            assert lw.poll() is None and time.time() < deadline, lw.stderr.read()
            time.sleep(0.1)
        w.go()
        w.wait()
        # traced, loopwatch is slow: until its series is in
        deadline = time.time() + 20
        while not select(parse_exposition(get("http://127.0.0.1:%d/metrics" % port)[2]),
                         "loopwatch_loop_iterations_total", comm="loopwork", exe=exe):
            assert time.time() < deadline, "no loopwork series under strace"
            time.sleep(0.5)
        # loopwatch is strace's child (setpriv exec'ed it): stop it, strace follows
        with open("/proc/%d/task/%d/children" % (lw.pid, lw.pid)) as f:
            os.kill(int(f.read().split()[0]), signal.SIGTERM)
        lw.wait(timeout=60)
        assert lw.returncode == 0, lw.stderr.read()
        # from loopwatch's execve on: setpriv's own calls before it are systemd's job
        made, started = set(), False
        with open(trace) as f:
            for line in f:
                started = started or ('execve("%s"' % ctx.loopwatch) in line
                m = re.match(r"^\d+\s+([a-z0-9_]+)\(", line)
                if started and m:
                    made.add(m.group(1))
        missing = sorted(made - allowed)
        print("%d distinct syscalls in the run, all allowed: %s" % (len(made), not missing))
        assert not missing, "made but not allowed by SystemCallFilter=%s: %s" % (
            " ".join(groups), missing)
    finally:
        if lw.poll() is None:
            lw.kill()
        w.kill()
        if os.path.exists(out):
            os.unlink(out)
        shutil.rmtree(tmp, ignore_errors=True)


def test_fleet_rules_dashboard_and_manifests_validate(ctx):
    """promtool checks and unit-tests the rules (lag per service and host, hung loop,
    stalls, loopwatch's health); the dashboard and every manifest of the kustomize base
    validate against JSON Schemas generated from @grafana/schema and kubernetes-types
    (unknown fields are errors: a misspelt field is caught)."""
    d = os.path.join(REPO, "tools", "prometheus")
    for cmd in (["promtool", "check", "rules", "loopwatch.rules.yml"],
                ["promtool", "test", "rules", "loopwatch.rules.test.yml"]):
        r = subprocess.run(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        assert r.returncode == 0, "%s: %s" % (" ".join(cmd), r.stdout)
    rules = open(os.path.join(d, "loopwatch.rules.yml")).read()
    for name in ("LoopwatchLoopLagHigh", "LoopwatchLoopHung", "LoopwatchStallsFrequent",
                 "LoopwatchEventsDropped", "LoopwatchWriteFailing", "LoopwatchDown"):
        assert "alert: " + name in rules, name
    assert "by (comm, exe)" not in rules, "grouped by program alone"

    validate = os.path.join(REPO, "tools", "validate", "validate.js")
    deploy = os.path.join(REPO, "tools", "deploy")
    dashboard = os.path.join(REPO, "tools", "grafana", "loopwatch.json")
    manifests = sorted(os.path.join(deploy, f) for f in os.listdir(deploy) if f.endswith(".yaml"))
    r = subprocess.run(["node", validate, dashboard] + manifests, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    print(r.stdout)
    assert r.returncode == 0 and r.stdout.count("ok ") == 1 + len(manifests), r.stdout
    # the checker can fail: a misspelt field in the DaemonSet is caught
    tmp = tempfile.mkdtemp(prefix="loopwatch-fleet-")
    try:
        bad = os.path.join(tmp, "daemonset.yaml")
        with open(os.path.join(deploy, "daemonset.yaml")) as f:
            open(bad, "w").write(f.read().replace("hostPID:", "hostPid:"))
        r = subprocess.run(["node", validate, dashboard, bad], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        assert r.returncode == 1 and "hostPid" in r.stdout, r.stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_listen_is_said_to_be_unauthenticated_and_the_examples_bind_one_address(ctx):
    """--listen has no authentication: --help and the man page say so and that :PORT is
    every interface; the DaemonSet binds the pod's IP and the systemd drop-in one
    address (with a firewall allow-list), neither ":PORT"."""
    r = subprocess.run([ctx.loopwatch, "--help"], stdout=subprocess.PIPE, text=True,
                       timeout=20)
    usage = r.stdout[r.stdout.index("--listen ADDR:PORT"):]
    usage = " ".join(usage[:usage.index("\n      --", 1)].split())
    for said in ("every interface", "No authentication"):
        assert said in usage, usage
    man = open(os.path.join(REPO, "tools", "loopwatch.8")).read()
    man = man[man.index("\\-\\-listen"):]
    man = " ".join(man[:man.index(".TP")].split()).lower()
    for said in ("every interface", "no authentication"):
        assert said in man, man

    daemonset = open(os.path.join(REPO, "tools", "deploy", "daemonset.yaml")).read()
    assert re.findall(r"^\s+- --listen=(\S+)$", daemonset, re.M) == ["$(POD_IP):9977"], \
        daemonset
    assert "fieldPath: status.podIP" in daemonset, daemonset
    unit = open(os.path.join(REPO, "tools", "systemd", "loopwatch.service")).read()
    binds = re.findall(r"--listen (\S+)", unit)
    assert binds and not [b for b in binds if b.startswith(":")], binds
    assert re.search(r"^#\s+IPAddressAllow=\S", unit, re.M), unit


if __name__ == "__main__":
    sys.exit("run through tests/run.py: python3 tests/run.py --build build test_fleet")

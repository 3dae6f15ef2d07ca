"""Nested waits: a wait call made from inside a handler (a socket with a timeout,
subprocess, a second selector or loop) is busy time of the iteration and a blocking call,
not the loop's own idle wait. Real runtimes and C workloads, each recording its own ground
truth: the iteration that ran each request, the handler's own on-CPU and run-queue time."""
import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request

from lwtest import (Loopwatch, close_enough, load_truth, of_type, run_traced, serve_traced,
                    tmpfile)
from test_loop import assert_matches_truth
from test_python import find_frame, describe, tagged_lines

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")
THRESHOLD_MS = 5
REQUESTS = 6
BACKEND_DELAY_S = 0.05  # the backend's answer comes this long after the question


class SlowBackend:
    """A TCP server on loopback that answers each request after BACKEND_DELAY_S, with
    plain blocking sockets (no timeout, so no poll: only the server under test waits)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(64)
                time.sleep(BACKEND_DELAY_S)
                conn.sendall(b"y\n")

    def close(self):
        self.sock.close()


def line_session(port, requests):
    """One connection: a warm-up pause, `requests` work lines, then the stats line."""
    time.sleep(0.5)  # the loop's wait is seen and Python detected before the first request
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        f = s.makefile("rwb")
        for _ in range(requests):
            f.write(b"work\n")
            f.flush()
            assert f.readline() == b"ok\n"
            time.sleep(0.1)
        f.write(b"stats\n")
        f.flush()
        return json.loads(f.readline())


def http_session(port, requests):
    time.sleep(0.5)
    for _ in range(requests):
        body = urllib.request.urlopen("http://127.0.0.1:%d/work" % port, timeout=10).read()
        assert body == b"ok", body
        time.sleep(0.1)
    return json.loads(urllib.request.urlopen("http://127.0.0.1:%d/stats" % port,
                                             timeout=10).read())


def request_stalls(lines, pid, syscall):
    """The stalls that waited in the nested syscall, in order."""
    return sorted([s for s in of_type(lines, "stall", pid=pid)
                   if any(c["name"] == syscall for c in s["syscalls"])], key=lambda s: s["ts"])


def check_requests(stalls, reqs, by_iteration):
    """One stall per request, as long as the iteration the workload timed around it, or,
    where the runtime has no hook to time its iterations (uvloop, Node), at least as long
    as the handler in it, within 5 %. loopwatch's iteration starts at the wait call's
    return in the kernel, the workload's when its code runs again: on a loaded host the
    thread may wait for a CPU in between, which loopwatch counts as the stall's run-queue
    time, so that much longer is allowed. The handler's own sleeping (its time less its
    on-CPU and run-queue time, from its schedstat) is off-CPU time of the stall, and when
    it clearly dominated, the cause is "blocked"."""
    assert len(stalls) == len(reqs), "%d stalls for %d requests: %s" % (
        len(stalls), len(reqs), [(s["duration_ms"], s["cause"]) for s in stalls])
    ref = "iteration" if by_iteration else "handler"
    for stall, req in zip(stalls, reqs):
        got, want = stall["duration_ms"], req[ref + "_ns"] / 1e6
        assert 0.95 * want <= got <= 1.05 * want + stall["runq_ms"], \
            "stall %.2f ms, the workload's %s %.2f ms: %s %s" % (got, ref, want, stall, req)
        asleep = req["handler_ns"] - req["handler_oncpu_ns"] - req["handler_runq_ns"]
        assert stall["blocked_ms"] + stall["runq_ms"] >= 0.95 * asleep / 1e6, (stall, req)
        if asleep > 2 * max(req["handler_oncpu_ns"], req["handler_runq_ns"]):
            assert stall["cause"] == "blocked", (stall, req)


def python_server(ctx, mode, *runtime, backend=None):
    argv = ["/usr/bin/python3", os.path.join(APPS, "py_nested_server.py"), mode]
    if backend:
        argv += ["--backend", str(backend.port)]
    argv += list(runtime)
    session = http_session if "--tornado" in runtime else line_session
    pid, truth, lines = serve_traced(ctx, argv, lambda port: session(port, REQUESTS),
                                     "--threshold", THRESHOLD_MS, seconds=6)
    assert truth["pid"] == pid
    return pid, truth["requests"], lines


def check_socket_timeout(ctx, *runtime):
    """A handler asking a slow backend through a socket with a timeout: CPython polls
    before recv. Each request is one stall, cause and length as the workload saw them,
    and a blocking poll naming the backend, with the handler's Python frame."""
    backend = SlowBackend()
    try:
        pid, reqs, lines = python_server(ctx, "socket", *runtime, backend=backend)
    finally:
        backend.close()
    stalls = request_stalls(lines, pid, "poll")
    check_requests(stalls, reqs, by_iteration="--uvloop" not in runtime)
    tags = tagged_lines("py_nested_server.py")
    polls = [b for b in of_type(lines, "blocking_call", pid=pid) if b["syscall"] == "poll"]
    assert len(polls) == len(reqs), [(b["duration_ms"], b.get("path")) for b in polls]
    for b, req in zip(polls, reqs):
        assert b["path"] == "tcp 127.0.0.1:%d" % backend.port, b
        assert b["fds"] == [b["fd"]] and b["nfds"] == 1, b
        # all the call slept, as its own schedstat says, and no more than the call
        asleep_ms = (req["call_ns"] - req["call_oncpu_ns"] - req["call_runq_ns"]) / 1e6
        assert 0.95 * asleep_ms <= b["duration_ms"] <= req["call_ns"] / 1e6, \
            (b["duration_ms"], req)
        f = find_frame(b["stack"], "call_backend", "py_nested_server.py",
                       tags["call_backend"])
        assert f, describe(b["stack"])
    # in the kernel's per-(process, syscall) aggregate, like any blocking syscall
    agg = of_type(lines, "syscall_summary", pid=pid, syscall="poll")
    assert len(agg) == 1 and agg[0]["count"] == len(reqs), agg
    assert close_enough(agg[0]["blocked_ms"], sum(b["duration_ms"] for b in polls),
                        rel=0.001, abs_=0.01), (agg, polls)


def test_asyncio_socket_timeout_in_handler(ctx):
    check_socket_timeout(ctx)


def test_uvloop_socket_timeout_in_handler(ctx):
    check_socket_timeout(ctx, "--uvloop")


def test_tornado_socket_timeout_in_handler(ctx):
    check_socket_timeout(ctx, "--tornado")


def test_asyncio_subprocess_run_in_handler(ctx):
    """subprocess.run(capture_output=True, timeout=…) polls the child's pipes."""
    pid, reqs, lines = python_server(ctx, "subprocess")
    check_requests(request_stalls(lines, pid, "poll"), reqs, by_iteration=True)
    tags = tagged_lines("py_nested_server.py")
    polls = [b for b in of_type(lines, "blocking_call", pid=pid) if b["syscall"] == "poll"]
    assert len(polls) >= len(reqs), [(b["duration_ms"], b.get("path")) for b in polls]
    for b in polls:
        # stdout and stderr, or the one still open once the other reached its end
        assert b["nfds"] in (1, 2) and b["path"].startswith("pipe:["), b
        assert find_frame(b["stack"], "run_child", "py_nested_server.py", tags["run_child"]), \
            describe(b["stack"])


def test_asyncio_nested_selector_in_handler(ctx):
    """A second selector's select(0.05): an epoll_wait on another epoll fd."""
    pid, reqs, lines = python_server(ctx, "selector")
    check_requests(request_stalls(lines, pid, "epoll_wait"), reqs, by_iteration=True)
    tags = tagged_lines("py_nested_server.py")
    waits = [b for b in of_type(lines, "blocking_call", pid=pid)
             if b["syscall"] == "epoll_wait"]
    assert len(waits) == len(reqs), [(b["duration_ms"], b.get("path")) for b in waits]
    for b, req in zip(waits, reqs):
        assert b["path"] == "anon_inode:[eventpoll]" and b["nfds"] == 1, b
        # the kernel never ends a 50 ms epoll timeout early
        assert 50 <= b["duration_ms"] <= req["call_ns"] / 1e6, (b["duration_ms"], req)
        assert find_frame(b["stack"], "select_again", "py_nested_server.py",
                          tags["select_again"]), describe(b["stack"])


def test_node_exec_sync_in_route(ctx):
    """child_process.execSync runs a second libuv loop inside the route: its epoll waits
    are the route's, one stall per request as long as the route's own timing."""
    app = ["/usr/bin/node", os.path.join(APPS, "node_nested.js")]
    pid, truth, lines = serve_traced(ctx, app, lambda port: http_session(port, REQUESTS),
                                     "--threshold", THRESHOLD_MS, seconds=6)
    reqs = truth["requests"]
    stalls = sorted([s for s in of_type(lines, "stall", pid=pid)
                     if any(c["name"].startswith("epoll") for c in s["syscalls"])],
                    key=lambda s: s["ts"])
    check_requests(stalls, reqs, by_iteration=False)
    waits = [b for b in of_type(lines, "blocking_call", pid=pid)
             if b["syscall"].startswith("epoll")]
    assert len(waits) >= len(reqs), [(b["syscall"], b["duration_ms"]) for b in waits]
    assert all(b["path"] == "anon_inode:[eventpoll]" for b in waits), waits
    for stall, req in zip(stalls, reqs):
        nested_ms = sum(c["ms"] for c in stall["syscalls"] if c["name"].startswith("epoll"))
        # the child's sleep, waited for in the second loop: most of what the route slept
        asleep_ms = (req["handler_ns"] - req["handler_oncpu_ns"] -
                     req["handler_runq_ns"]) / 1e6
        assert 0.8 * asleep_ms <= nested_ms <= req["handler_ns"] / 1e6, (stall["syscalls"],
                                                                         req)


def run_nestwork(ctx, mode, iterations=200):
    out = tmpfile()
    _, lines = run_traced(ctx, [ctx.workload("nestwork"), out, mode, str(iterations), "--go"],
                          "--threshold", THRESHOLD_MS)
    return load_truth(out), lines


def check_nestwork(ctx, mode, syscall, fd_key, path_prefix):
    """Every iteration as the workload timed it, nested waits inside; each nested wait a
    stall of its iteration's length and a blocking call from the deeper function."""
    truth, lines = run_nestwork(ctx, mode)
    pid, recs = truth["pid"], truth["records"]
    summary = of_type(lines, "summary", pid=pid)
    assert len(summary) == 1, summary
    assert_matches_truth(summary[0], [r["busy_ns"] for r in recs])
    nested = [r for r in recs if r["call_ns"]]
    stalls = request_stalls(lines, pid, syscall)
    assert len(stalls) == len(nested), [(s["duration_ms"], s["syscalls"]) for s in stalls]
    blocks = [b for b in of_type(lines, "blocking_call", pid=pid) if b["syscall"] == syscall]
    assert len(blocks) == len(nested), [(b["duration_ms"], b.get("fds")) for b in blocks]
    for stall, block, rec in zip(stalls, blocks, nested):
        assert close_enough(stall["duration_ms"], rec["busy_ns"] / 1e6, rel=0.05), \
            (stall["duration_ms"], rec)
        # the kernel's entry to exit, inside the workload's clock reads around the call
        call_ms = rec["call_ns"] / 1e6
        assert 0.95 * call_ms <= block["duration_ms"] <= call_ms + 0.05, \
            (block["duration_ms"], rec)
        # the nested wait is off-CPU time of the iteration
        assert stall["blocked_ms"] + stall["runq_ms"] >= 0.95 * call_ms, (stall, rec)
        assert block["fds"] == [truth["fds"][fd_key]], block
        assert block["path"].startswith(path_prefix), block
        # from the handler, below the loop (the libc wrapper may hide await_reply)
        names = [f["func"] for f in block["stack"] if f["kind"] == "native"]
        assert "handle_request" in names and names.index("handle_request") < \
            names.index("loop__" + mode), names


def test_c_ppoll_loop_with_nested_poll(ctx):
    """A glib-style ppoll home loop; its handler polls a pipe two calls deeper."""
    check_nestwork(ctx, "ppoll", "poll", "reply_rd", "pipe:[")


def test_c_epoll_loop_with_nested_epoll_wait(ctx):
    """An epoll home loop; its handler waits on a second epoll fd."""
    check_nestwork(ctx, "epoll", "epoll_wait", "nested_ep", "anon_inode:[eventpoll]")


IDLE_EPOLL_LOOP = (
    "import os, select, sys\n"
    "ep = select.epoll()\n"
    "r, w = os.pipe()\n"
    "ep.register(r, select.EPOLLIN)\n"
    "print(os.getpid(), flush=True)\n"
    "while True:\n"
    "    ep.poll(0.3)\n")


def idle_epoll_loop(ctx, disturb):
    """An idle epoll loop traced while disturb(pid) stops it: (pid, lines)."""
    loop = subprocess.Popen(["/usr/bin/python3", "-c", IDLE_EPOLL_LOOP],
                            stdout=subprocess.PIPE, text=True)
    try:
        pid = int(loop.stdout.readline())
        lw = Loopwatch(ctx, "-p", pid, "-d", 4).start()
        time.sleep(0.8)
        disturb(pid)
        lines = lw.stop()
    finally:
        loop.kill()
        loop.wait()
    return pid, lines


def assert_no_stall(lines, pid):
    assert not of_type(lines, "stall", pid=pid), of_type(lines, "stall", pid=pid)
    # a stop taken for a blocking call would be the wait itself, as long as the stop; a
    # loaded host's page fault of a few ms as the loop runs on is a real one
    stopped = [b for b in of_type(lines, "blocking_call", pid=pid)
               if b["syscall"] != "page_fault" or b["duration_ms"] >= 50]
    assert not stopped, stopped
    s = of_type(lines, "summary", pid=pid)
    assert s and s[0]["lag_ms"]["max"] < 5 and s[0]["iterations"] >= 5, s


def test_stop_and_continue_of_an_epoll_loop_is_not_a_stall(ctx):
    """epoll_wait returns -EINTR to a stop (poll is restarted instead): the stop is
    still the loop's idle time."""
    def stop_continue(pid):
        for _ in range(3):
            os.kill(pid, signal.SIGSTOP)
            time.sleep(0.3)
            os.kill(pid, signal.SIGCONT)
            time.sleep(0.4)

    pid, lines = idle_epoll_loop(ctx, stop_continue)
    assert_no_stall(lines, pid)


PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def test_ptrace_attach_to_an_epoll_loop_is_not_a_stall(ctx):
    """A debugger attaching (PTRACE_ATTACH, the tracee stopped 0.5 s, then detached)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]

    def attach_detach(pid):
        for _ in range(2):
            assert libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0, ctypes.get_errno()
            os.waitpid(pid, 0)
            time.sleep(0.5)
            assert libc.ptrace(PTRACE_DETACH, pid, None, None) == 0, ctypes.get_errno()
            time.sleep(0.4)

    pid, lines = idle_epoll_loop(ctx, attach_detach)
    assert_no_stall(lines, pid)


CLIENT = r'''
import select, socket, sys, threading
def loop():
    ep = select.epoll()
    while True:
        ep.poll(0.01)
threading.Thread(target=loop, daemon=True).start()
print(threading.get_native_id(), flush=True)
sys.stdin.readline()
for _ in range(int(sys.argv[2])):
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2) as s:
        s.sendall(b"x\n")
        s.recv(64)
'''


def test_a_client_thread_whose_socket_timeouts_poll_is_not_a_loop(ctx):
    """A plain client thread: every wait it makes is a poll on its one connected socket
    (a timeout), so it has no loop and is no loop thread, however long it waits. The
    process's real loop thread beside it is reported."""
    backend = SlowBackend()
    client = subprocess.Popen(["/usr/bin/python3", "-c", CLIENT, str(backend.port), "8"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        client_tid = int(client.stdout.readline())
        lw = Loopwatch(ctx, "-p", client.pid, "-d", 30).start()
        client.stdin.write("go\n")
        client.stdin.flush()
        client.wait(timeout=30)
        lines = lw.stop()
    finally:
        backend.close()
        if client.poll() is None:
            client.kill()
            client.wait()
    rows = of_type(lines, "summary", pid=client.pid)
    assert len(rows) == 1 and rows[0]["tid"] != client_tid, rows
    assert rows[0]["iterations"] >= 20, rows
    assert not [l for l in lines if l.get("tid") == client_tid], \
        [l for l in lines if l.get("tid") == client_tid][:3]

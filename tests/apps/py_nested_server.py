"""A server whose handler waits itself, as real handlers do by accident: a blocking socket
with a timeout (what requests, redis-py and psycopg do: CPython polls before each recv),
subprocess.run, or a second selector. Debian's python3.

usage: py_nested_server.py MODE [--backend PORT] [--uvloop | --tornado]
  MODE: socket (ask the backend at PORT, which answers in ~50 ms) | subprocess
        (run `sleep 0.05` with captured output) | selector (a fresh selector's select(0.05))

Prints its port. Line protocol (asyncio, uvloop): "work\n" is one request, answered
"ok\n" after the nested wait; "stats\n" answers one JSON line of ground truth. Tornado:
GET /work and GET /stats. The ground truth, per request, each with the thread's own
on-CPU and run-queue time meanwhile (/proc/thread-self/schedstat): the handler, the
nested call in it and (asyncio, Tornado) the iteration that ran it, from the selector's
own view: the time from one select() returning to the next select() call.
A heartbeat every 50 ms keeps the loop waking so a tracer sees its wait calls early.
"""
import asyncio
import json
import os
import selectors
import socket
import subprocess
import sys
import time

MODE = sys.argv[1]
BACKEND = int(sys.argv[sys.argv.index("--backend") + 1]) if "--backend" in sys.argv else 0
requests = []


def schedstat():
    """This thread's on-CPU and run-queue ns so far."""
    with open("/proc/thread-self/schedstat") as f:
        oncpu, runq, _ = f.read().split()
    return int(oncpu), int(runq)


class Span:
    """Wall time, and the thread's on-CPU and run-queue time, from start() to stop()."""

    def start(self):
        self.t0, (self.cpu0, self.runq0) = time.perf_counter_ns(), schedstat()
        return self

    def stop(self, prefix):
        cpu, runq = schedstat()
        return {prefix + "_ns": time.perf_counter_ns() - self.t0,
                prefix + "_oncpu_ns": cpu - self.cpu0, prefix + "_runq_ns": runq - self.runq0}


class RecordingSelector(selectors.EpollSelector):
    """The loop's own selector: the iteration that handled a request, as the loop saw it."""

    def __init__(self):
        super().__init__()
        self.iteration = None
        self.seen = 0

    def select(self, timeout=None):
        if len(requests) > self.seen:
            self.seen = len(requests)
            requests[-1].update(self.iteration.stop("iteration"))
        try:
            return super().select(timeout)
        finally:
            self.iteration = Span().start()


def call_backend():
    with socket.create_connection(("127.0.0.1", BACKEND), timeout=2) as s:
        s.sendall(b"x\n")
        return s.recv(64)  # @call_backend


def run_child():
    return subprocess.run(["sleep", "0.05"], capture_output=True, timeout=5)  # @run_child


def select_again():
    with selectors.DefaultSelector() as sel:
        return sel.select(0.05)  # @select_again


NESTED = {"socket": call_backend, "subprocess": run_child, "selector": select_again}[MODE]


def handle_work():
    handler, call = Span().start(), Span().start()
    NESTED()  # @handle_work
    return handler, call.stop("call")


def finish(work):
    handler, req = work
    req.update(handler.stop("handler"))
    requests.append(req)


def stats():
    return json.dumps({"pid": os.getpid(), "requests": requests})


def heartbeat(loop):
    loop.call_later(0.05, heartbeat, loop)


class LineProtocol(asyncio.Protocol):
    """Each line handled in data_received: the callback the loop makes right after its
    wait returned (uvloop has no selector to time its iterations with)."""

    def connection_made(self, transport):
        self.transport = transport
        self.buf = b""

    def data_received(self, data):
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            if line.strip() == b"stats":
                self.transport.write(stats().encode() + b"\n")
                continue
            work = handle_work()
            self.transport.write(b"ok\n")
            finish(work)


async def line_server():
    loop = asyncio.get_running_loop()
    heartbeat(loop)
    server = await loop.create_server(LineProtocol, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def tornado_server():
    import tornado.httpserver
    import tornado.ioloop
    import tornado.netutil
    import tornado.web

    class WorkHandler(tornado.web.RequestHandler):
        def get(self):
            work = handle_work()
            self.write("ok")
            finish(work)

    class StatsHandler(tornado.web.RequestHandler):
        def get(self):
            self.write(stats())

    app = tornado.web.Application([(r"/work", WorkHandler), (r"/stats", StatsHandler)])
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    print(sockets[0].getsockname()[1], flush=True)
    heartbeat(asyncio.get_event_loop())
    tornado.ioloop.IOLoop.current().start()


def main():
    # first-call costs (imports, lookups) stay out of the measured requests
    NESTED()
    if "--uvloop" in sys.argv:
        import uvloop
        uvloop.install()
        asyncio.run(line_server())
        return
    loop = asyncio.SelectorEventLoop(RecordingSelector())
    asyncio.set_event_loop(loop)
    if "--tornado" in sys.argv:
        tornado_server()
        return
    loop.run_until_complete(line_server())


if __name__ == "__main__":
    main()

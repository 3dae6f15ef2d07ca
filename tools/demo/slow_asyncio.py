#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""loopwatch's Python demo: an asyncio HTTP server whose handlers block its loop now and
then, and a client process that keeps it busy. Run it, then point loopwatch at it:

    python3 tools/demo/slow_asyncio.py &
    build/loopwatch -p $(pgrep -f slow_asyncio.py | head -1) -d 10 | cat

GET /fast answers at once. GET /report serializes a large dict with json.dumps (~20-60 ms
on the loop's thread), GET /legacy calls time.sleep(0.05) (a blocking call in a
coroutine). Stops by itself after --seconds (default 600), or on Ctrl-C / kill.
Python's standard library only."""
import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

BIG = {"rows": [{"id": i, "name": "item-%d" % i, "tags": ["a", "b", "c"], "score": i * 0.5}
                for i in range(15000)]}


def render_report():
    return json.dumps(BIG)  # the stall (CPU): the whole dict on the loop's thread


def legacy_lookup():
    time.sleep(0.05)  # the stall (blocked): a sync call inside a coroutine
    return "ok"


async def handle(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            path = line.split()[1].decode() if len(line.split()) > 1 else "/"
            while (await reader.readline()) not in (b"\r\n", b""):
                pass
            if path == "/report":
                body = str(len(render_report()))
            elif path == "/legacy":
                body = legacy_lookup()
            else:
                body = "fast"
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (
                len(body), body.encode()))
            await writer.drain()
    except (ConnectionError, IndexError):
        pass
    finally:
        writer.close()


def client(port, seconds):
    """The load: mostly /fast, a /report and a /legacy now and then."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                f = s.makefile("rb")
                while time.monotonic() < end:
                    n += 1
                    path = "/report" if n % 40 == 0 else "/legacy" if n % 40 == 20 else "/fast"
                    s.sendall(b"GET %s HTTP/1.1\r\nHost: demo\r\n\r\n" % path.encode())
                    length = 0
                    while True:
                        h = f.readline()
                        if h.lower().startswith(b"content-length:"):
                            length = int(h.split(b":")[1])
                        if h in (b"\r\n", b""):
                            break
                    f.read(length)
                    time.sleep(0.005)
        except OSError:
            return                  # the server is gone


async def serve(seconds):
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print("slow_asyncio: pid %d serving on 127.0.0.1:%d" % (os.getpid(), port), flush=True)
    load = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client", str(port),
                             "--seconds", str(seconds)])
    try:
        await asyncio.sleep(seconds)
    finally:
        load.terminate()
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--client", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    # killed (`kill %1`): quietly, and the client goes when its connection does
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if args.client:
        client(args.client, args.seconds)
        return
    try:
        asyncio.run(serve(args.seconds))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

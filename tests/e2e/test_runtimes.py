"""Real runtimes show up as loop threads with no flags: system-wide view."""
import os

from load import http_load
from lwtest import of_type, serve_traced

APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")


def serve_and_watch(ctx, argv, seconds=4):
    """Light load on a real server, loopwatch system-wide: (pid, requests, lines)."""
    return serve_traced(ctx, argv, lambda port: http_load(port, seconds), seconds=seconds + 1,
                        system_wide=True)


def assert_plausible_loop(lines, pid, requests):
    rows = of_type(lines, "summary", pid=pid)
    assert rows, "pid %d is not a loop thread: %s" % (pid, sorted({l["comm"] for l in lines}))
    busiest = max(rows, key=lambda r: r["iterations"])
    # each request wakes the loop at least once
    assert busiest["iterations"] >= requests * 0.9, (busiest, requests)
    assert 0 < busiest["utilization"] < 0.9, busiest
    lag = busiest["lag_ms"]
    assert 0 < lag["p50"] <= lag["p99"] <= lag["max"] < 1000, lag
    assert of_type(lines, "interval", pid=pid), "no interval rows"
    return rows


def check_python_server(ctx, app):
    """A server on Debian's python3 shows up as a plausible loop."""
    pid, requests, lines = serve_and_watch(ctx, ["/usr/bin/python3", os.path.join(APPS, app)])
    assert requests > 200, requests
    rows = assert_plausible_loop(lines, pid, requests)
    assert rows[0]["comm"].startswith("python3"), rows[0]


def test_python_asyncio_server(ctx):
    check_python_server(ctx, "asyncio_server.py")


def test_node_http_server(ctx):
    pid, requests, lines = serve_and_watch(
        ctx, ["/usr/bin/node", os.path.join(APPS, "node_server.js")])
    assert requests > 200, requests
    rows = assert_plausible_loop(lines, pid, requests)
    assert all(r["comm"] == "node" for r in rows), rows


def test_aiohttp_server(ctx):
    check_python_server(ctx, "aiohttp_server.py")

# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# contended.py's aiohttp server: prints its port; GET /ping answers "pong" (the
# throughput rows, under wrk on the same CPUs).
import asyncio
import sys

from aiohttp import web


async def ping(request):
    return web.Response(text="pong")


async def main():
    app = web.Application()
    app.router.add_get("/ping", ping)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

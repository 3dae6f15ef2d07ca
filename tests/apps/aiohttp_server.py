"""An aiohttp server on Debian's python3: prints its port, serves until killed."""
import asyncio
import socket

from aiohttp import web


async def hello(request):
    return web.Response(text="ok")


async def main():
    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    print(sock.getsockname()[1], flush=True)
    await asyncio.Event().wait()


asyncio.run(main())

"""An asyncio (or, with --uvloop, uvloop) server on Debian's python3 whose handler
calls a helper that blocks the loop in time.sleep(0.03). Prints its port, serves
until killed. The lines tagged "# @name" are where the e2e test expects each
function's Python frame in the blocking call's stack."""
import asyncio
import sys
import time


def blocking_helper():
    time.sleep(0.03)  # @blocking_helper


async def handle(reader, writer):
    await reader.readline()
    blocking_helper()  # @handle
    writer.write(b"ok")
    await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if "--uvloop" in sys.argv:
        import uvloop
        uvloop.install()
    asyncio.run(main())

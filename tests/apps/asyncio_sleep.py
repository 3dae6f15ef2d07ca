"""An asyncio server whose handler helper blocks the loop with time.sleep(0.03)."""
import asyncio
import time


def slow_helper():
    time.sleep(0.03)


async def handle(reader, writer):
    await reader.readline()
    slow_helper()
    writer.write(b"ok")
    await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())

"""A plain asyncio HTTP server on Debian's python3: prints its port, serves until killed."""
import asyncio
import sys


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        if line in (b"\r\n", b"\n"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""An asyncio (or, with --uvloop, uvloop) server on Debian's python3 whose handler
calls a helper that blocks the loop in time.sleep(0.03). Prints its port, serves
until killed. The lines tagged "# @name" are where the e2e test expects each
function's Python frame in the blocking call's stack.

With --truth FILE it appends, per sleep, what the thread measured itself: the sleep's
wall time and, of it, the time the thread waited for a CPU (run_delay of
/proc/thread-self/schedstat), as "sleep_ns runq_ns" lines."""
import asyncio
import os
import sys
import time

TRUTH = sys.argv[sys.argv.index("--truth") + 1] if "--truth" in sys.argv else None


def run_delay_ns():
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1])


def blocking_helper():
    # run_delay read inside the timed window: a wait for a CPU it counts lies within it
    t0 = time.monotonic_ns()
    r0 = run_delay_ns()
    time.sleep(0.03)  # @blocking_helper
    r1 = run_delay_ns()
    t1 = time.monotonic_ns()
    if TRUTH:
        with open(TRUTH, "a") as f:
            f.write("%d %d\n" % (t1 - t0, r1 - r0))


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

# Short-lived asyncio Tasks, as a server makes one per request: every 50 ms a Task named
# "request-N" runs handle(), which burns ~25 ms of CPU in handle_busy and returns. The
# Task, its name and its coroutine are then freed, and the next requests' objects are
# made in their memory. Prints its pid; appends "N start end" (wall clock, s) of each
# burn to the file argv[1], as it goes; runs until killed.
import asyncio
import os
import sys
import time


def handle_busy():
    deadline = time.time() + 0.025  # @handle_busy
    while time.time() < deadline:  # @handle_busy
        pass  # @handle_busy


async def handle(n, out):
    start = time.time()
    handle_busy()  # @handle
    out.write("%d %.6f %.6f\n" % (n, start, time.time()))
    out.flush()


async def main():
    with open(sys.argv[1], "w") as out:
        n = 0
        while True:
            n += 1
            # the name a fresh str each time, freed with its Task
            await asyncio.create_task(handle(n, out), name="request-%d" % n)
            await asyncio.sleep(0.025)


sys.stdout.write("%d\n" % os.getpid())
sys.stdout.flush()
asyncio.run(main())

# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""An asyncio loop already waiting when loopwatch starts: it prints its pid, waits for a
line on stdin (loop.add_reader), then stalls 6 times in a row, 30 ms each on its own clock,
1 ms apart, in first_stall (the tagged line), and exits. Its first stalls come within
milliseconds of the loop's first wait seen: frames only if the process was set up before.

usage: py_first_stall.py"""
import asyncio
import os
import sys
import time


def first_stall():
    end = time.monotonic() + 0.030
    while time.monotonic() < end:  # @first_stall
        pass


async def main():
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    left = [6]

    def again():
        first_stall()
        left[0] -= 1
        if left[0]:
            loop.call_later(0.001, again)
        else:
            done.set_result(None)

    def go():
        loop.remove_reader(0)
        sys.stdin.readline()
        loop.call_soon(again)

    loop.add_reader(0, go)
    print(os.getpid(), flush=True)
    await done


asyncio.run(main())

# A plain asyncio loop for the CPython builds distros ship (3.13, 3.14, 3.15):
# a task named "stall-injector" wakes every 60 ms and, every third time, burns
# ~30 ms of CPU in busy_helper and blocks 30 ms in block_helper (a futex wait
# that is no loop wait), one stall with both causes. The main task (unnamed:
# asyncio calls it Task-1) spins 25 ms in main_spin every 400 ms. Prints its
# pid, runs until killed. The lines tagged "# @name" are where the e2e test
# expects each frame.
import asyncio
import os
import sys
import threading
import time

# never released: acquiring it waits in futex for the whole timeout
HELD = threading.Lock()
HELD.acquire()


def busy_helper():
    deadline = time.time() + 0.03  # @busy_helper
    n = 0  # @busy_helper
    while time.time() < deadline:  # @busy_helper
        n += 1  # @busy_helper
    return n  # @busy_helper


def block_helper():
    HELD.acquire(True, 0.03)  # @block_helper


async def inject():
    busy_helper()  # @inject
    block_helper()  # @inject


async def injector():
    i = 0
    while True:
        await asyncio.sleep(0.06)
        i += 1
        if i % 3 == 0:
            await inject()  # @injector


def main_spin():
    deadline = time.time() + 0.025  # @main_spin
    while time.time() < deadline:  # @main_spin
        pass  # @main_spin


async def main():
    asyncio.create_task(injector(), name="stall-injector")
    while True:
        await asyncio.sleep(0.4)
        main_spin()  # @main


sys.stdout.write("%d\n" % os.getpid())
sys.stdout.flush()
asyncio.run(main())

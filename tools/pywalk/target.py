# pywalk's test target (Python 2.7 and 3.x). A line tagged "# @name" is where
# the frame of function `name` must be when sampled (several lines: any of
# them). The main thread alternates a CPU loop and time.sleep; a second
# thread sleeps in its own function, so stacks must not mix threads; a third
# sleeps in a sort key called back from C (sorted), a second eval call.
import os
import sys
import threading
import time


def spin(deadline):
    n = 0
    while time.time() < deadline:  # @spin
        n += 1  # @spin
    return n


def busy_helper():
    return spin(time.time() + 0.05)  # @busy_helper


def sleep_helper():
    time.sleep(0.05)  # @sleep_helper


class Worker(object):
    def run(self):
        while True:
            busy_helper()  # @Worker.run
            sleep_helper()  # @Worker.run


def side_sleeper():
    while True:
        time.sleep(0.03)  # @side_sleeper


def cb_key(x):
    time.sleep(0.03)  # @cb_key
    return x


def cb_sorter():
    while True:
        sorted([3, 1, 2], key=cb_key)  # @cb_sorter


for fn, name in ((side_sleeper, "side"), (cb_sorter, "sorter")):
    t = threading.Thread(target=fn, name=name)
    t.daemon = True
    t.start()
sys.stdout.write("%d\n" % os.getpid())
sys.stdout.flush()
Worker().run()  # @<module>

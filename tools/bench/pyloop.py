"""A Python loop thread under loopwatch's stack captures, as syscost times its
C workloads: what one captured stack costs once loopwatch also walks
CPython's frame chain. Prints ns per call (median over batches).

Usage: pyloop.py block|busy CALLS [--depth N] [--wait-walk]

  block  round trips to a child process, the answer read with a blocking
         os.read() of an eventfd inside the loop's iteration (between two
         epoll waits): every round trip one blocked syscall whose stack
         loopwatch captures in sched_switch -- syscost's loop-pingpong-block
         with a Python loop thread. A call is one round trip.
  busy   pure-Python work in ~5 ms busy periods (under the stall threshold,
         so every cpu-clock sample takes a stack): syscost's loop-busy. A call
         is a work unit; prints the ns that 1000 ns of work takes counting
         interrupts (the excess over the median unit, 0.5 to 100 us).

--depth N runs the workload N Python calls deeper than its own few frames,
so each walk reads that many more frames.

loopwatch reads the interpreter's offsets when it first sees a loop thread
(the first epoll wait here) and puts them in its py_procs map, keyed by pid:
from then on its BPF side walks our frames. --wait-walk holds the timing back
until our pid is in a py_procs map (bpftool says). No probe firing can tell:
loopwatch's probes are attached to files, not processes, and stay attached
from an earlier process.
"""
import json
import os
import select
import subprocess
import sys
import time

BATCH_CALLS = 200  # round trips timed together: short next to a time slice
BUSY_UNITS = 2500  # ~2 us each: a ~5 ms busy period
UNIT_ROUNDS = 40
IRQ_MIN_NS = 500  # above a unit's jitter
IRQ_MAX_NS = 100000  # longer gaps are the host taking the vCPU
WAIT_WALK_S = 6.0
ONE = (1).to_bytes(8, "little")


def walk_configured(pid):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "name", "py_procs"],
                         capture_output=True, text=True).stdout
    try:
        dump = json.loads(out) if out.strip() else []
    except ValueError:  # a map went away under bpftool
        return False
    # one map: its elements; several of that name: each with its "elements"
    for item in dump:
        for e in item.get("elements", [item]):
            if int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little") == pid:
                return True
    return False


def wait_walk():
    deadline = time.monotonic() + WAIT_WALK_S
    while time.monotonic() < deadline:
        if walk_configured(os.getpid()):
            return True
        time.sleep(0.02)
    return False


def partner_run(to_partner, to_loop):
    """The child: answers every byte with a kick; gone when the parent is."""
    while os.read(to_partner, 1):
        os.write(to_loop, ONE)
    os._exit(0)


def round_trips(ep, to_partner, to_loop, n):
    for _ in range(n):
        ep.poll(0)  # one iteration ends, the next starts
        os.write(to_partner, b"x")
        os.read(to_loop, 8)  # the loop thread sleeps here


def block_measure(ep, calls):
    """Median ns per round trip over batches."""
    # A child process, not a thread: a thread would take turns at the GIL
    # with us, and our waits for it would be more blocked syscalls. A pipe
    # to it, so it reads EOF when we exit however we do; an eventfd back,
    # the kind of fd syscost's loop thread blocks on.
    from_loop, to_partner = os.pipe()
    to_loop = os.eventfd(0)
    if os.fork() == 0:
        os.close(to_partner)
        partner_run(from_loop, to_loop)
    os.close(from_loop)
    ep.register(to_loop, select.EPOLLIN)
    clock = time.perf_counter_ns
    round_trips(ep, to_partner, to_loop, calls // 10)
    batch_ns = []
    for _ in range(max(1, calls // BATCH_CALLS)):
        start = clock()
        round_trips(ep, to_partner, to_loop, BATCH_CALLS)
        batch_ns.append(clock() - start)
    os.close(to_partner)
    os.wait()
    batch_ns.sort()
    return batch_ns[len(batch_ns) // 2] / BATCH_CALLS


def work_unit(x):
    for _ in range(UNIT_ROUNDS):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def busy_period(ep, unit_ns, x):
    clock = time.perf_counter_ns
    ep.poll(0)  # a busy period starts
    prev = clock()
    for i in range(BUSY_UNITS):
        x = work_unit(x)
        now = clock()
        unit_ns[i] = now - prev
        prev = now
    ep.poll(0)  # and ends: the analysis is not in it
    return x


def busy_measure(ep, calls):
    """The ns that 1000 ns of undisturbed work takes, counting interrupts."""
    unit_ns = [0] * BUSY_UNITS
    work_ns = irq_ns = 0
    x = calls
    for _ in range(max(1, calls // 10 // BUSY_UNITS)):
        x = busy_period(ep, unit_ns, x)
    for _ in range(max(1, calls // BUSY_UNITS)):
        x = busy_period(ep, unit_ns, x)
        median_ns = sorted(unit_ns)[BUSY_UNITS // 2]
        work_ns += median_ns * BUSY_UNITS
        irq_ns += sum(d for d in (ns - median_ns for ns in unit_ns)
                      if IRQ_MIN_NS <= d <= IRQ_MAX_NS)
    return 1000.0 * (1 + irq_ns / work_ns)


def deeper(levels, fn, *args):
    if levels > 0:
        return deeper(levels - 1, fn, *args)
    return fn(*args)


def main():
    args = sys.argv[1:]
    measures = {"block": block_measure, "busy": busy_measure}
    if len(args) < 2 or args[0] not in measures:
        sys.exit(__doc__)
    depth = int(args[args.index("--depth") + 1]) if "--depth" in args else 0
    # syscost's pingpong: a woken thread never preempts the waker, each side
    # leaves the CPU only by going to sleep where the workload says
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    ep = select.epoll()
    ep.poll(0)  # a loop thread from here on
    if "--wait-walk" in args and not wait_walk():
        sys.exit("pyloop.py: pid %d not in loopwatch's py_procs within %.0f s"
                 % (os.getpid(), WAIT_WALK_S))
    print("%.1f" % deeper(depth, measures[args[0]], ep, int(args[1])))


main()

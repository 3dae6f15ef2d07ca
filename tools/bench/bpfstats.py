# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The kernel's own per-program counters: run_cnt and run_time_ns of each BPF program,
counted while this process holds a BPF_ENABLE_STATS descriptor. The sysctl
kernel.bpf_stats_enabled, which other people on a shared host may rely on, is never
written: the descriptor is reference-counted and goes away with the process.

Used by tools/bench/cost.py and by the regression guard of make test
(tests/e2e/test_cost.py, through lwtest).
"""
import ctypes
import os
import signal
import struct
import subprocess
import tempfile
import time

SYS_BPF = 321                   # x86-64
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0
# struct bpf_prog_info (linux/bpf.h): where its fields are, and its size
INFO_NAME, INFO_RUN_TIME_NS, INFO_RUN_CNT, INFO_VERIFIED_INSNS, INFO_SIZE = 64, 192, 200, 216, 232

_libc = ctypes.CDLL(None, use_errno=True)
_stats_fd = None


def _bpf(cmd, attr):
    fd = _libc.syscall(SYS_BPF, cmd, attr, len(attr))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, "bpf(%d): %s" % (cmd, os.strerror(err)))
    return fd


def enable():
    """Count run time for as long as this process lives (idempotent)."""
    global _stats_fd
    if _stats_fd is None:
        _stats_fd = _bpf(BPF_ENABLE_STATS, ctypes.create_string_buffer(
            struct.pack("I", BPF_STATS_RUN_TIME), 8))


def prog_info(prog_id):
    """(name, run_cnt, run_time_ns, verified_insns) of one program, None if gone."""
    try:
        fd = _bpf(BPF_PROG_GET_FD_BY_ID, ctypes.create_string_buffer(
            struct.pack("I", prog_id), 16))
    except OSError:
        return None
    try:
        info = ctypes.create_string_buffer(INFO_SIZE)
        _bpf(BPF_OBJ_GET_INFO_BY_FD, ctypes.create_string_buffer(
            struct.pack("IIQ", fd, INFO_SIZE, ctypes.addressof(info)), 16))
    except OSError:
        return None
    finally:
        os.close(fd)
    raw = info.raw
    name = raw[INFO_NAME:INFO_NAME + 16].split(b"\0")[0].decode()
    run_ns, run_cnt = struct.unpack_from("QQ", raw, INFO_RUN_TIME_NS)
    return name, run_cnt, run_ns, struct.unpack_from("I", raw, INFO_VERIFIED_INSNS)[0]


def held_ids(pid, kind):
    """Ids of the BPF objects of a kind ("prog", "map") process pid holds open (its own,
    not whatever else is loaded on the machine)."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    field = kind + "_id:"
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                for line in f:
                    if line.startswith(field):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def prog_ids(pid):
    return held_ids(pid, "prog")


def snapshot(ids):
    """{name: [run_cnt, run_time_ns, verified_insns]} of the programs with these ids
    (programs of one name summed). The kernel keeps 15 characters of a name: look
    names up with per_run() or short()."""
    sums = {}
    for prog_id in ids:
        info = prog_info(prog_id)
        if info:
            s = sums.setdefault(info[0], [0, 0, 0])
            for i in range(3):
                s[i] += info[i + 1]
    return sums


def short(name):
    """A program's name as the kernel keeps it (BPF_OBJ_NAME_LEN)."""
    return name[:15]


def delta(before, after):
    """{name: (runs, ns)} of what ran between two snapshots."""
    return {name: (a[0] - before.get(name, [0, 0])[0], a[1] - before.get(name, [0, 0])[1])
            for name, a in after.items()}


def per_run(d, name):
    """ns per run of one program in a delta, or None if it did not run."""
    runs, ns = d.get(short(name), (0, 0))
    return ns / runs if runs > 0 else None


# what each tracer's programs are called (tools/bench/floor.bpf.c, bpf/*.bpf.c)
FLOOR = {"enter": "enter_epoll_wait", "exit": "exit_epoll_wait", "switch": "floor_sched_switch",
         "wakeup": "floor_sched_wakeup", "sample": "floor_sample"}
LOOPWATCH = {"enter": "wait_enter", "exit": "wait_exit", "switch": "loop_sched_switch",
             "wakeup": "loop_sched_wakeup", "sample": "loop_sample"}


def per_iteration(d, names):
    """ns of a loop iteration of epoll_wait(0): its entry and its exit."""
    return per_run(d, names["enter"]) + per_run(d, names["exit"])


def per_switch(d, names):
    """ns of a context switch and its share of the wake-ups that came with it."""
    switches, _ = d[short(names["switch"])]
    wakeups, _ = d.get(short(names["wakeup"]), (0, 0))
    return per_run(d, names["switch"]) + wakeups / max(switches, 1) * per_run(d, names["wakeup"])


def per_sample_hit(busy, idle, names):
    """ns of a CPU sample on the busy loop's CPU (None if either did not run): of a
    loop pinned to one of two CPUs, half the samples land on the other, where nobody
    is a loop thread, and cost what all samples cost while nobody was (idle)."""
    b, i = per_run(busy, names["sample"]), per_run(idle, names["sample"])
    return 2 * b - i if b is not None and i is not None else None


def counted(ids, argv):
    """Run argv to completion: what the programs with these ids ran meanwhile (delta)."""
    before = snapshot(ids)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return delta(before, snapshot(ids))


class Tracer:
    """A tracer (loopwatch, the floor, bpftrace) started in the background, ready once
    it says `ready` on stderr (or on stdout, with ready_on_stdout: bpftrace says
    "Attaching" there): prog_ids(t.pid) are then its programs."""

    def __init__(self, argv, cpu=None, ready="tracing", timeout=30, ready_on_stdout=False):
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        self.t0 = time.monotonic()
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(argv, stderr=self.err, stdout=self.err if ready_on_stdout
                                  else subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.err.seek(0)
            if ready.encode() in self.err.read():
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        self.err.seek(0)
        raise RuntimeError("%s did not start: %s" % (argv, self.err.read()[-500:]))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()

    @property
    def pid(self):
        return self.p.pid


def against_floor(floor, loopwatch, syscost, cases, rounds, cpu, tracer_cpu=None,
                  progress=None):
    """Interleaved rounds of the floor (empty programs on the same hooks) and loopwatch,
    which of the two goes first alternating: each tracer started, then every syscost
    (case, calls) run pinned to cpu under it. ({config: {case: [delta a round]}},
    {program: instructions verified}) for the configs "floor" and "loopwatch"."""
    enable()
    configs = ("floor", "loopwatch")
    rows = {c: {case: [] for case, _ in cases} for c in configs}
    verified = {}
    for r in range(rounds):
        if progress:
            progress(r)
        for config in configs[r % 2:] + configs[:r % 2]:
            t = Tracer(floor if config == "floor" else loopwatch, cpu=tracer_cpu)
            try:
                ids = prog_ids(t.pid)
                if config == "loopwatch" and not verified:
                    verified = {n: v[2] for n, v in snapshot(ids).items()}
                for case, calls in cases:
                    rows[config][case].append(counted(ids, [
                        "taskset", "-c", str(cpu), syscost, case, str(calls)]))
            finally:
                t.stop()
    return rows, verified


def over_floor(rows, r):
    """Round r of against_floor's rows with the cases epoll0, pingpong and loop-busy20:
    (ns a loop iteration over the floor, ns a switch of threads that are no loop over
    the floor, (ns a sample of the busy loop under loopwatch, under the floor))."""
    lw = {case: d[r] for case, d in rows["loopwatch"].items()}
    fl = {case: d[r] for case, d in rows["floor"].items()}
    return (per_iteration(lw["epoll0"], LOOPWATCH) - per_iteration(fl["epoll0"], FLOOR),
            per_switch(lw["pingpong"], LOOPWATCH) - per_switch(fl["pingpong"], FLOOR),
            (per_sample_hit(lw["loop-busy20"], lw["pingpong"], LOOPWATCH),
             per_sample_hit(fl["loop-busy20"], fl["pingpong"], FLOOR)))

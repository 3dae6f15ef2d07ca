"""The kernel's BPF features, probed at start (userspace/kernel/features.c). A kernel
without one loopwatch needs is refused before anything loads, in one line naming the
feature, the kernel it came with and loopwatch's minimum; the hooks chosen for the wait
and flush calls are said in one line; and with fentry pretended absent (the tracepoint
fallback) the loop is still tracked, against the workload's own truth.

LOOPWATCH_TEST_ABSENT=name,... is test-only: it makes loopwatch take features the
running kernel has for absent, so that every fallback and refusal runs on any kernel
(tests/kernels runs the same cases on kernels that do have fentry)."""
import copy
import json
import os
import re
import subprocess

import test_loop
import test_native
import test_node
import test_otherparty
from lwtest import (Loopwatch, bpfstats, load_truth, of_type, run_traced, tmpfile,
                    write_script, xlated)
from test_loop import assert_matches_truth

MIN_KERNEL = "5.15"
# (LOOPWATCH_TEST_ABSENT name, what the line says, the kernel it came with)
REQUIRED = (
    ("ringbuf", "the BPF ring buffer", "5.8"),
    ("task_storage", "BPF task storage", "5.11"),
    ("task_btf", "bpf_get_current_task_btf()", "5.11"),
    ("task_storage_get", "bpf_task_storage_get() in tracepoints", "5.11"),
    ("task_pt_regs", "bpf_task_pt_regs()", "5.15"),
    ("attach_cookie", "bpf_get_attach_cookie()", "5.15"),
)
# (LOOPWATCH_TEST_ABSENT name, what the line says, the kernel it came with, what is done
# without it): Linux 5.15 and 5.16 have neither, 5.17 and 5.18 the first
FALLBACKS = (
    ("bpf_loop", "bpf_loop()", "5.17",
     "the stack walks and the select scan are bounded loops"),
    ("percpu_lookup", "bpf_map_lookup_percpu_elem()", "5.19",
     "the CPUs' run-queue watches are one array shared by every CPU"),
)
ABSENT_5_15 = ",".join(f[0] for f in FALLBACKS)
# the programs each set of hooks is made of (bpf/loop.bpf.c, bpf/hooks_fentry.bpf.c)
TRACEPOINT_PROGS = {"wait_enter", "wait_exit", "flush_enter", "flush_exit"}
FENTRY_PROGS = {"fe_epoll_wait", "fx_epoll_wait", "fe_fsync", "fx_fsync",
                "fx_restart_sysc"}


def hooks_lines(stderr):
    """What the start line says of the hooks: one entry per start line."""
    return [ln.split("(hooks: ", 1)[1].rsplit("); Ctrl-C", 1)[0]
            for ln in stderr.splitlines() if ln.startswith("loopwatch: tracing event loops")]


FENTRY = "fentry/fexit on the wait and flush syscalls"


def test_missing_feature_refused_in_one_line(ctx):
    """Each required feature taken away in turn: loopwatch exits non-zero before
    loading anything, with exactly one line on stderr naming what is missing."""
    release = os.uname().release
    for name, what, since in REQUIRED:
        p = subprocess.run([ctx.loopwatch, "-d", "1"], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, LOOPWATCH_TEST_ABSENT=name))
        want = ("loopwatch: this kernel (%s) has no %s (Linux %s): loopwatch needs Linux "
                "%s or later" % (release, what, since, MIN_KERNEL))
        assert p.returncode != 0, "%s absent: exit 0" % name
        assert p.stderr.splitlines() == [want], "%s absent: %r" % (name, p.stderr)
        assert not p.stdout, p.stdout


def loaded_programs(pid):
    """The names (as the kernel keeps them) of the BPF programs process pid holds."""
    return set(bpfstats.snapshot(bpfstats.prog_ids(pid)))


def run_hooks_case(ctx, absent):
    """loopwork's two loop threads under `loopwatch -p` (with the features in absent
    pretended absent): (its hooks lines, the programs it had loaded, truth, lines)."""
    out = tmpfile()
    wrap = ("env", "LOOPWATCH_TEST_ABSENT=" + absent) if absent else ()
    progs = set()
    _, lines, stderr = run_traced(ctx, [ctx.workload("loopwork"), out, "mixed,fixed3", "600",
                                        "--go"], wrap=wrap, with_stderr=True,
                                  started=lambda pid: progs.update(loaded_programs(pid)))
    return hooks_lines(stderr), progs, load_truth(out), lines


def assert_tracked(truth, lines):
    by_tid = {s["tid"]: s for s in of_type(lines, "summary", pid=truth["pid"])}
    want = {t["tid"] for t in truth["threads"]}
    assert set(by_tid) == want, "loop threads %s, want %s" % (sorted(by_tid), sorted(want))
    for t in truth["threads"]:
        assert_matches_truth(by_tid[t["tid"]], t)


def test_tracepoint_fallback_tracks_the_loop(ctx):
    """fentry pretended absent: the start line says the syscall tracepoints are used and
    why, only the tracepoint programs are loaded, and both loop threads are tracked
    with their lag matching the workload's own measure."""
    hooks, progs, truth, lines = run_hooks_case(ctx, "fentry")
    assert hooks == ["syscall tracepoints, fentry absent: LOOPWATCH_TEST_ABSENT"], hooks
    assert TRACEPOINT_PROGS <= progs, "tracepoint programs %s not all in %s" % (
        sorted(TRACEPOINT_PROGS), sorted(progs))
    assert not progs & FENTRY_PROGS, "fentry programs loaded: %s" % sorted(progs & FENTRY_PROGS)
    assert_tracked(truth, lines)


def test_hooks_of_this_kernel(ctx):
    """Whatever this kernel allows: the start line names the hooks, the programs loaded are
    that set alone, and the loop is tracked against its truth (fentry where the
    kernel allows it: the kernels of tests/kernels; the tracepoints where it refuses,
    with the reason: this host)."""
    hooks, progs, truth, lines = run_hooks_case(ctx, "")
    assert len(hooks) == 1, hooks
    if hooks[0] == FENTRY:
        assert FENTRY_PROGS <= progs, sorted(progs)
        assert not progs & TRACEPOINT_PROGS, sorted(progs & TRACEPOINT_PROGS)
    else:
        assert hooks[0].startswith("syscall tracepoints, "), hooks
        assert TRACEPOINT_PROGS <= progs and not progs & FENTRY_PROGS, sorted(progs)
    assert_tracked(truth, lines)


def fallback_lines(absent):
    """The lines loopwatch starts with when the features in absent are pretended absent."""
    release = os.uname().release
    return ["loopwatch: this kernel (%s) has no %s (Linux %s): %s" % (release, what, since, how)
            for name, what, since, how in FALLBACKS if name in absent.split(",")]


# the three loops' bpf_loop callbacks, and the global functions that stand in for them
LOOP_CALLBACKS = {"select__word", "walk__step", "v8__step"}
LOOP_ALONE = {name + "_alone" for name in LOOP_CALLBACKS}
PERCPU_LOOKUP = "percpu_array_map_lookup_percpu_elem"


def calls_made(pid):
    """The helpers and functions (subprograms by name) the programs of process pid call,
    as the kernel translated them."""
    calls = set()
    for i in bpfstats.prog_ids(pid):
        out = "\n".join(xlated(i))
        calls |= set(re.findall(r"call (\w+)#", out))
        calls |= set(re.findall(r"call pc[-+]\d+#bpf_prog_[0-9a-f]+_(\w+)", out))
    return calls


def test_older_kernels_features_done_without_in_one_line_each(ctx):
    """bpf_loop() and bpf_map_lookup_percpu_elem() pretended absent, each and both: loopwatch
    starts, says one line for each before its start line, and loads what it says: the
    loops' global stand-ins are called and their bpf_loop callbacks are not, and no
    program looks up another CPU's slot."""
    calls = {}
    for absent in ("", "bpf_loop", "percpu_lookup", ABSENT_5_15):
        lw = Loopwatch(ctx, "-d", 30, wrap=("env", "LOOPWATCH_TEST_ABSENT=" + absent))
        try:
            lw.start()
            got = [line.rstrip("\n") for line in lw.err]
            calls[absent] = calls_made(lw.proc.pid)
        finally:
            lw.kill()
        # system-wide: other processes' set-up lines may come in between
        said = [line for line in got if line.startswith("loopwatch: this kernel")]
        assert said == fallback_lines(absent), "%r absent: %r" % (absent, got)
        loop = "bpf_loop" not in absent.split(",")
        want, never = (LOOP_CALLBACKS, LOOP_ALONE) if loop else (LOOP_ALONE, LOOP_CALLBACKS - {
            "select__word"})
        assert want <= calls[absent] and not never & calls[absent], (absent, sorted(
            calls[absent] & (LOOP_CALLBACKS | LOOP_ALONE)))
        percpu = "percpu_lookup" not in absent.split(",")
        assert (PERCPU_LOOKUP in calls[absent]) == percpu, (absent, sorted(calls[absent]))


def test_older_kernels_hold_the_same_truth(ctx):
    """With both pretended absent (Linux 5.15's BPF), the cases each fallback serves hold
    their own tests' bounds: a select loop told from a select client (the select scan),
    a C chain without frame pointers (the CFI walker), node's routes named (the V8
    walk), a neighbour named for the CPU it held (another CPU's run-queue watch)."""
    fctx = copy.copy(ctx)
    fctx.loopwatch = write_script(tmpfile(".sh"), "LOOPWATCH_TEST_ABSENT=%s exec %s \"$@\"\n" % (
        ABSENT_5_15, ctx.loopwatch))
    try:
        test_loop.test_a_select_loop_and_a_select_client(fctx)
        test_native.test_c_chain_without_frame_pointers(fctx)
        test_node.test_debian_node_names_route_functions(fctx)
        test_otherparty.test_neighbour_named_when_it_held_the_cpu(fctx)
    finally:
        os.unlink(fctx.loopwatch)


def links_by_program(pid):
    """{program name (as the kernel keeps it): the BPF links process pid holds to it}."""
    ids = {}
    d = "/proc/%d/fdinfo" % pid
    for fd in os.listdir(d):
        try:
            with open(os.path.join(d, fd)) as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if "link_type" in info and "prog_id" in info:
            i = int(info["prog_id"])
            ids[i] = ids.get(i, 0) + 1
    out = {}
    for i, n in ids.items():
        name = json.loads(subprocess.run(["bpftool", "-j", "prog", "show", "id", str(i)],
                                         capture_output=True, text=True).stdout)["name"]
        out[name] = out.get(name, 0) + n
    return out


def online_cpus():
    """The CPUs online now: perf's sampling opens an event on each."""
    with open("/sys/devices/system/cpu/online") as f:
        spans = f.read().strip().split(",")
    return sum(int(s.split("-")[-1]) - int(s.split("-")[0]) + 1 for s in spans)


TICK_ABSENT = ("loopwatch: CPU samples from perf's cpu-clock at 997 Hz, not the scheduler "
               "tick (LOOPWATCH_TEST_ABSENT)")


def test_cpu_samples_at_the_tick_or_a_clock_of_their_own(ctx):
    """By default the CPU samples ride the scheduler tick: loopwatch has the tick's
    program loaded and attached, not perf's, so it opens no cpu-clock event. With the
    tick pretended absent it says so in one line and samples with perf's program on a
    cpu-clock event of every CPU at 997 Hz instead; --sample-hz 997 does that without a
    word. Each way chainwork's CPU stalls carry samples holding their whole chain
    (test_native's check: >= 95 % of the samples, and at least one a stall)."""
    for absent, args in (("", ()), ("tick", ()), ("", ("--sample-hz", "997"))):
        seen = {}

        def started(pid):
            seen["progs"] = loaded_programs(pid)
            seen["links"] = links_by_program(pid)

        out = tmpfile()
        _, lines, stderr = run_traced(
            ctx, [ctx.workload("chainwork"), out, str(test_native.ITERATIONS), "--go"],
            "--threshold", test_native.THRESHOLD_MS,
            "--block-threshold", test_native.BLOCK_THRESHOLD_MS, *args,
            settle=0.5,
            wrap=("env", "LOOPWATCH_TEST_ABSENT=" + absent), with_stderr=True,
            started=started)
        said = [ln for ln in stderr.splitlines() if "CPU samples" in ln]
        clock = absent or args
        sampler, other = ("loop_sample", "loop_tick") if clock else ("loop_tick", "loop_sample")
        assert said == ([TICK_ABSENT] if absent else []), (absent, args, stderr[-2000:])
        assert sampler in seen["progs"] and other not in seen["progs"], (absent, args, seen)
        # the tick's program on its tracepoint; perf's on an event of every CPU
        assert seen["links"].get(sampler) == (online_cpus() if clock else 1), (
            absent, args, seen)
        samples, _ = test_native.check_chains("chainwork", load_truth(out), lines)
        print("%r absent, %r: %d CPU samples" % (absent, args, samples))

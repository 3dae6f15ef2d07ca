"""Native stacks without frame pointers: C built -O2 -fomit-frame-pointer (and with frame
pointers, calling glibc's write and fsync), its CFI and symbols in a separate debug file, a
binary deleted after start, JIT code named by a perf map among garbage, Debian's python3.
Every stall is matched to the workload's own record of what it injected."""
import os
import re
import shutil
import subprocess
import tempfile

from lwtest import (Loopwatch, in_order, load_truth, node_native, of_type, run_traced, tmpfile,
                    user_funcs)

THRESHOLD_MS = 5
# a fast disk's fsync sleeps well under the default 1 ms: every sleep is a blocking call
BLOCK_THRESHOLD_MS = 0.05
CPU_CHAIN = ["checksum_block", "parse_payload", "handle_request", "serve_once", "main"]
IO_CHAIN = ["flush_journal", "store_record", "handle_request", "serve_once", "main"]
CHAIN = {"cpu": CPU_CHAIN, "io": IO_CHAIN}
ITERATIONS = 48
APPS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "apps")


def stall_of(stalls, record):
    """The stall that began when the workload says the iteration did (wall clocks, 3 ms)."""
    near = [s for s in stalls if abs(s["ts"] - record["start"]) < 0.003]
    return min(near, key=lambda s: abs(s["ts"] - record["start"])) if near else None


def chain_found_by_cfi(frames, chain):
    """The chain, in order, and none of its frames found by a frame pointer or a guess."""
    if not in_order(user_funcs(frames), chain):
        return False
    return all(not f.get("unwind") for f in frames if f["func"] in chain)


def check_chains(binary, truth, lines, by_cfi=True):
    """Every injected stall: its samples and blocking stacks hold the whole chain in order
    (>= 95 % of the samples, every blocking write/fsync), and >= 95 % of the stalls name
    the injecting function."""
    found = chain_found_by_cfi if by_cfi else (lambda fr, ch: in_order(user_funcs(fr), ch))
    stalls = of_type(lines, "stall", pid=truth["pid"])
    injected = [r for r in truth["records"] if r["kind"] in CHAIN and
                r["busy_ns"] >= THRESHOLD_MS * 1e6]
    # every 15 ms spin and every >= 8 ms of writes and fsyncs is a stall
    kinds = [r["kind"] for r in injected]
    assert kinds.count("cpu") == kinds.count("io") == ITERATIONS // 4, (binary, kinds)
    named, samples, samples_ok, blocks = 0, 0, 0, 0
    for r in injected:
        s = stall_of(stalls, r)
        assert s, "%s: no stall for the %s iteration at %.3f" % (binary, r["kind"], r["start"])
        chain = CHAIN[r["kind"]]
        named += chain[0] in s["top"]
        for st in s["stacks"]:
            if st["cause"] == "cpu":
                samples += st["samples"]
                samples_ok += st["samples"] if found(st["frames"], chain) else 0
            elif st["cause"] == "blocked" and st["syscall"] in ("write", "fsync"):
                blocks += 1
                assert found(st["frames"], chain), "%s: blocked in %s: %s" % (
                    binary, st["syscall"], user_funcs(st["frames"]))
    assert named >= 0.95 * len(injected), "%s: %d of %d stalls name the culprit: %s" % (
        binary, named, len(injected), sorted({s["top"] for s in stalls}))
    assert samples >= len(injected) and samples_ok >= 0.95 * samples, \
        "%s: %d of %d samples hold the chain" % (binary, samples_ok, samples)
    # the blocking calls themselves (BLOCK lines) carry the same stacks
    calls = [b for b in of_type(lines, "blocking_call", pid=truth["pid"])
             if b["syscall"] in ("write", "fsync")]
    assert calls and all(found(b["stack"], IO_CHAIN) for b in calls), \
        [user_funcs(b["stack"]) for b in calls if not found(b["stack"], IO_CHAIN)][:3]
    return samples, blocks + len(calls)


def run_chainwork(ctx, binary, *flags):
    out = tmpfile()
    _, lines = run_traced(ctx, [binary, out, str(ITERATIONS), "--go"],
                          "--threshold", THRESHOLD_MS, "--block-threshold", BLOCK_THRESHOLD_MS,
                          *flags, settle=0.5)
    return load_truth(out), lines


def test_c_chain_without_frame_pointers(ctx):
    truth, lines = run_chainwork(ctx, ctx.workload("chainwork"))
    check_chains("chainwork", truth, lines)


def test_c_chain_with_frame_pointers_through_glibc(ctx):
    """The frames glibc's write and fsync wrappers (no frame pointers) used to hide:
    CPU samples taken inside the syscalls name flush_journal too."""
    truth, lines = run_chainwork(ctx, ctx.workload("chainwork_fp"))
    samples = [st for s in of_type(lines, "stall", pid=truth["pid"]) for st in s["stacks"]
               if st["cause"] == "cpu" and user_funcs(st["frames"])[:1] in
               (["__write"], ["write"], ["fsync"], ["__libc_write"])]
    assert samples, "no CPU sample inside write or fsync"
    assert all(chain_found_by_cfi(st["frames"], IO_CHAIN) for st in samples), \
        [user_funcs(st["frames"]) for st in samples][:3]
    check_chains("chainwork_fp", truth, lines)


def test_c_chain_from_a_separate_debug_file(ctx):
    """Stripped: its CFI (.debug_frame) and symbols only in a compressed debug file beside
    it, found through .gnu_debuglink and its CRC."""
    truth, lines = run_chainwork(ctx, ctx.workload("chainwork_split"))
    check_chains("chainwork_split", truth, lines)


def test_c_chain_from_minidebuginfo(ctx):
    """Stripped as Fedora strips: .dynsym (main and the libc it calls) and .gnu_debugdata, an
    xz'd ELF whose .symtab holds the static functions of the chain, the stalls' culprits."""
    binary = ctx.workload("chainwork_minidebug")
    sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True,
                              check=True).stdout
    dynsym = subprocess.run(["nm", "-D", "--defined-only", binary], capture_output=True,
                            text=True, check=True).stdout
    assert ".gnu_debugdata" in sections and " .symtab " not in sections, sections
    assert " main" in dynsym and not any(f in dynsym for f in CPU_CHAIN[:-1] + IO_CHAIN[:-1])
    truth, lines = run_chainwork(ctx, binary)
    check_chains("chainwork_minidebug", truth, lines)


def test_c_chain_stripped_bare_is_one_marker_frame(ctx):
    """Stripped bare (no .symtab, no debug file, no MiniDebugInfo): the chain's five
    unnamed frames of the binary come out as one marker frame that says how many they
    were and whose they are, never as a run of [unknown]s (_start, below libc's frames,
    stays one [unknown])."""
    d = tempfile.mkdtemp(prefix="loopwatch-stripped-")
    try:
        binary = os.path.join(d, "chainwork_bare")
        subprocess.run(["strip", "--strip-all", "-o", binary, ctx.workload("chainwork")],
                       check=True)
        truth, lines = run_chainwork(ctx, binary)
    finally:
        shutil.rmtree(d)
    stacks = [st["frames"] for s in of_type(lines, "stall", pid=truth["pid"])
              for st in s["stacks"] if st["cause"] == "cpu"]
    assert stacks
    markers = 0
    for frames in stacks:
        mine = [f for f in frames if f.get("module") == "chainwork_bare"]
        for a, b in zip(frames, frames[1:]):
            assert not (a["func"] == b["func"] == "[unknown]" and
                        a.get("module") == b.get("module")), frames
        # the leaf may lie in libc or the vDSO (now_ns); _start, under libc's frames, is
        # a frame of the binary's own
        assert mine and all(f["func"] in ("[unknown]",) or f["func"].endswith(
            " unknown frames]") for f in mine), [(f["func"], f.get("module")) for f in frames]
        m = re.match(r"^\[(\d+) unknown frames\]$", mine[0]["func"])
        # the chain and main: 5 (checksum_block or flush_journal at the leaf ... main)
        markers += bool(m and int(m.group(1)) == 5)
    assert markers >= 0.9 * len(stacks), "%d of %d stacks: %s" % (
        markers, len(stacks), [[f["func"] for f in fr] for fr in stacks[:3]])


def test_c_binary_deleted_after_start(ctx):
    """Upgraded or removed while running: the file is reached through map_files."""
    d = tempfile.mkdtemp(prefix="loopwatch-deleted-")
    try:
        binary = os.path.join(d, "chainwork")
        shutil.copy(ctx.workload("chainwork"), binary)
        out = tmpfile()
        w = subprocess.Popen([binary, out, str(ITERATIONS), "--go"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        pid = int(w.stdout.readline())
        os.unlink(binary)
        lw = Loopwatch(ctx, "-p", pid, "-d", 60, "--threshold", THRESHOLD_MS,
                       "--block-threshold", BLOCK_THRESHOLD_MS)
        try:
            lw.start()
            w.stdin.write("go\n")
            w.stdin.flush()
            w.wait(timeout=120)
            lines = lw.stop()
        finally:
            w.kill()
            w.wait()
            lw.kill()
        check_chains("deleted chainwork", load_truth(out), lines)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_frame_pointers_only_marks_every_frame(ctx):
    """--unwind-mb 0: no tables. Past the leaf every frame says how it was found (a frame
    pointer, a word of the stack), or the walk says why it stopped: nothing unmarked."""
    truth, lines = run_chainwork(ctx, ctx.workload("chainwork"), "--unwind-mb", "0")
    stacks = [st for s in of_type(lines, "stall", pid=truth["pid"]) for st in s["stacks"]]
    assert stacks
    for st in stacks:
        user = [f for f in st["frames"] if f["kind"] != "kernel"]
        for f in user[1:]:
            assert f.get("unwind") in ("fp", "scan") or f["func"].startswith("[unwind:"), user
    # and without CFI the CPU chain breaks under checksum_block: what the tables fix
    cpu = [st for st in stacks if st["cause"] == "cpu" and "checksum_block" in
           user_funcs(st["frames"])]
    assert cpu and not any(in_order(user_funcs(st["frames"]), CPU_CHAIN) for st in cpu), \
        [user_funcs(st["frames"]) for st in cpu][:3]


def test_jit_code_named_by_a_hostile_perf_map(ctx):
    """JIT code (an anonymous executable mapping) named by /tmp/perf-PID.map among lines
    no parser should accept; a truncated ELF mapped executable; the map vanishing and
    coming back. Frames past the JIT frame are found by its frame pointer, and marked."""
    trunc = tmpfile(".so")
    with open("/lib/x86_64-linux-gnu/libz.so.1", "rb") as src, open(trunc, "wb") as dst:
        dst.write(src.read(12000))
    out = tmpfile()
    try:
        _, lines = run_traced(ctx, [ctx.workload("jitwork"), out, "30", trunc, "--go"],
                              "--threshold", THRESHOLD_MS, settle=0.5)
    finally:
        os.unlink(trunc)
    truth = load_truth(out)
    stalls = of_type(lines, "stall", pid=truth["pid"])
    named = [r for r in truth["records"] if r["phase"] == "named"]
    good = 0
    for r in named:
        s = stall_of(stalls, r)
        assert s, "no stall at %.3f" % r["start"]
        for st in s["stacks"]:
            if st["cause"] != "cpu":
                continue
            funcs = user_funcs(st["frames"])
            jit = [f for f in st["frames"] if f["kind"] == "jit"]
            after = funcs[funcs.index("jit_trampoline") + 1:] if "jit_trampoline" in funcs \
                else []
            good += bool(jit and in_order(funcs, ["jit_callee", "jit_trampoline", "run_jit",
                                                  "main"]) and
                         [f for f in st["frames"] if f["func"] == "run_jit"][0].get("unwind")
                         == "fp" and after[:1] == ["run_jit"])
    assert good >= 0.9 * len(named), "%d of %d named stalls through the JIT frame" % (
        good, len(named))
    # after the map vanished loopwatch went on: every later iteration is still a stall
    later = [r for r in truth["records"] if r["phase"] != "named"]
    assert all(stall_of(stalls, r) for r in later), "stalls lost after the map vanished"


def test_debian_python_json_native_part(ctx):
    """Debian's python3 has no frame pointers: a json.dumps stall's samples walk from the
    _json encoder (encoder_*) through the interpreter's eval frames (the Python frames
    spliced where they ran) to Py_BytesMain and _start, with the built-in json.dumps
    uretprobe pending on encoder_call all along."""
    out = tmpfile()
    pid, lines = run_traced(ctx, ["/usr/bin/python3", os.path.join(APPS, "probe_json.py"),
                                  out, "10"], settle=1.0)
    load_truth(out)
    stacks = [st for s in of_type(lines, "stall", pid=pid) for st in s["stacks"]
              if st["cause"] == "cpu"]
    in_encoder = [st for st in stacks if any(f["func"].startswith("encoder_") and
                                             f["kind"] == "native" for f in st["frames"])]
    total = sum(st["samples"] for st in stacks)
    enc = sum(st["samples"] for st in in_encoder)
    assert total and enc >= 0.3 * total, "%d of %d samples in the encoder" % (enc, total)
    whole = 0
    for st in in_encoder:
        frames = [f for f in st["frames"] if f["kind"] != "kernel"]
        kinds = ["python" if f["kind"] == "python" else f["func"] for f in frames]
        ok = in_order(kinds, ["encoder_call", "python", "Py_RunMain", "Py_BytesMain",
                              "_start"]) and kinds[-1] == "_start"
        ok = ok and any(f["kind"] == "python" and f["func"] == "dumps" for f in frames)
        ok = ok and not any(f.get("unwind") for f in frames)
        whole += st["samples"] if ok else 0
    assert whole >= 0.95 * enc, "%d of %d encoder samples walk to _start: %s" % (
        whole, enc, [user_funcs(st["frames"]) for st in in_encoder][:2])


def test_node_cpp_frames_demangled(ctx):
    """V8's and node's C++ frames by name, in JSON (the raw symbol beside) and in text:
    the lines as printed, and the folded stacks (--folded), which hold every frame."""
    pid, _, lines = node_native(ctx, [], ["report"])
    frames = [f for s in of_type(lines, "stall", pid=pid) for st in s["stacks"]
              for f in st["frames"] if f["kind"] == "native"]
    stringify = [f for f in frames if f["func"].startswith("v8::internal::JsonStringifier::")]
    assert stringify and all(f["func_raw"].startswith("_ZN2v88internal15JsonStringifier")
                             for f in stringify), stringify[:3]
    assert not [f for f in frames if f["func"].startswith("_Z")], \
        [f["func"] for f in frames if f["func"].startswith("_Z")][:3]
    assert all("(" not in f["func"] or "(anonymous namespace)" in f["func"] or
               "operator()" in f["func"] for f in frames)
    folded = tmpfile(".folded")
    _, _, text = node_native(ctx, [], ["report"], "--folded", folded, text=True)
    with open(folded) as f:
        stacks = f.read()
    os.unlink(folded)
    assert [l for l in text if " STALL " in l], text[-5:]
    assert "v8::internal::JsonStringifier::Serialize_;" in stacks, stacks[:2000]
    assert "_ZN" not in stacks and not [l for l in text if "_ZN" in l], \
        [l for l in text + stacks.splitlines() if "_ZN" in l][:3]


def named_funcs(stall):
    """JS functions a stall's stacks name: V8's frames (js) or the perf map's (jit)."""
    return {f["func"] for st in stall["stacks"] for f in st["frames"]
            if f["kind"] in ("js", "jit")}


def test_node_perf_basic_prof_names_the_handlers(ctx):
    """--perf-basic-prof: node's JIT code is named (by V8's frames where its walker runs,
    else by the perf map); the /late handler is compiled only after loopwatch started.
    No JIT frame is left unnamed."""
    pid, truth, lines = node_native(ctx, ["--perf-basic-prof"], ["report", "late"])
    stalls = of_type(lines, "stall", pid=pid)
    report = [s for s in stalls if "renderReport" in named_funcs(s)]
    late = [s for s in stalls if "lateHandler" in named_funcs(s)]
    assert len(report) >= 2 and len(late) >= 2, ([sorted(named_funcs(s))[:8] for s in stalls],
                                                 truth)
    unnamed = [f for s in stalls for st in s["stacks"] for f in st["frames"]
               if f["kind"] == "jit" and f["func"] == "[unknown]"]
    assert not unnamed, unnamed[:3]


def test_python_perf_trampolines_named_from_the_map(ctx):
    """Python 3.12's -X perf: each function's trampoline, made when it first runs (after
    loopwatch attached), named from /tmp/perf-PID.map as a jit frame with its file."""
    python = os.path.expanduser("~/.pyenv/versions/3.12.1/bin/python3.12")
    pid, lines = run_traced(ctx, [python, "-X", "perf", os.path.join(APPS, "py_perf_loop.py")],
                            settle=0.5)
    if os.path.exists("/tmp/perf-%d.map" % pid):
        os.unlink("/tmp/perf-%d.map" % pid)
    stalls = of_type(lines, "stall", pid=pid)
    named = [s for s in stalls if any(f["kind"] == "jit" and f["func"] == "spin_handler" and
                                      f["file"].endswith("py_perf_loop.py")
                                      for st in s["stacks"] for f in st["frames"])]
    assert len(stalls) >= 10 and len(named) >= 0.8 * len(stalls), \
        (len(named), len(stalls), [user_funcs(st["frames"]) for st in stalls[-1]["stacks"]])

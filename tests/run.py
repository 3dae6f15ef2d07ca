#!/usr/bin/env python3
"""Runs every loopwatch test: unit test binaries, the fuzz targets briefly, then the
end-to-end tests.

End-to-end tests live in tests/e2e/test_*.py; each top-level function named
test_* gets a Context and fails by raising. They attach real BPF programs to
real processes: there is no skip. Without BPF they fail (also under CI=true).
Prints 'N passed, N failed' last and exits non-zero on any failure.
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "e2e"))


class Context:
    def __init__(self, build):
        self.build = build
        self.loopwatch = os.path.join(build, "loopwatch")

    def workload(self, name):
        return os.path.join(self.build, "workloads", name)


def unit_tests(build):
    d = os.path.join(build, "tests")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("test_"))


# each fuzz target's seeds ({build}: the build directory); a few seconds each in make test
FUZZ_SECONDS = float(os.environ.get("FUZZ_SECONDS", "4"))
FUZZ_SEEDS = {
    "fuzz_cfi": ["{build}/workloads/chainwork", "{build}/workloads/chainwork_split",
                 "{build}/workloads/chainwork_split.debug"],
    "fuzz_perfmap": [os.path.join(HERE, "fuzz", "seeds", "perf.map")],
    "fuzz_demangle": [os.path.join(HERE, "fuzz", "seeds", "name%d.txt" % i) for i in range(1, 7)],
    "fuzz_maps": ["/proc/self/maps", "/proc/1/maps"],
    "fuzz_procstat": ["/proc/self/stat", "/proc/1/stat"],
    "fuzz_elf": ["{build}/workloads/stallwork", "/usr/lib/x86_64-linux-gnu/libz.so.1"],
    "fuzz_minidebug": ["{build}/workloads/chainwork_minidebug.gnu_debugdata",
                       "{build}/workloads/stallwork"],
    "fuzz_promproto": [os.path.join(HERE, "fuzz", "seeds", "metrics.prom")],
}


def fuzz_targets(build):
    d = os.path.join(build, "fuzz")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("fuzz_"))


def fuzz_argv(build, path):
    seeds = [p.format(build=build) for p in FUZZ_SEEDS.get(os.path.basename(path), [])]
    return [path, str(FUZZ_SECONDS)] + seeds


def e2e_tests(only):
    tests = []
    d = os.path.join(HERE, "e2e")
    for f in sorted(os.listdir(d)):
        if not (f.startswith("test_") and f.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(f[:-3], os.path.join(d, f))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in dir(mod):
            fn = getattr(mod, name)
            if name.startswith("test_") and callable(fn):
                full = "%s.%s" % (f[:-3], name)
                if not only or any(o in full for o in only):
                    tests.append((full, fn))
    return tests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--load", type=int, default=0,
                    help="CPU hogs to run meanwhile (make test LOAD=N): a loaded host")
    ap.add_argument("only", nargs="*", help="substrings of test names to run")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if os.geteuid() != 0:
        print("tests/run.py: the tests attach BPF programs: run as root", file=sys.stderr)
        sys.exit(1)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.load)]
    if hogs:
        print("load: %d CPU hogs (pids %s)" % (len(hogs), " ".join(str(h.pid) for h in hogs)),
              flush=True)
    try:
        passed, failed = run_all(build, args.only)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    if failed:
        print("failed: " + " ".join(failed))
    print("%d passed, %d failed" % (passed, len(failed)))
    sys.exit(1 if failed else 0)


def run_all(build, only):
    """Every unit test binary, the fuzz targets, then every e2e test: (passed, names of
    the failed)."""
    passed, failed = 0, []
    for path in unit_tests(build):
        name = "unit." + os.path.basename(path)
        if only and not any(o in name for o in only):
            continue
        t0 = time.time()
        r = subprocess.run([path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        ok = r.returncode == 0
        print("%s %s (%.1fs)" % ("PASS" if ok else "FAIL", name, time.time() - t0), flush=True)
        if ok:
            passed += 1
        else:
            print(r.stdout[-4000:])
            failed.append(name)
    for path in fuzz_targets(build):
        name = "fuzz." + os.path.basename(path)
        if only and not any(o in name for o in only):
            continue
        t0 = time.time()
        r = subprocess.run(fuzz_argv(build, path), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        ok = r.returncode == 0
        print("%s %s (%.1fs) %s" % ("PASS" if ok else "FAIL", name, time.time() - t0,
                                    r.stdout.strip().splitlines()[-1] if ok and r.stdout else ""),
              flush=True)
        if ok:
            passed += 1
        else:
            print(r.stdout[-4000:])
            failed.append(name)
    ctx = Context(build)
    for name, fn in e2e_tests(only):
        t0 = time.time()
        try:
            fn(ctx)
            passed += 1
            print("PASS %s (%.1fs)" % (name, time.time() - t0), flush=True)
        except Exception:
            failed.append(name)
            print("FAIL %s (%.1fs)" % (name, time.time() - t0), flush=True)
            traceback.print_exc()
            sys.stdout.flush()
    return passed, failed


if __name__ == "__main__":
    main()

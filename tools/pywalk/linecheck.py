"""Line-table vectors for linecheck: every code unit of every code object in the
running interpreter's stdlib, with CPython's own answer (PyCode_Addr2Line).
Usage: PYTHON linecheck.py | build/pywalk/linecheck
One line per code object: FORMAT FIRSTLINE HEXTABLE LINE0 LINE1 ... (per code unit)."""
import ctypes
import os
import sys
import types
import warnings

warnings.simplefilter("ignore")
VER = sys.version_info[:2]
FMT = 0 if VER < (3, 10) else 1 if VER == (3, 10) else 2   # enum pyline_format
addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


out = sys.stdout
libdir = os.path.dirname(os.__file__)
for root, dirs, files in os.walk(libdir):
    if "site-packages" in root or "test" in root.split(os.sep)[-1]:
        continue
    for fn in sorted(files):
        if not fn.endswith(".py"):
            continue
        path = os.path.join(root, fn)
        try:
            top = compile(open(path, "rb").read(), path, "exec")
        except Exception:
            continue
        for co in codes(top):
            tab = co.co_lnotab if VER < (3, 10) else co.co_linetable
            lines = [addr2line(co, u * 2) for u in range(len(co.co_code) // 2)]
            out.write("%d %d %s %s\n" % (FMT, co.co_firstlineno, tab.hex() or "-",
                                          " ".join(map(str, lines))))

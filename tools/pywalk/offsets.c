// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Offset checker for loopwatch CPython frame walking.
 * Build: gcc -DPy_BUILD_CORE -I<inc> -I<inc>/internal offsets.c -o offsets_X
 * (see build_offsets.sh). Prints "name value" lines. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX < 0x03090000
#  include "internal/pycore_pystate.h"     /* _PyRuntimeState, PyInterpreterState (3.8) */
#  include "frameobject.h"
#else
#  include "internal/pycore_runtime.h"
#  include "internal/pycore_interp.h"
#  if PY_VERSION_HEX >= 0x030B0000
#    include "internal/pycore_frame.h"
#  endif
#  if PY_VERSION_HEX < 0x030B0000
#    include "frameobject.h"
#  else
#    include "internal/pycore_frame.h"
#  endif
#endif

#define P(name, val) printf("%-44s %6zu  0x%zx\n", name, (size_t)(val), (size_t)(val))
#define O(T, f) P(#T "." #f, offsetof(T, f))
#define S(T) P("sizeof(" #T ")", sizeof(T))

int main(void) {
    printf("PY_VERSION %s  hex 0x%08x\n", PY_VERSION, PY_VERSION_HEX);
    /* ---- runtime ---- */
    S(_PyRuntimeState);
    O(_PyRuntimeState, interpreters.head);
    O(_PyRuntimeState, interpreters.main);
    O(_PyRuntimeState, main_thread);
#if PY_VERSION_HEX >= 0x030D0000
    O(_PyRuntimeState, main_tstate);
    O(_PyRuntimeState, debug_offsets);
    S(_Py_DebugOffsets);
#endif
    O(_PyRuntimeState, gilstate);
#if PY_VERSION_HEX < 0x030C0000
    O(_PyRuntimeState, gilstate.tstate_current);
    O(_PyRuntimeState, gilstate.autoTSSkey);
    O(_PyRuntimeState, gilstate.autoTSSkey._key);
#else
    O(_PyRuntimeState, autoTSSkey);
    O(_PyRuntimeState, autoTSSkey._key);
#endif
    S(Py_tss_t);
    O(Py_tss_t, _is_initialized);
    O(Py_tss_t, _key);
    /* ---- interpreter ---- */
#if PY_VERSION_HEX < 0x030B0000
    O(PyInterpreterState, tstate_head);
#else
    O(PyInterpreterState, threads.head);
#endif
    /* ---- thread state ---- */
    O(PyThreadState, next);
    O(PyThreadState, interp);
#if PY_VERSION_HEX < 0x030B0000
    O(PyThreadState, frame);
#elif PY_VERSION_HEX < 0x030D0000
    O(PyThreadState, cframe);
    O(_PyCFrame, current_frame);
    O(_PyCFrame, previous);
#else
    O(PyThreadState, current_frame);
#endif
    O(PyThreadState, thread_id);
#if PY_VERSION_HEX >= 0x030B0000
    O(PyThreadState, native_thread_id);
#endif
    /* ---- frames ---- */
#if PY_VERSION_HEX < 0x030B0000
    O(PyFrameObject, f_back);
    O(PyFrameObject, f_code);
    O(PyFrameObject, f_lasti);
    O(PyFrameObject, f_lineno);
#else
#  if PY_VERSION_HEX < 0x030D0000
    O(_PyInterpreterFrame, f_code);
    O(_PyInterpreterFrame, prev_instr);
#  else
    O(_PyInterpreterFrame, f_executable);
    O(_PyInterpreterFrame, instr_ptr);
#  endif
    O(_PyInterpreterFrame, previous);
    O(_PyInterpreterFrame, frame_obj);
    O(_PyInterpreterFrame, owner);
#  if PY_VERSION_HEX < 0x030C0000
    O(_PyInterpreterFrame, is_entry);
    O(_PyInterpreterFrame, f_func);
#  else
    O(_PyInterpreterFrame, f_funcobj);
#  endif
    O(_PyInterpreterFrame, localsplus);
#endif
    /* ---- code object ---- */
    O(PyCodeObject, co_name);
#if PY_VERSION_HEX >= 0x030B0000
    O(PyCodeObject, co_qualname);
#endif
    O(PyCodeObject, co_filename);
    O(PyCodeObject, co_firstlineno);
#if PY_VERSION_HEX < 0x030A0000
    O(PyCodeObject, co_lnotab);
#else
    O(PyCodeObject, co_linetable);
#endif
#if PY_VERSION_HEX < 0x030B0000
    O(PyCodeObject, co_code);
#else
    O(PyCodeObject, co_code_adaptive);
    O(PyCodeObject, _co_firsttraceable);
#endif
    /* ---- objects ---- */
    O(PyObject, ob_type);
    O(PyVarObject, ob_size);
    O(PyTypeObject, tp_name);
    O(PyBytesObject, ob_sval);
    S(PyASCIIObject);
    S(PyCompactUnicodeObject);
    O(PyASCIIObject, length);
    O(PyASCIIObject, hash);
    O(PyASCIIObject, state);
    {   /* locate state bit-fields empirically: set one at a time in a zeroed struct */
        PyASCIIObject a; unsigned char *b = (unsigned char *)&a + offsetof(PyASCIIObject, state);
        unsigned int w;
#define BIT(field, v) do { memset(&a, 0, sizeof a); a.state.field = v; memcpy(&w, b, 4); \
        printf("state.%-14s mask 0x%08x\n", #field, w); } while (0)
#if PY_VERSION_HEX < 0x030C0000
        BIT(interned, 3);
#else
        BIT(interned, 3);
#endif
        BIT(kind, 7);
        BIT(compact, 1);
        BIT(ascii, 1);
#if PY_VERSION_HEX < 0x030C0000
        BIT(ready, 1);
#endif
#if PY_VERSION_HEX >= 0x030C0000
        BIT(statically_allocated, 1);
#endif
    }
    return 0;
}

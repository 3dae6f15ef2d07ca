// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython processes: which version runs where (from the ELF file that
 * holds _PyRuntime), the layout the BPF walker needs for it, and the
 * names, files and lines of the code objects the walker saw, read from
 * the target's memory. Everything read from the target is untrusted: it
 * may exit or reuse its memory at any moment, so a bad read gives a
 * marker frame, never a crash or garbage text.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "proc/elf.h"
#include "proc/procs.h"
#include "runtimes/python/pyline.h"
#include "runtimes/python/python.h"

/* how the frame's position counts */
enum py_pos {
	POS_LASTI_BYTES,	/* int f_lasti, bytes into co_code */
	POS_LASTI_UNITS,	/* int f_lasti, 2-byte code units */
	POS_INSTR_PTR,		/* pointer into co_code_adaptive */
};

/*
 * One CPython minor version on x86_64 (default build, not free-threaded or
 * debug). Every number is offsetof()/sizeof() printed by a program built
 * against that version's own headers, then checked on live processes with
 * raw memory reads (all threads, all frames, lines against the source):
 * tools/pywalk/OFFSETS.md §1-2 (tools/pywalk/offsets.c against each version's
 * headers), measured on 3.8.18, 3.9.18, 3.10.13, 3.11.7 (identical to
 * Debian's 3.11.2), 3.12.1, 3.13.0.
 */
struct py_layout {
	unsigned int minor;	/* of 3.x */
	__u32 flags;		/* LW_PY_F_CFRAME, LW_PY_F_NATIVE_TID */
	bool every_entry;	/* a C eval call per frame (frame objects, 3.8-3.10) */
	bool shims;		/* owner FRAME_OWNED_BY_CSTACK frames mark eval calls (3.12+) */
	/* _PyRuntimeState */
	__u32 tss_key;		/* (gilstate.)autoTSSkey._key */
	__u32 interp_main;	/* interpreters.main */
	/* PyInterpreterState */
	__u32 interp_threads;	/* tstate_head (3.8-3.10), threads.head */
	/* PyThreadState */
	__u32 tstate_next, tstate_thread_id, tstate_native_tid, tstate_frame, cframe_frame;
	/* PyFrameObject / _PyInterpreterFrame */
	__u32 frame_code, frame_back, frame_pos, frame_owner, frame_is_entry;
	/* PyCodeObject; co_qualname 0 before 3.11 */
	__u32 co_firstlineno, co_filename, co_name, co_qualname, co_lines, co_code_adaptive;
	/* sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject): where text starts */
	__u32 str_ascii, str_compact;
	/*
	 * 3.14+ with asyncio loaded: _PyThreadStateImpl.asyncio_running_task,
	 * TaskObj.task_name and task_coro, PyGenObject's gi_name (0: unknown)
	 */
	__u32 tstate_task, task_name, task_coro, gen_name;
	/*
	 * The GIL (struct _gil_runtime_state): in _PyRuntimeState (ceval.gil,
	 * 3.8-3.11), or where PyInterpreterState's ceval.gil points (3.12+);
	 * its last_holder and locked.
	 */
	__u32 runtime_gil, interp_gil, gil_holder, gil_locked;
	enum pyline_format lines;
	enum py_pos pos;
};

static const struct py_layout layouts[] = {
	{	/* 3.8: gilstate 0x550 + autoTSSkey 0x20; f_lasti in bytes, co_lnotab */
		.minor = 8, .every_entry = true,
		.tss_key = 0x574, .interp_main = 0x28, .interp_threads = 0x08,
		.tstate_next = 0x08, .tstate_thread_id = 0xb0, .tstate_frame = 0x18,
		.frame_code = 0x20, .frame_back = 0x18, .frame_pos = 0x68,
		.co_firstlineno = 0x28, .co_filename = 0x68, .co_name = 0x70, .co_lines = 0x78,
		.str_ascii = 0x30, .str_compact = 0x48,
		.lines = PYLINE_LNOTAB, .pos = POS_LASTI_BYTES,
		.runtime_gil = 0x480, .gil_holder = 0x08, .gil_locked = 0x10,
	},
	{	/* 3.9: gilstate moved to 0x230 */
		.minor = 9, .every_entry = true,
		.tss_key = 0x24c, .interp_main = 0x28, .interp_threads = 0x08,
		.tstate_next = 0x08, .tstate_thread_id = 0xb0, .tstate_frame = 0x18,
		.frame_code = 0x20, .frame_back = 0x18, .frame_pos = 0x68,
		.co_firstlineno = 0x28, .co_filename = 0x68, .co_name = 0x70, .co_lines = 0x78,
		.str_ascii = 0x30, .str_compact = 0x48,
		.lines = PYLINE_LNOTAB, .pos = POS_LASTI_BYTES,
		.runtime_gil = 0x160, .gil_holder = 0x08, .gil_locked = 0x10,
	},
	{	/* 3.10: f_lasti at 0x60 counts code units; co_linetable */
		.minor = 10, .every_entry = true,
		.tss_key = 0x24c, .interp_main = 0x28, .interp_threads = 0x08,
		.tstate_next = 0x08, .tstate_thread_id = 0xb0, .tstate_frame = 0x18,
		.frame_code = 0x20, .frame_back = 0x18, .frame_pos = 0x60,
		.co_firstlineno = 0x28, .co_filename = 0x68, .co_name = 0x70, .co_lines = 0x78,
		.str_ascii = 0x30, .str_compact = 0x48,
		.lines = PYLINE_LINETABLE_310, .pos = POS_LASTI_UNITS,
		.runtime_gil = 0x160, .gil_holder = 0x08, .gil_locked = 0x10,
	},
	{	/* 3.11: _PyInterpreterFrame via tstate->cframe->current_frame */
		.minor = 11, .flags = LW_PY_F_CFRAME | LW_PY_F_NATIVE_TID,
		.tss_key = 0x254, .interp_main = 0x30, .interp_threads = 0x10,
		.tstate_next = 0x08, .tstate_thread_id = 0x98, .tstate_native_tid = 0xa0,
		.tstate_frame = 0x38, .cframe_frame = 0x08,
		.frame_code = 0x20, .frame_back = 0x30, .frame_pos = 0x38, .frame_owner = 0x45,
		.frame_is_entry = 0x44,
		.co_firstlineno = 0x48, .co_filename = 0x70, .co_name = 0x78, .co_qualname = 0x80,
		.co_lines = 0x88, .co_code_adaptive = 0xb8,
		.str_ascii = 0x30, .str_compact = 0x48,
		.lines = PYLINE_LOCATIONS, .pos = POS_INSTR_PTR,
		.runtime_gil = 0x168, .gil_holder = 0x08, .gil_locked = 0x10,
	},
	{	/* 3.12: autoTSSkey leaves gilstate; shim frames (owner 3) mark eval calls */
		.minor = 12, .flags = LW_PY_F_CFRAME | LW_PY_F_NATIVE_TID, .shims = true,
		.tss_key = 0x60c, .interp_main = 0x30, .interp_threads = 0x48,
		.tstate_next = 0x08, .tstate_thread_id = 0x88, .tstate_native_tid = 0x90,
		.tstate_frame = 0x38, .cframe_frame = 0x00,
		.frame_code = 0x00, .frame_back = 0x08, .frame_pos = 0x38, .frame_owner = 0x46,
		.co_firstlineno = 0x44, .co_filename = 0x70, .co_name = 0x78, .co_qualname = 0x80,
		.co_lines = 0x88, .co_code_adaptive = 0xc0,
		.str_ascii = 0x28, .str_compact = 0x38,
		.lines = PYLINE_LOCATIONS, .pos = POS_INSTR_PTR,
		.interp_gil = 0x180, .gil_holder = 0x08, .gil_locked = 0x10,
	},
	{	/* 3.13: no _PyCFrame, tstate->current_frame; f_executable, instr_ptr */
		.minor = 13, .flags = LW_PY_F_NATIVE_TID, .shims = true,
		.tss_key = 0x874, .interp_main = 0x280, .interp_threads = 0x1cb0,
		.tstate_next = 0x08, .tstate_thread_id = 0x98, .tstate_native_tid = 0xa0,
		.tstate_frame = 0x48,
		.frame_code = 0x00, .frame_back = 0x08, .frame_pos = 0x38, .frame_owner = 0x46,
		.co_firstlineno = 0x44, .co_filename = 0x70, .co_name = 0x78, .co_qualname = 0x80,
		.co_lines = 0x88, .co_code_adaptive = 0xc8,
		.str_ascii = 0x28, .str_compact = 0x38,
		.lines = PYLINE_LOCATIONS, .pos = POS_INSTR_PTR,
		.interp_gil = 0x10, .gil_holder = 0x08, .gil_locked = 0x10,
	},
};

/*
 * sizeof(struct _gil_runtime_state) in every supported version: interval,
 * last_holder, locked, switch_number, then the condition variables and
 * mutexes (pthread's) a waiter sleeps on.
 */
#define PY_GIL_SIZE 0xd0

/* the same in every supported version */
#define PY_OB_TYPE	0x08	/* PyObject.ob_type */
#define PY_OB_SIZE	0x10	/* PyVarObject.ob_size */
#define PY_TP_NAME	0x18	/* PyTypeObject.tp_name */
#define PY_BYTES_DATA	0x20	/* PyBytesObject.ob_sval */
#define PY_STR_LENGTH	0x10	/* PyASCIIObject.length */
#define PY_STR_STATE	0x20	/* PyASCIIObject.state: kind 0x1c compact 0x20 ascii 0x40 */
#define PY_CODE_READ	0x90	/* bytes of a code object that hold every field above */
#define PY_STR_HDR_MAX	0x48	/* sizeof(PyASCIIObject) at most */

/*
 * glibc 2.36 (Debian 12) struct pthread, from libc6-dbg `ptype /o`, checked
 * against pthread_getspecific() (tools/pywalk/OFFSETS.md §1.3). Another glibc
 * may differ: the walker checks what it finds and falls back to the thread list.
 */
#define GLIBC_SPECIFIC_1STBLOCK 0x310
#define GLIBC_SPECIFIC 0x510

static const struct py_layout *layout__find(unsigned int version)
{
	if (version >> 8 != 3)
		return NULL;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		if (layouts[i].minor == (version & 0xff))
			return &layouts[i];
	}
	return NULL;
}

static __u32 end__max(__u32 end, __u32 off, __u32 size)
{
	return off + size > end ? off + size : end;
}

static void layout__fill(const struct py_layout *l, struct lw_py_proc *p)
{
	__u32 ts = 0, fr = 0;

	p->version = 3 << 8 | l->minor;
	p->flags = l->flags;
	p->tss_key = l->tss_key;
	p->interp_main = l->interp_main;
	p->interp_threads = l->interp_threads;
	p->tstate_next = l->tstate_next;
	p->tstate_thread_id = l->tstate_thread_id;
	p->tstate_native_tid = l->tstate_native_tid;
	p->tstate_frame = l->tstate_frame;
	p->cframe_frame = l->cframe_frame;
	p->frame_code = l->frame_code;
	p->frame_back = l->frame_back;
	p->frame_pos = l->frame_pos;
	p->pos_shift = l->pos == POS_INSTR_PTR ? 0 : 32;
	p->frame_owner = l->frame_owner;
	p->shim_owner = l->shims ? 3 : LW_PY_NO_SHIM;	/* FRAME_OWNED_BY_CSTACK */
	p->frame_is_entry = l->frame_is_entry;
	p->is_entry_mask = l->frame_is_entry ? 1 : 0;
	p->every_entry = l->every_entry;
	p->tstate_task = l->tstate_task;
	p->task_name = l->task_name;
	p->task_coro = l->gen_name ? l->task_coro : 0;
	p->gen_name = l->task_coro ? l->gen_name : 0;
	/* read only as far as the last field used: a frame may end its mapping */
	ts = end__max(ts, l->tstate_next, 8);
	ts = end__max(ts, l->tstate_thread_id, 8);
	ts = end__max(ts, l->tstate_native_tid, 8);
	ts = end__max(ts, l->tstate_frame, 8);
	fr = end__max(fr, l->frame_code, 8);
	fr = end__max(fr, l->frame_back, 8);
	fr = end__max(fr, l->frame_pos, 8);
	fr = end__max(fr, l->frame_owner, 1);
	fr = end__max(fr, l->frame_is_entry, 1);
	p->tstate_read = (ts + 7) & ~7u;
	p->frame_read = (fr + 7) & ~7u;
}

/* ------------------------------------------------------------------ */
/* the target's memory */

static uint64_t word__at(const uint8_t *buf, size_t off)
{
	uint64_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

static uint32_t u32__at(const uint8_t *buf, size_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* ------------------------------------------------------------------ */
/* detection */

enum py_libc { LIBC_UNKNOWN, LIBC_GLIBC, LIBC_MUSL };

/*
 * The file that holds _PyRuntime: libpython when one is mapped (shared
 * builds, embedders), else the executable if it is named python*.
 */
static const struct proc_mapping *maps__find_python(struct proc *p, enum py_libc *libc)
{
	const struct proc_maps *maps = proc__maps(p, false);
	const struct proc_mapping *lib = NULL, *bin = NULL;
	char exe[PATH_MAX];

	if (!maps)
		return NULL;
	if (!proc__exe(p, exe, sizeof(exe)))
		exe[0] = '\0';
	*libc = LIBC_UNKNOWN;
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		const char *base = proc_mapping__basename(m);

		if (m->type != PROC_MAP_FILE)
			continue;
		if (!strncmp(base, "libc.so.", 8) || !strncmp(base, "libc-2.", 7))
			*libc = LIBC_GLIBC;
		else if (!strncmp(base, "ld-musl", 7) || !strncmp(base, "libc.musl", 9))
			*libc = LIBC_MUSL;
		if (!lib && !strncmp(base, "libpython", 9) && strstr(base, ".so"))
			lib = m;
		else if (!bin && exe[0] && !strcmp(m->path, exe) && !strncmp(base, "python", 6))
			bin = m;
	}
	return lib ? lib : bin;
}

enum py_sym { SYM_RUNTIME, SYM_VERSION, SYM_NEWREF, SYM_GETCODE, SYM_POSONLY, SYM_DEBUG, SYM_N };

/* what each says: tools/pywalk/OFFSETS.md §4 and nm -D of every build here */
static const char *const sym_names[SYM_N] = {
	[SYM_RUNTIME] = "_PyRuntime",		/* 3.7+ */
	[SYM_VERSION] = "Py_Version",		/* 3.11+: PY_VERSION_HEX */
	[SYM_NEWREF] = "Py_NewRef",		/* 3.10+ */
	[SYM_GETCODE] = "PyFrame_GetCode",	/* 3.9+ */
	[SYM_POSONLY] = "PyCode_NewWithPosOnlyArgs",	/* 3.8+ */
	[SYM_DEBUG] = "_Py_NegativeRefcount",	/* Py_REF_DEBUG builds only */
};

struct py_elf {
	uint64_t value[SYM_N];
	bool found[SYM_N];
	uint32_t hexversion;	/* from Py_Version's bytes in the file; 0 if none */
	uint64_t bias;		/* load address - link address */
	bool bias_ok;
};

static int symbol__note(const struct elf_symbol *sym, void *ctx)
{
	struct py_elf *pe = ctx;

	if (sym->name[0] != '_' && sym->name[0] != 'P')
		return 0;
	for (int k = 0; k < SYM_N; k++) {
		if (!pe->found[k] && !strcmp(sym->name, sym_names[k])) {
			pe->found[k] = true;
			pe->value[k] = sym->value;
		}
	}
	return 0;
}

static bool elf__inspect(int fd, const struct proc_mapping *m, struct py_elf *pe)
{
	struct elf_handle h;

	memset(pe, 0, sizeof(*pe));
	if (elf__open_fd(&h, fd))
		return false;
	elf__symbols(&h, SHT_DYNSYM, symbol__note, pe);
	elf__symbols(&h, SHT_SYMTAB, symbol__note, pe);
	/* Py_Version is const data: read it from the file, not the process */
	if (pe->found[SYM_VERSION] &&
	    elf__read(&h, pe->value[SYM_VERSION], &pe->hexversion, sizeof(pe->hexversion)))
		pe->hexversion = 0;
	pe->bias_ok = !elf__bias(&h, m->start, m->offset, &pe->bias);
	elf__close(&h);
	return true;
}

/* "python3.9", "libpython2.7.so.1.0", "libpython3.7m.so": major.minor from a name */
static unsigned int version__from_name(const char *base)
{
	unsigned int major, minor;
	const char *p = strstr(base, "python");

	if (!p || sscanf(p + 6, "%u.%u", &major, &minor) != 2 || major > 9 || minor > 99)
		return 0;
	return major << 8 | minor;
}

/*
 * major << 8 | minor, and the version text. Py_Version is exact (3.11+);
 * before it, the API that each minor version added says which one it is;
 * without _PyRuntime (2.7, 3.6) only the file name is left.
 */
static unsigned int version__detect(const struct py_elf *pe, const char *base, char *buf,
				    size_t len)
{
	unsigned int v = 0;

	if (pe->hexversion >> 24 == 3) {
		snprintf(buf, len, "%u.%u.%u", pe->hexversion >> 24, (pe->hexversion >> 16) & 0xff,
			 (pe->hexversion >> 8) & 0xff);
		return pe->hexversion >> 16;
	}
	if (pe->found[SYM_RUNTIME])
		v = pe->found[SYM_NEWREF] ? 0x30a : pe->found[SYM_GETCODE] ? 0x309 :
		    pe->found[SYM_POSONLY] ? 0x308 : 0x307;
	else
		v = version__from_name(base);
	if (v)
		snprintf(buf, len, "%u.%u", v >> 8, v & 0xff);
	else
		snprintf(buf, len, "unknown");
	return v;
}

/*
 * CPython 3.13+ starts _PyRuntime with _Py_DebugOffsets
 * (Include/internal/pycore_debug_offsets.h): a cookie, its version, and
 * the offsets an out-of-process reader needs, as that very build compiled
 * them. Where each offset sits inside _Py_DebugOffsets differs per minor
 * version (groups grow): these are its positions, from the header of each
 * minor and the .PyRuntime bytes of pyenv 3.13.0, Debian's 3.13.5, 3.14.8
 * and 3.15.0. The values are the target's own, so any patch level or
 * distro build of a known minor is walked from what it says.
 */
#define DEBUG_COOKIE "xdebugpy"
#define DEBUG_RUNTIME_SIZE 0x18		/* runtime_state.size, every version */
#define DEBUG_INTERPRETERS_HEAD 0x28	/* runtime_state.interpreters_head */
#define DEBUG_INTERP_SIZE 0x30		/* interpreter_state.size */
#define DEBUG_THREADS_HEAD 0x48		/* interpreter_state.threads_head */

struct py_debug_pos {
	unsigned int minor;
	__u32 read;		/* bytes of _Py_DebugOffsets holding all below */
	/* {size, next, current_frame, thread_id, native_thread_id} of thread_state */
	__u32 ts[5];
	/* {size, previous, executable, instr_ptr, owner} of interpreter_frame */
	__u32 fr[5];
	/* {size, filename, name, qualname, linetable, firstlineno, co_code_adaptive} */
	__u32 co[7];
	/* {size, asciiobject_size} of unicode_object */
	__u32 str[2];
	/*
	 * interpreter_state's {ceval_gil, gil_runtime_state, .._enabled,
	 * .._locked, .._holder} start here; 0: not known
	 */
	__u32 gil;
	/* {size, gi_name, gi_iframe, gi_frame_state} of gen_object; 0: not known */
	__u32 gen;
};

static const struct py_debug_pos debug_positions[] = {
	{ .minor = 13, .read = 0x238,
	  .ts = { 0x98, 0xa8, 0xb8, 0xc0, 0xc8 },
	  .fr = { 0xe0, 0xe8, 0xf0, 0xf8, 0x108 },
	  .co = { 0x110, 0x118, 0x120, 0x128, 0x130, 0x138, 0x158 },
	  .str = { 0x218, 0x230 }, .gil = 0x70 },
	/*
	 * 3.14: threads_main (so the GIL's fields move by one), the generation
	 * counters, stackpointer, tlbc, set_object
	 */
	{ .minor = 14, .read = 0x2b8,
	  .ts = { 0xb0, 0xc0, 0xd0, 0xd8, 0xe0 },
	  .fr = { 0xf8, 0x100, 0x108, 0x110, 0x120 },
	  .co = { 0x138, 0x140, 0x148, 0x150, 0x158, 0x160, 0x180 },
	  .str = { 0x268, 0x280 }, .gil = 0x78, .gen = 0x298 },
	/* 3.15: thread_state grows (base_frame, last_profiled_frame, exceptions, GIL) */
	{ .minor = 15, .read = 0x338,
	  .ts = { 0xb0, 0xc0, 0xd0, 0xf0, 0xf8 },
	  .fr = { 0x138, 0x140, 0x148, 0x150, 0x160 },
	  .co = { 0x178, 0x180, 0x188, 0x190, 0x198, 0x1a0, 0x1c0 },
	  .str = { 0x2c8, 0x2e0 }, .gil = 0x78, .gen = 0x318 },
};

#define DEBUG_READ_MAX 0x340

static const struct py_debug_pos *debug_pos__find(unsigned int minor)
{
	for (size_t i = 0; i < sizeof(debug_positions) / sizeof(debug_positions[0]); i++) {
		if (debug_positions[i].minor == minor)
			return &debug_positions[i];
	}
	return NULL;
}

/* An offset of the target's: inside its struct, and inside what is read of it. */
static bool debug__offset(const uint8_t *d, __u32 at, uint64_t size, uint64_t limit,
			  __u32 width, __u32 *out)
{
	uint64_t v = word__at(d, at);

	if (size > limit)
		size = limit;
	if (v > size || width > size - v)
		return false;
	*out = (__u32)v;
	return true;
}

/*
 * Where the interpreter's GIL is, from _Py_DebugOffsets: the pointer
 * ceval.gil and, relative to the GIL the main interpreter owns (_gil),
 * its locked and last_holder. Left 0 (no GIL waits told) when odd.
 */
static void debug_offsets__gil(const uint8_t *d, __u32 at, struct py_layout *l)
{
	uint64_t size = word__at(d, DEBUG_INTERP_SIZE), ptr = word__at(d, at),
		 own = word__at(d, at + 8), locked = word__at(d, at + 24),
		 holder = word__at(d, at + 32);

	if (ptr + 8 > size || own > size || locked < own || holder < own ||
	    locked - own + 4 > PY_GIL_SIZE || holder - own + 8 > PY_GIL_SIZE)
		return;
	l->interp_gil = (__u32)ptr;
	l->gil_locked = (__u32)(locked - own);
	l->gil_holder = (__u32)(holder - own);
}

/*
 * The layout of a 3.13+ process from its own _Py_DebugOffsets. False with
 * why set when they cannot be used: no cookie (not initialised, or not
 * CPython's), another version than the file says, a free-threaded build
 * (another object layout), or an offset the walker cannot reach.
 */
static bool debug_offsets__read(struct proc *p, uint64_t runtime, unsigned int version,
				struct py_layout *l, char *why, size_t why_len)
{
	const struct py_debug_pos *dp = debug_pos__find(version & 0xff);
	const struct py_layout *table = layout__find(version);
	uint8_t d[DEBUG_READ_MAX];
	uint64_t ts_size, fr_size, co_size, rt_size, head;
	__u32 *tsf[] = { NULL, &l->tstate_next, &l->tstate_frame, &l->tstate_thread_id,
			 &l->tstate_native_tid };
	__u32 *frf[] = { NULL, &l->frame_back, &l->frame_code, &l->frame_pos, &l->frame_owner };
	__u32 *cof[] = { NULL, &l->co_filename, &l->co_name, &l->co_qualname, &l->co_lines,
			 &l->co_firstlineno, &l->co_code_adaptive };
	bool ok = true;

	if (!dp) {
		snprintf(why, why_len, "debug offsets of %u.%u not known", version >> 8,
			 version & 0xff);
		return false;
	}
	if (!proc__read(p, runtime, d, dp->read)) {
		snprintf(why, why_len, "debug offsets unreadable");
		return false;
	}
	if (memcmp(d, DEBUG_COOKIE, 8) || word__at(d, 0x08) >> 16 != version) {
		snprintf(why, why_len, "no debug offsets of %u.%u", version >> 8, version & 0xff);
		return false;
	}
	if (word__at(d, 0x10)) {
		snprintf(why, why_len, "free-threaded");
		return false;
	}
	memset(l, 0, sizeof(*l));
	l->minor = version & 0xff;
	l->flags = LW_PY_F_NATIVE_TID;
	l->shims = true;
	l->lines = PYLINE_LOCATIONS;
	l->pos = POS_INSTR_PTR;
	/* not published: the walker checks the key's tstate, else walks the thread list */
	l->tss_key = table ? table->tss_key : 0;
	rt_size = word__at(d, DEBUG_RUNTIME_SIZE);
	head = word__at(d, DEBUG_INTERPRETERS_HEAD);
	/* struct pyinterpreters {mutex, head, main, next_id}: main follows head */
	ok = head + 16 <= rt_size;
	l->interp_main = (__u32)head + 8;
	ok = ok && debug__offset(d, DEBUG_THREADS_HEAD, word__at(d, DEBUG_INTERP_SIZE),
				 UINT32_MAX, 8, &l->interp_threads);
	ts_size = word__at(d, dp->ts[0]);
	fr_size = word__at(d, dp->fr[0]);
	co_size = word__at(d, dp->co[0]);
	for (int i = 1; ok && i < 5; i++)
		ok = debug__offset(d, dp->ts[i], ts_size, LW_PY_WINDOW, 8, tsf[i]);
	for (int i = 1; ok && i < 5; i++)
		ok = debug__offset(d, dp->fr[i], fr_size, LW_PY_WINDOW, i == 4 ? 1 : 8, frf[i]);
	for (int i = 1; ok && i < 6; i++)
		ok = debug__offset(d, dp->co[i], co_size, PY_CODE_READ, i == 5 ? 4 : 8, cof[i]);
	ok = ok && debug__offset(d, dp->co[6], co_size, co_size, 0, &l->co_code_adaptive);
	/* PyCompactUnicodeObject: PyASCIIObject, then utf8_length and utf8 */
	ok = ok && debug__offset(d, dp->str[1], word__at(d, dp->str[0]), PY_STR_HDR_MAX, 0,
				 &l->str_ascii) &&
	     word__at(d, dp->str[0] + 8) == PY_STR_STATE &&
	     word__at(d, dp->str[0] + 16) == PY_STR_LENGTH;
	l->str_compact = l->str_ascii + 16;
	if (ok && dp->gil)
		debug_offsets__gil(d, dp->gil, l);
	/* a Task's coroutine by name: left unnamed when odd, nothing else depends on it */
	if (ok && dp->gen && !debug__offset(d, dp->gen + 8, word__at(d, dp->gen),
					    word__at(d, dp->gen), 8, &l->gen_name))
		l->gen_name = 0;
	if (!ok)
		snprintf(why, why_len, "debug offsets out of range");
	return ok;
}

/*
 * 3.14+ publish the asyncio module's offsets too, in the section
 * .AsyncioDebug of the file that holds _asyncio (built in, or
 * lib-dynload/_asyncio.*.so once imported): _Py_AsyncioModuleDebugOffsets,
 * {task_object{size, task_name, awaited_by, is_task, awaited_by_is_set,
 * coro, node}, interpreter_state{size, tasks_head}, thread_state{size,
 * running_loop, running_task, tasks_head}}. Static data: read from the file.
 */
#define ASYNCIO_SECTION ".AsyncioDebug"
#define ASYNCIO_WORDS 13
#define ASYNCIO_TASK_SIZE 0
#define ASYNCIO_TASK_NAME 1
#define ASYNCIO_TASK_CORO 5
#define ASYNCIO_TSTATE_SIZE 9
#define ASYNCIO_RUNNING_TASK 11
#define ASYNCIO_MAX_OFFSET 0x10000

static bool asyncio__read_file(struct proc *p, const struct proc_mapping *m, struct py_layout *l)
{
	uint64_t w[ASYNCIO_WORDS];
	struct elf_section sec;
	struct elf_handle h;
	struct stat st;
	bool ok = false;
	int fd = proc__open_mapping(p, m, &st);

	if (fd < 0)
		return false;
	if (!elf__open_fd(&h, fd)) {
		if (!elf__section(&h, ASYNCIO_SECTION, &sec) && sec.data &&
		    sec.data->d_size >= sizeof(w)) {
			memcpy(w, sec.data->d_buf, sizeof(w));
			ok = w[ASYNCIO_TASK_NAME] + 8 <= w[ASYNCIO_TASK_SIZE] &&
			     w[ASYNCIO_TASK_SIZE] < ASYNCIO_MAX_OFFSET &&
			     w[ASYNCIO_RUNNING_TASK] + 8 <= w[ASYNCIO_TSTATE_SIZE] &&
			     w[ASYNCIO_TSTATE_SIZE] < ASYNCIO_MAX_OFFSET;
		}
		elf__close(&h);
	}
	close(fd);
	if (ok) {
		l->task_name = (__u32)w[ASYNCIO_TASK_NAME];
		l->tstate_task = (__u32)w[ASYNCIO_RUNNING_TASK];
		if (w[ASYNCIO_TASK_CORO] + 8 <= w[ASYNCIO_TASK_SIZE])
			l->task_coro = (__u32)w[ASYNCIO_TASK_CORO];
	}
	return ok;
}

/* The running Task's offsets when the process has asyncio's (mod: the interpreter's file). */
static void asyncio__find(struct proc *p, const struct proc_mapping *mod, struct py_layout *l)
{
	const struct proc_maps *maps;

	if (asyncio__read_file(p, mod, l))
		return;
	/* imported since the maps were read, maybe: they are read again (once a process) */
	maps = proc__maps(p, true);
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];

		if (m->type == PROC_MAP_FILE && m->offset == 0 &&
		    !strncmp(proc_mapping__basename(m), "_asyncio.", 9)) {
			asyncio__read_file(p, m, l);
			return;
		}
	}
}

/*
 * What python__detect and python__symbolize both need of a process: the
 * layout (from the table for 3.8-3.12, from the target's own debug
 * offsets for 3.13+), where _PyRuntime is, and when there is no layout,
 * why. Returns 0, PYTHON_UNSUPPORTED or -1 as python__detect.
 */
static int python__inspect(struct proc *p, struct py_layout *l, uint64_t *runtime,
			   enum py_libc *libc, unsigned int *vers, char *version, size_t len,
			   char *why, size_t why_len)
{
	const struct proc_mapping *mod;
	const struct py_layout *t;
	struct py_elf pe;
	struct stat st;
	unsigned int v;
	int fd;
	bool ok;

	version[0] = '\0';
	why[0] = '\0';
	*vers = 0;
	mod = p ? maps__find_python(p, libc) : NULL;
	if (!mod)
		return -1;
	fd = proc__open_mapping(p, mod, &st);
	if (fd < 0)
		return -1;
	ok = elf__inspect(fd, mod, &pe);
	close(fd);
	if (!ok)
		return -1;
	v = version__detect(&pe, proc_mapping__basename(mod), version, len);
	*vers = v;
	if (!pe.found[SYM_RUNTIME] || !pe.bias_ok || v >> 8 != 3 || (v & 0xff) < 8)
		return PYTHON_UNSUPPORTED;
	if (pe.found[SYM_DEBUG]) {
		snprintf(why, why_len, "debug build");
		return PYTHON_UNSUPPORTED;
	}
	*runtime = pe.value[SYM_RUNTIME] + pe.bias;
	if ((v & 0xff) >= 13) {
		if (!debug_offsets__read(p, *runtime, v, l, why, why_len))
			return PYTHON_UNSUPPORTED;
		if ((v & 0xff) >= 14)
			asyncio__find(p, mod, l);
		return 0;
	}
	t = layout__find(v);
	if (!t)
		return PYTHON_UNSUPPORTED;
	*l = *t;
	return 0;
}

/*
 * The process's GIL: embedded in _PyRuntime up to 3.11, pointed to by the
 * main interpreter from 3.12. Read once: the main interpreter keeps its GIL
 * for the process's life. A GIL whose lock word is neither 0 nor 1 is not
 * one (a layout that does not fit): none is set, and no wait is told.
 */
static void gil__find(struct proc *p, const struct py_layout *l, uint64_t runtime,
		      struct lw_py_proc *out)
{
	uint64_t gil = 0, interp = 0;
	__u32 locked = 2;

	if (l->runtime_gil) {
		gil = runtime + l->runtime_gil;
	} else if (l->interp_gil) {
		if (!proc__read(p, runtime + l->interp_main, &interp, sizeof(interp)) || !interp ||
		    !proc__read(p, interp + l->interp_gil, &gil, sizeof(gil)))
			return;
	}
	if (!gil || !proc__read(p, gil + l->gil_locked, &locked, sizeof(locked)) || locked > 1)
		return;
	out->gil = gil;
	out->gil_size = PY_GIL_SIZE;
	out->gil_holder = l->gil_holder;
	out->gil_locked = l->gil_locked;
}

int python__detect(struct proc *p, struct lw_py_proc *out, char *version, size_t len)
{
	struct py_layout l;
	enum py_libc libc = LIBC_UNKNOWN;
	uint64_t runtime = 0;
	unsigned int v;
	char vbuf[32], why[64];
	int r;

	if (!version || !len) {
		version = vbuf;
		len = sizeof(vbuf);
	}
	memset(out, 0, sizeof(*out));
	r = python__inspect(p, &l, &runtime, &libc, &v, version, len, why, sizeof(why));
	if (r < 0)
		return r;
	if (r == PYTHON_UNSUPPORTED) {
		out->version = v;
		out->flags = LW_PY_F_UNSUPPORTED;
		if (why[0])
			snprintf(version + strlen(version), len - strlen(version), " (%s)", why);
		return r;
	}
	layout__fill(&l, out);
	out->runtime = runtime;
	gil__find(p, &l, runtime, out);
	if (libc != LIBC_MUSL) {
		/* glibc or unknown: the walker verifies what it reads there */
		out->tls_inline = GLIBC_SPECIFIC_1STBLOCK;
		out->tls_blocks = GLIBC_SPECIFIC;
	}
	return 0;
}

int python__table(unsigned int version, struct lw_py_proc *out)
{
	const struct py_layout *l = layout__find(version);

	memset(out, 0, sizeof(*out));
	if (!l)
		return -1;
	layout__fill(l, out);
	return 0;
}

/* ------------------------------------------------------------------ */
/* code objects */

#define CODE_BUCKETS 4096
#define CODE_MAX 8192			/* cached code objects, all processes */
#define CODE_MAX_TABLE_BYTES (16u << 20)	/* their line tables together */
#define LINES_MAX (64u << 10)		/* one line table; longer ones are cut */
#define STR_MAX_CHARS 1024		/* of a name or file read from the target */

struct code_info {
	struct code_info *hnext;		/* hash chain */
	struct code_info *newer, *older;	/* use order */
	int pid;
	uint64_t addr;
	int first;			/* co_firstlineno */
	uint8_t *lines;			/* line table bytes */
	size_t nlines;
	char name[sizeof(((struct frame *)0)->func)];
	char file[sizeof(((struct frame *)0)->file)];
};

/*
 * 3.13+ layouts are the process's own: kept per pid (direct-mapped: a
 * collision costs one more read of the ELF file and the debug offsets).
 */
#define LAYOUT_SLOTS 256

struct proc_layout {
	int pid;		/* 0: empty */
	int status;		/* of python__inspect */
	struct py_layout l;
	char why[48];
};

struct python_syms {
	struct proc_layout layouts[LAYOUT_SLOTS];
	struct code_info *buckets[CODE_BUCKETS];
	struct code_info *newest, *oldest;
	size_t n;
	size_t table_bytes;
};

struct python_syms *python_syms__new(void)
{
	return calloc(1, sizeof(struct python_syms));
}

static size_t code__bucket(int pid, uint64_t addr)
{
	uint64_t h = (addr >> 4) ^ ((uint64_t)(unsigned int)pid * 0x9e3779b97f4a7c15ull);

	h ^= h >> 29;
	return (size_t)(h % CODE_BUCKETS);
}

static void code__unlink_use(struct python_syms *ps, struct code_info *c)
{
	if (c->newer)
		c->newer->older = c->older;
	else
		ps->newest = c->older;
	if (c->older)
		c->older->newer = c->newer;
	else
		ps->oldest = c->newer;
	c->newer = c->older = NULL;
}

static void code__push_newest(struct python_syms *ps, struct code_info *c)
{
	c->older = ps->newest;
	c->newer = NULL;
	if (ps->newest)
		ps->newest->newer = c;
	ps->newest = c;
	if (!ps->oldest)
		ps->oldest = c;
}

static void code__remove(struct python_syms *ps, struct code_info *c)
{
	struct code_info **pp = &ps->buckets[code__bucket(c->pid, c->addr)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	code__unlink_use(ps, c);
	ps->n--;
	ps->table_bytes -= c->nlines;
	free(c->lines);
	free(c);
}

void python_syms__free(struct python_syms *ps)
{
	if (!ps)
		return;
	while (ps->oldest)
		code__remove(ps, ps->oldest);
	free(ps);
}

void python__forget_pid(struct python_syms *ps, int pid)
{
	struct code_info *c, *older;

	if (!ps)
		return;
	if (ps->layouts[(unsigned int)pid % LAYOUT_SLOTS].pid == pid)
		ps->layouts[(unsigned int)pid % LAYOUT_SLOTS].pid = 0;
	for (c = ps->newest; c; c = older) {
		older = c->older;
		if (c->pid == pid)
			code__remove(ps, c);
	}
}

static struct code_info *code__lookup(struct python_syms *ps, int pid, uint64_t addr)
{
	struct code_info *c = ps->buckets[code__bucket(pid, addr)];

	for (; c; c = c->hnext) {
		if (c->pid == pid && c->addr == addr) {
			code__unlink_use(ps, c);
			code__push_newest(ps, c);
			return c;
		}
	}
	return NULL;
}

static void code__insert(struct python_syms *ps, struct code_info *c)
{
	size_t b = code__bucket(c->pid, c->addr);

	while (ps->oldest && (ps->n >= CODE_MAX ||
			      ps->table_bytes + c->nlines > CODE_MAX_TABLE_BYTES))
		code__remove(ps, ps->oldest);
	c->hnext = ps->buckets[b];
	ps->buckets[b] = c;
	code__push_newest(ps, c);
	ps->n++;
	ps->table_bytes += c->nlines;
}

/* one code point as UTF-8; control characters and surrogates become '?' */
static size_t utf8__put(uint32_t cp, char *out)
{
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ||
	    (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
		cp = '?';
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Copy text into out (size len), at a character boundary: its head, or for
 * a path its tail behind "..." (the file name is the part worth keeping).
 */
static void utf8__fit(const char *text, size_t n, char *out, size_t len, bool tail)
{
	size_t from = 0;

	if (n < len) {
		memcpy(out, text, n);
		out[n] = '\0';
		return;
	}
	if (!tail) {
		n = len - 1;
		while (n && ((unsigned char)text[n] & 0xc0) == 0x80)
			n--;
		memcpy(out, text, n);
		out[n] = '\0';
		return;
	}
	from = n - (len - 4);
	while (from < n && ((unsigned char)text[from] & 0xc0) == 0x80)
		from++;
	snprintf(out, len, "...%.*s", (int)(n - from), text + from);
}

/*
 * The traced process's memory, one object of it as BPF copied it at capture
 * served first: the object may be gone by now (a Task's name).
 */
struct py_snap {
	uint64_t addr;		/* 0: none */
	const uint8_t *bytes;
	size_t len;
};

static bool py_snap__read(struct proc *p, const struct py_snap *s, uint64_t addr, void *buf,
			  size_t n)
{
	if (s && s->addr && addr >= s->addr && addr - s->addr <= s->len &&
	    n <= s->len - (addr - s->addr)) {
		memcpy(buf, s->bytes + (addr - s->addr), n);
		return true;
	}
	return proc__read(p, addr, buf, n);
}

/*
 * A str object of the target as printable UTF-8, read through s (NULL: from
 * the process alone). Only compact strings (every identifier and code object
 * file name is one) are read; the "kind" says 1, 2 or 4 bytes per character
 * (latin-1, UCS-2, UCS-4).
 */
static bool py_str__read(struct proc *p, const struct py_layout *l, const struct py_snap *s,
			 uint64_t obj, char *out, size_t len, bool tail)
{
	uint8_t hdr[PY_STR_HDR_MAX], *raw;
	char *text;
	uint64_t length, skip = 0;
	uint32_t state, kind;
	size_t n = 0, hdr_len = l->str_ascii;
	uint64_t data;
	bool ok;

	if (!py_snap__read(p, s, obj, hdr, hdr_len))
		return false;
	length = word__at(hdr, PY_STR_LENGTH);
	state = u32__at(hdr, PY_STR_STATE);
	kind = (state >> 2) & 7;
	if (!(state & 0x20) || (kind != 1 && kind != 2 && kind != 4) || length > (1ull << 30))
		return false;
	if ((state & 0x40) && kind != 1)
		return false;
	data = obj + ((state & 0x40) ? l->str_ascii : l->str_compact);
	if (length > STR_MAX_CHARS) {
		skip = tail ? length - STR_MAX_CHARS : 0;
		length = STR_MAX_CHARS;
	}
	raw = malloc(length * kind + 1);
	text = malloc(length * 4 + 1);
	ok = raw && text &&
	     (length == 0 || py_snap__read(p, s, data + skip * kind, raw, length * kind));
	for (uint64_t i = 0; ok && i < length; i++) {
		uint32_t cp = kind == 1 ? raw[i] : kind == 2 ? (uint32_t)raw[2 * i] |
			      (uint32_t)raw[2 * i + 1] << 8 : u32__at(raw, 4 * i);

		n += utf8__put(cp, text + n);
	}
	if (ok)
		utf8__fit(text, n, out, len, tail);
	free(raw);
	free(text);
	return ok;
}

/* A bytes object's contents, at most max bytes; *n gets how many were read. */
static uint8_t *py_bytes__read(struct proc *p, uint64_t obj, size_t max, size_t *n)
{
	uint8_t hdr[PY_BYTES_DATA], *buf;
	uint64_t size;

	*n = 0;
	if (!proc__read(p, obj, hdr, sizeof(hdr)))
		return NULL;
	size = word__at(hdr, PY_OB_SIZE);
	if ((int64_t)size <= 0)
		return NULL;
	if (size > max)
		size = max;
	buf = malloc(size);
	if (!buf || !proc__read(p, obj + PY_BYTES_DATA, buf, size)) {
		free(buf);
		return NULL;
	}
	*n = size;
	return buf;
}

/* Its type is named "code": the address holds a code object (3.13's f_executable may not). */
static bool py_code__is_code(struct proc *p, const uint8_t *code)
{
	uint64_t type = word__at(code, PY_OB_TYPE), name;
	char buf[8];

	return proc__read(p, type + PY_TP_NAME, &name, sizeof(name)) &&
	       proc__read(p, name, buf, 5) && !memcmp(buf, "code", 5);
}

static struct code_info *code__load(struct proc *p, const struct py_layout *l, uint64_t addr)
{
	uint8_t code[PY_CODE_READ];
	struct code_info *c;
	uint64_t name;

	if (!p || !proc__read(p, addr, code, sizeof(code)) || !py_code__is_code(p, code))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->pid = proc__pid(p);
	c->addr = addr;
	c->first = (int)u32__at(code, l->co_firstlineno);
	name = word__at(code, l->co_qualname ? l->co_qualname : l->co_name);
	if (!py_str__read(p, l, NULL, name, c->name, sizeof(c->name), false) ||
	    !py_str__read(p, l, NULL, word__at(code, l->co_filename), c->file, sizeof(c->file),
			  true)) {
		free(c);
		return NULL;
	}
	/* no line table only costs the line, not the frame */
	c->lines = py_bytes__read(p, word__at(code, l->co_lines), LINES_MAX, &c->nlines);
	if (!c->file[0])
		snprintf(c->file, sizeof(c->file), "?");
	return c;
}

/* The position as the line table counts it (bytes or code units); < 0: not started. */
static int64_t code__position(const struct py_layout *l, uint64_t addr, uint64_t pos)
{
	uint64_t base;

	switch (l->pos) {
	case POS_LASTI_BYTES:
		return (int64_t)pos;
	case POS_LASTI_UNITS:
		return (int64_t)pos < 0 ? -1 : (int64_t)pos * 2;
	case POS_INSTR_PTR:
		base = addr + l->co_code_adaptive;
		/* 3.11/3.12 point one unit before a frame's first instruction */
		if (pos < base || pos - base > (1ull << 40))
			return -1;
		return (int64_t)((pos - base) / 2);
	}
	return -1;
}

#define PY_LONG_TAG	0x10	/* PyLongObject.long_value.lv_tag (3.12+) */
#define PY_LONG_DIGITS	0x18	/* long_value.ob_digit: 30-bit digits */

/* A type's name: the first len bytes of its tp_name (str, int, coroutine: static types). */
static bool py_type__name(struct proc *p, uint64_t type, char *buf, size_t len)
{
	uint64_t tp_name;

	return proc__read(p, type + PY_TP_NAME, &tp_name, sizeof(tp_name)) &&
	       proc__read(p, tp_name, buf, len);
}

/* An object's type name, the object read through s (NULL: from the process alone). */
static bool py_object__type_name(struct proc *p, const struct py_snap *s, uint64_t obj,
				 char *buf, size_t len)
{
	uint64_t type;

	return py_snap__read(p, s, obj + PY_OB_TYPE, &type, sizeof(type)) &&
	       py_type__name(p, type, buf, len);
}

/*
 * A Task's name as asyncio shows it: its str, or "Task-N" for the number
 * an unnamed Task keeps until its name is asked for (3.14+). name: the
 * object's address; s: the object as BPF copied it, when it could.
 */
static bool py_task__name(struct proc *p, const struct py_layout *l, const struct py_snap *s,
			  uint64_t name, char *out, size_t len)
{
	uint32_t digits[2] = { 0 };
	uint64_t tag;
	char tbuf[8];

	if (!name || !py_object__type_name(p, s, name, tbuf, sizeof(tbuf)))
		return false;
	if (!memcmp(tbuf, "str", 4))
		return py_str__read(p, l, s, name, out, len, false);
	/* a compact int of at most two digits, positive: lv_tag = ndigits << 3 | sign */
	if (memcmp(tbuf, "int", 4) || !py_snap__read(p, s, name + PY_LONG_TAG, &tag, sizeof(tag)) ||
	    (tag & 3) != 0 || (tag >> 3) == 0 || (tag >> 3) > 2 ||
	    !py_snap__read(p, s, name + PY_LONG_DIGITS, digits, 4 * (tag >> 3)))
		return false;
	snprintf(out, len, "Task-%llu",
		 (unsigned long long)digits[0] | (unsigned long long)digits[1] << 30);
	return true;
}

/*
 * The name of the coroutine a Task runs (its __name__), as `asyncio pstree`
 * shows it, from the coroutine's type and name object as BPF read them: the
 * coroutine may be gone, its type and its function's name are not.
 */
static bool py_task__coro(struct proc *p, const struct py_layout *l, uint64_t type,
			  uint64_t name, char *out, size_t len)
{
	char tbuf[sizeof("coroutine")];

	return type && name && py_type__name(p, type, tbuf, sizeof(tbuf)) &&
	       !memcmp(tbuf, "coroutine", sizeof(tbuf)) &&
	       py_object__type_name(p, NULL, name, tbuf, sizeof("str")) &&
	       !memcmp(tbuf, "str", 4) && py_str__read(p, l, NULL, name, out, len, false);
}

/*
 * The layout a stack of this version is decoded with: the table's before
 * 3.13, the process's own after (why says what is wrong when it has none).
 */
static const struct py_layout *layout__of(struct python_syms *ps, struct proc *p,
					  unsigned int version, struct proc_layout *tmp)
{
	struct proc_layout *pl = tmp;
	enum py_libc libc;
	uint64_t runtime;
	unsigned int v;
	char vbuf[32];
	int pid;

	tmp->why[0] = '\0';
	if (version >> 8 != 3 || (version & 0xff) < 13)
		return layout__find(version);
	if (!p)
		return NULL;
	pid = proc__pid(p);
	if (ps)
		pl = &ps->layouts[(unsigned int)pid % LAYOUT_SLOTS];
	if (pl->pid != pid || pl == tmp) {
		pl->pid = pid;
		pl->status = python__inspect(p, &pl->l, &runtime, &libc, &v, vbuf, sizeof(vbuf),
					     pl->why, sizeof(pl->why));
		if (pl->status >= 0 && v != version) {
			pl->status = PYTHON_UNSUPPORTED;
			snprintf(pl->why, sizeof(pl->why), "now %u.%u", v >> 8, v & 0xff);
		}
	}
	if (pl != tmp)
		snprintf(tmp->why, sizeof(tmp->why), "%s", pl->why);
	return pl->status == 0 ? &pl->l : NULL;
}

int python__symbolize(struct python_syms *ps, struct proc *p, const struct lw_py_stack *st,
		      struct frame *out, int max)
{
	struct proc_layout tmp;
	const struct py_layout *l;
	int n = 0;
	char buf[128];	/* a frame's func */

	if (max <= 0)
		return 0;
	l = layout__of(ps, p, st->version, &tmp);
	if ((st->flags & LW_PY_STACK_UNSUPPORTED) || !l) {
		if (tmp.why[0])
			snprintf(buf, sizeof(buf), "[python: unsupported %u.%u: %s]",
				 (st->version >> 8) & 0xff, st->version & 0xff, tmp.why);
		else
			snprintf(buf, sizeof(buf), "[python: unsupported %u.%u]",
				 (st->version >> 8) & 0xff, st->version & 0xff);
		frame__marker(&out[0], FRAME_PYTHON, buf);
		return 1;
	}
	for (__u32 i = 0; i < st->nframes && i < LW_PY_MAX_DEPTH && n < max; i++) {
		const struct lw_py_frame *pf = &st->frames[i];
		struct code_info *c, *uncached = NULL;
		struct frame *f;
		uint64_t code;

		if (st->shims & (1ull << i))
			continue;	/* an eval call's shim: its bit is on the frame before */
		f = &out[n++];
		/* 3.14+: f_executable is a _PyStackRef, its low bits tags */
		code = l->minor >= 14 ? pf->code & ~7ull : pf->code;
		c = ps && p ? code__lookup(ps, proc__pid(p), code) : NULL;
		if (!c) {
			c = code__load(p, l, code);
			if (c && ps)
				code__insert(ps, c);
			else
				uncached = c;
		}
		if (!c) {
			frame__marker(f, FRAME_PYTHON, "[python: unreadable]");
			f->addr = code;
			continue;
		}
		memset(f, 0, sizeof(*f));
		f->kind = FRAME_PYTHON;
		f->addr = code;
		snprintf(f->func, sizeof(f->func), "%s", c->name);
		snprintf(f->file, sizeof(f->file), "%s", c->file);
		f->line = pyline__find(l->lines, c->lines, c->nlines, c->first,
				       code__position(l, code, pf->pos));
		if (f->line < 0)
			f->line = 0;
		if (st->entries & (1ull << i))
			f->offset = PYTHON_FRAME_ENTRY;
		if (uncached) {
			free(uncached->lines);
			free(uncached);
		}
	}
	if (st->task && l->task_name && n < max) {
		struct py_snap snap = { st->task_name, st->task_name_raw, sizeof(st->task_name_raw) };
		uint64_t name_obj = st->task_name;
		char name[64], coro[64];

		/* not copied at capture: read now, as it is (a Task that lives on) */
		if (!name_obj && !proc__read(p, st->task + l->task_name, &name_obj, sizeof(name_obj)))
			name_obj = 0;
		/* the outermost: the Task runs the whole stack above */
		if (!py_task__name(p, l, &snap, name_obj, name, sizeof(name)))
			snprintf(buf, sizeof(buf), "[asyncio task: unreadable]");
		else if (py_task__coro(p, l, st->coro_type, st->coro_name, coro, sizeof(coro)))
			snprintf(buf, sizeof(buf), "[asyncio task: %.48s, coroutine %.48s]", name,
				 coro);
		else
			snprintf(buf, sizeof(buf), "[asyncio task: %s]", name);
		frame__marker(&out[n++], FRAME_PYTHON, buf);
	}
	if ((st->flags & LW_PY_STACK_TRUNCATED) && n < max)
		frame__marker(&out[n++], FRAME_PYTHON, "[python: truncated]");
	else if ((st->flags & LW_PY_STACK_READ_ERROR) && n < max)
		frame__marker(&out[n++], FRAME_PYTHON, "[python: unreadable]");
	return n;
}

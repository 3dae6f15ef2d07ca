// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The V8 layout of one node binary, from the file alone (v8meta.h). Where a
 * V8 version dropped a v8dbg_* constant the value used instead says where
 * it came from: measured on node 18.20.8 (V8 10.2), 20 (Debian, 11.3),
 * 22.23.3 (12.4) and 24.21.0 (13.6), or OpenTelemetry's V8 unwinder
 * (interpreter/nodev8/v8.go), which found the same. Anything the file says
 * is untrusted: every number is bounded before it is used as an offset.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/elf.h"
#include "runtimes/v8/v8meta.h"

/* a v8dbg_ offset past this is not an object field or frame slot we read */
#define V8M_MAX_OFFSET 4096
#define V8M_MAX_DBG 8192

struct dbg {
	char *name;		/* without the v8dbg_ prefix */
	int32_t value;
};

struct load_ctx {
	struct v8_meta *m;
	const struct elf_handle *h;
	struct dbg *dbg;
	size_t ndbg, cap;
	/* from .symtab */
	uint64_t centry, centry_size, jsentry, jsentry_size;
	uint64_t blob_code_sym, blob_code_data_sym, blob_size_sym;
	uint64_t builtins_lo, builtins_hi;
	uint64_t version_sym[4];
	uint64_t tls_isolate_sym, bc_sizes, bc_sizes_len;
	int spt_format;		/* SPT_* from SourcePositionTableBuilder::AddPosition */
	/* from .dynsym: v8::Isolate::GetEmbeddedCodeRange and GetCurrent, public API */
	uint64_t code_range_fn, get_current_fn;
};

/*
 * How source position tables are encoded, told by the signature of
 * SourcePositionTableBuilder::AddPosition(size_t, SourcePosition, bool
 * is_statement[, bool is_breakable]), when the file has it.
 */
enum { SPT_UNKNOWN, SPT_ZIGZAG, SPT_BREAKABLE };

#define SPT_ADD_POSITION "_ZN2v88internal26SourcePositionTableBuilder11AddPositionEmNS0_14SourcePositionEb"

static int dbg__collect(const struct elf_symbol *s, void *arg)
{
	struct load_ctx *c = arg;
	int32_t v = 0;
	struct dbg *d;

	if (!strcmp(s->name, "_ZN2v87Isolate20GetEmbeddedCodeRangeEPPKvPm") &&
	    s->type == STT_FUNC) {
		c->code_range_fn = s->value;
		return 0;
	}
	if (!strcmp(s->name, "_ZN2v87Isolate10GetCurrentEv") && s->type == STT_FUNC) {
		c->get_current_fn = s->value;
		return 0;
	}
	if (strncmp(s->name, "v8dbg_", 6))
		return 0;
	/* every constant is an int in .data, .rodata or .bss */
	if (s->size != 4 || elf__read(c->h, s->value, &v, sizeof(v)) || c->ndbg >= V8M_MAX_DBG)
		return 0;
	if (c->ndbg == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 1024;

		d = realloc(c->dbg, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		c->dbg = d;
		c->cap = cap;
	}
	c->dbg[c->ndbg].name = strdup(s->name + 6);
	if (!c->dbg[c->ndbg].name)
		return -ENOMEM;
	c->dbg[c->ndbg++].value = v;
	return 0;
}

/* The first of the comma-separated names the binary has. */
static bool dbg__get(const struct load_ctx *c, const char *names, int64_t *out)
{
	char buf[512], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", names);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (size_t i = 0; i < c->ndbg; i++) {
			if (!strcmp(c->dbg[i].name, tok)) {
				*out = c->dbg[i].value;
				return true;
			}
		}
	}
	return false;
}

static int64_t dbg__get_or(const struct load_ctx *c, const char *names, int64_t fallback)
{
	int64_t v;

	return dbg__get(c, names, &v) ? v : fallback;
}

/* A field the walk cannot do without: its absence is the reason given. */
static int dbg__need(const struct load_ctx *c, const char *names, int64_t *out)
{
	if (dbg__get(c, names, out))
		return 0;
	if (!c->m->why[0])
		snprintf(c->m->why, sizeof(c->m->why), "v8dbg_%.*s missing",
			 (int)strcspn(names, ","), names);
	return -ENOTSUP;
}

static uint16_t dbg__type(const struct load_ctx *c, const char *names)
{
	int64_t v;

	return dbg__get(c, names, &v) && v >= 0 && v < V8M_NO_TYPE ? (uint16_t)v : V8M_NO_TYPE;
}

static uint32_t dbg__frametype(const struct load_ctx *c, const char *names)
{
	int64_t v;

	return dbg__get(c, names, &v) && v >= 0 ? (uint32_t)v : V8M_NO_FRAMETYPE;
}

static int symtab__collect(const struct elf_symbol *s, void *arg)
{
	static const char *const vnames[4] = {
		"_ZN2v88internal7Version6major_E", "_ZN2v88internal7Version6minor_E",
		"_ZN2v88internal7Version6build_E", "_ZN2v88internal7Version6patch_E",
	};
	struct load_ctx *c = arg;

	if (!strncmp(s->name, "Builtins_", 9) && s->type == STT_FUNC) {
		if (!c->builtins_lo || s->value < c->builtins_lo)
			c->builtins_lo = s->value;
		if (s->value + s->size > c->builtins_hi)
			c->builtins_hi = s->value + s->size;
		if (!strcmp(s->name, "Builtins_CEntry_Return1_ArgvOnStack_BuiltinExit") ||
		    !strcmp(s->name,
			    "Builtins_CEntry_Return1_DontSaveFPRegs_ArgvOnStack_BuiltinExit")) {
			c->centry = s->value;
			c->centry_size = s->size;
		} else if (!strcmp(s->name, "Builtins_JSEntry")) {
			c->jsentry = s->value;
			c->jsentry_size = s->size;
		}
	} else if (!strcmp(s->name, "_ZN2v88internal18g_current_isolate_E") && s->type == STT_TLS) {
		c->tls_isolate_sym = s->value;
	} else if (!strcmp(s->name, "_ZN2v88internal11interpreter9Bytecodes14kBytecodeSizesE")) {
		c->bc_sizes = s->value;
		c->bc_sizes_len = s->size;
	} else if (!strncmp(s->name, SPT_ADD_POSITION, sizeof(SPT_ADD_POSITION) - 1)) {
		const char *rest = s->name + sizeof(SPT_ADD_POSITION) - 1;

		if (!strcmp(rest, ""))
			c->spt_format = SPT_ZIGZAG;
		else if (!strcmp(rest, "b"))
			c->spt_format = SPT_BREAKABLE;
	} else if (!strcmp(s->name, "_ZN2v88internal7Isolate12isolate_key_E")) {
		c->m->isolate_key_sym = s->value;
	} else if (!strcmp(s->name, "v8_Default_embedded_blob_code_")) {
		c->blob_code_sym = s->value;
	} else if (!strcmp(s->name, "v8_Default_embedded_blob_code_data_")) {
		c->blob_code_data_sym = s->value;	/* node 18: _code_ points at it */
	} else if (!strcmp(s->name, "v8_Default_embedded_blob_code_size_")) {
		c->blob_size_sym = s->value;
	} else {
		for (int i = 0; i < 4; i++)
			if (!strcmp(s->name, vnames[i]))
				c->version_sym[i] = s->value;
	}
	return 0;
}

static bool v8meta__at_least(const struct v8_meta *m, uint32_t major, uint32_t minor)
{
	return m->version[0] > major || (m->version[0] == major && m->version[1] >= minor);
}

/* c_entry_fp at D(%r13), the isolate at B(%r13): bounded, the file is the target's */
static int centry__set(struct v8_meta *m, int64_t d, int64_t b)
{
	if (d < 0 || b > 0 || d - b > (1 << 20))
		return -ENOENT;
	m->root_bias = (int)-b;
	m->iso_c_entry_fp = (uint32_t)(d - b);
	return 0;
}

#define SCAN_CHUNK (1u << 20)
#define SCAN_AHEAD 64		/* bytes a match may look past its start */
#define SCAN_MAX (512u << 20)	/* code bytes looked at, in all */
#define SCAN_PAIRS 32		/* distinct pairs kept: C++ outside V8 may hold look-alikes */

/* A matcher: matches starting in buf[0..scan), reading up to n (SCAN_AHEAD past scan). */
struct scan {
	void (*fn)(const uint8_t *buf, size_t n, size_t scan, void *arg);
	void *arg;
};

/*
 * The code at [lo, lo + len), or every executable PT_LOAD when len is 0, in
 * chunks, each chunk given to every matcher: one read of the code for all.
 */
static void code__scan(const struct elf_handle *h, uint64_t lo, uint64_t len,
		       const struct scan *scans, size_t nscans)
{
	struct elf_segment whole = { .vaddr = lo, .filesz = len, .flags = PF_X }, *segs = &whole;
	size_t nsegs = 1, total = 0;
	uint8_t *buf = malloc(SCAN_CHUNK + SCAN_AHEAD);

	if (!buf || (!len && elf__loads(h, &segs, &nsegs))) {
		free(buf);
		return;
	}
	for (size_t i = 0; i < nsegs; i++) {
		if (!(segs[i].flags & PF_X))
			continue;
		for (uint64_t off = 0; off < segs[i].filesz && total < SCAN_MAX;
		     off += SCAN_CHUNK) {
			uint64_t left = segs[i].filesz - off;
			size_t n = left < SCAN_CHUNK + SCAN_AHEAD ? (size_t)left :
				   SCAN_CHUNK + SCAN_AHEAD;

			if (elf__read(h, segs[i].vaddr + off, buf, n))
				break;
			for (size_t k = 0; k < nscans; k++)
				scans[k].fn(buf, n, n < SCAN_CHUNK ? n : SCAN_CHUNK, scans[k].arg);
			total += SCAN_CHUNK;
		}
	}
	if (segs != &whole)
		free(segs);
	free(buf);
}

/* How often each (a, b) pair of operands was seen. */
struct pairs {
	struct { int32_t a, b; unsigned int n; } v[SCAN_PAIRS];
	size_t n;
};

static void pairs__note(struct pairs *ps, int32_t a, int32_t b)
{
	size_t k;

	for (k = 0; k < ps->n; k++)
		if (ps->v[k].a == a && ps->v[k].b == b)
			break;
	if (k == ps->n) {
		if (ps->n == SCAN_PAIRS)
			return;
		ps->v[k].a = a;
		ps->v[k].b = b;
		ps->n++;
	}
	ps->v[k].n++;
}

/* The most common pair (the first of equals) seen at least min times, or NULL. */
static const struct pairs *pairs__best(const struct pairs *ps, unsigned int min,
				       bool need_unique, size_t *best)
{
	*best = 0;
	for (size_t k = 1; k < ps->n; k++)
		if (ps->v[k].n > ps->v[*best].n)
			*best = k;
	for (size_t k = 0; need_unique && k < ps->n; k++)
		if (k != *best && ps->v[k].n == ps->v[*best].n)
			return NULL;
	return ps->n && ps->v[*best].n >= min ? ps : NULL;
}

/*
 * Builtins_CEntry_Return1_ArgvOnStack_BuiltinExit opens the exit frame:
 *	mov %rbp,D(%r13)		49 89 ad <D:32>   c_entry_fp
 *	lea B(%r13),%rdx		49 8d 55 <B:8>    the Isolate* argument
 * r13 is V8's root register, isolate + kRootRegisterBias, so the isolate's
 * c_entry_fp is at D - B.
 */
static int code__parse_centry(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	uint8_t code[512];
	size_t len = c->centry_size < sizeof(code) ? c->centry_size : sizeof(code);
	int64_t d = -1, b = 1;

	if (!c->centry || len < 16 || elf__read(c->h, c->centry, code, len))
		return -ENOENT;
	for (size_t i = 0; i + 7 <= len; i++) {
		if (d < 0 && code[i] == 0x49 && code[i + 1] == 0x89 && code[i + 2] == 0xad) {
			int32_t v;

			memcpy(&v, code + i + 3, 4);
			d = v;
		}
		if (b > 0 && code[i] == 0x49 && code[i + 1] == 0x8d && code[i + 2] == 0x55)
			b = (int8_t)code[i + 3];
	}
	return centry__set(m, d, b);
}

/*
 * A stripped libnode.so has no Builtins_* symbols: the same two instructions
 * anywhere in its builtins, within a few bytes of each other. The CEntry
 * builtins all open their exit frame the same way (six of them in node
 * 22-26, the only such pair in the file): the pair at least three places
 * agree on, more than any other.
 */
static void centry__match(const uint8_t *buf, size_t n, size_t scan, void *arg)
{
	for (size_t i = 0; i < scan && i + 7 <= n; i++) {
		const uint8_t *p = buf + i;
		int32_t d;
		size_t j;

		if (p[0] != 0x49 || p[1] != 0x89 || p[2] != 0xad)
			continue;
		memcpy(&d, p + 3, 4);
		for (j = 7; j + 4 <= 48 && i + j + 4 <= n; j++)
			if (p[j] == 0x49 && p[j + 1] == 0x8d && p[j + 2] == 0x55)
				break;
		if (j + 4 <= 48 && i + j + 4 <= n)
			pairs__note(arg, d, (int8_t)p[j + 3]);
	}
}

/*
 * Builtins_JSEntry: push %rbp; mov %rsp,%rbp, then pushes (the marker, a
 * padding slot, callee-saved registers) down to push D(%r13) of the outer
 * c_entry_fp: its slot below fp is the number of pushes before it. -64 on
 * every version seen.
 */
static int code__parse_jsentry(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	uint32_t root_cefp = m->iso_c_entry_fp - (uint32_t)m->root_bias;
	uint8_t code[128];
	size_t len = c->jsentry_size < sizeof(code) ? c->jsentry_size : sizeof(code), i = 0;
	int slots = 0;
	bool framed = false;

	if (!c->jsentry || len < 16 || elf__read(c->h, c->jsentry, code, len))
		return -ENOENT;
	while (i + 7 <= len && slots < 16) {
		const uint8_t *p = code + i;

		if (p[0] == 0x55 && !framed) {			/* push %rbp */
			i += 1;
		} else if (p[0] == 0x48 && p[1] == 0x89 && p[2] == 0xe5) {	/* mov rsp,rbp */
			framed = true;
			i += 3;
		} else if (p[0] == 0x6a) {			/* push imm8 */
			slots++;
			i += 2;
		} else if (p[0] == 0x68) {			/* push imm32 */
			slots++;
			i += 5;
		} else if (p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xec) {	/* sub imm,rsp */
			slots += p[3] / 8;
			i += 4;
		} else if (p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57) {	/* push %r8-r15 */
			slots++;
			i += 2;
		} else if (p[0] >= 0x50 && p[0] <= 0x57) {	/* push %rax-%rdi */
			slots++;
			i += 1;
		} else if (p[0] == 0x4c && p[1] == 0x8b && p[2] == 0xef) {	/* mov rdi,r13 */
			i += 3;
		} else if (p[0] == 0x41 && p[1] == 0xff && p[2] == 0xb5) {	/* push D(%r13) */
			uint32_t d;

			memcpy(&d, p + 3, 4);
			slots++;
			if (d == root_cefp && framed) {
				m->fp_entry_next = -8 * slots;
				return 0;
			}
			i += 7;
		} else {
			break;
		}
	}
	return -ENOENT;
}

/*
 * Fast C calls from generated code (CallCFunction) record the caller's fp
 * and pc in the isolate data instead of an exit frame:
 *	lea X(%rip),%r10; mov %r10,PC(%r13); mov %rbp,FP(%r13); call *%reg
 * The most common (PC, FP) pair over the builtins is taken (over all the
 * executable code where the builtins have no symbols: the same pair, 1280
 * times in node 24's and Debian's libnode.so.137 alike).
 */
static void fast_c__match(const uint8_t *buf, size_t n, size_t scan, void *arg)
{
	for (size_t i = 0; i < scan && i + 24 < n; i++) {
		const uint8_t *p = buf + i;
		int32_t pc, fp;

		if (p[0] != 0x4c || p[1] != 0x8d || p[2] != 0x15)
			continue;
		p += 7;
		if (p[0] == 0x4d && p[1] == 0x89 && p[2] == 0x55) {
			pc = (int8_t)p[3];
			p += 4;
		} else if (p[0] == 0x4d && p[1] == 0x89 && p[2] == 0x95) {
			memcpy(&pc, p + 3, 4);
			p += 7;
		} else {
			continue;
		}
		if (p[0] == 0x49 && p[1] == 0x89 && p[2] == 0x6d) {
			fp = (int8_t)p[3];
			p += 4;
		} else if (p[0] == 0x49 && p[1] == 0x89 && p[2] == 0xad) {
			memcpy(&fp, p + 3, 4);
			p += 7;
		} else {
			continue;
		}
		if (p[0] == 0xff && (p[1] & 0xf8) == 0xd0)	/* call *%reg */
			pairs__note(arg, pc, fp);
	}
}

/*
 * Where the isolate keeps c_entry_fp and the fast C call records, and the
 * entry frame's layout: without them, C++ between JS frames cannot be
 * crossed and its JS callers go unnamed. One read of the builtins' code
 * (all the executable code where they have no symbols) serves both scans.
 */
static void code__parse_isolate(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	struct pairs fast_c = { .n = 0 }, centry = { .n = 0 };
	const struct scan scans[] = { { fast_c__match, &fast_c }, { centry__match, &centry } };
	bool by_symbol = !code__parse_centry(c), found = by_symbol;
	size_t best;

	if (m->blob_size <= (256u << 20))
		code__scan(c->h, m->blob_code, m->blob_size, scans, by_symbol ? 1 : 2);
	if (!by_symbol && pairs__best(&centry, 3, true, &best))
		found = !centry__set(m, centry.v[best].a, centry.v[best].b);
	if (found && code__parse_jsentry(c))
		m->fp_entry_next = -64;
	if (pairs__best(&fast_c, 4, false, &best) && fast_c.v[best].b + m->root_bias > 0 &&
	    fast_c.v[best].a + m->root_bias > 0) {
		m->iso_fast_c_fp = (uint32_t)(fast_c.v[best].b + m->root_bias);
		m->iso_fast_c_pc = (uint32_t)(fast_c.v[best].a + m->root_bias);
	}
}

static int v8meta__types(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	int64_t v = 0;
	int err = 0;

	err |= dbg__need(c, "type_JSFunction__JS_FUNCTION_TYPE", &v);
	m->t_jsfunc_first = (uint16_t)v;
	/*
	 * JS_FUNCTION_TYPE and its subclasses (class, promise, regexp, array
	 * and typed array constructors) follow each other: 16 of them before
	 * V8 12, which exports first and last.
	 */
	if (dbg__get(c, "FirstJSFunctionType", &v))
		m->t_jsfunc_first = (uint16_t)v;
	m->t_jsfunc_last = (uint16_t)dbg__get_or(c, "LastJSFunctionType", m->t_jsfunc_first + 15);
	err |= dbg__need(c, "type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", &v);
	m->t_sfi = (uint16_t)v;
	err |= dbg__need(c, "type_ScopeInfo__SCOPE_INFO_TYPE", &v);
	m->t_scope_info = (uint16_t)v;
	err |= dbg__need(c, "type_Script__SCRIPT_TYPE", &v);
	m->t_script = (uint16_t)v;
	m->t_bytecode_array = dbg__type(c, "type_BytecodeArray__BYTECODE_ARRAY_TYPE");
	m->t_code = dbg__type(c, "type_Code__CODE_TYPE");
	m->t_istream = dbg__type(c, "type_InstructionStream__INSTRUCTION_STREAM_TYPE");
	m->t_byte_array = dbg__type(c, "type_ByteArray__BYTE_ARRAY_TYPE");
	m->t_trusted_byte_array = dbg__type(c, "type_TrustedByteArray__TRUSTED_BYTE_ARRAY_TYPE");
	/* strings: instance type < FirstNonstringType, decoded with the tag masks */
	m->first_nonstring = (uint16_t)dbg__get_or(c, "FirstNonstringType", 128);
	m->str_repr_mask = (uint16_t)dbg__get_or(c, "StringRepresentationMask", 7);
	m->str_enc_mask = (uint16_t)dbg__get_or(c, "StringEncodingMask", 8);
	m->str_one_byte = (uint16_t)dbg__get_or(c, "OneByteStringTag", 8);
	return err ? -ENOTSUP : 0;
}

static int v8meta__fields(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	bool v12 = v8meta__at_least(m, 12, 0);
	int64_t v = 0;
	int err = 0;

	m->map_instance_type = (uint32_t)dbg__get_or(c, "class_Map__instance_type__uint16_t", 12);
	err |= dbg__need(c, "class_JSFunction__shared__SharedFunctionInfo", &v);
	m->jsfunc_shared = (uint32_t)v;
	/* node 20 lost it; node 24 (V8 13, leaptiering) has a dispatch handle instead */
	m->jsfunc_code = (uint32_t)dbg__get_or(c, "class_JSFunction__code__CodeT,"
					       "class_JSFunction__code__Code,"
					       "class_JSFunction__code__Tagged_Code_", 0);
	err |= dbg__need(c, "class_SharedFunctionInfo__name_or_scope_info__Object,"
			 "class_SharedFunctionInfo__name_or_scope_info__Tagged_Object_,"
			 "class_SharedFunctionInfo__name_or_scope_info__Tagged_NameOrScopeInfoT_",
			 &v);
	m->sfi_name_or_scope_info = (uint32_t)v;
	err |= dbg__need(c, "class_SharedFunctionInfo__script_or_debug_info__HeapObject,"
			 "class_SharedFunctionInfo__script_or_debug_info__Object,"
			 "class_SharedFunctionInfo__script__Tagged_HeapObject_", &v);
	m->sfi_script = (uint32_t)v;
	m->sfi_length = (uint32_t)dbg__get_or(c, "class_SharedFunctionInfo__length__uint16_t",
					      m->sfi_script + 8);
	m->script_name = (uint32_t)dbg__get_or(c, "class_Script__name__Object", 16);
	m->script_source = (uint32_t)dbg__get_or(c, "class_Script__source__Object", 8);
	m->string_length = (uint32_t)dbg__get_or(c, "class_String__length__int32_t", 12);
	m->seq_one_chars = (uint32_t)dbg__get_or(c, "class_SeqOneByteString__chars__char", 16);
	m->seq_two_chars = (uint32_t)dbg__get_or(c, "class_SeqTwoByteString__chars__char", 16);
	m->cons_first = (uint32_t)dbg__get_or(c, "class_ConsString__first__String", 16);
	m->cons_second = (uint32_t)dbg__get_or(c, "class_ConsString__second__String", 24);
	m->thin_actual = (uint32_t)dbg__get_or(c, "class_ThinString__actual__String", 16);
	m->sliced_parent = (uint32_t)dbg__get_or(c, "class_SlicedString__parent__String", 16);
	m->sliced_offset = (uint32_t)dbg__get_or(c, "class_SlicedString__offset__SMI", 24);
	m->external_resource = (uint32_t)dbg__get_or(c, "class_ExternalString__resource__Object",
						     16);
	m->fixed_array_length = (uint32_t)dbg__get_or(c, "class_FixedArrayBase__length__SMI", 8);
	m->fixed_array_data = (uint32_t)dbg__get_or(c, "class_FixedArray__data__uintptr_t", 16);
	m->bytecode_array_length = (uint32_t)dbg__get_or(c, "class_BytecodeArray__length__SMI",
							 m->fixed_array_length);
	m->bytecode_array_data = (uint32_t)dbg__get_or(c, "class_BytecodeArray__data__uintptr_t",
						       0);
	/*
	 * Not exported (measured): up to V8 11 map, length, constant_pool,
	 * handler_table, source_position_table (32); from V8 12 (a trusted
	 * object) map, length, wrapper, source_position_table (24).
	 */
	m->bytecode_array_spt = v12 ? 24 : 32;
	m->scopeinfo_first_vars = (uint32_t)dbg__get_or(c, "scopeinfo_idx_first_vars", 3);
	m->scopeinfo_ncontextlocals = (uint32_t)dbg__get_or(c, "scopeinfo_idx_ncontextlocals", 2);
	m->code_instruction_start = (uint32_t)dbg__get_or(c,
		"class_Code__instruction_start__Address,class_Code__instruction_start__uintptr_t",
		0);
	m->code_instruction_size = (uint32_t)dbg__get_or(c, "class_Code__instruction_size__int", 0);
	m->code_flags = (uint32_t)dbg__get_or(c, "class_Code__flags__uint32_t", 0);
	/*
	 * Code's position table and deoptimization data: exported by V8 11.3
	 * only. V8 12-13 (measured): map, deoptimization_data_or_interpreter_data
	 * (8), position_table (16), wrapper, instruction_stream, instruction_start.
	 */
	m->code_spt = (uint32_t)dbg__get_or(c, "class_Code__source_position_table__ByteArray",
					    v12 ? 16 : 0);
	m->code_deopt = (uint32_t)dbg__get_or(c, "class_Code__deoptimization_data__FixedArray",
					      v12 ? 8 : 0);
	m->istream_header = (uint32_t)dbg__get_or(c,
		"class_InstructionStream__instruction_start__uintptr_t", 0);
	m->istream_code = 8;	/* InstructionStream: map, code (V8 11.3-13.6, measured) */
	m->deopt_literals = (uint32_t)dbg__get_or(c, "DeoptimizationDataLiteralArrayIndex", 2);
	m->deopt_inlining_positions = (uint32_t)dbg__get_or(c,
		"DeoptimizationDataInliningPositionsIndex", 7);
	if (m->t_istream == V8M_NO_TYPE && !v8meta__at_least(m, 11, 3) &&
	    m->code_instruction_start) {
		/*
		 * V8 10-11.2: the Code object holds its instructions after a
		 * header of Code::instruction_start bytes, and is map,
		 * relocation_info, deoptimization_data, source_position_table,
		 * code_data_container, instruction_size (measured).
		 */
		m->code_inline = true;
		if (!m->code_spt && m->code_instruction_size >= 24) {
			m->code_spt = m->code_instruction_size - 16;
			m->code_deopt = m->code_instruction_size - 24;
		}
	}
	m->code_bc_offsets = (uint32_t)dbg__get_or(c,
		"class_Code__bytecode_offset_table__ByteArray", m->code_spt);
	if (!m->code_instruction_start && m->code_spt && v8meta__at_least(m, 11, 0) &&
	    !v8meta__at_least(m, 11, 9)) {
		/*
		 * V8 11.3 lost the Code postmortem data (as OTel's v8.go notes);
		 * its Code is map, relocation_info, deoptimization_data,
		 * source_position_table (exported), instruction_stream,
		 * instruction_start, flags (u32), builtin_id + padding,
		 * instruction_size (u32) (measured).
		 */
		m->code_instruction_start = m->code_spt + 16;
		m->code_flags = m->code_spt + 24;
		m->code_instruction_size = m->code_spt + 32;
	}
	/* not exported by V8 11.3: shared + 3 slots until 11.7 (OTel, measured) */
	if (!m->jsfunc_code && !v8meta__at_least(m, 11, 7) && v8meta__at_least(m, 9, 0))
		m->jsfunc_code = m->jsfunc_shared + 24;
	m->codekind_mask = (uint32_t)dbg__get_or(c, "CodeKindFieldMask", 15);
	m->codekind_shift = (uint32_t)dbg__get_or(c, "CodeKindFieldShift", 0) & 31;
	m->codekind_baseline = (uint32_t)dbg__get_or(c, "CodeKindBaseline", 0xff);
	/* CodeKind order: INTERPRETED_FUNCTION, BASELINE, MAGLEV, TURBOFAN(_JS) */
	m->codekind_maglev = m->codekind_baseline + 1;
	m->codekind_turbofan = m->codekind_baseline + 2;
	return err ? -ENOTSUP : 0;
}

static int v8meta__frame(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	int64_t v = 0;
	int err = 0;

	err |= dbg__need(c, "off_fp_function", &v);
	m->fp_function = (int)v;
	err |= dbg__need(c, "off_fp_context_or_frame_type,off_fp_context", &v);
	m->fp_context = (int)v;
	m->fp_bytecode_array = (int)dbg__get_or(c, "off_fp_bytecode_array", m->fp_function - 16);
	m->fp_bytecode_offset = (int)dbg__get_or(c, "off_fp_bytecode_offset",
						 m->fp_bytecode_array - 8);
	/*
	 * BuiltinExitFrameConstants: above the caller's pc come new_target,
	 * target, argc (node 18-24, measured).
	 */
	m->fp_exit_target = 24;
	m->ft_entry = dbg__frametype(c, "frametype_EntryFrame");
	m->ft_construct_entry = dbg__frametype(c, "frametype_ConstructEntryFrame");
	m->ft_builtin_exit = dbg__frametype(c, "frametype_BuiltinExitFrame");
	if (m->ft_entry == V8M_NO_FRAMETYPE && !m->why[0])
		snprintf(m->why, sizeof(m->why), "v8dbg_frametype_EntryFrame missing");
	return err || m->ft_entry == V8M_NO_FRAMETYPE ? -ENOTSUP : 0;
}

#define CODE_RANGE_READ 96	/* bytes of GetEmbeddedCodeRange looked at */

/*
 * A getter of one global: "mov disp(%rip),%eax; ret" (4 bytes) or "mov
 * disp(%rip),%rax; ret" (8). Its address and width, or false.
 */
static bool code__getter(const struct elf_handle *h, uint64_t fn, uint64_t *at, int *width)
{
	uint8_t b[8];
	int32_t disp;

	if (elf__read(h, fn, b, sizeof(b)))
		return false;
	if (b[0] == 0x8b && b[1] == 0x05 && b[6] == 0xc3) {
		memcpy(&disp, b + 2, 4);
		*at = fn + 6 + (int64_t)disp;
		*width = 4;
		return true;
	}
	if (b[0] == 0x48 && b[1] == 0x8b && b[2] == 0x05 && b[7] == 0xc3) {
		memcpy(&disp, b + 3, 4);
		*at = fn + 7 + (int64_t)disp;
		*width = 8;
		return true;
	}
	return false;
}

/*
 * Builtins without symbols: v8::Isolate::GetEmbeddedCodeRange (exported)
 * builds EmbeddedData::FromBlob(), four calls of getters of the globals
 * current_embedded_blob_{code,code_size,data,data_size}_. Arguments are
 * evaluated right to left by GCC (seen in Debian's libnode.so.137: data
 * size, data, code size, code): the last pointer and size are the code's,
 * the other pair is kept for attach to try when those do not fit. The scan
 * ends at the first ret byte, wherever it is: too early only fails.
 */
static bool code__parse_blob_globals(struct load_ctx *c)
{
	uint64_t at, ptrs[2] = { 0 }, sizes[2] = { 0 };
	uint8_t b[CODE_RANGE_READ];
	int nptr = 0, nsize = 0, width;

	if (!c->code_range_fn || elf__read(c->h, c->code_range_fn, b, sizeof(b)))
		return false;
	for (size_t i = 0; i + 5 <= sizeof(b) && b[i] != 0xc3; i++) {
		int32_t rel;

		if (b[i] != 0xe8)
			continue;
		memcpy(&rel, b + i + 1, 4);
		if (!code__getter(c->h, c->code_range_fn + i + 5 + (int64_t)rel, &at, &width))
			continue;
		if (width == 8) {
			ptrs[0] = ptrs[1];
			ptrs[1] = at;
			nptr++;
		} else {
			sizes[0] = sizes[1];
			sizes[1] = at;
			nsize++;
		}
		i += 4;
	}
	if (nptr != 2 || nsize != 2)
		return false;
	c->m->blob_code_at[0] = ptrs[1];
	c->m->blob_size_at[0] = sizes[1];
	c->m->blob_code_at[1] = ptrs[0];
	c->m->blob_size_at[1] = sizes[0];
	return true;
}

/* The embedded builtins, where the walk recognises V8's own code. */
static int v8meta__blob(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	struct elf_segment *segs = NULL;
	size_t nsegs = 0;
	uint32_t sz = 0;

	m->blob_code = c->blob_code_data_sym ? c->blob_code_data_sym : c->blob_code_sym;
	if (c->blob_size_sym && !elf__read(c->h, c->blob_size_sym, &sz, sizeof(sz)))
		m->blob_size = sz;
	if ((!m->blob_code || !m->blob_size) && c->builtins_hi > c->builtins_lo) {
		m->blob_code = c->builtins_lo;
		m->blob_size = c->builtins_hi - c->builtins_lo;
	}
	if (!m->blob_code || !m->blob_size || m->blob_size > (1u << 30) ||
	    elf__vaddr_to_offset(c->h, m->blob_code, &m->blob_file_off)) {
		m->blob_code = m->blob_size = 0;
		if (!code__parse_blob_globals(c)) {
			snprintf(m->why, sizeof(m->why), "no embedded builtins");
			return -ENOTSUP;
		}
	}
	/* the first PT_LOAD maps file offset 0: the process's mapping at offset 0 is its base */
	if (elf__loads(c->h, &segs, &nsegs) || !nsegs || segs[0].offset != 0) {
		free(segs);
		snprintf(m->why, sizeof(m->why), "no PT_LOAD at file offset 0");
		return -ENOTSUP;
	}
	m->base_vaddr = segs[0].vaddr & ~0xfffULL;
	free(segs);
	return 0;
}

#define GET_CURRENT_READ 48	/* bytes of v8::Isolate::GetCurrent looked at */

/*
 * The isolate in a shared library's general-dynamic TLS (Debian's
 * libnode.so): v8::Isolate::GetCurrent() jumps to (or is) the getter
 *	data16 lea X(%rip),%rdi		66 48 8d 3d <X:32>   the GOT's tls_index
 *	data16 data16 rex.W call __tls_get_addr		66 66 48 e8 <rel:32>
 *	[pop %rbp] mov (%rax),%rax	[5d] 48 8b 00     the isolate
 */
static void code__parse_tls_getter(struct load_ctx *c)
{
	uint64_t fn = c->get_current_fn;
	uint8_t b[GET_CURRENT_READ];
	int32_t rel;

	if (!fn || c->tls_isolate_sym || elf__read(c->h, fn, b, sizeof(b)))
		return;
	if (b[0] == 0xe9) {
		memcpy(&rel, b + 1, 4);
		fn += 5 + (int64_t)rel;
		if (elf__read(c->h, fn, b, sizeof(b)))
			return;
	}
	for (size_t i = 0; i + 20 <= sizeof(b); i++) {
		const uint8_t *p = b + i;
		size_t at = 16 + (p[16] == 0x5d);

		if (memcmp(p, "\x66\x48\x8d\x3d", 4) || memcmp(p + 8, "\x66\x66\x48\xe8", 4) ||
		    i + at + 3 > sizeof(b) || memcmp(p + at, "\x48\x8b\x00", 3))
			continue;
		memcpy(&rel, p + 4, 4);
		c->m->tls_index_at = fn + i + 8 + (int64_t)rel;
		return;
	}
}

/*
 * glibc's static TLS on x86-64 (TLS_TCB_AT_TP): the executable's block ends
 * at the thread pointer, l_tls_offset = roundup(memsz - firstbyte, align) +
 * firstbyte, firstbyte = -p_vaddr & (align - 1).
 */
static void v8meta__tls(struct load_ctx *c)
{
	struct v8_meta *m = c->m;
	uint64_t vaddr, memsz, align, first, off;

	if (!c->tls_isolate_sym || elf__tls(c->h, &vaddr, &memsz, &align) ||
	    memsz > (1u << 30) || c->tls_isolate_sym > memsz)
		return;
	first = (-vaddr) & (align - 1);
	off = ((memsz - first + align - 1) & ~(align - 1)) + first;
	m->tls_isolate_tpoff = (int64_t)c->tls_isolate_sym - (int64_t)off;
	m->has_tls_isolate = true;
}

/* Every offset the walker and namer use, bounded: the file is the target's. */
static bool v8meta__sane(const struct v8_meta *m)
{
	const int fps[] = { m->fp_function, m->fp_context, m->fp_bytecode_array,
			    m->fp_bytecode_offset, m->fp_entry_next };
	const uint32_t offs[] = {
		m->map_instance_type, m->jsfunc_shared, m->jsfunc_code, m->sfi_name_or_scope_info,
		m->sfi_script, m->script_name, m->script_source, m->string_length,
		m->seq_one_chars, m->seq_two_chars, m->cons_first, m->cons_second, m->thin_actual,
		m->sliced_parent, m->sliced_offset, m->external_resource, m->fixed_array_length,
		m->fixed_array_data, m->bytecode_array_data, m->bytecode_array_spt,
		m->bytecode_array_length, m->code_instruction_start, m->code_instruction_size,
		m->code_flags, m->code_spt, m->code_deopt, m->code_bc_offsets, m->istream_header,
		m->scopeinfo_first_vars, m->scopeinfo_ncontextlocals, m->deopt_literals,
		m->deopt_inlining_positions,
	};

	for (size_t i = 0; i < sizeof(fps) / sizeof(fps[0]); i++)
		if (fps[i] < -V8M_MAX_OFFSET || fps[i] > V8M_MAX_OFFSET || (fps[i] & 7))
			return false;
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] > V8M_MAX_OFFSET)
			return false;
	/* the window BPF reads and the object heads: see lw_abi_v8.h */
	return m->jsfunc_shared + 8 <= 64 && m->sfi_name_or_scope_info + 8 <= 64 &&
	       m->sfi_script + 8 <= 64 && m->sfi_length + 8 <= 64 &&
	       m->scopeinfo_first_vars < 16 && m->scopeinfo_ncontextlocals < 16;
}

int v8meta__load(struct v8_meta *m, const struct elf_handle *h)
{
	struct load_ctx c = { .m = m, .h = h };
	int err;

	memset(m, 0, sizeof(*m));
	err = elf__symbols(h, SHT_DYNSYM, dbg__collect, &c);
	if (err == -ENOMEM)
		goto out;
	/* a stripped libnode.so keeps some (V8's version) in .dynsym only */
	elf__symbols(h, SHT_DYNSYM, symtab__collect, &c);
	elf__symbols(h, SHT_SYMTAB, symtab__collect, &c);
	m->ndbg = c.ndbg;
	err = -ENOTSUP;
	if (!c.ndbg) {
		snprintf(m->why, sizeof(m->why), "no v8dbg_* symbols");
		goto out;
	}
	for (int i = 0; i < 4; i++) {
		uint32_t x = 0;

		if (c.version_sym[i] && !elf__read(h, c.version_sym[i], &x, sizeof(x)))
			m->version[i] = x;
	}
	/* the walker reads 8-byte tagged words with Smis in the upper half */
	if (dbg__get_or(&c, "TaggedSize", 8) != 8 || dbg__get_or(&c, "SmiShiftSize", 31) != 31 ||
	    dbg__get_or(&c, "HeapObjectTag", 1) != 1) {
		snprintf(m->why, sizeof(m->why), "pointer compression (not supported)");
		goto out;
	}
	if (v8meta__frame(&c) || v8meta__types(&c) || v8meta__fields(&c) || v8meta__blob(&c))
		goto out;
	code__parse_isolate(&c);
	code__parse_tls_getter(&c);
	if (c.bc_sizes && c.bc_sizes_len && c.bc_sizes_len % 3 == 0 && c.bc_sizes_len < 3 * 512) {
		m->bytecode_sizes = malloc(c.bc_sizes_len);
		if (m->bytecode_sizes &&
		    !elf__read(h, c.bc_sizes, m->bytecode_sizes, c.bc_sizes_len))
			m->bytecode_count = (uint32_t)(c.bc_sizes_len / 3);
	}
	/*
	 * A stripped binary: by version. Seen on 13.6 (node 24, zigzag) and
	 * 14.6 (node 26, breakable); where in between it changed is not known.
	 */
	m->spt_breakable = c.spt_format == SPT_BREAKABLE ||
			   (c.spt_format == SPT_UNKNOWN && v8meta__at_least(m, 14, 0));
	v8meta__tls(&c);
	if (!v8meta__sane(m)) {
		snprintf(m->why, sizeof(m->why), "v8dbg_* values out of range");
		goto out;
	}
	err = 0;
out:
	for (size_t i = 0; i < c.ndbg; i++)
		free(c.dbg[i].name);
	free(c.dbg);
	if (err)
		v8meta__free(m);
	return err;
}

void v8meta__free(struct v8_meta *m)
{
	free(m->bytecode_sizes);
	m->bytecode_sizes = NULL;
	m->bytecode_count = 0;
}

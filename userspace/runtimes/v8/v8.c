// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Node processes: which binary holds V8 (the executable, or libnode), its
 * layout (v8meta.c, cached per file), where this process put V8's code, and
 * the struct lw_v8_proc the BPF walker reads. Then the JS frames of a
 * walked stack, named per process (v8name.c).
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
#include "runtimes/v8/v8.h"
#include "runtimes/v8/v8name.h"

#define V8_MAX_BINARIES 16	/* node binaries whose layout is kept */
#define V8_MAX_PIDS 64		/* processes with naming caches */
/*
 * glibc 2.36 (Debian 12) struct pthread: pthread_getspecific()'s arrays,
 * as the Python walker uses them (tools/pywalk/OFFSETS.md §1.3).
 */
#define GLIBC_SPECIFIC_1STBLOCK 0x310
#define GLIBC_SPECIFIC 0x510
/* a GOT's tls_index as the target's loader wrote it: bounded, the memory is the target's */
#define V8_MAX_TLS_MODULE 4096
#define V8_MAX_TLS_OFFSET (1u << 20)

/* One node binary, by the file's identity. */
struct v8_binary {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool ok;
	struct v8_meta meta;
	uint64_t last_used;
};

struct v8_pid {
	int pid;
	uint64_t start_time;
	struct v8_binary *bin;		/* NULL: not node */
	struct v8_target target;
	struct v8_namer *namer;
	uint64_t last_used;
};

struct v8_syms {
	struct v8_binary bins[V8_MAX_BINARIES];
	size_t nbins;
	struct v8_pid pids[V8_MAX_PIDS];
	size_t npids;
	uint64_t tick;
};

struct v8_syms *v8_syms__new(void)
{
	return calloc(1, sizeof(struct v8_syms));
}

static void v8_pid__clear(struct v8_pid *vp)
{
	v8_namer__free(vp->namer);
	memset(vp, 0, sizeof(*vp));
}

void v8_syms__free(struct v8_syms *vs)
{
	if (!vs)
		return;
	for (size_t i = 0; i < vs->npids; i++)
		v8_pid__clear(&vs->pids[i]);
	for (size_t i = 0; i < vs->nbins; i++)
		v8meta__free(&vs->bins[i].meta);
	free(vs);
}

void v8__forget_pid(struct v8_syms *vs, int pid)
{
	for (size_t i = 0; vs && i < vs->npids; i++) {
		if (vs->pids[i].pid != pid)
			continue;
		v8_pid__clear(&vs->pids[i]);
		vs->pids[i] = vs->pids[--vs->npids];
		memset(&vs->pids[vs->npids], 0, sizeof(vs->pids[0]));
		return;
	}
}

/* The layout of the file behind fd, loaded once per file. */
static struct v8_binary *v8_binary__get(struct v8_syms *vs, int fd, const struct stat *st)
{
	struct v8_binary *b = NULL;
	struct elf_handle h;

	for (size_t i = 0; i < vs->nbins; i++) {
		b = &vs->bins[i];
		if (b->dev == st->st_dev && b->ino == st->st_ino && b->size == st->st_size &&
		    b->mtime.tv_sec == st->st_mtim.tv_sec &&
		    b->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			b->last_used = ++vs->tick;
			return b;
		}
	}
	if (vs->nbins < V8_MAX_BINARIES) {
		b = &vs->bins[vs->nbins++];
	} else {
		b = &vs->bins[0];
		for (size_t i = 1; i < vs->nbins; i++)
			if (vs->bins[i].last_used < b->last_used)
				b = &vs->bins[i];
		/* its processes' targets point at its layout: they go too */
		for (size_t i = 0; i < vs->npids; i++)
			if (vs->pids[i].bin == b)
				v8__forget_pid(vs, vs->pids[i--].pid);
		v8meta__free(&b->meta);
	}
	memset(b, 0, sizeof(*b));
	b->dev = st->st_dev;
	b->ino = st->st_ino;
	b->size = st->st_size;
	b->mtime = st->st_mtim;
	b->last_used = ++vs->tick;
	if (elf__open_fd(&h, fd)) {
		snprintf(b->meta.why, sizeof(b->meta.why), "not an ELF file");
		return b;
	}
	b->ok = !v8meta__load(&b->meta, &h);
	elf__close(&h);
	return b;
}

/* The file that holds V8: libnode when one is mapped, else the executable named node*. */
static const struct proc_mapping *maps__find_node(struct proc *p, const struct proc_maps *maps)
{
	const struct proc_mapping *lib = NULL, *bin = NULL;
	char exe[PATH_MAX];

	if (!proc__exe(p, exe, sizeof(exe)))
		exe[0] = '\0';
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		const char *base = proc_mapping__basename(m);

		if (m->type != PROC_MAP_FILE)
			continue;
		if (!lib && !strncmp(base, "libnode.so", 10))
			lib = m;
		else if (!bin && exe[0] && !strcmp(m->path, exe) && !strncmp(base, "node", 4))
			bin = m;
	}
	return lib ? lib : bin;
}

static bool mapping__same_file(const struct proc_mapping *a, const struct proc_mapping *b)
{
	return a->inode == b->inode && a->dev == b->dev;
}

/*
 * The builtins where their symbols are stripped: the process's own record
 * of them (v8meta.h: blob_code_at), which must lie in executable code of
 * the binary. The file offset they sit at, for the remap search.
 */
static bool v8_target__blob_at_runtime(struct v8_target *t, struct proc *p,
				       const struct proc_maps *maps,
				       const struct proc_mapping *mod, const struct v8_meta *meta,
				       uint64_t *blob_off)
{
	/* {pointer, size} of blob_code_at/blob_size_at: as parsed first, then the others */
	static const int pairs[4][2] = { { 0, 0 }, { 0, 1 }, { 1, 1 }, { 1, 0 } };

	for (int k = 0; k < 4; k++) {
		uint64_t code_at = meta->blob_code_at[pairs[k][0]];
		uint64_t size_at = meta->blob_size_at[pairs[k][1]];
		uint64_t code = 0;
		uint32_t size = 0;

		if (!code_at || !proc__read(p, t->bias + code_at, &code, sizeof(code)) ||
		    !proc__read(p, t->bias + size_at, &size, sizeof(size)) || !size)
			continue;
		for (size_t i = 0; i < maps->n; i++) {
			const struct proc_mapping *m = &maps->v[i];

			if (m->type != PROC_MAP_FILE || !mapping__same_file(m, mod) || !m->exec ||
			    code < m->start || code + size > m->end || code + size < code)
				continue;
			t->blob_lo = code;
			t->blob_hi = code + size;
			*blob_off = m->offset + (code - m->start);
			return true;
		}
	}
	return false;
}

/*
 * Where this process runs V8 code: the builtins as loaded with the binary
 * (from the load bias), their copy in the code range (V8 remaps them next to
 * the JIT code for short calls: an executable mapping of the binary's blob
 * pages at an address its own layout does not put them), and the code
 * range itself: the run of anonymous mappings (reserved, committed, rwx)
 * around its executable pages. pcs only ever point into executable memory,
 * so the non-executable parts of the run cost nothing; a file-backed
 * executable mapping inside would, and ends the run.
 */
static bool v8_target__layout(struct v8_target *t, struct proc *p, const struct proc_maps *maps,
			      const struct proc_mapping *mod, const struct v8_meta *meta)
{
	uint64_t blob_off = meta->blob_file_off, best = 0;
	bool have_bias = false;

	t->remap_lo = t->remap_hi = t->remap_blob = t->code_lo = t->code_hi = 0;
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];

		if (m->type == PROC_MAP_FILE && mapping__same_file(m, mod) && m->offset == 0) {
			t->bias = m->start - meta->base_vaddr;
			t->blob_lo = t->bias + meta->blob_code;
			t->blob_hi = t->blob_lo + meta->blob_size;
			have_bias = true;
			break;
		}
	}
	if (!have_bias)
		return false;
	if (!meta->blob_code && !v8_target__blob_at_runtime(t, p, maps, mod, meta, &blob_off)) {
		t->blob_lo = t->blob_hi = 0;
		return false;
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];

		if (m->type == PROC_MAP_FILE && mapping__same_file(m, mod) && m->exec &&
		    m->offset <= blob_off && blob_off < m->offset + (m->end - m->start) &&
		    m->start + (blob_off - m->offset) != t->blob_lo) {
			t->remap_lo = m->start;
			t->remap_hi = m->end;
			t->remap_blob = m->start + (blob_off - m->offset);
		}
	}
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];
		uint64_t lo, hi, exec_bytes = 0;
		size_t j, k;

		if (m->type != PROC_MAP_ANON || !m->exec)
			continue;
		/* the run of touching anonymous mappings (or the builtins' copy) around it */
		for (j = i; j > 0 && maps->v[j - 1].end == maps->v[j].start &&
			    (maps->v[j - 1].type == PROC_MAP_ANON ||
			     mapping__same_file(&maps->v[j - 1], mod)); j--)
			;
		for (k = i; k + 1 < maps->n && maps->v[k].end == maps->v[k + 1].start &&
			    (maps->v[k + 1].type == PROC_MAP_ANON ||
			     mapping__same_file(&maps->v[k + 1], mod)); k++)
			;
		lo = maps->v[j].start;
		hi = maps->v[k].end;
		for (size_t x = j; x <= k; x++)
			if (maps->v[x].type == PROC_MAP_ANON && maps->v[x].exec)
				exec_bytes += maps->v[x].end - maps->v[x].start;
		/* several runs (another JIT in the process?): the one with the most code */
		if (exec_bytes > best) {
			best = exec_bytes;
			t->code_lo = lo;
			t->code_hi = hi;
		}
		i = k;
	}
	return true;
}

/* pid's entry, set up (or refreshed: V8's code range grows) from its maps now */
static struct v8_pid *v8_pid__get(struct v8_syms *vs, struct proc *p, bool refresh)
{
	const struct proc_maps *maps = proc__maps(p, false);
	const struct proc_mapping *mod;
	struct v8_pid *vp = NULL;
	struct stat st;
	int fd;

	for (size_t i = 0; i < vs->npids; i++) {
		if (vs->pids[i].pid != proc__pid(p))
			continue;
		if (vs->pids[i].start_time == proc__start_time(p))
			vp = &vs->pids[i];
		else
			v8__forget_pid(vs, proc__pid(p));
		break;
	}
	if (vp && !refresh) {
		vp->last_used = ++vs->tick;
		return vp->bin ? vp : NULL;
	}
	mod = maps ? maps__find_node(p, maps) : NULL;
	if (!mod)
		return NULL;
	if (!vp) {
		if (vs->npids == V8_MAX_PIDS) {
			size_t lru = 0;

			for (size_t i = 1; i < vs->npids; i++)
				if (vs->pids[i].last_used < vs->pids[lru].last_used)
					lru = i;
			v8__forget_pid(vs, vs->pids[lru].pid);
		}
		vp = &vs->pids[vs->npids++];
		vp->pid = proc__pid(p);
		vp->start_time = proc__start_time(p);
		fd = proc__open_mapping(p, mod, &st);
		vp->bin = fd >= 0 ? v8_binary__get(vs, fd, &st) : NULL;
		if (fd >= 0)
			close(fd);
		vp->namer = vp->bin && vp->bin->ok ? v8_namer__new() : NULL;
	}
	vp->last_used = ++vs->tick;
	if (!vp->bin)
		return NULL;
	vp->target.m = &vp->bin->meta;
	if (vp->bin->ok && !v8_target__layout(&vp->target, p, maps, mod, &vp->bin->meta))
		snprintf(vp->bin->meta.why, sizeof(vp->bin->meta.why), "%s",
			 vp->bin->meta.blob_code ? "binary not mapped" :
			 "embedded builtins not found in the process");
	return vp;
}

static bool v8_pid__usable(const struct v8_pid *vp)
{
	return vp->bin->ok && vp->namer && vp->target.blob_lo;
}

int v8__detect(struct v8_syms *vs, struct proc *p, struct lw_v8_proc *out, char *desc,
	       size_t len)
{
	struct v8_pid *vp = p ? v8_pid__get(vs, p, true) : NULL;
	const struct v8_target *t;
	const struct v8_meta *m;
	char vbuf[64];
	int32_t key = -1;
	uint64_t tls_index[2];

	if (!desc || !len) {
		desc = vbuf;
		len = sizeof(vbuf);
	}
	memset(out, 0, sizeof(*out));
	desc[0] = '\0';
	if (!vp)
		return -1;
	t = &vp->target;
	m = &vp->bin->meta;
	if (!v8_pid__usable(vp)) {
		out->flags = LW_V8_P_UNSUPPORTED;
		snprintf(desc, len, "no usable V8 metadata: %s", m->why[0] ? m->why : "unknown");
		return V8_UNSUPPORTED;
	}
	snprintf(desc, len, "V8 %u.%u.%u", m->version[0], m->version[1], m->version[2]);
	if (m->has_tls_isolate) {
		out->flags |= LW_V8_P_TLS_ISOLATE;
		out->tls_isolate = m->tls_isolate_tpoff;
	} else if (m->tls_index_at && proc__read(p, m->tls_index_at + t->bias, tls_index,
						 sizeof(tls_index)) &&
		   tls_index[0] >= 1 && tls_index[0] < V8_MAX_TLS_MODULE &&
		   tls_index[1] < V8_MAX_TLS_OFFSET) {
		/* libnode.so: the loader wrote its module id in the GOT at start */
		out->flags |= LW_V8_P_TLS_DTV;
		out->tls_module = (__u32)tls_index[0];
		out->tls_isolate = (__s64)tls_index[1];
	} else if (m->isolate_key_sym && proc__read(p, m->isolate_key_sym + t->bias, &key,
						      sizeof(key)) &&
		   key >= 0 && key < LW_V8_MAX_KEY) {
		/* node 18: pthread_getspecific(Isolate::isolate_key_), glibc's layout */
		out->flags |= LW_V8_P_PTHREAD_KEY;
		out->pthread_key = (__u32)key;
		out->tls_inline = GLIBC_SPECIFIC_1STBLOCK;
		out->tls_blocks = GLIBC_SPECIFIC;
	}
	out->iso_c_entry_fp = m->iso_c_entry_fp;
	out->iso_fast_c_fp = m->iso_fast_c_fp;
	out->iso_fast_c_pc = m->iso_fast_c_pc;
	out->fp_marker = (__u32)(LW_V8_WIN_BELOW + m->fp_context);
	out->fp_function = (__u32)(LW_V8_WIN_BELOW + m->fp_function);
	out->fp_bytecode_array = (__u32)(LW_V8_WIN_BELOW + m->fp_bytecode_array);
	out->fp_bytecode_offset = (__u32)(LW_V8_WIN_BELOW + m->fp_bytecode_offset);
	out->fp_entry_next = (__u32)(LW_V8_WIN_BELOW + m->fp_entry_next);
	out->fp_exit_target = (__u32)(LW_V8_WIN_BELOW + m->fp_exit_target);
	out->jsfunc_shared = m->jsfunc_shared;
	out->sfi_name = m->sfi_name_or_scope_info;
	out->sfi_script = m->sfi_script;
	out->sfi_ints = m->sfi_length;
	out->ft_entry = m->ft_entry;
	out->ft_construct_entry = m->ft_construct_entry;
	out->ft_builtin_exit = m->ft_builtin_exit;
	out->blob_lo = t->blob_lo;
	out->blob_hi = t->blob_hi;
	out->code_lo = t->code_lo;
	out->code_hi = t->code_hi;
	return 0;
}

int v8__symbolize(struct v8_syms *vs, struct proc *p, const struct lw_v8_stack *st,
		  struct frame *out, int max)
{
	struct v8_pid *vp = p ? v8_pid__get(vs, p, false) : NULL;
	int n = 0;
	char buf[sizeof(out->func)];

	if (max <= 0)
		return 0;
	if ((st->flags & LW_V8_S_UNSUPPORTED) || !vp || !v8_pid__usable(vp)) {
		snprintf(buf, sizeof(buf), "[js: no V8 metadata%s%.96s]", vp ? ": " : "",
			 vp ? vp->bin->meta.why : "");
		frame__marker(&out[0], FRAME_JS, buf);
		return 1;
	}
	vp->target.p = p;
	for (__u32 i = 0; i < st->nframes && i < LW_V8_MAX_DEPTH && n < max; i++) {
		const struct lw_v8_frame *f = &st->frames[i];

		/* typed frames (stubs, exits, entries): walked through, nothing to name */
		if (!f->func && !(f->flags & LW_V8_F_BUILTIN_EXIT))
			continue;
		n += v8_namer__frame(vp->namer, &vp->target, f, i ? 0 : st->top_ret, out + n,
				     max - n);
	}
	if ((st->flags & LW_V8_S_TRUNCATED) && n < max)
		frame__marker(&out[n++], FRAME_JS, "[js: truncated]");
	else if ((st->flags & LW_V8_S_READ_ERROR) && n < max)
		frame__marker(&out[n++], FRAME_JS, "[js: unreadable]");
	return n;
}

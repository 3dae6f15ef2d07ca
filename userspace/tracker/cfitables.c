// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kernel/collector.h"
#include "lib/clock.h"
#include "proc/debugfile.h"
#include "proc/elf.h"
#include "proc/procs.h"
#include "symbols/cfi.h"
#include "tracker/cfitables.h"

/* the vDSO is read from the target's memory: it is a page or two */
#define VDSO_MAX_BYTES (64u << 10)
/*
 * CPU time building tables a second, for all files: past it the rest wait for a
 * later update (their processes' tables are rebuilt then), so that a batch of
 * costly files never holds the collection up. One file stays within its own
 * bounds (symbols/cfi.h): a second of CPU at most.
 */
#define BUILD_MAX_NS_PER_S 300000000ull

enum uw_file_state {
	UW_FILE_LOADED,		/* its rows are in the kernel */
	UW_FILE_NO_CFI,		/* nothing the walker can use: frame pointers */
	UW_FILE_FULL,		/* no room left: frame pointers, said once */
};

/* One file's table, shared by every process that maps it. */
struct uw_file {
	dev_t dev;
	uint64_t ino;		/* for the vDSO: a hash of its image, dev 0 */
	unsigned int refs;	/* processes whose mapping table holds it */
	enum uw_file_state state;
	size_t row_start, nrows;
	size_t page_start, npages;
	uint32_t text_lo;
	struct elf_segment *segs;	/* for each mapping's load bias */
	size_t nsegs;
	struct uw_file *next;
};

/* Free space in one of the tables: sorted, coalesced extents. */
struct extent {
	size_t at, len;
};

struct space {
	struct extent *free;
	size_t n, cap;
	size_t used, total;
};

/* A traced process with a mapping table in the kernel. */
struct uw_proc {
	__u32 pid;
	bool used;
	unsigned int maps_gen;	/* the maps snapshot it was built from */
	struct uw_file **files;
	size_t nfiles;
	struct lw_uw_proc table;	/* as written to the kernel */
};

struct cfi_tables {
	struct collector *c;
	struct space rows, pages;
	struct uw_file *files;
	size_t nfiles_loaded;
	struct uw_proc procs[LW_UW_MAX_PROCS];	/* by slot */
	bool said_full, said_slots, said_over;
	double build_s;
	uint64_t window_ns, window_cpu_ns;	/* this second's building */
	bool deferred;		/* a file waited for the next second */
};

/* ------------------------------------------------------------------ */
/* space */

static int space__init(struct space *s, size_t total)
{
	s->total = total;
	if (!total)
		return 0;
	s->free = malloc(sizeof(*s->free));
	if (!s->free)
		return -ENOMEM;
	s->free[0] = (struct extent){ 0, total };
	s->n = s->cap = 1;
	return 0;
}

/* First fit: the tables are few and large, the holes are what files left. */
static bool space__alloc(struct space *s, size_t len, size_t *at)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->free[i].len < len)
			continue;
		*at = s->free[i].at;
		s->free[i].at += len;
		s->free[i].len -= len;
		if (!s->free[i].len) {
			memmove(&s->free[i], &s->free[i + 1], (s->n - i - 1) * sizeof(*s->free));
			s->n--;
		}
		s->used += len;
		return true;
	}
	return false;
}

static void space__release(struct space *s, size_t at, size_t len)
{
	size_t i = 0;

	if (!len)
		return;
	while (i < s->n && s->free[i].at < at)
		i++;
	/* joins the hole before it, the one after it, or both */
	if (i > 0 && s->free[i - 1].at + s->free[i - 1].len == at) {
		s->free[i - 1].len += len;
		if (i < s->n && at + len == s->free[i].at) {
			s->free[i - 1].len += s->free[i].len;
			memmove(&s->free[i], &s->free[i + 1], (s->n - i - 1) * sizeof(*s->free));
			s->n--;
		}
	} else if (i < s->n && at + len == s->free[i].at) {
		s->free[i].at = at;
		s->free[i].len += len;
	} else {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 8;
			struct extent *v = realloc(s->free, cap * sizeof(*v));

			if (!v)
				return;	/* the space is lost, not corrupted */
			s->free = v;
			s->cap = cap;
		}
		memmove(&s->free[i + 1], &s->free[i], (s->n - i) * sizeof(*s->free));
		s->free[i] = (struct extent){ at, len };
		s->n++;
	}
	s->used -= len;
}

/* ------------------------------------------------------------------ */
/* files */

static void file__unload(struct cfi_tables *u, struct uw_file *f)
{
	if (f->state != UW_FILE_LOADED)
		return;
	space__release(&u->rows, f->row_start, f->nrows);
	space__release(&u->pages, f->page_start, f->npages);
	u->nfiles_loaded--;
}

/* The table into the kernel's arrays, the page index in absolute row numbers. */
static int file__place(struct cfi_tables *u, struct uw_file *f, const struct cfi_table *t)
{
	struct lw_uw_page *pages;
	int err;

	if (!space__alloc(&u->rows, t->n, &f->row_start))
		return -ENOSPC;
	if (!space__alloc(&u->pages, t->npages, &f->page_start)) {
		space__release(&u->rows, f->row_start, t->n);
		return -ENOSPC;
	}
	f->nrows = t->n;
	f->npages = t->npages;
	f->text_lo = t->text_lo;
	pages = malloc(t->npages * sizeof(*pages));
	err = pages ? 0 : -ENOMEM;
	for (uint32_t i = 0; pages && i < t->npages; i++) {
		pages[i].first = (__u32)(f->row_start + t->pages[i].first);
		pages[i].last = (__u32)(f->row_start + t->pages[i].last);
	}
	if (!err)
		err = collector__write_unwind_rows(u->c, f->row_start, t->rows, t->n);
	if (!err)
		err = collector__write_unwind_pages(u->c, f->page_start, pages, t->npages);
	free(pages);
	if (err) {
		space__release(&u->rows, f->row_start, f->nrows);
		space__release(&u->pages, f->page_start, f->npages);
		return err;
	}
	f->state = UW_FILE_LOADED;
	u->nfiles_loaded++;
	return 0;
}

/* A file's .debug_frame may be in its debug file (a vDSO, p NULL, has none). */
static int file__build(struct proc *p, const char *path, const struct elf_handle *h,
		       struct cfi_table *t)
{
	struct elf_handle dbg;
	bool has_dbg = p && !debugfile__open(p, path, h, &dbg);
	int err = cfi__build(h, has_dbg ? &dbg : NULL, t);

	if (has_dbg)
		elf__close(&dbg);
	return err;
}

static void file__load(struct cfi_tables *u, struct uw_file *f, struct proc *p, const char *path,
		       const struct elf_handle *h)
{
	struct cfi_table t;
	double t0 = clock__thread_cpu();
	int err;

	f->state = UW_FILE_NO_CFI;
	if (elf__loads(h, &f->segs, &f->nsegs))
		goto out;
	err = file__build(p, path, h, &t);
	if ((err == -E2BIG || err == -ETIME) && !u->said_over) {
		fprintf(stderr, "loopwatch: the call-frame information of %s is over its budget "
			"(%s): walked with frame pointers, its frames marked; said once\n",
			path ? path : "[vdso]", err == -E2BIG ? "rows or evaluation steps" :
			"a second of CPU");
		u->said_over = true;
	}
	if (err)
		goto out;
	err = file__place(u, f, &t);
	if (err == -ENOSPC) {
		f->state = UW_FILE_FULL;
		if (!u->said_full)
			fprintf(stderr, "loopwatch: the unwind tables are full (%zu rows): %s and "
				"files loaded later are walked with frame pointers, their frames "
				"marked; raise --unwind-mb\n", u->rows.total,
				path ? path : "[vdso]");
		u->said_full = true;
	}
	cfi_table__free(&t);
out:
	u->build_s += clock__thread_cpu() - t0;
	u->window_cpu_ns += (uint64_t)((clock__thread_cpu() - t0) * 1e9);
}

/* Whether this second's building time has room left; false: wait for the next. */
static bool build__may(struct cfi_tables *u)
{
	uint64_t now = clock__mono_ns();

	if (now - u->window_ns >= 1000000000ull) {
		u->window_ns = now;
		u->window_cpu_ns = 0;
	}
	if (u->window_cpu_ns < BUILD_MAX_NS_PER_S)
		return true;
	u->deferred = true;
	return false;
}

static struct uw_file *files__find(struct cfi_tables *u, dev_t dev, uint64_t ino)
{
	for (struct uw_file *f = u->files; f; f = f->next) {
		if (f->dev == dev && f->ino == ino)
			return f;
	}
	return NULL;
}

static struct uw_file *files__insert(struct cfi_tables *u, dev_t dev, uint64_t ino)
{
	struct uw_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->dev = dev;
	f->ino = ino;
	f->state = UW_FILE_NO_CFI;
	f->next = u->files;
	u->files = f;
	return f;
}

static void files__put(struct cfi_tables *u, struct uw_file *f)
{
	struct uw_file **pp;

	if (!f || --f->refs)
		return;
	file__unload(u, f);
	for (pp = &u->files; *pp && *pp != f; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = f->next;
	free(f->segs);
	free(f);
}

/* The file behind a mapping, its table built on first sight. */
static struct uw_file *files__of_mapping(struct cfi_tables *u, struct proc *p,
					 const struct proc_mapping *m)
{
	struct uw_file *f = files__find(u, m->dev, m->inode);
	struct elf_handle h;
	struct stat st;
	int fd;

	if (f)
		return f;
	if (!build__may(u))
		return NULL;
	f = files__insert(u, m->dev, m->inode);
	if (!f)
		return NULL;
	fd = proc__open_mapping(p, m, &st);
	if (fd < 0)
		return f;
	if (!elf__open_fd(&h, fd)) {
		file__load(u, f, p, m->path, &h);
		elf__close(&h);
	}
	close(fd);
	return f;
}

/* The vDSO has no file: its image from the target, keyed by content. */
static struct uw_file *files__of_vdso(struct cfi_tables *u, struct proc *p,
				      const struct proc_mapping *m)
{
	struct uw_file *f = NULL;
	struct elf_handle h;
	uint64_t key;
	size_t len;
	void *image = proc__read_image(p, m, VDSO_MAX_BYTES, &len, &key);

	if (!image)
		return NULL;
	f = files__find(u, 0, key);
	if (f)
		goto out;
	f = files__insert(u, 0, key);
	if (f && !elf__open_mem(&h, image, len)) {
		file__load(u, f, p, NULL, &h);
		elf__close(&h);
	}
out:
	free(image);
	return f;
}

/* ------------------------------------------------------------------ */
/* processes */

static struct uw_proc *procs__find(struct cfi_tables *u, __u32 pid)
{
	for (int i = 0; i < LW_UW_MAX_PROCS; i++) {
		if (u->procs[i].used && u->procs[i].pid == pid)
			return &u->procs[i];
	}
	return NULL;
}

static struct uw_proc *procs__add(struct cfi_tables *u, __u32 pid)
{
	for (int i = 0; i < LW_UW_MAX_PROCS; i++) {
		struct uw_proc *up = &u->procs[i];

		if (up->used)
			continue;
		memset(up, 0, sizeof(*up));
		up->used = true;
		up->pid = pid;
		return up;
	}
	if (!u->said_slots)
		fprintf(stderr, "loopwatch: unwind tables for %d processes in use: process %u and "
			"later ones are walked with frame pointers, their frames marked\n",
			LW_UW_MAX_PROCS, pid);
	u->said_slots = true;
	return NULL;
}

static void proc__release_files(struct cfi_tables *u, struct uw_file **files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		files__put(u, files[i]);
	free(files);
}

/* One executable mapping: where it is, and its file's rows when it has any. */
static void map__describe(const struct proc_mapping *m, const struct uw_file *f,
			  struct lw_uw_map *out)
{
	uint64_t bias;

	memset(out, 0, sizeof(*out));
	out->start = m->start;
	out->end = m->end;
	if (!f || f->state != UW_FILE_LOADED ||
	    elf_segments__bias(f->segs, f->nsegs, m->start, m->offset, &bias))
		return;
	out->bias = bias;
	out->row_start = (__u32)f->row_start;
	out->row_count = (__u32)f->nrows;
	out->page_start = (__u32)f->page_start;
	out->page_count = (__u32)f->npages;
	out->text_lo = f->text_lo;
	out->flags = LW_UW_MAP_CFI;
}

void cfi_tables__update(struct cfi_tables *u, struct proc *p)
{
	const struct proc_maps *maps = proc__maps(p, false);
	__u32 pid = (__u32)proc__pid(p);
	struct lw_uw_proc *table;
	struct uw_file **files;
	struct uw_proc *up;
	size_t nfiles = 0;

	if (!u || !u->rows.total || !maps)
		return;
	up = procs__find(u, pid);
	if (up && up->maps_gen == maps->gen)
		return;
	if (!up && !(up = procs__add(u, pid)))
		return;
	table = calloc(1, sizeof(*table));
	files = calloc(maps->n + 1, sizeof(*files));
	if (!table || !files) {
		free(table);
		free(files);
		return;
	}
	u->deferred = false;
	for (size_t i = 0; i < maps->n && table->nmaps < LW_UW_MAX_MAPS; i++) {
		const struct proc_mapping *m = &maps->v[i];
		struct uw_file *f = NULL;

		if (!m->exec)
			continue;
		if (m->type == PROC_MAP_FILE)
			f = files__of_mapping(u, p, m);
		else if (m->type == PROC_MAP_PSEUDO && !strcmp(m->path, "[vdso]"))
			f = files__of_vdso(u, p, m);
		if (f) {
			f->refs++;
			files[nfiles++] = f;
		}
		map__describe(m, f, &table->maps[table->nmaps++]);
	}
	/* the new references are held: the old ones may go now */
	proc__release_files(u, up->files, up->nfiles);
	up->files = files;
	up->nfiles = nfiles;
	/* a file that waited for its turn: this process's table is made again next time */
	up->maps_gen = u->deferred ? maps->gen - 1 : maps->gen;
	if (memcmp(table, &up->table, sizeof(*table)) &&
	    !collector__set_unwind(u->c, pid, (__u32)(up - u->procs), table))
		up->table = *table;
	free(table);
}

void cfi_tables__drop(struct cfi_tables *u, __u32 pid)
{
	struct uw_proc *up = u ? procs__find(u, pid) : NULL;

	if (!up)
		return;
	collector__set_unwind(u->c, pid, 0, NULL);
	proc__release_files(u, up->files, up->nfiles);
	memset(up, 0, sizeof(*up));
}

struct cfi_tables *cfi_tables__new(struct collector *c)
{
	struct cfi_tables *u = calloc(1, sizeof(*u));
	size_t rows, pages;

	if (!u)
		return NULL;
	u->c = c;
	collector__unwind_capacity(c, &rows, &pages);
	if (space__init(&u->rows, rows) || space__init(&u->pages, pages)) {
		cfi_tables__free(u);
		return NULL;
	}
	return u;
}

void cfi_tables__free(struct cfi_tables *u)
{
	if (!u)
		return;
	for (int i = 0; i < LW_UW_MAX_PROCS; i++) {
		if (u->procs[i].used)
			proc__release_files(u, u->procs[i].files, u->procs[i].nfiles);
	}
	while (u->files) {
		struct uw_file *f = u->files;

		u->files = f->next;
		free(f->segs);
		free(f);
	}
	free(u->rows.free);
	free(u->pages.free);
	free(u);
}

void cfi_tables__stats(const struct cfi_tables *u, struct cfi_tables_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!u)
		return;
	st->files = u->nfiles_loaded;
	st->rows = u->rows.used;
	st->rows_max = u->rows.total;
	st->build_s = u->build_s;
	for (int i = 0; i < LW_UW_MAX_PROCS; i++)
		st->procs += u->procs[i].used;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Native symbols: address to function name for user and kernel stacks.
 *
 * Layout of the caches:
 *  - one struct sym_file per distinct file (st_dev, st_ino, size, mtime),
 *    shared by every process that maps it and refcounted by the mappings
 *    that point at it; unreferenced ones are kept for reuse up to
 *    MAX_IDLE_FILES and evicted least-recently-used first.
 *  - one struct sym_proc per (pid, start time): the files resolved for the
 *    process's current maps snapshot (the maps themselves belong to
 *    proc/); at most MAX_PROCS, evicted least-recently-used first.
 *  - /proc/kallsyms, parsed once on the first kernel address.
 *
 * Everything that comes from the target (maps lines, ELF contents, stat)
 * is untrusted: every length and index is checked before use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/text.h"
#include "proc/debugfile.h"
#include "proc/elf.h"
#include "proc/minidebug.h"
#include "proc/procs.h"
#include "symbols/demangle.h"
#include "symbols/native.h"
#include "symbols/perfmap.h"

#define MAX_PROCS		1024
#define MAX_IDLE_FILES		128
/*
 * A traced process chooses what it maps: one file's symbol table may cost at
 * most this many symbols, bytes of names and CPU time to load (node, among the
 * largest real binaries, has 185k symbols and 13 MB of names), and the whole
 * cache at most MAX_CACHE_BYTES. A file over budget keeps no symbols: its
 * frames are named SYM_OVER_BUDGET.
 */
#define MAX_FILE_SYMS		(1u << 20)
#define MAX_FILE_NAME_BYTES	(32u << 20)
#define MAX_FILE_LOAD_NS	500000000ull
#define MAX_CACHE_BYTES		(256ull << 20)
#define SYM_OVER_BUDGET		"[symbols over budget]"
/*
 * All files' tables together load at most this share of a CPU (0.3 s a
 * second, a burst of one file's budget): ten large tables mapped at once
 * would otherwise hold collection for seconds. A file waiting its turn is
 * named SYM_DEFERRED until then.
 */
#define LOAD_CPU_PERMILLE	300
#define SYM_DEFERRED		"[symbols deferred]"
#define MAX_KALLSYMS_BYTES	(256u << 20)
#define MAX_ELF_BYTES		(4ull << 30)
#define MAX_VDSO_BYTES		(64u << 10)
/* bounds the backwards scan for an enclosing symbol on hostile tables */
#define MAX_WALK_BACK		256
/* kallsyms has no sizes: beyond this, "nearest preceding" is a guess */
#define MAX_KSYM_OFFSET		(1u << 20)
/* below mmap_min_addr nothing can be mapped: no point re-reading maps */
#define MIN_USER_ADDR		4096u
#define SYM_NAME_MAX		(sizeof(((struct frame *)0)->func))
/* names are kept whole up to this: a C++ name must be whole to demangle */
#define SYM_RAW_MAX		1024
/* a JIT address the perf map does not know re-reads it, at most this often */
#define PERF_MAP_REREAD_NS	(100 * 1000000ull)

struct sym {
	uint64_t addr;
	uint64_t size;
	uint64_t max_end;	/* highest addr + size of this and all earlier syms */
	uint32_t name;		/* offset into symtab.names */
	uint16_t mod;		/* kernel only: index into ksyms module table */
	uint8_t rank;		/* lower wins when several symbols share an address */
	uint8_t is_func;
};

struct symtab {
	struct sym *syms;
	size_t n;
	size_t cap;
	char *names;
	size_t names_len;
	size_t names_cap;
};

struct sym_file {
	struct sym_file *next;
	/* identity */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool is_vdso;		/* then ino holds a hash of the image */
	bool over_budget;	/* its symbols were not kept: frames say so */
	bool deferred;		/* not loaded yet: the load budget was spent */

	unsigned int refs;
	uint64_t last_used;
	struct symtab tab;
	struct elf_segment *segs;
	size_t nsegs;
	/*
	 * Display names (C++ demangled, versions and clone suffixes cut), made
	 * on first use: per symbol, 0 not yet, 1 the raw name, else 2 + offset
	 * in dm_names.
	 */
	uint32_t *dm;
	char *dm_names;
	size_t dm_len, dm_cap;
};

/* What one mapping of a process resolved to. */
struct sym_map {
	bool resolved;		/* file lookup attempted (file may still be NULL) */
	struct sym_file *file;
};

/* The files of one process's maps snapshot. */
struct sym_proc {
	int pid;
	uint64_t start_time;
	uint64_t last_used;
	struct proc_maps *maps;	/* a reference, kept as long as this entry */
	struct sym_map *v;	/* one per maps->v[i] */
	struct perf_map *jit;	/* its perf map, read on the first JIT frame */
};

struct symbolizer {
	struct procs *procs;
	struct sym_proc *sprocs[MAX_PROCS];
	size_t nsprocs;
	struct sym_file *files;
	uint64_t files_bytes;	/* what the cached files' tables hold */
	uint64_t tick;
	/* CPU time the tables may still take to load (LOAD_CPU_PERMILLE), and when it was */
	int64_t load_credit_ns;
	uint64_t load_credit_at;
	bool said_deferred;
	bool said_over_budget;

	bool ksyms_tried;
	struct symtab ksyms;
	uint32_t *kmods;	/* name offsets into ksyms.names; [0] is the core kernel */
	size_t nkmods;
};

/* ------------------------------------------------------------------ */
/* small helpers */

static void str__copy(char *dst, size_t size, const char *src)
{
	size_t len;

	if (!size)
		return;
	len = src ? strnlen(src, size - 1) : 0;
	memcpy(dst, src ? src : "", len);
	dst[len] = '\0';
}

/* ------------------------------------------------------------------ */
/* symbol tables */

static void symtab__free(struct symtab *t)
{
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

static bool symtab__add(struct symtab *t, uint64_t addr, uint64_t size, const char *name,
			size_t name_len, uint8_t rank, bool is_func, uint16_t mod)
{
	struct sym *sym;
	void *tmp;
	size_t need;

	if (name_len >= SYM_RAW_MAX)
		name_len = SYM_RAW_MAX - 1;
	if (t->names_len > UINT32_MAX - SYM_RAW_MAX)
		return false;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 1024;

		tmp = realloc(t->syms, cap * sizeof(*t->syms));
		if (!tmp)
			return false;
		t->syms = tmp;
		t->cap = cap;
	}
	need = t->names_len + name_len + 1;
	if (need > t->names_cap) {
		size_t cap = t->names_cap ? t->names_cap : 16384;

		while (cap < need)
			cap *= 2;
		tmp = realloc(t->names, cap);
		if (!tmp)
			return false;
		t->names = tmp;
		t->names_cap = cap;
	}
	sym = &t->syms[t->n++];
	sym->addr = addr;
	sym->size = size;
	sym->max_end = 0;
	sym->name = (uint32_t)t->names_len;
	sym->mod = mod;
	sym->rank = rank;
	sym->is_func = is_func;
	memcpy(t->names + t->names_len, name, name_len);
	t->names[t->names_len + name_len] = '\0';
	t->names_len = need;
	return true;
}

/* Room for n more symbols in one step: a table grown by doubling peaks at three times its size. */
static bool symtab__reserve(struct symtab *t, size_t n)
{
	void *tmp;

	if (!n || t->cap - t->n >= n)
		return true;
	tmp = realloc(t->syms, (t->n + n) * sizeof(*t->syms));
	if (!tmp)
		return false;
	t->syms = tmp;
	t->cap = t->n + n;
	return true;
}

static int sym__cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	/* name offsets follow table order: keeps the sort deterministic */
	return x->name < y->name ? -1 : x->name > y->name;
}

/*
 * Sort once, keep only the best-ranked symbol per address and record the
 * running maximum end so lookups know when to stop scanning backwards.
 */
static void symtab__finish(struct symtab *t)
{
	uint64_t max_end = 0, end;
	size_t i, out = 0;
	void *tmp;

	if (!t->n)
		return;
	qsort(t->syms, t->n, sizeof(*t->syms), sym__cmp);
	for (i = 0; i < t->n; i++) {
		if (out && t->syms[out - 1].addr == t->syms[i].addr)
			continue;
		t->syms[out++] = t->syms[i];
	}
	t->n = out;
	for (i = 0; i < t->n; i++) {
		end = t->syms[i].addr + t->syms[i].size;
		if (end < t->syms[i].addr)
			end = UINT64_MAX;
		if (end > max_end)
			max_end = end;
		t->syms[i].max_end = max_end;
	}
	tmp = realloc(t->syms, t->n * sizeof(*t->syms));
	if (tmp) {
		t->syms = tmp;
		t->cap = t->n;
	}
}

/*
 * Greatest start <= v. A sized symbol only covers [addr, addr + size); a
 * sized FUNC covering v beats anything else, and a size-0 symbol (asm
 * labels, kallsyms) covers everything up to the next symbol.
 */
static const struct sym *symtab__find(const struct symtab *t, uint64_t v)
{
	const struct sym *cand, *cover = NULL, *s;
	size_t lo = 0, hi = t->n, mid, j, steps;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->syms[mid].addr <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	cand = &t->syms[lo - 1];
	for (j = lo - 1, steps = 0; steps < MAX_WALK_BACK; j--, steps++) {
		s = &t->syms[j];
		if (s->max_end <= v)
			break;
		if (s->size && v - s->addr < s->size) {
			if (s->is_func)
				return s;
			if (!cover)
				cover = s;
		}
		if (!j)
			break;
	}
	if (cover)
		return cover;
	return cand->size ? NULL : cand;
}

/* ------------------------------------------------------------------ */
/* ELF files */

static uint8_t elf__rank(unsigned char type, unsigned char bind, bool *is_func)
{
	uint8_t rank;

	*is_func = type == STT_FUNC || type == STT_GNU_IFUNC;
	if (*is_func)
		rank = 0;
	else if (type == STT_NOTYPE)
		rank = 1;
	else
		rank = 2;
	rank *= 4;
	if (bind == STB_WEAK)
		rank += 1;
	else if (bind != STB_GLOBAL)
		rank += 2;
	return rank;
}

struct symtab_load {
	struct symtab *t;
	bool arm;
	uint64_t deadline_ns;	/* thread CPU time */
	uint64_t room;		/* bytes the cache has left for this table */
	bool over_budget;
};

static uint64_t symtab__bytes(const struct symtab *t)
{
	return t->cap * sizeof(*t->syms) + t->names_cap;
}

/* Checked as symbols come in: a hostile table stops costing at its budget. */
static bool symtab_load__over(struct symtab_load *ld)
{
	if (ld->t->n >= MAX_FILE_SYMS || ld->t->names_len >= MAX_FILE_NAME_BYTES ||
	    symtab__bytes(ld->t) > ld->room ||
	    (!(ld->t->n % 4096) && clock__thread_cpu_ns() > ld->deadline_ns))
		ld->over_budget = true;
	return ld->over_budget;
}

/*
 * Before a table is read: its section header says how many symbols come,
 * and room is made for them at once -- or the file is over budget, with
 * nothing allocated.
 */
static bool symtab_load__admit(struct symtab_load *ld, size_t count)
{
	if (count > MAX_FILE_SYMS || (ld->t->n + count) * sizeof(struct sym) > ld->room ||
	    !symtab__reserve(ld->t, count))
		ld->over_budget = true;
	return !ld->over_budget;
}

static int symbol__add(const struct elf_symbol *sym, void *ctx)
{
	struct symtab_load *ld = ctx;
	uint64_t addr = sym->value;
	uint8_t rank;
	bool is_func;

	if (sym->type != STT_FUNC && sym->type != STT_GNU_IFUNC && sym->type != STT_NOTYPE &&
	    sym->type != STT_OBJECT)
		return 0;
	/* Thumb functions carry the mode in bit 0 */
	if (ld->arm && sym->type == STT_FUNC)
		addr &= ~1ull;
	if (!addr)
		return 0;
	if (symtab_load__over(ld))
		return -E2BIG;
	rank = elf__rank(sym->type, sym->bind, &is_func);
	if (!symtab__add(ld->t, addr, sym->size, sym->name, strlen(sym->name), rank, is_func, 0))
		return -ENOMEM;
	return 0;
}

/*
 * The .symtab of h into the file's table, within ld's budget; false when it
 * has none, it failed or it is over budget (then ld->over_budget).
 */
static bool sym_file__load_symtab(struct sym_file *sf, const struct elf_handle *h,
				  struct symtab_load *ld)
{
	int ret;

	/* the table's own size tells first, before anything is copied */
	ret = symtab_load__admit(ld, elf__symbol_count(h, SHT_SYMTAB)) ?
		      elf__symbols(h, SHT_SYMTAB, symbol__add, ld) : -E2BIG;
	if (ld->over_budget || (ret && ret != -EIO) || !sf->tab.n) {
		/* an allocation failure may have added a few: start over cleanly */
		symtab__free(&sf->tab);
		return false;
	}
	return true;
}

/*
 * .symtab when it has anything; for a stripped file the one of its debug
 * file (p and path say where to look; p NULL: the vDSO, none); else the
 * exported symbols, with .gnu_debugdata's .symtab where the file has one.
 * Within the budget: a table over it leaves the file with no symbols,
 * marked, rather than falling back to a smaller one.
 */
static void sym_file__load_symbols(struct sym_file *sf, const struct elf_handle *h,
				   struct proc *p, const char *path, uint64_t room)
{
	struct symtab_load ld = { .t = &sf->tab, .room = room };
	struct elf_handle dbg;
	GElf_Ehdr eh;
	bool done;

	if (!gelf_getehdr(h->elf, &eh))
		return;
	ld.arm = eh.e_machine == EM_ARM;
	ld.deadline_ns = clock__thread_cpu_ns() + MAX_FILE_LOAD_NS;
	done = sym_file__load_symtab(sf, h, &ld);
	if (!done && !ld.over_budget && p && !debugfile__open(p, path, h, &dbg)) {
		/* the debug file is a file of its own: its table gets its own CPU time */
		ld.deadline_ns = clock__thread_cpu_ns() + MAX_FILE_LOAD_NS;
		done = sym_file__load_symtab(sf, &dbg, &ld);
		elf__close(&dbg);
	}
	/*
	 * MiniDebugInfo holds only what .dynsym lacks (the static functions):
	 * the two tables together name the file
	 */
	if (!done && !ld.over_budget && !minidebug__open(h, &dbg)) {
		ld.deadline_ns = clock__thread_cpu_ns() + MAX_FILE_LOAD_NS;
		sym_file__load_symtab(sf, &dbg, &ld);
		elf__close(&dbg);
	}
	if (!done && !ld.over_budget) {
		if (symtab_load__admit(&ld, elf__symbol_count(h, SHT_DYNSYM)) &&
		    elf__symbols(h, SHT_DYNSYM, symbol__add, &ld) &&
		    !sf->tab.n)
			symtab__free(&sf->tab);
	}
	if (ld.over_budget) {
		symtab__free(&sf->tab);
		sf->over_budget = true;
		return;
	}
	symtab__finish(&sf->tab);
}

/*
 * What a file holds once loaded; the display-name index (dm) is counted
 * before it is made, the display names themselves only grow with the
 * symbols that stacks show.
 */
static uint64_t sym_file__bytes(const struct sym_file *sf)
{
	return sizeof(*sf) + sf->tab.cap * sizeof(*sf->tab.syms) + sf->tab.names_cap +
	       sf->tab.n * sizeof(*sf->dm) + sf->nsegs * sizeof(*sf->segs);
}

/*
 * A file that fails to parse still gets an entry (with no symbols) so that
 * non-ELF or truncated files are not re-read for every address.
 */
static void sym_file__load(struct sym_file *sf, struct elf_handle *h, struct proc *p,
			   const char *path, uint64_t room)
{
	if (elf__loads(h, &sf->segs, &sf->nsegs))
		return;
	sym_file__load_symbols(sf, h, p, path, room);
}

static void sym_file__destroy(struct sym_file *sf)
{
	symtab__free(&sf->tab);
	free(sf->segs);
	free(sf->dm);
	free(sf->dm_names);
	free(sf);
}

/* The name to show for a symbol (symbols/demangle.h), made once; NULL: the raw name. */
static const char *sym_file__display(struct sym_file *sf, const struct sym *sym)
{
	size_t idx = (size_t)(sym - sf->tab.syms), len;
	char buf[SYM_NAME_MAX], *names;

	if (!sf->dm)
		sf->dm = calloc(sf->tab.n, sizeof(*sf->dm));
	if (!sf->dm)
		return NULL;
	if (sf->dm[idx] == 1)
		return NULL;
	if (sf->dm[idx])
		return sf->dm_names + sf->dm[idx] - 2;
	sf->dm[idx] = 1;
	if (!demangle__display(sf->tab.names + sym->name, buf, sizeof(buf)))
		return NULL;
	len = strlen(buf) + 1;
	if (sf->dm_len + len > sf->dm_cap) {
		size_t cap = sf->dm_cap ? sf->dm_cap * 2 : 4096;

		if (cap > UINT32_MAX - 2)
			return NULL;
		names = realloc(sf->dm_names, cap);
		if (!names)
			return NULL;
		sf->dm_names = names;
		sf->dm_cap = cap;
	}
	memcpy(sf->dm_names + sf->dm_len, buf, len);
	sf->dm[idx] = (uint32_t)(sf->dm_len + 2);
	sf->dm_len += len;
	return sf->dm_names + sf->dm_len - len;
}

/*
 * File offset -> link-time virtual address. The mapping says which file
 * offset an address corresponds to, PT_LOAD says where that offset was
 * linked. This is what makes non-PIE executables (vaddr 0x400000-based),
 * PIE and shared libraries all come out right.
 */
static bool sym_file__to_vaddr(const struct sym_file *sf, const struct proc_mapping *m,
			       uint64_t addr, uint64_t *vaddr)
{
	uint64_t fo = addr - m->start + m->offset;
	uint64_t map_end = m->offset + (m->end - m->start);
	const struct elf_segment *seg;
	size_t i;

	for (i = 0; i < sf->nsegs; i++) {
		seg = &sf->segs[i];
		if (fo >= seg->offset && fo - seg->offset < seg->memsz) {
			*vaddr = fo - seg->offset + seg->vaddr;
			return true;
		}
	}
	/* the page-aligned head of a segment: use the segment the mapping holds */
	for (i = 0; i < sf->nsegs; i++) {
		seg = &sf->segs[i];
		if (seg->offset < map_end && seg->offset + seg->filesz > m->offset) {
			*vaddr = fo - seg->offset + seg->vaddr;
			return true;
		}
	}
	if (!sf->nsegs) {
		*vaddr = fo;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* file cache */

/* Idle files go, least recently used first, past MAX_IDLE_FILES or MAX_CACHE_BYTES. */
static void files__trim(struct symbolizer *s)
{
	struct sym_file **pp, **victim;
	size_t idle;

	for (;;) {
		idle = 0;
		victim = NULL;
		for (pp = &s->files; *pp; pp = &(*pp)->next) {
			if ((*pp)->refs)
				continue;
			idle++;
			if (!victim || (*pp)->last_used < (*victim)->last_used)
				victim = pp;
		}
		if ((idle <= MAX_IDLE_FILES && s->files_bytes <= MAX_CACHE_BYTES) || !victim)
			return;
		{
			struct sym_file *sf = *victim;

			*victim = sf->next;
			s->files_bytes -= sym_file__bytes(sf);
			sym_file__destroy(sf);
		}
	}
}

/*
 * A file's table is loaded: count it against the cache. When the files in
 * use already hold the whole bound, this one keeps no symbols.
 */
static void files__account(struct symbolizer *s, struct sym_file *sf)
{
	s->files_bytes += sym_file__bytes(sf);
	files__trim(s);
	if (s->files_bytes <= MAX_CACHE_BYTES)
		return;
	s->files_bytes -= sym_file__bytes(sf);
	symtab__free(&sf->tab);
	sf->over_budget = true;
	s->files_bytes += sym_file__bytes(sf);
}

/* The file a stat says: device, inode, size and modification time alike. */
static bool sym_file__is(const struct sym_file *sf, const struct stat *st, bool is_vdso)
{
	return sf->is_vdso == is_vdso && sf->dev == st->st_dev && sf->ino == st->st_ino &&
	       sf->size == st->st_size && sf->mtime.tv_sec == st->st_mtim.tv_sec &&
	       sf->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static struct sym_file *files__find(struct symbolizer *s, const struct stat *st, bool is_vdso)
{
	struct sym_file *sf;

	for (sf = s->files; sf; sf = sf->next) {
		if (sym_file__is(sf, st, is_vdso)) {
			sf->refs++;
			sf->last_used = ++s->tick;
			return sf;
		}
	}
	return NULL;
}

static struct sym_file *files__insert(struct symbolizer *s, const struct stat *st, bool is_vdso)
{
	struct sym_file *sf = calloc(1, sizeof(*sf));

	if (!sf)
		return NULL;
	sf->dev = st->st_dev;
	sf->ino = st->st_ino;
	sf->size = st->st_size;
	sf->mtime = st->st_mtim;
	sf->is_vdso = is_vdso;
	sf->refs = 1;
	sf->last_used = ++s->tick;
	sf->next = s->files;
	s->files = sf;
	return sf;
}

static void files__put(struct sym_file *sf)
{
	if (sf && sf->refs)
		sf->refs--;
}

/* What the cache can give a new table: its bound less the files in use (idle ones make way). */
static uint64_t files__room(const struct symbolizer *s)
{
	uint64_t used = 0;

	for (const struct sym_file *sf = s->files; sf; sf = sf->next) {
		if (sf->refs)
			used += sym_file__bytes(sf);
	}
	return used < MAX_CACHE_BYTES ? MAX_CACHE_BYTES - used : 0;
}

/* The load budget of all files (LOAD_CPU_PERMILLE), refilled by the time since last asked. */
static bool symbolizer__may_load(struct symbolizer *s)
{
	uint64_t now = clock__mono_ns();

	if (!s->load_credit_at)
		s->load_credit_ns = (int64_t)MAX_FILE_LOAD_NS;
	else
		s->load_credit_ns += (int64_t)((now - s->load_credit_at) * LOAD_CPU_PERMILLE / 1000);
	if (s->load_credit_ns > (int64_t)MAX_FILE_LOAD_NS)
		s->load_credit_ns = (int64_t)MAX_FILE_LOAD_NS;
	s->load_credit_at = now;
	return s->load_credit_ns > 0;
}

/*
 * A file's table, now if the load budget allows (its CPU time is charged to
 * it), else deferred to a later frame of the file. Counted against the cache
 * either way (sf was not yet, or only as deferred).
 */
static void symbolizer__load_file(struct symbolizer *s, struct sym_file *sf, int fd,
				  struct proc *p, const char *path)
{
	struct elf_handle h;
	uint64_t cpu;
	char name[256];

	/* a deferred file was counted as it stood: it is counted again below */
	if (sf->deferred)
		s->files_bytes -= sym_file__bytes(sf);
	if (!symbolizer__may_load(s)) {
		sf->deferred = true;
		files__account(s, sf);
		if (!s->said_deferred) {
			s->said_deferred = true;
			fprintf(stderr, "loopwatch: symbol tables load at %.1f s of CPU a second; "
				"frames of files not loaded yet say %s\n",
				LOAD_CPU_PERMILLE / 1000.0, SYM_DEFERRED);
		}
		return;
	}
	sf->deferred = false;
	cpu = clock__thread_cpu_ns();
	if (!elf__open_fd(&h, fd)) {
		sym_file__load(sf, &h, p, path, files__room(s));
		elf__close(&h);
	}
	s->load_credit_ns -= (int64_t)(clock__thread_cpu_ns() - cpu);
	files__account(s, sf);
	if (sf->over_budget && !s->said_over_budget && path) {
		s->said_over_budget = true;
		str__copy(name, sizeof(name), path);
		fprintf(stderr, "loopwatch: %s: symbol table over budget (1 Mi symbols, 32 MiB of "
			"names, 0.5 s of CPU a file, 256 MiB for all): its frames say %s\n",
			str__sanitize(name), SYM_OVER_BUDGET);
	}
}

static struct sym_file *symbolizer__file_for(struct symbolizer *s, struct proc *p,
					     const struct proc_mapping *m)
{
	struct sym_file *sf;
	struct stat st;
	int fd;

	fd = proc__open_mapping(p, m, &st);
	if (fd < 0)
		return NULL;
	if ((uint64_t)st.st_size > MAX_ELF_BYTES) {
		close(fd);
		return NULL;
	}
	sf = files__find(s, &st, false);
	if (!sf) {
		sf = files__insert(s, &st, false);
		if (sf)
			symbolizer__load_file(s, sf, fd, p, m->path);
	} else if (sf->deferred) {
		symbolizer__load_file(s, sf, fd, p, m->path);
	}
	close(fd);
	return sf;
}

/* A deferred file of a mapping already resolved: its turn may have come. */
static void symbolizer__retry(struct symbolizer *s, struct proc *p, const struct proc_mapping *m,
			      struct sym_file *sf)
{
	struct stat st;
	int fd = proc__open_mapping(p, m, &st);

	if (fd < 0)
		return;
	if (sym_file__is(sf, &st, false))
		symbolizer__load_file(s, sf, fd, p, m->path);
	close(fd);
}

/*
 * The vDSO has no file behind it: copy the image out of the target and
 * key it by content, so all processes with the same vDSO share one entry.
 */
static struct sym_file *symbolizer__vdso_for(struct symbolizer *s, struct proc *p,
					     const struct proc_mapping *m)
{
	struct elf_handle h;
	struct sym_file *sf;
	struct stat st;
	uint64_t hash;
	size_t len;
	void *image = proc__read_image(p, m, MAX_VDSO_BYTES, &len, &hash);

	if (!image)
		return NULL;
	memset(&st, 0, sizeof(st));
	st.st_ino = (ino_t)hash;
	st.st_size = (off_t)len;
	sf = files__find(s, &st, true);
	if (!sf) {
		sf = files__insert(s, &st, true);
		if (sf && !elf__open_mem(&h, image, len)) {
			sym_file__load(sf, &h, NULL, NULL, files__room(s));
			elf__close(&h);
		}
		if (sf)
			files__account(s, sf);
	}
	free(image);
	return sf;
}

/* ------------------------------------------------------------------ */
/* per-process files */

static void sym_proc__unbind(struct sym_proc *sp)
{
	for (size_t i = 0; sp->maps && i < sp->maps->n; i++)
		files__put(sp->v[i].file);
	free(sp->v);
	sp->v = NULL;
	proc_maps__put(sp->maps);
	sp->maps = NULL;
}

/*
 * Follow the process's newest maps. Unchanged mappings keep the file already
 * resolved, so a dlopen() does not cost re-opening every library.
 */
static void sym_proc__bind(struct sym_proc *sp, const struct proc_maps *maps)
{
	struct sym_map *v;

	if (!maps || sp->maps == maps)
		return;
	v = calloc(maps->n + 1, sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < maps->n; i++) {
		const struct proc_mapping *old = proc_maps__find(sp->maps, maps->v[i].start);
		struct sym_map *was;

		if (!old || !proc_mapping__same(old, &maps->v[i]))
			continue;
		was = &sp->v[old - sp->maps->v];
		v[i] = *was;
		if (v[i].file)
			v[i].file->refs++;
	}
	sym_proc__unbind(sp);
	sp->v = v;
	sp->maps = (struct proc_maps *)maps;
	proc_maps__get(sp->maps);
}

static void sprocs__remove(struct symbolizer *s, size_t idx)
{
	sym_proc__unbind(s->sprocs[idx]);
	perf_map__free(s->sprocs[idx]->jit);
	free(s->sprocs[idx]);
	s->sprocs[idx] = s->sprocs[--s->nsprocs];
	s->sprocs[s->nsprocs] = NULL;
	files__trim(s);
}

static struct sym_proc *symbolizer__sproc(struct symbolizer *s, struct proc *p)
{
	struct sym_proc *sp = NULL;
	size_t i, lru;

	for (i = 0; i < s->nsprocs; i++) {
		if (s->sprocs[i]->pid != proc__pid(p))
			continue;
		if (s->sprocs[i]->start_time == proc__start_time(p)) {
			sp = s->sprocs[i];
			break;
		}
		/* same pid, different process */
		sprocs__remove(s, i);
		break;
	}
	if (!sp) {
		if (s->nsprocs == MAX_PROCS) {
			lru = 0;
			for (i = 1; i < s->nsprocs; i++)
				if (s->sprocs[i]->last_used < s->sprocs[lru]->last_used)
					lru = i;
			sprocs__remove(s, lru);
		}
		sp = calloc(1, sizeof(*sp));
		if (!sp)
			return NULL;
		sp->pid = proc__pid(p);
		sp->start_time = proc__start_time(p);
		s->sprocs[s->nsprocs++] = sp;
	}
	sp->last_used = ++s->tick;
	sym_proc__bind(sp, proc__maps(p, false));
	return sp;
}

/*
 * JIT code, named by the process's perf map when it writes one. Code
 * compiled since the map was read re-reads it (what the file gained).
 */
static void jit__symbolize(struct sym_proc *sp, struct proc *p, uint64_t addr, struct frame *f)
{
	f->kind = FRAME_JIT;
	str__copy(f->module, sizeof(f->module), "[anon]");
	if (!sp->jit && !(sp->jit = perf_map__new()))
		return;
	if (perf_map__frame(sp->jit, addr, f))
		return;
	if (clock__mono_ns() - perf_map__read_ns(sp->jit) < PERF_MAP_REREAD_NS)
		return;
	perf_map__refresh(sp->jit, p);
	perf_map__frame(sp->jit, addr, f);
}

/* The symbol's display name, and its raw name beside it when they differ. */
static void frame__name(struct frame *f, struct sym_file *sf, const struct sym *sym)
{
	const char *raw = sf->tab.names + sym->name, *shown = sym_file__display(sf, sym);

	str__copy(f->func, sizeof(f->func), shown ? shown : raw);
	if (shown)
		str__copy(f->func_raw, sizeof(f->func_raw), raw);
}

static void mapping__symbolize(struct symbolizer *s, struct proc *p, struct sym_proc *sp,
			       const struct proc_mapping *m, uint64_t addr, struct frame *f)
{
	struct sym_map *sm = &sp->v[m - sp->maps->v];
	const struct sym *sym;
	uint64_t vaddr;

	if (m->type == PROC_MAP_ANON) {
		jit__symbolize(sp, p, addr, f);
		return;
	}
	if (m->type == PROC_MAP_PSEUDO) {
		str__copy(f->module, sizeof(f->module), m->path);
		if (strcmp(m->path, "[vdso]")) {
			/* [vsyscall] is fixed kernel code; anything else is JIT-like */
			if (strcmp(m->path, "[vsyscall]"))
				f->kind = FRAME_JIT;
			return;
		}
	} else {
		str__copy(f->module, sizeof(f->module), proc_mapping__basename(m));
	}
	if (!sm->resolved) {
		sm->resolved = true;
		sm->file = m->type == PROC_MAP_FILE ? symbolizer__file_for(s, p, m)
						    : symbolizer__vdso_for(s, p, m);
		files__trim(s);
	}
	if (!sm->file)
		return;
	sm->file->last_used = ++s->tick;
	if (sm->file->deferred && m->type == PROC_MAP_FILE)
		symbolizer__retry(s, p, m, sm->file);
	if (sm->file->deferred) {
		str__copy(f->func, sizeof(f->func), SYM_DEFERRED);
		return;
	}
	if (sm->file->over_budget) {
		str__copy(f->func, sizeof(f->func), SYM_OVER_BUDGET);
		return;
	}
	if (!sym_file__to_vaddr(sm->file, m, addr, &vaddr))
		return;
	sym = symtab__find(&sm->file->tab, vaddr);
	if (!sym)
		return;
	frame__name(f, sm->file, sym);
	f->offset = vaddr - sym->addr;
}

/* ------------------------------------------------------------------ */
/* kernel */

static bool ksym__is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

static uint16_t ksyms__module(struct symbolizer *s, const char *name, size_t len)
{
	struct symtab *t = &s->ksyms;
	size_t last = s->nkmods - 1;
	uint32_t *tmp;

	/* kallsyms lists each module's symbols together: compare with the last */
	if (s->nkmods > 1 && !strncmp(t->names + s->kmods[last], name, len) &&
	    t->names[s->kmods[last] + len] == '\0')
		return (uint16_t)last;
	if (s->nkmods >= UINT16_MAX || len >= SYM_NAME_MAX - 2 ||
	    t->names_len > UINT32_MAX - SYM_NAME_MAX)
		return 0;
	if (t->names_len + len + 3 > t->names_cap) {
		size_t cap = t->names_cap ? t->names_cap : 16384;
		char *names;

		while (cap < t->names_len + len + 3)
			cap *= 2;
		names = realloc(t->names, cap);
		if (!names)
			return 0;
		t->names = names;
		t->names_cap = cap;
	}
	tmp = realloc(s->kmods, (s->nkmods + 1) * sizeof(*s->kmods));
	if (!tmp)
		return 0;
	s->kmods = tmp;
	s->kmods[s->nkmods] = (uint32_t)t->names_len;
	t->names[t->names_len] = '[';
	memcpy(t->names + t->names_len + 1, name, len);
	t->names[t->names_len + 1 + len] = ']';
	t->names[t->names_len + 2 + len] = '\0';
	t->names_len += len + 3;
	return (uint16_t)s->nkmods++;
}

static void symbolizer__load_kallsyms(struct symbolizer *s)
{
	char *buf, *line, *nl, *p, *name, *mod, *end;
	size_t len, name_len;
	bool any_nonzero = false;
	uint64_t addr;
	uint16_t mod_idx;
	char type;

	s->ksyms_tried = true;
	s->kmods = calloc(1, sizeof(*s->kmods));
	if (!s->kmods)
		return;
	s->nkmods = 1;
	buf = procs__read_kallsyms(MAX_KALLSYMS_BYTES, &len);
	if (!buf)
		return;
	for (line = buf; (nl = memchr(line, '\n', (size_t)(buf + len - line))); line = nl + 1) {
		*nl = '\0';
		errno = 0;
		addr = strtoull(line, &end, 16);
		if (end == line || errno || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		type = end[1];
		name = end + 3;
		if (!ksym__is_text(type) || !*name)
			continue;
		if (addr)
			any_nonzero = true;
		mod_idx = 0;
		mod = strchr(name, '\t');
		if (mod) {
			name_len = (size_t)(mod - name);
			mod++;
			if (*mod == '[') {
				mod++;
				p = strchr(mod, ']');
				if (p)
					mod_idx = ksyms__module(s, mod, (size_t)(p - mod));
			}
		} else {
			name_len = strlen(name);
		}
		if (!addr || !name_len)
			continue;
		if (!symtab__add(&s->ksyms, addr, 0, name, name_len, 0, true, mod_idx))
			break;
	}
	free(buf);
	if (!any_nonzero) {
		/* kptr_restrict hid the addresses: nothing to resolve against */
		symtab__free(&s->ksyms);
		s->nkmods = 1;
		return;
	}
	symtab__finish(&s->ksyms);
}

static void symbolizer__kernel_frame(struct symbolizer *s, uint64_t addr, struct frame *f)
{
	const struct sym *sym;

	f->kind = FRAME_KERNEL;
	str__copy(f->module, sizeof(f->module), "[kernel]");
	if (!s->ksyms_tried)
		symbolizer__load_kallsyms(s);
	sym = symtab__find(&s->ksyms, addr);
	if (!sym || addr - sym->addr >= MAX_KSYM_OFFSET)
		return;
	str__copy(f->func, sizeof(f->func), s->ksyms.names + sym->name);
	f->offset = addr - sym->addr;
	if (sym->mod && sym->mod < s->nkmods)
		str__copy(f->module, sizeof(f->module), s->ksyms.names + s->kmods[sym->mod]);
}

/* ------------------------------------------------------------------ */
/* public API */

struct symbolizer *symbolizer__new(struct procs *procs)
{
	struct symbolizer *s;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s)
		s->procs = procs;
	return s;
}

void symbolizer__free(struct symbolizer *s)
{
	struct sym_file *sf, *next;

	if (!s)
		return;
	while (s->nsprocs)
		sprocs__remove(s, s->nsprocs - 1);
	for (sf = s->files; sf; sf = next) {
		next = sf->next;
		sym_file__destroy(sf);
	}
	symtab__free(&s->ksyms);
	free(s->kmods);
	free(s);
}

void symbolizer__forget_pid(struct symbolizer *s, int pid)
{
	for (size_t i = 0; s && i < s->nsprocs; i++) {
		if (s->sprocs[i]->pid == pid) {
			sprocs__remove(s, i);
			return;
		}
	}
}

static const struct proc_mapping *sym_proc__find(const struct sym_proc *sp, uint64_t addr)
{
	const struct proc_mapping *m = proc_maps__find(sp->maps, addr);

	return m && m->exec && sp->v ? m : NULL;
}

int symbolizer__symbolize(struct symbolizer *s, int pid, const uint64_t *ips, int n,
			  bool kernel, struct frame *out, int max_out)
{
	const struct proc_mapping *m;
	struct sym_proc *sp = NULL;
	struct proc *p = NULL;
	bool refreshed = false;
	int i, count;

	if (!ips || !out || n <= 0 || max_out <= 0)
		return 0;
	count = n < max_out ? n : max_out;
	if (s && !kernel)
		p = procs__get(s->procs, pid);
	if (p)
		sp = symbolizer__sproc(s, p);

	for (i = 0; i < count; i++) {
		struct frame *f = &out[i];

		memset(f, 0, sizeof(*f));
		f->kind = kernel ? FRAME_KERNEL : FRAME_NATIVE;
		f->addr = ips[i];
		if (!s)
			continue;
		if (kernel) {
			symbolizer__kernel_frame(s, ips[i], f);
			continue;
		}
		if (!sp)
			continue;
		m = sym_proc__find(sp, ips[i]);
		if (!m && !refreshed && ips[i] >= MIN_USER_ADDR) {
			/* new mappings since we last looked (dlopen, JIT): one retry per stack */
			refreshed = true;
			sym_proc__bind(sp, proc__maps(p, true));
			m = sym_proc__find(sp, ips[i]);
		}
		if (m)
			mapping__symbolize(s, p, sp, m, ips[i], f);
	}
	return count;
}

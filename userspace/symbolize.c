// SPDX-License-Identifier: GPL-2.0
/*
 * symbolize.c - address to symbol resolution for user and kernel stacks.
 *
 * Layout of the caches:
 *  - one struct elf_file per distinct file (st_dev, st_ino, size, mtime),
 *    shared by every process that maps it and refcounted by the mappings
 *    that point at it; unreferenced ones are kept for reuse up to
 *    MAX_IDLE_FILES and evicted least-recently-used first.
 *  - one struct proc per pid, keyed by pid and start time so a recycled
 *    pid is noticed; at most MAX_PROCS, evicted least-recently-used first.
 *  - /proc/kallsyms, parsed once on the first kernel address.
 *
 * Everything that comes from the target (maps lines, ELF contents, stat)
 * is untrusted: every length and index is checked before use.
 */
#define _GNU_SOURCE
#include "symbolize.h"
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS		256
#define MAX_IDLE_FILES		128
/* a /proc file bigger than this is either hostile or not worth it */
#define MAX_MAPS_BYTES		(64u << 20)
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

struct load_seg {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t memsz;
};

struct elf_file {
	struct elf_file *next;
	/* identity */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool is_vdso;		/* then ino holds a hash of the image */

	unsigned int refs;
	uint64_t last_used;
	struct symtab tab;
	struct load_seg *segs;
	size_t nsegs;
};

enum map_type { MAPPING_FILE, MAPPING_ANON, MAPPING_PSEUDO };

struct mapping {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	char *path;		/* NULL for anonymous, " (deleted)" stripped */
	enum map_type type;
	bool deleted;
	bool resolved;		/* elf lookup attempted (elf may still be NULL) */
	struct elf_file *elf;
};

struct proc {
	int pid;
	uint64_t start_time;
	uint64_t checked_ns;	/* when start_time was last compared with /proc */
	uint64_t last_used;
	struct mapping *maps;	/* executable mappings only, sorted by start */
	size_t n;
};

struct symbolizer {
	struct proc *procs[MAX_PROCS];
	size_t nprocs;
	struct elf_file *files;
	uint64_t tick;

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

static const char *path__basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * Read a whole file, NUL-terminated. /proc files report size 0, so read
 * until EOF; a process exiting mid-read just ends the data early, and the
 * caller only trusts complete lines.
 */
static char *file__read_all(const char *path, size_t max, size_t *len_out)
{
	size_t len = 0, cap = 16384;
	char *buf, *tmp;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	if (!buf)
		goto fail;
	for (;;) {
		if (cap - len < 4096) {
			if (cap >= max)
				break;
			tmp = realloc(buf, cap * 2);
			if (!tmp)
				goto fail;
			buf = tmp;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* ESRCH and friends: the process went away, keep what we have */
			if (!len)
				goto fail;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*len_out = len;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

/* Field 22 of /proc/PID/stat; comm (field 2) may hold spaces and ')'. */
static bool proc__read_start_time(int pid, uint64_t *out)
{
	char path[64], buf[2048], *p, *end;
	ssize_t r;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	do {
		r = read(fd, buf, sizeof(buf) - 1);
	} while (r < 0 && errno == EINTR);
	close(fd);
	if (r <= 0)
		return false;
	buf[r] = '\0';
	p = strrchr(buf, ')');
	if (!p)
		return false;
	p++;
	for (field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
		if (!*p)
			return false;
	}
	errno = 0;
	*out = strtoull(p, &end, 10);
	return end != p && errno == 0;
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

	if (name_len >= SYM_NAME_MAX)
		name_len = SYM_NAME_MAX - 1;	/* frame.func could not hold more */
	if (t->names_len > UINT32_MAX - SYM_NAME_MAX)
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

static bool elf__load_symbols(struct symtab *t, Elf *elf, Elf_Scn *scn, const GElf_Ehdr *eh)
{
	Elf_Data *data, *strdata;
	Elf_Scn *strscn;
	GElf_Shdr sh, strsh;
	const char *strtab, *name, *nul;
	size_t i, count, entsize, strsize;
	unsigned char type;
	uint64_t addr;
	GElf_Sym sym;
	uint8_t rank;
	bool is_func;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		return false;
	data = elf_getdata(scn, NULL);
	strscn = elf_getscn(elf, sh.sh_link);
	if (!data || !data->d_buf || !strscn || !gelf_getshdr(strscn, &strsh) ||
	    strsh.sh_type != SHT_STRTAB)
		return false;
	strdata = elf_getdata(strscn, NULL);
	if (!strdata || !strdata->d_buf || !strdata->d_size)
		return false;
	strtab = strdata->d_buf;
	strsize = strdata->d_size;
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return false;
	count = data->d_size / entsize;

	for (i = 1; i < count; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE &&
		    type != STT_OBJECT)
			continue;
		if (sym.st_shndx == SHN_UNDEF ||
		    (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX))
			continue;
		if (!sym.st_name || sym.st_name >= strsize)
			continue;
		name = strtab + sym.st_name;
		nul = memchr(name, '\0', strsize - sym.st_name);
		if (!nul || nul == name)
			continue;
		addr = sym.st_value;
		/* Thumb functions carry the mode in bit 0 */
		if (eh->e_machine == EM_ARM && type == STT_FUNC)
			addr &= ~1ull;
		if (!addr)
			continue;
		rank = elf__rank(type, GELF_ST_BIND(sym.st_info), &is_func);
		if (!symtab__add(t, addr, sym.st_size, name, (size_t)(nul - name), rank, is_func,
				 0))
			return false;
	}
	return t->n > 0;
}

static bool elf_file__parse(struct elf_file *ef, Elf *elf)
{
	Elf_Scn *scn = NULL, *symscn = NULL, *dynscn = NULL;
	size_t i, nph = 0;
	GElf_Ehdr eh;
	GElf_Phdr ph;
	GElf_Shdr sh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return false;
	if (elf_getphdrnum(elf, &nph) == 0 && nph) {
		if (nph > 65535)
			nph = 65535;
		ef->segs = calloc(nph, sizeof(*ef->segs));
		if (!ef->segs)
			return false;
		for (i = 0; i < nph; i++) {
			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			ef->segs[ef->nsegs++] = (struct load_seg){
				.offset = ph.p_offset,
				.vaddr = ph.p_vaddr,
				.filesz = ph.p_filesz,
				.memsz = ph.p_memsz > ph.p_filesz ? ph.p_memsz : ph.p_filesz,
			};
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symscn)
			symscn = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynscn)
			dynscn = scn;
	}
	if (!elf__load_symbols(&ef->tab, elf, symscn, &eh)) {
		/* a truncated .symtab may have added a few: start over cleanly */
		symtab__free(&ef->tab);
		if (!elf__load_symbols(&ef->tab, elf, dynscn, &eh) && !ef->tab.n)
			symtab__free(&ef->tab);
	}
	symtab__finish(&ef->tab);
	return true;
}

/*
 * A file that fails to parse still gets an entry (with no symbols) so that
 * non-ELF or truncated files are not re-read for every address.
 */
static void elf_file__load_fd(struct elf_file *ef, int fd)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	if (!elf)
		return;
	elf_file__parse(ef, elf);
	elf_end(elf);
}

static void elf_file__load_mem(struct elf_file *ef, char *image, size_t len)
{
	Elf *elf = elf_memory(image, len);

	if (!elf)
		return;
	elf_file__parse(ef, elf);
	elf_end(elf);
}

static void elf_file__destroy(struct elf_file *ef)
{
	symtab__free(&ef->tab);
	free(ef->segs);
	free(ef);
}

/*
 * File offset -> link-time virtual address. The mapping says which file
 * offset an address corresponds to, PT_LOAD says where that offset was
 * linked. This is what makes non-PIE executables (vaddr 0x400000-based),
 * PIE and shared libraries all come out right.
 */
static bool elf_file__to_vaddr(const struct elf_file *ef, const struct mapping *m,
			       uint64_t addr, uint64_t *vaddr)
{
	uint64_t fo = addr - m->start + m->offset;
	uint64_t map_end = m->offset + (m->end - m->start);
	const struct load_seg *seg;
	size_t i;

	for (i = 0; i < ef->nsegs; i++) {
		seg = &ef->segs[i];
		if (fo >= seg->offset && fo - seg->offset < seg->memsz) {
			*vaddr = fo - seg->offset + seg->vaddr;
			return true;
		}
	}
	/* the page-aligned head of a segment: use the segment the mapping holds */
	for (i = 0; i < ef->nsegs; i++) {
		seg = &ef->segs[i];
		if (seg->offset < map_end && seg->offset + seg->filesz > m->offset) {
			*vaddr = fo - seg->offset + seg->vaddr;
			return true;
		}
	}
	if (!ef->nsegs) {
		*vaddr = fo;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* file cache */

static void files__trim(struct symbolizer *s)
{
	struct elf_file **pp, **victim;
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
		if (idle <= MAX_IDLE_FILES || !victim)
			return;
		{
			struct elf_file *ef = *victim;

			*victim = ef->next;
			elf_file__destroy(ef);
		}
	}
}

static struct elf_file *files__find(struct symbolizer *s, const struct stat *st, bool is_vdso)
{
	struct elf_file *ef;

	for (ef = s->files; ef; ef = ef->next) {
		if (ef->is_vdso == is_vdso && ef->dev == st->st_dev && ef->ino == st->st_ino &&
		    ef->size == st->st_size && ef->mtime.tv_sec == st->st_mtim.tv_sec &&
		    ef->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			ef->refs++;
			ef->last_used = ++s->tick;
			return ef;
		}
	}
	return NULL;
}

static struct elf_file *files__insert(struct symbolizer *s, const struct stat *st, bool is_vdso)
{
	struct elf_file *ef = calloc(1, sizeof(*ef));

	if (!ef)
		return NULL;
	ef->dev = st->st_dev;
	ef->ino = st->st_ino;
	ef->size = st->st_size;
	ef->mtime = st->st_mtim;
	ef->is_vdso = is_vdso;
	ef->refs = 1;
	ef->last_used = ++s->tick;
	ef->next = s->files;
	s->files = ef;
	return ef;
}

static void files__put(struct symbolizer *s, struct elf_file *ef)
{
	(void)s;
	if (ef && ef->refs)
		ef->refs--;
}

/* procfs's reopen, and no file larger than the symbolizer will map */
static int file__reopen_regular(int pfd, struct stat *st)
{
	int fd = fd__reopen_regular(pfd, st);

	if (fd >= 0 && (uint64_t)st->st_size > MAX_ELF_BYTES) {
		close(fd);
		return -1;
	}
	return fd;
}

static int mapping__open_map_files(int pid, const struct mapping *m, struct stat *st)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start,
		 m->end);
	return file__reopen_regular(open(path, O_PATH | O_CLOEXEC), st);
}

/*
 * The maps path is relative to the target's root, which may be another
 * mount namespace: go through /proc/PID/root. If the path now names a
 * different inode (package upgraded, file replaced) or the file is gone,
 * map_files still reaches the object that is actually mapped.
 */
static int mapping__open(int pid, const struct mapping *m, struct stat *st)
{
	struct stat alt_st;
	int fd = -1, alt;

	if (!m->deleted && m->path[0] == '/' && strlen(m->path) < PATH_MAX) {
		fd = file__reopen_regular(proc__open_in_root(pid, m->path), st);
		if (fd >= 0 && m->inode && (uint64_t)st->st_ino != m->inode) {
			alt = mapping__open_map_files(pid, m, &alt_st);
			if (alt >= 0) {
				close(fd);
				fd = alt;
				*st = alt_st;
			}
		}
	}
	if (fd < 0)
		fd = mapping__open_map_files(pid, m, st);
	/*
	 * The process is gone (a stall just before exit): the same path in our
	 * own namespace will do if it is still the very inode that was mapped.
	 */
	if (fd < 0 && !m->deleted && m->path[0] == '/' && m->inode) {
		fd = file__reopen_regular(open(m->path, O_PATH | O_CLOEXEC), st);
		if (fd >= 0 && (uint64_t)st->st_ino != m->inode) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

static struct elf_file *symbolizer__file_for(struct symbolizer *s, int pid,
					     const struct mapping *m)
{
	struct elf_file *ef;
	struct stat st;
	int fd;

	fd = mapping__open(pid, m, &st);
	if (fd < 0)
		return NULL;
	ef = files__find(s, &st, false);
	if (!ef) {
		ef = files__insert(s, &st, false);
		if (ef)
			elf_file__load_fd(ef, fd);
	}
	close(fd);
	return ef;
}

static uint64_t hash__fnv1a(const unsigned char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The vDSO has no file behind it: copy the image out of the target and
 * key it by content, so all processes with the same vDSO share one entry.
 */
static struct elf_file *symbolizer__vdso_for(struct symbolizer *s, int pid,
					     const struct mapping *m)
{
	size_t len = m->end - m->start;
	struct elf_file *ef;
	struct stat st;
	char path[64];
	char *image;
	ssize_t r;
	int fd;

	if (len > MAX_VDSO_BYTES)
		len = MAX_VDSO_BYTES;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	image = malloc(len);
	if (!image) {
		close(fd);
		return NULL;
	}
	r = pread(fd, image, len, (off_t)m->start);
	close(fd);
	if (r <= 0) {
		free(image);
		return NULL;
	}
	memset(&st, 0, sizeof(st));
	st.st_ino = (ino_t)hash__fnv1a((unsigned char *)image, (size_t)r);
	st.st_size = r;
	ef = files__find(s, &st, true);
	if (!ef) {
		ef = files__insert(s, &st, true);
		if (ef)
			elf_file__load_mem(ef, image, (size_t)r);
	}
	free(image);
	return ef;
}

/* ------------------------------------------------------------------ */
/* per-process maps */

static void maps__free(struct symbolizer *s, struct mapping *maps, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		files__put(s, maps[i].elf);
		free(maps[i].path);
	}
	free(maps);
}

/* One line of /proc/PID/maps; false for lines that should be skipped. */
static bool mapping__parse(char *line, struct mapping *m)
{
	static const char deleted[] = " (deleted)";
	unsigned int maj, min;
	char perms[8], *path;
	size_t len, dlen = sizeof(deleted) - 1;
	int pos = -1;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, perms, &m->offset, &maj, &min, &m->inode, &pos) < 7)
		return false;
	if (m->start >= m->end || strlen(perms) != 4 || perms[2] != 'x')
		return false;
	/* %n is skipped when the line ends right after the inode (anonymous) */
	path = pos >= 0 ? line + pos : line + strlen(line);
	len = strlen(path);
	while (len && (path[len - 1] == ' ' || path[len - 1] == '\t'))
		path[--len] = '\0';
	if (len > dlen && !strcmp(path + len - dlen, deleted)) {
		m->deleted = true;
		len -= dlen;
		path[len] = '\0';
	}
	if (!len) {
		m->type = MAPPING_ANON;
		return true;
	}
	m->type = path[0] == '/' ? MAPPING_FILE : MAPPING_PSEUDO;
	m->path = strndup(path, len);
	return m->path != NULL;
}

static int mapping__cmp(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static bool maps__read(int pid, struct mapping **out, size_t *nout)
{
	struct mapping *maps = NULL, *tmp, m;
	size_t n = 0, cap = 0, len;
	char path[64], *buf, *line, *nl;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	buf = file__read_all(path, MAX_MAPS_BYTES, &len);
	if (!buf)
		return false;
	for (line = buf; (nl = memchr(line, '\n', (size_t)(buf + len - line))); line = nl + 1) {
		*nl = '\0';
		if (!mapping__parse(line, &m))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			tmp = realloc(maps, cap * sizeof(*maps));
			if (!tmp) {
				free(m.path);
				break;
			}
			maps = tmp;
		}
		maps[n++] = m;
	}
	free(buf);
	/* the kernel emits them sorted; a hostile or odd source need not */
	if (n)
		qsort(maps, n, sizeof(*maps), mapping__cmp);
	*out = maps;
	*nout = n;
	return true;
}

static struct mapping *proc__find_mapping(struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

static bool mapping__same_object(const struct mapping *a, const struct mapping *b)
{
	if (a->start != b->start || a->end != b->end || a->offset != b->offset ||
	    a->inode != b->inode || a->type != b->type || a->deleted != b->deleted)
		return false;
	if (!a->path || !b->path)
		return a->path == b->path;
	return !strcmp(a->path, b->path);
}

/*
 * Re-read maps after a miss. Unchanged mappings inherit the already
 * resolved ELF so a dlopen() does not cost re-opening every library.
 */
static void proc__refresh(struct symbolizer *s, struct proc *p)
{
	struct mapping *maps, *old;
	size_t n, i;

	if (!maps__read(p->pid, &maps, &n))
		return;	/* exited: the old maps are still the best we have */
	if (!n && p->n) {
		/* a zombie shows empty maps: keep what it had while alive */
		free(maps);
		return;
	}
	for (i = 0; i < n; i++) {
		old = proc__find_mapping(p, maps[i].start);
		if (old && old->resolved && mapping__same_object(old, &maps[i])) {
			maps[i].resolved = true;
			maps[i].elf = old->elf;
			if (old->elf)
				old->elf->refs++;
		}
	}
	maps__free(s, p->maps, p->n);
	p->maps = maps;
	p->n = n;
}

static void proc__destroy(struct symbolizer *s, struct proc *p)
{
	maps__free(s, p->maps, p->n);
	free(p);
}

static void procs__remove(struct symbolizer *s, size_t idx)
{
	proc__destroy(s, s->procs[idx]);
	s->procs[idx] = s->procs[--s->nprocs];
	s->procs[s->nprocs] = NULL;
}

/*
 * A pid is recycled only after the kernel has gone through pid_max others:
 * checking its start time once per this long is plenty, and a stall's forty
 * stacks then cost one read of /proc/PID/stat, not forty.
 */
#define PROC_RECHECK_NS 100000000ull

static uint64_t clock__ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct proc *symbolizer__get_proc(struct symbolizer *s, int pid)
{
	uint64_t start_time = 0, again = 0, now = clock__ns();
	bool alive;
	struct proc *p = NULL;
	size_t i, idx = 0, lru;

	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i]->pid == pid) {
			p = s->procs[i];
			idx = i;
			break;
		}
	}
	if (p && now - p->checked_ns < PROC_RECHECK_NS) {
		p->last_used = ++s->tick;
		return p;
	}
	alive = proc__read_start_time(pid, &start_time);
	if (p && alive)
		p->checked_ns = now;
	if (p && alive && p->start_time != start_time) {
		/* same pid, different process */
		procs__remove(s, idx);
		files__trim(s);
		p = NULL;
	}
	if (p) {
		/* an exited process keeps its cached maps: late samples still resolve */
		p->last_used = ++s->tick;
		return p;
	}
	if (!alive)
		return NULL;

	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->start_time = start_time;
	p->checked_ns = now;
	if (!maps__read(pid, &p->maps, &p->n) || !proc__read_start_time(pid, &again) ||
	    again != start_time) {
		/* gone or recycled while we were reading: cache nothing */
		proc__destroy(s, p);
		return NULL;
	}
	if (s->nprocs == MAX_PROCS) {
		lru = 0;
		for (i = 1; i < s->nprocs; i++)
			if (s->procs[i]->last_used < s->procs[lru]->last_used)
				lru = i;
		procs__remove(s, lru);
		files__trim(s);
	}
	p->last_used = ++s->tick;
	s->procs[s->nprocs++] = p;
	return p;
}

static void mapping__symbolize(struct symbolizer *s, int pid, struct mapping *m, uint64_t addr,
			       struct frame *f)
{
	const struct sym *sym;
	uint64_t vaddr;

	if (m->type == MAPPING_ANON) {
		f->kind = FRAME_JIT;
		str__copy(f->module, sizeof(f->module), "[anon]");
		return;
	}
	if (m->type == MAPPING_PSEUDO) {
		str__copy(f->module, sizeof(f->module), m->path);
		if (strcmp(m->path, "[vdso]")) {
			/* [vsyscall] is fixed kernel code; anything else is JIT-like */
			if (strcmp(m->path, "[vsyscall]"))
				f->kind = FRAME_JIT;
			return;
		}
	} else {
		str__copy(f->module, sizeof(f->module), path__basename(m->path));
	}
	if (!m->resolved) {
		m->resolved = true;
		m->elf = m->type == MAPPING_FILE ? symbolizer__file_for(s, pid, m)
					     : symbolizer__vdso_for(s, pid, m);
		files__trim(s);
	}
	if (!m->elf)
		return;
	m->elf->last_used = ++s->tick;
	if (!elf_file__to_vaddr(m->elf, m, addr, &vaddr))
		return;
	sym = symtab__find(&m->elf->tab, vaddr);
	if (!sym)
		return;
	str__copy(f->func, sizeof(f->func), m->elf->tab.names + sym->name);
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
	buf = file__read_all("/proc/kallsyms", MAX_KALLSYMS_BYTES, &len);
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

struct symbolizer *symbolizer__new(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return NULL;
	return calloc(1, sizeof(struct symbolizer));
}

void symbolizer__free(struct symbolizer *s)
{
	struct elf_file *ef, *next;

	if (!s)
		return;
	while (s->nprocs)
		procs__remove(s, s->nprocs - 1);
	for (ef = s->files; ef; ef = next) {
		next = ef->next;
		elf_file__destroy(ef);
	}
	symtab__free(&s->ksyms);
	free(s->kmods);
	free(s);
}

void symbolizer__forget_pid(struct symbolizer *s, int pid)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nprocs; i++) {
		if (s->procs[i]->pid == pid) {
			procs__remove(s, i);
			files__trim(s);
			return;
		}
	}
}

int symbolizer__symbolize(struct symbolizer *s, int pid, const uint64_t *ips, int n,
			  bool kernel, struct frame *out, int max_out)
{
	struct proc *p = NULL;
	struct mapping *m;
	bool refreshed = false;
	int i, count;

	if (!ips || !out || n <= 0 || max_out <= 0)
		return 0;
	count = n < max_out ? n : max_out;
	if (s && !kernel && pid > 0)
		p = symbolizer__get_proc(s, pid);

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
		if (!p)
			continue;
		m = proc__find_mapping(p, ips[i]);
		if (!m && !refreshed && ips[i] >= MIN_USER_ADDR) {
			/* new mappings since we last looked (dlopen, JIT): one retry per stack */
			refreshed = true;
			proc__refresh(s, p);
			m = proc__find_mapping(p, ips[i]);
		}
		if (m)
			mapping__symbolize(s, pid, m, ips[i], f);
	}
	return count;
}

int frame__format(const struct frame *f, char *buf, size_t len)
{
	int fn_len, mod_len, file_len;
	const char *fn;

	if (!f || (!buf && len))
		return -1;
	/* the frame may come from elsewhere: never trust its NUL termination */
	fn_len = (int)strnlen(f->func, sizeof(f->func));
	mod_len = (int)strnlen(f->module, sizeof(f->module));
	file_len = (int)strnlen(f->file, sizeof(f->file));
	fn = f->func;
	if (!fn_len) {
		fn = "[unknown]";
		fn_len = (int)strlen(fn);
	}
	if (f->kind == FRAME_PYTHON && file_len)
		return snprintf(buf, len, "%.*s (%.*s:%d)", fn_len, fn, file_len, f->file,
				f->line);
	if (f->func[0]) {
		if (mod_len)
			return snprintf(buf, len, "%.*s+0x%" PRIx64 " (%.*s)", fn_len, fn,
					f->offset, mod_len, f->module);
		return snprintf(buf, len, "%.*s+0x%" PRIx64, fn_len, fn, f->offset);
	}
	if (mod_len)
		return snprintf(buf, len, "%.*s (%.*s)", fn_len, fn, mod_len, f->module);
	return snprintf(buf, len, "%.*s", fn_len, fn);
}

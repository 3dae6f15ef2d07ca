// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for userspace/symbols/cfi.c: the unwind tables walk this very
 * binary's own stack (built -O2: no frame pointers) from a leaf to its
 * callers with the kernel walker's rules; real files' tables (python3.11,
 * libc, node) say at every function entry what the ABI says; .debug_frame
 * from a compressed debug file fills what .eh_frame lacks, within a bound on
 * what it inflates to; truncated and corrupted files give an error or a
 * table, never a crash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "proc/elf.h"
#include "symbols/cfi.h"

#include "check.h"

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* this binary's own stack */

struct regs {
	uint64_t pc, sp, bp;
};

/* return addresses recorded by each level: what the walk must find */
static uint64_t want_ra[3];
static struct regs leaf;
volatile uint64_t sink;
/* the walk, done while the frames are alive: what it found */
static const struct cfi_table *walk_table;
static uint64_t walk_bias, got_ra[3];
static int got_rsp_rows;

static bool walk__step(const struct cfi_table *t, uint64_t bias, struct regs *r, bool leaf_frame,
		       int *rsp_rows);

/* Called from the leaf: its own frame lies below the ones it walks. */
__attribute__((noipa)) void walk__now(void)
{
	struct regs r = leaf;

	for (int i = 0; i < 3; i++)
		got_ra[i] = walk__step(walk_table, walk_bias, &r, i == 0, &got_rsp_rows) ? r.pc : 0;
}

/* whatever the build's flags (the sanitizer build keeps frame pointers): none here */
#define NO_FP __attribute__((noipa, optimize("omit-frame-pointer")))

NO_FP void level3(void)
{
	volatile char pad[48];

	pad[0] = 1;
	want_ra[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(leaf.pc), "=r"(leaf.sp), "=r"(leaf.bp));
	walk__now();
	sink += pad[0];
}

NO_FP void level2(int n)
{
	volatile char pad[200];

	pad[n] = (char)n;
	want_ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	level3();
	sink += pad[n];
}

NO_FP void level1(int n)
{
	uint64_t a = sink, b = sink * 3, c = sink ^ 7;

	want_ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	level2(n);
	sink += a + b + c;
}

struct sym_query {
	const char *name;
	uint64_t value;
};

static int sym__match(const struct elf_symbol *s, void *ctx)
{
	struct sym_query *q = ctx;

	if (strcmp(s->name, q->name))
		return 0;
	q->value = s->value;
	return 1;
}

static uint64_t symbol(const struct elf_handle *h, const char *name)
{
	struct sym_query q = { name, 0 };

	if (elf__symbols(h, SHT_SYMTAB, sym__match, &q) != 1)
		elf__symbols(h, SHT_DYNSYM, sym__match, &q);
	return q.value;
}

/* One step of the kernel's walk (bpf/unwind.bpf.c) on our own memory; false when it ends. */
static bool walk__step(const struct cfi_table *t, uint64_t bias, struct regs *r, bool leaf_frame,
		       int *rsp_rows)
{
	uint64_t lookup = leaf_frame ? r->pc : r->pc - 1, cfa;
	const struct lw_uw_row *row = cfi_table__find(t, (uint32_t)(lookup - bias));

	if (!row)
		return false;
	switch (row->type) {
	case LW_UW_ROW_RSP:
		cfa = r->sp + (int64_t)row->cfa_off;
		(*rsp_rows)++;
		break;
	case LW_UW_ROW_RBP:
		cfa = r->bp + (int64_t)row->cfa_off;
		break;
	default:
		return false;
	}
	if (row->rbp_off8)
		r->bp = *(uint64_t *)(uintptr_t)(cfa + (int64_t)row->rbp_off8 * 8);
	r->pc = *(uint64_t *)(uintptr_t)(cfa - 8);
	r->sp = cfa;
	return true;
}

static void test_own_stack(void)
{
	struct elf_handle h;
	struct cfi_table t;
	int err;

	CHECK(!elf__open(&h, "/proc/self/exe"), "cannot open /proc/self/exe");
	err = cfi__build(&h, NULL, &t);
	CHECK(!err && t.n > 100, "own table: %d, %zu rows", err, t.n);
	walk_table = &t;
	walk_bias = (uint64_t)(uintptr_t)level1 - symbol(&h, "level1");
	level1(7);
	for (int i = 0; i < 3; i++)
		CHECK(got_ra[i] && got_ra[i] == want_ra[i], "frame %d: %#lx, want %#lx", i + 1,
		      (unsigned long)got_ra[i], (unsigned long)want_ra[i]);
	/* without frame pointers only CFI could have done that */
	CHECK(got_rsp_rows == 3, "%d of 3 frames by rsp-based rules", got_rsp_rows);
	cfi_table__free(&t);
	elf__close(&h);
}

/* ------------------------------------------------------------------ */
/* real files */

struct entry_check {
	const struct cfi_table *t;
	int checked, rsp8;
};

/* At a function's first instruction the return address was just pushed: CFA = rsp + 8. */
static int entry__visit(const struct elf_symbol *s, void *ctx)
{
	struct entry_check *c = ctx;
	const struct lw_uw_row *row;

	if (s->type != STT_FUNC || s->size < 16 || s->value > UINT32_MAX || c->checked >= 5000)
		return 0;
	row = cfi_table__find(c->t, (uint32_t)s->value);
	c->checked++;
	c->rsp8 += row && row->type == LW_UW_ROW_RSP && row->cfa_off == 8;
	return 0;
}

static void test_real_file(const char *path, size_t min_rows)
{
	struct entry_check c = { 0 };
	struct elf_handle h;
	struct cfi_table t;
	double t0;
	int err;

	if (elf__open(&h, path)) {
		CHECK(0, "cannot open %s", path);
		return;
	}
	t0 = cpu_ms();
	/*
	 * Its rows, not its time (that is make bench's): node's table takes
	 * 0.15 s of CPU, 0.6-1 s under ASan beside other work, past the
	 * collector's second.
	 */
	err = cfi__build_within(&h, NULL, &t, 60ull * 1000000000ull);
	printf("%s: %zu FDEs, %zu rows (%zu KiB), %u pages, %zu unsupported, %zu steps, "
	       "built in %.1f ms\n", path, t.fdes, t.n, t.n * sizeof(*t.rows) / 1024, t.npages,
	       t.unsupported, t.steps, cpu_ms() - t0);
	CHECK(!t.lies, "%s: %zu search-table entries start no FDE", path, t.lies);
	CHECK(!err && t.n >= min_rows, "%s: %d, %zu rows", path, err, t.n);
	CHECK(t.unsupported * 100 <= t.evaluated, "%s: %zu of %zu rows unsupported", path,
	      t.unsupported, t.evaluated);
	c.t = &t;
	elf__symbols(&h, SHT_DYNSYM, entry__visit, &c);
	CHECK(c.checked > 100 && c.rsp8 >= c.checked * 99 / 100, "%s: %d of %d entries rsp+8",
	      path, c.rsp8, c.checked);
	cfi_table__free(&t);
	elf__close(&h);
}

/* ------------------------------------------------------------------ */
/* .debug_frame, compressed, in a debug file */

static void workload_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX / 2];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[n > 0 ? n : 0] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	snprintf(buf, len, "%s/../workloads/%s", exe, name);
}

static void test_debug_frame(void)
{
	char bin[PATH_MAX], dbg_path[PATH_MAX];
	struct elf_handle h, dbg;
	struct cfi_table alone, both;
	const struct lw_uw_row *row;
	uint64_t fn;

	workload_path("chainwork_split", bin, sizeof(bin));
	workload_path("chainwork_split.debug", dbg_path, sizeof(dbg_path));
	if (elf__open(&h, bin) || elf__open(&dbg, dbg_path)) {
		CHECK(0, "no %s (make test builds it)", bin);
		return;
	}
	fn = symbol(&dbg, "checksum_block");
	CHECK(fn && fn <= UINT32_MAX, "checksum_block in the debug file: %#lx", (unsigned long)fn);
	/* the binary's .eh_frame holds only the C runtime's functions */
	CHECK(!cfi__build(&h, NULL, &alone), "the binary alone has .eh_frame");
	row = cfi_table__find(&alone, (uint32_t)fn);
	CHECK(!row || row->type == LW_UW_ROW_NONE, "checksum_block covered by .eh_frame?");
	CHECK(!cfi__build(&h, &dbg, &both), "with the debug file");
	row = cfi_table__find(&both, (uint32_t)fn);
	CHECK(row && row->type == LW_UW_ROW_RSP && row->cfa_off == 8,
	      "checksum_block's entry from the compressed .debug_frame: %d %d",
	      row ? row->type : -1, row ? row->cfa_off : 0);
	CHECK(both.n > alone.n, "%zu rows with the debug file, %zu without", both.n, alone.n);
	cfi_table__free(&alone);
	cfi_table__free(&both);
	elf__close(&dbg);
	elf__close(&h);
}

/* ------------------------------------------------------------------ */
/* a compressed section's claimed size */

static void *file__read(const char *path, size_t *len);

/*
 * The size a compressed section claims is what libelf allocates to inflate
 * it: a debug file claiming more than 256 MiB for its .debug_frame is refused
 * before anything is allocated, the same file with its true size is read.
 */
static void test_inflate_bound(void)
{
	char dbg_path[PATH_MAX];
	struct elf_section sec;
	struct elf_handle h;
	size_t len, shnum = 0, shstrndx;
	unsigned char *image, *copy;
	Elf64_Chdr *ch = NULL;
	int err;

	workload_path("chainwork_split.debug", dbg_path, sizeof(dbg_path));
	image = file__read(dbg_path, &len);
	CHECK(image != NULL, "no %s (make test builds it)", dbg_path);
	if (!image)
		return;
	if (!elf__open_mem(&h, image, len) && !elf_getshdrnum(h.elf, &shnum) &&
	    !elf_getshdrstrndx(h.elf, &shstrndx)) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(h.elf, scn));) {
			GElf_Shdr sh;
			const char *name;

			if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
			    (name = elf_strptr(h.elf, shstrndx, sh.sh_name)) &&
			    !strcmp(name, ".debug_frame") && sh.sh_offset + sizeof(*ch) <= len)
				ch = (Elf64_Chdr *)(image + sh.sh_offset);
		}
		elf__close(&h);
	}
	CHECK(ch != NULL, "a compressed .debug_frame in %s", dbg_path);
	if (!ch) {
		free(image);
		return;
	}
	/* inflating changes the header in an image libelf reads in place: a copy each */
	copy = malloc(len);
	if (copy) {
		memcpy(copy, image, len);
		CHECK(!elf__open_mem(&h, copy, len) && !elf__section(&h, ".debug_frame", &sec) &&
		      sec.data->d_size == ch->ch_size, "its true size read");
		elf__close(&h);
		memcpy(copy, image, len);
		((Elf64_Chdr *)(copy + ((unsigned char *)ch - image)))->ch_size = 512ull << 20;
		err = elf__open_mem(&h, copy, len) ? -1 : elf__section(&h, ".debug_frame", &sec);
		CHECK(err == -E2BIG, "claiming 512 MiB: %d, want -E2BIG", err);
		elf__close(&h);
	}
	free(copy);
	free(image);
}

/* ------------------------------------------------------------------ */
/* malformed files */

static void *file__read(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void test_malformed(void)
{
	size_t len, built = 0, tried = 0;
	unsigned char *image = file__read("/proc/self/exe", &len), *copy;
	unsigned int seed = 1;

	CHECK(image != NULL, "cannot read own binary");
	if (!image)
		return;
	copy = malloc(len);
	/* cut short anywhere, and bytes of the CFI sections overwritten */
	for (int i = 0; i < 400 && copy; i++) {
		size_t n = i < 100 ? len * (size_t)i / 100 : len;
		struct elf_handle h;
		struct cfi_table t;

		memcpy(copy, image, len);
		for (int k = 0; i >= 100 && k < 16; k++) {
			seed = seed * 1103515245 + 12345;
			copy[len / 3 + (seed >> 8) % (len / 2)] = (unsigned char)(seed >> 16);
		}
		if (elf__open_mem(&h, copy, n))
			continue;
		tried++;
		if (!cfi__build(&h, NULL, &t)) {
			size_t bad = 0;

			built++;
			/* every row lies in order, every page's range inside the rows */
			for (size_t r = 1; r < t.n; r++)
				bad += t.rows[r - 1].pc >= t.rows[r].pc;
			for (uint32_t p = 0; p < t.npages; p++)
				bad += t.pages[p].first > t.pages[p].last || t.pages[p].last >= t.n;
			CHECK(!bad, "copy %d: %zu rows or pages out of order", i, bad);
			cfi_table__find(&t, 0);
			cfi_table__find(&t, UINT32_MAX);
			cfi_table__free(&t);
		}
		elf__close(&h);
	}
	printf("malformed copies: %zu opened, %zu gave a table\n", tried, built);
	CHECK(tried > 100, "only %zu copies opened", tried);
	free(copy);
	free(image);
}

int main(void)
{
	test_own_stack();
	test_real_file("/usr/bin/python3.11", 20000);
	test_real_file("/lib/x86_64-linux-gnu/libc.so.6", 10000);
	test_real_file("/usr/bin/node", 100000);
	test_debug_frame();
	test_inflate_bound();
	test_malformed();
	return check__report();
}

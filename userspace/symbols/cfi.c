// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "lib/clock.h"
#include <string.h>
#include "proc/elf.h"
#include "symbols/cfi.h"

/* x86_64 DWARF register numbers */
#define DW_RBP 6
#define DW_RSP 7

#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_datarel 0x30

/*
 * Bounds on a file's work: libdw evaluates an FDE from its start for every
 * row, so a crafted FDE with very many rows is quadratic. The work is counted
 * as the rows libdw goes through (row k of an FDE: k + 1), per file; a CPU
 * time box stands behind the count. The largest FDE seen here:
 * _PyEval_EvalFrameDefault, ~2,900 rows; node, 372k rows in all, 3.3M steps
 * and 160 ms (a step costs ~2 ns, a row ~0.4 us). A table over a bound is not
 * built: that file is walked with frame pointers, its frames marked.
 */
#define CFI_MAX_FDE_ROWS 8192
#define CFI_MAX_ROWS (1u << LW_UW_ROW_STEPS)
#define CFI_MAX_STEPS (32ull << 20)
#define CFI_MAX_BUILD_NS 1000000000ull

static int table__add(struct cfi_table *t, const struct lw_uw_row *r)
{
	if (t->n >= CFI_MAX_ROWS)
		return -E2BIG;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		struct lw_uw_row *rows = realloc(t->rows, cap * sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		t->cap = cap;
	}
	t->rows[t->n++] = *r;
	return 0;
}

static int u64__cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorted, without duplicates and without starts the 32-bit rows cannot hold. */
static size_t starts__tidy(uint64_t *v, size_t n)
{
	size_t w = 0;

	qsort(v, n, sizeof(*v), u64__cmp);
	for (size_t i = 0; i < n; i++) {
		if (v[i] > UINT32_MAX || (w && v[w - 1] == v[i]))
			continue;
		v[w++] = v[i];
	}
	return w;
}

/* FDE start addresses from the .eh_frame_hdr search table. */
static int starts__eh_frame_hdr(const struct elf_handle *h, uint64_t **out, size_t *n)
{
	struct elf_section sec;
	const uint8_t *p;
	uint32_t count;
	size_t size;

	if (elf__section(h, ".eh_frame_hdr", &sec))
		return -ENODATA;
	p = sec.data->d_buf;
	size = sec.data->d_size;
	/* version 1; eh_frame_ptr 4 bytes; count udata4; table datarel|sdata4 pairs */
	if (size < 12 || p[0] != 1 || (p[1] & 0x0f) != DW_EH_PE_sdata4 ||
	    p[2] != DW_EH_PE_udata4 || p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return -ENODATA;
	memcpy(&count, p + 8, sizeof(count));
	if ((size - 12) / 8 < count)
		return -EINVAL;
	*out = malloc((count ? count : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		int32_t loc;

		memcpy(&loc, p + 12 + (size_t)i * 8, sizeof(loc));
		(*out)[i] = sec.addr + (uint64_t)(int64_t)loc;
	}
	*n = starts__tidy(*out, count);
	return 0;
}

/* FDE start addresses of .debug_frame, whose initial locations are absolute. */
static int starts__debug_frame(const struct elf_handle *h, uint64_t **out, size_t *n)
{
	const unsigned char *ident;
	struct elf_section sec;
	Dwarf_CFI_Entry entry;
	Dwarf_Off off = 0, next = (Dwarf_Off)-1;
	size_t cap = 0, len = 0;
	uint64_t *v = NULL, *tmp;
	int ret;

	ident = (const unsigned char *)elf_getident(h->elf, NULL);
	if (!ident || ident[EI_CLASS] != ELFCLASS64 || elf__section(h, ".debug_frame", &sec))
		return -ENODATA;
	while ((ret = dwarf_next_cfi(ident, sec.data, false, off, &next, &entry)) <= 0) {
		uint64_t start;

		/* an entry libdw cannot skip safely leaves next as it was */
		if (ret < 0 && (next == (Dwarf_Off)-1 || next <= off))
			break;
		off = next;
		if (ret < 0 || dwarf_cfi_cie_p(&entry) || entry.fde.end - entry.fde.start < 8)
			continue;
		memcpy(&start, entry.fde.start, sizeof(start));
		if (len == cap) {
			cap = cap ? cap * 2 : 1024;
			tmp = realloc(v, cap * sizeof(*v));
			if (!tmp) {
				free(v);
				return -ENOMEM;
			}
			v = tmp;
		}
		v[len++] = start;
		if (len >= CFI_MAX_ROWS)
			break;
		next = (Dwarf_Off)-1;
	}
	if (!len) {
		free(v);
		return -ENODATA;
	}
	*out = v;
	*n = starts__tidy(v, len);
	return 0;
}

/* [call_frame_cfa], [.., plus_uconst N] or [.., consts N, plus]: CFA + N */
static bool ops__cfa_relative(const Dwarf_Op *ops, size_t nops, int64_t *off)
{
	if (nops < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	if (nops == 3 && (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_const1s ||
			  ops[1].atom == DW_OP_const2s || ops[1].atom == DW_OP_const4s) &&
	    ops[2].atom == DW_OP_plus) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* glibc's and binutils' .plt rule: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
static bool ops__plt(const Dwarf_Op *ops, size_t nops)
{
	return nops == 9 && ops[0].atom == DW_OP_breg7 && ops[0].number == 8 &&
	       ops[1].atom == DW_OP_breg16 && ops[2].atom == DW_OP_lit15 &&
	       ops[3].atom == DW_OP_and &&
	       (ops[4].atom == DW_OP_lit11 || ops[4].atom == DW_OP_lit10) &&
	       ops[5].atom == DW_OP_ge && ops[6].atom == DW_OP_lit3 && ops[7].atom == DW_OP_shl &&
	       ops[8].atom == DW_OP_plus;
}

/* The CFA rule; false when the walker cannot evaluate it. */
static bool row__cfa(Dwarf_Frame *fr, struct lw_uw_row *r)
{
	Dwarf_Op *ops;
	size_t nops;
	int64_t off;

	if (dwarf_frame_cfa(fr, &ops, &nops) || !nops)
		return false;
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == DW_RSP || ops[0].number == DW_RBP)) {
		off = (int64_t)ops[0].number2;
		if (off < INT16_MIN || off > INT16_MAX)
			return false;
		r->type = ops[0].number == DW_RSP ? LW_UW_ROW_RSP : LW_UW_ROW_RBP;
		r->cfa_off = (int16_t)off;
		return true;
	}
	if (ops__plt(ops, nops)) {
		r->type = LW_UW_ROW_PLT;
		return true;
	}
	return false;
}

/* The row of one libdw frame state; type UNSUP when any rule is beyond the walker. */
static void row__from_frame(Dwarf_Frame *fr, uint32_t pc, struct lw_uw_row *r)
{
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	int64_t off;
	int ra = dwarf_frame_info(fr, NULL, NULL, NULL);

	memset(r, 0, sizeof(*r));
	r->pc = pc;
	r->type = LW_UW_ROW_UNSUP;
	if (ra < 0 || dwarf_frame_register(fr, ra, ops_mem, &ops, &nops))
		return;
	/* the return address undefined: the outermost frame (_start, clone3) */
	if (nops == 0 && ops == ops_mem) {
		r->type = LW_UW_ROW_END;
		return;
	}
	if (!ops__cfa_relative(ops, nops, &off) || off != -8 || !row__cfa(fr, r))
		return;
	/* rbp saved at CFA + N (N < 0, a multiple of 8), or left as it is */
	if (dwarf_frame_register(fr, DW_RBP, ops_mem, &ops, &nops)) {
		r->type = LW_UW_ROW_UNSUP;
		return;
	}
	if (nops == 0)
		return;
	if (!ops__cfa_relative(ops, nops, &off) || (off & 7) || off >= 0 || off / 8 < INT8_MIN) {
		r->type = LW_UW_ROW_UNSUP;
		return;
	}
	r->rbp_off8 = (int8_t)(off / 8);
}

/* The rows of the FDE at start, up to next (where the next FDE starts). */
static int table__add_fde(struct cfi_table *t, Dwarf_CFI *cfi, uint64_t start, uint64_t next)
{
	uint64_t pc = start;
	struct lw_uw_row r;
	int err;

	for (int rows = 0; pc < next; rows++) {
		Dwarf_Addr lo, hi;
		Dwarf_Frame *fr;

		if (rows >= CFI_MAX_FDE_ROWS)
			return -E2BIG;
		t->steps += (size_t)rows + 1;
		if (t->steps > CFI_MAX_STEPS)
			return -E2BIG;
		if (!(t->evaluated & 255) && clock__thread_cpu_ns() > t->deadline_ns)
			return -ETIME;
		if (dwarf_cfi_addrframe(cfi, pc, &fr))
			break;
		dwarf_frame_info(fr, &lo, &hi, NULL);
		/* a search table that lies: no FDE starts here, its rows are another's */
		if (!rows && lo < start) {
			free(fr);
			t->lies++;
			return 0;
		}
		row__from_frame(fr, (uint32_t)pc, &r);
		free(fr);
		t->evaluated++;
		t->unsupported += r.type == LW_UW_ROW_UNSUP;
		err = table__add(t, &r);
		if (err)
			return err;
		if (hi <= pc || hi > UINT32_MAX)
			break;
		pc = hi;
	}
	/* the FDE ended before the next one starts: a gap without CFI */
	if (pc < next && pc <= UINT32_MAX) {
		memset(&r, 0, sizeof(r));
		r.pc = (uint32_t)pc;
		r.type = LW_UW_ROW_NONE;
		return table__add(t, &r);
	}
	return 0;
}

static int row__cmp(const void *a, const void *b)
{
	const struct lw_uw_row *x = a, *y = b;

	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The last row with pc <= the address in rows[lo, hi), or -1. */
static long rows__find(const struct lw_uw_row *rows, size_t lo, size_t hi, uint32_t pc)
{
	size_t first = lo;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == first ? -1 : (long)lo - 1;
}

/*
 * PLT sections no FDE covers (node's .plt) get the rule of their stubs,
 * which the ABI fixes: the lazy-binding expression for .plt, a bare jump
 * (CFA = rsp + 8) for .plt.got and .plt.sec. Not a guess.
 */
static int table__add_plt(const struct elf_handle *h, struct cfi_table *t)
{
	static const char *const names[] = { ".plt", ".plt.got", ".plt.sec" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct lw_uw_row r = { 0 };
		struct elf_section sec;
		uint64_t end;
		long in;
		int err;

		if (elf__section(h, names[i], &sec) || !sec.addr || sec.addr > UINT32_MAX)
			continue;
		end = sec.addr + sec.size;
		in = rows__find(t->rows, 0, t->n, (uint32_t)sec.addr);
		if ((in >= 0 && t->rows[in].type != LW_UW_ROW_NONE) || end > UINT32_MAX)
			continue;
		r.pc = (uint32_t)sec.addr;
		r.type = i == 0 ? LW_UW_ROW_PLT : LW_UW_ROW_RSP;
		r.cfa_off = i == 0 ? 0 : 8;
		err = table__add(t, &r);
		/* unless a row starts right at its end, nothing is known after it */
		in = rows__find(t->rows, 0, t->n - 1, (uint32_t)end);
		if (!err && (in < 0 || t->rows[in].pc != end)) {
			r.pc = (uint32_t)end;
			r.type = LW_UW_ROW_NONE;
			r.cfa_off = 0;
			err = table__add(t, &r);
		}
		if (err)
			return err;
		t->plt++;
		qsort(t->rows, t->n, sizeof(*t->rows), row__cmp);
	}
	return 0;
}

/* One row per change of rule: a later row at the same pc wins. */
static void table__merge(struct cfi_table *t)
{
	size_t w = 0;

	for (size_t i = 0; i < t->n; i++) {
		const struct lw_uw_row *r = &t->rows[i];

		if (w && t->rows[w - 1].pc == r->pc)
			w--;
		if (w && t->rows[w - 1].type == r->type && t->rows[w - 1].cfa_off == r->cfa_off &&
		    t->rows[w - 1].rbp_off8 == r->rbp_off8)
			continue;
		t->rows[w++] = *r;
	}
	t->n = w;
}

/* The page index over the sorted rows, in one sweep. */
static int table__index(struct cfi_table *t)
{
	size_t r = 0;
	uint64_t span;

	if (!t->n)
		return -ENODATA;
	t->text_lo = t->rows[0].pc & ~(LW_UW_PAGE_SIZE - 1);
	span = (uint64_t)t->rows[t->n - 1].pc - t->text_lo;
	t->npages = (uint32_t)(span >> LW_UW_PAGE_SHIFT) + 1;
	t->pages = calloc(t->npages, sizeof(*t->pages));
	if (!t->pages)
		return -ENOMEM;
	for (uint32_t p = 0; p < t->npages; p++) {
		uint64_t start = t->text_lo + ((uint64_t)p << LW_UW_PAGE_SHIFT);

		while (r + 1 < t->n && t->rows[r + 1].pc <= start)
			r++;
		t->pages[p].first = (uint32_t)r;
		t->pages[p].last = (uint32_t)r;
		while (t->pages[p].last + 1 < t->n &&
		       t->rows[t->pages[p].last + 1].pc <= start + LW_UW_PAGE_SIZE)
			t->pages[p].last++;
	}
	return 0;
}

/* The rows of every FDE at starts, evaluated with cfi. */
static int table__fill(struct cfi_table *t, Dwarf_CFI *cfi, const uint64_t *starts, size_t n)
{
	int err = 0;

	t->fdes += n;
	for (size_t i = 0; !err && i < n; i++)
		err = table__add_fde(t, cfi, starts[i], i + 1 < n ? starts[i + 1] : UINT64_MAX);
	return err;
}

/* .eh_frame, through its header's sorted table; -ENODATA when there is none. */
static int table__fill_eh_frame(const struct elf_handle *h, struct cfi_table *t)
{
	uint64_t *starts = NULL;
	Dwarf_CFI *cfi;
	size_t n = 0;
	int err = starts__eh_frame_hdr(h, &starts, &n);

	if (err)
		return err;
	cfi = dwarf_getcfi_elf(h->elf);
	err = cfi ? table__fill(t, cfi, starts, n) : -ENODATA;
	if (cfi)
		dwarf_cfi_end(cfi);
	free(starts);
	return err;
}

/* .debug_frame; -ENODATA when there is none. */
static int table__fill_debug_frame(const struct elf_handle *h, struct cfi_table *t)
{
	uint64_t *starts = NULL;
	Dwarf_CFI *cfi;
	Dwarf *dw;
	size_t n = 0;
	int err = starts__debug_frame(h, &starts, &n);

	if (err)
		return err;
	/*
	 * libdw inflates every compressed .debug_* section it opens, not just
	 * this one; over the budget, .eh_frame's rows are all there is
	 */
	if (elf__inflate_reserve(h)) {
		free(starts);
		return -ENODATA;
	}
	dw = dwarf_begin_elf(h->elf, DWARF_C_READ, NULL);
	cfi = dw ? dwarf_getcfi(dw) : NULL;
	err = cfi ? table__fill(t, cfi, starts, n) : -ENODATA;
	if (dw)
		dwarf_end(dw);
	free(starts);
	return err;
}

/* The row in force at pc in a sorted table, or NULL. */
static const struct lw_uw_row *rows__at(const struct cfi_table *t, uint32_t pc)
{
	long i = rows__find(t->rows, 0, t->n, pc);

	return i < 0 ? NULL : &t->rows[i];
}

/*
 * Both: code built with -fno-asynchronous-unwind-tables -g has its CFI in
 * .debug_frame while the C runtime's objects bring .eh_frame. At every
 * address .eh_frame's rule holds where it has one, .debug_frame's elsewhere.
 */
static int table__overlay(struct cfi_table *t, const struct cfi_table *eh,
			  const struct cfi_table *df)
{
	size_t i = 0, j = 0;
	int err = 0;

	t->fdes = eh->fdes + df->fdes;
	t->evaluated = eh->evaluated + df->evaluated;
	t->unsupported = eh->unsupported + df->unsupported;
	t->steps = eh->steps + df->steps;
	t->lies = eh->lies + df->lies;
	while (!err && (i < eh->n || j < df->n)) {
		uint32_t pc = j >= df->n || (i < eh->n && eh->rows[i].pc <= df->rows[j].pc) ?
			      eh->rows[i].pc : df->rows[j].pc;
		const struct lw_uw_row *e = rows__at(eh, pc), *d = rows__at(df, pc);
		struct lw_uw_row r = { .pc = pc, .type = LW_UW_ROW_NONE };

		if (e && e->type != LW_UW_ROW_NONE)
			r = *e;
		else if (d)
			r = *d;
		r.pc = pc;
		err = table__add(t, &r);
		while (i < eh->n && eh->rows[i].pc <= pc)
			i++;
		while (j < df->n && df->rows[j].pc <= pc)
			j++;
	}
	return err;
}

/* The rows of .eh_frame, .debug_frame (h's or, failing that, dbg's), or both overlaid. */
static int table__collect(const struct elf_handle *h, const struct elf_handle *dbg,
			  struct cfi_table *t)
{
	struct cfi_table eh = { .deadline_ns = t->deadline_ns }, df = { .deadline_ns = t->deadline_ns };
	int err_eh, err_df;

	err_eh = table__fill_eh_frame(h, &eh);
	err_df = table__fill_debug_frame(h, &df);
	if (err_df == -ENODATA && dbg)
		err_df = table__fill_debug_frame(dbg, &df);
	if ((err_eh && err_eh != -ENODATA) || (err_df && err_df != -ENODATA)) {
		cfi_table__free(&eh);
		cfi_table__free(&df);
		return err_eh && err_eh != -ENODATA ? err_eh : err_df;
	}
	if (!eh.n || !df.n) {
		*t = eh.n ? eh : df;
		cfi_table__free(eh.n ? &df : &eh);
		return t->n ? 0 : -ENODATA;
	}
	err_eh = table__overlay(t, &eh, &df);
	cfi_table__free(&eh);
	cfi_table__free(&df);
	return err_eh;
}

int cfi__build(const struct elf_handle *h, const struct elf_handle *dbg, struct cfi_table *t)
{
	return cfi__build_within(h, dbg, t, CFI_MAX_BUILD_NS);
}

int cfi__build_within(const struct elf_handle *h, const struct elf_handle *dbg,
		      struct cfi_table *t, uint64_t budget_ns)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->deadline_ns = clock__thread_cpu_ns() + budget_ns;
	err = table__collect(h, dbg, t);
	if (!err)
		err = table__add_plt(h, t);
	if (!err) {
		table__merge(t);
		err = table__index(t);
	}
	if (err)
		cfi_table__free(t);
	return err;
}

void cfi_table__free(struct cfi_table *t)
{
	free(t->rows);
	free(t->pages);
	memset(t, 0, sizeof(*t));
}

const struct lw_uw_row *cfi_table__find(const struct cfi_table *t, uint32_t pc)
{
	uint32_t p;
	long i;

	if (!t->n || pc < t->text_lo)
		return NULL;
	p = (pc - t->text_lo) >> LW_UW_PAGE_SHIFT;
	if (p >= t->npages)
		p = t->npages - 1;
	i = rows__find(t->rows, t->pages[p].first, (size_t)t->pages[p].last + 1, pc);
	return i < 0 ? NULL : &t->rows[i];
}

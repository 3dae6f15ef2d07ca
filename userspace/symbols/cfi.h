/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An ELF file's call-frame information (.eh_frame through .eh_frame_hdr, or
 * .debug_frame), evaluated with libdw into the compact table the kernel's
 * unwinder searches (bpf/lw_abi_unwind.h): one row per change of the CFA,
 * rbp or return-address rule, sorted by address, and a page index. The file
 * is the target's: every count and offset is checked, and the work per file
 * is bounded.
 */
#ifndef LOOPWATCH_SYMBOLS_CFI_H
#define LOOPWATCH_SYMBOLS_CFI_H

#include <stddef.h>
#include <stdint.h>
#include "lib/lwtypes.h"
#include "lw_abi_unwind.h"

struct elf_handle;

struct cfi_table {
	struct lw_uw_row *rows;		/* sorted by pc; each holds until the next */
	size_t n;
	size_t cap;
	/* page p: the rows in force at text_lo + p * LW_UW_PAGE_SIZE and at the next page */
	struct lw_uw_page *pages;	/* row numbers relative to rows[0] */
	uint32_t npages;
	uint32_t text_lo;
	/* what the build saw */
	size_t fdes;
	size_t evaluated;		/* rows libdw evaluated, before equal ones merged */
	size_t unsupported;		/* rows with a rule the walker does not evaluate */
	size_t plt;			/* PLT sections given the ABI's rule */
	size_t steps;			/* rows libdw went through to evaluate them */
	size_t lies;			/* search-table entries where no FDE starts */
	uint64_t deadline_ns;		/* thread CPU time the build must end by */
};

/*
 * The table of h: .eh_frame (through .eh_frame_hdr), and .debug_frame
 * where .eh_frame says nothing (h's own, or its debug file dbg's; dbg may be
 * NULL). 0; -ENODATA when there is no CFI the walker can use, -E2BIG past
 * the per-file bounds of rows and evaluation steps, -ETIME past its CPU time
 * box, -ENOMEM, -EINVAL for malformed sections.
 */
int cfi__build(const struct elf_handle *h, const struct elf_handle *dbg, struct cfi_table *t);
/*
 * The same within budget_ns of this thread's CPU time instead of the
 * collector's second: a test checking a big file's table (node's) under a
 * sanitizer, where a second is not its time but the instrumentation's.
 */
int cfi__build_within(const struct elf_handle *h, const struct elf_handle *dbg,
		      struct cfi_table *t, uint64_t budget_ns);
void cfi_table__free(struct cfi_table *t);
/* The row in force at the link-time address pc, found as the kernel finds it; NULL if none. */
const struct lw_uw_row *cfi_table__find(const struct cfi_table *t, uint32_t pc);

#endif

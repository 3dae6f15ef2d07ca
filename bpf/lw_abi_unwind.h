/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What crosses between the BPF user-stack unwinder (unwind.bpf.c) and
 * userspace: the per-file unwind tables userspace builds from each ELF
 * file's call-frame information (userspace/symbols/cfi.c) and writes into
 * the kernel (tracker/), the per-process table of executable mappings, and
 * the unwound stacks BPF leaves for userspace to name. Both sides include
 * this file.
 */
#ifndef LW_ABI_UNWIND_H
#define LW_ABI_UNWIND_H

#define LW_UW_MAX_FRAMES 64	/* = LW_STACK_DEPTH */
#define LW_UW_MAX_MAPS 128	/* executable mappings of one process, sorted by start */
#define LW_UW_MAP_STEPS 8	/* binary-search steps over LW_UW_MAX_MAPS */
#define LW_UW_ROW_STEPS 24	/* ... over the up to 16M rows of one file */
#define LW_UW_MAX_PROCS 256	/* processes with a mapping table; others: frame pointers */
#define LW_UW_MAX_STACKS 8192
/* pending uretprobes looked at per capture (their return addresses are replaced) */
#define LW_UW_MAX_RETPROBES 8

/*
 * One row of a file's unwind table: the rule in force from pc up to the
 * next row's pc. pc is the file's link-time address (files under 4 GiB);
 * the return address is always at CFA - 8 (rows where it is not are
 * LW_UW_ROW_UNSUP).
 */
enum lw_uw_row_type {
	LW_UW_ROW_NONE = 0,	/* no CFI covers pc (a gap between FDEs): frame pointers */
	LW_UW_ROW_RSP = 1,	/* CFA = rsp + cfa_off */
	LW_UW_ROW_RBP = 2,	/* CFA = rbp + cfa_off */
	LW_UW_ROW_PLT = 3,	/* CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0): a lazy PLT stub */
	LW_UW_ROW_END = 4,	/* return address undefined: the outermost frame */
	LW_UW_ROW_UNSUP = 5,	/* a rule the walker does not evaluate: the walk stops */
};

struct lw_uw_row {
	__u32 pc;
	__s16 cfa_off;
	__u8 type;		/* enum lw_uw_row_type */
	__s8 rbp_off8;		/* rbp saved at CFA + 8 * rbp_off8; 0: rbp unchanged */
};

/*
 * Page index: for the p-th LW_UW_PAGE_SIZE bytes of a file's code (from
 * text_lo), the rows in force at its start and at its end, so a lookup
 * searches a few rows instead of the whole table. 8 bytes: an element of
 * an mmapable array is.
 */
#define LW_UW_PAGE_SHIFT 10
#define LW_UW_PAGE_SIZE (1u << LW_UW_PAGE_SHIFT)

struct lw_uw_page {
	__u32 first;		/* absolute row numbers */
	__u32 last;
};

enum lw_uw_map_flags {
	LW_UW_MAP_CFI = 1 << 0,		/* rows[row_start, +row_count) describe it */
};

/* An executable mapping; without LW_UW_MAP_CFI it is walked with frame pointers. */
struct lw_uw_map {
	__u64 start;
	__u64 end;
	__u64 bias;		/* link-time address = pc - bias */
	__u32 row_start;
	__u32 row_count;
	__u32 page_start;	/* in the page index; page_count entries */
	__u32 page_count;
	__u32 text_lo;		/* link-time address of page 0 */
	__u32 flags;		/* enum lw_uw_map_flags */
};

/* A process's executable mappings, in "uw_procs" at the slot "uw_slots" gives its pid. */
struct lw_uw_proc {
	__u32 nmaps;
	__u32 pad;
	struct lw_uw_map maps[LW_UW_MAX_MAPS];
};

/* Why a walk ended. */
enum lw_uw_stop {
	LW_UW_STOP_END = 0,	/* the outermost frame: return address undefined or 0 */
	LW_UW_STOP_DEPTH = 1,	/* LW_UW_MAX_FRAMES frames */
	LW_UW_STOP_READ = 2,	/* the stack was unreadable there */
	LW_UW_STOP_UNSUP = 3,	/* a CFI rule the walker does not evaluate */
	LW_UW_STOP_BAD_FRAME = 4,	/* CFA at or below sp, a return address not in user code */
	LW_UW_STOP_FP = 5,	/* no CFI there, and rbp is no frame pointer */
	LW_UW_STOP_NO_REGS = 6,	/* no user registers (a kernel thread) */
	LW_UW_STOP_MAX
};

/* A user stack in "user_stacks"; identical stacks share one id. */
struct lw_user_stack {
	__u32 nframes;
	__u32 stop;		/* enum lw_uw_stop */
	/*
	 * Bit i: pcs[i] was found by following rbp from frame i - 1, not by
	 * CFI (its mapping has no table: JIT code, a table not loaded, a
	 * process not set up). Such frames are marked, not trusted alike.
	 */
	__u64 fp_mask;
	__u64 hash;		/* of all the above and the pcs: the id is taken from it */
	__u64 pcs[LW_UW_MAX_FRAMES];	/* leaf first: return addresses but pcs[0] */
};

/* What unwinding costs, per CPU in "uw_stats", summed by whoever reads it (make bench). */
struct lw_uw_stats {
	__u64 stacks;
	__u64 ns;		/* inside the walk, from bpf_ktime_get_ns() */
	__u64 frames;
	__u64 fp_frames;	/* of them, found by frame pointer */
};

#endif /* LW_ABI_UNWIND_H */

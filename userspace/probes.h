/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The probe manager: finds catalogued files in the processes that run event
 * loops, attaches each file's probes once (system-wide, by inode), releases
 * them when no process maps the file any more, and adds custom probes.
 */
#ifndef LOOPWATCH_PROBES_H
#define LOOPWATCH_PROBES_H

#include <stdbool.h>
#include <stdio.h>
#include "collector.h"

struct probes;

/* NULL with a one-line reason in err (a custom probe that cannot be found) */
struct probes *probes__new(struct collector *c, bool builtin, const char *const *custom,
			   int ncustom, char *err, size_t errlen);
void probes__free(struct probes *p);
/* Attach the probes of catalogued files pid maps (a new loop process). */
void probes__scan_pid(struct probes *p, int pid);
/* Rescan these processes; release files none of them has mapped for a while. */
void probes__rescan(struct probes *p, const int *pids, int npids);
/* The label of a probe id (its bpf_cookie); "probe#N" if unknown. */
const char *probes__label(const struct probes *p, __u32 id);
int probes__attached(const struct probes *p);
/* --list-probes: the catalog, and where each entry can be attached here. */
void probes__list(FILE *out);

#endif

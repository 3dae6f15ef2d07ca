/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The probe manager: finds catalogued files in the processes that run event
 * loops (what each file holds is found once per inode), attaches their
 * probes in each such process alone, releases them when the process is gone
 * or no process maps the file any more, and adds custom probes (in every
 * process that maps their file).
 */
#ifndef LOOPWATCH_TRACKER_PROBES_H
#define LOOPWATCH_TRACKER_PROBES_H

#include <stdbool.h>
#include <stdio.h>
#include "kernel/collector.h"

struct probes;
struct proc;

/* NULL with a one-line reason in err (a custom probe that cannot be found) */
struct probes *probes__new(struct collector *c, bool builtin, const char *const *custom,
			   int ncustom, char *err, size_t errlen);
void probes__free(struct probes *p);
/*
 * Attach the probes of catalogued files proc maps (as of its latest maps
 * snapshot). A rescan of every loop process goes between begin and end:
 * files none of them has mapped for a while are released at the end.
 */
void probes__begin_scan(struct probes *p);
void probes__scan(struct probes *p, struct proc *proc);
void probes__end_scan(struct probes *p);
/* Takes the links attached since (off the main loop) into the bookkeeping: at every wake-up. */
void probes__settle(struct probes *p);
/* The label of a probe id (its bpf_cookie); "probe#N" if unknown. */
void probes__label(const struct probes *p, __u32 id, char *buf, size_t len);
int probes__attached(const struct probes *p);
/* --list-probes: the catalog, and where each entry can be attached here. */
void probes__list(FILE *out);

#endif

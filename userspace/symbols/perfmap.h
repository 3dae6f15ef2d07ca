/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * JIT code named by the process's perf map (/tmp/perf-PID.map, "START SIZE
 * NAME" per line in hex, appended as code is compiled: Node's
 * --perf-basic-prof, Python 3.12's -X perf, any JIT that follows the
 * convention). The one parser of that format. Read through proc/, again as
 * the file grows; kept sorted for lookup; bounded; lines that do not parse
 * are skipped. The file is the target's: nothing in it is trusted.
 */
#ifndef LOOPWATCH_SYMBOLS_PERFMAP_H
#define LOOPWATCH_SYMBOLS_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/frame.h"

struct perf_map;
struct proc;

struct perf_map *perf_map__new(void);
void perf_map__free(struct perf_map *pm);
/*
 * Parse text, whole lines only: returns the bytes consumed (up to and
 * including the last newline). Lines past the bounds are dropped and counted.
 */
size_t perf_map__parse(struct perf_map *pm, const char *text, size_t len);
/* Read what the process appended to its perf map since the last read (or all, anew). */
void perf_map__refresh(struct perf_map *pm, struct proc *p);
/* When it was last read (CLOCK_MONOTONIC ns; 0: never). */
uint64_t perf_map__read_ns(const struct perf_map *pm);
/*
 * The JIT frame at addr: kind FRAME_JIT, func the name (Node's "JS:*login
 * /app/api.js:12:15" as func login, file, line and column); false when the
 * map does not know addr.
 */
bool perf_map__frame(const struct perf_map *pm, uint64_t addr, struct frame *f);
/* Entries held, and lines dropped (unparsable or past the bounds). */
size_t perf_map__entries(const struct perf_map *pm, size_t *dropped);

#endif

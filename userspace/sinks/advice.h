/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The report's advice, one sentence each, chosen from facts only: the
 * dominant part of the time (on CPU, blocked, waiting for a CPU), the call it
 * was in, whether a hung iteration ended. A sleep is never "short of CPU", a
 * call that returned is never a deadlock.
 */
#ifndef LOOPWATCH_SINKS_ADVICE_H
#define LOOPWATCH_SINKS_ADVICE_H

#include <stdbool.h>
#include "model/report.h"

/* A culprit: cause, the dominant part of its own stall time; via, the call it was in ("" none). */
const char *advice__culprit(const char *via, enum stall_cause cause);
/* The stall time of a process, by part (indexed by enum stall_cause): is the host to blame? */
const char *advice__runq(const __u64 stall_ns[3]);
/* Throttled by its cgroup's CPU quota; most: most of the wait for a CPU was that. */
const char *advice__throttled(bool most);
/*
 * A hung iteration (over --stuck-after): ended, whether it returned to its
 * wait (then cause is its final split's dominant part, else the split so far).
 */
const char *advice__hung(bool ended, enum stall_cause cause);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel events, in the order they come: a new loop goes to the process
 * tracker; stalls, blocking calls and probed calls become reports that go
 * to the model and out to the sinks.
 */
#ifndef LOOPWATCH_EVENTS_EVENTS_H
#define LOOPWATCH_EVENTS_EVENTS_H

#include <stddef.h>
#include "lib/lwtypes.h"
#include "model/report.h"

struct decoder;
struct model;
struct stuck_watch;
struct sinks;
struct tracker;

/*
 * The socket or file of a blocking call reported lately: a stall event,
 * which comes after the calls inside it, names what it slept on.
 */
#define EVENTS_RECENT_BLOCKS 16

struct recent_block {
	__u32 tid;
	double ts;
	__u64 duration_ns;
	char syscall[REPORT_NAME_LEN];
	char path[256];
};

struct events {
	struct decoder *decoder;
	struct tracker *tracker;
	struct model *model;
	struct sinks *sinks;
	__u64 stall_threshold_ns;	/* slower iterations than this are stalls */
	struct stuck_watch *stuck;	/* NULL: hung loops are not reported live */
	struct recent_block recent[EVENTS_RECENT_BLOCKS];	/* a ring */
	unsigned int nrecent;
};

/* The collector's event callback; ctx is the struct events. */
void events__handle(const void *event, size_t size, void *ctx);

/* Hung loops (stuck.c): after --stuck-after, then every --stuck-every (both ns; 0: never). */
struct stuck_watch *stuck_watch__new(__u64 after_ns, __u64 every_ns);
void stuck_watch__free(struct stuck_watch *w);
/*
 * After a drain of the loop records: a stuck event for each loop thread
 * whose iteration is due one at now_ns. Returns when the next one may be
 * due (CLOCK_MONOTONIC ns), 0 when no loop is inside an iteration.
 */
__u64 events__stuck(struct events *ev, __u64 now_ns);

#endif

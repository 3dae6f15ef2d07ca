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

struct decoder;
struct model;
struct sinks;
struct tracker;

struct events {
	struct decoder *decoder;
	struct tracker *tracker;
	struct model *model;
	struct sinks *sinks;
	__u64 stall_threshold_ns;	/* slower iterations than this are stalls */
};

/* The collector's event callback; ctx is the struct events. */
void events__handle(const void *event, size_t size, void *ctx);

#endif

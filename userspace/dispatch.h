/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Kernel events to reports, into the model, out to the sink in use. */
#ifndef LOOPWATCH_DISPATCH_H
#define LOOPWATCH_DISPATCH_H

#include <stdbool.h>
#include <stdio.h>
#include "alert.h"
#include "attribute.h"
#include "model.h"
#include "probes.h"

enum dispatch_output { DISPATCH_NONE, DISPATCH_TEXT, DISPATCH_JSON };

struct dispatch {
	struct attributor *attr;	/* set once the collector is open */
	struct model *model;
	struct alerter *alerter;	/* NULL: no alerts */
	struct probes *probes;		/* NULL: no probes */
	__u64 stall_threshold_ns;	/* slower iterations than this are stalls */
	enum dispatch_output output;
	FILE *out;
};

/* an event_fn for the collector; ctx is the struct dispatch */
void dispatch__event(const void *event, size_t size, void *ctx);

#endif

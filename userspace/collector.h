/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The collector owns the BPF skeleton's life (open -> rodata -> load ->
 * attach -> poll -> destroy) and drains its maps; it knows nothing of output.
 */
#ifndef LOOPWATCH_COLLECTOR_H
#define LOOPWATCH_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include "lwtypes.h"

struct collector_opts {
	const int *pids;
	int npids;
	const char *comm;	/* NULL: every process */
	bool verbose;
};

struct collector;

typedef void (*loop_fn)(const struct lw_loop *loop, void *ctx);

/* NULL on failure, with a one-line reason in err. */
struct collector *collector__open(const struct collector_opts *opts, char *err, size_t errlen);
void collector__destroy(struct collector *c);
/* Wait up to timeout_ms for kernel events; -EINTR on a signal. */
int collector__poll(struct collector *c, int timeout_ms);
/* Every loop record, then reap the ones whose thread exited. */
int collector__drain_loops(struct collector *c, loop_fn fn, void *ctx);

#endif

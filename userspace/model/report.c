// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include "model/report.h"

const char *stall_cause__name(enum stall_cause c)
{
	switch (c) {
	case CAUSE_BLOCKED:
		return "blocked";
	case CAUSE_RUNQ:
		return "runq";
	default:
		return "cpu";
	}
}

enum stall_cause stall_cause__of(__u64 oncpu_ns, __u64 blocked_ns, __u64 runq_ns)
{
	if (blocked_ns >= oncpu_ns && blocked_ns >= runq_ns)
		return CAUSE_BLOCKED;
	if (runq_ns > oncpu_ns)
		return CAUSE_RUNQ;
	return CAUSE_CPU;
}

void stack_report__clear(struct stack_report *s)
{
	free(s->frames);
	s->frames = NULL;
	s->nframes = 0;
}

void stall_report__free(struct stall_report *r)
{
	for (int i = 0; i < r->nstacks; i++)
		stack_report__clear(&r->stacks[i]);
	r->nstacks = 0;
}

void block_report__free(struct block_report *r)
{
	stack_report__clear(&r->stack);
}

void probe_report__free(struct probe_report *r)
{
	stack_report__clear(&r->stack);
}

void stuck_report__free(struct stuck_report *r)
{
	stall_report__free(&r->so_far);
	block_report__free(&r->call);
}

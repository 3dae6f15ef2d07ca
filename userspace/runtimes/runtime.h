/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A runtime whose frames loopwatch walks (CPython, V8): everything the rest
 * of the collector knows of it. One folder per runtime in userspace/runtimes/
 * (its kernel half in bpf/runtimes/), one line in runtimes.c's table.
 *
 * Its life, as the OpenTelemetry eBPF profiler splits an interpreter's:
 * state_new makes the data kept per file (by file identity) and per process;
 * detect recognises a process and gives its walker's layout, which the
 * tracker writes to the kernel; symbolize names a stack the walker took
 * from the process's memory, splice puts those frames into the native
 * stack where the runtime ran them; forget lets a process go.
 */
#ifndef LOOPWATCH_RUNTIMES_RUNTIME_H
#define LOOPWATCH_RUNTIMES_RUNTIME_H
#include <stdbool.h>
#include <stddef.h>
#include "lib/lwtypes.h"
#include "lib/frame.h"

struct proc;

/* what detect found */
enum runtime_found {
	RUNTIME_NONE = -1,	/* not this runtime's process, or gone */
	RUNTIME_WALKED = 0,	/* its layout is ready: the kernel walks its frames */
	RUNTIME_MARKED = 1,	/* this runtime, unusable: its layout flags it, stacks get a marker */
};

struct runtime {
	const char *name;		/* "python", "v8" */
	const char *frames;		/* the frames it gives, for notes: "Python", "JavaScript" */
	const char *procs_map;		/* the kernel's layouts by pid (BPF map name) */
	const char *stacks_map;		/* the kernel's walked stacks by id (BPF map name) */
	size_t layout_size;		/* one value of procs_map */
	size_t stack_size;		/* one value of stacks_map */
	int max_frames;			/* what symbolize gives at most for one stack */
	bool redetect;			/* its layout moves while the process runs: detect at each rescan */
	void *(*state_new)(void);
	void (*state_free)(void *state);
	/* layout: layout_size bytes; desc: which build, or why it is unusable */
	enum runtime_found (*detect)(void *state, struct proc *p, void *layout, char *desc,
				     size_t len);
	/* stack: as read from stacks_map; frames innermost first, returns how many */
	int (*symbolize)(void *state, struct proc *p, const void *stack, struct frame *out,
			 int max);
	/* one stack, leaf first, of the native frames and the runtime's: returns how many */
	int (*splice)(const struct frame *native, int nnative, const struct frame *rt, int nrt,
		      struct frame *out, int max);
	void (*forget)(void *state, int pid);
	/* the runtime's own code (its stdlib, its builtins), which never names a culprit */
	bool (*frame_is_own)(const struct frame *f);
};

#endif

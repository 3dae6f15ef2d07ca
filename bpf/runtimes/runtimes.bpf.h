/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The runtimes whose frames BPF walks, one folder each in bpf/runtimes/
 * (userspace/runtimes/README.md): each walks the current thread's frames
 * into its own stack map, and the capture keeps the id in its slot of
 * struct lw_stack_ref (enum lw_runtime). A runtime is one line here.
 */
#ifndef LOOPWATCH_RUNTIMES_BPF_H
#define LOOPWATCH_RUNTIMES_BPF_H

#include "runtimes/python/python.bpf.h"
#include "runtimes/python/gil.bpf.h"
#include "runtimes/v8/v8.bpf.h"

/* the frame chains change as soon as the thread runs on: only now */
static __always_inline void runtimes__capture(__u32 ids[LW_RT_N])
{
	ids[LW_RT_PYTHON] = python__capture();
	ids[LW_RT_V8] = v8__capture();
}

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The user-stack unwinder (unwind.bpf.c), for the programs that capture
 * stacks. It is a global function: defined once, linked into the one object
 * by `bpftool gen object`, verified once per program that calls it.
 */
#ifndef LOOPWATCH_UNWIND_BPF_H
#define LOOPWATCH_UNWIND_BPF_H

/*
 * The current task's user stack, unwound and stored in "user_stacks"
 * (bpf/lw_abi_unwind.h): its id, 0 when lost. Callable from perf_event,
 * tp_btf/sched_switch (where prev is current) and uprobe programs.
 */
extern __u32 unwind__user_stack(void);

#endif /* LOOPWATCH_UNWIND_BPF_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the harness's BPF side reports per captured stack. */
#ifndef PYWALK_H
#define PYWALK_H

enum pywalk_kind {
	PYWALK_SAMPLE = 1,	/* perf_event cpu-clock */
	PYWALK_SWITCH = 2,	/* tp_btf/sched_switch, going to sleep */
	PYWALK_UPROBE = 3,
};

struct pywalk_event {
	__u32 pid;
	__u32 tid;
	__u32 kind;
	__u32 py_id;		/* in py_stacks; 0: none */
	__s32 ustack;		/* in pw_stacks; < 0: not captured */
	__s32 kstack;
	__u64 walk_ns;		/* python__capture() alone */
};

#endif

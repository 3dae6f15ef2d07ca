/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the running kernel's BPF offers beyond loopwatch's minimum (5.15), as
 * userspace found it (userspace/kernel/features.c) and set before load. They
 * are read-only constants: the verifier folds the test and never walks the
 * branch this kernel does not take, so a helper it does not know is never
 * seen.
 */
#ifndef LOOPWATCH_FEATURES_BPF_H
#define LOOPWATCH_FEATURES_BPF_H

#include <bpf/bpf_helpers.h>

const volatile bool have_bpf_loop __weak = true;	/* bpf_loop(), 5.17 */
const volatile bool have_percpu_lookup __weak = true;	/* bpf_map_lookup_percpu_elem(), 5.19 */

/*
 * cb(i, ctx) for i from 0 until it returns non-zero or n have run: with
 * bpf_loop() the verifier checks cb's body once. Without it (5.15, 5.16)
 * alone(i, ctx) runs in a plain bounded loop: a global function with cb's
 * body, checked once on its own, so that each iteration costs the verifier a
 * call, not the body again (a 65-frame walk would multiply every caller's
 * instructions). alone finds for itself what cb gets through ctx's pointers:
 * a global function sees pointers in memory as numbers.
 */
#define lw_loop(n, cb, alone, ctx)					\
	do {								\
		if (have_bpf_loop) {					\
			bpf_loop((n), (cb), (ctx), 0);			\
		} else {						\
			for (__u32 lw_i__ = 0; lw_i__ < (n); lw_i__++) { \
				if ((alone)(lw_i__, (ctx)))		\
					break;				\
			}						\
		}							\
	} while (0)

#endif

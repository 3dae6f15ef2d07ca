/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks (unwound user stacks, Python, V8) kept in an LRU hash by an id
 * taken from their hash, so identical stacks share one entry and a sample
 * keeps only the 32-bit id. The including file brings vmlinux.h first.
 */
#ifndef LOOPWATCH_STACKSTORE_BPF_H
#define LOOPWATCH_STACKSTORE_BPF_H

#include <bpf/bpf_helpers.h>

static __always_inline __u64 stack__mix(__u64 h, __u64 v)
{
	h ^= v;
	h *= 0x100000001b3ULL;		/* FNV-1a prime, a word at a time */
	return h ^ (h >> 29);
}

/*
 * Store st (whose hash field, hash_off bytes in, already holds hash) in map:
 * its id. Two 32-bit candidates from the 64-bit hash make a clash between
 * different stacks rare; on a double clash the newer stack wins. 0: lost.
 */
static __always_inline __u32 stack__store(void *map, const void *st, __u64 hash, __u32 hash_off)
{
	__u32 ids[2];
	void *old;

	ids[0] = (__u32)hash ?: 1;
	ids[1] = (__u32)(hash >> 32) ?: 2;
	for (int i = 0; i < 2; i++) {
		old = bpf_map_lookup_elem(map, &ids[i]);
		if (old && *(__u64 *)(old + hash_off) == hash)
			return ids[i];
		if (!old && !bpf_map_update_elem(map, &ids[i], st, BPF_NOEXIST))
			return ids[i];
	}
	if (bpf_map_update_elem(map, &ids[0], st, BPF_ANY))
		return 0;
	return ids[0];
}

#endif /* LOOPWATCH_STACKSTORE_BPF_H */

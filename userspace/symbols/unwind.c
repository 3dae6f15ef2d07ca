// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <string.h>
#include "proc/procs.h"
#include "symbols/unwind.h"

#define UNWIND_MAX_INSERT 4

/* below mmap_min_addr nothing can be mapped */
#define MIN_USER_ADDR 4096u

/*
 * In an executable mapping: the maps snapshot is re-read once per stack when
 * a word points nowhere (a library loaded since it was taken).
 */
static bool maps__exec_contains(struct proc *p, const struct proc_maps **maps, bool *refreshed,
				uint64_t addr)
{
	const struct proc_mapping *m = proc_maps__find(*maps, addr);

	if (!m && !*refreshed && addr >= MIN_USER_ADDR) {
		*refreshed = true;
		*maps = proc__maps(p, true);
		m = proc_maps__find(*maps, addr);
	}
	return m && m->exec;
}

/* The bytes before addr end with a call: rel32, or indirect through ff /2. */
static bool code__follows_call(struct proc *p, uint64_t addr)
{
	unsigned char b[7];

	if (addr < sizeof(b) || !proc__read(p, addr - sizeof(b), b, sizeof(b)))
		return false;
	if (b[2] == 0xe8)					/* call rel32 */
		return true;
	if (b[5] == 0xff && (b[6] & 0xf8) == 0xd0)		/* call *%reg */
		return true;
	if (b[4] == 0xff && ((b[5] & 0x38) == 0x10) && (b[5] & 0xc0) == 0x40)
		return true;					/* call *disp8(%reg) */
	if (b[1] == 0xff && (b[2] == 0x15 || (b[2] & 0xf8) == 0x90))
		return true;					/* call *disp32(%rip|%reg) */
	if (b[0] == 0xff && b[1] == 0x94)			/* call *disp32(sib) */
		return true;
	if (b[3] == 0xff && b[4] == 0x54)			/* call *disp8(sib) */
		return true;
	return false;
}

int unwind__fixup_leaf(struct proc *p, uint64_t *ips, int n, int max, const uint64_t *words,
		       int nwords)
{
	const struct proc_maps *maps;
	uint64_t found[UNWIND_MAX_INSERT];
	bool refreshed = false;
	int nfound = 0;

	if (n < 1 || !p)
		return n;
	maps = proc__maps(p, false);
	if (!maps || !maps->n)
		return n;
	for (int i = 0; i < nwords && nfound < UNWIND_MAX_INSERT; i++) {
		uint64_t w = words[i];

		/* the walk picks up from here: nothing was skipped past it */
		if (n > 1 && w == ips[1])
			break;
		if (!w || !maps__exec_contains(p, &maps, &refreshed, w) || !code__follows_call(p, w))
			continue;
		found[nfound++] = w;
	}
	if (!nfound)
		return n;
	if (n + nfound > max)
		nfound = max - n;
	if (nfound <= 0)
		return n;
	memmove(&ips[1 + nfound], &ips[1], (size_t)(n - 1) * sizeof(*ips));
	memcpy(&ips[1], found, (size_t)nfound * sizeof(*ips));
	return n + nfound;
}

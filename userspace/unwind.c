// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unwind.h"

#define UNWIND_MAX_INSERT 4
#define UNWIND_MAX_MAPS 512

struct exec_map {
	uint64_t start;
	uint64_t end;
};

/* Executable mappings of pid; 0 if the process is gone. */
static int maps__read_exec(int pid, struct exec_map *maps, int max)
{
	char path[32], *line = NULL;
	size_t cap = 0;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* whole lines: a long path must not leave a fragment parsed as a mapping */
	while (n < max && getline(&line, &cap, f) > 0) {
		unsigned long long start, end;
		char perms[5];

		if (sscanf(line, "%llx-%llx %4s", &start, &end, perms) != 3 || perms[2] != 'x')
			continue;
		maps[n].start = start;
		maps[n].end = end;
		n++;
	}
	free(line);
	fclose(f);
	return n;
}

static bool maps__contain(const struct exec_map *maps, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++) {
		if (addr >= maps[i].start && addr < maps[i].end)
			return true;
	}
	return false;
}

/* The bytes before addr end with a call: rel32, or indirect through ff /2. */
static bool code__follows_call(int memfd, uint64_t addr)
{
	unsigned char b[7];

	if (addr < sizeof(b) || pread(memfd, b, sizeof(b), (off_t)(addr - sizeof(b))) !=
	    (ssize_t)sizeof(b))
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

int unwind__fixup_leaf(int pid, uint64_t *ips, int n, int max, const uint64_t *words,
		       int nwords)
{
	struct exec_map maps[UNWIND_MAX_MAPS];
	uint64_t found[UNWIND_MAX_INSERT];
	int nmaps, nfound = 0, memfd;
	char path[32];

	if (n < 1 || pid <= 0)
		return n;
	nmaps = maps__read_exec(pid, maps, UNWIND_MAX_MAPS);
	if (!nmaps)
		return n;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (memfd < 0)
		return n;
	for (int i = 0; i < nwords && nfound < UNWIND_MAX_INSERT; i++) {
		uint64_t w = words[i];

		/* the walk picks up from here: nothing was skipped past it */
		if (n > 1 && w == ips[1])
			break;
		if (!w || !maps__contain(maps, nmaps, w) || !code__follows_call(memfd, w))
			continue;
		found[nfound++] = w;
	}
	close(memfd);
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

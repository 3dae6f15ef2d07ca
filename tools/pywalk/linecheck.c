// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Checks userspace/pyline.c against CPython's PyCode_Addr2Line() on the
 * vectors linecheck.py writes: every code unit of a whole stdlib.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtimes/python/pyline.h"

int main(void)
{
	size_t cap = 1 << 20, len;
	char *line = malloc(cap);
	uint8_t *tab = malloc(cap);
	long codes = 0, units = 0, bad = 0;

	if (!line || !tab)
		return 1;
	while (fgets(line, (int)cap, stdin)) {
		char *save = NULL, *hex, *tok;
		int fmt, first;
		long u = 0;

		fmt = atoi(strtok_r(line, " \n", &save));
		first = atoi(strtok_r(NULL, " \n", &save));
		hex = strtok_r(NULL, " \n", &save);
		len = 0;
		for (size_t i = 0; hex && strcmp(hex, "-") && hex[i] && hex[i + 1]; i += 2)
			sscanf(hex + i, "%2hhx", &tab[len++]);
		codes++;
		if (pyline__find(fmt, tab, len, first, -1) != first)
			bad++;
		while ((tok = strtok_r(NULL, " \n", &save))) {
			int want = atoi(tok), got;
			/* 3.8-3.10 count bytes, 3.11+ code units */
			int64_t pos = fmt == PYLINE_LOCATIONS ? u : 2 * u;

			got = pyline__find(fmt, tab, len, first, pos);
			units++;
			if (got != want && bad++ < 5)
				printf("MISMATCH code %ld unit %ld: got %d want %d\n", codes, u,
				       got, want);
			u++;
		}
	}
	printf("code objects=%ld code units=%ld mismatches=%ld\n", codes, units, bad);
	free(line);
	free(tab);
	return bad != 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fuzz target: /proc/PID/maps text (proc/maps.c), as a traced process could shape it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proc/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct proc_maps *m;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	m = proc_maps__parse(text, size);
	if (!m)
		return 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct proc_mapping *found = proc_maps__find(m, m->v[i].start);

		if (found)
			proc_mapping__same(found, &m->v[i]);
		proc_mapping__basename(&m->v[i]);
	}
	proc_maps__find(m, 0);
	proc_maps__find(m, UINT64_MAX);
	proc_maps__put(m);
	return 0;
}

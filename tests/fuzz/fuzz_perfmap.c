// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fuzz target: a JIT's perf map (symbols/perfmap.c), as a traced process could write it. */
#include <stdint.h>
#include <string.h>
#include "symbols/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perf_map *pm = perf_map__new();
	struct frame f;

	if (!pm)
		return 0;
	/* twice: the second read lands on what the first one kept */
	perf_map__parse(pm, (const char *)data, size);
	perf_map__parse(pm, (const char *)data, size / 2);
	for (size_t i = 0; i + 8 <= size && i < 4096; i += 8) {
		uint64_t addr;

		memcpy(&addr, data + i, sizeof(addr));
		memset(&f, 0, sizeof(f));
		perf_map__frame(pm, addr, &f);
		perf_map__frame(pm, addr & 0xffffffffull, &f);
	}
	perf_map__free(pm);
	return 0;
}

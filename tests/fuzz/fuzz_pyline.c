// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fuzz target: CPython line tables read from a target's memory (runtimes/python/pyline.c). */
#include <stdint.h>
#include <string.h>
#include "runtimes/python/pyline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first;
	int64_t pos;

	if (size < 13)
		return 0;
	memcpy(&first, data + 1, sizeof(first));
	memcpy(&pos, data + 5, sizeof(pos));
	for (int fmt = PYLINE_LNOTAB; fmt <= PYLINE_LOCATIONS; fmt++) {
		pyline__find((enum pyline_format)fmt, data + 13, size - 13, first, pos);
		pyline__find((enum pyline_format)fmt, data + 13, size - 13, first,
			     (int64_t)(data[0] % 64));
	}
	return 0;
}

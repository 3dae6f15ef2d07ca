// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fuzz target: symbol names from traced processes' files, as frames show them (demangle.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "symbols/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *name = malloc(size + 3), out[128], tiny[4];

	if (!name)
		return 0;
	/* as it comes, and as a mangled name */
	memcpy(name, data, size);
	name[size] = '\0';
	demangle__display(name, out, sizeof(out));
	demangle__shorten(name, out, sizeof(out));
	demangle__shorten(name, tiny, sizeof(tiny));
	memmove(name + 2, name, size + 1);
	memcpy(name, "_Z", 2);
	demangle__display(name, out, sizeof(out));
	demangle__display(name, tiny, sizeof(tiny));
	free(name);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Fuzz target: /proc/PID/stat text (proc/procs.c), whose comm a traced process names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proc/procs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	uint64_t start, image;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	proc_stat__parse(text, &start, &image);
	free(text);
	return 0;
}

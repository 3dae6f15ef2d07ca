// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fuzz target: the text exposition read back into protobuf (sinks/promproto.c).
 * The text is the registry's own, but its label values carry what traced
 * processes named themselves: any text must give a bounded output, no crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sinks/promproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct pbuf b = { 0 };

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	prom_text__to_proto(text, NULL, &b);
	/* every byte of output comes from a byte of input, plus a few per line */
	if (b.len > 64 * (size + 1) + 4096)
		abort();
	pbuf__free(&b);
	free(text);
	return 0;
}

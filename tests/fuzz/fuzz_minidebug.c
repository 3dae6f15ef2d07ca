// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fuzz target: a traced file's .gnu_debugdata (proc/minidebug.c): the xz
 * stream's footer and index, its blocks, the ELF inside and its symbols.
 * An input that is not xz is compressed first: xz's CRCs turn away nearly
 * every mutated stream, and the ELF inside deserves the mutations too.
 */
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proc/minidebug.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int symbol__visit(const struct elf_symbol *sym, void *ctx)
{
	size_t *n = ctx;

	*n += strlen(sym->name) + (sym->value & 1);
	return *n > (1u << 24);
}

static void minidebug__try(const uint8_t *xz, size_t len)
{
	struct elf_handle h;
	size_t seen = 0;

	if (minidebug__open_xz(xz, len, &h))
		return;
	elf__symbols(&h, SHT_SYMTAB, symbol__visit, &seen);
	elf__symbols(&h, SHT_DYNSYM, symbol__visit, &seen);
	elf__close(&h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
	size_t cap = size + size / 2 + 4096, len = 0;
	uint8_t *xz;

	if (size >= sizeof(magic) && !memcmp(data, magic, sizeof(magic))) {
		minidebug__try(data, size);
		return 0;
	}
	xz = malloc(cap);
	if (xz && lzma_easy_buffer_encode(0, LZMA_CHECK_CRC32, NULL, data, size, xz, &len,
					  cap) == LZMA_OK)
		minidebug__try(xz, len);
	free(xz);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fuzz target: a traced file's .gnu_debugdata (proc/minidebug.c): the xz
 * stream's footer and index, its blocks, the ELF inside and its symbols.
 */
#include <stdint.h>
#include <string.h>
#include "proc/minidebug.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int symbol__visit(const struct elf_symbol *sym, void *ctx)
{
	size_t *n = ctx;

	*n += strlen(sym->name) + (sym->value & 1);
	return *n > (1u << 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_handle h;
	size_t seen = 0;

	if (minidebug__open_xz(data, size, &h))
		return 0;
	elf__symbols(&h, SHT_SYMTAB, symbol__visit, &seen);
	elf__symbols(&h, SHT_DYNSYM, symbol__visit, &seen);
	elf__close(&h);
	return 0;
}

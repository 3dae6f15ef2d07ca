// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fuzz target: an ELF file a traced process maps (proc/elf.c): program headers,
 * symbol tables, notes, relocations, strings, bytes at an address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proc/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int symbol__visit(const struct elf_symbol *sym, void *ctx)
{
	size_t *n = ctx;

	*n += strlen(sym->name) + (sym->value & 1);
	return *n > (1u << 24);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_segment *segs = NULL;
	struct elf_handle h;
	GElf_Rela *relas = NULL;
	uint64_t addrs[4], off, bias;
	size_t nsegs = 0, nrelas = 0, seen = 0;
	char path[256], word[16];
	void *image = malloc(size ? size : 1);

	if (!image)
		return 0;
	memcpy(image, data, size);
	if (elf__open_mem(&h, image, size)) {
		free(image);
		return 0;
	}
	elf__loads(&h, &segs, &nsegs);
	elf__symbol_count(&h, SHT_SYMTAB);
	elf__symbols(&h, SHT_SYMTAB, symbol__visit, &seen);
	elf__symbols(&h, SHT_DYNSYM, symbol__visit, &seen);
	elf__debug_path(&h, path, sizeof(path));
	if (!elf__relas(&h, &relas, &nrelas))
		free(relas);
	elf__find_string(&h, "_json.Encoder", addrs, 4);
	for (size_t i = 0; i < nsegs && i < 8; i++) {
		elf__vaddr_to_offset(&h, segs[i].vaddr + segs[i].filesz / 2, &off);
		elf__read(&h, segs[i].vaddr, word, sizeof(word));
		elf__bias(&h, 0x7f0000000000ull, segs[i].offset, &bias);
	}
	free(segs);
	elf__close(&h);
	free(image);
	return 0;
}

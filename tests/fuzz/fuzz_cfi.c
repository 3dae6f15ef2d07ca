// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Fuzz target: the call-frame information of an ELF file a traced process
 * maps (symbols/cfi.c through proc/elf.c): .eh_frame_hdr, .eh_frame and
 * .debug_frame (also as the file's own debug file), PLT sections, the
 * debug-file notes (build-id, .gnu_debuglink), compressed sections.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "proc/elf.h"
#include "symbols/cfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char id[64];
	struct elf_section sec;
	struct elf_handle h;
	struct cfi_table t;
	char name[256], path[256];
	uint32_t crc;
	void *image = malloc(size ? size : 1);

	if (!image)
		return 0;
	memcpy(image, data, size);
	if (elf__open_mem(&h, image, size)) {
		free(image);
		return 0;
	}
	elf__build_id(&h, id, sizeof(id));
	elf__debug_path(&h, path, sizeof(path));
	elf__debuglink(&h, name, sizeof(name), &crc);
	elf__crc32(&h, &crc);
	elf__section(&h, ".debug_info", &sec);
	if (!cfi__build(&h, &h, &t)) {
		for (uint32_t pc = t.text_lo; pc < t.text_lo + 64 * LW_UW_PAGE_SIZE; pc += 61)
			cfi_table__find(&t, pc);
		cfi_table__find(&t, 0);
		cfi_table__find(&t, UINT32_MAX);
		cfi_table__free(&t);
	}
	elf__close(&h);
	free(image);
	return 0;
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * MiniDebugInfo: the .gnu_debugdata section Fedora's and others' stripped
 * binaries keep, an xz-compressed ELF whose .symtab holds the functions
 * .dynsym leaves out. The section is the traced file's, hence untrusted: the
 * size its xz index claims is checked against the inflation budget of
 * proc/elf.c before anything is inflated, the output may not exceed it, and
 * the decoder's own memory is bounded.
 */
#ifndef LOOPWATCH_PROC_MINIDEBUG_H
#define LOOPWATCH_PROC_MINIDEBUG_H

#include <stddef.h>
#include <stdint.h>
#include "proc/elf.h"

/*
 * The ELF inside h's .gnu_debugdata: 0 with out open (close it with
 * elf__close), -ENOENT when h has none, -E2BIG over the inflation budget,
 * -EINVAL when the section is not one whole xz stream of an ELF file.
 */
int minidebug__open(const struct elf_handle *h, struct elf_handle *out);

/* The same on xz bytes in memory (the fuzz target's and the unit test's door). */
int minidebug__open_xz(const uint8_t *xz, size_t len, struct elf_handle *out);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ELF files of traced processes, through libelf: the only ELF reader. The
 * files are the targets' (a process can map a crafted one), so every size,
 * offset and index is checked before use, and sums against overflow.
 */
#ifndef LOOPWATCH_PROC_ELF_H
#define LOOPWATCH_PROC_ELF_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_handle {
	int fd;			/* -1 when opened on memory or a borrowed fd */
	Elf *elf;
	void *image;		/* malloc'ed image the handle owns (elf__open_image), or NULL */
};

/* 0, or -errno (-ENOEXEC: not ELF) */
int elf__open(struct elf_handle *h, const char *path);
/* on fd, which stays the caller's */
int elf__open_fd(struct elf_handle *h, int fd);
/* on an image in memory (the vDSO), which must outlive the handle */
int elf__open_mem(struct elf_handle *h, void *image, size_t len);
/*
 * On an image inflated outside libelf (.gnu_debugdata), malloc'ed: the
 * handle owns it (freed by elf__close, also on failure) and its len is held
 * against the inflation budget until then (the caller asked
 * elf__inflate_admit before inflating). -E2BIG when the budget has no room.
 */
int elf__open_image(struct elf_handle *h, void *image, size_t len);
void elf__close(struct elf_handle *h);

struct elf_symbol {
	const char *name;	/* NUL-terminated inside the string table, never empty */
	uint64_t value;		/* never 0 */
	uint64_t size;
	unsigned char type;	/* STT_* */
	unsigned char bind;	/* STB_* */
};

/* return nonzero to stop the walk */
typedef int (*elf_symbol_fn)(const struct elf_symbol *sym, void *ctx);

/*
 * The defined symbols of the first section of this type (SHT_SYMTAB or
 * SHT_DYNSYM), in table order. Returns what fn returned to stop, else 0;
 * -ENOENT when there is no such section (or it is empty), -EIO when the
 * table is cut short (fn saw the symbols before the cut).
 */
int elf__symbols(const struct elf_handle *h, unsigned int type, elf_symbol_fn fn, void *ctx);
/* How many entries the first section of this type claims to hold; 0 if none. */
size_t elf__symbol_count(const struct elf_handle *h, unsigned int type);

struct elf_segment {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t memsz;
	uint32_t flags;		/* PF_* */
};

/* The PT_LOAD segments (malloc'ed, *n of them); -errno. */
int elf__loads(const struct elf_handle *h, struct elf_segment **out, size_t *n);
/* link-time address -> file offset, through the PT_LOAD that holds it; -ENOENT */
int elf__vaddr_to_offset(const struct elf_handle *h, uint64_t vaddr, uint64_t *off);
/*
 * len bytes of the loaded image at a link-time address: a PT_LOAD's bytes
 * past p_filesz (.bss) read as 0; -ENOENT outside the file's loads.
 */
int elf__read(const struct elf_handle *h, uint64_t vaddr, void *buf, size_t len);
/* The PT_TLS segment: link address, memsz, alignment (a power of two); -ENOENT */
int elf__tls(const struct elf_handle *h, uint64_t *vaddr, uint64_t *memsz, uint64_t *align);
/*
 * The load bias of a mapping of this file (start, file offset): load
 * address - link address, from the PT_LOAD that holds the offset.
 */
int elf__bias(const struct elf_handle *h, uint64_t map_start, uint64_t map_offset,
	      uint64_t *bias);
/* The same from the PT_LOAD segments alone (elf__loads), without the file. */
int elf_segments__bias(const struct elf_segment *segs, size_t n, uint64_t map_start,
		       uint64_t map_offset, uint64_t *bias);
/* The separate debug file by build-id (/usr/lib/debug/.build-id/ab/cdef….debug); -ENOENT */
int elf__debug_path(const struct elf_handle *h, char *buf, size_t len);
/* The GNU build-id: its length (at most max bytes copied to id), or -ENOENT. */
int elf__build_id(const struct elf_handle *h, unsigned char *id, size_t max);
/* .gnu_debuglink: the debug file's base name and the CRC-32 of its bytes; -ENOENT */
int elf__debuglink(const struct elf_handle *h, char *name, size_t len, uint32_t *crc);
/* The CRC-32 of the whole file (as .gnu_debuglink holds it); -errno */
int elf__crc32(const struct elf_handle *h, uint32_t *crc);

struct elf_section {
	Elf_Data *data;		/* d_buf/d_size: the bytes, decompressed (SHF_COMPRESSED) */
	uint64_t addr;		/* sh_addr: its link-time address, 0 when not loaded */
	uint64_t size;		/* sh_size as the file says (compressed sections: less) */
};

/*
 * The first section called name: its bytes, decompressed when the file
 * compresses them (debug files do); -ENOENT when absent or empty, -E2BIG when
 * the file is over its inflation budget (elf__inflate_reserve), -EIO when
 * unreadable. The bytes live as long as the handle.
 */
int elf__section(const struct elf_handle *h, const char *name, struct elf_section *out);
/*
 * Before anything of h is inflated (elf__section; libdw, which inflates every
 * compressed .debug_* section it opens): what all its compressed sections
 * claim, reserved against 256 MiB a file and 512 MiB for all open handles
 * until elf__close. -E2BIG over it (said once on stderr, counted).
 */
int elf__inflate_reserve(const struct elf_handle *h);
/*
 * Whether claims more bytes may be inflated now (elf__inflate_reserve's
 * budget), without reserving them: -E2BIG over it (said once, counted).
 */
int elf__inflate_admit(uint64_t claims);
/* How many files were refused inflation so far. */
unsigned long elf__inflate_refused(void);
/* The RELA relocations of every SHT_RELA section (malloc'ed); -errno. */
int elf__relas(const struct elf_handle *h, GElf_Rela **out, size_t *n);
/* Link-time addresses of up to max NUL-terminated copies of s in non-exec loads. */
int elf__find_string(const struct elf_handle *h, const char *s, uint64_t *out, int max);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfsym.h"

const char *elfsym_how__name(enum elfsym_how how)
{
	switch (how) {
	case ELFSYM_SYMTAB:
		return "symtab";
	case ELFSYM_DYNSYM:
		return "dynsym";
	case ELFSYM_DEBUGFILE:
		return "debug file (build-id)";
	case ELFSYM_SPEC_SLOT:
		return "PyType_Spec slot (stripped)";
	}
	return "?";
}

struct elf_handle {
	int fd;
	Elf *elf;
};

static int elf__open(const char *path, struct elf_handle *h)
{
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	h->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (h->fd < 0)
		return -errno;
	h->elf = elf_begin(h->fd, ELF_C_READ_MMAP, NULL);
	if (!h->elf || elf_kind(h->elf) != ELF_K_ELF) {
		if (h->elf)
			elf_end(h->elf);
		close(h->fd);
		return -ENOEXEC;
	}
	return 0;
}

static void elf__close(struct elf_handle *h)
{
	elf_end(h->elf);
	close(h->fd);
}

/* vaddr -> file offset through the PT_LOAD segment that holds it */
static int vaddr__to_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* A symbol's base name matches with or without a version suffix (@@JSONC_0.14). */
static bool symbol__matches(const char *sym, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(sym, name, n) && (sym[n] == '\0' || sym[n] == '@');
}

static int symtab__find(Elf *elf, Elf64_Word type, const char *name, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value)
				continue;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && symbol__matches(s, name)) {
				*vaddr = sym.st_value;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* /usr/lib/debug/.build-id/ab/cdef….debug for the file's NT_GNU_BUILD_ID */
static int build_id__debug_path(Elf *elf, char *buf, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *id = (const unsigned char *)data->d_buf + desc_off;
			size_t used;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_descsz < 2 || nh.n_descsz > 64)
				continue;
			used = (size_t)snprintf(buf, len, "/usr/lib/debug/.build-id/%02x/", id[0]);
			for (size_t i = 1; i < nh.n_descsz && used < len; i++)
				used += (size_t)snprintf(buf + used, len - used, "%02x", id[i]);
			if (used < len)
				snprintf(buf + used, len - used, ".debug");
			return 0;
		}
	}
	return -ENOENT;
}

int elfsym__find(const char *path, const char *name, uint64_t *file_off, enum elfsym_how *how)
{
	struct elf_handle h, dbg;
	char debug_path[256];
	uint64_t vaddr;
	int err;

	err = elf__open(path, &h);
	if (err)
		return err;
	if (!symtab__find(h.elf, SHT_SYMTAB, name, &vaddr)) {
		*how = ELFSYM_SYMTAB;
	} else if (!symtab__find(h.elf, SHT_DYNSYM, name, &vaddr)) {
		*how = ELFSYM_DYNSYM;
	} else if (!build_id__debug_path(h.elf, debug_path, sizeof(debug_path)) &&
		   !elf__open(debug_path, &dbg)) {
		/* the debug file shares the addresses of the stripped one */
		err = symtab__find(dbg.elf, SHT_SYMTAB, name, &vaddr);
		elf__close(&dbg);
		if (err)
			goto out;
		*how = ELFSYM_DEBUGFILE;
	} else {
		err = -ENOENT;
		goto out;
	}
	err = vaddr__to_offset(h.elf, vaddr, file_off);
out:
	elf__close(&h);
	return err;
}

/* Pointers in the image: relocations (PIC .so), else the stored word. */
struct image {
	Elf *elf;
	GElf_Rela *relas;
	size_t nrelas;
};

static int image__read(Elf *elf, uint64_t vaddr, void *buf, size_t len)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -ENOEXEC;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		size_t size;
		char *raw;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* every sum checked against overflow: the file is the target's */
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr > ph.p_filesz ||
		    len > ph.p_filesz - (vaddr - ph.p_vaddr))
			continue;
		raw = elf_rawfile(elf, &size);
		if (!raw || ph.p_offset > size || vaddr - ph.p_vaddr > size - ph.p_offset ||
		    len > size - ph.p_offset - (vaddr - ph.p_vaddr))
			return -ENOEXEC;
		memcpy(buf, raw + ph.p_offset + (vaddr - ph.p_vaddr), len);
		return 0;
	}
	return -ENOENT;
}

/* The pointer stored at vaddr: a RELATIVE relocation's addend, or the raw word. */
static int image__pointer(const struct image *im, uint64_t vaddr, uint64_t *ptr)
{
	for (size_t i = 0; i < im->nrelas; i++) {
		if (im->relas[i].r_offset == vaddr &&
		    GELF_R_TYPE(im->relas[i].r_info) == R_X86_64_RELATIVE) {
			*ptr = (uint64_t)im->relas[i].r_addend;
			return 0;
		}
	}
	return image__read(im->elf, vaddr, ptr, sizeof(*ptr));
}

static int image__load_relas(struct image *im)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(im->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;
		GElf_Rela *v;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		if (!data || !n)
			continue;
		v = realloc(im->relas, (im->nrelas + n) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		im->relas = v;
		for (size_t i = 0; i < n; i++) {
			if (gelf_getrela(data, (int)i, &im->relas[im->nrelas]))
				im->nrelas++;
		}
	}
	return 0;
}

/* vaddrs of every NUL-terminated copy of s in the file's loaded, non-exec data */
static int image__find_string(Elf *elf, const char *s, uint64_t *out, int max)
{
	size_t n, size, len = strlen(s) + 1;
	char *raw = elf_rawfile(elf, &size);
	int found = 0;

	if (!raw || elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n && found < max; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || (ph.p_flags & PF_X) ||
		    ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		for (uint64_t o = 0; o + len <= ph.p_filesz && found < max; o++) {
			const char *p = raw + ph.p_offset + o;

			/* the start of a string, or a tail-merged suffix of one */
			if (*p == *s && !memcmp(p, s, len))
				out[found++] = ph.p_vaddr + o;
		}
	}
	return found;
}

/*
 * PyType_Spec {name@0, basicsize@8, itemsize@12, flags@16, slots@24} and
 * PyType_Slot {int slot@0, void *pfunc@8}, ending with slot 0: the same on
 * every CPython 3.x on x86-64 (Include/object.h).
 */
#define SPEC_SLOTS_OFF 24
#define SLOT_SIZE 16
#define SLOT_MAX 64

static int spec__slot(const struct image *im, uint64_t spec, int slot_id, uint64_t *func)
{
	uint64_t slots;

	if (image__pointer(im, spec + SPEC_SLOTS_OFF, &slots) || !slots)
		return -ENOENT;
	for (int i = 0; i < SLOT_MAX; i++) {
		int32_t id;

		if (image__read(im->elf, slots + (uint64_t)i * SLOT_SIZE, &id, sizeof(id)) || !id)
			return -ENOENT;
		if (id == slot_id)
			return image__pointer(im, slots + (uint64_t)i * SLOT_SIZE + 8, func);
	}
	return -ENOENT;
}

int elfsym__find_spec_slot(const char *path, const char *type_name, int slot_id,
			   uint64_t *file_off)
{
	struct image im = {};
	struct elf_handle h;
	uint64_t names[8], func = 0;
	int nnames, err = -ENOENT;

	if (elf__open(path, &h))
		return -ENOENT;
	im.elf = h.elf;
	if (image__load_relas(&im))
		goto out;
	nnames = image__find_string(h.elf, type_name, names, 8);
	/* a spec is a word-aligned slot that points at the type's name */
	for (size_t r = 0; r < im.nrelas && err; r++) {
		uint64_t target = (uint64_t)im.relas[r].r_addend;

		if (GELF_R_TYPE(im.relas[r].r_info) != R_X86_64_RELATIVE)
			continue;
		for (int i = 0; i < nnames && err; i++) {
			if (target == names[i] && !spec__slot(&im, im.relas[r].r_offset, slot_id,
							      &func) && func)
				err = vaddr__to_offset(h.elf, func, file_off);
		}
	}
out:
	free(im.relas);
	elf__close(&h);
	return err;
}

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
#include "proc/debugfile.h"
#include "proc/elf.h"
#include "tracker/elfsym.h"

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

/* A symbol's base name matches with or without a version suffix (@@JSONC_0.14). */
static bool symbol__matches(const char *sym, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(sym, name, n) && (sym[n] == '\0' || sym[n] == '@');
}

struct func_query {
	const char *name;
	uint64_t vaddr;
};

static int func__match(const struct elf_symbol *sym, void *ctx)
{
	struct func_query *q = ctx;

	if (sym->type != STT_FUNC || !symbol__matches(sym->name, q->name))
		return 0;
	q->vaddr = sym->value;
	return 1;
}

static int symtab__find(const struct elf_handle *h, unsigned int type, const char *name,
			uint64_t *vaddr)
{
	struct func_query q = { name, 0 };

	if (elf__symbols(h, type, func__match, &q) != 1)
		return -ENOENT;
	*vaddr = q.vaddr;
	return 0;
}

int elfsym__find(const char *path, const char *name, uint64_t *file_off, enum elfsym_how *how)
{
	struct elf_handle h, dbg;
	uint64_t vaddr;
	int err;

	err = elf__open(&h, path);
	if (err)
		return err;
	if (!symtab__find(&h, SHT_SYMTAB, name, &vaddr)) {
		*how = ELFSYM_SYMTAB;
	} else if (!symtab__find(&h, SHT_DYNSYM, name, &vaddr)) {
		*how = ELFSYM_DYNSYM;
	} else if (!debugfile__open(NULL, path, &h, &dbg)) {
		/* the debug file shares the addresses of the stripped one */
		err = symtab__find(&dbg, SHT_SYMTAB, name, &vaddr);
		elf__close(&dbg);
		if (err)
			goto out;
		*how = ELFSYM_DEBUGFILE;
	} else {
		err = -ENOENT;
		goto out;
	}
	err = elf__vaddr_to_offset(&h, vaddr, file_off);
out:
	elf__close(&h);
	return err;
}

struct each_query {
	const char *const *names;
	size_t n;
	uint64_t *vaddrs;
	bool *found;
	int nfound;
};

static int each__match(const struct elf_symbol *sym, void *ctx)
{
	struct each_query *q = ctx;

	if (sym->type != STT_FUNC)
		return 0;
	for (size_t i = 0; i < q->n; i++) {
		if (q->found[i] || q->names[i][0] != sym->name[0] ||
		    !symbol__matches(sym->name, q->names[i]))
			continue;
		q->found[i] = true;
		q->vaddrs[i] = sym->value;
		q->nfound++;
	}
	return 0;
}

int elfsym__find_each(const char *path, const char *const *names, size_t n, uint64_t *offs,
		      bool *found)
{
	struct each_query q = { names, n, offs, found, 0 };
	struct elf_handle h;
	int err = elf__open(&h, path);

	if (err)
		return err;
	memset(found, 0, n * sizeof(*found));
	elf__symbols(&h, SHT_SYMTAB, each__match, &q);
	elf__symbols(&h, SHT_DYNSYM, each__match, &q);
	/* link-time addresses to the file offsets a uprobe wants */
	for (size_t i = 0; i < n; i++) {
		if (found[i] && elf__vaddr_to_offset(&h, offs[i], &offs[i])) {
			found[i] = false;
			q.nfound--;
		}
	}
	elf__close(&h);
	return q.nfound;
}

/* Pointers in the image: relocations (PIC .so), else the stored word. */
struct image {
	const struct elf_handle *h;
	GElf_Rela *relas;
	size_t nrelas;
};

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
	return elf__read(im->h, vaddr, ptr, sizeof(*ptr));
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

		if (elf__read(im->h, slots + (uint64_t)i * SLOT_SIZE, &id, sizeof(id)) || !id)
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

	if (elf__open(&h, path))
		return -ENOENT;
	im.h = &h;
	if (elf__relas(&h, &im.relas, &im.nrelas))
		goto out;
	nnames = elf__find_string(&h, type_name, names, 8);
	/* a spec is a word-aligned slot that points at the type's name */
	for (size_t r = 0; r < im.nrelas && err; r++) {
		uint64_t target = (uint64_t)im.relas[r].r_addend;

		if (GELF_R_TYPE(im.relas[r].r_info) != R_X86_64_RELATIVE)
			continue;
		for (int i = 0; i < nnames && err; i++) {
			if (target == names[i] && !spec__slot(&im, im.relas[r].r_offset, slot_id,
							      &func) && func)
				err = elf__vaddr_to_offset(&h, func, file_off);
		}
	}
out:
	free(im.relas);
	elf__close(&h);
	return err;
}

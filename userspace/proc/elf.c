// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "proc/elf.h"

/* a file with more program headers than this is not one anybody runs */
#define ELF_MAX_PHDRS 65535
/*
 * What a file's compressed sections may inflate to, all of them together
 * (.debug_frame of big programs: tens of MB; libdw inflates every .debug_*
 * section it opens), and what the open handles may hold inflated at once.
 * The sizes the sections claim are what libelf allocates: a few KB may claim
 * gigabytes, so the claims are summed before anything is inflated.
 */
#define ELF_MAX_INFLATED_FILE (256ull << 20)
#define ELF_MAX_INFLATED_TOTAL (512ull << 20)
#define ELF_MAX_INFLATING 16

/* The handles that hold inflated sections, and how much each may hold. */
static struct {
	Elf *elf;
	uint64_t bytes;
} inflating[ELF_MAX_INFLATING];
static uint64_t inflated_total;
static unsigned long inflate_refused;

static int elf__begin(struct elf_handle *h, Elf *elf)
{
	if (!elf)
		return -ENOEXEC;
	if (elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return -ENOEXEC;
	}
	h->elf = elf;
	return 0;
}

int elf__open_fd(struct elf_handle *h, int fd)
{
	h->fd = -1;
	h->elf = NULL;
	h->image = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	return elf__begin(h, elf_begin(fd, ELF_C_READ_MMAP, NULL));
}

int elf__open(struct elf_handle *h, const char *path)
{
	/* a FIFO would block the open, a device have side effects: regular files only */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), err;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	err = elf__open_fd(h, fd);
	if (err) {
		close(fd);
		return err;
	}
	h->fd = fd;
	return 0;
}

int elf__open_mem(struct elf_handle *h, void *image, size_t len)
{
	h->fd = -1;
	h->elf = NULL;
	h->image = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	return elf__begin(h, elf_memory(image, len));
}

/* A free slot of the inflating table for claims more bytes, or -E2BIG (said once). */
static int inflating__slot(uint64_t claims)
{
	int free_slot = -1;

	for (int i = 0; i < ELF_MAX_INFLATING && free_slot < 0; i++) {
		if (!inflating[i].elf)
			free_slot = i;
	}
	if (claims > ELF_MAX_INFLATED_FILE || claims > ELF_MAX_INFLATED_TOTAL - inflated_total ||
	    free_slot < 0) {
		if (!inflate_refused++)
			fprintf(stderr, "loopwatch: a traced file's compressed sections claim %llu "
				"MiB, over the budget (%llu MiB a file, %llu MiB at once): left "
				"compressed, that file's CFI or names may be missing; said once\n",
				(unsigned long long)(claims >> 20),
				ELF_MAX_INFLATED_FILE >> 20, ELF_MAX_INFLATED_TOTAL >> 20);
		return -E2BIG;
	}
	return free_slot;
}

static void inflating__hold(int slot, Elf *elf, uint64_t bytes)
{
	inflating[slot].elf = elf;
	inflating[slot].bytes = bytes;
	inflated_total += bytes;
}

int elf__inflate_admit(uint64_t claims)
{
	int slot = inflating__slot(claims);

	return slot < 0 ? slot : 0;
}

int elf__open_image(struct elf_handle *h, void *image, size_t len)
{
	int slot = inflating__slot(len), err;

	h->fd = -1;
	h->elf = NULL;
	h->image = NULL;
	if (slot < 0) {
		free(image);
		return slot;
	}
	err = elf__open_mem(h, image, len);
	if (err) {
		free(image);
		return err;
	}
	h->image = image;
	inflating__hold(slot, h->elf, len);
	return 0;
}

unsigned long elf__inflate_refused(void)
{
	return inflate_refused;
}

/* The handle's reservation given back (its sections go with it). */
static void inflating__release(Elf *elf)
{
	for (int i = 0; i < ELF_MAX_INFLATING; i++) {
		if (inflating[i].elf == elf) {
			inflated_total -= inflating[i].bytes;
			inflating[i].elf = NULL;
			inflating[i].bytes = 0;
		}
	}
}

void elf__close(struct elf_handle *h)
{
	if (h->elf) {
		inflating__release(h->elf);
		elf_end(h->elf);
	}
	if (h->fd >= 0)
		close(h->fd);
	free(h->image);
	h->elf = NULL;
	h->image = NULL;
	h->fd = -1;
}

static Elf_Scn *section__first(Elf *elf, unsigned int type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	}
	return NULL;
}

int elf__symbols(const struct elf_handle *h, unsigned int type, elf_symbol_fn fn, void *ctx)
{
	Elf_Data *data, *strdata;
	Elf_Scn *scn, *strscn;
	GElf_Shdr sh, strsh;
	struct elf_symbol s;
	const char *strtab;
	size_t count, entsize, strsize;
	GElf_Sym sym;
	int ret;

	scn = section__first(h->elf, type, &sh);
	if (!scn || sh.sh_type == SHT_NOBITS)
		return -ENOENT;
	data = elf_getdata(scn, NULL);
	strscn = elf_getscn(h->elf, sh.sh_link);
	if (!data || !data->d_buf || !strscn || !gelf_getshdr(strscn, &strsh) ||
	    strsh.sh_type != SHT_STRTAB)
		return -ENOENT;
	strdata = elf_getdata(strscn, NULL);
	if (!strdata || !strdata->d_buf || !strdata->d_size)
		return -ENOENT;
	strtab = strdata->d_buf;
	strsize = strdata->d_size;
	entsize = gelf_fsize(h->elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return -ENOENT;
	count = data->d_size / entsize;
	if (count < 2)
		return -ENOENT;
	for (size_t i = 1; i < count; i++) {
		const char *nul;

		if (!gelf_getsym(data, (int)i, &sym))
			return -EIO;
		if (sym.st_shndx == SHN_UNDEF ||
		    (sym.st_shndx >= SHN_LORESERVE && sym.st_shndx != SHN_XINDEX))
			continue;
		if (!sym.st_name || sym.st_name >= strsize || !sym.st_value)
			continue;
		s.name = strtab + sym.st_name;
		nul = memchr(s.name, '\0', strsize - sym.st_name);
		if (!nul || nul == s.name)
			continue;
		s.value = sym.st_value;
		s.size = sym.st_size;
		s.type = GELF_ST_TYPE(sym.st_info);
		s.bind = GELF_ST_BIND(sym.st_info);
		ret = fn(&s, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

size_t elf__symbol_count(const struct elf_handle *h, unsigned int type)
{
	GElf_Shdr sh;
	size_t entsize = gelf_fsize(h->elf, ELF_T_SYM, 1, EV_CURRENT);

	if (!section__first(h->elf, type, &sh) || sh.sh_type == SHT_NOBITS || !entsize)
		return 0;
	return sh.sh_size / entsize;
}

int elf__loads(const struct elf_handle *h, struct elf_segment **out, size_t *n)
{
	struct elf_segment *v;
	size_t nph = 0;
	GElf_Phdr ph;

	*out = NULL;
	*n = 0;
	if (elf_getphdrnum(h->elf, &nph))
		return -ENOEXEC;
	if (!nph)
		return 0;
	if (nph > ELF_MAX_PHDRS)
		nph = ELF_MAX_PHDRS;
	v = calloc(nph, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(h->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		v[(*n)++] = (struct elf_segment){
			.offset = ph.p_offset,
			.vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
			.memsz = ph.p_memsz > ph.p_filesz ? ph.p_memsz : ph.p_filesz,
			.flags = ph.p_flags,
		};
	}
	*out = v;
	return 0;
}

/* The i-th PT_LOAD header, skipping others; false past the last. */
static bool load__next(Elf *elf, size_t *i, size_t nph, GElf_Phdr *ph)
{
	for (; *i < nph; (*i)++) {
		if (gelf_getphdr(elf, (int)*i, ph) && ph->p_type == PT_LOAD) {
			(*i)++;
			return true;
		}
	}
	return false;
}

int elf__vaddr_to_offset(const struct elf_handle *h, uint64_t vaddr, uint64_t *off)
{
	size_t nph, i = 0;
	GElf_Phdr ph;

	if (elf_getphdrnum(h->elf, &nph))
		return -ENOEXEC;
	while (load__next(h->elf, &i, nph, &ph)) {
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

int elf__read(const struct elf_handle *h, uint64_t vaddr, void *buf, size_t len)
{
	size_t nph, i = 0, size, infile;
	uint64_t rel;
	GElf_Phdr ph;
	char *raw;

	if (elf_getphdrnum(h->elf, &nph))
		return -ENOEXEC;
	while (load__next(h->elf, &i, nph, &ph)) {
		uint64_t memsz = ph.p_memsz > ph.p_filesz ? ph.p_memsz : ph.p_filesz;

		/* every sum checked against overflow: the file is the target's */
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr > memsz ||
		    len > memsz - (vaddr - ph.p_vaddr))
			continue;
		rel = vaddr - ph.p_vaddr;
		infile = rel >= ph.p_filesz ? 0 : ph.p_filesz - rel < len ? ph.p_filesz - rel : len;
		raw = elf_rawfile(h->elf, &size);
		if (!raw || ph.p_offset > size || rel > size - ph.p_offset ||
		    infile > size - ph.p_offset - rel)
			return -ENOEXEC;
		/* past p_filesz is .bss: zeros, as the loader maps it */
		memset(buf, 0, len);
		memcpy(buf, raw + ph.p_offset + rel, infile);
		return 0;
	}
	return -ENOENT;
}

int elf__tls(const struct elf_handle *h, uint64_t *vaddr, uint64_t *memsz, uint64_t *align)
{
	size_t nph;
	GElf_Phdr ph;

	if (elf_getphdrnum(h->elf, &nph))
		return -ENOEXEC;
	for (size_t i = 0; i < nph && i < ELF_MAX_PHDRS; i++) {
		if (!gelf_getphdr(h->elf, (int)i, &ph) || ph.p_type != PT_TLS)
			continue;
		*vaddr = ph.p_vaddr;
		*memsz = ph.p_memsz;
		*align = ph.p_align ? ph.p_align : 1;
		/* a power of two, or the TLS offset rule makes no sense */
		if (*align & (*align - 1))
			return -ENOEXEC;
		return 0;
	}
	return -ENOENT;
}

/*
 * The PT_LOAD that holds the mapping's file offset says where that offset
 * was linked: bias = start - offset - (p_vaddr - p_offset). 0 for a non-PIE
 * executable, the load base for a shared library.
 */
int elf_segments__bias(const struct elf_segment *segs, size_t n, uint64_t map_start,
		       uint64_t map_offset, uint64_t *bias)
{
	for (size_t i = 0; i < n; i++) {
		const struct elf_segment *s = &segs[i];

		if (map_offset < (s->offset & ~0xfffull) || map_offset >= s->offset + s->filesz)
			continue;
		*bias = map_start - map_offset - (s->vaddr - s->offset);
		return 0;
	}
	return -ENOENT;
}

int elf__bias(const struct elf_handle *h, uint64_t map_start, uint64_t map_offset,
	      uint64_t *bias)
{
	struct elf_segment *segs;
	size_t n;
	int err = elf__loads(h, &segs, &n);

	if (err)
		return err;
	err = elf_segments__bias(segs, n, map_start, map_offset, bias);
	free(segs);
	return err;
}

int elf__build_id(const struct elf_handle *h, unsigned char *id, size_t max)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(h->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_descsz < 2 || nh.n_descsz > 64 ||
			    desc_off > data->d_size || nh.n_descsz > data->d_size - desc_off)
				continue;
			memcpy(id, (const unsigned char *)data->d_buf + desc_off,
			       nh.n_descsz < max ? nh.n_descsz : max);
			return (int)nh.n_descsz;
		}
	}
	return -ENOENT;
}

int elf__debug_path(const struct elf_handle *h, char *buf, size_t len)
{
	unsigned char id[64];
	int n = elf__build_id(h, id, sizeof(id));
	size_t used;

	if (n < 2 || !len)
		return -ENOENT;
	used = (size_t)snprintf(buf, len, "/usr/lib/debug/.build-id/%02x/", id[0]);
	for (int i = 1; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%02x", id[i]);
	if (used < len)
		snprintf(buf + used, len - used, ".debug");
	return used < len ? 0 : -ENAMETOOLONG;
}

/* The size a GNU-style .zdebug section claims: "ZLIB", then 8 bytes big-endian. */
static uint64_t zdebug__claim(Elf_Scn *scn)
{
	Elf_Data *raw = elf_rawdata(scn, NULL);
	const unsigned char *b;
	uint64_t size = 0;

	if (!raw || !raw->d_buf || raw->d_size < 12 || memcmp(raw->d_buf, "ZLIB", 4))
		return 0;
	b = (const unsigned char *)raw->d_buf + 4;
	for (int i = 0; i < 8; i++)
		size = size << 8 | b[i];
	return size;
}

/* What all of the file's compressed sections claim to inflate to, saturated at UINT64_MAX. */
static uint64_t elf__inflate_claims(const struct elf_handle *h)
{
	Elf_Scn *scn = NULL;
	uint64_t sum = 0, claim;
	size_t shstrndx;

	if (elf_getshdrstrndx(h->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(h->elf, scn))) {
		const char *n;
		GElf_Shdr sh;
		GElf_Chdr ch;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		claim = 0;
		if (sh.sh_flags & SHF_COMPRESSED)
			claim = gelf_getchdr(scn, &ch) ? ch.ch_size : UINT64_MAX;
		else if ((n = elf_strptr(h->elf, shstrndx, sh.sh_name)) && !strncmp(n, ".zdebug", 7))
			claim = zdebug__claim(scn);
		sum = claim > UINT64_MAX - sum ? UINT64_MAX : sum + claim;
	}
	return sum;
}

int elf__inflate_reserve(const struct elf_handle *h)
{
	uint64_t claims;
	int slot;

	for (int i = 0; i < ELF_MAX_INFLATING; i++) {
		if (inflating[i].elf == h->elf)
			return 0;
	}
	claims = elf__inflate_claims(h);
	slot = inflating__slot(claims);
	if (slot < 0)
		return slot;
	inflating__hold(slot, h->elf, claims);
	return 0;
}

int elf__section(const struct elf_handle *h, const char *name, struct elf_section *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(h->elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(h->elf, scn))) {
		const char *n;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(h->elf, shstrndx, sh.sh_name)) ||
		    strcmp(n, name))
			continue;
		if (sh.sh_type == SHT_NOBITS || !sh.sh_size)
			return -ENOENT;
		if (sh.sh_flags & SHF_COMPRESSED) {
			int err = elf__inflate_reserve(h);

			if (err)
				return err;
			/* libelf inflates it in memory; the file is not touched */
			if (elf_compress(scn, 0, 0) < 0)
				return -EIO;
		}
		out->data = elf_getdata(scn, NULL);
		if (!out->data || !out->data->d_buf || !out->data->d_size)
			return -EIO;
		out->addr = sh.sh_addr;
		out->size = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

int elf__debuglink(const struct elf_handle *h, char *name, size_t len, uint32_t *crc)
{
	struct elf_section sec;
	const char *p;
	size_t n, at;

	if (elf__section(h, ".gnu_debuglink", &sec))
		return -ENOENT;
	/* the name, NUL-padded to 4 bytes, then the CRC-32 */
	p = sec.data->d_buf;
	n = strnlen(p, sec.data->d_size);
	at = (n + 4) & ~(size_t)3;
	if (!n || n >= len || at + 4 > sec.data->d_size || memchr(p, '/', n))
		return -ENOENT;
	memcpy(name, p, n);
	name[n] = '\0';
	memcpy(crc, p + at, sizeof(*crc));
	return 0;
}

int elf__crc32(const struct elf_handle *h, uint32_t *crc)
{
	size_t size, chunk;
	char *raw = elf_rawfile(h->elf, &size);
	uLong c = crc32(0L, Z_NULL, 0);

	if (!raw)
		return -EIO;
	/* zlib takes lengths in uInt */
	for (size_t off = 0; off < size; off += chunk) {
		chunk = size - off < (1u << 30) ? size - off : (1u << 30);
		c = crc32(c, (const Bytef *)raw + off, (uInt)chunk);
	}
	*crc = (uint32_t)c;
	return 0;
}

int elf__relas(const struct elf_handle *h, GElf_Rela **out, size_t *nout)
{
	GElf_Rela *relas = NULL, *v;
	Elf_Scn *scn = NULL;
	size_t nrelas = 0;

	while ((scn = elf_nextscn(h->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		n = sh.sh_size / sh.sh_entsize;
		if (!data || !n)
			continue;
		v = realloc(relas, (nrelas + n) * sizeof(*v));
		if (!v) {
			free(relas);
			return -ENOMEM;
		}
		relas = v;
		for (size_t i = 0; i < n; i++) {
			if (gelf_getrela(data, (int)i, &relas[nrelas]))
				nrelas++;
		}
	}
	*out = relas;
	*nout = nrelas;
	return 0;
}

int elf__find_string(const struct elf_handle *h, const char *s, uint64_t *out, int max)
{
	size_t n, size, len = strlen(s) + 1, i = 0;
	char *raw = elf_rawfile(h->elf, &size);
	GElf_Phdr ph;
	int found = 0;

	if (!raw || elf_getphdrnum(h->elf, &n))
		return 0;
	while (found < max && load__next(h->elf, &i, n, &ph)) {
		if ((ph.p_flags & PF_X) || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
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

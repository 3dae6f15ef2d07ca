// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "proc/debugfile.h"
#include "proc/procs.h"

#define DEBUG_ROOT "/usr/lib/debug"
/*
 * Checking a debuglink CRC reads the whole file, on the collection path (2 GiB
 * took 7 s here): not past this. A debug file with a build-id is matched by
 * it instead, whatever its size.
 */
#define MAX_DEBUG_CRC_BYTES (256ull << 20)
/* files whose CRC was read, kept: many binaries may link one debug file */
#define CRC_CACHE 32

static struct crc_seen {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	uint32_t crc;
	bool ok;
} crcs[CRC_CACHE];
static unsigned int crcs_next;

/* The CRC-32 of the debug file open in h (st its stat), read once per file version. */
static bool debug__crc32(const struct elf_handle *h, const struct stat *st, uint32_t *crc)
{
	struct crc_seen *c;

	for (int i = 0; i < CRC_CACHE; i++) {
		c = &crcs[i];
		if (c->ino == st->st_ino && c->dev == st->st_dev && c->size == st->st_size &&
		    c->mtime.tv_sec == st->st_mtim.tv_sec && c->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			*crc = c->crc;
			return c->ok;
		}
	}
	c = &crcs[crcs_next++ % CRC_CACHE];
	c->dev = st->st_dev;
	c->ino = st->st_ino;
	c->size = st->st_size;
	c->mtime = st->st_mtim;
	c->ok = (uint64_t)st->st_size <= MAX_DEBUG_CRC_BYTES && !elf__crc32(h, &c->crc);
	*crc = c->crc;
	return c->ok;
}

/* A regular file by path: inside p's root when p is given, else in ours. */
static int debug__open_path(struct proc *p, const char *path, struct stat *st)
{
	if (p)
		return proc__open_path(p, path, st);
	if (strlen(path) >= PATH_MAX)
		return -1;
	return fd__reopen_regular(open(path, O_PATH | O_CLOEXEC), st);
}

/* The handle on fd, which it then owns; false (fd closed) when no ELF. */
static bool debug__adopt(int fd, struct elf_handle *out)
{
	if (fd < 0)
		return false;
	if (elf__open_fd(out, fd)) {
		close(fd);
		return false;
	}
	out->fd = fd;
	return true;
}

static bool debug__by_build_id(struct proc *p, const struct elf_handle *h, struct elf_handle *out)
{
	unsigned char want[64], got[64];
	int nwant = elf__build_id(h, want, sizeof(want));
	char path[256];
	struct stat st;

	if (nwant < 2 || elf__debug_path(h, path, sizeof(path)))
		return false;
	if (!debug__adopt(debug__open_path(p, path, &st), out))
		return false;
	if (elf__build_id(out, got, sizeof(got)) == nwant && !memcmp(want, got, (size_t)nwant))
		return true;
	elf__close(out);
	return false;
}

/*
 * Whether out is h's debug file: by their build-ids when both have one (as
 * objcopy --only-keep-debug keeps it), else by the CRC-32 the link holds.
 */
static bool debug__same(const struct elf_handle *h, const struct elf_handle *out,
			const struct stat *st, uint32_t want)
{
	unsigned char a[64], b[64];
	int na = elf__build_id(h, a, sizeof(a)), nb = elf__build_id(out, b, sizeof(b));
	uint32_t got;

	if (na >= 2 && nb >= 2)
		return na == nb && !memcmp(a, b, (size_t)na);
	return debug__crc32(out, st, &got) && got == want;
}

/* Where gdb looks for a .gnu_debuglink name, for the file at path. */
static bool debug__by_link(struct proc *p, const char *path, const struct elf_handle *h,
			   struct elf_handle *out)
{
	char name[NAME_MAX + 1], dir[PATH_MAX], cand[2 * PATH_MAX];
	const char *slash;
	uint32_t want;
	struct stat st;

	if (!path || elf__debuglink(h, name, sizeof(name), &want))
		return false;
	slash = strrchr(path, '/');
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return false;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	for (int i = 0; i < 3; i++) {
		const char *fmt = i == 0 ? "%s/%s" : i == 1 ? "%s/.debug/%s" : DEBUG_ROOT "%s/%s";

		snprintf(cand, sizeof(cand), fmt, dir, name);
		/* the file itself is no debug file of its own */
		if (!strcmp(cand, path))
			continue;
		if (!debug__adopt(debug__open_path(p, cand, &st), out))
			continue;
		if (debug__same(h, out, &st, want))
			return true;
		elf__close(out);
	}
	return false;
}

int debugfile__open(struct proc *p, const char *path, const struct elf_handle *h,
		    struct elf_handle *out)
{
	/* the target's root first; then ours, where a debug package may be installed */
	if (p && (debug__by_build_id(p, h, out) || debug__by_link(p, path, h, out)))
		return 0;
	if (debug__by_build_id(NULL, h, out) || debug__by_link(NULL, path, h, out))
		return 0;
	return -ENOENT;
}

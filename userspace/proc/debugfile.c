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
/* checking a debuglink CRC reads the whole file: not past this */
#define MAX_DEBUG_BYTES (2ull << 30)

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

/* Where gdb looks for a .gnu_debuglink name, for the file at path. */
static bool debug__by_link(struct proc *p, const char *path, const struct elf_handle *h,
			   struct elf_handle *out)
{
	char name[NAME_MAX + 1], dir[PATH_MAX], cand[2 * PATH_MAX];
	const char *slash;
	uint32_t want, got;
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
		if ((uint64_t)st.st_size <= MAX_DEBUG_BYTES && !elf__crc32(out, &got) &&
		    got == want)
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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <string.h>
#include "lib/lwtypes.h"
#include "lib/syscalls.h"

/* generated from the system's asm/unistd_64.h at build time */
static const char *const names[] = {
#include "syscall_names.h"
};

/* syscalls whose first argument is a file descriptor worth resolving */
static const char *const fd_first[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"preadv2", "pwritev2", "fsync", "fdatasync", "sync_file_range", "flock", "fcntl",
	"ioctl", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendfile", "connect", "accept",
	"accept4", "fstat", "ftruncate", "fallocate", "getdents64", "splice", "tee",
	"copy_file_range", "syncfs", "lseek", "close", "shutdown", "fadvise64",
};

const char *syscall__name(int nr, char *buf, size_t len)
{
	if (nr == LW_NR_NONE)
		return "page_fault";
	if (nr >= 0 && (size_t)nr < sizeof(names) / sizeof(names[0]) && names[nr])
		return names[nr];
	snprintf(buf, len, "syscall_%d", nr);
	return buf;
}

bool syscall__fd_arg(int nr)
{
	if (nr < 0 || (size_t)nr >= sizeof(names) / sizeof(names[0]) || !names[nr])
		return false;
	for (size_t i = 0; i < sizeof(fd_first) / sizeof(fd_first[0]); i++) {
		if (!strcmp(names[nr], fd_first[i]))
			return true;
	}
	return false;
}

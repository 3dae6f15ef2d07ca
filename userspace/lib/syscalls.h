/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* x86-64 syscall numbers to names, and which take a file descriptor first. */
#ifndef LOOPWATCH_SYSCALLS_H
#define LOOPWATCH_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>

/* "fsync", "page_fault" for LW_NR_NONE, "syscall_N" when unknown (buf is the storage) */
const char *syscall__name(int nr, char *buf, size_t len);
bool syscall__fd_arg(int nr);

#endif

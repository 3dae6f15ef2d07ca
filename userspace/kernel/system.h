/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the machine must offer before any BPF is loaded. */
#ifndef LOOPWATCH_KERNEL_SYSTEM_H
#define LOOPWATCH_KERNEL_SYSTEM_H

#include <stddef.h>

/* 0, or -1 with a one-line reason naming what is missing */
int system__check_privileges(char *err, size_t errlen);
int system__check_btf(char *err, size_t errlen);
/* Mount tracefs if it is not there yet; 0 or -errno. */
int tracefs__ensure(void);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* chainwork.c with frame pointers: its io chain calls glibc's write and fsync, which have none. */
#include "chainwork.c"

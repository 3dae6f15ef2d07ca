/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Lets userspace include the header shared with BPF. */
#ifndef LOOPWATCH_LWTYPES_H
#define LOOPWATCH_LWTYPES_H

#include <linux/types.h>
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#include "lw_abi.h"

#endif

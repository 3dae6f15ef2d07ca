/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Small JSON writing helpers: strings from traced processes are untrusted. */
#ifndef LOOPWATCH_JSONW_H
#define LOOPWATCH_JSONW_H

#include <stdio.h>
#include "lib/lwtypes.h"

/* s as a JSON string literal, escaped; invalid UTF-8 bytes become U+FFFD */
void json__string(FILE *out, const char *s);

static inline double json__ms(__u64 ns)
{
	return (double)ns / 1e6;
}

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The unit tests' one assertion: counts, and says what failed and where. */
#ifndef LOOPWATCH_CHECK_H
#define LOOPWATCH_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...)						\
	do {								\
		if (cond) {						\
			passed++;					\
		} else {						\
			failed++;					\
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	} while (0)

/* the runner-readable last line, and the exit status */
static inline int check__report(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif

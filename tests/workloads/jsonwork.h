/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The loop shared by the JSON library workloads: prints its pid, iterates an
 * epoll loop until a line arrives on stdin, then runs one parse+print round
 * trip CALLS times, one per iteration, plus work_unit() (a custom-probe
 * target) as often. json-c and jansson share symbol names, so each library
 * gets its own program.
 */
#ifndef LOOPWATCH_JSONWORK_H
#define LOOPWATCH_JSONWORK_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "groundtruth.h"

static char *jsonwork__document(void)
{
	size_t cap = 1 << 20, len = 0;
	char *s = malloc(cap);

	len += (size_t)snprintf(s + len, cap - len, "{\"items\":[");
	for (int i = 0; i < 2000; i++)
		len += (size_t)snprintf(s + len, cap - len,
					"%s{\"id\":%d,\"name\":\"item-%d\",\"tags\":[\"a\",\"b\"]}",
					i ? "," : "", i, i);
	snprintf(s + len, cap - len, "]}");
	return s;
}

__attribute__((noinline)) void work_unit(void)
{
	spin_ns(200000);
}

static int jsonwork__main(int argc, char **argv, void (*round_trip)(const char *text))
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int calls = argc > 1 ? atoi(argv[1]) : 10, ep = epoll_create1(0);
	char *text = jsonwork__document(), line[16];

	printf("%d\n", getpid());
	fflush(stdout);
	epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev);
	/* iterate while waiting, so a tracer started now sees the loop first */
	while (epoll_wait(ep, &out, 1, 50) == 0)
		;
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < calls; i++) {
		round_trip(text);
		work_unit();
		epoll_wait(ep, &out, 1, 0);
	}
	free(text);
	return 0;
}

#endif

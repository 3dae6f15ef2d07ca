// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A loop that becomes another program: COUNT epoll iterations of 20 ms, then
 * execv(PROGRAM, ARGS). A tracer must follow: the new name, the new runtime.
 *
 * usage: execwork COUNT PROGRAM [ARGS...]   (prints its pid, then waits for a line)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct epoll_event out;
	char line[16];
	int ep, count;

	if (argc < 3) {
		fprintf(stderr, "usage: execwork COUNT PROGRAM [ARGS...]\n");
		return 2;
	}
	count = atoi(argv[1]);
	printf("%d\n", getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < count; i++)
		epoll_wait(ep, &out, 1, 20);
	execv(argv[2], argv + 2);
	perror("execwork: execv");
	return 1;
}

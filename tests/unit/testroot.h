/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The unit tests that run a distro's runtime: its Debian root
 * (tools/testroot.sh, cached under build/) and a child in it.
 */
#ifndef LOOPWATCH_TESTROOT_H
#define LOOPWATCH_TESTROOT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The root of suite: its path into root, false when it cannot be had (the
 * caller fails then: there is no skip). The repository is found from this
 * binary (build/tests/NAME), as the directory holding tools/testroot.sh.
 */
static bool testroot__get(const char *suite, char *root, size_t len)
{
	char exe[PATH_MAX], cmd[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	bool found = false, ok = false;
	FILE *f;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	for (int up = 0; up < 4 && !found; up++) {
		char *slash = strrchr(exe, '/');

		if (!slash)
			return false;
		*slash = '\0';
		snprintf(cmd, sizeof(cmd), "%s/tools/testroot.sh", exe);
		found = !access(cmd, X_OK);
	}
	if (!found)
		return false;
	snprintf(cmd, sizeof(cmd), "%s/tools/testroot.sh %s", exe, suite);
	f = popen(cmd, "r");
	if (f && fgets(root, (int)len, f)) {
		root[strcspn(root, "\n")] = '\0';
		ok = root[0] == '/';
	}
	if (f && pclose(f))
		ok = false;
	return ok;
}

/* argv run in root (chroot), up once it printed a byte: its pid, or -1. */
static pid_t testroot__spawn(const char *root, char *const argv[])
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		if (chroot(root) || chdir("/"))
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &c, 1) != 1) {
		close(pipefd[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(pipefd[0]);
	return pid;
}

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor: attach the empty programs of floor.bpf.c and hold them until
 * SIGINT/SIGTERM or -d SECONDS. Like loopwatch, it says "tracing" on stderr
 * once everything is attached, so the bench driver can wait for that line.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

static volatile sig_atomic_t exiting;
static bool verbose;

static void signal__handle(int sig)
{
	(void)sig;
	exiting = 1;
}

static int libbpf__print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

/* libbpf finds the per-syscall tracepoint ids through tracefs */
static int tracefs__ensure(void)
{
	struct stat st;

	if (!stat("/sys/kernel/tracing/events", &st) ||
	    !stat("/sys/kernel/debug/tracing/events", &st))
		return 0;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	return 0;
}

static void usage__exit(const char *prog, int status)
{
	fprintf(status ? stderr : stdout,
		"Usage: %s [-d SECONDS] [-v]\n"
		"Attach empty BPF programs on loopwatch's tracepoints and hold them.\n"
		"  -d SECONDS  detach after that long (default: until SIGINT/SIGTERM)\n"
		"  -v          libbpf debug output\n", prog);
	exit(status);
}

int main(int argc, char **argv)
{
	struct timespec nap = { .tv_sec = 0, .tv_nsec = 50 * 1000 * 1000 };
	struct floor_bpf *skel = NULL;
	double duration_s = 0, left_s;
	char *end;
	int opt, err;

	while ((opt = getopt(argc, argv, "d:vh")) != -1) {
		switch (opt) {
		case 'd':
			errno = 0;
			duration_s = strtod(optarg, &end);
			if (errno || *end || duration_s <= 0) {
				fprintf(stderr, "floor: bad duration '%s'\n", optarg);
				return 2;
			}
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage__exit(argv[0], 0);
			break;
		default:
			usage__exit(argv[0], 2);
		}
	}
	libbpf_set_print(libbpf__print);
	signal(SIGINT, signal__handle);
	signal(SIGTERM, signal__handle);

	err = tracefs__ensure();
	if (err) {
		fprintf(stderr, "floor: cannot mount tracefs: %s\n", strerror(-err));
		return 1;
	}
	skel = floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "floor: cannot load BPF programs: %s\n", strerror(errno));
		return 1;
	}
	err = floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "floor: cannot attach BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	fprintf(stderr, "floor: tracing with empty programs; Ctrl-C to stop\n");

	/* a short nap rather than pause(): -d needs a clock, signals end it early */
	for (left_s = duration_s; !exiting; left_s -= 0.05) {
		if (duration_s && left_s <= 0)
			break;
		nanosleep(&nap, NULL);
	}
cleanup:
	floor_bpf__destroy(skel);
	return err ? 1 : 0;
}

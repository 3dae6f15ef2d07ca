// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor: attach the empty programs of floor.bpf.c and hold them until
 * SIGINT/SIGTERM or -d SECONDS. Like loopwatch, it says "tracing" on stderr
 * once everything is attached, so the bench driver can wait for that line.
 * Like loopwatch's default it samples at the tick: an empty program on every
 * hrtimer's expiry (-F HZ: on a cpu-clock event of every CPU instead, as
 * loopwatch's --sample-hz HZ).
 * With -u it also puts an empty uprobe and uretprobe on a function, system
 * wide, as loopwatch does for its catalogued and --probe functions.
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
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

#define MAX_CPUS 1024
#define MAX_PROBES 32		/* as loopwatch's --probe */
#define SAMPLE_HZ_DEFAULT 0	/* the tick, loopwatch's --sample-hz default */

static volatile sig_atomic_t exiting;
static bool verbose;
static struct bpf_link *sample_links[MAX_CPUS];
static int nsample_links;
static const char *probe_specs[MAX_PROBES];
static int nprobe_specs;
static struct bpf_link *probe_links[2 * MAX_PROBES];
static int nprobe_links;

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

/* the same cpu-clock event loopwatch samples with (no hardware PMU here) */
static int sampling__attach(struct floor_bpf *skel, int hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.sample_freq = (__u64)hz,
		.freq = 1,
	};
	int ncpus = libbpf_num_possible_cpus();

	if (ncpus <= 0)
		return ncpus ? ncpus : -ENODEV;
	for (int cpu = 0; cpu < ncpus && cpu < MAX_CPUS; cpu++) {
		struct bpf_link *link;
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
				      PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)
				continue;	/* possible but offline */
			return -errno;
		}
		link = bpf_program__attach_perf_event(skel->progs.floor_sample, fd);
		if (!link) {
			int err = -errno;

			close(fd);
			return err;
		}
		sample_links[nsample_links++] = link;
	}
	return 0;
}

static void sampling__detach(void)
{
	for (int i = 0; i < nsample_links; i++)
		bpf_link__destroy(sample_links[i]);
	nsample_links = 0;
}

static int probe__attach_one(struct bpf_program *prog, const char *file, const char *func,
			     size_t off, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = func, .retprobe = retprobe);
	struct bpf_link *link = bpf_program__attach_uprobe_opts(prog, -1, file, off, &opts);

	if (!link)
		return -errno;
	probe_links[nprobe_links++] = link;
	return 0;
}

/* FILE:SYMBOL or FILE:0xOFFSET (a file offset, as loopwatch --list-probes prints) */
static int probe__attach(struct floor_bpf *skel, const char *spec)
{
	char file[4096], *colon, *end;
	const char *func = NULL;
	size_t off = 0;
	int err;

	if (snprintf(file, sizeof(file), "%s", spec) >= (int)sizeof(file))
		return -ENAMETOOLONG;
	colon = strrchr(file, ':');
	if (!colon || colon == file || !colon[1])
		return -EINVAL;
	*colon = '\0';
	if (!strncmp(colon + 1, "0x", 2)) {
		errno = 0;
		off = strtoull(colon + 1, &end, 16);
		if (errno || *end)
			return -EINVAL;
	} else {
		func = colon + 1;
	}
	err = probe__attach_one(skel->progs.floor_probe_entry, file, func, off, false);
	if (!err)
		err = probe__attach_one(skel->progs.floor_probe_return, file, func, off, true);
	return err;
}

static void probes__detach(void)
{
	for (int i = 0; i < nprobe_links; i++)
		bpf_link__destroy(probe_links[i]);
	nprobe_links = 0;
}

static void usage__exit(const char *prog, int status)
{
	fprintf(status ? stderr : stdout,
		"Usage: %s [-d SECONDS] [-F HZ] [-u FILE:SYMBOL]... [-v]\n"
		"Attach empty BPF programs where loopwatch attaches and hold them.\n"
		"  -d SECONDS  detach after that long (default: until SIGINT/SIGTERM)\n"
		"  -F HZ       cpu-clock samples per second per CPU (default %d: none, an\n"
		"              empty program at the tick instead, as loopwatch's default)\n"
		"  -u FILE:SYMBOL, -u FILE:0xOFFSET\n"
		"              an empty uprobe and uretprobe on that function, system-wide\n"
		"              (repeatable, up to %d; OFFSET is a file offset)\n"
		"  -v          libbpf debug output\n", prog, SAMPLE_HZ_DEFAULT, MAX_PROBES);
	exit(status);
}

int main(int argc, char **argv)
{
	struct timespec nap = { .tv_sec = 0, .tv_nsec = 50 * 1000 * 1000 };
	struct floor_bpf *skel = NULL;
	double duration_s = 0, left_s;
	long sample_hz = SAMPLE_HZ_DEFAULT;
	char *end;
	int opt, err;

	while ((opt = getopt(argc, argv, "d:F:u:vh")) != -1) {
		switch (opt) {
		case 'd':
			errno = 0;
			duration_s = strtod(optarg, &end);
			if (errno || *end || duration_s <= 0) {
				fprintf(stderr, "floor: bad duration '%s'\n", optarg);
				return 2;
			}
			break;
		case 'F':
			errno = 0;
			sample_hz = strtol(optarg, &end, 10);
			if (errno || *end || sample_hz < 0 || sample_hz > 10000) {
				fprintf(stderr, "floor: bad sample rate '%s'\n", optarg);
				return 2;
			}
			break;
		case 'u':
			if (nprobe_specs == MAX_PROBES) {
				fprintf(stderr, "floor: more than %d -u\n", MAX_PROBES);
				return 2;
			}
			probe_specs[nprobe_specs++] = optarg;
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
	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "floor: cannot open BPF programs: %s\n", strerror(errno));
		return 1;
	}
	bpf_program__set_autoload(skel->progs.floor_tick, !sample_hz);
	err = floor_bpf__load(skel);
	if (err) {
		fprintf(stderr, "floor: cannot load BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	err = floor_bpf__attach(skel);
	if (err) {
		fprintf(stderr, "floor: cannot attach BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	if (sample_hz) {
		err = sampling__attach(skel, (int)sample_hz);
		if (err) {
			fprintf(stderr, "floor: cannot start sampling: %s\n", strerror(-err));
			goto cleanup;
		}
	}
	for (int i = 0; i < nprobe_specs; i++) {
		err = probe__attach(skel, probe_specs[i]);
		if (err) {
			fprintf(stderr, "floor: cannot probe '%s': %s\n", probe_specs[i],
				strerror(-err));
			goto cleanup;
		}
	}
	fprintf(stderr, "floor: tracing with empty programs; Ctrl-C to stop\n");

	/* a short nap rather than pause(): -d needs a clock, signals end it early */
	for (left_s = duration_s; !exiting; left_s -= 0.05) {
		if (duration_s && left_s <= 0)
			break;
		nanosleep(&nap, NULL);
	}
cleanup:
	probes__detach();
	sampling__detach();
	floor_bpf__destroy(skel);
	return err ? 1 : 0;
}

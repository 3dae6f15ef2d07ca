// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kernel/collector.h"
#include "kernel/features.h"
#include "lib/arrival.h"
#include "kernel/system.h"
#include "kernel/uprobes.h"
#include "loopwatch.skel.h"

/*
 * The per-syscall tracepoints, each served by one program for all the calls
 * of its kind (the verifier checks it once, not once per call). A wait
 * program tells the calls apart by their syscall numbers: a wait call's
 * kind (bpf/lw_abi.h) and restart_syscall's number are set in its table
 * before load (collector__number_waits). -1: the architecture has no such
 * call.
 */
#ifndef SYS_epoll_wait
#define SYS_epoll_wait -1
#endif
#ifndef SYS_poll
#define SYS_poll -1
#endif
#ifndef SYS_select
#define SYS_select -1
#endif
#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441	/* the same on every architecture */
#endif
#define LW_RESTART -1		/* restart_syscall's exit */

static const struct syscall_tp {
	const char *prog;
	const char *tp;
	long nr;
	int kind;		/* enum lw_call_kind; 0: none, LW_RESTART */
} syscall_tps[] = {
	{ "wait_enter", "sys_enter_epoll_wait", SYS_epoll_wait, LW_CALL_EPOLL },
	{ "wait_enter", "sys_enter_epoll_pwait", SYS_epoll_pwait, LW_CALL_EPOLL },
	{ "wait_enter", "sys_enter_epoll_pwait2", SYS_epoll_pwait2, LW_CALL_EPOLL },
	{ "wait_enter", "sys_enter_poll", SYS_poll, LW_CALL_POLL },
	{ "wait_enter", "sys_enter_ppoll", SYS_ppoll, LW_CALL_POLL },
	{ "wait_enter", "sys_enter_select", SYS_select, LW_CALL_SELECT },
	{ "wait_enter", "sys_enter_pselect6", SYS_pselect6, LW_CALL_SELECT },
	{ "wait_exit", "sys_exit_epoll_wait", SYS_epoll_wait, 0 },
	{ "wait_exit", "sys_exit_epoll_pwait", SYS_epoll_pwait, 0 },
	{ "wait_exit", "sys_exit_epoll_pwait2", SYS_epoll_pwait2, 0 },
	{ "wait_exit", "sys_exit_poll", SYS_poll, 0 },
	{ "wait_exit", "sys_exit_ppoll", SYS_ppoll, 0 },
	{ "wait_exit", "sys_exit_select", SYS_select, 0 },
	{ "wait_exit", "sys_exit_pselect6", SYS_pselect6, 0 },
	{ "wait_exit", "sys_exit_restart_syscall", SYS_restart_syscall, LW_RESTART },
	{ "flush_enter", "sys_enter_fsync", SYS_fsync, 0 },
	{ "flush_enter", "sys_enter_fdatasync", SYS_fdatasync, 0 },
	{ "flush_enter", "sys_enter_sync_file_range", SYS_sync_file_range, 0 },
	{ "flush_enter", "sys_enter_syncfs", SYS_syncfs, 0 },
	{ "flush_exit", "sys_exit_fsync", SYS_fsync, 0 },
	{ "flush_exit", "sys_exit_fdatasync", SYS_fdatasync, 0 },
	{ "flush_exit", "sys_exit_sync_file_range", SYS_sync_file_range, 0 },
	{ "flush_exit", "sys_exit_syncfs", SYS_syncfs, 0 },
};
#define NSYSCALL_TPS (sizeof(syscall_tps) / sizeof(syscall_tps[0]))

/* live loop records read from the task iterator at once */
#define DRAIN_BATCH 16

struct collector {
	struct loopwatch_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link **sample_links;
	int nsample_links;
	struct bpf_link *tp_links[NSYSCALL_TPS];
	struct features features;
	event_fn on_event;
	void *ctx;
	struct lw_loop *buf;	/* DRAIN_BATCH records: too large for the stack */
	__u32 *keys;
	/* the unwind tables, written through mmap: a file's rows at once */
	struct lw_uw_row *uw_rows;
	size_t nuw_rows;
	struct lw_uw_page *uw_pages;
	size_t nuw_pages;
	bool uprobe_multi;	/* the probes' multi pair loaded (kernel/uprobes.h) */
};

static bool libbpf_verbose;

static int libbpf__print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!libbpf_verbose)
		return 0;
	(void)level;
	return vfprintf(stderr, fmt, args);
}

static int collector__fill_filters(struct collector *c, const struct collector_opts *opts)
{
	int fd = bpf_map__fd(c->skel->maps.pid_filter);
	__u8 one = 1;

	for (int i = 0; i < opts->npids; i++) {
		__u32 pid = (__u32)opts->pids[i];

		if (bpf_map_update_elem(fd, &pid, &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int event__handle(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;

	if (c->on_event)
		c->on_event(data, size, c->ctx);
	return 0;
}

/*
 * cpu-clock sampling on every CPU (no hardware PMU here), where the tick
 * will not do or --sample-hz asks for it; the program keeps only samples of
 * loop threads inside a busy period.
 */
static int collector__attach_sampling(struct collector *c, int hz)
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
	c->sample_links = calloc((size_t)ncpus, sizeof(*c->sample_links));
	if (!c->sample_links)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpus; cpu++) {
		struct bpf_link *link;
		int fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ENODEV)
				continue;	/* possible but offline */
			return -errno;
		}
		link = bpf_program__attach_perf_event(c->skel->progs.loop_sample, fd);
		if (!link) {
			int err = -errno;

			close(fd);
			return err;
		}
		c->sample_links[c->nsample_links++] = link;
	}
	return 0;
}

/*
 * The wait and flush hooks: fentry/fexit where the kernel allows it
 * (hooks_fentry.bpf.c, attached by the skeleton), else the syscall
 * tracepoints (syscall_tps). Only one set is loaded.
 */
static void collector__choose_hooks(struct collector *c)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, c->skel->obj) {
		const char *sec = bpf_program__section_name(prog);

		if (!strncmp(sec, "fentry/", 7) || !strncmp(sec, "fexit/", 6))
			bpf_program__set_autoload(prog, c->features.fentry);
		else if (!strncmp(sec, "tracepoint/syscalls/", 20))
			bpf_program__set_autoload(prog, !c->features.fentry);
	}
}

/* The programs of syscall_tps, which the skeleton leaves to us. */
static void collector__no_autoattach(struct collector *c)
{
	for (size_t i = 0; i < NSYSCALL_TPS; i++) {
		struct bpf_program *prog =
			bpf_object__find_program_by_name(c->skel->obj, syscall_tps[i].prog);

		if (prog)
			bpf_program__set_autoattach(prog, false);
	}
}

/*
 * The probes' multi pair is loaded as uprobe_multi programs where the
 * kernel has those links, the single pair where it does not.
 */
static void collector__choose_uprobes(struct collector *c)
{
	struct bpf_program *entry = c->skel->progs.probe_entry_multi;
	struct bpf_program *ret = c->skel->progs.probe_return_multi;

	c->uprobe_multi = uprobes__kernel_has_multi();
	bpf_program__set_autoload(entry, c->uprobe_multi);
	bpf_program__set_autoload(ret, c->uprobe_multi);
	bpf_program__set_autoload(c->skel->progs.probe_entry, !c->uprobe_multi);
	bpf_program__set_autoload(c->skel->progs.probe_return, !c->uprobe_multi);
	if (!c->uprobe_multi)
		return;
	bpf_program__set_expected_attach_type(entry,
					      (enum bpf_attach_type)UPROBES_MULTI_ATTACH_TYPE);
	bpf_program__set_expected_attach_type(ret, (enum bpf_attach_type)UPROBES_MULTI_ATTACH_TYPE);
}

/* The wait programs' table of syscall numbers (bpf/loop.bpf.c), before load. */
static void collector__number_waits(struct collector *c)
{
	for (size_t i = 0; i < NSYSCALL_TPS; i++) {
		const struct syscall_tp *t = &syscall_tps[i];

		if (t->kind == LW_RESTART)
			c->skel->rodata->restart_nr = (__s32)t->nr;
		else if (t->kind && t->nr >= 0 && t->nr < LW_WAIT_NRS)
			c->skel->rodata->wait_kinds[t->nr] = (__u8)t->kind;
	}
}

struct tp_attach {
	struct bpf_program *prog;
	size_t i;
	struct bpf_link *link;
	int err;
};

static void *tp_attach__run(void *arg)
{
	struct tp_attach *a = arg;
	a->link = bpf_program__attach_tracepoint(a->prog, "syscalls", syscall_tps[a->i].tp);
	a->err = a->link ? 0 : -errno;
	return NULL;
}

/*
 * All at once, a thread each: the kernel may wait for an RCU grace period
 * before it enables a tracepoint (one a tracer left recently), up to 2 s
 * on a loaded host -- waited side by side, not 23 times in a row.
 */
static int collector__attach_syscalls(struct collector *c)
{
	struct tp_attach a[NSYSCALL_TPS];
	pthread_t threads[NSYSCALL_TPS];
	bool started[NSYSCALL_TPS] = { false };
	int err = 0;

	for (size_t i = 0; i < NSYSCALL_TPS; i++) {
		a[i] = (struct tp_attach){ .i = i, .err = -ENOENT,
			.prog = bpf_object__find_program_by_name(c->skel->obj, syscall_tps[i].prog) };
		if (!a[i].prog)
			return -ENOENT;
	}
	for (size_t i = 0; i < NSYSCALL_TPS; i++) {
		started[i] = !pthread_create(&threads[i], NULL, tp_attach__run, &a[i]);
		if (!started[i])
			tp_attach__run(&a[i]);
	}
	for (size_t i = 0; i < NSYSCALL_TPS; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		c->tp_links[i] = a[i].link;
		if (a[i].err && !err)
			err = a[i].err;
	}
	return err;
}

/* An mmapable array map's memory; NULL (errno set) on failure. */
static void *map__mmap(struct bpf_map *map, size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Sized before load: the tables are preallocated, bounded by the options. */
static int collector__size_unwind(struct collector *c, const struct collector_opts *opts)
{
	c->nuw_rows = opts->unwind_rows && opts->unwind_pages ? opts->unwind_rows : 0;
	c->nuw_pages = c->nuw_rows ? opts->unwind_pages : 0;
	if (bpf_map__set_max_entries(c->skel->maps.uw_rows, c->nuw_rows ? c->nuw_rows : 1) ||
	    bpf_map__set_max_entries(c->skel->maps.uw_pages, c->nuw_pages ? c->nuw_pages : 1))
		return -EINVAL;
	return 0;
}

static int collector__map_unwind(struct collector *c)
{
	if (!c->nuw_rows)
		return 0;
	c->uw_rows = map__mmap(c->skel->maps.uw_rows, c->nuw_rows * sizeof(*c->uw_rows));
	c->uw_pages = map__mmap(c->skel->maps.uw_pages, c->nuw_pages * sizeof(*c->uw_pages));
	return c->uw_rows && c->uw_pages ? 0 : -errno;
}

/* the host's pid namespace's inode number, fixed by the kernel (PROC_PID_INIT_INO) */
#define PIDNS_INIT_INO 0xEFFFFFFCU

struct collector *collector__open(const struct collector_opts *opts, char *err, size_t errlen)
{
	struct collector *c;
	struct stat st;
	bool tick;
	int ncpus, ret;

	libbpf_verbose = opts->verbose;
	libbpf_set_print(libbpf__print);

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->buf = calloc(DRAIN_BATCH, sizeof(*c->buf));
	c->keys = calloc(LW_MAX_LOOPS, sizeof(*c->keys));
	if (!c->buf || !c->keys) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (features__probe(&c->features, err, errlen))
		goto fail;
	/* CPU samples at the tick unless --sample-hz asks for a rate (bpf/sample.bpf.c) */
	tick = !opts->sample_hz && c->features.tick;
	if (!opts->sample_hz && !tick) {
		size_t used = strlen(c->features.fallbacks);

		snprintf(c->features.fallbacks + used, sizeof(c->features.fallbacks) - used,
			 "loopwatch: CPU samples from perf's cpu-clock at %d Hz, not the "
			 "scheduler tick (%s)\n", COLLECTOR_SAMPLE_HZ, c->features.no_tick);
	}
	/* per-syscall tracepoints are attached through tracefs */
	ret = tracefs__ensure();
	if (ret) {
		snprintf(err, errlen, "cannot mount tracefs on /sys/kernel/tracing: %s",
			 strerror(-ret));
		goto fail;
	}

	/* Open BPF application */
	c->skel = loopwatch_bpf__open();
	if (!c->skel) {
		snprintf(err, errlen, "cannot open BPF object: %s", strerror(errno));
		goto fail;
	}

	/*
	 * The ring buffer holds what the kernel sends up while loopwatch has not
	 * got the CPU: a stall event is ~3.3 KiB, and a loaded host can keep
	 * loopwatch off a CPU for a second (--ring-buffer).
	 */
	ret = bpf_map__set_max_entries(c->skel->maps.events, opts->ring_bytes);
	if (ret) {
		snprintf(err, errlen, "cannot size the ring buffer: %s", strerror(-ret));
		goto fail;
	}

	/* what this kernel lacks is done another way (bpf/features.bpf.h) */
	c->skel->rodata->have_bpf_loop = c->features.bpf_loop;
	c->skel->rodata->have_percpu_lookup = c->features.percpu_lookup;
	ncpus = libbpf_num_possible_cpus();
	ret = ncpus > 0 ? 0 : ncpus ?: -ENODEV;
	if (!ret && !c->features.percpu_lookup)
		ret = bpf_map__set_max_entries(c->skel->maps.cpu_waits_shared, (__u32)ncpus);
	if (!ret && tick)
		ret = bpf_map__set_max_entries(c->skel->maps.boosts, (__u32)ncpus);
	if (ret) {
		snprintf(err, errlen, "cannot size the CPUs' tables: %s", strerror(-ret));
		goto fail;
	}

	collector__number_waits(c);
	/* Options reach BPF as read-only data, set before load */
	c->skel->rodata->self_pid = (__u32)getpid();
	if (!stat("/proc/self/ns/pid", &st) && st.st_ino != PIDNS_INIT_INO) {
		/* a pid namespace of our own: getpid() is not what BPF sees */
		c->skel->rodata->self_pidns_dev = st.st_dev;
		c->skel->rodata->self_pidns_ino = st.st_ino;
	}
	c->skel->rodata->filter_pid = opts->npids > 0;
	c->skel->rodata->stall_threshold_ns = opts->stall_threshold_ns;
	c->skel->rodata->slow_threshold_ns = opts->slow_threshold_ns;
	c->skel->rodata->block_threshold_ns = opts->block_threshold_ns;
	/* stacks from 1/16 of the slow threshold on: see bpf/maps.bpf.h */
	c->skel->rodata->sample_gate_ns = opts->slow_threshold_ns / 16;
	c->skel->rodata->probe_threshold_ns = opts->probe_threshold_ns;
	c->skel->rodata->nested_waits = !opts->no_nested_waits;
	c->skel->rodata->filter_comm = opts->ncomms > 0;
	c->skel->rodata->ncomms = (__u32)(opts->ncomms < LW_MAX_COMMS ? opts->ncomms
								       : LW_MAX_COMMS);
	for (int i = 0; i < opts->ncomms && i < LW_MAX_COMMS; i++)
		strncpy((char *)c->skel->rodata->comm_filter[i], opts->comms[i], LW_COMM_LEN - 1);
	c->skel->rodata->filter_cgroup = opts->ncgroups > 0;
	c->skel->rodata->ncgroups = (__u32)(opts->ncgroups < LW_MAX_CGROUPS ? opts->ncgroups
									    : LW_MAX_CGROUPS);
	for (int i = 0; i < opts->ncgroups && i < LW_MAX_CGROUPS; i++) {
		c->skel->rodata->cgroup_ids[i] = opts->cgroup_ids[i];
		c->skel->rodata->cgroup_levels[i] = opts->cgroup_levels[i];
	}
	c->skel->rodata->nexcludes = (__u32)(opts->nexcludes < LW_MAX_COMMS ? opts->nexcludes
									    : LW_MAX_COMMS);
	for (int i = 0; i < opts->nexcludes && i < LW_MAX_COMMS; i++)
		strncpy((char *)c->skel->rodata->comm_exclude[i], opts->excludes[i],
			LW_COMM_LEN - 1);
	/* a tick further apart than perf's period: iterations becoming stalls get that */
	if (tick && c->features.tick_ns > 1000000000 / COLLECTOR_SAMPLE_HZ)
		c->skel->rodata->boost_period_ns = 1000000000 / COLLECTOR_SAMPLE_HZ;
	c->skel->rodata->sample_us = (__u16)(tick ? c->features.tick_ns / 1000
					    : 1000000 / (opts->sample_hz ?: COLLECTOR_SAMPLE_HZ));
	bpf_program__set_autoload(c->skel->progs.loop_tick, tick);
	bpf_program__set_autoload(c->skel->progs.loop_sample, !tick);
	collector__no_autoattach(c);
	collector__choose_uprobes(c);
	collector__choose_hooks(c);
	if (collector__size_unwind(c, opts)) {
		snprintf(err, errlen, "cannot size the unwind tables");
		goto fail;
	}

	/* Load & verify BPF programs */
	ret = loopwatch_bpf__load(c->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load BPF programs: %s (run with -v for details)",
			 strerror(-ret));
		goto fail;
	}
	ret = collector__map_unwind(c);
	if (ret) {
		snprintf(err, errlen, "cannot map the unwind tables: %s", strerror(-ret));
		goto fail;
	}
	ret = collector__fill_filters(c, opts);
	if (ret) {
		snprintf(err, errlen, "cannot fill the pid filter: %s", strerror(-ret));
		goto fail;
	}

	/* Attach tracepoints */
	ret = loopwatch_bpf__attach(c->skel);
	if (!ret && !c->features.fentry)
		ret = collector__attach_syscalls(c);
	if (ret) {
		snprintf(err, errlen, "cannot attach BPF programs: %s (run with -v for details)",
			 strerror(-ret));
		goto fail;
	}
	if (!tick) {
		ret = collector__attach_sampling(c, opts->sample_hz ?: COLLECTOR_SAMPLE_HZ);
		if (ret) {
			snprintf(err, errlen, "cannot start CPU sampling: %s", strerror(-ret));
			goto fail;
		}
	}
	c->on_event = opts->on_event;
	c->ctx = opts->ctx;
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), event__handle, c, NULL);
	if (!c->rb) {
		snprintf(err, errlen, "cannot open the ring buffer: %s", strerror(errno));
		goto fail;
	}
	return c;
fail:
	collector__destroy(c);
	return NULL;
}

/*
 * The hand-off child closes its copies of sockets and pipes, but keep: a
 * listening port must be free for the next loopwatch at once, and a reader
 * of our output or an alert program must see its end of file.
 */
static void fds__close_streams(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	struct stat st;
	int fd;

	if (!d)
		return;
	while ((e = readdir(d))) {
		fd = atoi(e->d_name);
		if (fd > 2 && fd != keep && fd != dirfd(d) && !fstat(fd, &st) &&
		    (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)))
			close(fd);
	}
	closedir(d);
}

/*
 * Detaching a per-syscall tracepoint or a uprobe waits for an RCU Tasks
 * Trace grace period, and the last perf user of a tracepoint another one
 * under the kernel's global event_mutex (perf_trace_event_unreg), 30-110 ms
 * each, one after the other whatever thread closes them: 1-3 s for all of
 * loopwatch's. So the last references go to a child instead: it shares
 * every open file, waits for us to exit (its pipe closes) and lets its own
 * exit release them, in the background. Our closes are then reference
 * drops; the programs stay attached, doing nothing anyone sees, about a
 * second longer. Called before anything BPF is closed (main.c: also before
 * the probes' links). If the fork fails, closing is just slow.
 */
void collector__hand_off(void)
{
	int pipefd[2], devnull;
	pid_t pid;
	char b;

	if (pipe2(pipefd, O_CLOEXEC))
		return;
	pid = fork();
	if (pid != 0) {
		/* ours closes when we exit, whatever way */
		close(pipefd[0]);
		if (pid < 0)
			close(pipefd[1]);
		return;
	}
	/* no terminal, no signals, no hold on anybody's pipes */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	close(pipefd[1]);
	devnull = open("/dev/null", O_RDWR);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	fds__close_streams(pipefd[0]);
	while (read(pipefd[0], &b, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

void collector__destroy(struct collector *c)
{
	if (!c)
		return;
	ring_buffer__free(c->rb);
	for (int i = 0; i < c->nsample_links; i++)
		bpf_link__destroy(c->sample_links[i]);
	free(c->sample_links);
	for (size_t i = 0; i < NSYSCALL_TPS; i++)
		bpf_link__destroy(c->tp_links[i]);
	if (c->uw_rows)
		munmap(c->uw_rows, c->nuw_rows * sizeof(*c->uw_rows));
	if (c->uw_pages)
		munmap(c->uw_pages, c->nuw_pages * sizeof(*c->uw_pages));
	loopwatch_bpf__destroy(c->skel);
	free(c->keys);
	free(c->buf);
	free(c);
}

const char *collector__hooks(const struct collector *c)
{
	return c->features.hooks;
}

const char *collector__fallbacks(const struct collector *c)
{
	return c->features.fallbacks;
}

int collector__fd(const struct collector *c)
{
	return ring_buffer__epoll_fd(c->rb);
}

int collector__consume(struct collector *c)
{
	int ret = ring_buffer__consume(c->rb);

	return ret < 0 ? ret : 0;
}

void collector__uprobe_progs(const struct collector *c, struct uprobe_progs *p)
{
	p->entry = c->skel->progs.probe_entry;
	p->ret = c->skel->progs.probe_return;
	p->entry_multi = c->uprobe_multi ? bpf_program__fd(c->skel->progs.probe_entry_multi) : -1;
	p->ret_multi = c->uprobe_multi ? bpf_program__fd(c->skel->progs.probe_return_multi) : -1;
}

int collector__read_stack(struct collector *c, __s32 id, uint64_t *ips, int max)
{
	__u64 buf[LW_STACK_DEPTH];
	int n = 0;

	if (id < 0 || bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.stacks), &id, buf))
		return 0;
	while (n < LW_STACK_DEPTH && n < max && buf[n]) {
		ips[n] = buf[n];
		n++;
	}
	return n;
}

bool collector__read_user_stack(struct collector *c, __u32 id, struct lw_user_stack *st)
{
	if (!id || bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.user_stacks), &id, st))
		return false;
	if (st->nframes > LW_UW_MAX_FRAMES)
		st->nframes = LW_UW_MAX_FRAMES;
	return true;
}

void collector__unwind_capacity(const struct collector *c, size_t *rows, size_t *pages)
{
	*rows = c->uw_rows ? c->nuw_rows : 0;
	*pages = c->uw_pages ? c->nuw_pages : 0;
}

int collector__write_unwind_rows(struct collector *c, size_t at, const struct lw_uw_row *rows,
				 size_t n)
{
	if (!c->uw_rows || at > c->nuw_rows || n > c->nuw_rows - at)
		return -ERANGE;
	memcpy(c->uw_rows + at, rows, n * sizeof(*rows));
	return 0;
}

int collector__write_unwind_pages(struct collector *c, size_t at, const struct lw_uw_page *pages,
				  size_t n)
{
	if (!c->uw_pages || at > c->nuw_pages || n > c->nuw_pages - at)
		return -ERANGE;
	memcpy(c->uw_pages + at, pages, n * sizeof(*pages));
	return 0;
}

int collector__set_unwind(struct collector *c, __u32 pid, __u32 slot,
			  const struct lw_uw_proc *proc)
{
	int slots = bpf_map__fd(c->skel->maps.uw_slots);

	if (!proc)
		return bpf_map_delete_elem(slots, &pid) && errno != ENOENT ? -errno : 0;
	if (slot >= LW_UW_MAX_PROCS)
		return -ERANGE;
	/* the table first: the pid must never lead to a half-written one */
	if (bpf_map_update_elem(bpf_map__fd(c->skel->maps.uw_procs), &slot, proc, BPF_ANY) ||
	    bpf_map_update_elem(slots, &pid, &slot, BPF_ANY))
		return -errno;
	return 0;
}

/* A runtime's map by name, holding values of size bytes; NULL: none such. */
static const struct bpf_map *runtime__map(struct collector *c, const char *name, size_t size)
{
	const struct bpf_map *map = bpf_object__find_map_by_name(c->skel->obj, name);

	return map && bpf_map__value_size(map) == size ? map : NULL;
}

bool collector__read_runtime_stack(struct collector *c, const char *map, __u32 id, void *st,
				   size_t size)
{
	const struct bpf_map *m = id ? runtime__map(c, map, size) : NULL;

	return m && !bpf_map_lookup_elem(bpf_map__fd(m), &id, st);
}

int collector__set_runtime(struct collector *c, const char *map, __u32 pid, const void *layout,
			   size_t size)
{
	const struct bpf_map *m = runtime__map(c, map, size);

	if (!m)
		return -ENOENT;
	if (!layout)
		return bpf_map_delete_elem(bpf_map__fd(m), &pid);
	return bpf_map_update_elem(bpf_map__fd(m), &pid, layout, BPF_ANY);
}

void collector__counters(struct collector *c, __u64 sums[LW_CTR_MAX])
{
	int ncpus = libbpf_num_possible_cpus(), fd = bpf_map__fd(c->skel->maps.counters);
	__u64 vals[ncpus > 0 ? ncpus : 1];

	for (__u32 key = 0; key < LW_CTR_MAX; key++) {
		sums[key] = 0;
		if (ncpus <= 0 || bpf_map_lookup_elem(fd, &key, vals))
			continue;
		for (int i = 0; i < ncpus; i++)
			sums[key] += vals[i];
	}
}

/* A record as read: the sums its short buckets do not keep, estimated. */
static const struct lw_loop *loop__complete(struct lw_loop *l)
{
	arrival__estimate_sums(&l->busy_sums, &l->busy_hist, LW_LOOP_LIVE_BUCKETS);
	return l;
}

/* The live records, through the task iterator (they live in task storage). */
static int collector__drain_live(struct collector *c, loop_fn fn, void *ctx)
{
	size_t have = 0, rec = sizeof(*c->buf), cap = DRAIN_BATCH * rec;
	char *buf = (char *)c->buf;
	int it, n = 0;
	ssize_t got;

	it = bpf_iter_create(bpf_link__fd(c->skel->links.dump_loops));
	if (it < 0)
		return -errno;
	for (;;) {
		got = read(it, buf + have, cap - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		have += (size_t)got;
		for (size_t off = 0; off + rec <= have; off += rec, n++)
			fn(loop__complete((struct lw_loop *)(buf + off)), ctx);
		/* a record split across reads: keep its start */
		memmove(buf, buf + have / rec * rec, have % rec);
		have %= rec;
	}
	close(it);
	return n;
}

int collector__drain_loops(struct collector *c, loop_fn fn, void *ctx)
{
	int fd = bpf_map__fd(c->skel->maps.loops_final);
	int tails = bpf_map__fd(c->skel->maps.loop_hists);
	void *tail = (char *)c->buf + LW_LOOP_LIVE_SIZE;
	__u32 key, *prev = NULL;
	int n, nkeys = 0;

	n = collector__drain_live(c, fn, ctx);
	if (n < 0)
		n = 0;
	/* then the exited threads' last records; keys first: deleting restarts a walk */
	while (nkeys < LW_MAX_LOOPS && !bpf_map_get_next_key(fd, prev, &key)) {
		c->keys[nkeys] = key;
		prev = &c->keys[nkeys++];
	}
	for (int i = 0; i < nkeys; i++) {
		/* the record up to its histogram's tail, which stayed by itself */
		if (bpf_map_lookup_elem(fd, &c->keys[i], c->buf))
			continue;
		if (bpf_map_lookup_elem(tails, &c->keys[i], tail))
			memset(tail, 0, sizeof(struct lw_hist_tail));
		fn(loop__complete(c->buf), ctx);
		bpf_map_delete_elem(fd, &c->keys[i]);
		bpf_map_delete_elem(tails, &c->keys[i]);
	}
	return n + nkeys;
}

/* Every entry of a hash map of aggregates: key and value handed to fn. */
static int map__walk(int fd, size_t key_size, size_t value_size,
		     void (*fn)(const void *key, const void *value, void *ctx), void *ctx)
{
	void *key = calloc(2, key_size), *value = malloc(value_size);
	void *prev = NULL, *next = key;
	int n = 0;

	if (!key || !value) {
		free(key);
		free(value);
		return -ENOMEM;
	}
	while (!bpf_map_get_next_key(fd, prev, next)) {
		if (!bpf_map_lookup_elem(fd, next, value)) {
			fn(next, value, ctx);
			n++;
		}
		/* alternate the two key buffers: the one just read is the next cursor */
		prev = next;
		next = (char *)key + (prev == key ? key_size : 0);
	}
	free(key);
	free(value);
	return n;
}

struct walk_syscalls {
	syscall_fn fn;
	void *ctx;
};

static void syscall__visit(const void *key, const void *value, void *ctx)
{
	struct walk_syscalls *w = ctx;

	w->fn(key, value, w->ctx);
}

int collector__drain_syscalls(struct collector *c, syscall_fn fn, void *ctx)
{
	struct walk_syscalls w = { fn, ctx };

	return map__walk(bpf_map__fd(c->skel->maps.syscall_stats), sizeof(struct lw_syscall_key),
			 sizeof(struct lw_syscall_stats), syscall__visit, &w);
}

struct walk_probes {
	probe_fn fn;
	void *ctx;
};

static void probe__visit(const void *key, const void *value, void *ctx)
{
	struct walk_probes *w = ctx;

	w->fn(key, value, w->ctx);
}

int collector__drain_probes(struct collector *c, probe_fn fn, void *ctx)
{
	struct walk_probes w = { fn, ctx };

	return map__walk(bpf_map__fd(c->skel->maps.probe_stats), sizeof(struct lw_probe_key),
			 sizeof(struct lw_probe_stats), probe__visit, &w);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collector.h"
#include "system.h"
#include "loopwatch.skel.h"

struct collector {
	struct loopwatch_bpf *skel;
	struct lw_loop *buf;	/* one record: too large for the stack */
	__u32 *keys;
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

struct collector *collector__open(const struct collector_opts *opts, char *err, size_t errlen)
{
	struct collector *c;
	int ret;

	libbpf_verbose = opts->verbose;
	libbpf_set_print(libbpf__print);

	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->buf = calloc(1, sizeof(*c->buf));
	c->keys = calloc(LW_MAX_LOOPS, sizeof(*c->keys));
	if (!c->buf || !c->keys) {
		snprintf(err, errlen, "out of memory");
		goto fail;
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

	/* Options reach BPF as read-only data, set before load */
	c->skel->rodata->filter_pid = opts->npids > 0;
	if (opts->comm) {
		c->skel->rodata->filter_comm = true;
		strncpy((char *)c->skel->rodata->comm_filter, opts->comm, LW_COMM_LEN - 1);
	}

	/* Load & verify BPF programs */
	ret = loopwatch_bpf__load(c->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load BPF programs: %s (run with -v for details)",
			 strerror(-ret));
		goto fail;
	}
	ret = collector__fill_filters(c, opts);
	if (ret) {
		snprintf(err, errlen, "cannot fill the pid filter: %s", strerror(-ret));
		goto fail;
	}

	/* Attach tracepoints */
	ret = loopwatch_bpf__attach(c->skel);
	if (ret) {
		snprintf(err, errlen, "cannot attach BPF programs: %s (run with -v for details)",
			 strerror(-ret));
		goto fail;
	}
	return c;
fail:
	collector__destroy(c);
	return NULL;
}

void collector__destroy(struct collector *c)
{
	if (!c)
		return;
	loopwatch_bpf__destroy(c->skel);
	free(c->keys);
	free(c->buf);
	free(c);
}

int collector__poll(struct collector *c, int timeout_ms)
{
	struct timespec ts = {
		.tv_sec = timeout_ms / 1000,
		.tv_nsec = (long)(timeout_ms % 1000) * 1000000L,
	};

	(void)c;
	if (nanosleep(&ts, NULL))
		return -errno;
	return 0;
}

int collector__drain_loops(struct collector *c, loop_fn fn, void *ctx)
{
	int fd = bpf_map__fd(c->skel->maps.loops);
	__u32 key, *prev = NULL;
	int nkeys = 0;

	/* keys first: deleting while walking would restart the walk */
	while (nkeys < LW_MAX_LOOPS && !bpf_map_get_next_key(fd, prev, &key)) {
		c->keys[nkeys] = key;
		prev = &c->keys[nkeys++];
	}
	for (int i = 0; i < nkeys; i++) {
		if (bpf_map_lookup_elem(fd, &c->keys[i], c->buf))
			continue;	/* evicted or reaped meanwhile */
		fn(c->buf, ctx);
		if (c->buf->flags & LW_THREAD_EXITED)
			bpf_map_delete_elem(fd, &c->keys[i]);
	}
	return nkeys;
}

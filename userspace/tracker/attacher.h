/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Uprobes attached by a thread of their own: a file's first uprobe took
 * 0.5-1 s on a loaded host, and one waits for the kernel's event_mutex
 * while single links are being removed (a grace period each, under it):
 * on the main loop, a process mapping 20 small files of catalogued names
 * kept loopwatch from collecting for 107 s, /healthz unanswered.
 *
 * Ownership: the main loop (probes.c) fills a job and puts it; from then
 * until it takes the job back finished, the job, its file fd and the links
 * made for it are the attacher's alone. The attacher touches no libbpf
 * object but the loaded probe programs, which nothing changes after load.
 */
#ifndef LOOPWATCH_TRACKER_ATTACHER_H
#define LOOPWATCH_TRACKER_ATTACHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "kernel/uprobes.h"

struct attach_job {
	/* in: the caller's */
	uint64_t id;
	int pid;		/* -1: every process */
	int fd;			/* the file, opened for the job: closed by the attacher */
	size_t n;
	uint64_t *offs;		/* n each, freed with the job by the caller */
	__u32 *cookies;
	size_t max_fds;		/* the links may hold at most these */
	/* out: the links (NULL and -errno when none) */
	struct uprobe_links *links;
	int err;
};

struct attacher;

/* NULL when no thread could be started: attacher__put then attaches at once. */
struct attacher *attacher__new(const struct uprobe_progs *progs);
/* Queued, or false when ATTACHER_QUEUE jobs are unfinished or untaken (try later). */
bool attacher__put(struct attacher *a, struct attach_job *job);
/* A finished job, its links now the caller's; NULL when none is. */
struct attach_job *attacher__take(struct attacher *a);
/* Whether a job put now would be queued. */
bool attacher__room(struct attacher *a);
/* Stops the thread once its current job is done; jobs not taken are failed, to take. */
void attacher__stop(struct attacher *a);
void attacher__free(struct attacher *a);

#endif

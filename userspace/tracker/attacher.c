// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "tracker/attacher.h"

/*
 * Jobs put and not taken back at most, each holding its file open: a
 * rescan finds the files left out then (every 2 s: 256 files each).
 */
#define ATTACHER_QUEUE 256

struct attacher {
	pthread_t thread;
	bool threaded;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct attach_job *todo[ATTACHER_QUEUE];
	size_t todo_head, ntodo;
	struct attach_job *done[ATTACHER_QUEUE];
	size_t done_head, ndone;
	size_t unfinished;	/* put and not taken */
	bool stop;
	struct uprobe_progs progs;	/* the thread's own */
};

static void attacher__run_job(struct attacher *a, struct attach_job *job)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", job->fd);
	job->err = 0;
	job->links = uprobe_links__attach(&a->progs, job->pid, path, job->offs, job->cookies,
					  job->n, job->max_fds, &job->err);
	close(job->fd);
	job->fd = -1;
}

static void attacher__finish(struct attacher *a, struct attach_job *job)
{
	a->done[(a->done_head + a->ndone++) % ATTACHER_QUEUE] = job;
}

static void *attacher__run(void *arg)
{
	struct attacher *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct attach_job *job;

		while (!a->ntodo && !a->stop)
			pthread_cond_wait(&a->cond, &a->lock);
		if (a->stop)
			break;
		job = a->todo[a->todo_head];
		a->todo_head = (a->todo_head + 1) % ATTACHER_QUEUE;
		a->ntodo--;
		pthread_mutex_unlock(&a->lock);
		attacher__run_job(a, job);
		pthread_mutex_lock(&a->lock);
		attacher__finish(a, job);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

struct attacher *attacher__new(const struct uprobe_progs *progs)
{
	struct attacher *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->progs = *progs;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	a->threaded = !pthread_create(&a->thread, NULL, attacher__run, a);
	return a;
}

bool attacher__room(struct attacher *a)
{
	bool room;

	pthread_mutex_lock(&a->lock);
	room = a->unfinished < ATTACHER_QUEUE && !a->stop;
	pthread_mutex_unlock(&a->lock);
	return room;
}

bool attacher__put(struct attacher *a, struct attach_job *job)
{
	pthread_mutex_lock(&a->lock);
	if (a->unfinished >= ATTACHER_QUEUE || a->stop) {
		pthread_mutex_unlock(&a->lock);
		return false;
	}
	a->unfinished++;
	if (!a->threaded) {
		/* no thread: on the caller's, as it was */
		pthread_mutex_unlock(&a->lock);
		attacher__run_job(a, job);
		pthread_mutex_lock(&a->lock);
		attacher__finish(a, job);
	} else {
		a->todo[(a->todo_head + a->ntodo++) % ATTACHER_QUEUE] = job;
		pthread_cond_signal(&a->cond);
	}
	pthread_mutex_unlock(&a->lock);
	return true;
}

struct attach_job *attacher__take(struct attacher *a)
{
	struct attach_job *job = NULL;

	pthread_mutex_lock(&a->lock);
	if (a->ndone) {
		job = a->done[a->done_head];
		a->done_head = (a->done_head + 1) % ATTACHER_QUEUE;
		a->ndone--;
		a->unfinished--;
	}
	pthread_mutex_unlock(&a->lock);
	return job;
}

void attacher__stop(struct attacher *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	if (a->threaded)
		pthread_join(a->thread, NULL);
	a->threaded = false;
	/* the jobs never started: failed, their files closed */
	while (a->ntodo) {
		struct attach_job *job = a->todo[a->todo_head];

		a->todo_head = (a->todo_head + 1) % ATTACHER_QUEUE;
		a->ntodo--;
		close(job->fd);
		job->fd = -1;
		job->links = NULL;
		job->err = -ECANCELED;
		attacher__finish(a, job);
	}
}

void attacher__free(struct attacher *a)
{
	if (!a)
		return;
	attacher__stop(a);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

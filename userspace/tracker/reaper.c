// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include "kernel/uprobes.h"
#include "tracker/reaper.h"

/* link sets waiting: a full queue destroys on the caller's thread, as before */
#define REAPER_QUEUE 4096
/*
 * Each destroy waits out its own grace period: side by side they overlap
 * (400 multi links: ~30 s one at a time at load 24).
 */
#define REAPER_THREADS 4

struct reaper {
	pthread_t threads[REAPER_THREADS];
	int nthreads;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct uprobe_links *queue[REAPER_QUEUE];
	size_t head, n;
	size_t fds;		/* what the queue and the one being destroyed hold */
	bool stop;
};

static void *reaper__run(void *arg)
{
	struct reaper *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct uprobe_links *links;
		size_t fds;

		while (!r->n && !r->stop)
			pthread_cond_wait(&r->cond, &r->lock);
		if (!r->n)
			break;
		links = r->queue[r->head];
		r->head = (r->head + 1) % REAPER_QUEUE;
		r->n--;
		pthread_mutex_unlock(&r->lock);
		fds = uprobe_links__fds(links);
		uprobe_links__destroy(links);
		pthread_mutex_lock(&r->lock);
		r->fds -= fds;
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

struct reaper *reaper__new(void)
{
	struct reaper *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	while (r->nthreads < REAPER_THREADS &&
	       !pthread_create(&r->threads[r->nthreads], NULL, reaper__run, r))
		r->nthreads++;
	if (!r->nthreads) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	return r;
}

void reaper__put(struct reaper *r, struct uprobe_links *links)
{
	bool queued = false;

	if (!links)
		return;
	if (r) {
		pthread_mutex_lock(&r->lock);
		if (r->n < REAPER_QUEUE) {
			r->queue[(r->head + r->n++) % REAPER_QUEUE] = links;
			r->fds += uprobe_links__fds(links);
			queued = true;
			pthread_cond_signal(&r->cond);
		}
		pthread_mutex_unlock(&r->lock);
	}
	if (!queued)
		uprobe_links__destroy(links);
}

size_t reaper__fds(struct reaper *r)
{
	size_t fds;

	if (!r)
		return 0;
	pthread_mutex_lock(&r->lock);
	fds = r->fds;
	pthread_mutex_unlock(&r->lock);
	return fds;
}

void reaper__free(struct reaper *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (int i = 0; i < r->nthreads; i++)
		pthread_join(r->threads[i], NULL);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

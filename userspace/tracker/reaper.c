// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "tracker/reaper.h"

/* links waiting: a full queue destroys on the caller's thread, as before */
#define REAPER_QUEUE 4096

struct reaper {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bpf_link *queue[REAPER_QUEUE];
	size_t head, n;
	bool stop;
};

static void *reaper__run(void *arg)
{
	struct reaper *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct bpf_link *link;

		while (!r->n && !r->stop)
			pthread_cond_wait(&r->cond, &r->lock);
		if (!r->n)
			break;
		link = r->queue[r->head];
		r->head = (r->head + 1) % REAPER_QUEUE;
		r->n--;
		pthread_mutex_unlock(&r->lock);
		bpf_link__destroy(link);
		pthread_mutex_lock(&r->lock);
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
	if (pthread_create(&r->thread, NULL, reaper__run, r)) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	return r;
}

void reaper__put(struct reaper *r, struct bpf_link *link)
{
	bool queued = false;

	if (!link)
		return;
	if (r) {
		pthread_mutex_lock(&r->lock);
		if (r->n < REAPER_QUEUE) {
			r->queue[(r->head + r->n++) % REAPER_QUEUE] = link;
			queued = true;
			pthread_cond_signal(&r->cond);
		}
		pthread_mutex_unlock(&r->lock);
	}
	if (!queued)
		bpf_link__destroy(link);
}

void reaper__free(struct reaper *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

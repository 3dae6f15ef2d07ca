// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sinks/sink.h"

extern const struct sink_ops tui_sink, text_sink, json_sink, alert_sink, prom_sink, http_sink;
extern const struct sink_ops folded_sink, trace_sink, diagnosis_sink;
extern const struct sink_ops pprof_sink, otlp_sink;

/* Every output; the order is the order each event reaches them. */
static const struct sink_ops *const registry[] = {
	&tui_sink,
	&text_sink,
	&json_sink,
	&alert_sink,
	&prom_sink,
	&folded_sink,
	&trace_sink,
	&diagnosis_sink,
	&http_sink,
	&pprof_sink,
	&otlp_sink,
};

#define NSINKS (sizeof(registry) / sizeof(registry[0]))

struct sinks {
	struct sink v[NSINKS];
	size_t n;
	/* which sink each polled descriptor belongs to */
	struct sink *fd_owner[SINKS_MAX_POLLFDS];
};

#define sinks__each(set, s) for (struct sink *s = (set)->v; s < (set)->v + (set)->n; s++)
#define sinks__each_const(set, s) \
	for (const struct sink *s = (set)->v; s < (set)->v + (set)->n; s++)

struct sinks *sinks__open(const struct sink_config *cfg, char *err, size_t errlen, int *status)
{
	struct sinks *set = calloc(1, sizeof(*set));

	*status = 1;
	if (!set) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < NSINKS; i++) {
		struct sink *s = &set->v[set->n];

		if (!registry[i]->wanted(cfg))
			continue;
		s->ops = registry[i];
		if (s->ops->open(s, cfg, err, errlen)) {
			*status = 2;
			sinks__close(set);
			return NULL;
		}
		set->n++;
	}
	return set;
}

int sinks__start(struct sinks *set, const struct model *m, double now, char *err,
		 size_t errlen)
{
	sinks__each(set, s) {
		int ret = s->ops->start ? s->ops->start(s, m, now) : 0;

		if (ret) {
			snprintf(err, errlen, "cannot start the %s: %s", s->ops->name,
				 strerror(-ret));
			return ret;
		}
	}
	return 0;
}

unsigned int sinks__interval_needs(const struct sinks *set)
{
	unsigned int needs = 0;

	sinks__each_const(set, s)
		needs |= s->ops->interval_needs;
	return needs;
}

void sinks__interval(struct sinks *set, const struct model *m, double ts)
{
	sinks__each(set, s) {
		if (s->ops->interval)
			s->ops->interval(s, m, ts);
	}
}

void sinks__slow(struct sinks *set, const struct stall_report *r)
{
	sinks__each(set, s) {
		if (s->ops->slow)
			s->ops->slow(s, r);
	}
}

void sinks__stall(struct sinks *set, const struct stall_report *r)
{
	sinks__each(set, s) {
		if (s->ops->stall)
			s->ops->stall(s, r);
	}
}

void sinks__block(struct sinks *set, const struct block_report *r)
{
	sinks__each(set, s) {
		if (s->ops->block)
			s->ops->block(s, r);
	}
}

void sinks__probe(struct sinks *set, const struct probe_report *r)
{
	sinks__each(set, s) {
		if (s->ops->probe)
			s->ops->probe(s, r);
	}
}

void sinks__stuck(struct sinks *set, const struct stuck_report *r)
{
	sinks__each(set, s) {
		if (s->ops->stuck)
			s->ops->stuck(s, r);
	}
}

void sinks__snapshot(struct sinks *set, const struct model *m, double ts)
{
	sinks__each(set, s) {
		if (s->ops->snapshot)
			s->ops->snapshot(s, m, ts);
	}
}

double sinks__due(const struct sinks *set)
{
	double first = 0;

	sinks__each_const(set, s) {
		double due = s->ops->due ? s->ops->due(s) : 0;

		if (due > 0 && (first == 0 || due < first))
			first = due;
	}
	return first;
}

void sinks__flush(struct sinks *set, const struct model *m, double now)
{
	sinks__each(set, s) {
		double due = s->ops->due ? s->ops->due(s) : 0;

		if (due > 0 && due <= now && s->ops->flush)
			s->ops->flush(s, m, now);
	}
}

int sinks__pollfds(struct sinks *set, struct pollfd *fds, int max)
{
	int n = 0;

	if (max > SINKS_MAX_POLLFDS)
		max = SINKS_MAX_POLLFDS;
	sinks__each(set, s) {
		int k = s->ops->pollfds ? s->ops->pollfds(s, fds + n, max - n) : 0;

		for (int i = 0; i < k; i++)
			set->fd_owner[n + i] = s;
		n += k;
	}
	return n;
}

bool sinks__ready(struct sinks *set, const struct pollfd *fds, int n)
{
	bool go_on = true;

	for (int i = 0; i < n && i < SINKS_MAX_POLLFDS; i++) {
		struct sink *s = set->fd_owner[i];

		if (fds[i].revents && s && s->ops->ready && !s->ops->ready(s, &fds[i]))
			go_on = false;
	}
	return go_on;
}

int sinks__summary(struct sinks *set, const struct model *m, double ts)
{
	int err = 0;

	sinks__each(set, s) {
		int ret = s->ops->summary ? s->ops->summary(s, m, ts) : 0;

		if (ret && !err)
			err = ret;
	}
	return err;
}

void sinks__close(struct sinks *set)
{
	if (!set)
		return;
	sinks__each(set, s)
		s->ops->close(s);
	free(set);
}

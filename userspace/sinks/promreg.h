/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The Prometheus registry: the model folded into series, rendered in the
 * text exposition format; what the textfile writes (and a scrape endpoint
 * would serve). Loop threads, and what the kernel aggregates per process:
 * the blocked time of each syscall, the calls of each probe. Counters stay
 * monotonic for loopwatch's lifetime: a thread that exits (or leaves the
 * model), or an aggregate the kernel evicts, keeps its share in the series it
 * counted in.
 */
#ifndef LOOPWATCH_SINKS_PROMREG_H
#define LOOPWATCH_SINKS_PROMREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "model/model.h"

/* defaults of the flags */
#define PROM_STALE_S 300.0
#define PROM_MAX_SERIES 10000
#define PROM_MIN_ITERATIONS 10

struct prom_options {
	bool per_pid;		/* pid and tid labels */
	double stale_s;		/* a series with no live source goes after this long */
	size_t max_series;	/* 0: no cap */
	__u64 min_iterations;	/* a loop thread is exported from its Nth iteration on */
	bool native;		/* loop series keep exponential buckets (native histograms) */
};

/* What the outputs count about themselves, exported as self metrics. */
enum prom_self {
	PROM_SELF_SERIES_CAPPED,	/* sources kept out or dead series removed by the cap */
	PROM_SELF_SERIES_EXPIRED,	/* series gone after the staleness window */
	PROM_SELF_WRITE_ERRORS,		/* textfile writes that failed */
	PROM_SELF_SCRAPES,		/* /metrics requests answered */
	PROM_SELF_CONNS_DROPPED,	/* scrape connections closed: too slow, too many, bad */
	PROM_SELF_OTLP_SENT,		/* --otlp requests the receiver accepted */
	PROM_SELF_OTLP_DROPPED,		/* --otlp requests dropped: queue full */
	PROM_SELF_OTLP_REFUSED,		/* --otlp requests refused (HTTP 4xx) */
	PROM_SELF_OTLP_RETRIED,		/* --otlp attempts that failed and were retried */
	PROM_SELF_N,
};

struct prom_registry;
struct sink_config;

void prom_options__from_config(struct prom_options *opts, const struct sink_config *cfg);
/* NULL when out of memory */
struct prom_registry *prom_registry__new(const struct prom_options *opts);
void prom_registry__free(struct prom_registry *reg);
/*
 * The one registry of this run, which every Prometheus output renders (the
 * textfile and /metrics agree): made by the first caller, freed by the last
 * prom_registry__put.
 */
struct prom_registry *prom_registry__shared(const struct prom_options *opts);
void prom_registry__put(struct prom_registry *reg);
/* Folds the model into the series, then prints the exposition to out. now_s: monotonic. */
void prom_registry__render(struct prom_registry *reg, const struct model *m, double now_s,
			   FILE *out);
/*
 * --prom-native: the kernel's buckets (LW_HIST_BUCKETS counts, what the native
 * ones are made of: lib/hist.h) of the loop series with these rendered labels,
 * as of the last render; NULL when none.
 */
const __u64 *prom_registry__native(const struct prom_registry *reg, const char *labels);
bool prom_registry__has_native(const struct prom_registry *reg);
/* How long the previous write of the exposition took, for its self metric. */
void prom_registry__set_write_time(struct prom_registry *reg, double seconds);
void prom_registry__count(struct prom_registry *reg, enum prom_self what, __u64 n);
/*
 * The text exposition (0.0.4) as OpenMetrics 1.0: a counter family is named
 * without its _total suffix in HELP and TYPE, and the text ends in # EOF.
 */
void prom_text__to_openmetrics(const char *text, FILE *out);

#endif

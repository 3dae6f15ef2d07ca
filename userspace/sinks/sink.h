/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Outputs: each one file implementing struct sink_ops, registered in
 * sinks.c's table. A sink reads the model and the reports it is handed;
 * it never touches BPF or /proc. A new output is one file and one line in
 * the table.
 */
#ifndef LOOPWATCH_SINKS_SINK_H
#define LOOPWATCH_SINKS_SINK_H

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include "model/model.h"

/* What the outputs were asked for on the command line. */
struct sink_config {
	FILE *out;		/* stdout */
	bool json;		/* JSON lines */
	bool quiet;		/* a daemon: no live view, no table, errors only */
	bool tty;		/* stdout is a terminal: the live view */

	/* alerts */
	double alert_ms;	/* a stall at or over this alerts */
	const char *alert_log;	/* NULL: alert lines go to stderr */
	const char *alert_exec;	/* NULL: run nothing */
	double alert_every_s;	/* per-process rate limit; 0: none */

	/* files written at exit and on SIGUSR1; NULL: none */
	const char *folded;
	bool folded_merge;
	const char *trace;
	const char *report;
	const char *pprof;	/* stall time as a pprof profile */
	double threshold_ms;	/* --threshold: the lag target the report measures against */

	/* Prometheus: the textfile, the scrape endpoint, the registry both render */
	const char *prom_file;	/* NULL: none */
	double prom_interval_s;
	const char *listen;	/* ADDR:PORT for /metrics; NULL: none */
	bool prom_per_pid;
	double prom_stale_s;
	size_t prom_max_series;
	__u64 prom_min_iterations;

	/* OTLP/HTTP: metrics every otlp_interval_s, events as log records */
	const char *otlp;	/* http://HOST[:PORT][/PREFIX]; NULL: none */
	double otlp_interval_s;
	size_t otlp_queue_bytes;
	bool otlp_json;		/* the JSON encoding instead of protobuf */

	/* the lag histogram also as a native one, in the protobuf exposition (--listen) */
	bool prom_native;
};

struct sink;

/* Every op but open and close may be NULL. */
struct sink_ops {
	const char *name;
	/* Is this output asked for? */
	bool (*wanted)(const struct sink_config *cfg);
	/*
	 * Check and prepare, before any BPF is loaded: 0, or a one-line reason
	 * in err (a bad flag's value: exit status 2).
	 */
	int (*open)(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen);
	/* Tracing runs: take the terminal, write a first file. 0 or -errno. */
	int (*start)(struct sink *s, const struct model *m, double now);
	/* what the model must hold at each interval beyond the loops: enum model_drain */
	unsigned int interval_needs;
	/* The interval closed: the model has its numbers. ts is unix time. */
	void (*interval)(struct sink *s, const struct model *m, double ts);
	/* An iteration over --alert-ms or --threshold (alerts want both). */
	void (*slow)(struct sink *s, const struct stall_report *r);
	/* An iteration over --threshold. */
	void (*stall)(struct sink *s, const struct stall_report *r);
	void (*block)(struct sink *s, const struct block_report *r);
	void (*probe)(struct sink *s, const struct probe_report *r);
	/* A loop still inside an iteration past --stuck-after (again every --stuck-every). */
	void (*stuck)(struct sink *s, const struct stuck_report *r);
	/* SIGUSR1: write what the run has found so far (report files); tracing goes on. */
	void (*snapshot)(struct sink *s, const struct model *m, double ts);
	/* When the sink next wants flush (CLOCK_MONOTONIC seconds); 0: never. */
	double (*due)(const struct sink *s);
	/* Periodic work at its own pace (a metrics file), with every aggregate drained. */
	int (*flush)(struct sink *s, const struct model *m, double now);
	/* Descriptors to poll (a terminal's keys): how many written to fds. */
	int (*pollfds)(struct sink *s, struct pollfd *fds, int max);
	/* One of them is ready; false asks loopwatch to stop (q pressed). */
	bool (*ready)(struct sink *s, const struct pollfd *fd);
	/* The end of the run, every aggregate drained: the last words. 0 or -errno. */
	int (*summary)(struct sink *s, const struct model *m, double ts);
	void (*close)(struct sink *s);
};

struct sink {
	const struct sink_ops *ops;
	void *priv;		/* the sink's own state */
};

/* The sinks of one run. */
struct sinks;

#define SINKS_MAX_POLLFDS 64

/* NULL with a one-line reason in err: *status is the exit status to use */
struct sinks *sinks__open(const struct sink_config *cfg, char *err, size_t errlen, int *status);
int sinks__start(struct sinks *set, const struct model *m, double now, char *err,
		 size_t errlen);
/* enum model_drain bits some sink needs at each interval */
unsigned int sinks__interval_needs(const struct sinks *set);
void sinks__interval(struct sinks *set, const struct model *m, double ts);
void sinks__slow(struct sinks *set, const struct stall_report *r);
void sinks__stall(struct sinks *set, const struct stall_report *r);
void sinks__block(struct sinks *set, const struct block_report *r);
void sinks__probe(struct sinks *set, const struct probe_report *r);
void sinks__stuck(struct sinks *set, const struct stuck_report *r);
void sinks__snapshot(struct sinks *set, const struct model *m, double ts);
/* The earliest due time of any sink; 0: none. */
double sinks__due(const struct sinks *set);
/* Flush every sink that is due at now. */
void sinks__flush(struct sinks *set, const struct model *m, double now);
int sinks__pollfds(struct sinks *set, struct pollfd *fds, int max);
/* fds as sinks__pollfds wrote them, after poll(2); false: stop */
bool sinks__ready(struct sinks *set, const struct pollfd *fds, int n);
/* 0, or the first sink's error */
int sinks__summary(struct sinks *set, const struct model *m, double ts);
void sinks__close(struct sinks *set);

#endif

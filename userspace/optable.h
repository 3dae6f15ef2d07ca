/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The one list of loopwatch's flags, and what is made from it (optable.c). */
#ifndef LOOPWATCH_OPTABLE_H
#define LOOPWATCH_OPTABLE_H

#include <stddef.h>
#include <stdio.h>

struct option;

/* getopt's values of the flags with no short form */
enum {
	OPT_COMM = 0x100,
	OPT_JSON,
	OPT_VERSION,
	OPT_HELP_FORMAT,
	OPT_PROM_FILE,
	OPT_PROM_INTERVAL,
	OPT_PROM_PER_PID,
	OPT_THRESHOLD,
	OPT_BLOCK_THRESHOLD,
	OPT_SAMPLE_HZ,
	OPT_NO_NESTED_WAITS,
	OPT_ALERT_MS,
	OPT_ALERT_LOG,
	OPT_ALERT_EXEC,
	OPT_ALERT_EVERY,
	OPT_PROBE,
	OPT_NO_BUILTIN_PROBES,
	OPT_LIST_PROBES,
	OPT_PROBE_THRESHOLD,
	OPT_STUCK_AFTER,
	OPT_STUCK_EVERY,
	OPT_FOLDED,
	OPT_FOLDED_MERGE,
	OPT_TRACE,
	OPT_REPORT,
	OPT_LISTEN,
	OPT_PROM_STALE,
	OPT_PROM_MAX_SERIES,
	OPT_PROM_MIN_ITERATIONS,
	OPT_KUBELET_LOGS,
	OPT_UNWIND_MB,
	OPT_RING_BUFFER,
	OPT_EXCLUDE_COMM,
	OPT_INNERMOST_CULPRITS,
	OPT_CGROUP,
	OPT_SERVICE,
	OPT_PPROF,
	OPT_OTLP,
	OPT_OTLP_INTERVAL,
	OPT_OTLP_QUEUE,
	OPT_PROM_NATIVE,
	OPT_OTLP_ENCODING,
};

struct opt_doc {
	const char *section;	/* a new group of --help starts here; NULL: same group */
	int key;		/* what getopt_long returns */
	const char *name;	/* the long form, without "--" */
	char short_name;	/* 0: none */
	const char *arg;	/* the value's name; NULL: takes none */
	const char *help;	/* --help's text, a phrase (lower case, no final stop) */
	const char *more;	/* sentences the man page and docs/flags.md add; NULL: none */
};

extern const struct opt_doc opt_docs[];
extern const size_t opt_ndocs;

/* getopt_long's table (opt_ndocs + 1 entries) and short options string */
void opt_docs__long_options(struct option *out);
void opt_docs__shortopts(char *buf, size_t len);
/* --help's OPTIONS, the man page's OPTIONS section body, docs/flags.md's table */
void opt_docs__help(FILE *out);
void opt_docs__man(FILE *out);
void opt_docs__markdown(FILE *out);

#endif

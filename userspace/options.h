/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command line of loopwatch. */
#ifndef LOOPWATCH_OPTIONS_H
#define LOOPWATCH_OPTIONS_H

#include <stdbool.h>
#include "lib/lwtypes.h"

#define OPT_MAX_PIDS 64
#define OPT_MAX_PROBES 32

struct options {
	/* -p and --comm: a process either names is traced (none: every process) */
	int pids[OPT_MAX_PIDS];
	int npids;
	char comms[LW_MAX_COMMS][LW_COMM_LEN];
	int ncomms;
	/* with neither: every process but these (shells unless --exclude-comm says) */
	char excludes[LW_MAX_COMMS][LW_COMM_LEN];
	int nexcludes;
	bool excludes_given;
	/* --cgroup PATH and --service NAME, resolved to v2 cgroups (ids, levels) */
	__u64 cgroup_ids[LW_MAX_CGROUPS];
	__u32 cgroup_levels[LW_MAX_CGROUPS];
	int ncgroups;
	double interval_s;
	double duration_s;	/* 0: until interrupted */
	bool json;
	bool verbose;
	bool quiet;		/* daemon mode: no live view, no table, errors only on stderr */

	/* Prometheus: textfile, scrape endpoint, what both export */
	const char *prom_file;	/* NULL: no textfile */
	double prom_interval_s;
	const char *listen;	/* ADDR:PORT serving /metrics; NULL: none */
	bool prom_per_pid;	/* pid and tid labels (one series per thread) */
	double prom_stale_s;	/* series with nothing alive in them go after this long */
	long prom_max_series;	/* 0: no cap */
	long prom_min_iterations;	/* threads enter the export from this iteration on */
	const char *kubelet_logs;	/* the host's /var/log, for Kubernetes names */

	/* stalls and their causes */
	double threshold_ms;	/* an iteration at or over this is a stall */
	double block_threshold_ms;	/* a blocked syscall at or over this is a blocking call */
	int sample_hz;		/* perf's cpu-clock samples a second; 0: the tick's (the default) */
	bool no_nested_waits;	/* every wait call ends an iteration */
	bool innermost_culprits;	/* culprit: the innermost frame, not the app's first */
	int unwind_mb;		/* kernel memory for unwind tables; 0: frame pointers only */
	int ring_mb;		/* the kernel's ring buffer of events, MiB (a power of two) */

	/* alerts on stalls */
	double alert_ms;
	const char *alert_log;	/* NULL: alerts go to stderr */
	const char *alert_exec;	/* NULL: run nothing; else an absolute path */
	double alert_every_s;	/* per-process rate limit, 0: none */

	/* hung loops: an iteration this long is reported live, then again every stuck_every_s */
	double stuck_after_s;	/* 0: never */
	double stuck_every_s;

	/* files written at exit and on SIGUSR1 */
	const char *folded;	/* folded stacks of stall time (flame graphs) */
	bool folded_merge;	/* one stack set for every process, no process frame */
	const char *trace;	/* Chrome Trace Event JSON (Perfetto) */
	const char *report;	/* Markdown diagnosis */

	/* function probes */
	const char *probes[OPT_MAX_PROBES];	/* PATH_OR_LIB:SYMBOL[=label], as given */
	int nprobes;
	bool no_builtin_probes;
	bool list_probes;
	double probe_threshold_ms;

	/* where users' telemetry lives (docs/telemetry.md) */
	const char *pprof;	/* stall time as a pprof profile, written like --folded */
	const char *otlp;	/* OTLP/HTTP receiver: http://HOST[:PORT][/PREFIX] */
	double otlp_interval_s;	/* metrics pushed every this long (default 10) */
	int otlp_queue_kb;	/* encoded requests waiting to be sent, at most */
	bool otlp_json;		/* --otlp-encoding json: OTLP/HTTP JSON, not protobuf */
	bool prom_native;	/* native histograms in the protobuf exposition */
};

/* Parses argv into opts; on bad input prints one line and exits with status 2. */
void options__parse(struct options *opts, int argc, char **argv);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "options.h"
#include "version.h"

static const char doc[] =
"Find what blocks event loops, from outside the process, with eBPF.\n"
"\n"
"Every thread that waits in epoll_wait/epoll_pwait/epoll_pwait2/poll/ppoll/select/pselect6\n"
"is a loop thread; the time between two waits is one iteration: the lag any event\n"
"arriving then suffers. Needs root (CAP_BPF, CAP_PERFMON).\n"
"\n"
"USAGE: loopwatch [OPTIONS] [PID...]\n"
"\n"
"EXAMPLES:\n"
"    loopwatch                   # every loop thread on the machine, live\n"
"    loopwatch -p 1234 -d 10     # one process for 10 s, then a summary\n"
"    loopwatch --comm node -i 5  # processes named node, a row every 5 s\n"
"    loopwatch -p $(pidof node) --comm python3  # these node processes and every python3\n"
"    loopwatch --json -d 30      # JSON lines: one per loop thread per interval\n"
"    loopwatch --quiet --prom-file /var/lib/prometheus/node-exporter/loopwatch.prom\n"
"                                # a daemon feeding node_exporter's textfile collector\n"
"    loopwatch --quiet --listen 127.0.0.1:9977  # a daemon a local Prometheus scrapes\n";

enum {
	OPT_COMM = 0x100,
	OPT_JSON,
	OPT_VERSION,
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
	OPT_PPROF,
	OPT_OTLP,
	OPT_OTLP_INTERVAL,
	OPT_OTLP_QUEUE,
	OPT_PROM_NATIVE,
};

static const struct option long_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "interval", required_argument, NULL, 'i' },
	{ "duration", required_argument, NULL, 'd' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "prom-file", required_argument, NULL, OPT_PROM_FILE },
	{ "prom-interval", required_argument, NULL, OPT_PROM_INTERVAL },
	{ "prom-per-pid", no_argument, NULL, OPT_PROM_PER_PID },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "prom-stale", required_argument, NULL, OPT_PROM_STALE },
	{ "prom-max-series", required_argument, NULL, OPT_PROM_MAX_SERIES },
	{ "prom-min-iterations", required_argument, NULL, OPT_PROM_MIN_ITERATIONS },
	{ "kubelet-logs", required_argument, NULL, OPT_KUBELET_LOGS },
	{ "threshold", required_argument, NULL, OPT_THRESHOLD },
	{ "block-threshold", required_argument, NULL, OPT_BLOCK_THRESHOLD },
	{ "sample-hz", required_argument, NULL, OPT_SAMPLE_HZ },
	{ "no-nested-waits", no_argument, NULL, OPT_NO_NESTED_WAITS },
	{ "alert-ms", required_argument, NULL, OPT_ALERT_MS },
	{ "alert-log", required_argument, NULL, OPT_ALERT_LOG },
	{ "alert-exec", required_argument, NULL, OPT_ALERT_EXEC },
	{ "alert-every", required_argument, NULL, OPT_ALERT_EVERY },
	{ "probe", required_argument, NULL, OPT_PROBE },
	{ "no-builtin-probes", no_argument, NULL, OPT_NO_BUILTIN_PROBES },
	{ "list-probes", no_argument, NULL, OPT_LIST_PROBES },
	{ "probe-threshold", required_argument, NULL, OPT_PROBE_THRESHOLD },
	{ "stuck-after", required_argument, NULL, OPT_STUCK_AFTER },
	{ "stuck-every", required_argument, NULL, OPT_STUCK_EVERY },
	{ "folded", required_argument, NULL, OPT_FOLDED },
	{ "folded-merge", no_argument, NULL, OPT_FOLDED_MERGE },
	{ "trace", required_argument, NULL, OPT_TRACE },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "unwind-mb", required_argument, NULL, OPT_UNWIND_MB },
	{ "ring-buffer", required_argument, NULL, OPT_RING_BUFFER },
	{ "pprof", required_argument, NULL, OPT_PPROF },
	{ "otlp", required_argument, NULL, OPT_OTLP },
	{ "otlp-interval", required_argument, NULL, OPT_OTLP_INTERVAL },
	{ "otlp-queue", required_argument, NULL, OPT_OTLP_QUEUE },
	{ "prom-native", no_argument, NULL, OPT_PROM_NATIVE },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static const char options_help[] =
"OPTIONS:\n"
"  -p, --pid PID[,PID...]  only these processes (repeatable; a thread id names its\n"
"                          process; PIDs after the options count too)\n"
"      --comm NAME[,NAME]  only processes with these names (as in /proc/PID/comm;\n"
"                          repeatable). With -p: the processes either names\n"
"  -i, --interval SECONDS  report every SECONDS (default 1)\n"
"  -d, --duration SECONDS  stop after SECONDS and print the summary\n"
"      --json              JSON lines instead of a table\n"
"  -q, --quiet             for daemons: no live view, no table, nothing on stderr but\n"
"                          errors (--json lines and --prom-file are still written)\n"
"  -v, --verbose           show libbpf's debug output, and the kernel side's own\n"
"                          counters at exit\n"
"      --version           print the version\n"
"  -h, --help              this help\n"
"\n"
"STALLS:\n"
"      --threshold MS      an iteration at or over MS is a stall (default 10)\n"
"      --block-threshold MS  a syscall blocking the loop MS or more is reported (default 1)\n"
"      --sample-hz HZ      CPU stack samples per second inside busy periods (default 997)\n"
"      --no-nested-waits   every wait call ends an iteration, also one made from inside\n"
"                          a handler (a socket timeout's poll, a second loop)\n"
"      --ring-buffer MB    the kernel's buffer of stall, blocking and probed-call events,\n"
"                          a power of two, 1..256 (default 16: ~5000 stalls)\n"
"      --stuck-after SECONDS  a loop inside one iteration this long is reported while\n"
"                          it lasts, with its stacks so far (default 1; 0: never)\n"
"      --stuck-every SECONDS  and again every SECONDS while it lasts (default 5)\n"
"      --unwind-mb MB      kernel memory for the unwind tables that find the callers of\n"
"                          code built without frame pointers (default 16; 0: frame\n"
"                          pointers only, every frame past the leaf marked so)\n"
"\n"
"FILES (written at exit and on SIGUSR1, replaced atomically):\n"
"      --folded FILE       folded stacks of stall time for flame graphs (flamegraph.pl,\n"
"                          inferno, speedscope): cause;process;frames... microseconds\n"
"      --folded-merge      one set of stacks for all processes: no process frame\n"
"      --trace FILE        Chrome Trace Event JSON (Perfetto, chrome://tracing) of the\n"
"                          last 10 minutes: stalls, blocking and probed calls per thread\n"
"      --report FILE       a Markdown diagnosis per process: lag, causes, advice\n"
"      --pprof FILE        stall time as a gzip'd pprof profile (go tool pprof, Pyroscope,\n"
"                          Parca): samples by cause, labels pid, thread, service, cause\n"
"\n"
"OPENTELEMETRY:\n"
"      --otlp URL          push metrics (lag as an exponential histogram) and stalls as\n"
"                          log records over OTLP/HTTP protobuf to URL/v1/metrics and\n"
"                          URL/v1/logs: http://HOST[:PORT][/PREFIX], e.g. a Collector's\n"
"                          http://127.0.0.1:4318 (docs/telemetry.md)\n"
"      --otlp-interval SECONDS  push metrics every SECONDS (default 10)\n"
"      --otlp-queue KB     requests kept while the receiver is down or slow, the oldest\n"
"                          dropped (and counted) past it (default 8192)\n"
"\n"
"ALERTS:\n"
"      --alert-ms MS       a stall over MS on a watched loop is an alert (default 10),\n"
"                          and an interval whose arrival-weighted p99 lag is over MS\n"
"      --alert-log FILE    append alert lines to FILE instead of stderr\n"
"      --alert-exec PROGRAM  run PROGRAM per alert with LOOPWATCH_* variables, no shell\n"
"      --alert-every SECONDS  at most one alert per process per SECONDS, the rest\n"
"                          counted as suppressed (default 10; 0: no limit)\n"
"\n"
"PROBES:\n"
"      --probe FILE:SYMBOL[=LABEL]  time calls of a function (repeatable, up to 32);\n"
"                          FILE is a path or a library name such as libc.so.6\n"
"      --no-builtin-probes  only the --probe functions, not the built-in catalog\n"
"      --probe-threshold MS  a probed call at or over MS is reported (default 1)\n"
"      --list-probes       print the probe catalog and what it finds here, then exit\n"
"\n"
"PROMETHEUS:\n"
"      --prom-file PATH    write metrics in the text exposition format to PATH,\n"
"                          atomically (for node_exporter's textfile collector)\n"
"      --prom-interval SECONDS  rewrite PATH every SECONDS (default 15) and on exit\n"
"      --listen ADDR:PORT  serve /metrics (and /healthz) over HTTP, e.g.\n"
"                          127.0.0.1:9977, 10.0.0.5:9977 or [::1]:9977; :PORT binds\n"
"                          every interface. No authentication, no TLS: whoever reaches\n"
"                          the port reads every traced process's name, executable,\n"
"                          cgroup and pod; bind the address the scraper uses\n"
"      --prom-per-pid      pid and tid labels: a series per thread instead of per\n"
"                          process labels (comm, exe, cgroup, service)\n"
"      --prom-stale SECONDS  a series in which no live process counts goes after\n"
"                          SECONDS (default 300)\n"
"      --prom-max-series N  at most N series (default 10000; 0: no cap); what the cap\n"
"                          keeps out is counted in loopwatch_series_dropped_total\n"
"      --prom-min-iterations N  a thread is exported from its Nth iteration on\n"
"                          (default 10; 0: every thread that ever waited)\n"
"      --prom-native       the iteration histogram also as a native (exponential, 0.27 %)\n"
"                          histogram, served to a scraper that asks for protobuf\n"
"                          (Prometheus 3 with native histograms on); ~17 KB of memory\n"
"                          a loop thread\n"
"      --kubelet-logs DIR  the host's /var/log, where kubelet's pods/ and containers/\n"
"                          name a pod's namespace, pod and container (default /var/log)\n";

static void usage__fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "loopwatch: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see --help)\n");
	exit(2);
}

static double seconds__parse(const char *arg, const char *what, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "loopwatch: invalid %s '%s': want %g..%g seconds\n",
			what, arg, min, max);
		exit(2);
	}
	return v;
}

static double ms__parse(const char *arg, const char *what, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "loopwatch: invalid %s '%s': want %g..%g ms\n", what, arg, min, max);
		exit(2);
	}
	return v;
}

static int hz__parse(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	/* above the kernel's default perf_event_max_sample_rate the samples get throttled */
	if (errno || end == arg || *end || v < 1 || v > 10000)
		usage__fail("invalid --sample-hz '%s': want 1..10000", arg);
	return (int)v;
}

static int mb__parse(const char *arg, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "loopwatch: invalid %s '%s': want %ld..%ld MB\n", what, arg, min,
			max);
		exit(2);
	}
	return (int)v;
}

/* A power of two of MiB: the kernel wants the ring's size a power of two of pages. */
static int ring_mb__parse(const char *arg)
{
	int v = mb__parse(arg, "--ring-buffer", 1, 256);

	if (v & (v - 1))
		usage__fail("invalid --ring-buffer '%s': want a power of two (MB)", arg);
	return v;
}

static const char *path__check(const char *arg, const char *what)
{
	const char *base = strrchr(arg, '/');

	base = base ? base + 1 : arg;
	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || strlen(arg) >= PATH_MAX) {
		fprintf(stderr, "loopwatch: invalid %s '%s': want a file path\n", what, arg);
		exit(2);
	}
	return arg;
}

static bool file__executable(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/*
 * A missing alert program is a typo the user wants to hear about at start, not
 * at the first stall. The program is run by an absolute path: a bare name is
 * looked up in PATH's absolute directories (never the working directory,
 * where anybody may have left a program of that name), a relative path made
 * absolute now.
 */
static const char *program__check(const char *arg)
{
	static char found[PATH_MAX];
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!*arg)
		usage__fail("invalid --alert-exec '%s': want a program", arg);
	if (strchr(arg, '/')) {
		if (!file__executable(arg) || !realpath(arg, found))
			usage__fail("--alert-exec '%s' is not an executable file", arg);
		return found;
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; *p; ) {
		size_t n = strcspn(p, ":");

		if (n && p[0] == '/' &&
		    snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, arg) < (int)sizeof(buf) &&
		    file__executable(buf)) {
			memcpy(found, buf, sizeof(found));
			return found;
		}
		p += n;
		if (*p == ':')
			p++;
	}
	usage__fail("--alert-exec '%s' not found in PATH", arg);
	return NULL;
}

/* FILE:SYMBOL[=LABEL]: both FILE and SYMBOL non-empty, LABEL non-empty when given. */
static const char *probe__check(const char *arg)
{
	const char *colon = strrchr(arg, ':'), *eq;

	if (!colon || colon == arg || strlen(arg) > 512)
		usage__fail("invalid --probe '%s': want FILE:SYMBOL[=LABEL]", arg);
	eq = strchr(colon, '=');
	if (colon[1] == '=' || !colon[1] || (eq && !eq[1]))
		usage__fail("invalid --probe '%s': want FILE:SYMBOL[=LABEL]", arg);
	return arg;
}

static long count__parse(const char *arg, const char *what, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > max) {
		fprintf(stderr, "loopwatch: invalid %s '%s': want 0..%ld\n", what, arg, max);
		exit(2);
	}
	return v;
}

/*
 * ADDR:PORT, :PORT or [IPV6]:PORT with a numeric port; whether the address
 * can be bound is the endpoint's to say.
 */
static const char *listen__check(const char *arg)
{
	const char *colon = strrchr(arg, ':');
	char *end;
	long port;

	if (!colon || strlen(arg) > 256 || (arg[0] == '[' && colon[-1] != ']'))
		usage__fail("invalid --listen '%s': want ADDR:PORT, :PORT or [ADDR]:PORT", arg);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535)
		usage__fail("invalid --listen '%s': the port must be 1..65535", arg);
	return arg;
}

/* the limits the messages below name */
_Static_assert(OPT_MAX_PIDS == 64 && LW_MAX_COMMS == 16, "usage__fail messages");

static int pid__parse(const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > 4194304)
		usage__fail("invalid pid '%s'", arg);
	return (int)v;
}

/* -p 1,2 and -p "$(pidof node)": commas or blanks between pids */
static void pids__add(struct options *opts, const char *arg)
{
	char buf[4096], *save = NULL, *tok;
	int n = 0;

	if (strlen(arg) >= sizeof(buf))
		usage__fail("invalid pid list '%.40s...': too long", arg);
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save)) {
		int pid = pid__parse(tok);
		bool dup = false;

		n++;
		for (int i = 0; i < opts->npids; i++)
			dup |= opts->pids[i] == pid;
		if (dup)
			continue;
		if (opts->npids >= OPT_MAX_PIDS)
			usage__fail("too many pids (at most 64): '%s'", tok);
		opts->pids[opts->npids++] = pid;
	}
	if (!n)
		usage__fail("invalid pid '%s'", arg);
}

static void comms__add(struct options *opts, const char *arg)
{
	const char *p = arg;

	do {
		size_t len = strcspn(p, ",");

		if (!len || len >= LW_COMM_LEN)
			usage__fail("invalid --comm '%s': names of 1 to 15 characters, as in "
				    "/proc/PID/comm, separated by commas", arg);
		if (opts->ncomms >= LW_MAX_COMMS)
			usage__fail("too many --comm names (at most 16): '%s'", arg);
		memcpy(opts->comms[opts->ncomms], p, len);
		opts->comms[opts->ncomms++][len] = '\0';
		p += len;
	} while (*p++ == ',');
}

static void option__apply(struct options *opts, int key, char *arg)
{
	switch (key) {
	case 'p':
		pids__add(opts, arg);
		break;
	case OPT_COMM:
		comms__add(opts, arg);
		break;
	case 'i':
		opts->interval_s = seconds__parse(arg, "interval", 0.01, 3600);
		break;
	case 'd':
		opts->duration_s = seconds__parse(arg, "duration", 0.01, 31536000);
		break;
	case OPT_JSON:
		opts->json = true;
		break;
	case 'q':
		opts->quiet = true;
		break;
	case OPT_PROM_FILE:
		opts->prom_file = path__check(arg, "--prom-file");
		break;
	case OPT_PROM_INTERVAL:
		opts->prom_interval_s = seconds__parse(arg, "--prom-interval", 0.01, 86400);
		break;
	case OPT_PROM_PER_PID:
		opts->prom_per_pid = true;
		break;
	case OPT_LISTEN:
		opts->listen = listen__check(arg);
		break;
	case OPT_PROM_STALE:
		opts->prom_stale_s = seconds__parse(arg, "--prom-stale", 0.1, 31536000);
		break;
	case OPT_PROM_MAX_SERIES:
		opts->prom_max_series = count__parse(arg, "--prom-max-series", 100000000);
		break;
	case OPT_PROM_MIN_ITERATIONS:
		opts->prom_min_iterations = count__parse(arg, "--prom-min-iterations", 1000000000);
		break;
	case OPT_KUBELET_LOGS:
		if (!*arg || strlen(arg) >= PATH_MAX)
			usage__fail("invalid --kubelet-logs '%s': want a directory", arg);
		opts->kubelet_logs = arg;
		break;
	case OPT_THRESHOLD:
		opts->threshold_ms = ms__parse(arg, "--threshold", 0.01, 600000);
		break;
	case OPT_BLOCK_THRESHOLD:
		opts->block_threshold_ms = ms__parse(arg, "--block-threshold", 0.001, 600000);
		break;
	case OPT_SAMPLE_HZ:
		opts->sample_hz = hz__parse(arg);
		break;
	case OPT_RING_BUFFER:
		opts->ring_mb = ring_mb__parse(arg);
		break;
	case OPT_ALERT_MS:
		opts->alert_ms = ms__parse(arg, "--alert-ms", 0.01, 600000);
		break;
	case OPT_ALERT_LOG:
		opts->alert_log = path__check(arg, "--alert-log");
		break;
	case OPT_ALERT_EXEC:
		opts->alert_exec = program__check(arg);
		break;
	case OPT_ALERT_EVERY:
		opts->alert_every_s = seconds__parse(arg, "--alert-every", 0, 86400);
		break;
	case OPT_PROBE:
		if (opts->nprobes >= OPT_MAX_PROBES)
			usage__fail("too many --probe (at most 32): '%s'", arg);
		opts->probes[opts->nprobes++] = probe__check(arg);
		break;
	case OPT_NO_NESTED_WAITS:
		opts->no_nested_waits = true;
		break;
	case OPT_NO_BUILTIN_PROBES:
		opts->no_builtin_probes = true;
		break;
	case OPT_LIST_PROBES:
		opts->list_probes = true;
		break;
	case OPT_STUCK_AFTER:
		opts->stuck_after_s = arg[0] == '0' && !arg[1] ? 0 :
				      seconds__parse(arg, "--stuck-after", 0.01, 86400);
		break;
	case OPT_STUCK_EVERY:
		opts->stuck_every_s = seconds__parse(arg, "--stuck-every", 0.1, 86400);
		break;
	case OPT_FOLDED:
		opts->folded = path__check(arg, "--folded");
		break;
	case OPT_FOLDED_MERGE:
		opts->folded_merge = true;
		break;
	case OPT_TRACE:
		opts->trace = path__check(arg, "--trace");
		break;
	case OPT_REPORT:
		opts->report = path__check(arg, "--report");
		break;
	case OPT_PPROF:
		opts->pprof = path__check(arg, "--pprof");
		break;
	case OPT_OTLP:
		opts->otlp = arg;
		break;
	case OPT_OTLP_INTERVAL:
		opts->otlp_interval_s = seconds__parse(arg, "--otlp-interval", 0.1, 86400);
		break;
	case OPT_PROM_NATIVE:
		opts->prom_native = true;
		break;
	case OPT_OTLP_QUEUE:
		opts->otlp_queue_kb = (int)count__parse(arg, "--otlp-queue", 1024 * 1024);
		if (!opts->otlp_queue_kb)
			usage__fail("%s must be at least 1", "--otlp-queue");
		break;
	case OPT_UNWIND_MB:
		opts->unwind_mb = mb__parse(arg, "--unwind-mb", 0, 4096);
		break;
	case OPT_PROBE_THRESHOLD:
		opts->probe_threshold_ms = ms__parse(arg, "--probe-threshold", 0.001, 600000);
		break;
	case 'v':
		opts->verbose = true;
		break;
	case OPT_VERSION:
		printf("loopwatch %s\n", LOOPWATCH_VERSION);
		exit(0);
	case 'h':
		printf("%s\n%s", doc, options_help);
		exit(0);
	}
}

void options__parse(struct options *opts, int argc, char **argv)
{
	int key;

	memset(opts, 0, sizeof(*opts));
	opts->interval_s = 1.0;
	opts->prom_interval_s = 15.0;
	opts->otlp_interval_s = 10.0;
	opts->otlp_queue_kb = 8192;
	opts->prom_stale_s = 300.0;
	opts->prom_max_series = 10000;
	opts->prom_min_iterations = 10;
	opts->kubelet_logs = "/var/log";
	opts->threshold_ms = 10.0;
	opts->block_threshold_ms = 1.0;
	/* prime, so sampling does not run in lockstep with timers at round rates */
	opts->sample_hz = 997;
	/*
	 * 16 MiB: ~5000 stall events, what 5000 stalls a second fill while a loaded
	 * host keeps loopwatch off the CPU for a second (1 MiB dropped from ~1200/s)
	 */
	opts->ring_mb = 16;
	opts->alert_ms = 10.0;
	opts->alert_every_s = 10.0;
	opts->probe_threshold_ms = 1.0;
	opts->stuck_after_s = 1.0;
	opts->stuck_every_s = 5.0;
	opts->unwind_mb = 16;
	opterr = 0;
	while ((key = getopt_long(argc, argv, ":p:i:d:qvh", long_options, NULL)) != -1) {
		if (key == '?')
			usage__fail("unknown option '%s'", argv[optind - 1]);
		if (key == ':')
			usage__fail("option '%s' needs a value", argv[optind - 1]);
		option__apply(opts, key, optarg);
	}
	/* loopwatch -p $(pidof node): the second pid and on come after the options */
	for (; optind < argc; optind++) {
		if (strspn(argv[optind], "0123456789") != strlen(argv[optind]))
			usage__fail("unexpected argument '%s'", argv[optind]);
		pids__add(opts, argv[optind]);
	}
	if (opts->prom_per_pid && !opts->prom_file && !opts->listen)
		usage__fail("%s needs --prom-file or --listen", "--prom-per-pid");
	if (opts->prom_native && !opts->listen)
		usage__fail("%s needs --listen", "--prom-native");
	if (opts->folded_merge && !opts->folded)
		usage__fail("%s needs --folded", "--folded-merge");
}

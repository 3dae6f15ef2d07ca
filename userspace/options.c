// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "optable.h"
#include "options.h"
#include "proc/cgroupfs.h"
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

/* HZ, or 0 for "tick": the scheduler tick's samples (bpf/sample.bpf.c) */
static int hz__parse(const char *arg)
{
	char *end;
	long v;

	if (!strcmp(arg, "tick"))
		return 0;
	errno = 0;
	v = strtol(arg, &end, 10);
	/* above the kernel's default perf_event_max_sample_rate the samples get throttled */
	if (errno || end == arg || *end || v < 1 || v > 10000)
		usage__fail("invalid --sample-hz '%s': want 1..10000 or tick", arg);
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

/* NAME[,NAME...] appended to names (*n of them): process names as in /proc/PID/comm */
static void names__add(char (*names)[LW_COMM_LEN], int *n, const char *arg, const char *flag)
{
	const char *p = arg;

	do {
		size_t len = strcspn(p, ",");

		if (!len || len >= LW_COMM_LEN) {
			fprintf(stderr, "loopwatch: invalid %s '%s': names of 1 to 15 characters, as "
				"in /proc/PID/comm, separated by commas (see --help)\n", flag, arg);
			exit(2);
		}
		if (*n >= LW_MAX_COMMS) {
			fprintf(stderr, "loopwatch: too many %s names (at most 16): '%s' (see "
				"--help)\n", flag, arg);
			exit(2);
		}
		memcpy(names[*n], p, len);
		names[(*n)++][len] = '\0';
		p += len;
	} while (*p++ == ',');
}

/* names --exclude-comm drops when it is not given */
static const char *const default_excludes[] = {
	"bash", "sh", "dash", "zsh", "ksh", "fish", "tcsh", "csh",
};

static void excludes__add(struct options *opts, const char *arg)
{
	if (!opts->excludes_given)
		opts->nexcludes = 0;
	opts->excludes_given = true;
	if (strcmp(arg, "none"))
		names__add(opts->excludes, &opts->nexcludes, arg, "--exclude-comm");
}

/* a cgroup named by path or service, resolved now: a typo is said at start */
static void cgroups__add(struct options *opts, int key, const char *arg)
{
	struct cgroup_ref ref;
	char err[600];
	int ret;

	if (opts->ncgroups >= LW_MAX_CGROUPS)
		usage__fail("too many --cgroup and --service (at most 8): '%s'", arg);
	ret = key == OPT_CGROUP ? cgroupfs__by_path(arg, &ref, err, sizeof(err)) :
				  cgroupfs__by_service(arg, &ref, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "loopwatch: %s: %s\n", key == OPT_CGROUP ? "--cgroup" : "--service",
			err);
		exit(2);
	}
	opts->cgroup_ids[opts->ncgroups] = ref.id;
	opts->cgroup_levels[opts->ncgroups++] = ref.level;
}

static void option__apply(struct options *opts, int key, char *arg)
{
	switch (key) {
	case 'p':
		pids__add(opts, arg);
		break;
	case OPT_COMM:
		names__add(opts->comms, &opts->ncomms, arg, "--comm");
		break;
	case OPT_EXCLUDE_COMM:
		excludes__add(opts, arg);
		break;
	case OPT_CGROUP:
	case OPT_SERVICE:
		cgroups__add(opts, key, arg);
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
	case OPT_INNERMOST_CULPRITS:
		opts->innermost_culprits = true;
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
	case OPT_OTLP_ENCODING:
		if (strcmp(arg, "json") && strcmp(arg, "protobuf"))
			usage__fail("--otlp-encoding %s: json or protobuf", arg);
		opts->otlp_json = !strcmp(arg, "json");
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
		printf("%s\n", doc);
		opt_docs__help(stdout);
		exit(0);
	case OPT_HELP_FORMAT:
		if (!strcmp(arg, "man"))
			opt_docs__man(stdout);
		else if (!strcmp(arg, "markdown"))
			opt_docs__markdown(stdout);
		else
			usage__fail("invalid --help-format '%s': want man or markdown", arg);
		exit(0);
	}
}

/*
 * --exclude-comm applies only where nothing is named; a name both kept and
 * left out is a contradiction to say, not to settle silently.
 */
static void options__check_excludes(struct options *opts)
{
	for (int i = 0; opts->excludes_given && i < opts->nexcludes; i++) {
		for (int k = 0; k < opts->ncomms; k++) {
			if (!strcmp(opts->excludes[i], opts->comms[k]))
				usage__fail("--comm and --exclude-comm both name '%s'",
					    opts->comms[k]);
		}
	}
	if (opts->npids || opts->ncomms || opts->ncgroups)
		opts->nexcludes = 0;
}

void options__parse(struct options *opts, int argc, char **argv)
{
	struct option long_options[opt_ndocs + 1];
	char shortopts[64];
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
	/*
	 * The tick's samples: on a saturated VM perf's cpu-clock at 997 Hz cost
	 * aiohttp 11 % and node 27 % of their throughput in interrupts alone, the
	 * tick's cost nothing measurable (docs/cost.md); collector.c falls back to
	 * 997 Hz where the kernel has no tick to hook
	 */
	opts->sample_hz = 0;
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
	for (size_t i = 0; i < sizeof(default_excludes) / sizeof(default_excludes[0]); i++)
		strcpy(opts->excludes[opts->nexcludes++], default_excludes[i]);
	opt_docs__long_options(long_options);
	opt_docs__shortopts(shortopts, sizeof(shortopts));
	opterr = 0;
	while ((key = getopt_long(argc, argv, shortopts, long_options, NULL)) != -1) {
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
	options__check_excludes(opts);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The one list of loopwatch's flags: getopt's table, --help, the man page's
 * OPTIONS and docs/flags.md are all made from it (`make docs` writes the last
 * two; tests/e2e/test_docs.py fails when they drift).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "optable.h"

const struct opt_doc opt_docs[] = {
	{ "OPTIONS", 'p', "pid", 'p', "PID[,PID...]",
	  "only these processes (repeatable; a thread id names its process; PIDs after the "
	  "options count too, so -p $(pidof node) works)",
	  "Up to 64 in all; commas or blanks between pids. They are probed and their "
	  "probed calls reported whether or not they run an event loop; loop rows and "
	  "stalls need a loop thread. A process none of whose threads has entered a wait "
	  "call two seconds in is said once on stderr." },
	{ NULL, OPT_COMM, "comm", 0, "NAME[,NAME...]",
	  "only processes with these names, as in /proc/PID/comm (repeatable). With -p: "
	  "the processes either names",
	  "Up to 16 names." },
	{ NULL, OPT_CGROUP, "cgroup", 0, "PATH",
	  "only processes in this cgroup v2 or under it (repeatable, up to 8 with --service); "
	  "PATH as /proc/PID/cgroup shows it, or under the cgroup2 mount. With -p or --comm: "
	  "the processes any of them names", NULL },
	{ NULL, OPT_SERVICE, "service", 0, "NAME",
	  "only processes in the cgroup named NAME or NAME.service, and under it: a systemd "
	  "unit, a scope, a container's directory (repeatable)",
	  "The shallowest such cgroup of the v2 tree; two at that depth are an error naming "
	  "one, to be given with --cgroup." },
	{ NULL, OPT_EXCLUDE_COMM, "exclude-comm", 0, "NAME[,NAME...]",
	  "without -p or --comm: every process but these (repeatable; default: the shells "
	  "bash,sh,dash,zsh,ksh,fish,tcsh,csh; none: nothing left out)",
	  "A shell waits in wait4 for each command it runs between two reads of the "
	  "terminal: its iterations are the user's commands, not lag anybody suffers. Up to "
	  "16 names; naming a process with -p or --comm watches it anyway, and --comm with "
	  "a name also excluded is an error." },
	{ NULL, 'i', "interval", 'i', "SECONDS", "report every SECONDS (default 1)", NULL },
	{ NULL, 'd', "duration", 'd', "SECONDS", "stop after SECONDS and print the summary",
	  NULL },
	{ NULL, OPT_JSON, "json", 0, NULL, "JSON lines instead of a table",
	  "One object per loop thread per interval (interval) and per thread at exit "
	  "(summary); stalls, blocking calls, probed calls, hung loops, alerts and lost "
	  "events as they happen (stall, blocking_call, probe_call, stuck, alert, dropped); "
	  "at exit the blocked time per process and syscall (syscall_summary) and per probed "
	  "function (probe_summary). Fields: "
	  "docs/outputs.md." },
	{ NULL, 'q', "quiet", 'q', NULL,
	  "for daemons: no live view, no table, nothing on stderr but errors and alerts "
	  "(--json lines and --prom-file are still written)", NULL },
	{ NULL, 'v', "verbose", 'v', NULL,
	  "libbpf's debug output, and the kernel side's own counters at exit",
	  "The counters: events dropped, loop threads not tracked, loop records refused, "
	  "switch-ins missed, preemptions and stack walks." },
	{ NULL, OPT_VERSION, "version", 0, NULL, "print the version", NULL },
	{ NULL, 'h', "help", 'h', NULL, "this help", NULL },
	{ NULL, OPT_HELP_FORMAT, "help-format", 0, "man|markdown",
	  "print the options as the man page's OPTIONS section or as docs/flags.md's table "
	  "(what `make docs` writes)", NULL },

	{ "STALLS", OPT_THRESHOLD, "threshold", 0, "MS",
	  "an iteration at or over MS is a stall (default 10)", NULL },
	{ NULL, OPT_BLOCK_THRESHOLD, "block-threshold", 0, "MS",
	  "a syscall blocking the loop MS or more is reported (default 1)", NULL },
	{ NULL, OPT_SAMPLE_HZ, "sample-hz", 0, "HZ|tick",
	  "CPU stack samples inside busy periods: at the scheduler tick (tick, the default), "
	  "or HZ a second from perf's cpu-clock",
	  "The tick's samples come at the interrupts the scheduler tick makes anyway, HZ a "
	  "second on a busy CPU (250 on Debian's kernels, 1000 on Ubuntu's and Fedora's); where "
	  "that is slower than 1 ms, an iteration the tick finds 1/16 of the way to the "
	  "threshold is sampled every ~1 ms from then on, also after it leaves the CPU and comes "
	  "back: ~20 samples in a 25 ms stall, none in its first tick (docs/limits.md). A kernel "
	  "without the tick's hooks gets 997 Hz instead, said in one line. A rate starts a "
	  "cpu-clock timer on every CPU (997, a prime, does not run in lockstep with timers at "
	  "round rates: ~25 samples in a 25 ms stall); in a VM each of its interrupts exits to "
	  "the hypervisor (~5 us of CPU a request for a saturated aiohttp, docs/cost.md)." },
	{ NULL, OPT_NO_NESTED_WAITS, "no-nested-waits", 0, NULL,
	  "every wait call ends an iteration, also one made from inside a handler (a socket "
	  "timeout's poll, a second loop)",
	  "For a program that runs a second loop deeper in its stack while the first one is "
	  "still open, which loopwatch would otherwise take for nested waits "
	  "(docs/how-it-works.md)." },
	{ NULL, OPT_RING_BUFFER, "ring-buffer", 0, "MB",
	  "the kernel's buffer of stall, blocking and probed-call events, a power of two, "
	  "1..256 (default 16: ~5000 stalls)",
	  "Events that do not fit are counted and said in every output (dropped)." },
	{ NULL, OPT_STUCK_AFTER, "stuck-after", 0, "SECONDS",
	  "a loop inside one iteration this long is reported while it lasts, with its stacks "
	  "so far (default 1; 0: never)",
	  "A STUCK line (a stuck JSON line) with the stacks sampled so far and the syscall "
	  "it sleeps in, and an alert." },
	{ NULL, OPT_STUCK_EVERY, "stuck-every", 0, "SECONDS",
	  "and again every SECONDS while it lasts (default 5)", NULL },
	{ NULL, OPT_INNERMOST_CULPRITS, "innermost-culprits", 0, NULL,
	  "name each stack's culprit by its innermost frame, whoever's code it is (default: "
	  "the application's own code first, then a library's, then the runtime's)",
	  "By default a requests.get in a helper is the helper's: frames in site-packages, "
	  "dist-packages or node_modules name a culprit only when no frame of the "
	  "application does, and the stdlib, node:internal, libc and V8's internals only "
	  "when neither does. Full stacks are the same either way." },
	{ NULL, OPT_UNWIND_MB, "unwind-mb", 0, "MB",
	  "kernel memory for the unwind tables that find the callers of code built without "
	  "frame pointers (default 16; 0: frame pointers only, every frame past the leaf "
	  "marked so)",
	  "The call-frame information (.eh_frame, .debug_frame) of every file a traced "
	  "process maps, built once per file and shared. A file that does not fit, JIT code "
	  "and a process not set up yet are walked with frame pointers, and those frames are "
	  "marked (\"unwind\":\"fp\" in JSON)." },

	{ "FILES (written at exit and on SIGUSR1, replaced atomically)", OPT_FOLDED, "folded",
	  0, "FILE",
	  "folded stacks of stall time for flame graphs (flamegraph.pl, inferno, speedscope, "
	  "tools/flamegraph.py): cause;process;frames... microseconds", NULL },
	{ NULL, OPT_FOLDED_MERGE, "folded-merge", 0, NULL,
	  "one set of stacks for all processes: no process frame", NULL },
	{ NULL, OPT_TRACE, "trace", 0, "FILE",
	  "Chrome Trace Event JSON (Perfetto, chrome://tracing) of the last 10 minutes: "
	  "stalls, blocking and probed calls per thread",
	  "A track per loop thread, each stall a slice with its cause breakdown and stacks "
	  "in args, its blocking and probed calls nested in it, hung loops as instant "
	  "events; at most 100000 events." },
	{ NULL, OPT_REPORT, "report", 0, "FILE",
	  "a Markdown diagnosis per process: lag, causes, advice",
	  "Lag against the --threshold target, utilization, the culprits ranked by their "
	  "share of stall time with one line of advice each, blocking calls by syscall and "
	  "file, the run-queue share, probed calls and hung loops." },

	{ NULL, OPT_PPROF, "pprof", 0, "FILE",
	  "stall time as a gzip'd pprof profile (go tool pprof, Pyroscope, Parca): samples by "
	  "cause, labels pid, thread, service, cause",
	  "The same shares as --folded: sample types stall (the default), cpu, blocked, runq "
	  "and gil (a Python loop's wait for the GIL, at its holders' stacks) in nanoseconds, "
	  "one location per frame (Python and JavaScript frames with file "
	  "and line), labels pid, tid, thread, comm, service and cause." },

	{ "OPENTELEMETRY", OPT_OTLP, "otlp", 0, "URL",
	  "push metrics (lag as an exponential histogram) and stalls as log records over "
	  "OTLP/HTTP protobuf to URL/v1/metrics and URL/v1/logs: http://HOST[:PORT][/PREFIX], "
	  "e.g. a Collector's http://127.0.0.1:4318 (docs/telemetry.md)",
	  "No TLS: send to a local OpenTelemetry Collector. One resource per process "
	  "(service.name, process.pid, process.executable.name, container.id, k8s.*); the "
	  "loop counters as sums; stalls, hung loops and blocking calls as log records with "
	  "culprit and stack. Sent by a thread of its own: a receiver that is down or slow "
	  "costs the collection nothing; requests are retried with backoff and the oldest "
	  "dropped, and counted, when the queue is full." },
	{ NULL, OPT_OTLP_INTERVAL, "otlp-interval", 0, "SECONDS",
	  "push metrics every SECONDS (default 10)", NULL },
	{ NULL, OPT_OTLP_QUEUE, "otlp-queue", 0, "KB",
	  "requests kept while the receiver is down or slow, the oldest dropped (and counted) "
	  "past it (default 8192)", NULL },
	{ NULL, OPT_OTLP_ENCODING, "otlp-encoding", 0, "ENCODING",
	  "protobuf (the default) or json: OTLP/HTTP's two encodings of the same requests",
	  "json sends Content-Type application/json, written by OTLP's JSON Protobuf Encoding "
	  "(lowerCamelCase field names, 64-bit integers as decimal strings, enums as "
	  "integers), for receivers or proxies that take only JSON." },

	{ "ALERTS", OPT_ALERT_MS, "alert-ms", 0, "MS",
	  "a stall over MS on a watched loop is an alert (default 10), and an interval whose "
	  "arrival-weighted p99 lag is over MS", NULL },
	{ NULL, OPT_ALERT_LOG, "alert-log", 0, "FILE",
	  "append alert lines to FILE instead of stderr",
	  "Each line starts with when it was raised (RFC 3339, UTC). Opened with "
	  "O_NOFOLLOW." },
	{ NULL, OPT_ALERT_EXEC, "alert-exec", 0, "PROGRAM",
	  "run PROGRAM per alert with LOOPWATCH_* variables, no shell",
	  "A bare name is looked up in PATH's absolute directories; at most 4 run at once." },
	{ NULL, OPT_ALERT_EVERY, "alert-every", 0, "SECONDS",
	  "at most one alert per process per SECONDS, the rest counted as suppressed "
	  "(default 10; 0: no limit)", NULL },

	{ "PROBES", OPT_PROBE, "probe", 0, "FILE:SYMBOL[=LABEL]",
	  "time calls of a function (repeatable, up to 32); FILE is a path or a library name "
	  "such as libc.so.6", NULL },
	{ NULL, OPT_NO_BUILTIN_PROBES, "no-builtin-probes", 0, NULL,
	  "only the --probe functions, not the built-in catalog", NULL },
	{ NULL, OPT_PROBE_THRESHOLD, "probe-threshold", 0, "MS",
	  "a probed call at or over MS is reported (default 1)", NULL },
	{ NULL, OPT_LIST_PROBES, "list-probes", 0, NULL,
	  "print the probe catalog and what it finds here, then exit",
	  "An entry attaches in the files its name pattern matches and in any other mapped "
	  "file that defines its function (node's bundled OpenSSL and zlib)." },

	{ "PROMETHEUS", OPT_PROM_FILE, "prom-file", 0, "PATH",
	  "write metrics in the text exposition format to PATH, atomically (for "
	  "node_exporter's textfile collector)", NULL },
	{ NULL, OPT_PROM_INTERVAL, "prom-interval", 0, "SECONDS",
	  "rewrite PATH every SECONDS (default 15) and on exit", NULL },
	{ NULL, OPT_LISTEN, "listen", 0, "ADDR:PORT",
	  "serve /metrics (and /healthz) over HTTP, e.g. 127.0.0.1:9977, 10.0.0.5:9977 or "
	  "[::1]:9977; :PORT binds every interface. No authentication, no TLS: whoever "
	  "reaches the port reads every traced process's name, executable, cgroup and pod; "
	  "bind the address the scraper uses", NULL },
	{ NULL, OPT_PROM_PER_PID, "prom-per-pid", 0, NULL,
	  "pid and tid labels: a series per thread instead of per process labels (comm, exe, "
	  "cgroup, service)", NULL },
	{ NULL, OPT_PROM_STALE, "prom-stale", 0, "SECONDS",
	  "a series in which no live process counts goes after SECONDS (default 300)", NULL },
	{ NULL, OPT_PROM_MAX_SERIES, "prom-max-series", 0, "N",
	  "at most N series (default 10000; 0: no cap); what the cap keeps out is counted in "
	  "loopwatch_series_dropped_total", NULL },
	{ NULL, OPT_PROM_MIN_ITERATIONS, "prom-min-iterations", 0, "N",
	  "a thread is exported from its Nth iteration on (default 10; 0: every thread that "
	  "ever waited)", NULL },
	{ NULL, OPT_PROM_NATIVE, "prom-native", 0, NULL,
	  "the iteration histogram also as a native (exponential, schema 8: 0.27 %) histogram, "
	  "served to a scraper that asks for protobuf (Prometheus 3 with native histograms "
	  "on); needs --listen; ~17 KB of memory a loop thread", NULL },
	{ NULL, OPT_KUBELET_LOGS, "kubelet-logs", 0, "DIR",
	  "the host's /var/log, where kubelet's pods/ and containers/ name a pod's namespace, "
	  "pod and container (default /var/log)", NULL },
};

const size_t opt_ndocs = sizeof(opt_docs) / sizeof(opt_docs[0]);

void opt_docs__long_options(struct option *out)
{
	for (size_t i = 0; i < opt_ndocs; i++)
		out[i] = (struct option){ opt_docs[i].name, opt_docs[i].arg ? required_argument :
					  no_argument, NULL, opt_docs[i].key };
	out[opt_ndocs] = (struct option){ 0 };
}

void opt_docs__shortopts(char *buf, size_t len)
{
	size_t n = 0;

	/* ':' first: a missing value is told apart from an unknown option */
	if (len)
		buf[n++] = ':';
	for (size_t i = 0; i < opt_ndocs && n + 3 < len; i++) {
		if (!opt_docs[i].short_name)
			continue;
		buf[n++] = opt_docs[i].short_name;
		if (opt_docs[i].arg)
			buf[n++] = ':';
	}
	if (len)
		buf[n < len ? n : len - 1] = '\0';
}

static int flag__format(const struct opt_doc *d, char *buf, size_t len)
{
	if (d->short_name)
		return snprintf(buf, len, "-%c, --%s%s%s", d->short_name, d->name,
				d->arg ? " " : "", d->arg ? d->arg : "");
	return snprintf(buf, len, "--%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
}

#define HELP_WIDTH 88
#define HELP_COL 26

/* text from column at, wrapped at HELP_WIDTH, the lines after the first at column col */
static void words__wrap(FILE *out, const char *text, int at, int col)
{
	bool first = true;

	while (*text) {
		size_t w = strcspn(text, " ");

		if (!first && at + 1 + (int)w > HELP_WIDTH) {
			fprintf(out, "\n%*s", col, "");
			at = col;
		} else if (!first) {
			fputc(' ', out);
			at++;
		}
		fwrite(text, 1, w, out);
		first = false;
		at += (int)w;
		text += w;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

void opt_docs__help(FILE *out)
{
	char flag[96];

	for (size_t i = 0; i < opt_ndocs; i++) {
		const struct opt_doc *d = &opt_docs[i];
		int n;

		if (d->section)
			fprintf(out, "%s%s:\n", i ? "\n" : "", d->section);
		n = flag__format(d, flag, sizeof(flag));
		fprintf(out, "  %s%s", d->short_name ? "" : "    ", flag);
		n += d->short_name ? 2 : 6;
		if (n + 2 > HELP_COL) {
			fputs("  ", out);
			n += 2;
		} else {
			fprintf(out, "%*s", HELP_COL - n, "");
			n = HELP_COL;
		}
		words__wrap(out, d->help, n, HELP_COL);
	}
}

/* roff: a backslash or a hyphen is escaped, a line never starts with . or ' */
static void roff__text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

static void sentence__first_upper(FILE *out, const char *s, void (*emit)(FILE *, const char *))
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s", s);
	if (buf[0] >= 'a' && buf[0] <= 'z')
		buf[0] = (char)(buf[0] - 'a' + 'A');
	emit(out, buf);
}

void opt_docs__man(FILE *out)
{
	for (size_t i = 0; i < opt_ndocs; i++) {
		const struct opt_doc *d = &opt_docs[i];

		if (d->section && i) {
			char sec[128];
			size_t k = strcspn(d->section, " (");

			/* ".SS Stalls": the section's first word, capitalized */
			snprintf(sec, sizeof(sec), "%.*s", (int)k, d->section);
			for (size_t j = 1; sec[j]; j++)
				sec[j] = (char)(sec[j] >= 'A' && sec[j] <= 'Z' ? sec[j] - 'A' + 'a' : sec[j]);
			fprintf(out, ".SS %s\n", sec);
		}
		fputs(".TP\n.B ", out);
		if (d->short_name)
			fprintf(out, "\\-%c, ", d->short_name);
		fputs("\\-\\-", out);
		roff__text(out, d->name);
		if (d->arg) {
			fputs(" \\fI", out);
			roff__text(out, d->arg);
			fputs("\\fR", out);
		}
		fputc('\n', out);
		sentence__first_upper(out, d->help, roff__text);
		fputs(".", out);
		if (d->more) {
			fputc(' ', out);
			roff__text(out, d->more);
		}
		fputc('\n', out);
	}
}

static void md__text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else
			fputc(*s, out);
	}
}

void opt_docs__markdown(FILE *out)
{
	char flag[96];

	fputs("| flag | meaning |\n| --- | --- |\n", out);
	for (size_t i = 0; i < opt_ndocs; i++) {
		const struct opt_doc *d = &opt_docs[i];

		flag__format(d, flag, sizeof(flag));
		fputs("| `", out);
		md__text(out, flag);
		fputs("` | ", out);
		sentence__first_upper(out, d->help, md__text);
		fputc('.', out);
		if (d->more) {
			fputc(' ', out);
			md__text(out, d->more);
		}
		fputs(" |\n", out);
	}
}

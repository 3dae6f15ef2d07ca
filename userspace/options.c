// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "options.h"
#include "version.h"

static const char doc[] =
"Find what blocks event loops, from outside the process, with eBPF.\n"
"\n"
"Every thread that waits in epoll_wait/epoll_pwait/epoll_pwait2/poll/ppoll/select/pselect6\n"
"is a loop thread; the time between two waits is one iteration: the lag any event\n"
"arriving then suffers. Needs root (CAP_BPF, CAP_PERFMON).\n"
"\n"
"USAGE: loopwatch [OPTIONS]\n"
"\n"
"EXAMPLES:\n"
"    loopwatch                   # every loop thread on the machine, live\n"
"    loopwatch -p 1234 -d 10     # one process for 10 s, then a summary\n"
"    loopwatch --comm node -i 5  # processes named node, a row every 5 s\n"
"    loopwatch --json -d 30      # JSON lines: one per loop thread per interval\n";

enum {
	OPT_COMM = 0x100,
	OPT_JSON,
	OPT_VERSION,
};

static const struct option long_options[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "interval", required_argument, NULL, 'i' },
	{ "duration", required_argument, NULL, 'd' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{},
};

static const char options_help[] =
"OPTIONS:\n"
"  -p, --pid PID           only this process (repeatable)\n"
"      --comm NAME         only processes with this name (as in /proc/PID/comm)\n"
"  -i, --interval SECONDS  report every SECONDS (default 1)\n"
"  -d, --duration SECONDS  stop after SECONDS and print the summary\n"
"      --json              JSON lines instead of a table\n"
"  -v, --verbose           show libbpf's debug output\n"
"      --version           print the version\n"
"  -h, --help              this help\n";

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

static void option__apply(struct options *opts, int key, char *arg)
{
	switch (key) {
	case 'p':
		if (opts->npids >= OPT_MAX_PIDS)
			usage__fail("too many -p (at most 64): '%s'", arg);
		opts->pids[opts->npids++] = pid__parse(arg);
		break;
	case OPT_COMM:
		if (!*arg || strlen(arg) >= LW_COMM_LEN)
			usage__fail("invalid --comm '%s': 1 to 15 characters, as in /proc/PID/comm",
				    arg);
		strcpy(opts->comm, arg);
		opts->has_comm = true;
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
	opterr = 0;
	while ((key = getopt_long(argc, argv, ":p:i:d:vh", long_options, NULL)) != -1) {
		if (key == '?')
			usage__fail("unknown option '%s'", argv[optind - 1]);
		if (key == ':')
			usage__fail("option '%s' needs a value", argv[optind - 1]);
		option__apply(opts, key, optarg);
	}
	if (optind < argc)
		usage__fail("unexpected argument '%s'", argv[optind]);
}

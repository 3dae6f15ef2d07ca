// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/stat with any byte in comm: the start time (field 22) and
 * arg_start (field 48) are the same whatever the process named itself,
 * newlines, spaces and parentheses included.
 */
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "check.h"
#include "proc/procs.h"

/* fields 3..48 after "PID (COMM)": 22 is 4242, 48 is 140737000, others small numbers */
static void stat__make(char *buf, size_t len, const char *comm)
{
	int n = snprintf(buf, len, "1234 (%s) S", comm);

	for (int field = 4; field <= 52; field++)
		n += snprintf(buf + n, len - (size_t)n, " %d", field == 22 ? 4242 :
			      field == 48 ? 140737000 : field);
	snprintf(buf + n, len - (size_t)n, "\n");
}

static void names__parse(void)
{
	const char *names[] = { "plain", "a\nb", "a b", ")", "(", ") 1 2 3 (", "a\n) 9 9 (\n",
				"x) S 1 2 3", "", "\n\n\n" };
	char buf[1024];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		uint64_t start = 0, image = 0;

		stat__make(buf, sizeof(buf), names[i]);
		CHECK(proc_stat__parse(buf, &start, &image) && start == 4242 &&
		      image == 140737000, "comm %zu: start %llu image %llu", i,
		      (unsigned long long)start, (unsigned long long)image);
	}
}

static void broken__parse(void)
{
	uint64_t start = 1, image = 1;

	CHECK(!proc_stat__parse("", &start, &image), "empty text");
	CHECK(!proc_stat__parse("1234 (x", &start, &image), "no closing parenthesis");
	CHECK(!proc_stat__parse("1234 x) S 1 2", &start, &image), "no opening parenthesis");
	CHECK(!proc_stat__parse("1234 (x) S 1 2 3\n", &start, &image), "cut before field 22");
	CHECK(!proc_stat__parse("1234 (x) S 1\n2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
				&start, &image), "a newline among the fields");
	/* an old kernel: fields up to 44 only */
	CHECK(proc_stat__parse("1 (x) S 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 77 23 24",
			       &start, &image) && start == 77 && image == 0,
	      "no arg_start: start %llu image %llu", (unsigned long long)start,
	      (unsigned long long)image);
}

/* This very process, renamed "a\nb": still found, with the start time it had. */
static void self__renamed(void)
{
	struct procs *ps = procs__new();
	struct proc *p = ps ? procs__get(ps, getpid()) : NULL;
	uint64_t start = p ? proc__start_time(p) : 0;

	CHECK(p && start > 0, "this process under its own name");
	procs__free(ps);
	prctl(PR_SET_NAME, "a\nb) 1 (", 0, 0, 0);
	ps = procs__new();
	p = ps ? procs__get(ps, getpid()) : NULL;
	CHECK(p && proc__start_time(p) == start, "renamed a\\nb: %s, start %llu vs %llu",
	      p ? "found" : "not found", p ? (unsigned long long)proc__start_time(p) : 0ULL,
	      (unsigned long long)start);
	procs__free(ps);
}

int main(void)
{
	names__parse();
	broken__parse();
	self__renamed();
	return check__report();
}

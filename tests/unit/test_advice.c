// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The report's advice from facts: a fixture per sentence, each with the
 * dominant part (and call, and ending) that must choose it, and the words
 * it must never say for it.
 */
#include <string.h>
#include "sinks/advice.h"

#include "check.h"

static bool has(const char *text, const char *words)
{
	return strstr(text, words) != NULL;
}

static void test_culprits(void)
{
	static const struct {
		const char *via;
		enum stall_cause cause;
		const char *want;
	} cases[] = {
		{ "", CAUSE_CPU, "CPU work on the loop" },
		{ "json.dumps", CAUSE_CPU, "serializing on the loop" },
		{ "fsync", CAUSE_BLOCKED, "a disk flush on the loop" },
		{ "clock_nanosleep", CAUSE_BLOCKED, "a blocking sleep on the loop" },
		{ "futex", CAUSE_BLOCKED, "waiting for a lock another thread holds" },
		{ "recvfrom", CAUSE_BLOCKED, "a blocking read or network call" },
		{ "poll", CAUSE_BLOCKED, "a blocking read or network call" },
		{ "unlink", CAUSE_BLOCKED, "a blocking call on the loop" },
		{ "", CAUSE_RUNQ, "runnable but had no CPU" },
		/* waiting for a CPU is the host's doing, whatever call it happened in */
		{ "clock_nanosleep", CAUSE_RUNQ, "runnable but had no CPU" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *a = advice__culprit(cases[i].via, cases[i].cause);

		CHECK(has(a, cases[i].want), "%s/%s: %s", cases[i].via,
		      stall_cause__name(cases[i].cause), a);
		/* only a culprit that waited for a CPU is told the host is short of it */
		CHECK(has(a, "short of CPU") == (cases[i].cause == CAUSE_RUNQ), "%s/%s: %s",
		      cases[i].via, stall_cause__name(cases[i].cause), a);
	}
}

static void test_runq(void)
{
	/* by part: cpu, blocked, runq */
	static const __u64 sleep_[3] = { 10, 500000000, 20 };
	static const __u64 starved[3] = { 300, 100, 600 };
	static const __u64 cpu_with_host[3] = { 600, 100, 300 };
	static const __u64 blocked_with_host[3] = { 100, 600, 300 };
	static const __u64 cpu_only[3] = { 900, 50, 50 };
	static const __u64 none[3] = { 0, 0, 0 };
	const char *a;

	/* a 500 ms sleep is not a host short of CPU */
	a = advice__runq(sleep_);
	CHECK(has(a, "blocking calls, not from a lack of CPU") && !has(a, "starves"), "%s", a);
	a = advice__runq(starved);
	CHECK(has(a, "The host starves this loop"), "%s", a);
	a = advice__runq(cpu_with_host);
	CHECK(has(a, "host adds to the stalls") && has(a, "work on CPU") && !has(a, "starves"),
	      "%s", a);
	a = advice__runq(blocked_with_host);
	CHECK(has(a, "host adds to the stalls") && has(a, "blocking calls"), "%s", a);
	a = advice__runq(cpu_only);
	CHECK(has(a, "own work on CPU, not from a lack of CPU"), "%s", a);
	a = advice__runq(none);
	CHECK(has(a, "No stall time"), "%s", a);
}

static void test_hung(void)
{
	const char *a;

	/* a call that finished is not a deadlock */
	a = advice__hung(true, CAUSE_BLOCKED);
	CHECK(has(a, "It ended: a long blocking call") && !has(a, "look for a deadlock"), "%s", a);
	a = advice__hung(true, CAUSE_CPU);
	CHECK(has(a, "It ended: a long computation") && !has(a, "look for a deadlock"), "%s", a);
	a = advice__hung(true, CAUSE_RUNQ);
	CHECK(has(a, "It ended: it mostly waited for a CPU"), "%s", a);
	a = advice__hung(false, CAUSE_BLOCKED);
	CHECK(has(a, "look for a deadlock or a call without a timeout"), "%s", a);
	a = advice__hung(false, CAUSE_CPU);
	CHECK(has(a, "a loop that does not terminate") && !has(a, "deadlock"), "%s", a);
	a = advice__hung(false, CAUSE_RUNQ);
	CHECK(has(a, "waiting for a CPU: the host starves it"), "%s", a);
}

int main(void)
{
	test_culprits();
	test_runq();
	test_hung();
	return check__report();
}

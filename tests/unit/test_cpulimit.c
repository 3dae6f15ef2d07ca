// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cgroup files that say a CPU quota, as the kernel writes them (fixtures
 * in tests/unit/fixtures/cgroup: v2's cpu.max and cpu.stat, v1's quota,
 * period and cpu.stat), and what a hostile or truncated file must not pass.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "lib/cpulimit.h"

static char fixtures[PATH_MAX];

/* beside this source file when run from the tree, else from the build directory's parent */
static void fixtures__find(void)
{
	char exe[PATH_MAX - 64];
	ssize_t n;
	char *slash;

	snprintf(fixtures, sizeof(fixtures), "%s", __FILE__);
	slash = strrchr(fixtures, '/');
	if (slash)
		slash[1] = '\0';
	else
		fixtures[0] = '\0';
	strncat(fixtures, "fixtures/cgroup", sizeof(fixtures) - strlen(fixtures) - 1);
	if (access(fixtures, R_OK) == 0)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	for (int up = 0; up < 3 && (slash = strrchr(exe, '/')); up++)
		*slash = '\0';
	snprintf(fixtures, sizeof(fixtures), "%s/tests/unit/fixtures/cgroup", exe);
}

static const char *fixture(const char *name, char *buf, size_t len)
{
	char path[PATH_MAX + 64];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fixtures, name);
	f = fopen(path, "r");
	buf[0] = '\0';
	if (!f) {
		CHECK(0, "fixture %s unreadable", path);
		return buf;
	}
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void v2__files(void)
{
	__u64 quota = 0, period = 0;
	struct cpu_stat st;
	char buf[1024];

	CHECK(cpu_max__parse(fixture("v2.limited.cpu.max", buf, sizeof(buf)), &quota, &period) &&
	      quota == 30000 && period == 100000, "cpu.max: %llu/%llu",
	      (unsigned long long)quota, (unsigned long long)period);
	CHECK(!cpu_max__parse(fixture("v2.unlimited.cpu.max", buf, sizeof(buf)), &quota, &period),
	      "\"max 100000\" is no quota");
	CHECK(cpu_stat__parse(fixture("v2.cpu.stat", buf, sizeof(buf)), &st) &&
	      st.nr_periods == 60 && st.nr_throttled == 58 && st.throttled_ns == 4100000000ULL,
	      "v2 cpu.stat: %llu %llu %llu", (unsigned long long)st.nr_periods,
	      (unsigned long long)st.nr_throttled, (unsigned long long)st.throttled_ns);
	/* a cgroup without the cpu controller: usage only, no throttling counters */
	CHECK(!cpu_stat__parse(fixture("v2.nocpu.cpu.stat", buf, sizeof(buf)), &st),
	      "cpu.stat without the cpu controller's counters");
}

static void v1__files(void)
{
	struct cpu_stat st;
	long long v = 0;
	char buf[1024];

	CHECK(cgroup_int__parse(fixture("v1.cpu.cfs_quota_us", buf, sizeof(buf)), &v) &&
	      v == 30000, "quota %lld", v);
	CHECK(cgroup_int__parse(fixture("v1.unlimited.cpu.cfs_quota_us", buf, sizeof(buf)), &v) &&
	      v == -1, "unlimited quota %lld", v);
	CHECK(cgroup_int__parse(fixture("v1.cpu.cfs_period_us", buf, sizeof(buf)), &v) &&
	      v == 100000, "period %lld", v);
	CHECK(cpu_stat__parse(fixture("v1.cpu.stat", buf, sizeof(buf)), &st) &&
	      st.nr_periods == 51 && st.nr_throttled == 50 && st.throttled_ns == 3457283510ULL,
	      "v1 cpu.stat: %llu %llu %llu", (unsigned long long)st.nr_periods,
	      (unsigned long long)st.nr_throttled, (unsigned long long)st.throttled_ns);
}

static void broken__files(void)
{
	const char *maxes[] = { "", "\n", "max", "30000", "30000 ", "-5 100000\n", "0 100000",
				"30000 0\n", "30000 100000 7\n", "30000x 100000", "x 100000",
				"99999999999999999999999 100000" };
	const char *ints[] = { "", "\n", "abc", "12 34", "1.5", "99999999999999999999999" };
	__u64 quota, period;
	struct cpu_stat st;
	long long v;

	for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++)
		CHECK(!cpu_max__parse(maxes[i], &quota, &period), "cpu.max \"%s\" passed", maxes[i]);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		CHECK(!cgroup_int__parse(ints[i], &v), "integer \"%s\" passed", ints[i]);
	/* a key only at a line's start, a value on its own line */
	CHECK(!cpu_stat__parse("xnr_periods 5\nnr_throttled\n7\nthrottled_time -3\n", &st),
	      "broken cpu.stat passed: %llu %llu", (unsigned long long)st.nr_periods,
	      (unsigned long long)st.nr_throttled);
	CHECK(cpu_stat__parse("nr_periods 5", &st) && st.nr_periods == 5,
	      "no final newline: %llu", (unsigned long long)st.nr_periods);
}

int main(void)
{
	fixtures__find();
	v2__files();
	v1__files();
	broken__files();
	return check__report();
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/cpulimit.h"

/* A decimal integer followed by nothing but blanks; *end past it. */
static bool int__parse(const char *s, long long *v, const char **end)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!(*s == '-' || (*s >= '0' && *s <= '9')))
		return false;
	errno = 0;
	*v = strtoll(s, &e, 10);
	if (errno || e == s)
		return false;
	*end = e;
	return true;
}

static bool rest__blank(const char *s)
{
	return s[strspn(s, " \t\n")] == '\0';
}

bool cgroup_int__parse(const char *text, long long *value)
{
	const char *end;

	return int__parse(text, value, &end) && rest__blank(end);
}

bool cpu_max__parse(const char *text, __u64 *quota_us, __u64 *period_us)
{
	long long quota, period;
	const char *end;

	if (!int__parse(text, &quota, &end) || quota <= 0)
		return false;	/* "max": no quota */
	if (!int__parse(end, &period, &end) || period <= 0 || !rest__blank(end))
		return false;
	*quota_us = (__u64)quota;
	*period_us = (__u64)period;
	return true;
}

bool cpu_stat__parse(const char *text, struct cpu_stat *out)
{
	bool any = false;

	memset(out, 0, sizeof(*out));
	while (*text) {
		size_t key = strcspn(text, " \n"), line = strcspn(text, "\n");
		long long v;
		const char *end;

		if (text[key] == ' ' && int__parse(text + key, &v, &end) && v >= 0 &&
		    end <= text + line) {
			if (key == 10 && !strncmp(text, "nr_periods", key))
				out->nr_periods = (__u64)v, any = true;
			else if (key == 12 && !strncmp(text, "nr_throttled", key))
				out->nr_throttled = (__u64)v, any = true;
			else if (key == 14 && !strncmp(text, "throttled_time", key))
				out->throttled_ns = (__u64)v, any = true;
			else if (key == 14 && !strncmp(text, "throttled_usec", key))
				out->throttled_ns = (__u64)v * 1000, any = true;
		}
		text += line;
		if (*text)
			text++;
	}
	return any;
}

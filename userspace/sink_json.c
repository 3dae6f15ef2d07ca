// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include "jsonw.h"
#include "sink.h"

static void loop_view__json(FILE *out, const char *type, double ts,
			    const struct loop_thread *t, const struct loop_view *v)
{
	fprintf(out, "{\"type\":\"%s\",\"ts\":%.3f,\"pid\":%u,\"tid\":%u,\"comm\":", type, ts,
		t->pid, t->tid);
	json__string(out, t->comm);
	fputs(",\"thread\":", out);
	json__string(out, t->thread);
	fprintf(out, ",\"iterations\":%llu,\"busy_ms\":%.3f,\"idle_ms\":%.3f,"
		"\"utilization\":%.4f,\"lag_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,"
		"\"p999\":%.3f,\"max\":%.3f}}\n",
		(unsigned long long)v->iterations, json__ms(v->busy_ns), json__ms(v->idle_ns),
		loop_view__utilization(v), json__ms(v->lag.p50_ns), json__ms(v->lag.p90_ns),
		json__ms(v->lag.p99_ns), json__ms(v->lag.p999_ns), json__ms(v->lag.max_ns));
}

void sink_json__interval(FILE *out, const struct model *m, double ts)
{
	size_t n;
	struct loop_thread **v = model__sorted(m, false, &n);

	for (size_t i = 0; v && i < n; i++)
		loop_view__json(out, "interval", ts, v[i], &v[i]->interval);
	free(v);
	fflush(out);
}

void sink_json__summary(FILE *out, const struct model *m, double ts)
{
	struct loop_view sum;
	size_t n;
	struct loop_thread **v = model__sorted(m, true, &n);

	for (size_t i = 0; v && i < n; i++) {
		loop_thread__summary(v[i], &sum);
		loop_view__json(out, "summary", ts, v[i], &sum);
	}
	free(v);
	fflush(out);
}

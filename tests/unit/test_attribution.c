// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stall's time shared among its stacks adds up to the stall, each cause to
 * its stacks; functions get self time at the culprit frame (libc and the
 * kernel charged to their caller) and inclusive time once per stack.
 */
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "model/attribution.h"

#define MS 1000000ull

static void frame__set(struct frame *f, enum frame_kind kind, const char *func, const char *mod)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	snprintf(f->func, sizeof(f->func), "%s", func);
	snprintf(f->module, sizeof(f->module), "%s", mod);
}

/* leaf first: [kernel schedule,] [libc read,] leaf, main */
static void stack__set(struct stack_report *s, const char *leaf, bool syscall)
{
	int n = 0;

	s->frames = calloc(4, sizeof(*s->frames));
	if (syscall) {
		frame__set(&s->frames[n++], FRAME_KERNEL, "schedule", "[kernel]");
		frame__set(&s->frames[n++], FRAME_NATIVE, "read", "libc.so.6");
	}
	frame__set(&s->frames[n++], FRAME_NATIVE, leaf, "app");
	frame__set(&s->frames[n++], FRAME_NATIVE, "main", "app");
	s->nframes = n;
}

static __u64 shares__sum(const struct stack_share *v, int n, int stack, int cause)
{
	__u64 sum = 0;

	for (int i = 0; i < n; i++) {
		if ((stack == -2 || v[i].stack == stack) && (cause < 0 || (int)v[i].cause == cause))
			sum += v[i].ns;
	}
	return sum;
}

/*
 * A node stack with no JS frame: V8's internals (a property store under a
 * builtin trampoline) are charged to the node binding that called into V8,
 * not each to a row of its own; with nothing else named, the leaf stays.
 */
static void culprit__skips_v8_internals(void)
{
	struct frame f[4];
	struct stack_report s = { .samples = 1, .frames = f, .nframes = 4 };

	frame__set(&f[0], FRAME_NATIVE, "v8::internal::Object::SetPropertyInternal", "node");
	frame__set(&f[1], FRAME_NATIVE, "Builtins_CallApiCallback", "node");
	frame__set(&f[2], FRAME_NATIVE, "node::fs::Read", "node");
	frame__set(&f[3], FRAME_NATIVE, "uv_run", "node");
	CHECK(stack_report__culprit(&s) == 2, "culprit %d", stack_report__culprit(&s));
	s.nframes = 2;
	CHECK(stack_report__culprit(&s) == 0, "only V8's own: its leaf");
}

/* the offenders table's rows: one per function, whatever line or caller */
static void culprit__function_identity(void)
{
	char a[128], b[128];

	culprit__function("render (app.py:28) < handle (app.py:46)", a, sizeof(a));
	culprit__function("render (app.py:31) < other (app.py:90)", b, sizeof(b));
	CHECK(!strcmp(a, "render (app.py)") && !strcmp(a, b), "%s | %s", a, b);
	culprit__function("dictNext < keysCommand", a, sizeof(a));
	CHECK(!strcmp(a, "dictNext"), "%s", a);
	culprit__function("f (x:y:1) < g", a, sizeof(a));
	CHECK(!strcmp(a, "f (x:y)"), "a path with a colon keeps it: %s", a);
	culprit__function("std::map<int, int>::find < main", a, sizeof(a));
	CHECK(!strcmp(a, "std::map<int, int>::find"), "%s", a);
	culprit__function("x", a, 1);
	CHECK(a[0] == '\0', "no room");
	culprit__function("fetch (app.py:22) -> get (requests/api.py:73) ... poll 60.1 ms", a,
			  sizeof(a));
	CHECK(!strcmp(a, "fetch (app.py)"), "the library call is not the culprit: %s", a);
	culprit__function("zread ... read 500.0 ms /var/db", a, sizeof(a));
	CHECK(!strcmp(a, "zread"), "%s", a);
}

/* a table of many stalls of one culprit keeps no one stall's call and duration */
static void culprit__call_stripped(void)
{
	char a[160];

	culprit__without_call("fetch (app.py:22) -> get (requests/api.py:73) ... poll 60.1 ms tcp "
			      "10.0.0.5:80", a, sizeof(a));
	CHECK(!strcmp(a, "fetch (app.py:22) -> get (requests/api.py:73)"), "%s", a);
	culprit__without_call("woken by worker[12] (in f (a.py:3) ... futex 20.0 ms)", a, sizeof(a));
	CHECK(!strcmp(a, "woken by worker[12] (in f (a.py:3))"), "%s", a);
	culprit__without_call("render (app.py:28) < handle (app.py:46)", a, sizeof(a));
	CHECK(!strcmp(a, "render (app.py:28) < handle (app.py:46)"), "%s", a);
}

/*
 * An application's Python frame over a library's: the line names the
 * app's frame, then the call it made into the library (by its path under
 * the packages folder); the stall's sleep and its peer follow.
 */
static void culprit__names_the_library_call(void)
{
	struct frame f[4];
	struct stall_report r = { .cause = CAUSE_BLOCKED, .blocked_ns = 60 * MS, .nstacks = 1 };
	struct stack_report *s = &r.stacks[0];

	frame__set(&f[0], FRAME_PYTHON, "_make_request", "");
	snprintf(f[0].file, sizeof(f[0].file), "/usr/lib/python3/dist-packages/urllib3/cp.py");
	f[0].line = 446;
	frame__set(&f[1], FRAME_PYTHON, "get", "");
	snprintf(f[1].file, sizeof(f[1].file), "/usr/lib/python3/dist-packages/requests/api.py");
	f[1].line = 73;
	frame__set(&f[2], FRAME_PYTHON, "fetch_user", "");
	snprintf(f[2].file, sizeof(f[2].file), "/srv/app.py");
	f[2].line = 22;
	frame__set(&f[3], FRAME_PYTHON, "handler", "");
	snprintf(f[3].file, sizeof(f[3].file), "/srv/app.py");
	f[3].line = 40;
	s->blocked = true;
	s->ns = 60 * MS;
	snprintf(s->syscall, sizeof(s->syscall), "poll");
	s->frames = f;
	s->nframes = 4;
	stall_report__top(&r, r.top, sizeof(r.top));
	CHECK(!strcmp(r.top, "fetch_user (app.py:22) -> get (requests/api.py:73) ... poll 60.0 ms"),
	      "%s", r.top);
	snprintf(r.peer.syscall, sizeof(r.peer.syscall), "poll");
	snprintf(r.peer.path, sizeof(r.peer.path), "tcp 127.0.0.1:8081");
	stall_report__top(&r, r.top, sizeof(r.top));
	CHECK(!strcmp(r.top, "fetch_user (app.py:22) -> get (requests/api.py:73) ... poll 60.0 ms "
			     "tcp 127.0.0.1:8081"), "%s", r.top);
	snprintf(f[1].file, sizeof(f[1].file), "/usr/lib/python3.11/json/__init__.py");
	snprintf(f[1].func, sizeof(f[1].func), "dumps");
	stack_report__top(s, r.top, sizeof(r.top));
	CHECK(!strcmp(r.top, "fetch_user (app.py:22) -> dumps (json/__init__.py:73)"), "%s", r.top);
	/* the same for JS: node's own module by its node: name */
	for (int i = 0; i < 4; i++)
		f[i].kind = FRAME_JS;
	snprintf(f[1].file, sizeof(f[1].file), "node:internal/fs/utils");
	stack_report__top(s, r.top, sizeof(r.top));
	CHECK(!strcmp(r.top, "fetch_user (app.py:22) -> dumps (node:internal/fs/utils:73)"), "%s",
	      r.top);
	s->nframes = 1;
	s->frames = &f[2];
	r.peer.path[0] = '\0';
	stall_report__top(&r, r.top, sizeof(r.top));
	CHECK(!strcmp(r.top, "fetch_user (app.py:22) ... poll 60.0 ms"), "%s", r.top);
}

int main(void)
{
	struct stall_report r = { .pid = 7, .tid = 7, .comm = "app", .duration_ns = 22 * MS,
				  .oncpu_ns = 8 * MS, .blocked_ns = 9 * MS, .runq_ns = 5 * MS };
	struct stack_share v[STALL_SHARES_MAX];
	struct attribution *a = attribution__new();
	const struct func_stat **fs;
	size_t nf;
	int n;

	r.nstacks = 4;
	r.stacks[0].samples = 3;
	stack__set(&r.stacks[0], "parse", false);
	r.stacks[1].samples = 1;
	stack__set(&r.stacks[1], "render", false);
	r.stacks[2].blocked = true;
	r.stacks[2].ns = 10 * MS;	/* 9 asleep, 1 waiting for a CPU after the wake-up */
	snprintf(r.stacks[2].syscall, sizeof(r.stacks[2].syscall), "read");
	stack__set(&r.stacks[2], "query", true);
	r.stacks[3].runq = true;
	r.stacks[3].ns = 2 * MS;
	stack__set(&r.stacks[3], "render", false);

	n = stall_report__shares(&r, v);
	CHECK(shares__sum(v, n, -2, -1) == r.duration_ns, "sum %llu",
	      (unsigned long long)shares__sum(v, n, -2, -1));
	CHECK(shares__sum(v, n, 0, CAUSE_CPU) == 6 * MS, "3 of 4 samples of 8 ms");
	CHECK(shares__sum(v, n, 1, CAUSE_CPU) == 2 * MS, "1 of 4 samples");
	CHECK(shares__sum(v, n, 2, CAUSE_BLOCKED) == 9 * MS, "the call's blocked share");
	CHECK(shares__sum(v, n, 2, CAUSE_RUNQ) == 1 * MS, "its wait after the wake-up");
	CHECK(shares__sum(v, n, 3, CAUSE_RUNQ) == 2 * MS, "the longest preemption");
	/* the other 2 ms of run-queue time go where it ran: by samples */
	CHECK(shares__sum(v, n, 0, CAUSE_RUNQ) == 1500000, "%llu",
	      (unsigned long long)shares__sum(v, n, 0, CAUSE_RUNQ));

	attribution__add_stall(a, &r);
	attribution__end_interval(a);
	fs = attribution__sorted(a, false, FUNC_SORT_SELF, 7, &nf);
	CHECK(nf == 3, "parse, render, query (main has no self time): %zu", nf);
	CHECK(nf >= 3 && !strcmp(fs[0]->func, "query") &&
	      func_times__self(&fs[0]->run) == 10 * MS && !strcmp(fs[0]->via, "read"),
	      "read and the kernel are charged to query: %s %llu", fs[0]->func,
	      (unsigned long long)func_times__self(&fs[0]->run));
	CHECK(nf >= 3 && !strcmp(fs[1]->func, "parse") &&
	      func_times__self(&fs[1]->run) == 7500000, "%s", fs[1]->func);
	CHECK(nf >= 3 && !strcmp(fs[2]->func, "render") &&
	      func_times__self(&fs[2]->run) == 4500000, "%s", fs[2]->func);
	/* main: on every stack, once each; no self time, so not in the self order */
	free(fs);
	fs = attribution__sorted(a, true, FUNC_SORT_INCL, 0, &nf);
	CHECK(nf >= 1 && !strcmp(fs[0]->func, "main") &&
	      func_times__incl(&fs[0]->interval) == 22 * MS, "main inclusive");
	free(fs);
	for (int i = 0; i < r.nstacks; i++)
		free(r.stacks[i].frames);
	attribution__free(a);
	culprit__skips_v8_internals();
	culprit__function_identity();
	culprit__call_stripped();
	culprit__names_the_library_call();
	return check__report();
}

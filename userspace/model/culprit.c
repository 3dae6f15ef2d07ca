// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which frames name a culprit: the user's own code, never the runtime it
 * calls into. A stall in json.dumps is the fault of whoever called it with
 * a large object, a sleep in libc of whoever called sleep, and a
 * pbkdf2Sync in node:internal/crypto of the route that called it.
 */
#include <stdio.h>
#include <string.h>
#include "model/report.h"
#include "runtimes/runtimes.h"

static bool module__is_runtime(const char *m)
{
	return !strncmp(m, "libc.so", 7) || !strncmp(m, "ld-linux", 8) ||
	       !strncmp(m, "libpthread", 10) || !strcmp(m, "[vdso]");
}

/* libc's and the runtimes' own code (json.dumps, node:internal/..., V8's builtins) */
static bool frame__is_runtime(const struct frame *f)
{
	return module__is_runtime(f->module) || runtimes__frame_is_own(f);
}

/*
 * A third party's code: a package installed beside the interpreter, or a
 * node module. Its frames name a culprit only when no frame of the
 * application's own does: a requests.get in a helper is the helper's doing.
 */
static bool file__is_library(const char *file)
{
	return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
	       strstr(file, "/node_modules/");
}

/* how far a frame is from the application's own code: lower names a culprit first */
enum frame_owner { OWNER_APP, OWNER_LIBRARY, OWNER_RUNTIME };

static enum frame_owner frame__owner(const struct frame *f)
{
	if (frame__is_runtime(f))
		return OWNER_RUNTIME;
	if (frame__is_script(f) && file__is_library(f->file))
		return OWNER_LIBRARY;
	return OWNER_APP;
}

/* where the function a culprit line names first ends: at its caller, its callee or its call */
static size_t culprit__first_len(const char *top)
{
	static const char *const seps[] = { " < ", " -> ", " ... " };
	size_t n = strlen(top);

	for (size_t i = 0; i < sizeof(seps) / sizeof(seps[0]); i++) {
		const char *end = strstr(top, seps[i]);

		if (end && (size_t)(end - top) < n)
			n = (size_t)(end - top);
	}
	return n;
}

void culprit__function(const char *top, char *buf, size_t len)
{
	size_t n = culprit__first_len(top), k = 0;

	if (!len)
		return;
	for (size_t i = 0; i < n && k + 1 < len; i++) {
		/* ":LINE)" closing a "(file:line)": the line goes, the file stays */
		if (top[i] == ':' && i + 1 < n && top[i + 1] >= '0' && top[i + 1] <= '9') {
			size_t j = i + 1;

			while (j < n && top[j] >= '0' && top[j] <= '9')
				j++;
			if (j < n && top[j] == ')') {
				i = j - 1;
				continue;
			}
		}
		buf[k++] = top[i];
	}
	buf[k] = '\0';
}

void culprit__without_call(const char *top, char *buf, size_t len)
{
	const char *call = strstr(top, " ... "), *party = strstr(top, " (in ");
	size_t n = strlen(top);
	bool closed;

	if (!call) {
		snprintf(buf, len, "%s", top);
		return;
	}
	/* "woken by x[1] (in f ... recv 60.0 ms)": the party's parenthesis stays */
	closed = party && party < call && top[n - 1] == ')';
	snprintf(buf, len, "%.*s%s", (int)(call - top), top, closed ? ")" : "");
}

static bool culprit_innermost;

void culprit__innermost(bool on)
{
	culprit_innermost = on;
}

static bool frame__named(const struct frame *f, bool script)
{
	return script == frame__is_script(f) && f->kind != FRAME_KERNEL && f->func[0] &&
	       f->func[0] != '[';
}

/*
 * The frame to start from: the innermost of the application's own code,
 * else of a library, else the runtime's (the stdlib, libc); with
 * --innermost-culprits simply the innermost named frame.
 */
static int stack__culprit(const struct stack_report *s, bool script)
{
	int best = -1;
	enum frame_owner best_owner = OWNER_RUNTIME;

	for (int i = 0; i < s->nframes; i++) {
		const struct frame *f = &s->frames[i];
		enum frame_owner owner;

		if (!frame__named(f, script))
			continue;
		if (culprit_innermost)
			return i;
		owner = frame__owner(f);
		if (best < 0 || owner < best_owner) {
			best = i;
			best_owner = owner;
		}
		if (owner == OWNER_APP)
			break;
	}
	return best;
}

int stack_report__culprit(const struct stack_report *s)
{
	int first = stack__culprit(s, true);

	return first >= 0 ? first : stack__culprit(s, false);
}

/*
 * A script frame's place: the file's base name, or the path a reader knows
 * it by when the base name could be anyone's -- a library's under its
 * packages folder ("requests/api.py"), the Python stdlib's under its
 * lib folder ("json/__init__.py"), node's own module ("node:internal/fs/utils").
 */
static const char *frame__place(const struct frame *f)
{
	static const char *const roots[] = { "/site-packages/", "/dist-packages/", "/node_modules/" };
	const char *base = strrchr(f->file, '/'), *lib;

	if (!strncmp(f->file, "node:", 5))
		return f->file;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		const char *at = strstr(f->file, roots[i]);

		if (at)
			return at + strlen(roots[i]);
	}
	/* .../lib/python3.11/json/__init__.py */
	lib = strstr(f->file, "/lib/python");
	if (lib && (lib = strchr(lib + 11, '/')))
		return lib + 1;
	return base ? base + 1 : f->file;
}

static size_t frame__print(const struct frame *f, bool script, const char *sep, char *buf,
			   size_t len)
{
	int n;

	if (script && f->file[0])
		n = snprintf(buf, len, "%s%s (%s:%d)", sep, f->func, frame__place(f), f->line);
	else
		n = snprintf(buf, len, "%s%s", sep, f->func);
	return n < 0 ? 0 : (size_t)n;
}

/*
 * The two frames that best name a culprit: Python or JS code when there is
 * any. The application's script frame comes with the library or runtime call
 * it made when it made one ("fetch_user (app.py:22) -> get (requests/api.py:73)"),
 * else with its caller ("render (app.py:28) < handle (app.py:46)").
 */
void stack_report__top(const struct stack_report *s, char *buf, size_t len)
{
	int first = stack_report__culprit(s), shown = 0;
	bool script = first >= 0 && frame__is_script(&s->frames[first]);
	size_t used = 0;

	buf[0] = '\0';
	if (first < 0) {
		snprintf(buf, len, "[unknown]");
		return;
	}
	used = frame__print(&s->frames[first], script, "", buf, len);
	/* native code's callee is libc's wrapper of the call the line names next */
	for (int i = first - 1; script && i >= 0 && used < len; i--) {
		if (!frame__named(&s->frames[i], script))
			continue;
		frame__print(&s->frames[i], script, " -> ", buf + used, len - used);
		return;
	}
	for (int i = first + 1; i < s->nframes && shown < 1 && used < len; i++) {
		if (!frame__named(&s->frames[i], script))
			continue;
		used += frame__print(&s->frames[i], script, " < ", buf + used, len - used);
		shown++;
	}
}

/*
 * The culprit that most of the stall names: the stacks of its dominant
 * cause grouped by their top frames, weighted by samples (CPU) or time
 * (blocked, run queue). Samples of one function split over many stacks
 * (a native leaf, a line apart) still add up to it.
 */
static void stall_report__own_top(const struct stall_report *r, char *buf, size_t len)
{
	char tops[REPORT_MAX_STACKS][sizeof(r->top)];
	__u64 weight[REPORT_MAX_STACKS] = { 0 };
	int heaviest[REPORT_MAX_STACKS];
	bool by_ns = r->cause != CAUSE_CPU;
	int ntops = 0, best = -1;

	for (int i = 0; i < r->nstacks && i < REPORT_MAX_STACKS; i++) {
		const struct stack_report *s = &r->stacks[i];
		int j;

		/* a GIL holder's stack is the other party's, never the loop's own */
		if (s->gil || s->blocked != (r->cause == CAUSE_BLOCKED) ||
		    s->runq != (r->cause == CAUSE_RUNQ))
			continue;
		stack_report__top(s, tops[ntops], sizeof(tops[ntops]));
		for (j = 0; j < ntops && strcmp(tops[j], tops[ntops]); j++)
			;
		weight[j] += by_ns ? s->ns : stack_report__sample_weight(s);
		if (j == ntops) {
			heaviest[j] = i;
			ntops++;
		} else if (s->ns > r->stacks[heaviest[j]].ns) {
			heaviest[j] = i;
		}
		if (best < 0 || weight[j] > weight[best])
			best = j;
	}
	if (best < 0) {
		for (int i = 0; i < r->nstacks; i++) {
			if (!r->stacks[i].gil) {
				stack_report__top(&r->stacks[i], buf, len);
				return;
			}
		}
		snprintf(buf, len, "[no stack]");
		return;
	}
	if (r->cause != CAUSE_BLOCKED) {
		snprintf(buf, len, "%s", tops[best]);
		return;
	}
	/* asleep: the call the code made, for how long, and on what when known */
	{
		const char *call = r->stacks[heaviest[best]].syscall;
		bool on_peer = r->peer.path[0] && !strcmp(r->peer.syscall, call);
		size_t used;

		snprintf(buf, len, "%s", tops[best]);
		used = strlen(buf);
		snprintf(buf + used, len - used, " ... %s %.1f ms%s%.96s", call,
			 (double)weight[best] / 1e6, on_peer ? " " : "", on_peer ? r->peer.path : "");
	}
}

/* The cgroup's quota took more of the stall than any other part: the CPU, sleeps, the rest of the run queue. */
static bool stall_report__throttle_dominates(const struct stall_report *r)
{
	__u64 t = r->throttled_ns;

	return t && t >= r->oncpu_ns && t >= r->blocked_ns && t >= r->runq_ns - t;
}

/*
 * The wait for a CPU, past the quota's part, is the largest part of the
 * stall, and one task had the CPU for at least half of it.
 */
static bool stall_report__neighbour_dominates(const struct stall_report *r)
{
	__u64 t = r->throttled_ns, rest = r->runq_ns - t;

	return r->nneighbours && rest >= r->oncpu_ns && rest >= r->blocked_ns && rest >= t &&
	       2 * r->neighbours[0].ns >= rest;
}

/*
 * Asleep is the largest part of the stall, and one task (no interrupt) woke
 * it from at least half of that time.
 */
static bool stall_report__waker_dominates(const struct stall_report *r)
{
	const struct neighbour_report *w = &r->wakers[0];

	return r->nwakers && w->tid != LW_WAKER_INTERRUPT && r->blocked_ns >= r->oncpu_ns &&
	       r->blocked_ns >= r->runq_ns && 2 * w->ns >= r->blocked_ns;
}

/*
 * Waiting for the GIL is the largest part of the stall: larger than on CPU,
 * asleep otherwise and waiting for a CPU.
 */
static bool stall_report__gil_dominates(const struct stall_report *r)
{
	__u64 g = r->gil_ns;

	return g && g >= r->oncpu_ns && g >= r->blocked_ns && g >= r->runq_ns;
}

/* "gil: held by worker[1234] encode_batch (app.py:5) (in own)": the main holder first */
static void stall_report__gil_top(const struct stall_report *r, const char *own, char *buf,
				  size_t len)
{
	const struct gil_holder_report *h = &r->gil_holders[0];
	char where[sizeof(r->top)] = "";

	if (!r->ngil_holders) {
		snprintf(buf, len, "gil: no holder sampled (in %s)", own);
		return;
	}
	if (h->stack >= 0 && h->stack < r->nstacks) {
		where[0] = ' ';
		stack_report__top(&r->stacks[h->stack], where + 1, sizeof(where) - 1);
	}
	snprintf(buf, len, "gil: held by %s[%u]%s (in %s)", h->comm, h->tid, where, own);
}

void stall_report__top(const struct stall_report *r, char *buf, size_t len)
{
	const struct cpu_limit *l = &r->limit;
	const struct neighbour_report *nb = &r->neighbours[0];
	char own[sizeof(r->top)];

	stall_report__own_top(r, own, sizeof(own));
	if (stall_report__gil_dominates(r)) {
		stall_report__gil_top(r, own, buf, len);
		return;
	}
	if (stall_report__waker_dominates(r)) {
		snprintf(buf, len, "woken by %s[%u]%s%s (in %s)", r->wakers[0].comm,
			 r->wakers[0].tid, r->wakers[0].top[0] ? " " : "", r->wakers[0].top, own);
		return;
	}
	if (stall_report__neighbour_dominates(r)) {
		snprintf(buf, len, "CPU held by %s[%u] (in %s)", nb->comm, nb->tid, own);
		return;
	}
	if (!stall_report__throttle_dominates(r)) {
		snprintf(buf, len, "%s", own);
		return;
	}
	/* the other party first: the loop's own code only waited */
	if (l->known)
		snprintf(buf, len, "throttled: cgroup %s quota %gms/%gms (in %s)", l->cgroup,
			 (double)l->quota_us / 1e3, (double)l->period_us / 1e3, own);
	else
		snprintf(buf, len, "throttled: its cgroup's CPU quota (in %s)", own);
}

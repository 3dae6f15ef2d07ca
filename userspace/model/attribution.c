// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/attribution.h"

#define ATTR_HASH 4096
/* functions kept over the run; time of later ones is counted as overflow */
#define ATTR_MAX_FUNCS 16384
#define ATTR_MAX_PROCS 1024
/* recent stalls remembered for the tail share: their culprits and time */
#define ATTR_RECENT 4096
#define ATTR_RECENT_FUNCS 8

struct attr_recent {
	__u32 pid;
	__u64 duration_ns;
	int nfuncs;
	const struct func_stat *funcs[ATTR_RECENT_FUNCS];
	__u64 ns[ATTR_RECENT_FUNCS];
};

struct attribution {
	struct func_stat *hash[ATTR_HASH];
	struct func_stat **all;
	size_t nfuncs;
	size_t cap;
	struct attr_proc procs[ATTR_MAX_PROCS];
	size_t nprocs;
	__u64 nstalls;		/* stall sequence, to count a function once per stall */
	__u64 overflow_ns;
	struct attr_recent recent[ATTR_RECENT];
	size_t nrecent;
};

static const char *const unknown_names[] = {
	[CAUSE_CPU] = "[cpu: no sample]",
	[CAUSE_BLOCKED] = "[blocked: short calls]",
	[CAUSE_RUNQ] = "[runq: no stack]",
};

const char *stall_cause__unknown(enum stall_cause c)
{
	return unknown_names[c <= CAUSE_RUNQ ? c : CAUSE_CPU];
}

static bool stack__is_cpu(const struct stack_report *s)
{
	return !s->blocked && !s->runq;
}

static int shares__put(struct stack_share *out, int n, int stack, enum stall_cause cause,
		       __u64 ns)
{
	if (!ns || n >= STALL_SHARES_MAX)
		return n;
	out[n] = (struct stack_share){ .stack = stack, .cause = cause, .ns = ns };
	return n + 1;
}

/*
 * total over the CPU sample stacks by the CPU time their samples stand for;
 * no sample: one share with no stack
 */
static int shares__by_samples(const struct stall_report *r, struct stack_share *out, int n,
			      enum stall_cause cause, __u64 total)
{
	__u64 weight = 0, given = 0;
	int last = -1;

	for (int i = 0; i < r->nstacks; i++) {
		if (stack__is_cpu(&r->stacks[i]) && stack_report__sample_weight(&r->stacks[i])) {
			weight += stack_report__sample_weight(&r->stacks[i]);
			last = i;
		}
	}
	if (!weight)
		return shares__put(out, n, -1, cause, total);
	for (int i = 0; i < r->nstacks; i++) {
		const struct stack_report *s = &r->stacks[i];
		__u64 w = stack_report__sample_weight(s), ns;

		if (!stack__is_cpu(s) || !w)
			continue;
		/* the last takes the rounding rest: the shares add up exactly */
		ns = i == last ? total - given : total * w / weight;
		given += ns;
		n = shares__put(out, n, i, cause, ns);
	}
	return n;
}

int stall_report__shares(const struct stall_report *r, struct stack_share *out)
{
	/* the GIL's wait is a sleep too: the holders' stacks (marked gil) take it */
	__u64 slept_ns = r->blocked_ns + r->gil_ns;
	__u64 blocked_ns = slept_ns, off_ns = slept_ns + r->runq_ns;
	__u64 calls_ns = 0, blocked_given = 0, runq_left = r->runq_ns, runq_ns = 0;
	int n = 0, runq_stack = -1;

	/* off-CPU sums past the stall's length (seen around migrations): scaled to fit it */
	if (off_ns > r->duration_ns) {
		blocked_ns = (__u64)((double)slept_ns * (double)r->duration_ns / (double)off_ns);
		runq_left = r->duration_ns - blocked_ns;
	}

	n = shares__by_samples(r, out, n, CAUSE_CPU, r->oncpu_ns);
	for (int i = 0; i < r->nstacks; i++) {
		if (r->stacks[i].blocked)
			calls_ns += r->stacks[i].ns;
		if (r->stacks[i].runq && runq_stack < 0) {
			runq_stack = i;
			runq_ns = r->stacks[i].ns;
		}
	}
	for (int i = 0; i < r->nstacks && calls_ns; i++) {
		const struct stack_report *s = &r->stacks[i];
		__u64 blocked, extra;

		if (!s->blocked)
			continue;
		/* calls longer in sum than the blocked time: each gives up its share */
		blocked = calls_ns > blocked_ns ? s->ns * blocked_ns / calls_ns : s->ns;
		blocked_given += blocked;
		n = shares__put(out, n, i, CAUSE_BLOCKED, blocked);
		/* the rest of the call is its wait for a CPU after the wake-up */
		extra = s->ns - blocked;
		if (extra > runq_left)
			extra = runq_left;
		runq_left -= extra;
		n = shares__put(out, n, i, CAUSE_RUNQ, extra);
	}
	if (blocked_ns > blocked_given)
		n = shares__put(out, n, -1, CAUSE_BLOCKED, blocked_ns - blocked_given);
	if (runq_stack >= 0) {
		if (runq_ns > runq_left)
			runq_ns = runq_left;
		runq_left -= runq_ns;
		n = shares__put(out, n, runq_stack, CAUSE_RUNQ, runq_ns);
	}
	return shares__by_samples(r, out, n, CAUSE_RUNQ, runq_left);
}

struct attribution *attribution__new(void)
{
	return calloc(1, sizeof(struct attribution));
}

void attribution__free(struct attribution *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfuncs; i++)
		free(a->all[i]);
	free(a->all);
	free(a);
}

static unsigned int func__hash(__u32 pid, const char *func, const char *where)
{
	unsigned int h = 2166136261u ^ pid;

	for (const char *s = func; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	for (const char *s = where; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % ATTR_HASH;
}

/* The function of frame f (NULL: a pseudo-function named func) in r's process. */
static struct func_stat *attribution__func(struct attribution *a, const struct stall_report *r,
					   const struct frame *f, const char *func)
{
	const char *where = !f ? "" : frame__is_script(f) ? f->file : f->module;
	enum frame_kind kind = f ? f->kind : FRAME_NATIVE;
	unsigned int h;
	struct func_stat *fs;

	if (f)
		func = f->func[0] ? f->func : "[unknown]";
	h = func__hash(r->pid, func, where);
	for (fs = a->hash[h]; fs; fs = fs->hash_next) {
		if (fs->pid == r->pid && fs->kind == kind && !strcmp(fs->func, func) &&
		    !strcmp(fs->where, where))
			return fs;
	}
	if (a->nfuncs >= ATTR_MAX_FUNCS)
		return NULL;
	if (a->nfuncs == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		struct func_stat **v = realloc(a->all, cap * sizeof(*v));

		if (!v)
			return NULL;
		a->all = v;
		a->cap = cap;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	fs->pid = r->pid;
	memcpy(fs->comm, r->comm, LW_COMM_LEN);
	fs->kind = kind;
	snprintf(fs->func, sizeof(fs->func), "%s", func);
	snprintf(fs->where, sizeof(fs->where), "%s", where);
	fs->hash_next = a->hash[h];
	a->hash[h] = fs;
	a->all[a->nfuncs++] = fs;
	return fs;
}

static struct attr_proc *attribution__proc(struct attribution *a, const struct stall_report *r)
{
	struct attr_proc *p;

	for (size_t i = 0; i < a->nprocs; i++) {
		if (a->procs[i].pid == r->pid)
			return &a->procs[i];
	}
	/* a full table recycles the process with the least stall time */
	if (a->nprocs == ATTR_MAX_PROCS) {
		p = &a->procs[0];
		for (size_t i = 1; i < a->nprocs; i++) {
			const struct attr_proc *q = &a->procs[i];

			if (q->stall_ns[0] + q->stall_ns[1] + q->stall_ns[2] <
			    p->stall_ns[0] + p->stall_ns[1] + p->stall_ns[2])
				p = &a->procs[i];
		}
	} else {
		p = &a->procs[a->nprocs++];
	}
	memset(p, 0, sizeof(*p));
	p->pid = r->pid;
	memcpy(p->comm, r->comm, LW_COMM_LEN);
	return p;
}

/* Appends s to buf at *used, cut to fit: names to read, truncation is fine. */
static void name__put(char *buf, size_t len, size_t *used, const char *s)
{
	while (*s && *used + 1 < len)
		buf[(*used)++] = *s++;
	buf[*used] = '\0';
}

/* Python stdlib frames by module: "json.dumps" rather than "dumps". */
static void frame__qualified(const struct frame *f, char *buf, size_t len)
{
	const char *lib = strstr(f->file, "/lib/python");
	const char *mod = lib ? strchr(lib + 11, '/') : NULL;
	char path[FUNC_WHERE_LEN];
	size_t n, used = 0;

	if (f->kind != FRAME_PYTHON || !mod || strstr(f->file, "-packages/")) {
		name__put(buf, len, &used, f->func[0] ? f->func : "[unknown]");
		return;
	}
	snprintf(path, sizeof(path), "%s", mod + 1);
	n = strlen(path);
	if (n > 3 && !strcmp(path + n - 3, ".py"))
		path[n -= 3] = '\0';
	if (n > 9 && !strcmp(path + n - 9, "/__init__"))
		path[n -= 9] = '\0';
	for (char *c = path; *c; c++) {
		if (*c == '/')
			*c = '.';
	}
	name__put(buf, len, &used, path);
	name__put(buf, len, &used, ".");
	name__put(buf, len, &used, f->func);
}

/*
 * What the culprit frame's time went into: the syscall it blocked in, the
 * nearest Python function it called (json.dumps), or the native function
 * it called; "" when it ran its own code.
 */
static void share__via(const struct stack_report *s, int culprit, enum stall_cause cause,
		       char *buf, size_t len)
{
	buf[0] = '\0';
	if (cause == CAUSE_BLOCKED && s->syscall[0]) {
		snprintf(buf, len, "%s", s->syscall);
		return;
	}
	if (cause == CAUSE_RUNQ) {
		snprintf(buf, len, "waiting for a CPU");
		return;
	}
	for (int i = culprit - 1; i >= 0; i--) {
		const struct frame *f = &s->frames[i];

		if (f->kind == s->frames[culprit].kind && f->func[0]) {
			frame__qualified(f, buf, len);
			return;
		}
	}
}

static void times__add(struct func_times *t, bool self, enum stall_cause c, __u64 ns)
{
	if (self)
		t->self_ns[c] += ns;
	else
		t->incl_ns[c] += ns;
}

static void func__charge(struct func_stat *fs, bool self, enum stall_cause c, __u64 ns)
{
	times__add(&fs->run, self, c, ns);
	times__add(&fs->cur, self, c, ns);
}

/* Per stall, the self time of each function: the tail share reads them back. */
static void recent__add(struct attr_recent *rc, const struct func_stat *fs, __u64 ns)
{
	for (int i = 0; i < rc->nfuncs; i++) {
		if (rc->funcs[i] == fs) {
			rc->ns[i] += ns;
			return;
		}
	}
	if (rc->nfuncs < ATTR_RECENT_FUNCS) {
		rc->funcs[rc->nfuncs] = fs;
		rc->ns[rc->nfuncs++] = ns;
	}
}

/* Charge one share: self to the culprit frame, inclusive once to each function on the stack. */
static void attribution__charge(struct attribution *a, const struct stall_report *r,
				const struct stack_share *sh, struct attr_recent *rc)
{
	const struct stack_report *s = sh->stack >= 0 ? &r->stacks[sh->stack] : NULL;
	struct func_stat *seen[LW_STACK_DEPTH * 2];
	int culprit = s ? stack_report__culprit(s) : -1, nseen = 0;
	struct func_stat *self;
	char via[FUNC_VIA_LEN];

	if (culprit >= 0)
		self = attribution__func(a, r, &s->frames[culprit], NULL);
	else
		self = attribution__func(a, r, NULL, s ? "[unknown]" : stall_cause__unknown(sh->cause));
	if (!self) {
		a->overflow_ns += sh->ns;
		return;
	}
	func__charge(self, true, sh->cause, sh->ns);
	recent__add(rc, self, sh->ns);
	if (self->last_stall != a->nstalls) {
		self->last_stall = a->nstalls;
		self->stalls++;
	}
	if (culprit >= 0 && frame__is_script(&s->frames[culprit]) && sh->ns > self->line_ns) {
		self->line = s->frames[culprit].line;
		self->line_ns = sh->ns;
	}
	if (s && culprit >= 0) {
		share__via(s, culprit, sh->cause, via, sizeof(via));
		/*
		 * The largest single share names it, a wait for a CPU only when
		 * nothing else does: a sleep's wake-up wait is no news about it.
		 */
		if ((sh->ns > self->via_ns && sh->cause != CAUSE_RUNQ) || !self->via[0]) {
			size_t used = 0;

			name__put(self->via, sizeof(self->via), &used, via);
			self->via_ns = sh->ns;
		}
	}
	if (culprit < 0)
		func__charge(self, false, sh->cause, sh->ns);
	if (!s)
		return;
	for (int i = 0; i < s->nframes && nseen < (int)(sizeof(seen) / sizeof(seen[0])); i++) {
		struct func_stat *fs;
		int j;

		/* the kernel's functions are in the folded stacks; the table is the user's */
		if (s->frames[i].kind == FRAME_KERNEL)
			continue;
		fs = attribution__func(a, r, &s->frames[i], NULL);
		if (!fs)
			continue;
		for (j = 0; j < nseen && seen[j] != fs; j++)
			;
		if (j < nseen)
			continue;	/* recursion: once per stack */
		seen[nseen++] = fs;
		func__charge(fs, false, sh->cause, sh->ns);
	}
}

void attribution__add_stall(struct attribution *a, const struct stall_report *r)
{
	struct stack_share shares[STALL_SHARES_MAX];
	struct attr_recent *rc = &a->recent[a->nrecent++ % ATTR_RECENT];
	struct attr_proc *p = attribution__proc(a, r);
	int n = stall_report__shares(r, shares);

	a->nstalls++;
	memset(rc, 0, sizeof(*rc));
	rc->pid = r->pid;
	rc->duration_ns = r->duration_ns;
	p->stalls++;
	for (int i = 0; i < n; i++) {
		p->stall_ns[shares[i].cause] += shares[i].ns;
		p->cur_ns[shares[i].cause] += shares[i].ns;
		attribution__charge(a, r, &shares[i], rc);
	}
}

void attribution__end_interval(struct attribution *a)
{
	for (size_t i = 0; i < a->nfuncs; i++) {
		a->all[i]->interval = a->all[i]->cur;
		memset(&a->all[i]->cur, 0, sizeof(a->all[i]->cur));
	}
	for (size_t i = 0; i < a->nprocs; i++) {
		memcpy(a->procs[i].interval_ns, a->procs[i].cur_ns, sizeof(a->procs[i].cur_ns));
		memset(a->procs[i].cur_ns, 0, sizeof(a->procs[i].cur_ns));
	}
}

__u64 func_times__self(const struct func_times *t)
{
	return t->self_ns[0] + t->self_ns[1] + t->self_ns[2];
}

__u64 func_times__incl(const struct func_times *t)
{
	return t->incl_ns[0] + t->incl_ns[1] + t->incl_ns[2];
}

__u64 func_times__key(const struct func_times *t, enum func_sort by)
{
	switch (by) {
	case FUNC_SORT_INCL:
		return func_times__incl(t);
	case FUNC_SORT_CPU:
		return t->self_ns[CAUSE_CPU];
	case FUNC_SORT_BLOCKED:
		return t->self_ns[CAUSE_BLOCKED];
	case FUNC_SORT_RUNQ:
		return t->self_ns[CAUSE_RUNQ];
	default:
		return func_times__self(t);
	}
}

const char *func_sort__name(enum func_sort by)
{
	static const char *const names[] = { "self", "inclusive", "cpu", "blocked", "runq" };

	return by < FUNC_SORT_MAX ? names[by] : names[0];
}

/* qsort has no context: the sort of the call under way (one thread sorts) */
static __thread struct {
	bool interval;
	enum func_sort by;
} sort_ctx;

static int func__cmp(const void *x, const void *y)
{
	const struct func_stat *a = *(const struct func_stat *const *)x;
	const struct func_stat *b = *(const struct func_stat *const *)y;
	const struct func_times *ta = sort_ctx.interval ? &a->interval : &a->run;
	const struct func_times *tb = sort_ctx.interval ? &b->interval : &b->run;
	__u64 ka = func_times__key(ta, sort_ctx.by), kb = func_times__key(tb, sort_ctx.by);

	if (ka != kb)
		return ka < kb ? 1 : -1;
	ka = func_times__incl(ta);
	kb = func_times__incl(tb);
	if (ka != kb)
		return ka < kb ? 1 : -1;
	return strcmp(a->func, b->func);
}

const struct func_stat **attribution__sorted(const struct attribution *a, bool interval,
					     enum func_sort by, __u32 pid, size_t *n)
{
	const struct func_stat **v = calloc(a->nfuncs + 1, sizeof(*v));
	size_t k = 0;

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < a->nfuncs; i++) {
		const struct func_stat *fs = a->all[i];
		const struct func_times *t = interval ? &fs->interval : &fs->run;

		if ((!pid || fs->pid == pid) && func_times__key(t, by))
			v[k++] = fs;
	}
	sort_ctx.interval = interval;
	sort_ctx.by = by;
	qsort(v, k, sizeof(*v), func__cmp);
	*n = k;
	return v;
}

static int proc__cmp(const void *x, const void *y)
{
	const struct attr_proc *a = x, *b = y;
	__u64 ka = a->stall_ns[0] + a->stall_ns[1] + a->stall_ns[2];
	__u64 kb = b->stall_ns[0] + b->stall_ns[1] + b->stall_ns[2];

	return ka < kb ? 1 : ka > kb ? -1 : 0;
}

struct attr_proc *attribution__procs(const struct attribution *a, size_t *n)
{
	struct attr_proc *v = calloc(a->nprocs + 1, sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	memcpy(v, a->procs, a->nprocs * sizeof(*v));
	qsort(v, a->nprocs, sizeof(*v), proc__cmp);
	*n = a->nprocs;
	return v;
}

double attribution__tail_share(const struct attribution *a, const struct func_stat *f,
			       __u64 min_ns, size_t *nstalls)
{
	size_t kept = a->nrecent < ATTR_RECENT ? a->nrecent : ATTR_RECENT;
	__u64 total = 0, mine = 0;

	*nstalls = 0;
	for (size_t i = 0; i < kept; i++) {
		const struct attr_recent *rc = &a->recent[i];

		if (rc->pid != f->pid || rc->duration_ns < min_ns)
			continue;
		(*nstalls)++;
		total += rc->duration_ns;
		for (int j = 0; j < rc->nfuncs; j++) {
			if (rc->funcs[j] == f)
				mine += rc->ns[j];
		}
	}
	return total ? (double)mine / (double)total : 0;
}

__u64 attribution__overflow_ns(const struct attribution *a)
{
	return a->overflow_ns;
}

void func_stat__name(const struct func_stat *f, char *buf, size_t len)
{
	const char *base = strrchr(f->where, '/');

	if ((f->kind == FRAME_PYTHON || f->kind == FRAME_JS) && f->where[0])
		snprintf(buf, len, "%s (%s:%d)", f->func, base ? base + 1 : f->where, f->line);
	else
		snprintf(buf, len, "%s", f->func);
}

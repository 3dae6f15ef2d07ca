// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "attribute.h"
#include "procfs.h"
#include "syscalls.h"
#include "unwind.h"

struct attributor {
	struct collector *c;
	struct symbolizer *sym;
	struct python_syms *py;
	double mono_to_wall;	/* add to CLOCK_MONOTONIC seconds for unix time */
	probe_label_fn label;
	const void *label_ctx;
};

void attributor__set_labeler(struct attributor *a, probe_label_fn fn, const void *ctx)
{
	a->label = fn;
	a->label_ctx = ctx;
}

static void probe__label(const struct attributor *a, __u32 id, char *buf, size_t len)
{
	if (a->label)
		snprintf(buf, len, "%s", a->label(a->label_ctx, id));
	else
		snprintf(buf, len, "probe#%u", id);
}

static double clock__seconds(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct attributor *attributor__new(struct collector *c)
{
	struct attributor *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->c = c;
	a->sym = symbolizer__new();
	a->py = python_syms__new();
	if (!a->sym || !a->py) {
		symbolizer__free(a->sym);
		python_syms__free(a->py);
		free(a);
		return NULL;
	}
	a->mono_to_wall = clock__seconds(CLOCK_REALTIME) - clock__seconds(CLOCK_MONOTONIC);
	return a;
}

void attributor__free(struct attributor *a)
{
	if (!a)
		return;
	symbolizer__free(a->sym);
	python_syms__free(a->py);
	free(a);
}

void attributor__prefetch(struct attributor *a, __u32 pid)
{
	uint64_t ip = 0;
	struct frame f;
	struct lw_py_proc cfg;
	char version[32];

	if (!a)
		return;
	symbolizer__symbolize(a->sym, (int)pid, &ip, 1, false, &f, 1);
	/*
	 * A CPython process: the BPF side walks its frames from now on. Anything
	 * else drops what a previous owner of the pid left.
	 */
	python__forget_pid(a->py, (int)pid);
	if (python__detect((int)pid, &cfg, version, sizeof(version)) >= 0)
		collector__set_python(a->c, pid, &cfg);
	else
		collector__set_python(a->c, pid, NULL);
}

const char *stall_cause__name(enum stall_cause c)
{
	switch (c) {
	case CAUSE_BLOCKED:
		return "blocked";
	case CAUSE_RUNQ:
		return "runq";
	default:
		return "cpu";
	}
}

static void stack_report__clear(struct stack_report *s)
{
	free(s->frames);
	s->frames = NULL;
	s->nframes = 0;
}

void stall_report__free(struct stall_report *r)
{
	for (int i = 0; i < r->nstacks; i++)
		stack_report__clear(&r->stacks[i]);
	r->nstacks = 0;
}

void block_report__free(struct block_report *r)
{
	stack_report__clear(&r->stack);
}

void probe_report__free(struct probe_report *r)
{
	stack_report__clear(&r->stack);
}

/* The Python frames the BPF side walked with this stack, spliced into it. */
static void stack__add_python(struct attributor *a, __u32 pid, __u32 id, struct stack_report *out)
{
	struct frame py[LW_PY_MAX_DEPTH + 1], *merged;
	struct lw_py_stack st;
	int npy, max;

	if (!id || !out->frames || !collector__read_py_stack(a->c, id, &st))
		return;
	npy = python__symbolize(a->py, (int)pid, &st, py, LW_PY_MAX_DEPTH + 1);
	if (!npy)
		return;
	max = out->nframes + npy;
	merged = calloc((size_t)max, sizeof(*merged));
	if (!merged)
		return;
	out->nframes = python__splice(out->frames, out->nframes, py, npy, merged, max);
	free(out->frames);
	out->frames = merged;
}

/*
 * Kernel frames, then user frames: one stack, leaf first. words, when given,
 * are the top of the user stack saved with it, to recover a skipped caller.
 */
static void stack__resolve(struct attributor *a, __u32 pid, struct lw_stack_ref ref,
			   const __u64 *words, struct stack_report *out)
{
	uint64_t kips[LW_STACK_DEPTH], uips[LW_STACK_DEPTH + 4];
	int nk = collector__read_stack(a->c, ref.kernel, kips, LW_STACK_DEPTH);
	int nu = collector__read_stack(a->c, ref.user, uips, LW_STACK_DEPTH);

	if (words && nu)
		nu = unwind__fixup_leaf((int)pid, uips, nu, LW_STACK_DEPTH + 4,
					(const uint64_t *)words, LW_STACK_WORDS);

	out->nframes = 0;
	out->frames = calloc((size_t)(nk + nu + 1), sizeof(*out->frames));
	if (!out->frames)
		return;
	/* return addresses point past the call: look up the call itself */
	for (int i = 1; i < nu; i++)
		uips[i]--;
	if (nk)
		out->nframes += symbolizer__symbolize(a->sym, (int)pid, kips, nk, true,
						      out->frames, nk);
	if (nu)
		out->nframes += symbolizer__symbolize(a->sym, (int)pid, uips, nu, false,
						      out->frames + out->nframes, nu);
	stack__add_python(a, pid, ref.python, out);
}

static bool module__is_runtime(const char *m)
{
	return !strncmp(m, "libc.so", 7) || !strncmp(m, "ld-linux", 8) ||
	       !strncmp(m, "libpthread", 10) || !strcmp(m, "[vdso]");
}

/* The user frames that best name a culprit: skip libc and the vDSO when we can. */
/* The interpreter's own library: json.dumps is rarely the frame to show. */
static bool file__is_stdlib(const char *file)
{
	return strstr(file, "/lib/python") && !strstr(file, "-packages/");
}

/* The frame to start from: the user's own code first, libc and the stdlib last. */
static int stack__culprit(const struct stack_report *s, bool python)
{
	int first = -1;

	for (int i = 0; i < s->nframes; i++) {
		const struct frame *f = &s->frames[i];

		if (python != (f->kind == FRAME_PYTHON) || f->kind == FRAME_KERNEL || !f->func[0] ||
		    f->func[0] == '[')
			continue;
		if (first < 0)
			first = i;
		if (python ? !file__is_stdlib(f->file) : !module__is_runtime(f->module))
			return i;
	}
	return first;
}

/* The two frames that best name a culprit: Python code when there is any. */
static void stack__top(const struct stack_report *s, char *buf, size_t len)
{
	int first = stack__culprit(s, true), shown = 0;
	bool python = first >= 0;
	size_t used = 0;

	if (!python)
		first = stack__culprit(s, false);
	buf[0] = '\0';
	if (first < 0) {
		snprintf(buf, len, "[unknown]");
		return;
	}
	for (int i = first; i < s->nframes && shown < 2 && used < len; i++) {
		const struct frame *f = &s->frames[i];
		const char *base = strrchr(f->file, '/');

		if (python != (f->kind == FRAME_PYTHON) || f->kind == FRAME_KERNEL || !f->func[0])
			continue;
		if (python)
			used += (size_t)snprintf(buf + used, len - used, "%s%s (%s:%d)",
						 shown ? " < " : "", f->func,
						 base ? base + 1 : f->file, f->line);
		else
			used += (size_t)snprintf(buf + used, len - used, "%s%s",
						 shown ? " < " : "", f->func);
		shown++;
	}
}

static enum stall_cause stall__cause(const struct stall_report *r)
{
	if (r->blocked_ns >= r->oncpu_ns && r->blocked_ns >= r->runq_ns)
		return CAUSE_BLOCKED;
	if (r->runq_ns > r->oncpu_ns)
		return CAUSE_RUNQ;
	return CAUSE_CPU;
}

/* Identical sample stacks become one entry with a count. */
static void stall__add_samples(struct attributor *a, const struct lw_stall_event *e,
			       struct stall_report *r)
{
	__u32 kept = e->iter.samples_seen < LW_ITER_SAMPLES ? e->iter.samples_seen
							     : LW_ITER_SAMPLES;
	int counts[LW_ITER_SAMPLES] = {};
	int first[LW_ITER_SAMPLES];
	int nuniq = 0;

	for (__u32 i = 0; i < kept; i++) {
		struct lw_stack_ref s = e->iter.samples[i];
		int j;

		for (j = 0; j < nuniq; j++) {
			struct lw_stack_ref o = e->iter.samples[first[j]];

			if (o.user == s.user && o.kernel == s.kernel && o.python == s.python)
				break;
		}
		if (j == nuniq)
			first[nuniq++] = (int)i;
		counts[j]++;
	}
	for (int j = 0; j < nuniq && r->nstacks < REPORT_MAX_STACKS; j++) {
		struct stack_report *s = &r->stacks[r->nstacks++];

		memset(s, 0, sizeof(*s));
		s->samples = counts[j];
		stack__resolve(a, e->pid, e->iter.samples[first[j]], NULL, s);
	}
}

static bool frames__same_functions(const struct stack_report *x, const struct stack_report *y)
{
	if (x->nframes != y->nframes)
		return false;
	for (int i = 0; i < x->nframes; i++) {
		const struct frame *f = &x->frames[i], *g = &y->frames[i];

		if (f->kind != g->kind || f->line != g->line || strcmp(f->func, g->func) ||
		    strcmp(f->module, g->module) || strcmp(f->file, g->file))
			return false;
	}
	return true;
}

/*
 * Samples whose stacks differ only in offsets (a Python frame's instruction,
 * a native leaf's ip) name the same code: one entry with their count.
 */
static void stall__merge_samples(struct stall_report *r)
{
	for (int i = 0; i < r->nstacks; i++) {
		for (int j = i + 1; j < r->nstacks; j++) {
			if (!frames__same_functions(&r->stacks[i], &r->stacks[j]))
				continue;
			r->stacks[i].samples += r->stacks[j].samples;
			stack_report__clear(&r->stacks[j]);
			r->stacks[j--] = r->stacks[--r->nstacks];
		}
	}
}

static void stall__add_blocks(struct attributor *a, const struct lw_stall_event *e,
			      struct stall_report *r)
{
	char buf[32];

	for (__u32 i = 0; i < e->iter.nblocks && i < LW_ITER_BLOCKS; i++) {
		const struct lw_block_ref *b = &e->iter.blocks[i];
		struct stack_report *s;

		if (r->nstacks >= REPORT_MAX_STACKS)
			break;
		s = &r->stacks[r->nstacks++];
		memset(s, 0, sizeof(*s));
		s->blocked = true;
		s->ns = b->ns;
		snprintf(s->syscall, sizeof(s->syscall), "%s",
			 syscall__name(b->nr, buf, sizeof(buf)));
		stack__resolve(a, e->pid, b->cap.stack, b->cap.words, s);
	}
}

/* Where the thread was preempted for its longest wait for a CPU. */
static void stall__add_runq(struct attributor *a, const struct lw_stall_event *e,
			    struct stall_report *r)
{
	struct stack_report *s;

	if (!e->iter.runq_max_ns || r->nstacks >= REPORT_MAX_STACKS)
		return;
	s = &r->stacks[r->nstacks++];
	memset(s, 0, sizeof(*s));
	s->runq = true;
	s->ns = e->iter.runq_max_ns;
	stack__resolve(a, e->pid, e->iter.runq_cap.stack, e->iter.runq_cap.words, s);
}

/* The stack that explains the dominant cause: most samples, or longest block. */
static const struct stack_report *stall__main_stack(const struct stall_report *r)
{
	const struct stack_report *best = NULL;

	for (int i = 0; i < r->nstacks; i++) {
		const struct stack_report *s = &r->stacks[i];
		bool by_ns = r->cause != CAUSE_CPU;

		if (s->blocked != (r->cause == CAUSE_BLOCKED) || s->runq != (r->cause == CAUSE_RUNQ))
			continue;
		if (!best || (by_ns ? s->ns > best->ns : s->samples > best->samples))
			best = s;
	}
	return best ? best : r->nstacks ? &r->stacks[0] : NULL;
}

/* Names from the kernel: fixed-size, maybe unterminated, untrusted. */
static void name__copy(char *dst, const char *src)
{
	memcpy(dst, src, LW_COMM_LEN);
	dst[LW_COMM_LEN - 1] = '\0';
	str__sanitize(dst);
}

static double attributor__wall(const struct attributor *a, __u64 mono_ns)
{
	return (double)mono_ns / 1e9 + a->mono_to_wall;
}

int attributor__stall(struct attributor *a, const struct lw_stall_event *e,
		      struct stall_report *r)
{
	const struct stack_report *main_stack;
	__u64 off;
	char buf[32];

	memset(r, 0, sizeof(*r));
	r->ts = attributor__wall(a, e->start_ns);
	r->pid = e->pid;
	r->tid = e->tid;
	name__copy(r->comm, e->comm);
	name__copy(r->thread, e->thread);
	r->duration_ns = e->duration_ns;
	r->blocked_ns = e->iter.blocked_ns;
	r->runq_ns = e->iter.runq_ns;
	off = r->blocked_ns + r->runq_ns;
	r->oncpu_ns = off < r->duration_ns ? r->duration_ns - off : 0;
	r->cause = stall__cause(r);
	for (__u32 i = 0; i < e->iter.nsyscalls && i < LW_ITER_SYSCALLS; i++) {
		struct syscall_report *s = &r->syscalls[r->nsyscalls++];

		snprintf(s->name, sizeof(s->name), "%s",
			 syscall__name(e->iter.syscalls[i].nr, buf, sizeof(buf)));
		s->count = e->iter.syscalls[i].count;
		s->ns = e->iter.syscalls[i].ns;
	}
	for (__u32 i = 0; i < e->iter.nprobes && i < LW_ITER_PROBES; i++) {
		struct probe_time *p = &r->probes[r->nprobes++];

		probe__label(a, e->iter.probes[i].id, p->label, sizeof(p->label));
		p->count = e->iter.probes[i].count;
		p->ns = e->iter.probes[i].ns;
	}
	stall__add_samples(a, e, r);
	stall__merge_samples(r);
	stall__add_blocks(a, e, r);
	stall__add_runq(a, e, r);
	main_stack = stall__main_stack(r);
	if (main_stack)
		stack__top(main_stack, r->top, sizeof(r->top));
	else
		snprintf(r->top, sizeof(r->top), "[no stack]");
	return 0;
}

/*
 * The dentry names BPF read at the first sleep, leaf first, joined from the
 * root. The fd itself may be closed or reused by now: it is not looked up.
 * Paths are relative to the file's mount; a deep one keeps its last parts.
 */
static void path__join(const struct lw_block_event *e, char *buf, size_t len)
{
	size_t used = 0;
	int top = LW_PATH_PARTS - 1;

	buf[0] = '\0';
	while (top >= 0 && !e->path[top][0])
		top--;
	/* every part used and no root reached: a deeper path, shown as such */
	if (top == LW_PATH_PARTS - 1 && strcmp(e->path[top], "/"))
		used = (size_t)snprintf(buf, len, "...");
	for (int i = top; i >= 0 && used < len; i--) {
		char part[LW_PATH_PART_LEN + 1];

		memcpy(part, e->path[i], LW_PATH_PART_LEN);
		part[LW_PATH_PART_LEN] = '\0';
		if (!strcmp(part, "/"))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "/%s", part);
	}
	str__sanitize(buf);
}

int attributor__block(struct attributor *a, const struct lw_block_event *e,
		      struct block_report *r)
{
	char buf[32];

	memset(r, 0, sizeof(*r));
	r->ts = attributor__wall(a, e->start_ns);
	r->pid = e->pid;
	r->tid = e->tid;
	name__copy(r->comm, e->comm);
	snprintf(r->syscall, sizeof(r->syscall), "%s", syscall__name(e->nr, buf, sizeof(buf)));
	r->duration_ns = e->duration_ns;
	r->sleeps = e->sleeps;
	r->fd = -1;
	if (syscall__fd_arg(e->nr) && (__s64)e->arg0 >= 0 && e->arg0 < (1u << 30)) {
		r->fd = (int)e->arg0;
		path__join(e, r->path, sizeof(r->path));
	}
	r->stack.blocked = true;
	r->stack.ns = e->duration_ns;
	snprintf(r->stack.syscall, sizeof(r->stack.syscall), "%s", r->syscall);
	stack__resolve(a, e->pid, e->cap.stack, e->cap.words, &r->stack);
	return 0;
}

int attributor__probe(struct attributor *a, const struct lw_probe_event *e,
		      struct probe_report *r)
{
	memset(r, 0, sizeof(*r));
	r->ts = attributor__wall(a, e->start_ns);
	r->pid = e->pid;
	r->tid = e->tid;
	name__copy(r->comm, e->comm);
	probe__label(a, e->id, r->label, sizeof(r->label));
	r->duration_ns = e->duration_ns;
	stack__resolve(a, e->pid, e->cap.stack, NULL, &r->stack);
	return 0;
}

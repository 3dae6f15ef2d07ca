// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "events/decode.h"
#include "lib/clock.h"
#include "lib/syscalls.h"
#include "lib/text.h"
#include "runtimes/runtimes.h"
#include "symbols/symbols.h"

struct decoder {
	struct collector *c;
	struct symbols *syms;
	double mono_to_wall;	/* add to CLOCK_MONOTONIC seconds for unix time */
	probe_label_fn label;
	const void *label_ctx;
	void *rtstack[LW_RT_N];	/* a runtime's stack as read, while its frames are named */
};

static void probe__label(const struct decoder *d, __u32 id, char *buf, size_t len)
{
	if (d->label)
		d->label(d->label_ctx, id, buf, len);
	else
		snprintf(buf, len, "probe#%u", id);
}

struct decoder *decoder__new(struct collector *c, struct symbols *syms, probe_label_fn label,
			     const void *label_ctx)
{
	struct decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->c = c;
	d->syms = syms;
	d->label = label;
	d->label_ctx = label_ctx;
	d->mono_to_wall = clock__wall() - clock__mono();
	for (int id = 0; id < LW_RT_N; id++) {
		d->rtstack[id] = malloc(runtimes__get(id)->stack_size);
		if (!d->rtstack[id]) {
			decoder__free(d);
			return NULL;
		}
	}
	return d;
}

void decoder__free(struct decoder *d)
{
	if (!d)
		return;
	for (int id = 0; id < LW_RT_N; id++)
		free(d->rtstack[id]);
	free(d);
}

/*
 * A CPU sample taken at the tick has the interrupt's own kernel frames on
 * top (bpf/sample.bpf.c): they go, down to the interrupt's entry, and of a
 * sample in user mode no kernel frame is left. perf's samples start at the
 * interrupted code and have no such frame.
 */
static void stack__cut_interrupt(struct stack_report *s)
{
	int n;

	for (n = 0; n < s->nframes && s->frames[n].kind == FRAME_KERNEL; n++) {
		if (!strcmp(s->frames[n].func, "asm_sysvec_apic_timer_interrupt"))
			break;
	}
	if (n == s->nframes || s->frames[n].kind != FRAME_KERNEL)
		return;
	n++;
	memmove(s->frames, s->frames + n, (size_t)(s->nframes - n) * sizeof(*s->frames));
	s->nframes -= n;
}

/*
 * Kernel frames, then user frames: one stack, leaf first. words, when given,
 * are the top of the user stack saved with it, to recover a skipped caller;
 * a sample's (a CPU sample's stack) loses the interrupt's frames.
 */
static void stack__resolve(struct decoder *d, __u32 pid, struct lw_stack_ref ref,
			   const __u64 *words, bool sample, struct stack_report *out)
{
	uint64_t kips[LW_STACK_DEPTH];
	struct lw_user_stack user;
	/* a capture's words are its own, or marked as another's (bpf/lw_abi.h) */
	const __u64 *own = words && words[0] != LW_WORDS_NONE ? words : NULL;
	struct raw_stack raw = {
		.kernel = kips,
		.nkernel = collector__read_stack(d->c, ref.kernel, kips, LW_STACK_DEPTH),
		.words = (const uint64_t *)own,
		.nwords = own ? LW_STACK_WORDS : 0,
	};

	for (int id = 0; id < LW_RT_N; id++) {
		const struct runtime *rt = runtimes__get(id);

		if (collector__read_runtime_stack(d->c, rt->stacks_map, ref.rt[id], d->rtstack[id],
						  rt->stack_size))
			raw.rt[id] = d->rtstack[id];
	}

	if (collector__read_user_stack(d->c, ref.user, &user)) {
		raw.user = (const uint64_t *)user.pcs;
		raw.nuser = (int)user.nframes;
		raw.user_fp = user.fp_mask;
		raw.user_stop = (int)user.stop;
	}

	out->nframes = symbols__stack(d->syms, (int)pid, &raw, &out->frames);
	if (sample && out->nframes > 0)
		stack__cut_interrupt(out);
}

static bool stack__has_runtime(const __u32 ids[LW_RT_N])
{
	for (int id = 0; id < LW_RT_N; id++) {
		if (ids[id])
			return true;
	}
	return false;
}

/*
 * Identical sample stacks become one entry with a count, and the CPU time
 * they stand for: the tick's samples are further apart than the boost's.
 */
static void stall__add_samples(struct decoder *d, const struct lw_stall_event *e,
			       struct stall_report *r)
{
	__u32 kept = e->iter.samples_seen < LW_ITER_SAMPLES ? e->iter.samples_seen
							     : LW_ITER_SAMPLES;
	int counts[LW_ITER_SAMPLES] = {};
	__u64 us[LW_ITER_SAMPLES] = {};
	int first[LW_ITER_SAMPLES];
	int nuniq = 0;

	for (__u32 i = 0; i < kept; i++) {
		struct lw_stack_ref s = e->iter.samples[i];
		int j;

		for (j = 0; j < nuniq; j++) {
			struct lw_stack_ref o = e->iter.samples[first[j]];

			if (o.user == s.user && o.kernel == s.kernel &&
			    !memcmp(o.rt, s.rt, sizeof(s.rt)))
				break;
		}
		if (j == nuniq)
			first[nuniq++] = (int)i;
		counts[j]++;
		us[j] += e->iter.sample_us[i];
	}
	for (int j = 0; j < nuniq && r->nstacks < REPORT_MAX_STACKS; j++) {
		struct stack_report *s = &r->stacks[r->nstacks++];

		memset(s, 0, sizeof(*s));
		s->samples = counts[j];
		s->sample_us = us[j];
		stack__resolve(d, e->pid, e->iter.samples[first[j]], NULL, true, s);
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
 * a native leaf's ip) name the same code: one entry with their count and weight.
 */
static void stall__merge_samples(struct stall_report *r)
{
	for (int i = 0; i < r->nstacks; i++) {
		for (int j = i + 1; j < r->nstacks; j++) {
			if (!frames__same_functions(&r->stacks[i], &r->stacks[j]))
				continue;
			r->stacks[i].samples += r->stacks[j].samples;
			r->stacks[i].sample_us += r->stacks[j].sample_us;
			stack_report__clear(&r->stacks[j]);
			r->stacks[j--] = r->stacks[--r->nstacks];
		}
	}
}

static void stall__add_blocks(struct decoder *d, const struct lw_stall_event *e,
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
		stack__resolve(d, e->pid, b->cap.stack, b->cap.words, false, s);
	}
}

/* Where the thread was preempted for its longest wait for a CPU. */
static void stall__add_runq(struct decoder *d, const struct lw_stall_event *e,
			    struct stall_report *r)
{
	struct stack_report *s;

	if (!e->iter.runq_max_ns || r->nstacks >= REPORT_MAX_STACKS)
		return;
	s = &r->stacks[r->nstacks++];
	memset(s, 0, sizeof(*s));
	s->runq = true;
	s->ns = e->iter.runq_max_ns;
	/* a capture without words of its own is a CPU sample's (bpf/iteration.bpf.h) */
	stack__resolve(d, e->pid, e->iter.runq_cap.stack, e->iter.runq_cap.words,
		       e->iter.runq_cap.words[0] == LW_WORDS_NONE, s);
}

/* Names from the kernel: fixed-size, maybe unterminated, untrusted. */
static void name__copy(char *dst, const char *src)
{
	memcpy(dst, src, LW_COMM_LEN);
	dst[LW_COMM_LEN - 1] = '\0';
	str__sanitize(dst);
}

static double decoder__wall(const struct decoder *d, __u64 mono_ns)
{
	return (double)mono_ns / 1e9 + d->mono_to_wall;
}

/*
 * The kernel frames of a wake-up that say an interrupt ran it, on whatever
 * task it interrupted: the entry of a hard IRQ or a system vector, softirqs,
 * timers.
 */
static const char *const interrupt_frames[] = {
	"asm_sysvec_", "sysvec_", "__sysvec_", "asm_common_interrupt", "common_interrupt",
	"handle_softirqs", "__do_softirq", "irq_exit", "hrtimer_interrupt",
	"__hrtimer_run_queues", "hrtimer_wakeup", "call_timer_fn", "run_timer_softirq",
};

/* "[timer]" or "[interrupt]" when the wake-up's kernel stack is an interrupt's, else NULL. */
static const char *waker__interrupt(struct decoder *d, __u32 pid, __s32 kstack)
{
	struct lw_stack_ref ref = { .kernel = kstack };
	struct stack_report s = { 0 };
	const char *said = NULL;

	if (kstack < 0)
		return NULL;
	stack__resolve(d, pid, ref, NULL, false, &s);
	for (int i = 0; i < s.nframes && !said; i++) {
		const char *f = s.frames[i].func;

		if (s.frames[i].kind != FRAME_KERNEL)
			continue;
		for (size_t k = 0; k < sizeof(interrupt_frames) / sizeof(interrupt_frames[0]); k++) {
			if (!strncmp(f, interrupt_frames[k], strlen(interrupt_frames[k]))) {
				said = strstr(f, "timer") ? "[timer]" : "[interrupt]";
				break;
			}
		}
	}
	stack_report__clear(&s);
	return said;
}

/*
 * Other parties (who had the CPU, who woke it), longest first; names from
 * the kernel are untrusted; wakers that were interrupts are one, tid 0.
 * Returns how many.
 */
static int parties__copy(struct decoder *d, __u32 pid, const struct lw_neighbour *v, __u32 n,
			 __u32 max, struct neighbour_report *out)
{
	int count = 0;

	for (__u32 i = 0; i < n && i < max; i++) {
		const char *irq = waker__interrupt(d, pid, v[i].stack.kernel);
		struct neighbour_report *p = &out[count];
		int j;

		for (j = 0; irq && j < count && out[j].tid != LW_WAKER_INTERRUPT; j++)
			;
		if (irq && j < count) {
			out[j].ns += v[i].ns;
			continue;
		}
		count++;
		p->top[0] = '\0';
		if (!irq && (v[i].stack.user || stack__has_runtime(v[i].stack.rt))) {
			/* its kernel frames are the wake-up's own: the top is its code's */
			struct lw_stack_ref ref = v[i].stack;
			struct stack_report s = { 0 };

			ref.kernel = -1;
			stack__resolve(d, v[i].pid, ref, NULL, false, &s);
			if (s.nframes)
				stack_report__top(&s, p->top, sizeof(p->top));
			stack_report__clear(&s);
		}
		p->tid = irq ? LW_WAKER_INTERRUPT : v[i].tid;
		p->pid = irq ? 0 : v[i].pid;
		p->ns = v[i].ns;
		if (irq)
			snprintf(p->comm, sizeof(p->comm), "%s", irq);
		else
			name__copy(p->comm, v[i].comm);
	}
	for (int i = 1; i < count; i++) {
		struct neighbour_report t = out[i];
		int j = i;

		for (; j > 0 && out[j - 1].ns < t.ns; j--)
			out[j] = out[j - 1];
		out[j] = t;
	}
	return count;
}

static void stall__add_parties(struct decoder *d, const struct lw_stall_event *e,
			       struct stall_report *r)
{
	r->nneighbours = parties__copy(d, e->pid, e->iter.neighbours, e->iter.nneighbours,
				       LW_ITER_NEIGHBOURS, r->neighbours);
	r->nwakers = parties__copy(d, e->pid, e->iter.wakers, e->iter.nwakers, LW_ITER_WAKERS,
				   r->wakers);
}

/*
 * Who held the GIL while the loop waited for it: each holder's share of the
 * wait by its samples, most first, its stack (walked at its first sample)
 * among the stall's stacks as a blocked one marked gil, so that the stall's
 * GIL time is attributed to where the holder held it.
 */
static void stall__add_gil(struct decoder *d, const struct lw_stall_event *e,
			   struct stall_report *r)
{
	__u32 total = e->iter.gil_samples;
	int n = 0;

	for (__u32 i = 0; i < e->iter.ngil_holders && i < LW_ITER_GIL_HOLDERS; i++) {
		const struct lw_gil_holder *g = &e->iter.gil_holders[i];
		struct gil_holder_report *h = &r->gil_holders[n];

		if (!g->samples || !g->tid || total < g->samples)
			continue;
		h->tid = g->tid;
		h->samples = g->samples;
		name__copy(h->comm, g->comm);
		h->ns = r->gil_ns * g->samples / total;
		h->stack = -1;
		n++;
	}
	for (int i = 1; i < n; i++) {
		struct gil_holder_report t = r->gil_holders[i];
		int j = i;

		for (; j > 0 && r->gil_holders[j - 1].ns < t.ns; j--)
			r->gil_holders[j] = r->gil_holders[j - 1];
		r->gil_holders[j] = t;
	}
	r->ngil_holders = n;
	for (int i = 0; i < n && r->nstacks < REPORT_MAX_STACKS; i++) {
		struct gil_holder_report *h = &r->gil_holders[i];
		const struct lw_gil_holder *g = NULL;
		struct stack_report *s;

		for (__u32 k = 0; k < e->iter.ngil_holders && k < LW_ITER_GIL_HOLDERS; k++) {
			if (e->iter.gil_holders[k].tid == h->tid)
				g = &e->iter.gil_holders[k];
		}
		if (!g || (!g->stack.user && !g->stack.rt[LW_RT_PYTHON]))
			continue;
		h->stack = r->nstacks;
		s = &r->stacks[r->nstacks++];
		memset(s, 0, sizeof(*s));
		s->blocked = true;
		s->gil = true;
		s->ns = h->ns;
		snprintf(s->syscall, sizeof(s->syscall), "gil");
		stack__resolve(d, e->pid, g->stack, NULL, true, s);
	}
}

void decoder__stall(struct decoder *d, const struct lw_stall_event *e, struct stall_report *r)
{
	__u64 off;
	char buf[32];

	memset(r, 0, sizeof(*r));
	r->ts = decoder__wall(d, e->start_ns);
	r->pid = e->pid;
	r->tid = e->tid;
	name__copy(r->comm, e->comm);
	name__copy(r->thread, e->thread);
	r->duration_ns = e->duration_ns;
	r->blocked_ns = e->iter.blocked_ns;
	r->runq_ns = e->iter.runq_ns;
	r->throttled_ns = e->iter.throttled_ns < r->runq_ns ? e->iter.throttled_ns : r->runq_ns;
	r->gil_ns = e->iter.gil_ns;
	off = r->blocked_ns + r->runq_ns + r->gil_ns;
	r->oncpu_ns = off < r->duration_ns ? r->duration_ns - off : 0;
	/* a wait for the GIL is a sleep: the cause it counts in */
	r->cause = stall_cause__of(r->oncpu_ns, r->blocked_ns + r->gil_ns, r->runq_ns);
	for (__u32 i = 0; i < e->iter.nsyscalls && i < LW_ITER_SYSCALLS; i++) {
		struct syscall_report *s = &r->syscalls[r->nsyscalls++];

		snprintf(s->name, sizeof(s->name), "%s",
			 syscall__name(e->iter.syscalls[i].nr, buf, sizeof(buf)));
		s->count = e->iter.syscalls[i].count;
		s->ns = e->iter.syscalls[i].ns;
	}
	for (__u32 i = 0; i < e->iter.nprobes && i < LW_ITER_PROBES; i++) {
		struct probe_time *p = &r->probes[r->nprobes++];

		probe__label(d, e->iter.probes[i].id, p->label, sizeof(p->label));
		p->count = e->iter.probes[i].count;
		p->ns = e->iter.probes[i].ns;
	}
	stall__add_parties(d, e, r);
	stall__add_samples(d, e, r);
	stall__merge_samples(r);
	stall__add_blocks(d, e, r);
	stall__add_runq(d, e, r);
	stall__add_gil(d, e, r);
	stall_report__top(r, r->top, sizeof(r->top));
}

/*
 * The dentry names BPF read at the first sleep, leaf first, joined from the
 * root. The fd itself may be closed or reused by now: it is not looked up.
 * Paths are relative to the file's mount; a deep one keeps its last parts.
 */
static void path__join(const struct lw_fd_info *fd, char *buf, size_t len)
{
	size_t used = 0;
	int top = LW_PATH_PARTS - 1;

	buf[0] = '\0';
	while (top >= 0 && !fd->path[top][0])
		top--;
	/* every part used and no root reached: a deeper path, shown as such */
	if (top == LW_PATH_PARTS - 1 && strcmp(fd->path[top], "/"))
		used = (size_t)snprintf(buf, len, "...");
	for (int i = top; i >= 0 && used < len; i--) {
		char part[LW_PATH_PART_LEN + 1];

		memcpy(part, fd->path[i], LW_PATH_PART_LEN);
		part[LW_PATH_PART_LEN] = '\0';
		if (!strcmp(part, "/"))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "/%s", part);
	}
	str__sanitize(buf);
}

/* "tcp", "udp", or the protocol's number */
static const char *peer__protocol(const struct lw_sock_peer *p, char *buf, size_t len)
{
	if (p->protocol == IPPROTO_TCP)
		return "tcp";
	if (p->protocol == IPPROTO_UDP)
		return "udp";
	snprintf(buf, len, "ip proto %u", p->protocol);
	return buf;
}

/*
 * The other side of a socket, as BPF read it at the first sleep: "tcp
 * 10.0.0.5:5432", "udp [::1]:53", "unix /run/x.sock", "unix @abstract";
 * " (local)" when the socket had no peer and this is its own address.
 */
static void peer__format(const struct lw_sock_peer *p, char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN] = "?", proto[24];
	const char *local = p->local ? " (local)" : "";

	if (p->family == AF_UNIX) {
		char name[LW_UNIX_PATH_LEN + 2];
		size_t n = p->unix_len < LW_UNIX_PATH_LEN ? p->unix_len : LW_UNIX_PATH_LEN;

		if (!n) {
			snprintf(buf, len, "unix");
			return;
		}
		/* an abstract name starts with a NUL byte: shown as "@" */
		memcpy(name, p->unix_path, n);
		name[n] = '\0';
		if (!name[0])
			name[0] = '@';
		str__sanitize(name);
		snprintf(buf, len, "unix %s%s", name, local);
		return;
	}
	inet_ntop(p->family == AF_INET6 ? AF_INET6 : AF_INET, p->addr, addr, sizeof(addr));
	snprintf(buf, len, p->family == AF_INET6 ? "%s [%s]:%u%s" : "%s %s:%u%s",
		 peer__protocol(p, proto, sizeof(proto)), addr, p->port, local);
}

void fd_info__format(const struct lw_fd_info *fd, char *buf, size_t len)
{
	char name[LW_PATH_PART_LEN + 1];

	buf[0] = '\0';
	switch (fd->kind) {
	case LW_FD_SOCKET:
		peer__format(&fd->peer, buf, len);
		break;
	case LW_FD_FILE:
		path__join(fd, buf, len);
		break;
	case LW_FD_PIPE:
		snprintf(buf, len, "pipe:[%llu]", (unsigned long long)fd->inode);
		break;
	case LW_FD_ANON:
		memcpy(name, fd->path[0], LW_PATH_PART_LEN);
		name[LW_PATH_PART_LEN] = '\0';
		str__sanitize(name);
		snprintf(buf, len, "anon_inode:%s", name);
		break;
	}
}

void decoder__block(struct decoder *d, const struct lw_block_event *e, struct block_report *r)
{
	char buf[32];

	memset(r, 0, sizeof(*r));
	r->ts = decoder__wall(d, e->start_ns);
	r->pid = e->pid;
	r->tid = e->tid;
	name__copy(r->comm, e->comm);
	snprintf(r->syscall, sizeof(r->syscall), "%s", syscall__name(e->nr, buf, sizeof(buf)));
	r->duration_ns = e->duration_ns;
	r->sleeps = e->sleeps;
	r->fd = -1;
	if (e->wait.nfds) {
		/* a nested wait call: the fds it waited on, the first one named */
		r->wait_nfds = e->wait.nfds;
		for (int i = 0; i < LW_WAIT_FDS; i++)
			r->wait_fds[i] = e->wait.fds[i];
		if (e->wait.fds[0] >= 0) {
			r->fd = e->wait.fds[0];
			fd_info__format(&e->fd, r->path, sizeof(r->path));
		}
	} else if (syscall__fd_arg(e->nr) && (__s64)e->arg0 >= 0 && e->arg0 < (1u << 30)) {
		r->fd = (int)e->arg0;
		fd_info__format(&e->fd, r->path, sizeof(r->path));
	}
	r->stack.blocked = true;
	r->stack.ns = e->duration_ns;
	snprintf(r->stack.syscall, sizeof(r->stack.syscall), "%s", r->syscall);
	stack__resolve(d, e->pid, e->cap.stack, e->cap.words, false, &r->stack);
}

void decoder__probe(struct decoder *d, const struct lw_probe_event *e, struct probe_report *r)
{
	memset(r, 0, sizeof(*r));
	r->ts = decoder__wall(d, e->start_ns);
	r->pid = e->pid;
	r->tid = e->tid;
	name__copy(r->comm, e->comm);
	probe__label(d, e->id, r->label, sizeof(r->label));
	r->duration_ns = e->duration_ns;
	stack__resolve(d, e->pid, e->cap.stack, NULL, false, &r->stack);
}

/* The open blocking call of a loop record as the event its end would send. */
static void stuck__call(const struct lw_loop *l, __u64 now_ns, struct lw_block_event *b)
{
	memset(b, 0, sizeof(*b));
	b->type = LW_EV_BLOCK;
	b->pid = l->pid;
	b->tid = l->tid;
	b->nr = l->block.nr;
	b->start_ns = l->block.start_ns;
	b->duration_ns = now_ns > l->block.start_ns ? now_ns - l->block.start_ns : 0;
	b->arg0 = l->block.arg0;
	b->sleeps = l->block.sleeps;
	b->cap = l->block.cap;
	b->wait = l->block.wait;
	b->fd = l->block.fd;
	memcpy(b->comm, l->comm, LW_COMM_LEN);
}

/*
 * The iteration so far as the stall its end would send: the time off CPU
 * right now is not in the kernel's sums yet (they grow when it is back on
 * CPU), and the call it sleeps in is not among its closed calls.
 */
void decoder__stuck(struct decoder *d, const struct lw_loop *l, __u64 now_ns,
		    const __u64 *run_delay_ns, struct stuck_report *r)
{
	/* ~4 KiB each, and one thread decodes: not on the stack */
	static struct lw_stall_event e;
	static struct lw_block_event b;
	bool asleep = l->off_ns && l->off_blocked;

	memset(r, 0, sizeof(*r));
	memset(&e, 0, sizeof(e));
	e.type = LW_EV_STALL;
	e.pid = l->pid;
	e.tid = l->tid;
	e.start_ns = l->busy_start_ns;
	e.duration_ns = now_ns > l->busy_start_ns ? now_ns - l->busy_start_ns : 0;
	memcpy(e.comm, l->comm, LW_COMM_LEN);
	memcpy(e.thread, l->thread, LW_COMM_LEN);
	e.iter = l->iter;
	/*
	 * The waits for a CPU that have ended, as loop__end_iteration will book
	 * them: the larger of what the switches showed (summed live in the
	 * record) and the scheduler's run_delay since the iteration began.
	 */
	if (run_delay_ns && *run_delay_ns > l->run_delay_start &&
	    *run_delay_ns - l->run_delay_start > e.iter.runq_ns)
		e.iter.runq_ns = *run_delay_ns - l->run_delay_start;
	/* and the time off CPU right now, which neither count has yet */
	if (l->off_ns && now_ns > l->off_ns) {
		__u64 woke = asleep && l->wake_ns >= l->off_ns && l->wake_ns <= now_ns ?
			     l->wake_ns : now_ns;

		if (asleep) {
			e.iter.blocked_ns += woke - l->off_ns;
			e.iter.runq_ns += now_ns - woke;
		} else {
			e.iter.runq_ns += now_ns - l->off_ns;
		}
	}
	/* then the same bounds: the wait within the time, the sleeps in what is left */
	if (e.iter.runq_ns > e.duration_ns)
		e.iter.runq_ns = e.duration_ns;
	if (e.iter.blocked_ns > e.duration_ns - e.iter.runq_ns)
		e.iter.blocked_ns = e.duration_ns - e.iter.runq_ns;
	r->in_call = asleep && l->block.start_ns;
	if (r->in_call) {
		stuck__call(l, now_ns, &b);
		decoder__block(d, &b, &r->call);
		if (e.iter.nblocks < LW_ITER_BLOCKS) {
			struct lw_block_ref *ref = &e.iter.blocks[e.iter.nblocks++];

			ref->cap = l->block.cap;
			ref->nr = l->block.nr;
			ref->sleeps = l->block.sleeps;
			ref->ns = b.duration_ns;
		}
	}
	decoder__stall(d, &e, &r->so_far);
	/* where it is now names it best */
	if (r->in_call && r->call.stack.nframes)
		stack_report__top(&r->call.stack, r->so_far.top, sizeof(r->so_far.top));
	r->now_ts = decoder__wall(d, now_ns);
}

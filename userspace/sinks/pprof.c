// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --pprof FILE: stall time as a gzip'd pprof profile (profile.proto, as
 * `go tool pprof`, Grafana Pyroscope and Parca read it). The same shares of
 * model/attribution.h as the folded stacks, so both add up to the same stall
 * time; the cause and the process become labels instead of root frames.
 *
 * Sample types: stall (every share), then cpu, blocked and runq (the share
 * again in its cause's column, 0 in the others), all nanoseconds. One
 * location per frame, leaf first; Python and JavaScript frames carry their
 * file and line. Labels: pid, tid, thread (its name), comm, service (when
 * the cgroup names one), cause. Written whole at exit and on SIGUSR1.
 *
 * Everything is bounded: strings, functions, locations and distinct samples
 * each have a cap; a stack that finds no room is counted under one
 * "[more stacks]" sample per cause, so the totals still add up.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "lib/clock.h"
#include "lib/pbuf.h"
#include "lib/text.h"
#include "model/attribution.h"
#include "sinks/outfile.h"
#include "sinks/sink.h"

#define PPROF_MAX_STRINGS 400000
#define PPROF_MAX_FUNCS 200000
#define PPROF_MAX_LOCS 200000
#define PPROF_MAX_SAMPLES 100000
#define PPROF_MAX_PROCS 65536
/* a sample's key: pid, tid, thread name, comm, cause, then its locations */
#define PPROF_KEY_HEAD 5
#define PPROF_MAX_FRAMES 256
#define PPROF_KEY_MAX (PPROF_KEY_HEAD + PPROF_MAX_FRAMES)

/* gil: the time a loop waited for the GIL, at the holders' stacks (not in blocked) */
enum { VAL_STALL, VAL_CPU, VAL_BLOCKED, VAL_RUNQ, VAL_GIL, NVALS };

/* one interned thing: a string, a function, a location, a sample, a process */
struct pentry {
	struct pentry *next;
	unsigned int hash;
	__u64 id;		/* its position + 1: pprof's ids start at 1 */
	__u64 vals[NVALS];	/* a sample's values; a process's service (a string id) */
	size_t keylen;
	unsigned char key[];
};

struct ptable {
	struct pentry **buckets;
	size_t nbuckets;
	struct pentry **v;	/* in the order they came: v[id - 1] */
	size_t n, cap, max;
};

struct pprof {
	struct outfile file;
	struct ptable strings, funcs, locs, samples, procs;
	double start_mono;
	double start_ts;
	__u64 key[PPROF_KEY_MAX];
};

static unsigned int key__hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	unsigned int h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int ptable__init(struct ptable *t, size_t nbuckets, size_t max)
{
	t->buckets = calloc(nbuckets, sizeof(*t->buckets));
	t->nbuckets = nbuckets;
	t->max = max;
	return t->buckets ? 0 : -1;
}

static void ptable__free(struct ptable *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->buckets);
	memset(t, 0, sizeof(*t));
}

static struct pentry *ptable__find(const struct ptable *t, const void *key, size_t len)
{
	unsigned int h = key__hash(key, len);

	for (struct pentry *e = t->buckets[h % t->nbuckets]; e; e = e->next)
		if (e->hash == h && e->keylen == len && !memcmp(e->key, key, len))
			return e;
	return NULL;
}

/* key's entry, added when new (force: even past the cap); NULL when there is no room */
static struct pentry *ptable__get(struct ptable *t, const void *key, size_t len, bool force)
{
	unsigned int h = key__hash(key, len);
	struct pentry **slot = &t->buckets[h % t->nbuckets], *e;

	for (e = *slot; e; e = e->next)
		if (e->hash == h && e->keylen == len && !memcmp(e->key, key, len))
			return e;
	if (t->n >= t->max && !force)
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct pentry **v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	e = calloc(1, sizeof(*e) + len + 1);	/* + 1: a string's key stays a C string */
	if (!e)
		return NULL;
	e->hash = h;
	e->keylen = len;
	memcpy(e->key, key, len);
	e->id = t->n + 1;
	e->next = *slot;
	*slot = e;
	t->v[t->n++] = e;
	return e;
}

/* A string's index in the string table; 0 (the empty string) when there is no room. */
static __u64 pprof__str(struct pprof *pp, const char *s)
{
	size_t n = utf8__valid_prefix(s);	/* a name cut mid-sequence is still UTF-8 */
	struct pentry *e = n ? ptable__get(&pp->strings, s, n, false) : NULL;

	return e ? e->id : 0;
}

static void pprof__free(struct pprof *pp)
{
	ptable__free(&pp->strings);
	ptable__free(&pp->funcs);
	ptable__free(&pp->locs);
	ptable__free(&pp->samples);
	ptable__free(&pp->procs);
	outfile__free(&pp->file);
	free(pp);
}

static bool pprof__wanted(const struct sink_config *cfg)
{
	return cfg->pprof != NULL;
}

static int pprof__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct pprof *pp = calloc(1, sizeof(*pp));

	if (!pp || ptable__init(&pp->strings, 65536, PPROF_MAX_STRINGS) ||
	    ptable__init(&pp->funcs, 16384, PPROF_MAX_FUNCS) ||
	    ptable__init(&pp->locs, 16384, PPROF_MAX_LOCS) ||
	    ptable__init(&pp->samples, 16384, PPROF_MAX_SAMPLES) ||
	    ptable__init(&pp->procs, 1024, PPROF_MAX_PROCS)) {
		snprintf(err, errlen, "out of memory");
		if (pp)
			pprof__free(pp);
		return -1;
	}
	if (outfile__init(&pp->file, cfg->pprof, "--pprof", 0, err, errlen)) {
		pprof__free(pp);
		return -1;
	}
	/* string 0 is "": pprof__str's answer when a string is empty or finds no room */
	s->priv = pp;
	return 0;
}

static int pprof__start(struct sink *s, const struct model *m, double now)
{
	struct pprof *pp = s->priv;

	(void)m;
	pp->start_mono = now;
	pp->start_ts = clock__wall();
	return 0;
}

/* A location of one function at one line (0: none known); 0 when there is no room. */
static __u64 pprof__loc(struct pprof *pp, const char *name, const char *system_name,
			const char *file, int line)
{
	__u64 fkey[3] = { pprof__str(pp, name), pprof__str(pp, system_name),
			  pprof__str(pp, file) };
	struct pentry *fn = ptable__get(&pp->funcs, fkey, sizeof(fkey), false);
	__u64 lkey[2];
	struct pentry *loc;

	if (!fn)
		return 0;
	lkey[0] = fn->id;
	lkey[1] = line > 0 ? (__u64)line : 0;
	loc = ptable__get(&pp->locs, lkey, sizeof(lkey), false);
	return loc ? loc->id : 0;
}

/* The names folded.c gives a frame, without its decorations (pprof has fields for them). */
static __u64 pprof__frame(struct pprof *pp, const struct frame *f)
{
	char name[FUNC_NAME_LEN + 16];
	const char *file = frame__is_script(f) && f->file[0] ? f->file : f->module;

	if (f->func[0])
		snprintf(name, sizeof(name), "%s", f->func);
	else
		snprintf(name, sizeof(name), "[%s]", f->module[0] ? f->module : "unknown");
	return pprof__loc(pp, name, f->func_raw[0] ? f->func_raw : name, file,
			  frame__is_script(f) ? f->line : 0);
}

/* the key's locations: nlocs, then the stack leaf first; false when one found no room */
static bool pprof__stack(struct pprof *pp, const struct stall_report *r,
			 const struct stack_share *sh, size_t *nkey)
{
	const struct stack_report *st = sh->stack >= 0 ? &r->stacks[sh->stack] : NULL;
	__u64 id;

	if (!st || !st->nframes) {
		id = pprof__loc(pp, st ? "[unknown]" : stall_cause__unknown(sh->cause), "", "",
				0);
		pp->key[(*nkey)++] = id;
		return id != 0;
	}
	for (int i = 0; i < st->nframes && *nkey < PPROF_KEY_MAX; i++) {
		id = pprof__frame(pp, &st->frames[i]);
		if (!id)
			return false;
		pp->key[(*nkey)++] = id;
	}
	return true;
}

static void pprof__share(struct pprof *pp, const struct stall_report *r,
			 const struct stack_share *sh)
{
	size_t nkey = PPROF_KEY_HEAD;
	struct pentry *e = NULL;

	pp->key[0] = r->pid;
	pp->key[1] = r->tid;
	pp->key[2] = pprof__str(pp, r->thread);
	pp->key[3] = pprof__str(pp, r->comm);
	pp->key[4] = sh->cause;
	if (pprof__stack(pp, r, sh, &nkey))
		e = ptable__get(&pp->samples, pp->key, nkey * sizeof(__u64), false);
	if (!e) {
		/* no room: one sample per cause, no process, still counted */
		memset(pp->key, 0, PPROF_KEY_HEAD * sizeof(__u64));
		pp->key[4] = sh->cause;
		pp->key[PPROF_KEY_HEAD] = pprof__loc(pp, "[more stacks]", "", "", 0);
		e = ptable__get(&pp->samples, pp->key, (PPROF_KEY_HEAD + 1) * sizeof(__u64),
				true);
		if (!e)
			return;
	}
	e->vals[VAL_STALL] += sh->ns;
	if (sh->stack >= 0 && r->stacks[sh->stack].gil)
		e->vals[VAL_GIL] += sh->ns;
	else
		e->vals[sh->cause == CAUSE_CPU ? VAL_CPU : sh->cause == CAUSE_BLOCKED ?
			VAL_BLOCKED : VAL_RUNQ] += sh->ns;
}

static void pprof__stall(struct sink *s, const struct stall_report *r)
{
	struct pprof *pp = s->priv;
	struct stack_share shares[STALL_SHARES_MAX];
	int n = stall_report__shares(r, shares);

	for (int i = 0; i < n; i++)
		pprof__share(pp, r, &shares[i]);
}

/* Each traced process's service, kept past its exit: samples outlive threads. */
static void pprof__services(struct pprof *pp, const struct model *m)
{
	char service[CGROUP_SERVICE_LEN];

	for (size_t i = 0; i < m->nthreads; i++) {
		const struct loop_thread *t = m->threads[i];
		struct pentry *e = ptable__get(&pp->procs, &t->pid, sizeof(t->pid), false);

		if (!e || e->vals[0])
			continue;
		cgroup__service(&t->cg, &t->k8s, service, sizeof(service));
		e->vals[0] = pprof__str(pp, service);
	}
}

static void pprof__interval(struct sink *s, const struct model *m, double ts)
{
	(void)ts;
	pprof__services(s->priv, m);
}

static void value_type__put(struct pbuf *b, unsigned int field, __u64 type, __u64 unit)
{
	size_t mark = pbuf__begin(b, field);

	pbuf__uint(b, 1, type);
	pbuf__uint(b, 2, unit);
	pbuf__end(b, mark);
}

static void label__put(struct pbuf *b, __u64 key, __u64 str, __u64 num)
{
	size_t mark = pbuf__begin(b, 3);	/* Sample.label */

	pbuf__uint(b, 1, key);
	if (str)
		pbuf__uint(b, 2, str);
	else
		pbuf__uint(b, 3, num);
	pbuf__end(b, mark);
}

static void pprof__samples(struct pprof *pp, struct pbuf *b)
{
	__u64 k_pid = pprof__str(pp, "pid"), k_tid = pprof__str(pp, "tid");
	__u64 k_thread = pprof__str(pp, "thread"), k_comm = pprof__str(pp, "comm");
	__u64 k_service = pprof__str(pp, "service"), k_cause = pprof__str(pp, "cause");
	__u64 causes[3];

	for (int c = 0; c < 3; c++)
		causes[c] = pprof__str(pp, stall_cause__name(c));
	for (size_t i = 0; i < pp->samples.n; i++) {
		const struct pentry *e = pp->samples.v[i];
		const __u64 *key = (const __u64 *)e->key;
		size_t nkey = e->keylen / sizeof(__u64), mark, packed;
		__u32 pid = key[0];
		const struct pentry *proc = ptable__find(&pp->procs, &pid, sizeof(pid));

		mark = pbuf__begin(b, 2);	/* Profile.sample */
		packed = pbuf__begin(b, 1);	/* location_id, leaf first */
		for (size_t k = PPROF_KEY_HEAD; k < nkey; k++)
			pbuf__varint(b, key[k]);
		pbuf__end(b, packed);
		packed = pbuf__begin(b, 2);	/* value */
		for (int v = 0; v < NVALS; v++)
			pbuf__varint(b, e->vals[v]);
		pbuf__end(b, packed);
		if (pid) {
			label__put(b, k_pid, 0, pid);
			label__put(b, k_tid, 0, key[1]);
			if (key[2])
				label__put(b, k_thread, key[2], 0);
			if (key[3])
				label__put(b, k_comm, key[3], 0);
			if (proc && proc->vals[0])
				label__put(b, k_service, proc->vals[0], 0);
		}
		label__put(b, k_cause, causes[key[4] < 3 ? key[4] : 0], 0);
		pbuf__end(b, mark);
	}
}

static void pprof__encode(struct pprof *pp, struct pbuf *b, double now)
{
	static const char *const types[NVALS] = { "stall", "cpu", "blocked", "runq", "gil" };
	__u64 ns = pprof__str(pp, "nanoseconds");
	size_t mark;

	for (int v = 0; v < NVALS; v++)
		value_type__put(b, 1, pprof__str(pp, types[v]), ns);
	pprof__samples(pp, b);
	/*
	 * One mapping that says every location is already symbolized: pprof
	 * then looks for no binaries (they are the traced hosts', not the reader's).
	 */
	mark = pbuf__begin(b, 3);
	pbuf__uint(b, 1, 1);
	pbuf__uint(b, 5, pprof__str(pp, "loopwatch"));
	pbuf__uint(b, 7, 1);
	pbuf__uint(b, 8, 1);
	pbuf__uint(b, 9, 1);
	pbuf__end(b, mark);
	for (size_t i = 0; i < pp->locs.n; i++) {
		const __u64 *key = (const __u64 *)pp->locs.v[i]->key;
		size_t line;

		mark = pbuf__begin(b, 4);	/* Profile.location */
		pbuf__uint(b, 1, pp->locs.v[i]->id);
		pbuf__uint(b, 2, 1);
		line = pbuf__begin(b, 4);
		pbuf__uint(b, 1, key[0]);
		if (key[1])
			pbuf__uint(b, 2, key[1]);
		pbuf__end(b, line);
		pbuf__end(b, mark);
	}
	for (size_t i = 0; i < pp->funcs.n; i++) {
		const __u64 *key = (const __u64 *)pp->funcs.v[i]->key;

		mark = pbuf__begin(b, 5);	/* Profile.function */
		pbuf__uint(b, 1, pp->funcs.v[i]->id);
		pbuf__uint(b, 2, key[0]);
		pbuf__uint(b, 3, key[1]);
		pbuf__uint(b, 4, key[2]);
		pbuf__end(b, mark);
	}
	/* every string is interned by now: the table goes last */
	pbuf__string(b, 6, "");
	for (size_t i = 0; i < pp->strings.n; i++)
		pbuf__bytes(b, 6, pp->strings.v[i]->key, pp->strings.v[i]->keylen);
	pbuf__uint(b, 9, (__u64)(pp->start_ts * 1e9));
	pbuf__uint(b, 10, now > pp->start_mono ? (__u64)((now - pp->start_mono) * 1e9) : 0);
	value_type__put(b, 11, pprof__str(pp, "stall"), ns);
	pbuf__uint(b, 14, pprof__str(pp, "stall"));	/* default_sample_type */
}

/* gzip, as pprof's readers expect (they also take it plain, Pyroscope does not) */
static int gzip__write(FILE *out, const struct pbuf *b)
{
	unsigned char chunk[65536];
	z_stream z = { 0 };
	int ret;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	z.next_in = b->buf;
	z.avail_in = b->len;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		ret = deflate(&z, Z_FINISH);
		if (ret == Z_STREAM_ERROR ||
		    fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
		    sizeof(chunk) - z.avail_out) {
			deflateEnd(&z);
			return -1;
		}
	} while (ret != Z_STREAM_END);
	deflateEnd(&z);
	return 0;
}

static int pprof__write(struct pprof *pp, const struct model *m)
{
	struct pbuf b = { 0 };
	FILE *out;
	int ret;

	pprof__services(pp, m);
	pprof__encode(pp, &b, clock__mono());
	out = outfile__begin(&pp->file);
	if (!out) {
		pbuf__free(&b);
		return -1;
	}
	if (b.oom || gzip__write(out, &b)) {
		fprintf(stderr, "loopwatch: --pprof %s: out of memory\n", pp->file.path);
		fclose(out);
		pbuf__free(&b);
		return -1;
	}
	pbuf__free(&b);
	ret = outfile__commit(&pp->file, out);
	return ret;
}

static void pprof__snapshot(struct sink *s, const struct model *m, double ts)
{
	(void)ts;
	pprof__write(s->priv, m);
}

static int pprof__summary(struct sink *s, const struct model *m, double ts)
{
	struct pprof *pp = s->priv;

	(void)ts;
	return pprof__write(pp, m) || outfile__status(&pp->file) ? 1 : 0;
}

static void pprof__close(struct sink *s)
{
	if (s->priv)
		pprof__free(s->priv);
}

const struct sink_ops pprof_sink = {
	.name = "pprof profile",
	.wanted = pprof__wanted,
	.open = pprof__open,
	.start = pprof__start,
	.interval = pprof__interval,
	.stall = pprof__stall,
	.snapshot = pprof__snapshot,
	.summary = pprof__summary,
	.close = pprof__close,
};

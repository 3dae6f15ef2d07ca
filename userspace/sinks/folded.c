// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks of stall time (Brendan Gregg's format, one "frame;frame;...
 * weight" line per stack, root first) for flame graphs: flamegraph.pl,
 * inferno, speedscope. Weights are microseconds, the shares of
 * model/attribution.h, so the file adds up to the stall time it covers. The
 * cause is the root frame, so CPU, blocked and run-queue time sit side by
 * side; then the process (unless --folded-merge), then the stack. Written
 * whole at exit and on SIGUSR1.
 */
#include <stdlib.h>
#include <string.h>
#include "model/attribution.h"
#include "sinks/outfile.h"
#include "sinks/sink.h"

#define FOLDED_HASH 8192
/* distinct stacks kept; later ones are folded into one [more stacks] line per cause */
#define FOLDED_MAX_STACKS 100000
#define FOLDED_LINE_LEN 8192

struct folded_stack {
	char *line;		/* the frames, without the weight */
	__u64 ns;
	struct folded_stack *next;
};

struct folded {
	struct outfile file;
	bool merge;
	struct folded_stack *hash[FOLDED_HASH];
	size_t nstacks;
	char line[FOLDED_LINE_LEN];
};

static bool folded__wanted(const struct sink_config *cfg)
{
	return cfg->folded != NULL;
}

static void folded__free(struct folded *fd)
{
	for (size_t h = 0; h < FOLDED_HASH; h++) {
		while (fd->hash[h]) {
			struct folded_stack *st = fd->hash[h];

			fd->hash[h] = st->next;
			free(st->line);
			free(st);
		}
	}
	outfile__free(&fd->file);
	free(fd);
}

static int folded__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct folded *fd = calloc(1, sizeof(*fd));

	if (!fd) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (outfile__init(&fd->file, cfg->folded, "--folded", 0, err, errlen)) {
		folded__free(fd);
		return -1;
	}
	fd->merge = cfg->folded_merge;
	s->priv = fd;
	return 0;
}

/* Raw text (a separator), cut to fit. */
static size_t line__sep(char *buf, size_t used, const char *s)
{
	for (; *s && used + 2 < FOLDED_LINE_LEN; s++)
		buf[used++] = *s;
	buf[used] = '\0';
	return used;
}

/* One frame, cut to fit: ';' separates frames, and the weight follows the last space. */
static size_t line__put(char *buf, size_t used, const char *s)
{
	for (; *s && used + 2 < FOLDED_LINE_LEN; s++)
		buf[used++] = *s == ';' ? ':' : (unsigned char)*s < 0x20 ? '?' : *s;
	buf[used] = '\0';
	return used;
}

static size_t line__frame(char *buf, size_t used, const struct frame *f)
{
	char name[FUNC_NAME_LEN + FUNC_WHERE_LEN + 16];
	const char *base = strrchr(f->file, '/');

	if (frame__is_script(f) && f->file[0])
		snprintf(name, sizeof(name), "%s (%s)", f->func[0] ? f->func : "[unknown]",
			 base ? base + 1 : f->file);
	else if (f->kind == FRAME_KERNEL)
		/* flamegraph.pl's annotation: kernel frames get their own colour */
		snprintf(name, sizeof(name), "%s_[k]", f->func[0] ? f->func : "[unknown]");
	else if (f->func[0])
		snprintf(name, sizeof(name), "%s", f->func);
	else
		snprintf(name, sizeof(name), "[%s]", f->module[0] ? f->module : "unknown");
	return line__put(buf, used, name);
}

/* cause;process;root;...;leaf for one share of a stall */
static void folded__line(struct folded *fd, const struct stall_report *r,
			 const struct stack_share *sh, bool overflow)
{
	const struct stack_report *st = sh->stack >= 0 ? &r->stacks[sh->stack] : NULL;
	char proc[LW_COMM_LEN + 16];
	/* the GIL's holders' stacks: a cause of their own, as in pprof's gil column */
	size_t used = line__put(fd->line, 0, st && st->gil ? "gil" : stall_cause__name(sh->cause));

	if (!fd->merge) {
		snprintf(proc, sizeof(proc), "%s-%u", r->comm, r->pid);
		used = line__sep(fd->line, used, ";");
		used = line__put(fd->line, used, proc);
	}
	if (overflow) {
		line__sep(fd->line, used, ";[more stacks]");
		return;
	}
	/* another thread's stack, holding the GIL the loop waited for: a root of its own */
	for (int i = 0; st && st->gil && i < r->ngil_holders; i++) {
		const struct gil_holder_report *h = &r->gil_holders[i];
		char holder[LW_COMM_LEN + 40];

		if (h->stack != sh->stack)
			continue;
		snprintf(holder, sizeof(holder), "[gil held by %s[%u]]", h->comm, h->tid);
		used = line__sep(fd->line, used, ";");
		used = line__put(fd->line, used, holder);
	}
	if (!st || !st->nframes) {
		used = line__sep(fd->line, used, ";");
		line__put(fd->line, used, st ? "[unknown]" : stall_cause__unknown(sh->cause));
		return;
	}
	for (int i = st->nframes - 1; i >= 0; i--) {
		used = line__sep(fd->line, used, ";");
		used = line__frame(fd->line, used, &st->frames[i]);
	}
}

static unsigned int line__hash(const char *s)
{
	unsigned int h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % FOLDED_HASH;
}

static void folded__add(struct folded *fd, __u64 ns)
{
	unsigned int h = line__hash(fd->line);
	struct folded_stack *st;

	for (st = fd->hash[h]; st; st = st->next) {
		if (!strcmp(st->line, fd->line)) {
			st->ns += ns;
			return;
		}
	}
	st = calloc(1, sizeof(*st));
	if (!st || !(st->line = strdup(fd->line))) {
		free(st);
		return;
	}
	st->ns = ns;
	st->next = fd->hash[h];
	fd->hash[h] = st;
	fd->nstacks++;
}

static void folded__stall(struct sink *s, const struct stall_report *r)
{
	struct folded *fd = s->priv;
	struct stack_share shares[STALL_SHARES_MAX];
	int n = stall_report__shares(r, shares);

	for (int i = 0; i < n; i++) {
		folded__line(fd, r, &shares[i], false);
		if (fd->nstacks >= FOLDED_MAX_STACKS) {
			unsigned int h = line__hash(fd->line);
			bool known = false;

			for (struct folded_stack *st = fd->hash[h]; st && !known; st = st->next)
				known = !strcmp(st->line, fd->line);
			if (!known)
				folded__line(fd, r, &shares[i], true);
		}
		folded__add(fd, shares[i].ns);
	}
}

static int folded__write(struct folded *fd)
{
	FILE *out = outfile__begin(&fd->file);

	if (!out)
		return -1;
	for (size_t h = 0; h < FOLDED_HASH; h++) {
		for (struct folded_stack *st = fd->hash[h]; st; st = st->next) {
			__u64 us = (st->ns + 500) / 1000;

			if (us)
				fprintf(out, "%s %llu\n", st->line, (unsigned long long)us);
		}
	}
	return outfile__commit(&fd->file, out);
}

static void folded__snapshot(struct sink *s, const struct model *m, double ts)
{
	(void)m;
	(void)ts;
	folded__write(s->priv);
}

static int folded__summary(struct sink *s, const struct model *m, double ts)
{
	struct folded *fd = s->priv;

	(void)m;
	(void)ts;
	return folded__write(fd) || outfile__status(&fd->file) ? 1 : 0;
}

static void folded__close(struct sink *s)
{
	if (s->priv)
		folded__free(s->priv);
}

const struct sink_ops folded_sink = {
	.name = "folded stacks",
	.wanted = folded__wanted,
	.open = folded__open,
	.stall = folded__stall,
	.snapshot = folded__snapshot,
	.summary = folded__summary,
	.close = folded__close,
};

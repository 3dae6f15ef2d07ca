// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The Prometheus textfile: the registry's exposition written every
 * --prom-interval seconds and at exit, replacing the file atomically, for
 * node_exporter's textfile collector, through outfile.c like every file output
 * (its temp name, .BASE.PID.tmp, never matches *.prom).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/clock.h"
#include "sinks/outfile.h"
#include "sinks/promreg.h"
#include "sinks/sink.h"

struct prom_file {
	struct prom_registry *reg;
	struct outfile file;
	double interval_s;
	double next_s;		/* monotonic: when the next write is due */
};

static bool prom__wanted(const struct sink_config *cfg)
{
	return cfg->prom_file != NULL;
}

static void prom__free(struct prom_file *pf)
{
	prom_registry__put(pf->reg);
	outfile__free(&pf->file);
	free(pf);
}

/* The path is checked before any BPF is loaded: a bad one is exit status 2. */
static int prom__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct prom_file *pf = calloc(1, sizeof(*pf));
	struct prom_options popts;

	if (!pf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	pf->interval_s = cfg->prom_interval_s;
	prom_options__from_config(&popts, cfg);
	pf->reg = prom_registry__shared(&popts);
	if (!pf->reg) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (outfile__init(&pf->file, cfg->prom_file, "--prom-file", OUTFILE_WORLD_READABLE, err,
			  errlen))
		goto fail;
	s->priv = pf;
	return 0;
fail:
	prom__free(pf);
	return -1;
}

/* The exposition through the one file writer; one line when writes start failing. */
static int prom__write(struct prom_file *pf, const struct model *m, double now_s)
{
	double t0 = clock__mono();
	FILE *out = outfile__begin(&pf->file);
	int err = -ENOMEM;

	if (out) {
		prom_registry__render(pf->reg, m, now_s, out);
		err = outfile__commit(&pf->file, out);
	}
	prom_registry__set_write_time(pf->reg, clock__mono() - t0);
	if (err)
		prom_registry__count(pf->reg, PROM_SELF_WRITE_ERRORS, 1);
	return err;
}

/* at once: the file's appearance tells a supervisor that tracing runs */
static int prom__start(struct sink *s, const struct model *m, double now)
{
	struct prom_file *pf = s->priv;

	(void)m;
	pf->next_s = now;
	return 0;
}

static double prom__due(const struct sink *s)
{
	const struct prom_file *pf = s->priv;

	return pf->next_s;
}

static int prom__flush(struct sink *s, const struct model *m, double now)
{
	struct prom_file *pf = s->priv;

	while (pf->next_s <= now)
		pf->next_s += pf->interval_s;
	return prom__write(pf, m, now);
}

static int prom__summary(struct sink *s, const struct model *m, double ts)
{
	struct prom_file *pf = s->priv;

	(void)ts;
	/* any interval's write that failed fails the run (counted and said at the time) */
	return prom__write(pf, m, clock__mono()) || outfile__status(&pf->file) ? 1 : 0;
}

static void prom__close(struct sink *s)
{
	if (s->priv)
		prom__free(s->priv);
}

const struct sink_ops prom_sink = {
	.name = "Prometheus textfile",
	.wanted = prom__wanted,
	.open = prom__open,
	.start = prom__start,
	.due = prom__due,
	.flush = prom__flush,
	.summary = prom__summary,
	.close = prom__close,
};

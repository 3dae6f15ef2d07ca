// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kernel/uprobes.h"
#include "proc/procs.h"
#include "tracker/attacher.h"
#include "tracker/catalog.h"
#include "tracker/elfsym.h"
#include "tracker/probes.h"
#include "tracker/reaper.h"

#define LABEL_LEN 64
#define PY_TP_CALL 50		/* CPython's Py_tp_call slot id (Include/typeslots.h) */
/* rescans a file may go unseen before its probes are released */
#define PROBE_GRACE_SCANS 2
/*
 * Uprobes (an entry and a return per function, file and process) at most,
 * and fds their links may hold (two a file and process with multi links,
 * four a function without), at most half of RLIMIT_NOFILE: past either a
 * file goes unprobed, said once on stderr. Links being removed still count.
 */
#define PROBE_MAX_UPROBES 16384
#define PROBE_MAX_FDS 4096

/* A function found in a file to probe: a catalog entry, or a custom probe. */
struct probe_site {
	int entry;		/* catalog index; -1 for a custom probe */
	__u32 id;
	uint64_t off;		/* file offset */
};

/*
 * A file's probes attached for one process (pid 0: custom probes, in every
 * process): the kernel plants the breakpoints in that process's memory
 * alone, so another process that maps the same file -- a Python batch job
 * beside a traced server, an unfiltered node beside `-p` -- pays nothing.
 */
struct probe_proc {
	__u32 pid;
	uint64_t start_time;
	unsigned int seen_gen;
	uint64_t job;		/* its attach job (tracker/attacher.c) while it runs, or 0 */
	struct uprobe_links *links;
	size_t uprobes;		/* counted against the caps: reserved, then held */
	size_t fds;
};

/* A file looked at once per inode, with what was found in it to probe. */
struct probe_file {
	unsigned long long dev;
	unsigned long long ino;
	bool custom;		/* holds --probe sites: kept for the whole run */
	unsigned int seen_gen;
	struct probe_site *sites;
	size_t nsites;
	struct probe_proc *procs;
	size_t nprocs;
};

struct probes {
	struct collector *c;
	bool builtin;
	char labels[LW_MAX_PROBES][LABEL_LEN];
	__u32 nlabels;
	struct probe_file *files;
	size_t nfiles;
	size_t cap;
	unsigned int gen;
	size_t nuprobes;	/* of every probe_proc */
	size_t nfds;
	size_t orphan_fds;	/* reserved by jobs whose probe_proc went meanwhile */
	size_t max_uprobes;
	size_t max_fds;		/* PROBE_MAX_FDS, or half the fds we may open */
	bool uprobes_said, fds_said;
	struct uprobe_progs progs;	/* the main loop's: --probe's, at start */
	struct attacher *attacher;	/* attaches off the main loop */
	uint64_t next_job;
	struct reaper *reaper;	/* detaches off the main loop */
};

/* Probes that share a label share an id: "jansson load" covers five functions. */
static __u32 probes__id(struct probes *p, const char *label)
{
	for (__u32 i = 0; i < p->nlabels; i++) {
		if (!strcmp(p->labels[i], label))
			return i;
	}
	if (p->nlabels >= LW_MAX_PROBES)
		return LW_MAX_PROBES - 1;
	snprintf(p->labels[p->nlabels], LABEL_LEN, "%s", label);
	return p->nlabels++;
}

void probes__label(const struct probes *p, __u32 id, char *buf, size_t len)
{
	if (p && id < p->nlabels)
		snprintf(buf, len, "%s", p->labels[id]);
	else
		snprintf(buf, len, "probe#%u", id);
}

static struct probe_file *probes__add_file(struct probes *p, unsigned long long dev,
					   unsigned long long ino)
{
	struct probe_file *f;

	if (p->nfiles == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		struct probe_file *v = realloc(p->files, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->files = v;
		p->cap = cap;
	}
	f = &p->files[p->nfiles++];
	memset(f, 0, sizeof(*f));
	f->dev = dev;
	f->ino = ino;
	f->seen_gen = p->gen;
	return f;
}

static int probe_file__add_site(struct probe_file *f, int entry, __u32 id, uint64_t off)
{
	struct probe_site *v = realloc(f->sites, (f->nsites + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	f->sites = v;
	v[f->nsites++] = (struct probe_site){ .entry = entry, .id = id, .off = off };
	return 0;
}

static void probe_proc__detach(struct probes *p, struct probe_proc *pp)
{
	p->nuprobes -= pp->uprobes;
	p->nfds -= pp->fds;
	/* its job's links, when they come, go to the reaper */
	if (pp->job)
		p->orphan_fds += pp->fds;
	reaper__put(p->reaper, pp->links);
	pp->links = NULL;
	pp->job = 0;
	pp->uprobes = pp->fds = 0;
}

/* Whether uprobes and fds more fit under the caps; the first time one does not, said. */
static bool probes__fits(struct probes *p, size_t uprobes, size_t fds)
{
	if (p->nuprobes + uprobes > p->max_uprobes) {
		if (!p->uprobes_said)
			fprintf(stderr, "loopwatch: %zu uprobes attached, the most there may be: "
				"files mapped from now on are not probed\n", p->max_uprobes);
		p->uprobes_said = true;
		return false;
	}
	if (p->nfds + p->orphan_fds + reaper__fds(p->reaper) + fds > p->max_fds) {
		if (!p->fds_said)
			fprintf(stderr, "loopwatch: uprobe links hold %zu fds, the most there may be "
				"(half of what RLIMIT_NOFILE lets loopwatch open): files mapped "
				"from now on are not probed\n", p->max_fds);
		p->fds_said = true;
		return false;
	}
	return true;
}

static struct probe_proc *probe_file__new_proc(struct probe_file *f, __u32 pid,
					       uint64_t start_time, unsigned int gen)
{
	struct probe_proc *v = realloc(f->procs, (f->nprocs + 1) * sizeof(*v));

	if (!v)
		return NULL;
	f->procs = v;
	v[f->nprocs] = (struct probe_proc){ .pid = pid, .start_time = start_time,
					    .seen_gen = gen };
	return &v[f->nprocs++];
}

static void attach_job__free(struct attach_job *job)
{
	if (!job)
		return;
	if (job->fd >= 0)
		close(job->fd);
	free(job->offs);
	free(job->cookies);
	free(job);
}

/*
 * Every site of f in process pid, through fd (the file as that process
 * sees it, closed here or by the attacher): a job for the attacher, its
 * uprobes and fds reserved under the caps. Not queued (the caps, a full
 * queue): the next rescan tries again.
 */
static void probe_file__attach(struct probes *p, struct probe_file *f, __u32 pid,
			       uint64_t start_time, int fd)
{
	size_t uprobes = 2 * f->nsites;
	size_t fds = uprobe_links__fds_for(&p->progs, f->nsites);
	struct attach_job *job;
	struct probe_proc *pp;

	/* the file's fd is held until the attacher is done with it */
	if (!probes__fits(p, uprobes, fds + 1)) {
		close(fd);
		return;
	}
	job = calloc(1, sizeof(*job));
	if (!job) {
		close(fd);
		return;
	}
	job->fd = fd;
	job->pid = (int)pid;
	job->n = f->nsites;
	job->max_fds = fds;
	job->offs = calloc(f->nsites, sizeof(*job->offs));
	job->cookies = calloc(f->nsites, sizeof(*job->cookies));
	if (!job->offs || !job->cookies)
		goto fail;
	for (size_t i = 0; i < f->nsites; i++) {
		job->offs[i] = f->sites[i].off;
		job->cookies[i] = f->sites[i].id;
	}
	job->id = ++p->next_job;
	pp = probe_file__new_proc(f, pid, start_time, p->gen);
	if (!pp)
		goto fail;
	if (!attacher__put(p->attacher, job)) {
		f->nprocs--;
		goto fail;
	}
	pp->job = job->id;
	pp->uprobes = uprobes;
	pp->fds = fds + 1;
	p->nuprobes += uprobes;
	p->nfds += fds + 1;
	return;
fail:
	attach_job__free(job);
}

/* A job's probe_proc, by the job's id: the one whose bookkeeping takes its links. */
static struct probe_proc *probes__job_proc(struct probes *p, uint64_t id)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		for (size_t k = 0; k < p->files[i].nprocs; k++) {
			if (p->files[i].procs[k].job == id)
				return &p->files[i].procs[k];
		}
	}
	return NULL;
}

/* The attacher's finished jobs: their links to their probe_proc, or the reaper. */
static void probes__collect(struct probes *p)
{
	struct attach_job *job;

	while ((job = attacher__take(p->attacher))) {
		struct probe_proc *pp = probes__job_proc(p, job->id);
		size_t fds = uprobe_links__fds(job->links);
		size_t uprobes = 2 * uprobe_links__functions(job->links);

		if (!pp) {
			p->orphan_fds -= job->max_fds + 1;
			reaper__put(p->reaper, job->links);
		} else {
			p->nuprobes = p->nuprobes - pp->uprobes + uprobes;
			p->nfds = p->nfds - pp->fds + fds;
			pp->uprobes = uprobes;
			pp->fds = fds;
			pp->links = job->links;
			pp->job = 0;
		}
		job->links = NULL;
		attach_job__free(job);
	}
}

void probes__settle(struct probes *p)
{
	if (p && p->attacher)
		probes__collect(p);
}

static void probe_file__release(struct probes *p, struct probe_file *f)
{
	for (size_t i = 0; i < f->nprocs; i++)
		probe_proc__detach(p, &f->procs[i]);
	free(f->procs);
	free(f->sites);
	f->procs = NULL;
	f->sites = NULL;
	f->nprocs = 0;
	f->nsites = 0;
}

/*
 * Where a catalog entry's function is in a file its glob names, and how
 * that was found: symbols, the debug file, a CPython type's slot.
 */
static int entry__locate(const struct catalog_entry *e, const char *path, uint64_t *off,
			 const char **how)
{
	enum elfsym_how h;

	if (!elfsym__find(path, e->symbol, off, &h)) {
		*how = elfsym_how__name(h);
		return 0;
	}
	if (e->spec_type && !elfsym__find_spec_slot(path, e->spec_type, PY_TP_CALL, off)) {
		*how = elfsym_how__name(ELFSYM_SPEC_SLOT);
		return 0;
	}
	return -ENOENT;
}

static struct probe_file *probes__find(struct probes *p, unsigned long long dev,
				       unsigned long long ino)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		struct probe_file *f = &p->files[i];

		if (f->dev == dev && f->ino == ino && !f->custom)
			return f;
	}
	return NULL;
}

/*
 * Every catalog entry found in one file: those whose glob names the file,
 * the way they are found there (debug files, type slots), and any other
 * whose function the file defines itself (node's bundled OpenSSL, a
 * statically linked zlib).
 */
static void probe_file__resolve(struct probes *p, struct probe_file *f, const char *path,
				const char *base)
{
	const char *names[CATALOG_MAX];
	uint64_t offs[CATALOG_MAX];
	bool found[CATALOG_MAX];
	size_t n = catalog_len < CATALOG_MAX ? catalog_len : CATALOG_MAX;

	for (size_t i = 0; i < n; i++)
		names[i] = catalog[i].symbol;
	if (elfsym__find_each(path, names, n, offs, found) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *how;

		if (!found[i] && !fnmatch(catalog[i].file_glob, base, 0))
			found[i] = !entry__locate(&catalog[i], path, &offs[i], &how);
		if (found[i])
			probe_file__add_site(f, (int)i, probes__id(p, catalog[i].label), offs[i]);
	}
}

static struct probe_proc *probe_file__proc(struct probe_file *f, __u32 pid, uint64_t start_time)
{
	for (size_t i = 0; i < f->nprocs; i++) {
		if (f->procs[i].pid == pid && f->procs[i].start_time == start_time)
			return &f->procs[i];
	}
	return NULL;
}

/*
 * One mapped file of a process: its functions found once per inode, its
 * probes attached once per process that maps it, then only marked as seen.
 */
static void probes__consider(struct probes *p, struct proc *proc, const struct proc_mapping *m)
{
	struct probe_file *f = probes__find(p, m->dev, m->inode);
	__u32 pid = (__u32)proc__pid(proc);
	uint64_t start_time = proc__start_time(proc);
	struct probe_proc *pp;
	char target[64];
	struct stat st;
	int fd;

	if (f) {
		f->seen_gen = p->gen;
		if (!f->nsites)
			return;
		pp = probe_file__proc(f, pid, start_time);
		if (pp) {
			pp->seen_gen = p->gen;
			return;
		}
	}
	/* the attacher is busy: the next rescan comes back to it */
	if (!attacher__room(p->attacher))
		return;
	/*
	 * The file as the target sees it, opened inside its root and checked
	 * to be the very inode it maps; then read and probed through our fd,
	 * so nothing in its tree can redirect us.
	 */
	fd = proc__open_mapping(proc, m, &st);
	if (fd < 0)
		return;
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	if (!f) {
		f = probes__add_file(p, m->dev, m->inode);
		if (f)
			probe_file__resolve(p, f, target, proc_mapping__basename(m));
	}
	if (f && f->nsites)
		probe_file__attach(p, f, pid, start_time, fd);
	else
		close(fd);
}

void probes__scan(struct probes *p, struct proc *proc)
{
	const struct proc_maps *maps;

	if (!p || !p->builtin || !proc)
		return;
	probes__collect(p);
	maps = proc__maps(proc, false);
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];

		if (m->exec && m->inode && m->type == PROC_MAP_FILE)
			probes__consider(p, proc, m);
	}
}

void probes__begin_scan(struct probes *p)
{
	if (p)
		p->gen++;
}

void probes__end_scan(struct probes *p)
{
	if (!p || !p->builtin)
		return;
	for (size_t i = 0; i < p->nfiles; i++) {
		struct probe_file *f = &p->files[i];

		if (f->custom)
			continue;
		/* a process gone, or no longer mapping it: its probes go */
		for (size_t k = 0; k < f->nprocs; k++) {
			if (p->gen - f->procs[k].seen_gen < PROBE_GRACE_SCANS)
				continue;
			probe_proc__detach(p, &f->procs[k]);
			f->procs[k--] = f->procs[--f->nprocs];
		}
		/* no traced process maps it any more: what was found in it goes too */
		if (p->gen - f->seen_gen < PROBE_GRACE_SCANS)
			continue;
		probe_file__release(p, f);
		p->files[i--] = p->files[--p->nfiles];
	}
}

/* A library by name: the catalogue's directories, then the name as a path. */
static int library__find(const char *name, char *out, size_t len)
{
	if (strchr(name, '/')) {
		if (!realpath(name, out))
			return -errno;
		return 0;
	}
	for (int i = 0; catalog_dirs[i]; i++) {
		char pattern[2 * PATH_MAX + 2];
		glob_t g;

		snprintf(pattern, sizeof(pattern), "%s/%s*", catalog_dirs[i], name);
		if (glob(pattern, 0, NULL, &g))
			continue;
		snprintf(out, len, "%s", g.gl_pathv[0]);
		globfree(&g);
		return 0;
	}
	return -ENOENT;
}

/* A --probe's file, in every process, at start: on the main loop, before it runs. */
static int probe_file__attach_now(struct probes *p, struct probe_file *f, const char *path)
{
	struct probe_proc *pp;
	uint64_t offs[1];
	__u32 cookies[1];
	int err = 0;

	if (f->nsites != 1)
		return -EINVAL;
	offs[0] = f->sites[0].off;
	cookies[0] = f->sites[0].id;
	pp = probe_file__new_proc(f, 0, 0, p->gen);
	if (!pp)
		return -ENOMEM;
	pp->links = uprobe_links__attach(&p->progs, -1, path, offs, cookies, 1, p->max_fds, &err);
	pp->uprobes = 2 * uprobe_links__functions(pp->links);
	pp->fds = uprobe_links__fds(pp->links);
	p->nuprobes += pp->uprobes;
	p->nfds += pp->fds;
	return pp->links ? 0 : err;
}

/* PATH_OR_LIB:SYMBOL[=label] */
static int probes__add_custom(struct probes *p, const char *spec, char *err, size_t errlen)
{
	char buf[PATH_MAX], file[PATH_MAX], *colon, *eq, *symbol, *label;
	struct probe_file *f;
	enum elfsym_how how;
	uint64_t off;
	struct stat st;
	int ret;

	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strrchr(buf, ':');
	if (!colon || colon == buf || !colon[1]) {
		snprintf(err, errlen, "invalid --probe '%s': want PATH_OR_LIB:SYMBOL[=label]", spec);
		return -EINVAL;
	}
	*colon = '\0';
	symbol = colon + 1;
	eq = strchr(symbol, '=');
	if (eq)
		*eq = '\0';
	label = eq && eq[1] ? eq + 1 : symbol;
	ret = library__find(buf, file, sizeof(file));
	if (ret || stat(file, &st)) {
		snprintf(err, errlen, "--probe '%s': no such file or library '%s'", spec, buf);
		return -ENOENT;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "--probe '%s': '%s' is not a regular file", spec, file);
		return -EINVAL;
	}
	ret = elfsym__find(file, symbol, &off, &how);
	if (ret) {
		snprintf(err, errlen, "--probe '%s': symbol '%s' not found in %s", spec, symbol,
			 file);
		return ret;
	}
	f = probes__add_file(p, st.st_dev, st.st_ino);
	if (!f)
		return -ENOMEM;
	f->custom = true;
	ret = probe_file__add_site(f, -1, probes__id(p, label), off);
	if (!ret)
		ret = probe_file__attach_now(p, f, file);
	if (ret)
		snprintf(err, errlen, "--probe '%s': cannot attach: %s", spec, strerror(-ret));
	return ret;
}

struct probes *probes__new(struct collector *c, bool builtin, const char *const *custom,
			   int ncustom, char *err, size_t errlen)
{
	struct probes *p = calloc(1, sizeof(*p));
	struct rlimit rl;

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->c = c;
	p->builtin = builtin;
	p->reaper = reaper__new();
	collector__uprobe_progs(c, &p->progs);
	p->attacher = attacher__new(&p->progs);
	if (!p->attacher) {
		snprintf(err, errlen, "out of memory");
		probes__free(p);
		return NULL;
	}
	p->max_uprobes = PROBE_MAX_UPROBES;
	/* a link is an fd: half of what we may open stays for everything else */
	p->max_fds = PROBE_MAX_FDS;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < p->max_fds)
		p->max_fds = rl.rlim_cur / 2;
	for (int i = 0; i < ncustom; i++) {
		if (probes__add_custom(p, custom[i], err, errlen)) {
			probes__free(p);
			return NULL;
		}
	}
	return p;
}

void probes__free(struct probes *p)
{
	if (!p)
		return;
	/* the attacher's last job done: its links are ours, then the reaper's */
	attacher__stop(p->attacher);
	if (p->attacher)
		probes__collect(p);
	attacher__free(p->attacher);
	for (size_t i = 0; i < p->nfiles; i++)
		probe_file__release(p, &p->files[i]);
	reaper__free(p->reaper);
	free(p->files);
	free(p);
}

int probes__attached(const struct probes *p)
{
	int n = 0;

	for (size_t i = 0; p && i < p->nfiles; i++) {
		for (size_t k = 0; k < p->files[i].nprocs; k++)
			n += (int)uprobe_links__functions(p->files[i].procs[k].links);
	}
	return n;
}

/* A file --list-probes looks at: once, whatever names lead to it. */
struct listed_file {
	dev_t dev;
	ino_t ino;
	char path[PATH_MAX];	/* its real path */
	bool found[CATALOG_MAX];	/* catalog symbols it defines itself */
	uint64_t offs[CATALOG_MAX];
};

struct listing {
	struct listed_file *v;
	size_t n, cap;
};

/* The file at path, added once per device and inode (/lib is /usr/lib, symlinked names). */
static struct listed_file *listing__add(struct listing *l, const char *path)
{
	const char *names[CATALOG_MAX];
	struct listed_file *f;
	struct stat st;
	char real[PATH_MAX];
	size_t n = catalog_len < CATALOG_MAX ? catalog_len : CATALOG_MAX;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || !realpath(path, real))
		return NULL;
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].dev == st.st_dev && l->v[i].ino == st.st_ino)
			return &l->v[i];
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct listed_file *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	f = &l->v[l->n++];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	snprintf(f->path, sizeof(f->path), "%s", real);
	for (size_t i = 0; i < n; i++)
		names[i] = catalog[i].symbol;
	elfsym__find_each(f->path, names, n, f->offs, f->found);
	return f;
}

/* Every file on this machine an entry's glob names: its directories, and pyenv's. */
static void listing__glob(struct listing *l, const struct catalog_entry *e)
{
	static const char *const extra[] = {
		"/root/.pyenv/versions/*/lib/python3.*/lib-dynload",
		"/root/.pyenv/versions/*/lib",
		NULL,
	};

	for (int pass = 0; pass < 2; pass++) {
		const char *const *dirs = pass ? extra : catalog_dirs;

		for (int d = 0; dirs[d]; d++) {
			char pattern[PATH_MAX + 64];
			glob_t g;

			snprintf(pattern, sizeof(pattern), "%s/%s", dirs[d], e->file_glob);
			if (glob(pattern, 0, NULL, &g))
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++)
				listing__add(l, g.gl_pathv[i]);
			globfree(&g);
		}
	}
}

/* Where entry i can be attached: the files its glob names, and any other that defines it. */
static void entry__list(FILE *out, const struct listing *l, size_t i)
{
	const struct catalog_entry *e = &catalog[i];
	int shown = 0;

	for (size_t k = 0; k < l->n; k++) {
		const struct listed_file *f = &l->v[k];
		const char *base = strrchr(f->path, '/'), *how = "symbol";
		uint64_t off = f->offs[i];
		bool named = !fnmatch(e->file_glob, base ? base + 1 : f->path, 0);

		if (!named && !f->found[i])
			continue;
		if (named && entry__locate(e, f->path, &off, &how)) {
			fprintf(out, "  %-22s %-10s unavailable: %s not in %s\n", e->label,
				e->runtime, e->symbol, f->path);
		} else {
			fprintf(out, "  %-22s %-10s %s+%#llx (%s)\n", e->label, e->runtime, f->path,
				(unsigned long long)off, named ? how : "defined there too");
		}
		shown++;
	}
	if (!shown)
		fprintf(out, "  %-22s %-10s unavailable: no %s on this machine\n", e->label,
			e->runtime, e->file_glob);
}

void probes__list(FILE *out)
{
	struct listing l = { 0 };
	size_t n = catalog_len < CATALOG_MAX ? catalog_len : CATALOG_MAX;

	for (size_t i = 0; i < n; i++)
		listing__glob(&l, &catalog[i]);
	fprintf(out, "Built-in probes (attached in each traced process that maps the file, in "
		"that process alone; an entry also attaches in any mapped file that defines its "
		"function):\n");
	for (size_t i = 0; i < n; i++)
		entry__list(out, &l, i);
	free(l.v);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "proc/procs.h"
#include "tracker/catalog.h"
#include "tracker/elfsym.h"
#include "tracker/probes.h"

#define LABEL_LEN 64
#define PY_TP_CALL 50		/* CPython's Py_tp_call slot id (Include/typeslots.h) */
/* rescans a file may go unseen before its probes are released */
#define PROBE_GRACE_SCANS 2

struct probe_file {
	unsigned long long dev;
	unsigned long long ino;
	int entry;		/* catalog index; -1 for a custom probe */
	__u32 id;
	bool resolved;		/* false: nothing to attach (symbol absent): don't retry */
	unsigned int seen_gen;
	struct bpf_link *entry_link;
	struct bpf_link *ret_link;
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

static struct probe_file *probes__add_file(struct probes *p)
{
	if (p->nfiles == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		struct probe_file *v = realloc(p->files, cap * sizeof(*v));

		if (!v)
			return NULL;
		p->files = v;
		p->cap = cap;
	}
	memset(&p->files[p->nfiles], 0, sizeof(p->files[0]));
	return &p->files[p->nfiles++];
}

static int probe_file__attach(struct probes *p, struct probe_file *f, const char *path,
			      uint64_t off)
{
	f->entry_link = collector__attach_probe(p->c, path, off, f->id, false);
	if (!f->entry_link)
		return -errno;
	f->ret_link = collector__attach_probe(p->c, path, off, f->id, true);
	if (!f->ret_link) {
		int err = -errno;

		bpf_link__destroy(f->entry_link);
		f->entry_link = NULL;
		return err;
	}
	return 0;
}

static void probe_file__detach(struct probe_file *f)
{
	bpf_link__destroy(f->entry_link);
	bpf_link__destroy(f->ret_link);
	f->entry_link = f->ret_link = NULL;
}

/* Where a catalog entry's function is in path, and how that was found. */
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
				       unsigned long long ino, int entry)
{
	for (size_t i = 0; i < p->nfiles; i++) {
		struct probe_file *f = &p->files[i];

		if (f->dev == dev && f->ino == ino && f->entry == entry)
			return f;
	}
	return NULL;
}

/* One mapped file of p: attach every catalog entry it matches, once per inode. */
static void probes__consider(struct probes *p, struct proc *proc, const struct proc_mapping *m)
{
	const char *base = proc_mapping__basename(m);
	char target[64];
	struct stat st;
	int fd = -1;

	for (size_t i = 0; i < catalog_len; i++) {
		const struct catalog_entry *e = &catalog[i];
		struct probe_file *f;
		const char *how;
		uint64_t off;

		if (fnmatch(e->file_glob, base, 0))
			continue;
		f = probes__find(p, m->dev, m->inode, (int)i);
		if (f) {
			f->seen_gen = p->gen;
			continue;
		}
		/*
		 * The file as the target sees it, opened inside its root and
		 * checked to be the very inode it maps; then read and probed
		 * through our fd, so nothing in its tree can redirect us.
		 */
		if (fd < 0) {
			fd = proc__open_mapping(proc, m, &st);
			if (fd < 0)
				break;
			snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
		}
		f = probes__add_file(p);
		if (!f)
			break;
		f->dev = m->dev;
		f->ino = m->inode;
		f->entry = (int)i;
		f->id = probes__id(p, e->label);
		f->seen_gen = p->gen;
		f->resolved = !entry__locate(e, target, &off, &how);
		if (f->resolved && probe_file__attach(p, f, target, off))
			f->resolved = false;
	}
	if (fd >= 0)
		close(fd);
}

void probes__scan(struct probes *p, struct proc *proc)
{
	const struct proc_maps *maps;

	if (!p || !p->builtin || !proc)
		return;
	maps = proc__maps(proc, false);
	for (size_t i = 0; maps && i < maps->n; i++) {
		const struct proc_mapping *m = &maps->v[i];

		if (m->exec && m->inode && m->type == PROC_MAP_FILE && !m->deleted)
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
	/* no loop process maps it any more: release its probes */
	for (size_t i = 0; i < p->nfiles; i++) {
		struct probe_file *f = &p->files[i];

		if (f->entry < 0 || p->gen - f->seen_gen < PROBE_GRACE_SCANS)
			continue;
		probe_file__detach(f);
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
	ret = elfsym__find(file, symbol, &off, &how);
	if (ret) {
		snprintf(err, errlen, "--probe '%s': symbol '%s' not found in %s", spec, symbol,
			 file);
		return ret;
	}
	f = probes__add_file(p);
	if (!f)
		return -ENOMEM;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->entry = -1;
	f->id = probes__id(p, label);
	f->resolved = true;
	ret = probe_file__attach(p, f, file, off);
	if (ret)
		snprintf(err, errlen, "--probe '%s': cannot attach: %s", spec, strerror(-ret));
	return ret;
}

struct probes *probes__new(struct collector *c, bool builtin, const char *const *custom,
			   int ncustom, char *err, size_t errlen)
{
	struct probes *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->c = c;
	p->builtin = builtin;
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
	for (size_t i = 0; i < p->nfiles; i++)
		probe_file__detach(&p->files[i]);
	free(p->files);
	free(p);
}

int probes__attached(const struct probes *p)
{
	int n = 0;

	for (size_t i = 0; p && i < p->nfiles; i++)
		n += p->files[i].entry_link != NULL;
	return n;
}

/* Every file on this machine an entry could match: its directories, and pyenv's. */
static void entry__list(FILE *out, const struct catalog_entry *e)
{
	static const char *const extra[] = {
		"/root/.pyenv/versions/*/lib/python3.*/lib-dynload",
		"/root/.pyenv/versions/*/lib",
		NULL,
	};
	int found = 0;

	for (int pass = 0; pass < 2; pass++) {
		const char *const *dirs = pass ? extra : catalog_dirs;

		for (int d = 0; dirs[d]; d++) {
			char pattern[PATH_MAX + 64];
			glob_t g;

			snprintf(pattern, sizeof(pattern), "%s/%s", dirs[d], e->file_glob);
			if (glob(pattern, 0, NULL, &g))
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++) {
				const char *how;
				uint64_t off;

				if (entry__locate(e, g.gl_pathv[i], &off, &how))
					fprintf(out, "  %-22s %-10s unavailable: %s not in %s\n",
						e->label, e->runtime, e->symbol, g.gl_pathv[i]);
				else
					fprintf(out, "  %-22s %-10s %s+%#llx (%s)\n", e->label,
						e->runtime, g.gl_pathv[i], (unsigned long long)off,
						how);
				found++;
			}
			globfree(&g);
		}
	}
	if (!found)
		fprintf(out, "  %-22s %-10s unavailable: no %s on this machine\n", e->label,
			e->runtime, e->file_glob);
}

void probes__list(FILE *out)
{
	fprintf(out, "Built-in probes (attached to every loop process that maps the file):\n");
	for (size_t i = 0; i < catalog_len; i++)
		entry__list(out, &catalog[i]);
}

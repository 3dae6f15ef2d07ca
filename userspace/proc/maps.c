// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include "proc/maps.h"

static unsigned int maps_gen;

/* One line; false for lines to skip. The path points into line, which it may cut. */
static bool mapping__parse(char *line, struct proc_mapping *m)
{
	static const char deleted[] = " (deleted)";
	size_t len, dlen = sizeof(deleted) - 1;
	unsigned int maj, min;
	char perms[8], *path;
	int pos = -1;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
		   &m->start, &m->end, perms, &m->offset, &maj, &min, &m->inode, &pos) < 7)
		return false;
	if (m->start >= m->end || strlen(perms) != 4)
		return false;
	m->exec = perms[2] == 'x';
	m->write = perms[1] == 'w';
	m->dev = makedev(maj, min);
	/* %n is skipped when the line ends right after the inode (anonymous) */
	path = pos >= 0 ? line + pos : line + strlen(line);
	len = strlen(path);
	while (len && (path[len - 1] == ' ' || path[len - 1] == '\t'))
		path[--len] = '\0';
	if (len > dlen && !strcmp(path + len - dlen, deleted)) {
		m->deleted = true;
		len -= dlen;
		path[len] = '\0';
	}
	if (!len) {
		m->type = PROC_MAP_ANON;
		return true;
	}
	m->type = path[0] == '/' ? PROC_MAP_FILE : PROC_MAP_PSEUDO;
	m->path = path;
	return true;
}

static int mapping__cmp(const void *a, const void *b)
{
	const struct proc_mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

struct proc_maps *proc_maps__parse(char *text, size_t len)
{
	struct proc_maps *maps = calloc(1, sizeof(*maps));
	struct proc_mapping m, *tmp;
	char *line, *nl;
	size_t cap = 0;

	if (!maps) {
		free(text);
		return NULL;
	}
	maps->text = text;
	maps->refs = 1;
	maps->gen = ++maps_gen;
	for (line = text; (nl = memchr(line, '\n', (size_t)(text + len - line))); line = nl + 1) {
		*nl = '\0';
		if (!mapping__parse(line, &m))
			continue;
		if (maps->n == cap) {
			cap = cap ? cap * 2 : 64;
			tmp = realloc(maps->v, cap * sizeof(*tmp));
			if (!tmp)
				break;
			maps->v = tmp;
		}
		maps->v[maps->n++] = m;
	}
	/* the kernel emits them sorted; a hostile or odd source need not */
	if (maps->n)
		qsort(maps->v, maps->n, sizeof(*maps->v), mapping__cmp);
	return maps;
}

void proc_maps__get(struct proc_maps *m)
{
	if (m)
		m->refs++;
}

void proc_maps__put(struct proc_maps *m)
{
	if (!m || --m->refs)
		return;
	free(m->v);
	free(m->text);
	free(m);
}

const struct proc_mapping *proc_maps__find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo = 0, hi = m ? m->n : 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < m->v[lo - 1].end)
		return &m->v[lo - 1];
	return NULL;
}

bool proc_mapping__same(const struct proc_mapping *a, const struct proc_mapping *b)
{
	if (a->start != b->start || a->end != b->end || a->offset != b->offset ||
	    a->inode != b->inode || a->type != b->type || a->deleted != b->deleted ||
	    a->exec != b->exec)
		return false;
	if (!a->path || !b->path)
		return a->path == b->path;
	return !strcmp(a->path, b->path);
}

const char *proc_mapping__basename(const struct proc_mapping *m)
{
	const char *slash;

	if (!m->path)
		return "";
	slash = strrchr(m->path, '/');
	return slash ? slash + 1 : m->path;
}

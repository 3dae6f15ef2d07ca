// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/text.h"
#include "proc/procs.h"
#include "symbols/perfmap.h"

/*
 * Bounds: a long-running Node server's map only grows, and any process may
 * write one of millions of lines. Entries and names a map and for all maps
 * together; what is read is a step per refresh, and at most so many bytes and
 * so much CPU a second for all maps together, so that no drain waits on a map:
 * the rest comes later. A map over its bounds is read no further and says so in its frames.
 */
#define PERF_MAP_MAX_ENTRIES (1u << 20)
#define PERF_MAP_MAX_NAMES (64u << 20)
#define PERF_MAPS_MAX_ENTRIES (2u << 20)
#define PERF_MAPS_MAX_NAMES (128u << 20)
#define PERF_MAP_MAX_READ (1u << 20)	/* per refresh */
#define PERF_MAPS_MAX_READ_PER_S (16u << 20)
#define PERF_MAPS_MAX_CPU_NS_PER_S 200000000ull	/* reading and sorting them */
#define PERF_MAP_MAX_NAME 1024
#define PERF_MAP_OVER "[perf map over budget]"
#define PERF_MAP_REFUSED "[perf map refused: not the process's own]"
/* lookups look back this far for an older, larger entry that covers the address */
#define PERF_MAP_LOOK_BACK 16

struct pm_entry {
	uint64_t start;
	uint32_t size;
	uint32_t name;		/* offset into names */
	uint32_t seq;		/* line number: a later line for the same code wins */
};

struct perf_map {
	struct pm_entry *v;
	size_t n, cap;
	size_t sorted;		/* v[0, sorted) is in order */
	char *names;
	size_t names_len, names_cap;
	uint32_t seq;
	size_t dropped;
	bool over;		/* a line went past the bounds: read no further */
	bool refused;		/* not the process's own file (proc__open_perf_map) */
	/* the file read so far */
	dev_t dev;
	ino_t ino;
	uint64_t consumed;
	uint64_t read_ns;
};

/* what all maps hold, and what they read in the current second */
static size_t maps_entries, maps_names;
static uint64_t read_window_ns, read_window_bytes, read_window_cpu_ns;
static bool said_over, said_refused;

struct perf_map *perf_map__new(void)
{
	return calloc(1, sizeof(struct perf_map));
}

static void perf_map__reset(struct perf_map *pm)
{
	maps_entries -= pm->n;
	maps_names -= pm->names_len;
	pm->n = pm->sorted = pm->names_len = pm->dropped = 0;
	pm->consumed = 0;
	pm->over = false;
}

void perf_map__free(struct perf_map *pm)
{
	if (!pm)
		return;
	perf_map__reset(pm);
	free(pm->v);
	free(pm->names);
	free(pm);
}

/* One hex field ("7f0a12" or "0x7f0a12") ending in a space: false if not. */
static bool hex__field(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end && *s != ' '; s++, digits++) {
		int d = (*s >= '0' && *s <= '9') ? *s - '0' :
			(*s >= 'a' && *s <= 'f') ? *s - 'a' + 10 :
			(*s >= 'A' && *s <= 'F') ? *s - 'A' + 10 : -1;

		if (d < 0 || digits >= 16)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits || s >= end)
		return false;
	*p = s + 1;
	*out = v;
	return true;
}

static bool perf_map__add(struct perf_map *pm, uint64_t start, uint64_t size, const char *name,
			  size_t len)
{
	struct pm_entry *e;

	if (pm->n >= PERF_MAP_MAX_ENTRIES || pm->names_len + len + 1 > PERF_MAP_MAX_NAMES ||
	    maps_entries >= PERF_MAPS_MAX_ENTRIES || maps_names + len + 1 > PERF_MAPS_MAX_NAMES) {
		if (!said_over)
			fprintf(stderr, "loopwatch: a perf map went over its budget (%u entries "
				"and %u MiB of names a map, %u and %u MiB for all): it is read no "
				"further, JIT frames it does not name show %s; said once\n",
				PERF_MAP_MAX_ENTRIES, PERF_MAP_MAX_NAMES >> 20, PERF_MAPS_MAX_ENTRIES,
				PERF_MAPS_MAX_NAMES >> 20, PERF_MAP_OVER);
		said_over = true;
		pm->over = true;
		return false;
	}
	if (pm->n == pm->cap) {
		size_t cap = pm->cap ? pm->cap * 2 : 1024;
		struct pm_entry *v = realloc(pm->v, cap * sizeof(*v));

		if (!v)
			return false;
		pm->v = v;
		pm->cap = cap;
	}
	if (pm->names_len + len + 1 > pm->names_cap) {
		size_t cap = pm->names_cap ? pm->names_cap : 65536;
		char *names;

		while (cap < pm->names_len + len + 1)
			cap *= 2;
		names = realloc(pm->names, cap);
		if (!names)
			return false;
		pm->names = names;
		pm->names_cap = cap;
	}
	e = &pm->v[pm->n++];
	e->start = start;
	e->size = (uint32_t)size;
	e->name = (uint32_t)pm->names_len;
	e->seq = pm->seq++;
	memcpy(pm->names + pm->names_len, name, len);
	pm->names[pm->names_len + len] = '\0';
	pm->names_len += len + 1;
	maps_entries++;
	maps_names += len + 1;
	return true;
}

/* "START SIZE NAME": false for anything else. */
static bool line__parse(struct perf_map *pm, const char *s, const char *end)
{
	uint64_t start, size;
	const char *nul;

	if (!hex__field(&s, end, &start) || !hex__field(&s, end, &size))
		return false;
	if (!size || size > UINT32_MAX || start + size < start || s >= end ||
	    end - s > PERF_MAP_MAX_NAME)
		return false;
	nul = memchr(s, '\0', (size_t)(end - s));
	if (nul)
		return false;
	return perf_map__add(pm, start, size, s, (size_t)(end - s));
}

static int entry__cmp(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The new entries sorted, then merged with the sorted ones: a step costs what it adds. */
static void perf_map__sort(struct perf_map *pm)
{
	struct pm_entry *merged;
	size_t i = 0, j = pm->sorted, k = 0;

	if (pm->sorted == pm->n)
		return;
	qsort(pm->v + pm->sorted, pm->n - pm->sorted, sizeof(*pm->v), entry__cmp);
	merged = pm->sorted ? malloc(pm->cap * sizeof(*merged)) : NULL;
	if (!merged) {
		if (pm->sorted)
			qsort(pm->v, pm->n, sizeof(*pm->v), entry__cmp);
		pm->sorted = pm->n;
		return;
	}
	while (i < pm->sorted || j < pm->n) {
		if (j >= pm->n || (i < pm->sorted && entry__cmp(&pm->v[i], &pm->v[j]) <= 0))
			merged[k++] = pm->v[i++];
		else
			merged[k++] = pm->v[j++];
	}
	free(pm->v);
	pm->v = merged;
	pm->sorted = pm->n;
}

size_t perf_map__parse(struct perf_map *pm, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *nl;

	while (p < end && !pm->over && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		const char *e = nl;

		if (e > p && e[-1] == '\r')
			e--;
		if (e > p && !line__parse(pm, p, e))
			pm->dropped++;
		p = nl + 1;
	}
	perf_map__sort(pm);
	return (size_t)(p - text);
}

void perf_map__refresh(struct perf_map *pm, struct proc *p)
{
	uint64_t want, cpu0;
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd;

	pm->read_ns = clock__mono_ns();
	fd = proc__open_perf_map(p, &st);
	pm->refused = fd == -EACCES;
	if (pm->refused && !said_refused) {
		fprintf(stderr, "loopwatch: a perf map is a symlink or not its process's own "
			"file: not read, its JIT frames show %s; said once\n", PERF_MAP_REFUSED);
		said_refused = true;
	}
	if (fd < 0)
		return;
	/* a new file (the process restarted its JIT, or the pid is another's), or cut short */
	if (st.st_dev != pm->dev || st.st_ino != pm->ino || (uint64_t)st.st_size < pm->consumed) {
		perf_map__reset(pm);
		pm->dev = st.st_dev;
		pm->ino = st.st_ino;
	}
	if (pm->over) {
		close(fd);
		return;
	}
	/* this second's share for all maps: a step of what is left */
	if (pm->read_ns - read_window_ns >= 1000000000ull) {
		read_window_ns = pm->read_ns;
		read_window_bytes = 0;
		read_window_cpu_ns = 0;
	}
	if (read_window_cpu_ns >= PERF_MAPS_MAX_CPU_NS_PER_S) {
		close(fd);
		return;
	}
	cpu0 = clock__thread_cpu_ns();
	want = (uint64_t)st.st_size - pm->consumed;
	if (want > PERF_MAP_MAX_READ)
		want = PERF_MAP_MAX_READ;
	if (want > PERF_MAPS_MAX_READ_PER_S - read_window_bytes)
		want = PERF_MAPS_MAX_READ_PER_S - read_window_bytes;
	read_window_bytes += want;
	buf = want ? malloc(want) : NULL;
	while (buf && got < want) {
		ssize_t r = pread(fd, buf + got, want - got, (off_t)(pm->consumed + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;	/* the file went away or shrank meanwhile: what was read stands */
		got += (size_t)r;
	}
	close(fd);
	if (got) {
		size_t used = perf_map__parse(pm, buf, got);

		/* a chunk without a line end is no line anybody finishes: skip it */
		if (!used && got == PERF_MAP_MAX_READ)
			used = got;
		pm->consumed += used;
	}
	free(buf);
	read_window_cpu_ns += clock__thread_cpu_ns() - cpu0;
}

uint64_t perf_map__read_ns(const struct perf_map *pm)
{
	return pm->read_ns;
}

size_t perf_map__entries(const struct perf_map *pm, size_t *dropped)
{
	if (dropped)
		*dropped = pm->dropped;
	return pm->n;
}

static const struct pm_entry *perf_map__find(const struct perf_map *pm, uint64_t addr)
{
	const struct pm_entry *best = NULL;
	size_t lo = 0, hi = pm->sorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the newest entry that covers addr, among the few that start before it */
	for (size_t i = lo, k = 0; i > 0 && k < PERF_MAP_LOOK_BACK; i--, k++) {
		const struct pm_entry *e = &pm->v[i - 1];

		if (addr - e->start < e->size && (!best || e->seq > best->seq))
			best = e;
	}
	return best;
}

/* A decimal number ending at end (exclusive): its start, or NULL. */
static const char *number__before(const char *s, const char *end, int *out)
{
	const char *p = end;
	long v = 0, scale = 1;

	while (p > s && p[-1] >= '0' && p[-1] <= '9' && end - p < 9) {
		p--;
		v += (p[0] - '0') * scale;
		scale *= 10;
	}
	if (p == end || (p > s && p[-1] >= '0' && p[-1] <= '9'))
		return NULL;
	*out = (int)v;
	return p;
}

static void copy__n(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	str__sanitize(dst);
}

/*
 * V8's "JS:*login /app/api.js:12:15" (also LazyCompile:, Function:, Eval:,
 * Script: in older Nodes; the character after the colon is the tier): the
 * name, then the location. False when name is not of that form.
 */
static bool name__v8(const char *name, struct frame *f)
{
	static const char *const kinds[] = { "JS:", "LazyCompile:", "Function:", "Eval:",
					     "Script:" };
	const char *s = NULL, *end = name + strlen(name), *sp, *p;
	int line, col;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !s; i++) {
		if (!strncmp(name, kinds[i], strlen(kinds[i])))
			s = name + strlen(kinds[i]);
	}
	if (!s)
		return false;
	if (*s && strchr("~^+*", *s))
		s++;
	sp = memrchr(s, ' ', (size_t)(end - s));
	if (!sp)
		sp = s - 1;	/* no name: the location alone */
	p = number__before(sp + 1, end, &col);
	if (!p || p == sp + 1 || p[-1] != ':')
		return false;
	p = number__before(sp + 1, p - 1, &line);
	if (!p || p == sp + 1 || p[-1] != ':')
		return false;
	if (sp >= s && sp > s)
		copy__n(f->func, sizeof(f->func), s, (size_t)(sp - s));
	else
		copy__n(f->func, sizeof(f->func), "(anonymous)", 11);
	copy__n(f->file, sizeof(f->file), sp + 1, (size_t)(p - 1 - (sp + 1)));
	f->line = line;
	f->column = col;
	return true;
}

/* Python's -X perf trampolines: "py::qualname:/path/file.py". */
static bool name__python(const char *name, struct frame *f)
{
	const char *s = name + 4, *colon;

	if (strncmp(name, "py::", 4) || !(colon = strchr(s, ':')) || colon == s)
		return false;
	copy__n(f->func, sizeof(f->func), s, (size_t)(colon - s));
	copy__n(f->file, sizeof(f->file), colon + 1, strlen(colon + 1));
	return true;
}

bool perf_map__frame(const struct perf_map *pm, uint64_t addr, struct frame *f)
{
	const struct pm_entry *e = perf_map__find(pm, addr);
	const char *name;

	if (!e && (pm->over || pm->refused)) {
		const char *why = pm->refused ? PERF_MAP_REFUSED : PERF_MAP_OVER;

		f->kind = FRAME_JIT;
		copy__n(f->module, sizeof(f->module), "[perf-map]", 10);
		copy__n(f->func, sizeof(f->func), why, strlen(why));
		return true;
	}
	if (!e)
		return false;
	name = pm->names + e->name;
	f->kind = FRAME_JIT;
	f->offset = addr - e->start;
	copy__n(f->module, sizeof(f->module), "[perf-map]", 10);
	if (!name__v8(name, f) && !name__python(name, f))
		copy__n(f->func, sizeof(f->func), name, strlen(name));
	return true;
}

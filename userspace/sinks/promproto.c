// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Prometheus's protobuf exposition (io.prometheus.client.MetricFamily,
 * varint-delimited) made from the registry's text, as OpenMetrics is: one
 * renderer of the families, two encodings of it. What protobuf adds is the
 * native histogram: the iteration histogram's series carry their
 * exponential buckets (prom_registry__native) beside the classic ones.
 *
 * The text is the registry's own, parsed strictly all the same: a line
 * that does not parse is skipped, never guessed at.
 */
#include <stdlib.h>
#include <string.h>
#include "lib/hist.h"
#include "lib/pbuf.h"
#include "lib/text.h"
#include "sinks/promproto.h"

#define NATIVE_FAMILY "loopwatch_loop_iteration_seconds"
#define LINE_MAX_LABELS 32

enum metric_type { T_COUNTER = 0, T_GAUGE = 1, T_UNTYPED = 3, T_HISTOGRAM = 4 };

struct family {
	char name[256];
	char help[1024];
	enum metric_type type;
	size_t mark;		/* where its delimited message started; 0 before the first */
	bool open;
};

/* one histogram series while its lines come: buckets, then _sum, then _count */
struct hseries {
	char key[2048];		/* its labels as rendered, le left out */
	bool open;
	size_t metric;		/* the Metric's mark */
	size_t hist;		/* the Histogram's mark */
	double sum;
	const char *count;	/* the _count value as text (an integer, or seconds) */
	char count_buf[64];
};

struct sample {
	char name[256];
	const char *labels;	/* inside the braces, as rendered; "" when none */
	size_t labels_len;
	const char *value;
};

/* "# HELP name text": text unescaped (\\ and \n) */
static void help__parse(struct family *f, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < sizeof(f->help); s++) {
		if (*s == '\\' && (s[1] == '\\' || s[1] == 'n')) {
			f->help[n++] = s[1] == 'n' ? '\n' : '\\';
			s++;
		} else {
			f->help[n++] = *s;
		}
	}
	f->help[n] = '\0';
}

/* name{labels} value, or name value; false if it is not one */
static bool sample__parse(char *line, struct sample *out)
{
	size_t n = strcspn(line, "{ ");
	char *p;

	if (!n || n >= sizeof(out->name))
		return false;
	memcpy(out->name, line, n);
	out->name[n] = '\0';
	p = line + n;
	out->labels = "";
	out->labels_len = 0;
	if (*p == '{') {
		bool quoted = false;
		char *start = ++p;

		for (; *p && (quoted || *p != '}'); p++) {
			if (quoted && *p == '\\' && p[1])
				p++;
			else if (*p == '"')
				quoted = !quoted;
		}
		if (*p != '}')
			return false;
		out->labels = start;
		out->labels_len = (size_t)(p - start);
		p++;
	}
	if (*p != ' ')
		return false;
	out->value = p + 1;
	return true;
}

/* LabelPairs of name="value",... (escapes \\ \" \n undone) */
static void labels__put(struct pbuf *b, const char *s, size_t len)
{
	const char *end = s + len;
	char value[1024];

	while (s < end) {
		const char *eq = memchr(s, '=', (size_t)(end - s));
		size_t n = 0, pair;

		if (!eq || eq + 1 >= end || eq[1] != '"')
			return;
		pair = pbuf__begin(b, 1);
		pbuf__bytes(b, 1, s, (size_t)(eq - s));
		for (s = eq + 2; s < end && *s != '"'; s++) {
			char c = *s;

			if (c == '\\' && s + 1 < end) {
				c = *++s == 'n' ? '\n' : *s;
			}
			if (n + 1 < sizeof(value))
				value[n++] = c;
		}
		value[n] = '\0';
		pbuf__bytes(b, 2, value, utf8__valid_prefix(value));
		pbuf__end(b, pair);
		s++;		/* the closing quote */
		if (s < end && *s == ',')
			s++;
	}
}

static bool value__is_integer(const char *v)
{
	return v[0] && strspn(v, "0123456789") == strlen(v);
}

static void family__close(struct pbuf *b, struct family *f)
{
	if (f->open)
		pbuf__end(b, f->mark);
	f->open = false;
}

/*
 * The native buckets from the kernel's: each kernel bucket's count at its
 * own index (lib/hist.h), one span per run of adjacent indexes, counts as
 * deltas from the previous bucket's.
 */
static void native__put(struct pbuf *b, const __u64 *counts)
{
	int index, next = 0;
	bool any = false;
	__s64 prev = 0;
	size_t span = 0, len = 0, packed;
	struct pbuf deltas = { 0 };

	pbuf__sint(b, 5, HIST_EXP_SCALE);
	pbuf__double(b, 6, 0);
	pbuf__uint(b, 7, counts[0]);
	for (unsigned int k = 1; k < LW_HIST_BUCKETS; k++) {
		__s64 d;

		if (!counts[k] || !hist__exp_index(k, &index))
			continue;
		/* Prometheus's bucket i is OpenTelemetry's i - 1: (base^(i-1), base^i] */
		index++;
		if (!any || index != next) {
			if (any) {
				pbuf__uint(b, 2, len);
				pbuf__end(b, span);
			}
			span = pbuf__begin(b, 12);
			pbuf__sint(b, 1, any ? index - next : index);
			len = 0;
			any = true;
		}
		d = (__s64)counts[k] - prev;
		pbuf__varint(&deltas, ((__u64)d << 1) ^ (__u64)(d >> 63));
		prev = (__s64)counts[k];
		len++;
		next = index + 1;
	}
	if (any) {
		pbuf__uint(b, 2, len);
		pbuf__end(b, span);
	} else {
		/* no observation yet: an empty span says native all the same */
		span = pbuf__begin(b, 12);
		pbuf__sint(b, 1, 0);
		pbuf__uint(b, 2, 0);
		pbuf__end(b, span);
	}
	if (deltas.len) {
		packed = pbuf__begin(b, 13);
		pbuf__raw(b, deltas.buf, deltas.len);
		pbuf__end(b, packed);
	}
	b->oom |= deltas.oom;
	pbuf__free(&deltas);
}

static void hseries__close(struct pbuf *b, struct hseries *h, const struct family *f,
			   const struct prom_registry *reg)
{
	const __u64 *native = NULL;
	__u64 total = 0;

	if (!h->open)
		return;
	if (!strcmp(f->name, NATIVE_FAMILY) && reg)
		native = prom_registry__native(reg, h->key);
	if (native) {
		for (unsigned int k = 0; k < LW_HIST_BUCKETS; k++)
			total += native[k];
		/* count and sum are shared: the native buckets' own count, which must match */
		pbuf__uint(b, 1, total);
	} else if (h->count && value__is_integer(h->count)) {
		pbuf__uint(b, 1, strtoull(h->count, NULL, 10));
	} else if (h->count) {
		pbuf__double(b, 4, strtod(h->count, NULL));
	}
	pbuf__double(b, 2, h->sum);
	if (native)
		native__put(b, native);
	pbuf__end(b, h->hist);
	pbuf__end(b, h->metric);
	h->open = false;
}

/* the series' key: its labels without the trailing le="..." */
static size_t key__of(const struct sample *s, bool bucket)
{
	size_t n = s->labels_len;

	if (bucket) {
		const char *le = NULL;

		for (const char *p = s->labels; p + 4 <= s->labels + n; p++)
			if (!strncmp(p, "le=\"", 4) && (p == s->labels || p[-1] == ','))
				le = p;
		if (le)
			n = (size_t)(le - s->labels) - (le > s->labels ? 1 : 0);
	}
	return n;
}

static void histogram__sample(struct pbuf *b, struct family *f, struct hseries *h,
			      const struct sample *s, const struct prom_registry *reg)
{
	size_t flen = strlen(f->name);
	const char *suffix = s->name + flen;
	bool bucket = !strcmp(suffix, "_bucket");
	size_t klen = key__of(s, bucket);

	if (strncmp(s->name, f->name, flen))
		return;
	if (h->open && (strlen(h->key) != klen || strncmp(h->key, s->labels, klen)))
		hseries__close(b, h, f, reg);
	if (!h->open) {
		if (klen >= sizeof(h->key))
			return;
		memcpy(h->key, s->labels, klen);
		h->key[klen] = '\0';
		h->open = true;
		h->sum = 0;
		h->count = NULL;
		h->metric = pbuf__begin(b, 4);
		labels__put(b, h->key, klen);
		h->hist = pbuf__begin(b, 7);
	}
	if (bucket) {
		const char *le = s->labels + klen + (klen ? 1 : 0) + 4;
		size_t bk;
		double upper = strtod(le, NULL);

		bk = pbuf__begin(b, 3);
		if (value__is_integer(s->value))
			pbuf__uint(b, 1, strtoull(s->value, NULL, 10));
		else
			pbuf__double(b, 4, strtod(s->value, NULL));
		pbuf__double(b, 2, upper);
		pbuf__end(b, bk);
	} else if (!strcmp(suffix, "_sum")) {
		h->sum = strtod(s->value, NULL);
	} else if (!strcmp(suffix, "_count")) {
		snprintf(h->count_buf, sizeof(h->count_buf), "%.*s", (int)strcspn(s->value, " "),
			 s->value);
		h->count = h->count_buf;
	}
}

static void scalar__sample(struct pbuf *b, const struct family *f, const struct sample *s)
{
	size_t metric, value;

	if (strcmp(s->name, f->name))
		return;
	metric = pbuf__begin(b, 4);
	labels__put(b, s->labels, s->labels_len);
	value = pbuf__begin(b, f->type == T_COUNTER ? 3 : f->type == T_GAUGE ? 2 : 5);
	pbuf__double(b, 1, strtod(s->value, NULL));
	pbuf__end(b, value);
	pbuf__end(b, metric);
}

static enum metric_type type__parse(const char *s)
{
	if (!strcmp(s, "counter"))
		return T_COUNTER;
	if (!strcmp(s, "gauge"))
		return T_GAUGE;
	if (!strcmp(s, "histogram"))
		return T_HISTOGRAM;
	return T_UNTYPED;
}

int prom_text__to_proto(const char *text, const struct prom_registry *reg, struct pbuf *b)
{
	struct family f;
	struct hseries h;
	const char *p = text;
	char *line = NULL;
	size_t cap = 0;

	memset(&f, 0, sizeof(f));
	memset(&h, 0, sizeof(h));
	while (*p) {
		size_t n = strcspn(p, "\n");
		struct sample s;

		if (n + 1 > cap) {
			char *nl = realloc(line, n + 1);

			if (!nl) {
				free(line);
				return -1;
			}
			line = nl;
			cap = n + 1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if (!strncmp(line, "# HELP ", 7)) {
			char *name = line + 7, *sp = strchr(name, ' ');

			hseries__close(b, &h, &f, reg);
			family__close(b, &f);
			if (!sp || (size_t)(sp - name) >= sizeof(f.name))
				continue;
			memcpy(f.name, name, (size_t)(sp - name));
			f.name[sp - name] = '\0';
			help__parse(&f, sp + 1);
		} else if (!strncmp(line, "# TYPE ", 7)) {
			char *name = line + 7, *sp = strchr(name, ' ');

			if (!sp || strncmp(name, f.name, (size_t)(sp - name)) ||
			    f.name[sp - name] != '\0')
				continue;
			f.type = type__parse(sp + 1);
			/* delimited: each family's length in front of it, no tag */
			f.mark = b->len;
			f.open = true;
			pbuf__string(b, 1, f.name);
			pbuf__string(b, 2, f.help);
			pbuf__uint(b, 3, f.type);
		} else if (line[0] != '#' && f.open && sample__parse(line, &s)) {
			if (f.type == T_HISTOGRAM)
				histogram__sample(b, &f, &h, &s, reg);
			else
				scalar__sample(b, &f, &s);
		}
	}
	hseries__close(b, &h, &f, reg);
	family__close(b, &f);
	free(line);
	return b->oom ? -1 : 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>
#include "symbols/demangle.h"

/*
 * Names come from the target's files. libiberty refuses names whose parse
 * would need more than its recursion limit of components (DMGL_NO_RECURSE_LIMIT
 * stays unset), which is about this length; real ones stay far below it
 * (node's longest is ~600 bytes).
 */
#define DEMANGLE_MAX_IN 1024
/*
 * What a name may print to, and so what printing it may cost: substitutions
 * and template parameters that refer to each other double the output with
 * every ~10 bytes of input (240 bytes print 142 MB). libiberty's callback
 * printer allocates only on the stack, so the budget is kept by jumping out of
 * it. Real names stay below a third of it (libLLVM-15's longest prints 8.4 KB,
 * node's 3.4 KB).
 */
#define DEMANGLE_MAX_OUT (32u << 10)
#define DEMANGLE_MARK " [demangle over budget]"

static unsigned long demangle_over_budget;

unsigned long demangle__over_budget(void)
{
	return __atomic_load_n(&demangle_over_budget, __ATOMIC_RELAXED);
}

struct printed {
	jmp_buf over;
	size_t used;
	char buf[DEMANGLE_MAX_OUT];
};

static void printed__add(const char *s, size_t n, void *opaque)
{
	struct printed *p = opaque;

	if (n >= sizeof(p->buf) - p->used)
		longjmp(p->over, 1);
	memcpy(p->buf + p->used, s, n);
	p->used += n;
}

/* 1: demangled into p->buf; 0: not a name libiberty knows; -1: over the budget */
static int printed__demangle(struct printed *p, const char *name)
{
	p->used = 0;
	if (setjmp(p->over))
		return -1;
	if (!cplus_demangle_v3_callback(name, DMGL_PARAMS | DMGL_TYPES, printed__add, p))
		return 0;
	p->buf[p->used] = '\0';
	return 1;
}

/* The index just past the group that opens at s[i] (balanced on its own bracket kind). */
static size_t group__end(const char *s, size_t i)
{
	char open = s[i], close = open == '(' ? ')' : open == '<' ? '>' : open == '[' ? ']' : '}';
	int depth = 0;

	for (; s[i]; i++) {
		if (s[i] == open)
			depth++;
		else if (s[i] == close && --depth == 0)
			return i + 1;
	}
	return i;
}

struct out {
	char *buf;
	size_t len, used;
};

static void out__put(struct out *o, char c)
{
	if (o->used + 1 < o->len)
		o->buf[o->used++] = c;
}

static void out__puts(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out__put(o, s[i]);
}

static bool ident__char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static bool word__starts(const char *s, size_t i, const char *w)
{
	size_t n = strlen(w);

	return !strncmp(s + i, w, n) && (i == 0 || s[i - 1] == ':' || s[i - 1] == ' ');
}

/* operator(), operator<<, operator new[]…: the operator's own token copied; the index past it */
static size_t operator__copy(const char *s, size_t i, struct out *o)
{
	out__puts(o, "operator", 8);
	i += 8;
	if (s[i] == '(' && s[i + 1] == ')') {
		out__puts(o, "()", 2);
		return i + 2;
	}
	if (s[i] == ' ') {
		/* new, delete, or a conversion: up to its parameters */
		while (s[i] && s[i] != '(') {
			if (s[i] == '<') {
				i = group__end(s, i);
				continue;
			}
			out__put(o, s[i++]);
		}
		return i;
	}
	while (s[i] && strchr("+-*/%^&|~!=<>,[]", s[i]))
		out__put(o, s[i++]);
	return i;
}

/* A lambda or unnamed type, {lambda(int)#1}: kept, its parameters cut. */
static size_t braces__copy(const char *s, size_t i, struct out *o)
{
	size_t end = group__end(s, i);

	while (i < end) {
		if (s[i] == '(') {
			i = group__end(s, i);
			continue;
		}
		out__put(o, s[i++]);
	}
	return end;
}

/*
 * The qualified name with the return type, template arguments and
 * parameter lists cut: what stays is scope :: scope :: name, with
 * "(anonymous namespace)" and lambdas kept as scopes.
 */
void demangle__shorten(const char *s, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	size_t i = 0, start = 0, limit;

	if (!len)
		return;
	while (s[i]) {
		if (word__starts(s, i, "operator") && !ident__char(s[i + 8])) {
			i = operator__copy(s, i, &o);
		} else if (!strncmp(s + i, "(anonymous namespace)", 21)) {
			out__puts(&o, s + i, 21);
			i += 21;
		} else if (s[i] == '(') {
			i = group__end(s, i);
			/* parameters: unless a scope follows, the rest is a const, a clone… */
			if (strncmp(s + i, "::", 2))
				break;
		} else if (s[i] == '<' || s[i] == '[') {
			i = group__end(s, i);
		} else if (s[i] == '{') {
			i = braces__copy(s, i, &o);
		} else {
			out__put(&o, s[i++]);
		}
	}
	while (o.used && buf[o.used - 1] == ' ')
		o.used--;
	buf[o.used] = '\0';
	/*
	 * The return type ends at the last space, but for the spaces of the
	 * operator's own name (operator new, a conversion) and of
	 * "(anonymous namespace)".
	 */
	limit = o.used;
	for (char *op = strstr(buf, "operator"); op; op = strstr(op + 1, "operator"))
		limit = (size_t)(op - buf);
	for (size_t k = limit; k > 0; k--) {
		if (buf[k - 1] != ' ')
			continue;
		if (k - 1 >= 10 && !strncmp(buf + k - 11, "(anonymous namespace)", 21))
			continue;
		start = k;
		break;
	}
	memmove(buf, buf + start, o.used - start + 1);
}

/* Where GCC's clone suffixes start (foo.isra.0, bar.lto_priv.0, baz.cold), or NULL. */
static const char *clone__suffix(const char *name)
{
	static const char *const kinds[] = { "isra", "constprop", "part", "cold", "lto_priv",
					     "localalias", "clone" };

	for (const char *dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
			size_t n = strlen(kinds[i]);

			if (dot > name && !strncmp(dot + 1, kinds[i], n) &&
			    (dot[1 + n] == '.' || dot[1 + n] == '\0'))
				return dot;
		}
	}
	return NULL;
}

bool demangle__display(const char *raw, char *out, size_t len)
{
	struct printed p;
	char name[DEMANGLE_MAX_IN];
	const char *at, *cut;
	size_t n = strnlen(raw, DEMANGLE_MAX_IN);

	if (!len || n >= DEMANGLE_MAX_IN)
		return false;
	/* the version of a versioned definition, as a debug file's .symtab has it */
	at = strchr(raw, '@');
	if (at && at > raw)
		n = (size_t)(at - raw);
	memcpy(name, raw, n);
	name[n] = '\0';
	if (!strncmp(name, "_Z", 2)) {
		switch (printed__demangle(&p, name)) {
		case 1:
			demangle__shorten(p.buf, out, len);
			return out[0] != '\0';
		case -1:
			/* the mangled name, cut to leave room for the mark */
			__atomic_fetch_add(&demangle_over_budget, 1, __ATOMIC_RELAXED);
			n = len > sizeof(DEMANGLE_MARK) ? len - sizeof(DEMANGLE_MARK) : 0;
			snprintf(out, len, "%.*s%s", (int)n, name, DEMANGLE_MARK);
			return true;
		}
	}
	cut = clone__suffix(name);
	if (cut)
		name[cut - name] = '\0';
	if (!strcmp(name, raw))
		return false;
	snprintf(out, len, "%s", name);
	return true;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for userspace/symbols/demangle.c: C++ names as a stack line shows
 * them (node's real symbols), symbol versions and GCC clone suffixes cut,
 * everything else left alone, hostile names refused.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "proc/elf.h"
#include "symbols/demangle.h"

#include "check.h"

static void expect(const char *raw, const char *want)
{
	char out[128];
	bool changed = demangle__display(raw, out, sizeof(out));

	if (!want)
		CHECK(!changed, "%s shown as %s", raw, out);
	else
		CHECK(changed && !strcmp(out, want), "%s: got '%s', want '%s'", raw,
		      changed ? out : "(unchanged)", want);
}

static void expect_short(const char *full, const char *want)
{
	char out[128];

	demangle__shorten(full, out, sizeof(out));
	CHECK(!strcmp(out, want), "%s: got '%s', want '%s'", full, out, want);
}

struct all_names {
	int total, shown, bad;
	double ns;
};

static int name__visit(const struct elf_symbol *s, void *ctx)
{
	struct all_names *a = ctx;
	struct timespec t0, t1;
	char out[128];
	bool ok;

	if (strncmp(s->name, "_Z", 2) || s->type != STT_FUNC)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok = demangle__display(s->name, out, sizeof(out));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->ns += (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	a->total++;
	a->shown += ok;
	/* nothing of the parameters or the return type may be left */
	if (ok && (strchr(out, ' ') && !strstr(out, "(anonymous namespace)") &&
		   !strstr(out, "operator")))
		a->bad++;
	if (ok && strchr(out, '(') && !strstr(out, "(anonymous namespace)") &&
	    !strstr(out, "operator()"))
		a->bad++;
	return 0;
}

/* The process's peak resident set so far (VmHWM), in KiB. */
static long peak_rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/*
 * A name whose printed form doubles with every level: each level is a
 * template (or function type) of two copies of the level before, named by
 * substitution. 22 levels of templates print 142 MB.
 */
static void doubling__make(char *buf, size_t len, int levels, bool functions)
{
	static const char digits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t n = (size_t)snprintf(buf, len, "_Z1f1AIiiE");

	for (int k = 0; k < levels && n < len; k++) {
		/* the level before, in base 36: a pointer to a function type is two */
		int i = functions && k ? 2 * k : k;
		char sub[4] = { digits[i % 36] };

		if (i >= 36)
			sub[0] = digits[i / 36], sub[1] = digits[i % 36];
		n += (size_t)snprintf(buf + n, len - n,
				      functions ? "PFvS%s_S%s_E" : "S_IS%s_S%s_E", sub, sub);
	}
}

/* A crafted name's demangling stops at its budget: marked, and costing no memory. */
static void check_over_budget(void)
{
	static const struct {
		int levels;
		bool functions;
	} kinds[] = { { 22, false }, { 40, false }, { 60, false }, { 22, true }, { 60, true } };
	char name[1024], out[128];
	unsigned long before = demangle__over_budget();
	long rss_kb = peak_rss_kb();

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		doubling__make(name, sizeof(name), kinds[i].levels, kinds[i].functions);
		CHECK(demangle__display(name, out, sizeof(out)) &&
			      strstr(out, "[demangle over budget]") && !strncmp(out, name, 16),
		      "%zu bytes, %d levels: '%s'", strlen(name), kinds[i].levels, out);
	}
	/* the budget was what stopped each, not a refusal of the name */
	CHECK(demangle__over_budget() - before == 5, "%lu over budget",
	      demangle__over_budget() - before);
	/* the unbounded demangler held the whole output: 142 MB for the first */
	CHECK(peak_rss_kb() - rss_kb < 8 * 1024, "peak RSS grew %ld KiB",
	      peak_rss_kb() - rss_kb);
	/* a few levels are a name like any other */
	doubling__make(name, sizeof(name), 3, false);
	CHECK(demangle__display(name, out, sizeof(out)) && !strcmp(out, "f"), "'%s'", out);
	CHECK(demangle__over_budget() - before == 5, "%lu", demangle__over_budget() - before);
}

int main(void)
{
	struct all_names a = { 0 };
	struct elf_handle h;
	char out[64];

	/* the examples */
	expect("_ZN2v88internal15JsonStringifier10Serialize_ILb1EEENS1_6Result"
	       "ENS0_6HandleINS0_6ObjectEEEbS6_", "v8::internal::JsonStringifier::Serialize_");
	expect("_ZN4node2fsL4ReadERKN2v820FunctionCallbackInfoINS1_5ValueEEE", "node::fs::Read");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi@@GLIBCXX_3.4", "std::vector::push_back");
	expect("_ZN2v88internal3FooEv.cold", "v8::internal::Foo");
	expect("__libc_start_main@@GLIBC_2.34", "__libc_start_main");
	expect("encoder_listencode_obj.isra.0", "encoder_listencode_obj");
	expect("join_list_unicode.lto_priv.0", "join_list_unicode");
	expect("main", NULL);
	expect("foo.bar", NULL);
	expect("_Znotmangled", NULL);
	expect("_Z", NULL);
	expect_short("void* operator new(unsigned long)", "operator new");
	expect_short("foo::operator()(int) const", "foo::operator()");
	expect_short("bool std::operator< <char>(std::string const&, std::string const&)",
		     "std::operator<");
	expect_short("(anonymous namespace)::Foo::bar()", "(anonymous namespace)::Foo::bar");
	expect_short("foo()::{lambda(int)#1}::operator()(int) const",
		     "foo::{lambda#1}::operator()");
	expect_short("Foo::operator unsigned long() const", "Foo::operator unsigned long");
	expect_short("std::__cxx11::basic_string<char> (anonymous namespace)::f[abi:cxx11](int) "
		     "[clone .cold]", "(anonymous namespace)::f");
	/* a name that does not fit is cut, never overrun */
	demangle__shorten("a::very::long::qualified::name::that::does::not::fit::here::at::all()",
			  out, 16);
	CHECK(strlen(out) == 15, "cut to %zu", strlen(out));
	/* hostile: deep nesting, huge names */
	{
		static char deep[8192];

		memcpy(deep, "_Z1f", 4);
		for (size_t i = 4; i < sizeof(deep) - 1; i++)
			deep[i] = "PFvE"[i % 4];
		expect(deep, NULL);
	}
	check_over_budget();
	/* every C++ function node exports */
	if (!elf__open(&h, "/usr/bin/node")) {
		elf__symbols(&h, SHT_DYNSYM, name__visit, &a);
		elf__close(&h);
		printf("node: %d C++ names, %d shown demangled, %.2f us each\n", a.total, a.shown,
		       a.ns / 1e3 / (a.total ? a.total : 1));
		CHECK(a.total > 10000 && a.shown >= a.total * 99 / 100, "%d of %d", a.shown,
		      a.total);
		CHECK(a.bad == 0, "%d names kept parameters or a return type", a.bad);
	} else {
		CHECK(0, "no /usr/bin/node (a test package)");
	}
	return check__report();
}

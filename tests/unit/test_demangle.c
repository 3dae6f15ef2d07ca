// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for userspace/symbols/demangle.c: C++ names as a stack line shows
 * them (node's real symbols), symbol versions and GCC clone suffixes cut,
 * everything else left alone, hostile names refused.
 */
#define _GNU_SOURCE
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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for userspace/symbols/perfmap.c: Node's and Python's names, the
 * lines to skip, the newest entry winning, and a real process's map read as
 * it grows, vanishes and is replaced (root: /proc/PID/root).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proc/procs.h"
#include "symbols/perfmap.h"

#include "check.h"

static bool lookup(const struct perf_map *pm, uint64_t addr, struct frame *f)
{
	memset(f, 0, sizeof(*f));
	return perf_map__frame(pm, addr, f);
}

static void test_parse(void)
{
	static const char text[] =
		"7f778c0061c0 288 JS:*login /app/api.js:12:15\n"
		"30be82e8ad66 78 JS:~ node:internal/main/run_main_module:1:1\n"
		"0x1000 0x10 py::render_report:/srv/app.py\n"
		"2000 20 Builtin:ArrayPrototypePush\r\n"
		"6bd9aece59e 24 JS:~lateHandler :3:28\n"
		"zzzz 10 not hex\n"
		"3000 0 zero size\n"
		"ffffffffffffffff 10 wraps around\n"
		"4000 10\n"
		"11112222333344445 10 seventeen digits\n"
		"\n"
		"5000 10 cut short without a newline";
	struct perf_map *pm = perf_map__new();
	size_t dropped, used;
	struct frame f;

	used = perf_map__parse(pm, text, sizeof(text) - 1);
	CHECK(used == (size_t)(strrchr(text, '\n') - text + 1), "consumed %zu", used);
	CHECK(perf_map__entries(pm, &dropped) == 5 && dropped == 5, "%zu entries, %zu dropped",
	      perf_map__entries(pm, NULL), dropped);
	CHECK(lookup(pm, 0x7f778c0061c0 + 0x10, &f) && f.kind == FRAME_JIT &&
	      !strcmp(f.func, "login") && !strcmp(f.file, "/app/api.js") && f.line == 12 &&
	      f.column == 15 && f.offset == 0x10, "node: %s %s:%d:%d", f.func, f.file, f.line,
	      f.column);
	CHECK(lookup(pm, 0x30be82e8ad66, &f) && !strcmp(f.func, "(anonymous)") &&
	      !strcmp(f.file, "node:internal/main/run_main_module") && f.line == 1,
	      "anonymous: %s %s", f.func, f.file);
	CHECK(lookup(pm, 0x1008, &f) && !strcmp(f.func, "render_report") &&
	      !strcmp(f.file, "/srv/app.py"), "python: %s %s", f.func, f.file);
	CHECK(lookup(pm, 0x2000, &f) && !strcmp(f.func, "Builtin:ArrayPrototypePush"),
	      "builtin: %s", f.func);
	CHECK(lookup(pm, 0x6bd9aece59e, &f) && !strcmp(f.func, "lateHandler") && !f.file[0] &&
	      f.line == 3 && f.column == 28, "new Function: %s '%s' %d", f.func, f.file, f.line);
	CHECK(!lookup(pm, 0x1010, &f), "one past the end is no hit");
	CHECK(!lookup(pm, 0x5000, &f), "an unfinished line is not read");
	/* code moved: the later line wins where they overlap */
	perf_map__parse(pm, "1000 40 JS:*login2 /app/api.js:30:1\n", 36);
	CHECK(lookup(pm, 0x1004, &f) && !strcmp(f.func, "login2"), "newest: %s", f.func);
	CHECK(lookup(pm, 0x1030, &f) && !strcmp(f.func, "login2"), "wider: %s", f.func);
	perf_map__free(pm);
}

static void map__write(int pid, const char *text, const char *mode)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	f = fopen(path, mode);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_process(void)
{
	struct procs *ps = procs__new();
	struct perf_map *pm = perf_map__new();
	char path[64];
	struct frame f;
	struct proc *p;
	pid_t child = fork();

	if (!child) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", child);
	p = procs__get(ps, child);
	CHECK(p != NULL, "no proc for %d", child);
	perf_map__refresh(pm, p);
	CHECK(perf_map__entries(pm, NULL) == 0, "no map yet");
	map__write(child, "a000 100 JS:*first /x.js:1:1\nb000 10 JS:*half", "w");
	perf_map__refresh(pm, p);
	CHECK(lookup(pm, 0xa010, &f) && !strcmp(f.func, "first"), "first: %s", f.func);
	CHECK(!lookup(pm, 0xb000, &f), "half a line");
	/* the JIT finishes the line and compiles more */
	map__write(child, "0 /y.js:2:2\nc000 10 JS:*third /z.js:3:3\n", "a");
	perf_map__refresh(pm, p);
	CHECK(lookup(pm, 0xb004, &f) && !strcmp(f.func, "half0") && f.line == 2,
	      "finished line: %s %d", f.func, f.line);
	CHECK(lookup(pm, 0xc004, &f) && !strcmp(f.func, "third"), "appended: %s", f.func);
	/* the file vanishes: what was read stays */
	unlink(path);
	perf_map__refresh(pm, p);
	CHECK(lookup(pm, 0xa010, &f) && !strcmp(f.func, "first"), "after unlink: %s", f.func);
	/* another file in its place (a restarted JIT): read anew */
	map__write(child, "d000 10 JS:*fourth /w.js:4:4\n", "w");
	perf_map__refresh(pm, p);
	CHECK(!lookup(pm, 0xa010, &f) && lookup(pm, 0xd000, &f) && !strcmp(f.func, "fourth"),
	      "replaced: %s", f.func);
	unlink(path);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	perf_map__free(pm);
	procs__free(ps);
}

/* N lines naming 16-byte code at 0x100000000 + 16 i, "f<i>", from line first on. */
static char *lines__make(size_t first, size_t n, size_t *len)
{
	char *text = malloc(n * 40), *p = text;

	for (size_t i = first; text && i < first + n; i++)
		p += sprintf(p, "%lx 10 f%zu\n", 0x100000000ul + 16 * i, i);
	*len = text ? (size_t)(p - text) : 0;
	return text;
}

/*
 * A map read in steps is sorted as a whole; maps past their bounds (1M entries a
 * map, 2M for all) keep what fits, stop reading, and name what they miss as such.
 */
static void test_bounds(void)
{
	struct perf_map *a = perf_map__new(), *b = perf_map__new(), *c = perf_map__new();
	size_t len, used = 0, step;
	char *text = lines__make(0, (1u << 20) + 10, &len);
	struct frame f;

	CHECK(text, "no memory");
	if (!text)
		return;
	/* backwards in steps of whole lines: every step merged into what is sorted */
	for (size_t end = len; end > 0; end -= step) {
		size_t start = end > 65536 ? end - 65536 : 0;

		while (start > 0 && text[start - 1] != '\n')
			start--;
		step = end - start;
		used += perf_map__parse(a, text + start, step);
	}
	/* the step that went over stopped at the line that did not fit */
	CHECK(used < len && len - used < 20 * 10, "%zu of %zu bytes", used, len);
	CHECK(perf_map__entries(a, NULL) == 1u << 20, "%zu", perf_map__entries(a, NULL));
	CHECK(lookup(a, 0x100000000ul + 16 * 1000000 + 3, &f) && !strcmp(f.func, "f1000000"),
	      "'%s'", f.func);
	CHECK(lookup(a, 0x100000000ul + 16 * 20 + 15, &f) && !strcmp(f.func, "f20"), "'%s'",
	      f.func);
	/* the last step read was the file's first lines: ten of them did not fit */
	{
		int over = 0;

		for (size_t i = 0; i < 8192; i++)
			over += lookup(a, 0x100000000ul + 16 * i, &f) &&
				!strcmp(f.func, "[perf map over budget]");
		CHECK(over == 10, "%d lines unnamed", over);
	}
	/* a second map fits whole, a third gets nothing: the bound of all maps */
	perf_map__parse(b, text, len);
	CHECK(perf_map__entries(b, NULL) == 1u << 20, "%zu", perf_map__entries(b, NULL));
	perf_map__parse(c, text, len);
	CHECK(perf_map__entries(c, NULL) == 0, "%zu", perf_map__entries(c, NULL));
	CHECK(lookup(c, 0x100000000ul, &f) && !strcmp(f.func, "[perf map over budget]"), "'%s'",
	      f.func);
	/* freed, a map leaves room for the next */
	perf_map__free(b);
	b = perf_map__new();
	perf_map__parse(b, text, 4096);
	CHECK(perf_map__entries(b, NULL) > 100, "%zu", perf_map__entries(b, NULL));
	free(text);
	perf_map__free(a);
	perf_map__free(b);
	perf_map__free(c);
}

int main(void)
{
	test_bounds();
	test_parse();
	test_process();
	return check__report();
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for userspace/runtimes/runtimes.c: every runtime of the table is
 * whole, its two maps are in the BPF object with the value sizes the
 * userspace half reads and writes (a runtime added on one side only fails
 * here, not quietly at attach), and whose frames are the runtimes' own code.
 */
#include <string.h>
#include <bpf/libbpf.h>
#include "loopwatch.skel.h"
#include "runtimes/runtimes.h"
#include "check.h"

static void check__map(struct bpf_object *obj, const char *rt, const char *name, size_t size)
{
	const struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	CHECK(m, "%s: no map %s in the BPF object", rt, name);
	if (m)
		CHECK(bpf_map__value_size(m) == size, "%s: %s holds %u bytes, userspace %zu", rt,
		      name, bpf_map__value_size(m), size);
}

static struct frame frame__of(enum frame_kind kind, const char *func, const char *file)
{
	struct frame f = { .kind = kind };

	snprintf(f.func, sizeof(f.func), "%s", func);
	snprintf(f.file, sizeof(f.file), "%s", file);
	return f;
}

static void expect_own(enum frame_kind kind, const char *func, const char *file, bool want)
{
	struct frame f = frame__of(kind, func, file);

	CHECK(runtimes__frame_is_own(&f) == want, "%s (%s): own %d, want %d", func, file, !want,
	      want);
}

int main(void)
{
	/* open only: the object's maps and their sizes, no kernel needed */
	struct loopwatch_bpf *skel = loopwatch_bpf__open();
	struct runtimes *rs = runtimes__new();

	CHECK(skel, "the BPF object opens");
	CHECK(rs, "every runtime's state is made");
	for (int id = 0; id < LW_RT_N; id++) {
		const struct runtime *rt = runtimes__get(id);

		CHECK(rt && rt->name && rt->frames && rt->state_new && rt->state_free &&
		      rt->detect && rt->symbolize && rt->splice && rt->forget && rt->frame_is_own &&
		      rt->max_frames > 0, "runtime %d is whole", id);
		if (!rt || !skel)
			continue;
		check__map(skel->obj, rt->name, rt->procs_map, rt->layout_size);
		check__map(skel->obj, rt->name, rt->stacks_map, rt->stack_size);
	}
	expect_own(FRAME_PYTHON, "dumps", "/usr/lib/python3.11/json/__init__.py", true);
	expect_own(FRAME_PYTHON, "get", "/usr/lib/python3/dist-packages/requests/api.py", false);
	expect_own(FRAME_PYTHON, "handle", "/srv/app.py", false);
	expect_own(FRAME_JS, "readFileSync", "node:fs", true);
	expect_own(FRAME_JS, "<anonymous>", "", true);
	expect_own(FRAME_JS, "route", "/srv/app.js", false);
	expect_own(FRAME_NATIVE, "v8::internal::Runtime_StringAdd", "", true);
	expect_own(FRAME_NATIVE, "Builtins_JSEntry", "", true);
	expect_own(FRAME_NATIVE, "node::http_parser::Parser::Execute", "", false);
	/* a script frame is judged by its script, never by a native name it happens to have */
	expect_own(FRAME_PYTHON, "v8::weird", "/srv/app.py", false);
	runtimes__free(rs);
	loopwatch_bpf__destroy(skel);
	return check__report();
}

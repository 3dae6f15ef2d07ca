// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "kernel/features.h"
#include "proc/procs.h"

/*
 * What bpf/ uses that not every kernel has, oldest first. Without one that
 * has no fallback the first one missing is named with the kernel it came
 * with: a clear error at start, never a tracer loaded blind. The two newest
 * have one (Linux 5.15, Ubuntu 22.04's, lacks both), chosen in bpf/ by a
 * read-only constant the verifier folds, and said in one line each: a
 * fallback for the older ones would be a second copy of the programs (every
 * loop record over a hash map by thread; a stack walker without the saved
 * registers).
 */
enum need_kind { NEED_MAP, NEED_HELPER };

static const struct need {
	const char *name;	/* for LOOPWATCH_TEST_ABSENT */
	const char *what;
	const char *since;
	enum need_kind kind;
	int id;			/* enum bpf_map_type or enum bpf_func_id */
	const char *fallback;	/* what is done without it; NULL: refused */
	size_t flag;		/* its flag in struct features, with a fallback */
} needs[] = {
	{ .name = "ringbuf", .what = "the BPF ring buffer", .since = "5.8", .kind = NEED_MAP,
	  .id = BPF_MAP_TYPE_RINGBUF },
	{ .name = "task_storage", .what = "BPF task storage", .since = "5.11", .kind = NEED_MAP,
	  .id = BPF_MAP_TYPE_TASK_STORAGE },
	{ .name = "task_btf", .what = "bpf_get_current_task_btf()", .since = "5.11",
	  .kind = NEED_HELPER, .id = BPF_FUNC_get_current_task_btf },
	{ .name = "task_storage_get", .what = "bpf_task_storage_get() in tracepoints",
	  .since = "5.11", .kind = NEED_HELPER, .id = BPF_FUNC_task_storage_get },
	{ .name = "task_pt_regs", .what = "bpf_task_pt_regs()", .since = "5.15",
	  .kind = NEED_HELPER, .id = BPF_FUNC_task_pt_regs },
	{ .name = "attach_cookie", .what = "bpf_get_attach_cookie()", .since = "5.15",
	  .kind = NEED_HELPER, .id = BPF_FUNC_get_attach_cookie },
	{ .name = "bpf_loop", .what = "bpf_loop()", .since = "5.17", .kind = NEED_HELPER,
	  .id = BPF_FUNC_loop,
	  .fallback = "the stack walks and the select scan are bounded loops",
	  .flag = offsetof(struct features, bpf_loop) },
	{ .name = "percpu_lookup", .what = "bpf_map_lookup_percpu_elem()", .since = "5.19",
	  .kind = NEED_HELPER, .id = BPF_FUNC_map_lookup_percpu_elem,
	  .fallback = "the CPUs' run-queue watches are one array shared by every CPU",
	  .flag = offsetof(struct features, percpu_lookup) },
};
#define NNEEDS (sizeof(needs) / sizeof(needs[0]))

/*
 * The functions hooks_fentry.bpf.c puts trampolines on (its SEC names): all
 * or none, a kernel's BTF missing one keeps the tracepoints.
 */
#if defined(__x86_64__)
#define SYS "__x64_sys_"
#elif defined(__aarch64__)
#define SYS "__arm64_sys_"
#else
#define SYS NULL
#endif
static const char *const fentry_targets[] = {
	"epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6",
	"fsync", "fdatasync", "sync_file_range", "syncfs",
};
#define RESTART_TARGET "__do_sys_restart_syscall"
#define NTARGETS (sizeof(fentry_targets) / sizeof(fentry_targets[0]))

/* Is name in LOOPWATCH_TEST_ABSENT (test-only: pretend the kernel lacks it)? */
static bool feature__pretend_absent(const char *name)
{
	const char *list = getenv("LOOPWATCH_TEST_ABSENT"), *p;
	size_t n = strlen(name);

	for (p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

static bool need__met(const struct need *n)
{
	if (feature__pretend_absent(n->name))
		return false;
	if (n->kind == NEED_MAP)
		return libbpf_probe_bpf_map_type((enum bpf_map_type)n->id, NULL) == 1;
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, (enum bpf_func_id)n->id,
				       NULL) == 1;
}

/*
 * Can a trampoline go on btf_id? An empty fentry program loaded and attached
 * there, and let go: some kernels have the BTF but refuse the trampoline
 * (lockdown, no ftrace direct calls). 0 or -errno.
 */
static int fentry__try(int btf_id)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = (__u32)btf_id);
	int prog, link;

	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "lw_fentry_probe", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), &opts);
	if (prog < 0)
		return -errno;
	link = bpf_raw_tracepoint_open(NULL, prog);
	if (link < 0) {
		int err = -errno;

		close(prog);
		return err;
	}
	close(link);
	close(prog);
	return 0;
}

/* fentry usable on every target: true, or false with why not in why. */
static bool fentry__usable(char *why, size_t whylen)
{
	struct btf *vmlinux;
	char name[64];
	int id = -1, err;

	if (feature__pretend_absent("fentry")) {
		snprintf(why, whylen, "fentry absent: LOOPWATCH_TEST_ABSENT");
		return false;
	}
	if (!SYS) {
		snprintf(why, whylen, "no fentry hooks for this architecture");
		return false;
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		snprintf(why, whylen, "no kernel BTF");
		return false;
	}
	for (size_t i = 0; i <= NTARGETS; i++) {
		if (i < NTARGETS)
			snprintf(name, sizeof(name), "%s%s", SYS, fentry_targets[i]);
		else
			snprintf(name, sizeof(name), "%s", RESTART_TARGET);
		err = btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC);
		if (err < 0) {
			snprintf(why, whylen, "no %s in the kernel's BTF", name);
			btf__free(vmlinux);
			return false;
		}
		if (i == 0)
			id = err;
	}
	btf__free(vmlinux);
	err = fentry__try(id);
	if (err) {
		snprintf(why, whylen, "fentry refused by this kernel: %s", strerror(-err));
		return false;
	}
	return true;
}

/*
 * Can the CPU samples ride the scheduler tick (bpf/sample.bpf.c)? The tick
 * must be an hrtimer, which it is while high-resolution timers are on (the
 * clock's resolution is then 1 ns; low-resolution, a jiffy); the kernel's BTF
 * must name its function, as the program does (tick_nohz_handler since Linux
 * 6.10, tick_sched_timer before); and libbpf must read that function's
 * address in /proc/kallsyms, which kptr_restrict 2 hides even from root.
 * true with the tick's period in *tick_ns, or false with why not in why.
 */
static bool tick__usable(long *tick_ns, char *why, size_t whylen)
{
	static const char *const names[] = { "tick_nohz_handler", "tick_sched_timer" };
	struct timespec res;
	struct btf *vmlinux;
	int id = -1;

	if (feature__pretend_absent("tick")) {
		snprintf(why, whylen, "LOOPWATCH_TEST_ABSENT");
		return false;
	}
	if (clock_getres(CLOCK_MONOTONIC, &res) || res.tv_sec || res.tv_nsec != 1) {
		snprintf(why, whylen, "low-resolution timers");
		return false;
	}
	/* the coarse clock moves once a tick: its resolution is 1/HZ */
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) || res.tv_sec || res.tv_nsec <= 0) {
		snprintf(why, whylen, "no tick period");
		return false;
	}
	*tick_ns = res.tv_nsec;
	if (procs__kptr_restrict() == 2) {
		snprintf(why, whylen, "kernel addresses hidden: kptr_restrict 2");
		return false;
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		snprintf(why, whylen, "no kernel BTF");
		return false;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && id < 0; i++)
		id = btf__find_by_name_kind(vmlinux, names[i], BTF_KIND_FUNC);
	btf__free(vmlinux);
	if (id < 0) {
		snprintf(why, whylen, "no tick function in the kernel's BTF");
		return false;
	}
	return true;
}

int features__probe(struct features *f, char *err, size_t errlen)
{
	struct utsname u;
	size_t used = 0;
	char why[112];

	memset(f, 0, sizeof(*f));
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "?");
	for (size_t i = 0; i < NNEEDS; i++) {
		const struct need *n = &needs[i];
		bool met = need__met(n);

		if (n->fallback)
			*(bool *)((char *)f + n->flag) = met;
		if (met)
			continue;
		if (!n->fallback) {
			snprintf(err, errlen, "this kernel (%s) has no %s (Linux %s): loopwatch "
				 "needs Linux " FEATURES_MIN_KERNEL " or later", u.release, n->what,
				 n->since);
			return -1;
		}
		if (used < sizeof(f->fallbacks))
			used += (size_t)snprintf(f->fallbacks + used, sizeof(f->fallbacks) - used,
						 "loopwatch: this kernel (%s) has no %s (Linux %s): %s\n",
						 u.release, n->what, n->since, n->fallback);
	}
	f->fentry = fentry__usable(why, sizeof(why));
	if (f->fentry)
		snprintf(f->hooks, sizeof(f->hooks), "fentry/fexit on the wait and flush syscalls");
	else
		snprintf(f->hooks, sizeof(f->hooks), "syscall tracepoints, %s", why);
	f->tick = tick__usable(&f->tick_ns, f->no_tick, sizeof(f->no_tick));
	return 0;
}

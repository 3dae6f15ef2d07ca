// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What naming a stack costs loopwatch's userspace, on real processes: a
 * 32-frame user stack of real function addresses of a running python3 and
 * node (node's frames are C++: demangled), named by symbols__stack() once
 * cold (files opened, symbol tables read) and then cached, as every stack
 * after a process's first is. And what building the unwind tables costs,
 * per file (thread CPU time). Medians of interleaved rounds.
 *
 * usage: symbench [ROUNDS]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "proc/elf.h"
#include "proc/procs.h"
#include "symbols/cfi.h"
#include "runtimes/runtimes.h"
#include "symbols/symbols.h"

#define DEPTH 32
#define CALLS_PER_ROUND 2000

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n ? v[n / 2] : 0;
}

struct pick {
	uint64_t bias;
	uint64_t *out;
	int n, max, every, seen;
};

/* every k-th sized function of a file, at an address inside it */
static int func__pick(const struct elf_symbol *s, void *ctx)
{
	struct pick *p = ctx;

	if (s->type != STT_FUNC || s->size < 32 || p->n >= p->max)
		return 0;
	if (p->seen++ % p->every)
		return 0;
	p->out[p->n++] = s->value + p->bias + s->size / 2;
	return 0;
}

/* DEPTH addresses inside functions of the process's executable file mappings */
static int stack__pick(struct procs *ps, int pid, uint64_t *ips)
{
	const struct proc_maps *maps;
	struct proc *p = procs__get(ps, pid);
	int n = 0;

	maps = p ? proc__maps(p, true) : NULL;
	for (size_t i = 0; maps && i < maps->n && n < DEPTH; i++) {
		const struct proc_mapping *m = &maps->v[i];
		struct pick pk = { .out = ips + n, .max = DEPTH - n < 16 ? DEPTH - n : 16,
				   .every = 31 };
		struct elf_handle h;
		struct stat st;
		int fd;

		if (!m->exec || m->type != PROC_MAP_FILE)
			continue;
		fd = proc__open_mapping(p, m, &st);
		if (fd < 0)
			continue;
		if (!elf__open_fd(&h, fd)) {
			if (!elf__bias(&h, m->start, m->offset, &pk.bias))
				elf__symbols(&h, SHT_DYNSYM, func__pick, &pk);
			elf__close(&h);
		}
		close(fd);
		n += pk.n;
	}
	return n;
}

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void bench_stacks(const char *what, char *const argv[], int rounds)
{
	struct procs *ps = procs__new();
	uint64_t ips[DEPTH];
	double cold, per[64];
	pid_t pid = spawn(argv);
	int n;

	sleep(1);	/* its libraries loaded */
	n = stack__pick(ps, pid, ips);
	if (n < DEPTH) {
		printf("%-8s only %d function addresses found: skipped\n", what, n);
		goto out;
	}
	for (int r = 0; r < rounds && r < 64; r++) {
		struct runtimes *rts = runtimes__new();
		struct symbols *syms = symbols__new(ps, rts);
		struct raw_stack raw = { .user = ips, .nuser = DEPTH, .user_fp = 0 };
		struct frame *frames;
		double t0 = cpu_ns();
		int got = symbols__stack(syms, pid, &raw, &frames);

		cold = cpu_ns() - t0;
		free(frames);
		t0 = cpu_ns();
		for (int i = 0; i < CALLS_PER_ROUND; i++) {
			got = symbols__stack(syms, pid, &raw, &frames);
			free(frames);
		}
		per[r] = (cpu_ns() - t0) / CALLS_PER_ROUND;
		if (!r)
			printf("%-8s %d frames: first stack (files read, cold) %.1f ms\n", what,
			       got, cold / 1e6);
		symbols__free(syms);
		runtimes__free(rts);
	}
	printf("%-8s cached %d-frame stack: median %.1f us of %d rounds (%.0f ns a frame)\n", what,
	       DEPTH, median(per, rounds) / 1e3, rounds, median(per, rounds) / DEPTH);
out:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	procs__free(ps);
}

static void bench_table(const char *path, int rounds)
{
	struct elf_handle h;
	struct cfi_table t;
	double ms[64];
	size_t rows = 0, pages = 0;

	if (elf__open(&h, path)) {
		printf("%s: not here\n", path);
		return;
	}
	for (int r = 0; r < rounds && r < 64; r++) {
		double t0 = cpu_ns();

		if (cfi__build(&h, NULL, &t))
			break;
		ms[r] = (cpu_ns() - t0) / 1e6;
		rows = t.n;
		pages = t.npages;
		cfi_table__free(&t);
	}
	elf__close(&h);
	printf("table %-36s %7zu rows %6zu KiB + index %4zu KiB, built in %.1f ms (median)\n",
	       path, rows, rows * sizeof(struct lw_uw_row) / 1024,
	       pages * sizeof(struct lw_uw_page) / 1024, median(ms, rounds));
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	char *python[] = { "/usr/bin/python3", "-c", "import json, time; time.sleep(60)", NULL };
	char *node[] = { "/usr/bin/node", "-e", "setTimeout(() => {}, 60000)", NULL };

	if (rounds < 1)
		rounds = 1;
	printf("Symbolization, per stack (thread CPU time):\n");
	bench_stacks("python3", python, rounds);
	bench_stacks("node", node, rounds);
	printf("Unwind tables, per file (thread CPU time):\n");
	bench_table("/usr/bin/python3.11", rounds);
	bench_table("/lib/x86_64-linux-gnu/libc.so.6", rounds);
	bench_table("/usr/bin/node", rounds > 3 ? 3 : rounds);
	return 0;
}

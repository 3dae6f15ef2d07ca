// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An epoll loop that stalls inside JIT code, as a JIT compiler would run it:
 * machine code copied into an anonymous executable mapping and named in
 * /tmp/perf-PID.map (among garbage lines), which calls back into C
 * (main > run_jit > [jit_trampoline] > jit_callee, ~15 ms). Hostile on
 * purpose: the map holds lines no parser should accept, the process maps a
 * truncated ELF file executable, and halfway the map vanishes; later a new
 * one names the code jit_trampoline_v2. JITWORK_MAP_LINES=N in the environment
 * puts N lines naming other code before the first map's line for it.
 *
 * usage: jitwork OUT.json ITERATIONS TRUNCATED_ELF [--go]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include "groundtruth.h"

#define MAX_RECORDS 1024

/* push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret: a JIT frame with a frame pointer */
static const unsigned char trampoline[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3 };

static struct iter_record records[MAX_RECORDS];
static int nrecords;
static void (*jit_code)(void (*callee)(void));
volatile uint64_t sink;

__attribute__((noipa)) void jit_callee(void)
{
	spin_ns(15000000);
	sink++;
}

__attribute__((noipa)) void run_jit(void)
{
	jit_code(jit_callee);
	sink++;
}

static void perf_map__write(const char *name, bool garbage)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		exit(3);
	if (garbage) {
		fputs("zzzz 10 not hex\n", f);
		fputs("1000 0 zero size\n", f);
		fputs("ffffffffffffffff 10 wraps around\n", f);
		fprintf(f, "%lx 8\n", (unsigned long)(uintptr_t)jit_code);
		fputc('\0', f);
		fputs(" 1 nul byte first\n\n\n", f);
		for (int i = 0; i < 5000; i++)
			fputc('x', f);
		fputc('\n', f);
		for (long i = 0, n = atol(getenv("JITWORK_MAP_LINES") ?: "0"); i < n; i++)
			fprintf(f, "%lx 10 JS:*f%ld /app/x.js:1:1\n", 0x100000000ul + 16 * i, i);
	}
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)jit_code, sizeof(trampoline), name);
	if (garbage)
		fprintf(f, "%lx 8 never finished", (unsigned long)(uintptr_t)jit_code);
	fclose(f);
}

static void perf_map__remove(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
}

int main(int argc, char **argv)
{
	struct epoll_event out[4];
	char extra[64];
	int n, ep, tfd, elf_fd;
	void *code;

	if (argc < 4) {
		fprintf(stderr, "usage: jitwork OUT ITERATIONS TRUNCATED_ELF [--go]\n");
		return 2;
	}
	n = atoi(argv[2]);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (code == MAP_FAILED)
		return 3;
	memcpy(code, trampoline, sizeof(trampoline));
	jit_code = (void (*)(void (*)(void)))code;
	/* a truncated ELF file mapped executable: its tables cannot be built */
	elf_fd = open(argv[3], O_RDONLY);
	if (elf_fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, elf_fd, 0) ==
	    MAP_FAILED)
		return 3;
	perf_map__write("jit_trampoline", true);
	setpriority(PRIO_PROCESS, 0, -10);
	if (go__await(argc > 4 && !strcmp(argv[4], "--go")))
		return 1;
	ep = ticker__open(30000000, &tfd);
	for (int i = 0; i < n && nrecords < MAX_RECORDS; i++) {
		struct iter_record *r = &records[nrecords++];
		uint64_t t0 = ticker__next(ep, tfd, &r->start_wall);

		if (!t0)
			return 1;
		/* the map vanishes a third of the way, a new one names the code later */
		if (i == n / 3)
			perf_map__remove();
		if (i == 2 * n / 3)
			perf_map__write("jit_trampoline_v2", false);
		r->label = i < n / 3 ? "named" : i < 2 * n / 3 ? "vanished" : "renamed";
		run_jit();
		r->busy_ns = now_ns() - t0;
	}
	epoll_wait(ep, out, 4, 0);
	perf_map__remove();
	snprintf(extra, sizeof(extra), ",\"jit\":%lu", (unsigned long)(uintptr_t)jit_code);
	return iter_records__write(argv[1], "phase", extra, records, nrecords) ? 1 : 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pywalk: the BPF Python walker on one live process, printed. Proves
 * bpf/runtimes/python/python.bpf.h and userspace/runtimes/python/ on real interpreters without the
 * rest of loopwatch: detects the version, attaches one capture context,
 * and prints every captured stack symbolized and spliced.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/jsonw.h"
#include "proc/procs.h"
#include "symbols/native.h"
#include "runtimes/python/python.h"
#include "pywalk.h"
#include "pywalk.skel.h"

#define MAX_FRAMES 160
#define MAX_WALKS 100000

static const char usage[] =
	"USAGE: pywalk -p PID [-m sample|switch|uprobe] [-d SECONDS] [-F HZ]\n"
	"              [-u FILE:SYMBOL] [--json] [--thread-list] [-v]\n"
	"  -m sample   perf_event cpu-clock samples of the process (default)\n"
	"  -m switch   tp_btf/sched_switch when one of its threads goes to sleep\n"
	"  -m uprobe   a uprobe on FILE:SYMBOL, by default glibc's clock_nanosleep\n"
	"  --json      one JSON line per stack, then a summary line\n"
	"  --thread-list  find thread states by the thread-list fallback, not the TSS key\n";

struct options {
	int pid;
	int kind;
	double seconds;
	int hz;
	const char *uprobe;
	bool json;
	bool verbose;
	bool thread_list;	/* no TSS: find tstates by the thread-list fallback */
};

struct state {
	struct options opt;
	struct pywalk_bpf *skel;
	struct procs *procs;
	struct symbolizer *sym;
	struct python_syms *ps;
	__u64 walk_ns[MAX_WALKS];
	long nwalks, events, with_python;
	long flag_counts[5];
	__u32 verified_insns;
	char version[64];
	int detect;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	return vfprintf(stderr, fmt, args);
}

static const char *kind__name(__u32 kind)
{
	return kind == PYWALK_SAMPLE ? "sample" : kind == PYWALK_SWITCH ? "switch" : "uprobe";
}

static int stack__read(struct state *s, __s32 id, uint64_t *ips)
{
	int fd = bpf_map__fd(s->skel->maps.pw_stacks), n = 0;

	if (id < 0 || bpf_map_lookup_elem(fd, &id, ips))
		return 0;
	while (n < 64 && ips[n])
		n++;
	return n;
}

/* kernel frames, then user frames, leaf first: as loopwatch's stack__resolve */
static int native__resolve(struct state *s, const struct pywalk_event *e, struct frame *out)
{
	uint64_t kips[64], uips[64];
	int nk = stack__read(s, e->kstack, kips), nu = stack__read(s, e->ustack, uips), n = 0;

	for (int i = 1; i < nu; i++)
		uips[i]--;
	if (nk)
		n += symbolizer__symbolize(s->sym, (int)e->pid, kips, nk, true, out, nk);
	if (nu)
		n += symbolizer__symbolize(s->sym, (int)e->pid, uips, nu, false, out + n, nu);
	return n;
}

static void frames__json(const struct frame *f, int n)
{
	static const char *const kinds[] = { "native", "kernel", "python", "jit" };

	putchar('[');
	for (int i = 0; i < n; i++) {
		printf("%s{\"kind\":\"%s\",\"func\":", i ? "," : "", kinds[f[i].kind & 3]);
		json__string(stdout, f[i].func[0] ? f[i].func : "[unknown]");
		if (f[i].kind == FRAME_PYTHON) {
			fputs(",\"file\":", stdout);
			json__string(stdout, f[i].file);
			printf(",\"line\":%d,\"entry\":%s}", f[i].line,
			       f[i].offset & PYTHON_FRAME_ENTRY ? "true" : "false");
		} else {
			fputs(",\"module\":", stdout);
			json__string(stdout, f[i].module);
			putchar('}');
		}
	}
	putchar(']');
}

static void frames__text(const char *title, const struct frame *f, int n)
{
	char buf[512];

	printf("  %s:\n", title);
	for (int i = 0; i < n; i++) {
		frame__format(&f[i], buf, sizeof(buf));
		printf("    %s%s\n", buf, f[i].offset & PYTHON_FRAME_ENTRY &&
		       f[i].kind == FRAME_PYTHON ? "  [entry]" : "");
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	static struct frame py[LW_PY_MAX_DEPTH + 1], native[128], spliced[MAX_FRAMES];
	static struct lw_py_stack st;
	const struct pywalk_event *e = data;
	struct state *s = ctx;
	int npy = 0, nn, nsp;

	if (size < sizeof(*e))
		return 0;
	s->events++;
	if (s->nwalks < MAX_WALKS)
		s->walk_ns[s->nwalks++] = e->walk_ns;
	memset(&st, 0, sizeof(st));
	if (e->py_id &&
	    !bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.py_stacks), &e->py_id, &st)) {
		for (int b = 0; b < 5; b++)
			s->flag_counts[b] += !!(st.flags & (1u << b));
		npy = python__symbolize(s->ps, procs__get(s->procs, (int)e->pid), &st, py, LW_PY_MAX_DEPTH + 1);
		s->with_python += npy > 0;
	}
	nn = native__resolve(s, e, native);
	nsp = python__splice(native, nn, py, npy, spliced, MAX_FRAMES);
	if (s->opt.json) {
		printf("{\"kind\":\"%s\",\"pid\":%u,\"tid\":%u,\"walk_ns\":%llu,\"py_id\":%u,"
		       "\"flags\":%u,\"nframes\":%u,\"python\":", kind__name(e->kind), e->pid,
		       e->tid, (unsigned long long)e->walk_ns, e->py_id, st.flags, st.nframes);
		frames__json(py, npy);
		fputs(",\"native\":", stdout);
		frames__json(native, nn);
		fputs(",\"stack\":", stdout);
		frames__json(spliced, nsp);
		puts("}");
		return 0;
	}
	printf("%s tid %u: walk %.1f us, flags 0x%x, %u python frames\n", kind__name(e->kind),
	       e->tid, (double)e->walk_ns / 1e3, st.flags, st.nframes);
	frames__text("python", py, npy);
	frames__text("spliced", spliced, nsp);
	return 0;
}

static int perf__open_cpu_clock(int cpu, int hz)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = (__u64)hz,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static int attach__sample(struct state *s)
{
	int ncpu = libbpf_num_possible_cpus();

	for (int cpu = 0; cpu < ncpu; cpu++) {
		int fd = perf__open_cpu_clock(cpu, s->opt.hz);

		if (fd < 0)
			continue;	/* an offline CPU */
		if (!bpf_program__attach_perf_event(s->skel->progs.pywalk_sample, fd)) {
			close(fd);
			return -1;
		}
	}
	return 0;
}

/*
 * The file offset of a function: libbpf 1.1 refuses a name that several
 * symbol versions share (clock_nanosleep@GLIBC_2.2.5 and @@GLIBC_2.17 are
 * one function), so the first match is taken here, converted with PT_LOAD.
 */
static long elf__func_offset(const char *path, const char *name)
{
	size_t len = strlen(name), nph = 0;
	Elf_Scn *scn = NULL;
	long off = -1;
	__u64 vaddr = 0;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE)
		goto out;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !vaddr && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data = elf_getdata(scn, NULL);

		if (!data || !gelf_getshdr(scn, &sh) || !sh.sh_entsize ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && !vaddr; i++) {
			const char *n;

			if (!gelf_getsym(data, (int)i, &sym) || !sym.st_value)
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strncmp(n, name, len) && (n[len] == '\0' || n[len] == '@'))
				vaddr = sym.st_value;
		}
	}
	for (size_t i = 0; elf && vaddr && !elf_getphdrnum(elf, &nph) && i < nph; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			off = (long)(vaddr - ph.p_vaddr + ph.p_offset);
			break;
		}
	}
	if (elf)
		elf_end(elf);
out:
	if (fd >= 0)
		close(fd);
	return off;
}

static int attach__uprobe(struct state *s)
{
	const char *colon = strrchr(s->opt.uprobe, ':');
	char file[256];
	long off;

	if (!colon || colon == s->opt.uprobe || (size_t)(colon - s->opt.uprobe) >= sizeof(file))
		return -1;
	snprintf(file, sizeof(file), "%.*s", (int)(colon - s->opt.uprobe), s->opt.uprobe);
	off = elf__func_offset(file, colon + 1);
	if (off < 0) {
		fprintf(stderr, "pywalk: no function %s in %s\n", colon + 1, file);
		return -1;
	}
	return bpf_program__attach_uprobe(s->skel->progs.pywalk_uprobe, false, s->opt.pid, file,
					  (size_t)off) ? 0 : -1;
}

static int u64__cmp(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static void summary__print(struct state *s)
{
	static const char *const flags[] = { "truncated", "no_tstate", "unsupported",
					     "read_error", "thread_list" };
	__u64 sum = 0, p50 = 0, p99 = 0, max = 0;

	if (s->nwalks) {
		qsort(s->walk_ns, (size_t)s->nwalks, sizeof(__u64), u64__cmp);
		for (long i = 0; i < s->nwalks; i++)
			sum += s->walk_ns[i];
		p50 = s->walk_ns[s->nwalks / 2];
		p99 = s->walk_ns[s->nwalks * 99 / 100];
		max = s->walk_ns[s->nwalks - 1];
	}
	if (s->opt.json) {
		printf("{\"summary\":true,\"version\":");
		json__string(stdout, s->version);
		printf(",\"detect\":%d,\"events\":%ld,\"with_python\":%ld,\"verified_insns\":%u,"
		       "\"walk_ns\":{\"avg\":%llu,\"p50\":%llu,\"p99\":%llu,\"max\":%llu},"
		       "\"flags\":{",
		       s->detect, s->events, s->with_python, s->verified_insns,
		       (unsigned long long)(s->nwalks ? sum / (__u64)s->nwalks : 0),
		       (unsigned long long)p50, (unsigned long long)p99, (unsigned long long)max);
		for (int b = 0; b < 5; b++)
			printf("%s\"%s\":%ld", b ? "," : "", flags[b], s->flag_counts[b]);
		puts("}}");
		return;
	}
	printf("\n%ld stacks, %ld with Python frames; walk p50 %.1f us, p99 %.1f us, max %.1f us;"
	       " verifier: %u insns\n", s->events, s->with_python, (double)p50 / 1e3,
	       (double)p99 / 1e3, (double)max / 1e3, s->verified_insns);
	for (int b = 0; b < 5; b++)
		if (s->flag_counts[b])
			printf("  %s: %ld\n", flags[b], s->flag_counts[b]);
}

static struct bpf_program *prog__for(struct state *s)
{
	switch (s->opt.kind) {
	case PYWALK_SWITCH:
		return s->skel->progs.pywalk_switch;
	case PYWALK_UPROBE:
		return s->skel->progs.pywalk_uprobe;
	default:
		return s->skel->progs.pywalk_sample;
	}
}

static int options__parse(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "thread-list", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	*o = (struct options){ .kind = PYWALK_SAMPLE, .seconds = 2, .hz = 997,
			       .uprobe = "/lib/x86_64-linux-gnu/libc.so.6:clock_nanosleep" };
	while ((c = getopt_long(argc, argv, "p:m:d:F:u:vh", longs, NULL)) != -1) {
		switch (c) {
		case 'p':
			o->pid = atoi(optarg);
			break;
		case 'm':
			o->kind = !strcmp(optarg, "switch") ? PYWALK_SWITCH :
				  !strcmp(optarg, "uprobe") ? PYWALK_UPROBE :
				  !strcmp(optarg, "sample") ? PYWALK_SAMPLE : 0;
			break;
		case 'd':
			o->seconds = atof(optarg);
			break;
		case 'F':
			o->hz = atoi(optarg);
			break;
		case 'u':
			o->uprobe = optarg;
			break;
		case 'j':
			o->json = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'L':
			o->thread_list = true;
			break;
		default:
			return -1;
		}
	}
	return o->pid > 0 && o->kind && o->hz > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info), key;
	struct ring_buffer *rb = NULL;
	struct lw_py_proc cfg;
	struct state *s;
	struct timespec t0, t;
	int err = 1;

	s = calloc(1, sizeof(*s));
	if (!s || options__parse(argc, argv, &s->opt)) {
		fputs(usage, stderr);
		return 2;
	}
	if (s->opt.verbose)
		libbpf_set_print(libbpf_print);
	s->procs = procs__new();
	s->detect = python__detect(procs__get(s->procs, s->opt.pid), &cfg, s->version,
				   sizeof(s->version));
	fprintf(stderr, "pywalk: pid %d: %s %s\n", s->opt.pid,
		s->detect < 0 ? "no Python" : "Python", s->version);
	if (s->detect < 0)
		goto cleanup;
	s->sym = symbolizer__new(s->procs);
	s->ps = python_syms__new();
	s->skel = pywalk_bpf__open();
	if (!s->sym || !s->ps || !s->skel)
		goto cleanup;
	s->skel->rodata->target_pid = (__u32)s->opt.pid;
	bpf_program__set_autoload(s->skel->progs.pywalk_sample, s->opt.kind == PYWALK_SAMPLE);
	bpf_program__set_autoload(s->skel->progs.pywalk_switch, s->opt.kind == PYWALK_SWITCH);
	bpf_program__set_autoload(s->skel->progs.pywalk_uprobe, s->opt.kind == PYWALK_UPROBE);
	if (pywalk_bpf__load(s->skel)) {
		fprintf(stderr, "pywalk: load failed (-v shows the verifier log)\n");
		goto cleanup;
	}
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog__for(s)), &info, &info_len))
		s->verified_insns = info.verified_insns;
	if (s->opt.thread_list)
		cfg.tls_inline = cfg.tls_blocks = 0;
	key = (__u32)s->opt.pid;
	if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.py_procs), &key, &cfg, BPF_ANY))
		goto cleanup;
	if (s->opt.kind == PYWALK_SAMPLE ? attach__sample(s) :
	    s->opt.kind == PYWALK_UPROBE ? attach__uprobe(s) : pywalk_bpf__attach(s->skel)) {
		fprintf(stderr, "pywalk: attach failed: %s\n", strerror(errno));
		goto cleanup;
	}
	rb = ring_buffer__new(bpf_map__fd(s->skel->maps.pw_events), on_event, s, NULL);
	if (!rb)
		goto cleanup;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		int n = ring_buffer__poll(rb, 100);

		if (n < 0 && n != -EINTR)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >=
		    s->opt.seconds)
			break;
	}
	ring_buffer__consume(rb);
	summary__print(s);
	err = 0;
cleanup:
	ring_buffer__free(rb);
	pywalk_bpf__destroy(s->skel);
	python_syms__free(s->ps);
	symbolizer__free(s->sym);
	procs__free(s->procs);
	free(s);
	return err;
}

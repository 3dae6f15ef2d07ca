// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The V8 pieces that need no traced process: the layout read from every node
 * binary the tests use (against the values measured on live heaps), the
 * metadata reader fed corrupted v8dbg_* values, the splice of JS frames into
 * native stacks, and markers where nothing can be named.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "proc/elf.h"
#include "proc/procs.h"
#include "runtimes/v8/v8.h"
#include "symbols/native.h"
#include "runtimes/v8/v8meta.h"
#include "testroot.h"

/* measured on live heaps of each (the prototype's tables): what v8meta must find */
static const struct {
	const char *path;	/* relative to the build directory when not absolute */
	uint32_t major;		/* V8's */
	uint32_t c_entry_fp, fast_c_fp, fast_c_pc, jsfunc_shared, sfi_name;
	int64_t tpoff;		/* 0: no TLS isolate (node 18: a pthread key) */
} nodes[] = {
	{ "/usr/bin/node", 11, 0x180, 0xe8, 0xf0, 24, 16, -80 },
	{ "nodes/18.20.8/bin/node", 10, 0x4538, 0x100, 0x108, 24, 16, 0 },
	{ "nodes/22.23.3/bin/node", 12, 0x110, 0xf0, 0xf8, 32, 16, -120 },
	{ "nodes/24.21.0/bin/node", 13, 0x140, 0x128, 0x120, 32, 24, -160 },
};

static char build_dir[PATH_MAX / 2];

static void node__path(int i, char *buf, size_t len)
{
	if (nodes[i].path[0] == '/')
		snprintf(buf, len, "%s", nodes[i].path);
	else
		snprintf(buf, len, "%.2000s/%s", build_dir, nodes[i].path);
}

static void test_meta_of_every_node(void)
{
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		struct elf_handle h;
		struct v8_meta m;
		char path[PATH_MAX];
		int err;

		node__path((int)i, path, sizeof(path));
		CHECK(!elf__open(&h, path), "%s: cannot open (tools/deps.sh test unpacks it)",
		      path);
		if (h.elf == NULL)
			continue;
		err = v8meta__load(&m, &h);
		elf__close(&h);
		CHECK(!err, "%s: %s", path, m.why);
		if (err)
			continue;
		CHECK(m.version[0] == nodes[i].major, "%s: V8 %u", path, m.version[0]);
		CHECK(m.fp_function == -16 && m.fp_context == -8 && m.fp_bytecode_array == -32 &&
		      m.fp_bytecode_offset == -40 && m.fp_entry_next == -64 &&
		      m.fp_exit_target == 24,
		      "%s: frame %d %d %d %d %d", path, m.fp_function, m.fp_context,
		      m.fp_bytecode_array, m.fp_bytecode_offset, m.fp_entry_next);
		CHECK(m.iso_c_entry_fp == nodes[i].c_entry_fp && m.root_bias == 128,
		      "%s: c_entry_fp +0x%x bias %d", path, m.iso_c_entry_fp, m.root_bias);
		CHECK(m.iso_fast_c_fp == nodes[i].fast_c_fp &&
		      m.iso_fast_c_pc == nodes[i].fast_c_pc,
		      "%s: fast C call +0x%x +0x%x", path, m.iso_fast_c_fp, m.iso_fast_c_pc);
		CHECK(m.jsfunc_shared == nodes[i].jsfunc_shared &&
		      m.sfi_name_or_scope_info == nodes[i].sfi_name, "%s: shared %u name %u", path,
		      m.jsfunc_shared, m.sfi_name_or_scope_info);
		if (nodes[i].tpoff)
			CHECK(m.has_tls_isolate && m.tls_isolate_tpoff == nodes[i].tpoff,
			      "%s: tpoff %lld", path, (long long)m.tls_isolate_tpoff);
		else
			CHECK(!m.has_tls_isolate && m.isolate_key_sym, "%s: isolate key", path);
		CHECK(m.bytecode_count > 190 && m.blob_size > (1u << 20), "%s: %u bytecodes", path,
		      m.bytecode_count);
		v8meta__free(&m);
	}
}

struct dbg_offsets {
	const struct elf_handle *h;
	uint64_t *off;
	size_t n, cap;
};

static int dbg__offset(const struct elf_symbol *s, void *ctx)
{
	struct dbg_offsets *d = ctx;
	uint64_t off;

	if (strncmp(s->name, "v8dbg_", 6) || s->size != 4 || d->n == d->cap ||
	    elf__vaddr_to_offset(d->h, s->value, &off))
		return 0;
	d->off[d->n++] = off;
	return 0;
}

/*
 * The binary is the target's: v8dbg_* values set at random (a few at a time,
 * then many) must give a refusal or offsets inside the bounds the walker and
 * namer rely on, never a crash.
 */
static void test_meta_fuzzed(void)
{
	uint64_t offs[1024];
	struct dbg_offsets d = { .off = offs, .cap = 1024 };
	struct elf_handle h;
	struct stat st;
	int fd = open("/usr/bin/node", O_RDONLY | O_CLOEXEC), refused = 0;
	uint8_t *img;

	CHECK(fd >= 0 && !fstat(fd, &st), "/usr/bin/node");
	if (fd < 0)
		return;
	img = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(img != MAP_FAILED, "mmap");
	if (img == MAP_FAILED)
		return;
	CHECK(!elf__open_mem(&h, img, (size_t)st.st_size), "elf");
	d.h = &h;
	elf__symbols(&h, SHT_DYNSYM, dbg__offset, &d);
	elf__close(&h);
	CHECK(d.n > 400, "%zu v8dbg_ values in the file", d.n);
	srandom(12345);
	for (int round = 0; round < 40 && d.n; round++) {
		int32_t saved[64];
		size_t which[64], k = round < 30 ? 4 : 64;
		struct v8_meta m;

		for (size_t j = 0; j < k; j++) {
			int32_t v = (int32_t)random() * (random() & 1 ? 1 : -1);

			which[j] = (size_t)random() % d.n;
			memcpy(&saved[j], img + offs[which[j]], 4);
			if (random() & 1)
				v %= 64;	/* small values: plausible offsets and types */
			memcpy(img + offs[which[j]], &v, 4);
		}
		if (elf__open_mem(&h, img, (size_t)st.st_size))
			continue;
		if (v8meta__load(&m, &h)) {
			refused++;
		} else {
			CHECK(m.fp_function >= -4096 && m.fp_function <= 4096 &&
			      m.jsfunc_shared + 8 <= LW_V8_OBJ_READ &&
			      m.sfi_name_or_scope_info + 8 <= LW_V8_OBJ_READ &&
			      m.sfi_length + 8 <= LW_V8_OBJ_READ && m.map_instance_type <= 4096,
			      "round %d: out of bounds", round);
			v8meta__free(&m);
		}
		elf__close(&h);
		for (size_t j = k; j-- > 0;)
			memcpy(img + offs[which[j]], &saved[j], 4);
	}
	CHECK(refused > 0, "no corrupted binary refused");
	munmap(img, (size_t)st.st_size);
}

static struct frame frame(enum frame_kind kind, const char *func, uint64_t addr)
{
	struct frame f = { .kind = kind, .addr = addr };

	snprintf(f.func, sizeof(f.func), "%s", func);
	if (kind == FRAME_JS)
		snprintf(f.file, sizeof(f.file), "/app/server.js");
	return f;
}

static void check_funcs(const struct frame *out, int n, const char *const *want, int nwant,
			const char *what)
{
	bool same = n == nwant;

	for (int i = 0; same && i < n; i++)
		same = !strcmp(out[i].func, want[i]);
	CHECK(same, "%s: %d frames, first %s", what, n, n ? out[0].func : "-");
}

static void test_splice(void)
{
	/* native addrs of non-leaf frames are return address - 1, as symbols__stack makes them */
	struct frame native[] = {
		frame(FRAME_KERNEL, "schedule", 1),
		frame(FRAME_NATIVE, "read", 0x10),
		frame(FRAME_NATIVE, "node::fs::Read", 0x20),
		frame(FRAME_NATIVE, "Builtins_CallApiCallback", 0x30),
		frame(FRAME_JIT, "", 0x1fff),
		frame(FRAME_NATIVE, "Builtins_InterpreterEntryTrampoline", 0x2fff),
		frame(FRAME_NATIVE, "uv_run", 0x40),
		frame(FRAME_NATIVE, "main", 0x50),
	};
	struct frame js[] = {
		frame(FRAME_JS, "readSync", 0x2000),
		frame(FRAME_JS, "renderReport", 0x3000),	/* inlined into handle */
		frame(FRAME_JS, "handle", 0x3000),
		frame(FRAME_JS, "emit", 0x4000),	/* the native walk never got there */
	};
	static const char *const want[] = {
		"schedule", "read", "node::fs::Read", "readSync", "renderReport", "handle", "emit",
		"uv_run", "main",
	};
	struct frame garbage[] = {
		frame(FRAME_NATIVE, "sha256_block_data_order_avx2", 0x10),
		frame(FRAME_NATIVE, "", 0x1234),
		frame(FRAME_NATIVE, "looks_named", 0x5678),
	};
	static const char *const want_garbage[] = { "sha256_block_data_order_avx2", "readSync",
						    "renderReport", "handle", "emit" };
	struct frame marker = frame(FRAME_JS, "[js: no V8 metadata: no v8dbg_* symbols]", 0);
	static const char *const want_marker[] = { "schedule", "read", "node::fs::Read",
						   "Builtins_CallApiCallback", "",
						   "Builtins_InterpreterEntryTrampoline", "uv_run",
						   "main",
						   "[js: no V8 metadata: no v8dbg_* symbols]" };
	struct frame out[16];
	int n;

	n = v8__splice(native, 8, js, 4, out, 16);
	check_funcs(out, n, want, 9, "JS frames where the native walk met them");
	n = v8__splice(garbage, 3, js, 4, out, 16);
	check_funcs(out, n, want_garbage, 5, "native walk lost in OpenSSL's assembly");
	n = v8__splice(native, 8, &marker, 1, out, 16);
	check_funcs(out, n, want_marker, 9, "a marker replaces nothing");
	n = v8__splice(native, 8, js, 4, out, 4);
	CHECK(n == 4, "bounded by max: %d", n);
	n = v8__splice(NULL, 0, js, 4, out, 16);
	CHECK(n == 4 && !strcmp(out[0].func, "readSync"), "no native frames: %d", n);
	CHECK(v8__splice(native, 8, js, 4, out, 0) == 0, "max 0");
}

static void test_markers(void)
{
	struct procs *procs = procs__new();
	struct v8_syms *vs = v8_syms__new();
	struct lw_v8_stack st = { .flags = LW_V8_S_UNSUPPORTED };
	struct lw_v8_proc cfg;
	struct frame out[4];
	int n;

	CHECK(procs && vs, "new");
	/* this test is no node process: nothing to walk, and a stack of it is a marker */
	CHECK(v8__detect(vs, procs__get(procs, getpid()), &cfg, NULL, 0) == -1, "not node");
	n = v8__symbolize(vs, procs__get(procs, getpid()), &st, out, 4);
	CHECK(n == 1 && out[0].kind == FRAME_JS && !strncmp(out[0].func, "[js: no V8 metadata", 19),
	      "%d %s", n, out[0].func);
	st.flags = 0;
	st.nframes = 2;
	st.frames[0].func = 0x11;
	st.frames[0].flags = LW_V8_F_HEADS;
	n = v8__symbolize(vs, procs__get(procs, 0x7ffffff0), &st, out, 4);
	CHECK(n == 1 && !strncmp(out[0].func, "[js: no V8 metadata", 19), "gone: %d", n);
	v8__forget_pid(vs, getpid());
	v8_syms__free(vs);
	procs__free(procs);
}

#define LIBNODE "/usr/lib/x86_64-linux-gnu/libnode.so.137"
#define EXPORTS_MAX 20000

struct exports {
	uint64_t value[EXPORTS_MAX], size[EXPORTS_MAX];
	size_t n;
};

static int export__note(const struct elf_symbol *s, void *arg)
{
	struct exports *e = arg;

	if (s->type == STT_FUNC && s->size >= 2 && e->n < EXPORTS_MAX) {
		e->value[e->n] = s->value;
		e->size[e->n++] = s->size;
	}
	return 0;
}

/* Where pid mapped path's file offset 0: the library's load bias (its first vaddr is 0). */
static uint64_t mapping__base(int pid, const char *suffix)
{
	char path[64], line[512];
	unsigned long long lo = 0, off;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");

		line[n] = '\0';
		if (n > strlen(suffix) && !strcmp(line + n - strlen(suffix), suffix) &&
		    sscanf(line, "%llx-%*x %*s %llx", &lo, &off) == 2 && off == 0)
			break;
		lo = 0;
	}
	if (f)
		fclose(f);
	return lo;
}

/*
 * Debian forky's node 24: a 26 KB /usr/bin/node over libnode.so.137, whose
 * Builtins_* and blob symbols are stripped. Its V8 layout comes from the
 * library's .dynsym, the builtins from the globals the process keeps them
 * in, and every function it exports is named, none "[unknown]".
 */
static void test_libnode(void)
{
	char *argv[] = { "node", "-e", "console.log(1); setInterval(() => {}, 1000)", NULL };
	char root[PATH_MAX], path[PATH_MAX + 64], desc[160];
	static struct exports e;
	struct procs *procs = procs__new();
	struct v8_syms *vs = v8_syms__new();
	struct symbolizer *sym = symbolizer__new(procs);
	struct lw_v8_proc cfg;
	struct elf_handle h;
	struct v8_meta m;
	size_t unnamed = 0, first = 0;
	uint64_t base;
	pid_t pid;
	int r;

	if (!testroot__get("forky", root, sizeof(root))) {
		CHECK(false, "tools/testroot.sh forky failed");
		goto out;
	}
	snprintf(path, sizeof(path), "%s%s", root, LIBNODE);
	CHECK(!elf__open(&h, path), "%s", path);
	if (!h.elf)
		goto out;
	r = v8meta__load(&m, &h);
	e.n = 0;
	elf__symbols(&h, SHT_DYNSYM, export__note, &e);
	elf__close(&h);
	CHECK(!r && m.version[0] == 13 && !m.blob_code && m.blob_code_at[0] && m.blob_size_at[0],
	      "%d %s: V8 %u blob %#llx at %#llx", r, m.why, m.version[0],
	      (unsigned long long)m.blob_code, (unsigned long long)m.blob_code_at[0]);
	/*
	 * JS callers of C++: the isolate's fields found by the CEntry and fast C
	 * call patterns over the whole code, the same as npm's node 24 (V8 13.6)
	 * has by symbol; the isolate through the GOT's tls_index.
	 */
	CHECK(!r && m.iso_c_entry_fp == 0x140 && m.root_bias == 128 && m.fp_entry_next == -64 &&
	      m.iso_fast_c_fp == 0x128 && m.iso_fast_c_pc == 0x120 && m.tls_index_at &&
	      !m.has_tls_isolate,
	      "libnode: c_entry_fp +%#x bias %d entry %d fast C +%#x +%#x tls_index at %#llx",
	      m.iso_c_entry_fp, m.root_bias, m.fp_entry_next, m.iso_fast_c_fp, m.iso_fast_c_pc,
	      (unsigned long long)m.tls_index_at);
	if (!r)
		v8meta__free(&m);
	CHECK(e.n > 5000, "%zu exported functions", e.n);

	pid = testroot__spawn(root, argv);
	CHECK(pid > 0, "node in %s", root);
	if (pid <= 0)
		goto out;
	r = v8__detect(vs, procs__get(procs, pid), &cfg, desc, sizeof(desc));
	base = mapping__base(pid, "/libnode.so.137");
	CHECK(r == 0 && !strncmp(desc, "V8 13.", 6) && base && cfg.blob_lo > base &&
	      cfg.blob_hi > cfg.blob_lo && cfg.blob_hi - cfg.blob_lo < (64u << 20),
	      "%d %s: blob %#llx-%#llx", r, desc, (unsigned long long)cfg.blob_lo,
	      (unsigned long long)cfg.blob_hi);
	/* the loader's module id for libnode's TLS, and the isolate's place in its block */
	CHECK(r == 0 && (cfg.flags & LW_V8_P_TLS_DTV) && cfg.tls_module >= 1 &&
	      cfg.tls_isolate >= 0 && cfg.tls_isolate < 0x1d0, "flags %#x module %u offset %lld",
	      cfg.flags, cfg.tls_module, (long long)cfg.tls_isolate);
	/* every exported function, at its middle, by the native symbolizer */
	for (size_t i = 0; base && i < e.n; i += 64) {
		uint64_t ips[64];
		struct frame out[64];
		int n = (int)(e.n - i < 64 ? e.n - i : 64), got;

		for (int k = 0; k < n; k++)
			ips[k] = base + e.value[i + k] + e.size[i + k] / 2;
		got = symbolizer__symbolize(sym, pid, ips, n, false, out, 64);
		for (int k = 0; k < got; k++) {
			if (!out[k].func[0] && !unnamed++)
				first = i + k;
		}
	}
	CHECK(unnamed == 0, "%zu of %zu exported functions unnamed, first at %#llx", unnamed,
	      e.n, (unsigned long long)e.value[first]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
out:
	symbolizer__free(sym);
	v8_syms__free(vs);
	procs__free(procs);
}

int main(int argc, char **argv)
{
	char self[PATH_MAX];

	(void)argc;
	/* build/tests/test_v8: the build directory is one up */
	if (!realpath(argv[0], self))
		snprintf(self, sizeof(self), "./x");
	snprintf(build_dir, sizeof(build_dir), "%.2000s/..", dirname(self));
	test_meta_of_every_node();
	test_meta_fuzzed();
	test_splice();
	test_markers();
	test_libnode();
	return check__report();
}

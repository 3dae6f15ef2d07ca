// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for the pure parts of Python support (userspace/runtimes/python/pyline.c,
 * userspace/runtimes/python/python_splice.c) and the parts that only read /proc and ELF
 * (python__detect, python__symbolize on bad input). Needs root and
 * /usr/bin/python3 (Debian's 3.11); pyenv 2.7 is used when present.
 * The BPF walker itself is proven by tools/pywalk and tests/e2e/test_python.py.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proc/procs.h"
#include "runtimes/python/pyline.h"
#include "runtimes/python/python.h"

#include "check.h"
#include "testroot.h"

static struct procs *procs;

static size_t hex__decode(const char *hex, uint8_t *out)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2)
		sscanf(hex, "%2hhx", &out[n++]);
	return n;
}

/*
 * One function's table in three formats and CPython's own answer per code
 * unit (PyCode_Addr2Line), from:
 *	def f(a):
 *	    x = a + 1
 *	    if x:
 *	        y = [i
 *	             for i in range(3)]
 *	        return y
 *	    return {
 *	        "k": x,
 *	    }
 */
static void test_line_tables(void)
{
	static const struct {
		enum pyline_format fmt;
		const char *hex;
		int lines[48];
		int n;
	} cases[] = {
		{ PYLINE_LNOTAB, "000108010401060106ff06020402020002ff",	/* 3.8 */
		  { 2, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 4, 4, 4, 6, 6, 8, 8, 7, 7 }, 21 },
		{ PYLINE_LINETABLE_310, "080104010601060106ff0402040204ff",	/* 3.10 */
		  { 2, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5, 5, 4, 4, 4, 6, 6, 8, 8, 7, 7 }, 21 },
		{ PYLINE_LOCATIONS,						/* 3.12 */
		  "8000d80809884189058041d90708e4161b98419368f603010d20d81112f203000e0ff000010d2088"
		  "01f000010d20e00f108808e0080b8851f003020c06f000020506f9f207010d20",
		  { 1, 2, 2, 2, 2, 2, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4,
		    5, 4, 4, 4, 4, 4, 4, 6, 6, 8, 8, 7, 7, -1, -1, 4, 4, 4 }, 43 },
	};
	uint8_t tab[256];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		size_t len = hex__decode(cases[c].hex, tab);

		for (int u = 0; u < cases[c].n; u++) {
			int64_t pos = cases[c].fmt == PYLINE_LOCATIONS ? u : 2 * u;
			int got = pyline__find(cases[c].fmt, tab, len, 1, pos);

			CHECK(got == cases[c].lines[u], "format %d unit %d: %d, want %d",
			      cases[c].fmt, u, got, cases[c].lines[u]);
		}
		/* not started yet: the first line, as PyCode_Addr2Line says */
		CHECK(pyline__find(cases[c].fmt, tab, len, 1, -1) == 1, "format %d", cases[c].fmt);
	}
	CHECK(pyline__find(PYLINE_LOCATIONS, NULL, 0, 7, 3) == -1, "no table");
}

/* Tables from the target are untrusted: random bytes end in some line, never a crash. */
static void test_line_tables_garbage(void)
{
	uint8_t tab[64];

	srand(1);
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand() % (int)sizeof(tab));

		for (size_t j = 0; j < len; j++)
			tab[j] = (uint8_t)rand();
		pyline__find((enum pyline_format)(i % 3), tab, len, rand() % 1000, rand() % 500);
	}
	/* a varint that never ends must stop at the table's end */
	memset(tab, 0xff, sizeof(tab));
	tab[0] = 0x80 | 14 << 3;
	pyline__find(PYLINE_LOCATIONS, tab, sizeof(tab), 1, 1000);
	CHECK(1, "garbage tables");
}

static struct frame native(const char *func, const char *module)
{
	struct frame f = { .kind = FRAME_NATIVE };

	snprintf(f.func, sizeof(f.func), "%s", func);
	snprintf(f.module, sizeof(f.module), "%s", module);
	if (!strcmp(module, "[kernel]"))
		f.kind = FRAME_KERNEL;
	return f;
}

static struct frame py(const char *func, bool entry)
{
	struct frame f = { .kind = FRAME_PYTHON, .line = 1 };

	snprintf(f.func, sizeof(f.func), "%s", func);
	snprintf(f.file, sizeof(f.file), "app.py");
	f.offset = entry ? PYTHON_FRAME_ENTRY : 0;
	return f;
}

/* "a b c": the spliced stack's function names */
static const char *names(const struct frame *f, int n)
{
	static char buf[1024];
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && used < sizeof(buf); i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? " " : "",
					 f[i].func[0] ? f[i].func : "?");
	return buf;
}

static void test_splice_interleaves_eval_frames(void)
{
	/* json.dumps: C encoder under two eval calls, frame pointers all the way */
	struct frame nat[] = {
		native("do_syscall_64", "[kernel]"),
		native("memcpy", "libc.so.6"),
		native("encoder_listencode_obj", "_json.cpython-311-x86_64-linux-gnu.so"),
		native("_PyObject_MakeTpCall", "libpython3.11.so.1.0"),
		native("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0"),
		native("_PyFunction_Vectorcall", "libpython3.11.so.1.0"),
		native("list_sort_impl", "libpython3.11.so.1.0"),
		native("_PyEval_EvalFrameDefault", "libpython3.11.so.1.0"),
		native("PyEval_EvalCode", "libpython3.11.so.1.0"),
		native("Py_RunMain", "libpython3.11.so.1.0"),
		native("main", "python3.11"),
	};
	struct frame pyf[] = {
		py("JSONEncoder.iterencode", false), py("dumps", false), py("key", true),
		py("handler", false), py("<module>", true),
	};
	struct frame out[32];
	int n = python__splice(nat, 11, pyf, 5, out, 32);

	CHECK(!strcmp(names(out, n), "do_syscall_64 memcpy encoder_listencode_obj "
		      "JSONEncoder.iterencode dumps key list_sort_impl handler <module> "
		      "Py_RunMain main"), "%s", names(out, n));
}

static void test_splice_outer_groups_follow_the_last_eval(void)
{
	/* the native walk stopped after one eval frame: the outer calls still show */
	struct frame nat[] = {
		native("_PyEval_EvalFrameDefault", "libpython3.12.so.1.0"),
		native("", ""),
		native("", ""),
	};
	struct frame pyf[] = { py("spin", false), py("busy", true), py("run", true),
			       py("<module>", true) };
	struct frame out[16];
	int n = python__splice(nat, 3, pyf, 4, out, 16);

	CHECK(!strcmp(names(out, n), "spin busy run <module>"), "%s", names(out, n));
}

static void test_splice_without_frame_pointers(void)
{
	/* Debian's python3: libc leaf, then garbage; the Python frames stand alone */
	struct frame nat[] = {
		native("__schedule", "[kernel]"),
		native("clock_nanosleep", "libc.so.6"),
		native("", "python3.11"),
		native("PyInit__sre", "python3.11"),
		native("", "[anon]"),
	};
	struct frame pyf[] = { py("slow_helper", false), py("handle", false),
			       py("_run_once", true) };
	struct frame out[16];
	int n = python__splice(nat, 5, pyf, 3, out, 16);

	CHECK(!strcmp(names(out, n), "__schedule clock_nanosleep slow_helper handle _run_once"),
	      "%s", names(out, n));

	/* a leaf inside the interpreter is right (it is the ip): kept, unless glue */
	struct frame leaf[] = { native("_PyTime_AsSecondsDouble", "libpython3.12.so.1.0"),
				native("main", "python3.12") };
	n = python__splice(leaf, 2, pyf, 3, out, 16);
	CHECK(!strcmp(names(out, n), "_PyTime_AsSecondsDouble slow_helper handle _run_once"),
	      "%s", names(out, n));
	leaf[0] = native("cfunction_vectorcall_NOARGS", "libpython3.12.so.1.0");
	n = python__splice(leaf, 2, pyf, 3, out, 16);
	CHECK(!strcmp(names(out, n), "slow_helper handle _run_once"), "%s", names(out, n));
}

static void test_splice_edges(void)
{
	struct frame nat[] = { native("epoll_wait", "libc.so.6"), native("main", "node") };
	struct frame pyf[] = { py("a", false), py("b", true) };
	struct frame out[4];
	int n;

	/* no Python frames: the native stack as it is */
	n = python__splice(nat, 2, NULL, 0, out, 4);
	CHECK(n == 2 && !strcmp(names(out, n), "epoll_wait main"), "%s", names(out, n));
	/* no room: bounded, never past max */
	n = python__splice(nat, 2, pyf, 2, out, 2);
	CHECK(n == 2, "%d", n);
	n = python__splice(nat, 2, pyf, 2, out, 0);
	CHECK(n == 0, "%d", n);
	/* only Python frames */
	n = python__splice(NULL, 0, pyf, 2, out, 4);
	CHECK(!strcmp(names(out, n), "a b"), "%s", names(out, n));
	/* a marker alone replaces nothing: the native stack stays, the marker at its root */
	struct frame eval[] = { native("PyEval_EvalFrameEx", "libpython2.7.so.1.0"),
				native("main", "python2.7") };
	struct frame mark = { .kind = FRAME_PYTHON };

	snprintf(mark.func, sizeof(mark.func), "[python: unsupported 2.7]");
	n = python__splice(eval, 2, &mark, 1, out, 4);
	CHECK(!strcmp(names(out, n), "PyEval_EvalFrameEx main [python: unsupported 2.7]"), "%s",
	      names(out, n));
}

static void test_symbolize_markers_and_bad_memory(void)
{
	struct python_syms *ps = python_syms__new();
	struct lw_py_stack st = { .version = 0x0207, .flags = LW_PY_STACK_UNSUPPORTED };
	struct frame out[LW_PY_MAX_DEPTH + 1];
	int n;

	CHECK(ps != NULL, "python_syms__new");
	n = python__symbolize(ps, procs__get(procs, getpid()), &st, out, LW_PY_MAX_DEPTH + 1);
	CHECK(n == 1 && !strcmp(out[0].func, "[python: unsupported 2.7]") &&
	      out[0].kind == FRAME_PYTHON, "%d %s", n, out[0].func);

	/* garbage code addresses in a live process and in a gone one */
	memset(&st, 0, sizeof(st));
	st.version = 0x030b;
	st.nframes = 3;
	st.frames[0].code = 0x10;
	st.frames[1].code = (uint64_t)(uintptr_t)&st;	/* readable, but no code object */
	st.frames[2].code = ~0ull;
	n = python__symbolize(ps, procs__get(procs, getpid()), &st, out, LW_PY_MAX_DEPTH + 1);
	CHECK(n == 3, "%d", n);
	for (int i = 0; i < n; i++)
		CHECK(!strcmp(out[i].func, "[python: unreadable]"), "%d: %s", i, out[i].func);
	n = python__symbolize(ps, procs__get(procs, 0x7ffffff0), &st, out, LW_PY_MAX_DEPTH + 1);
	CHECK(n == 3 && !strcmp(out[0].func, "[python: unreadable]"), "%d", n);
	/* shims are no frames; a truncated stack says so */
	st.shims = 1u << 1;
	st.flags = LW_PY_STACK_TRUNCATED;
	n = python__symbolize(ps, procs__get(procs, getpid()), &st, out, LW_PY_MAX_DEPTH + 1);
	CHECK(n == 3 && !strcmp(out[2].func, "[python: truncated]"), "%d %s", n, out[2].func);
	python__forget_pid(ps, getpid());
	python_syms__free(ps);
}

/* A child that stays put until killed; its pid. */
static pid_t spawn(const char *path, char *const argv[])
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (access(path, X_OK) || pipe(pipefd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		execv(path, argv);
		_exit(127);
	}
	close(pipefd[1]);
	/* it is up once it printed */
	if (read(pipefd[0], &c, 1) != 1) {
		close(pipefd[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(pipefd[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A symbol's value straight from the file, as a check independent of python.c. */
static uint64_t dynsym__value(const char *path, const char *name)
{
	uint64_t value = 0;
	Elf_Scn *scn = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !value && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			s = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (s && !strcmp(s, name)) {
				value = sym.st_value;
				break;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return value;
}

static void test_detect(void)
{
	char *deb[] = { "python3", "-c", "import time; print(1, flush=True); time.sleep(60)",
			NULL };
	char *old[] = { "python2.7", "-c",
			"import sys, time; sys.stdout.write('1'); sys.stdout.flush(); "
			"time.sleep(60)",
			NULL };
	char py27[512], version[64];
	struct lw_py_proc cfg;
	pid_t pid;
	int r;

	r = python__detect(procs__get(procs, getpid()), &cfg, version, sizeof(version));
	CHECK(r == -1, "this test is no Python: %d", r);
	r = python__detect(procs__get(procs, 0x7ffffff0), &cfg, version, sizeof(version));
	CHECK(r == -1, "no such pid: %d", r);

	pid = spawn("/usr/bin/python3", deb);
	CHECK(pid > 0, "spawn /usr/bin/python3");
	if (pid > 0) {
		r = python__detect(procs__get(procs, pid), &cfg, version, sizeof(version));
		/* non-PIE and stripped: _PyRuntime's .dynsym value is its address */
		CHECK(r == 0 && !strncmp(version, "3.11.", 5) && cfg.version == 0x030b &&
		      cfg.runtime == dynsym__value("/usr/bin/python3.11", "_PyRuntime") &&
		      cfg.runtime && cfg.tls_inline == 0x310 && !(cfg.flags & LW_PY_F_UNSUPPORTED),
		      "%d %s runtime %#llx", r, version, (unsigned long long)cfg.runtime);
		reap(pid);
	}
	snprintf(py27, sizeof(py27), "%s/.pyenv/versions/2.7.18/bin/python2.7",
		 getenv("HOME") ? getenv("HOME") : "/root");
	pid = spawn(py27, old);
	if (pid > 0) {
		r = python__detect(procs__get(procs, pid), &cfg, version, sizeof(version));
		CHECK(r == PYTHON_UNSUPPORTED && !strcmp(version, "2.7") &&
		      (cfg.flags & LW_PY_F_UNSUPPORTED) && cfg.version == 0x0207,
		      "%d %s", r, version);
		reap(pid);
	}
}

/* the walker's numbers, without what is the process's own (where _PyRuntime is) */
static bool layout__same(const struct lw_py_proc *a, const struct lw_py_proc *b)
{
	struct lw_py_proc x = *a, y = *b;

	x.runtime = y.runtime = 0;
	x.tls_inline = y.tls_inline = x.tls_blocks = y.tls_blocks = 0;
	/* the process's GIL: found in the process (checked apart), not in the table */
	x.gil = y.gil = 0;
	x.gil_size = y.gil_size = 0;
	x.gil_holder = y.gil_holder = x.gil_locked = y.gil_locked = 0;
	return !memcmp(&x, &y, sizeof(x));
}

/* Write len bytes into pid's memory at addr (root: /proc/PID/mem is writable). */
static bool mem__poke(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	char path[64];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = pwrite(fd, buf, len, (off_t)addr) == (ssize_t)len;
	close(fd);
	return ok;
}

/*
 * Debug offsets a walker cannot use (CPython itself never reads them, so
 * the live 3.13.0 is changed in place): the process is Python, flagged
 * unsupported, and its stacks' one marker frame says why.
 */
static void check__unusable_offsets(pid_t pid, uint64_t runtime)
{
	struct python_syms *ps = python_syms__new();
	struct lw_py_stack st = { .version = 0x030d, .flags = LW_PY_STACK_UNSUPPORTED };
	struct frame out[2];
	struct lw_py_proc cfg;
	uint64_t one = 1, zero = 0, far = 0x100000;
	char version[64];
	int r, n;

	CHECK(mem__poke(pid, runtime + 0x10, &one, 8), "poke free_threaded");
	procs__forget(procs, pid);
	r = python__detect(procs__get(procs, pid), &cfg, version, sizeof(version));
	CHECK(r == PYTHON_UNSUPPORTED && (cfg.flags & LW_PY_F_UNSUPPORTED) &&
	      !strcmp(version, "3.13.0 (free-threaded)"), "%d %s", r, version);
	n = python__symbolize(ps, procs__get(procs, pid), &st, out, 2);
	CHECK(n == 1 && !strcmp(out[0].func, "[python: unsupported 3.13: free-threaded]"),
	      "%d %s", n, out[0].func);

	/* thread_state.current_frame far outside the tstate */
	CHECK(mem__poke(pid, runtime + 0x10, &zero, 8) && mem__poke(pid, runtime + 0xb8, &far, 8),
	      "poke current_frame");
	python__forget_pid(ps, pid);
	r = python__detect(procs__get(procs, pid), &cfg, version, sizeof(version));
	CHECK(r == PYTHON_UNSUPPORTED && !strcmp(version, "3.13.0 (debug offsets out of range)"),
	      "%d %s", r, version);
	n = python__symbolize(ps, procs__get(procs, pid), &st, out, 2);
	CHECK(n == 1 && !strcmp(out[0].func,
				"[python: unsupported 3.13: debug offsets out of range]"),
	      "%d %s", n, out[0].func);
	python_syms__free(ps);
}

/*
 * 3.13 publishes its offsets: read from the target (pyenv 3.13.0, Debian
 * trixie's 3.13 in a chroot) they are the numbers the measured table holds.
 */
static void test_debug_offsets_equal_the_table(void)
{
	char *argv[] = { "python3.13", "-c", "import time; print(1, flush=True); time.sleep(60)",
			 NULL };
	char *root_argv[] = { "python3.13", "-c",
			      "import time; print(1, flush=True); time.sleep(60)", NULL };
	char path[PATH_MAX], root[PATH_MAX], version[64];
	struct lw_py_proc cfg, table;
	pid_t pid;
	int r;

	CHECK(python__table(0x030d, &table) == 0 && table.version == 0x030d, "3.13 in the table");
	snprintf(path, sizeof(path), "%s/.pyenv/versions/3.13.0/bin/python3.13",
		 getenv("HOME") ? getenv("HOME") : "/root");
	pid = spawn(path, argv);
	CHECK(pid > 0, "spawn %s", path);
	if (pid > 0) {
		r = python__detect(procs__get(procs, pid), &cfg, version, sizeof(version));
		CHECK(r == 0 && !strcmp(version, "3.13.0") && layout__same(&cfg, &table),
		      "%d %s: interp_threads %#x tstate_frame %#x frame_pos %#x", r, version,
		      cfg.interp_threads, cfg.tstate_frame, cfg.frame_pos);
		/* struct _gil_runtime_state (pycore_gil.h): last_holder at 8, locked at 16 */
		CHECK(r == 0 && cfg.gil && cfg.gil_holder == 0x08 && cfg.gil_locked == 0x10,
		      "the GIL from the debug offsets: %#llx holder %#x locked %#x",
		      (unsigned long long)cfg.gil, cfg.gil_holder, cfg.gil_locked);
		if (r == 0)
			check__unusable_offsets(pid, cfg.runtime);
		reap(pid);
	}
	if (!testroot__get("trixie", root, sizeof(root))) {
		CHECK(false, "tools/testroot.sh trixie failed");
		return;
	}
	pid = testroot__spawn(root, root_argv);
	CHECK(pid > 0, "spawn python3.13 in %s", root);
	if (pid > 0) {
		r = python__detect(procs__get(procs, pid), &cfg, version, sizeof(version));
		CHECK(r == 0 && !strncmp(version, "3.13.", 5) && layout__same(&cfg, &table),
		      "%d %s: interp_threads %#x tstate_frame %#x frame_pos %#x", r, version,
		      cfg.interp_threads, cfg.tstate_frame, cfg.frame_pos);
		reap(pid);
	}
}

int main(void)
{
	procs = procs__new();
	test_line_tables();
	test_line_tables_garbage();
	test_splice_interleaves_eval_frames();
	test_splice_outer_groups_follow_the_last_eval();
	test_splice_without_frame_pointers();
	test_splice_edges();
	test_symbolize_markers_and_bad_memory();
	test_detect();
	test_debug_offsets_equal_the_table();
	procs__free(procs);
	return check__report();
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unit test for userspace/symbols/native.c, through the process table of
 * proc/. Needs root (map_files, other pids' /proc/PID/root),
 * /usr/bin/python3 and /usr/bin/node (the test packages).
 */
#define _GNU_SOURCE
#include "proc/procs.h"
#include "symbols/native.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static struct procs *procs;

/* A fresh view of pid: the symbolizer's files and the process table's maps. */
static void forget(struct symbolizer *s, int pid)
{
	symbolizer__forget_pid(s, pid);
	procs__forget(procs, pid);
}

/* rotating buffers so one printf can show several frames */
static const char *frame__str(const struct frame *f)
{
	static char bufs[4][512];
	static unsigned int next;
	char *buf = bufs[next++ % 4];

	frame__format(f, buf, 512);
	return buf;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* symbols of this very binary; noinline so they exist as real functions */

__attribute__((noinline)) int test_target_alpha(int x)
{
	__asm__ volatile("" : : : "memory");
	return x * 3 + 1;
}

__attribute__((noinline)) int test_target_beta(int x)
{
	__asm__ volatile("" : : : "memory");
	return x ^ 0x5a;
}

__attribute__((noinline)) uint64_t test_capture_return(void)
{
	__asm__ volatile("" : : : "memory");
	return (uint64_t)(uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
}

__attribute__((noinline)) uint64_t test_caller_gamma(void)
{
	volatile uint64_t ra = test_capture_return();

	/* work after the call keeps it from being a tail call */
	__asm__ volatile("" : : : "memory");
	return ra;
}

static const char *self_basename(void)
{
	static char buf[PATH_MAX];
	ssize_t r = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	char *slash;

	if (r <= 0)
		return "";
	buf[r] = '\0';
	slash = strrchr(buf, '/');
	return slash ? slash + 1 : buf;
}

/* ------------------------------------------------------------------ */
/* independent ELF helpers, so the test does not trust the code it tests */

/* st_value of name in .symtab or .dynsym, and the PT_LOAD holding it */
static bool elf_find_symbol(const char *path, const char *name, uint64_t *value,
			    uint64_t *seg_vaddr, uint64_t *seg_offset)
{
	Elf_Scn *scn = NULL;
	bool found = false;
	size_t i, nph, cnt;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	Elf_Data *d;
	Elf *elf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		close(fd);
		return false;
	}
	while (!found && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !sh.sh_entsize)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < cnt; i++) {
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				*value = sym.st_value;
				found = true;
				break;
			}
		}
	}
	if (found) {
		found = false;
		if (elf_getphdrnum(elf, &nph) == 0) {
			for (i = 0; i < nph; i++) {
				if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
					continue;
				if (*value >= ph.p_vaddr && *value < ph.p_vaddr + ph.p_memsz) {
					*seg_vaddr = ph.p_vaddr;
					*seg_offset = ph.p_offset;
					found = true;
					break;
				}
			}
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

struct map_line {
	uint64_t start, end, offset;
	char path[PATH_MAX];
};

/*
 * Executable mapping of pid whose path contains needle and which maps file
 * offset fo (any such mapping when fo is UINT64_MAX).
 */
static bool find_exec_mapping_at(int pid, const char *needle, uint64_t fo, struct map_line *out)
{
	char path[64], line[PATH_MAX + 128], perms[8];
	bool found = false;
	int pos;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		pos = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %n", &out->start,
			   &out->end, perms, &out->offset, &pos) < 4 || !pos)
			continue;
		if (perms[2] != 'x' || !strstr(line + pos, needle))
			continue;
		if (fo != UINT64_MAX &&
		    (fo < out->offset || fo - out->offset >= out->end - out->start))
			continue;
		snprintf(out->path, sizeof(out->path), "%s", line + pos);
		found = true;
	}
	fclose(f);
	return found;
}

static bool find_exec_mapping(int pid, const char *needle, struct map_line *out)
{
	return find_exec_mapping_at(pid, needle, UINT64_MAX, out);
}

/* where name of the mapped file lives in pid's address space */
static bool child_symbol_addr(int pid, const char *needle, const char *name, uint64_t *addr,
			      struct map_line *ml)
{
	uint64_t value, seg_vaddr, seg_offset, fo;

	if (!find_exec_mapping(pid, needle, ml))
		return false;
	if (!elf_find_symbol(ml->path, name, &value, &seg_vaddr, &seg_offset))
		return false;
	fo = value - seg_vaddr + seg_offset;
	if (!find_exec_mapping_at(pid, needle, fo, ml))
		return false;
	*addr = ml->start + (fo - ml->offset);
	return true;
}

static int spawn(char *const argv[], const char *needle)
{
	struct map_line ml;
	int pid, i;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int devnull = open("/dev/null", O_RDWR);

		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	/* until exec has replaced our image in the child */
	for (i = 0; i < 500; i++) {
		if (find_exec_mapping(pid, needle, &ml))
			return pid;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void reap(int pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static bool one(struct symbolizer *s, int pid, uint64_t addr, bool kernel, struct frame *f)
{
	return symbolizer__symbolize(s, pid, &addr, 1, kernel, f, 1) == 1;
}

/* ------------------------------------------------------------------ */

static void test_self(struct symbolizer *s)
{
	const char *self = self_basename();
	uint64_t ips[3];
	struct frame f[3];
	int n;

	ips[0] = (uint64_t)(uintptr_t)&test_target_alpha;
	ips[1] = (uint64_t)(uintptr_t)&test_target_beta + 2;
	ips[2] = test_caller_gamma();
	n = symbolizer__symbolize(s, getpid(), ips, 3, false, f, 3);
	CHECK(n == 3, "n=%d", n);
	printf("self: %s | %s | %s\n", frame__str(&f[0]), frame__str(&f[1]), frame__str(&f[2]));
	CHECK(!strcmp(f[0].func, "test_target_alpha") && f[0].offset == 0, "%s", frame__str(&f[0]));
	CHECK(!strcmp(f[0].module, self), "%s vs %s", f[0].module, self);
	CHECK(f[0].kind == FRAME_NATIVE, "kind %d", f[0].kind);
	CHECK(!strcmp(f[1].func, "test_target_beta") && f[1].offset == 2, "%s", frame__str(&f[1]));
	CHECK(!strcmp(f[2].func, "test_caller_gamma") && f[2].offset > 0, "%s",
	      frame__str(&f[2]));
	CHECK(!strcmp(f[2].module, self), "%s", f[2].module);
	CHECK(f[0].addr == ips[0] && f[0].file[0] == '\0' && f[0].line == 0, "addr/file");

	/* max_out smaller than n truncates */
	n = symbolizer__symbolize(s, getpid(), ips, 3, false, f, 2);
	CHECK(n == 2, "n=%d", n);
}

static void test_libc(struct symbolizer *s)
{
	void *getpid_p = dlsym(RTLD_DEFAULT, "getpid");
	void *qsort_p = dlsym(RTLD_DEFAULT, "qsort");
	struct frame f;

	CHECK(getpid_p && qsort_p, "dlsym");
	if (!getpid_p || !qsort_p)
		return;
	one(s, getpid(), (uint64_t)(uintptr_t)getpid_p + 1, false, &f);
	CHECK(strstr(f.func, "getpid") && f.offset == 1, "%s", frame__str(&f));
	CHECK(!strcmp(f.module, "libc.so.6"), "%s", f.module);
	one(s, getpid(), (uint64_t)(uintptr_t)qsort_p, false, &f);
	CHECK(strstr(f.func, "qsort") != NULL, "%s", frame__str(&f));
	printf("libc: %s\n", frame__str(&f));
}

static void test_python(struct symbolizer *s)
{
	char *argv[] = { "/usr/bin/python3", "-c", "import time; time.sleep(5)", NULL };
	static const char *const names[] = { "PyObject_GetAttr", "Py_Main", "PyList_Append" };
	struct map_line ml;
	struct frame f;
	uint64_t addr;
	size_t i;
	int pid;

	pid = spawn(argv, "python3");
	CHECK(pid > 0, "spawn python3");
	if (pid <= 0)
		return;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!child_symbol_addr(pid, "python3", names[i], &addr, &ml)) {
			CHECK(0, "no %s in python3's exec mapping", names[i]);
			continue;
		}
		one(s, pid, addr + 5, false, &f);
		CHECK(!strcmp(f.func, names[i]) && f.offset == 5, "want %s got %s", names[i],
		      frame__str(&f));
		CHECK(!strncmp(f.module, "python3", 7), "%s", f.module);
		printf("python3 (pid %d, map %" PRIx64 " off %" PRIx64 "): %#" PRIx64 " -> %s\n",
		       pid, ml.start, ml.offset, addr + 5, frame__str(&f));
	}
	if (!child_symbol_addr(pid, "python3", "PyObject_GetAttr", &addr, &ml))
		addr = 0;
	reap(pid);
	/* samples arrive after exit: the cached maps still answer */
	one(s, pid, addr + 5, false, &f);
	CHECK(!strcmp(f.func, "PyObject_GetAttr"), "after exit: %s", frame__str(&f));
	forget(s, pid);
	one(s, pid, addr + 5, false, &f);
	CHECK(f.func[0] == '\0', "after forget: %s", frame__str(&f));
}

static void test_garbage(struct symbolizer *s)
{
	static const uint64_t bad[] = { 0, 1, 4096, 0x7fffffffffffull, ~0ull, ~0ull - 4095 };
	struct frame f[8];
	char buf[16];
	size_t i;
	int n;

	n = symbolizer__symbolize(s, 999999, bad, 6, false, f, 8);
	CHECK(n == 6, "n=%d", n);
	for (i = 0; i < 6; i++)
		CHECK(f[i].func[0] == '\0' && f[i].addr == bad[i], "pid 999999: %s",
		      frame__str(&f[i]));
	n = symbolizer__symbolize(s, 0, bad, 6, false, f, 8);
	CHECK(n == 6 && f[0].func[0] == '\0' && f[4].func[0] == '\0', "pid 0");
	n = symbolizer__symbolize(s, -5, bad, 6, false, f, 8);
	CHECK(n == 6 && f[0].func[0] == '\0', "pid -5");
	n = symbolizer__symbolize(s, getpid(), bad, 6, false, f, 8);
	CHECK(n == 6, "n=%d", n);
	for (i = 0; i < 6; i++)
		CHECK(f[i].func[0] == '\0', "self %#" PRIx64 ": %s", bad[i], frame__str(&f[i]));
	n = symbolizer__symbolize(s, 0, bad, 6, true, f, 8);
	CHECK(n == 6 && f[0].func[0] == '\0' && f[4].func[0] == '\0', "kernel 0/~0: %s / %s",
	      frame__str(&f[0]), frame__str(&f[4]));
	CHECK(!strcmp(f[0].module, "[kernel]") && f[0].kind == FRAME_KERNEL, "%s", f[0].module);

	CHECK(symbolizer__symbolize(s, getpid(), bad, 0, false, f, 8) == 0, "n=0");
	CHECK(symbolizer__symbolize(s, getpid(), bad, -1, false, f, 8) == 0, "n=-1");
	CHECK(symbolizer__symbolize(s, getpid(), bad, 6, false, f, 0) == 0, "max_out=0");
	CHECK(symbolizer__symbolize(s, getpid(), NULL, 6, false, f, 8) == 0, "ips NULL");
	CHECK(symbolizer__symbolize(s, getpid(), bad, 6, false, NULL, 8) == 0, "out NULL");
	CHECK(symbolizer__symbolize(NULL, getpid(), bad, 2, false, f, 8) == 2 &&
	      f[0].func[0] == '\0', "NULL symbolizer");
	symbolizer__forget_pid(s, 999999);
	symbolizer__forget_pid(NULL, 1);

	/* frame__format: exact output, truncation, unterminated strings */
	memset(&f[0], 0, sizeof(f[0]));
	strcpy(f[0].func, "foo");
	f[0].offset = 0x1a;
	strcpy(f[0].module, "libbar.so");
	frame__format(&f[0], buf, sizeof(buf));
	CHECK(!strcmp(buf, "foo+0x1a (libba"), "%s", buf);
	CHECK(frame__format(&f[0], buf, sizeof(buf)) == (int)strlen("foo+0x1a (libbar.so)"),
	      "len");
	f[0].func[0] = '\0';
	CHECK(!strcmp(frame__str(&f[0]), "[unknown] (libbar.so)"), "%s", frame__str(&f[0]));
	f[0].module[0] = '\0';
	CHECK(!strcmp(frame__str(&f[0]), "[unknown]"), "%s", frame__str(&f[0]));
	f[0].kind = FRAME_PYTHON;
	strcpy(f[0].func, "handler");
	strcpy(f[0].file, "app.py");
	f[0].line = 42;
	CHECK(!strcmp(frame__str(&f[0]), "handler (app.py:42)"), "%s", frame__str(&f[0]));
	memset(&f[0], 'A', sizeof(f[0]));
	CHECK(frame__format(&f[0], buf, sizeof(buf)) > 0, "unterminated");
	CHECK(frame__format(NULL, buf, sizeof(buf)) < 0, "NULL frame");
	CHECK(frame__format(&f[1], NULL, 0) >= 0, "size query");
}

/*
 * A forked child with a hostile comm (stat field 2 holds ") " and spaces)
 * must still be parsed, and once it is a zombie its empty maps must not
 * wipe what was cached while it was alive.
 */
static void test_odd_child(struct symbolizer *s)
{
	uint64_t ips[2] = { (uint64_t)(uintptr_t)&test_target_alpha, 0x10000 };
	int ready[2], hold[2], pid;
	struct frame f[2];
	char c = 0;

	if (pipe(ready))
		return;
	if (pipe(hold)) {
		close(ready[0]);
		close(ready[1]);
		return;
	}
	pid = fork();
	if (!pid) {
		close(ready[0]);
		close(hold[1]);
		prctl(PR_SET_NAME, "x) y (z) 1 2", 0, 0, 0);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		/* EOF here means the parent wants us to exit */
		if (read(hold[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	CHECK(pid > 0, "fork");
	if (pid > 0 && read(ready[0], &c, 1) == 1) {
		one(s, pid, ips[0] + 1, false, &f[0]);
		CHECK(!strcmp(f[0].func, "test_target_alpha") && f[0].offset == 1,
		      "odd comm: %s", frame__str(&f[0]));
	}
	close(ready[0]);
	close(hold[1]);
	if (pid < 0)
		return;
	/* a zombie until reaped: wait for that state without reaping */
	for (int i = 0; i < 200; i++) {
		char path[64], buf[256] = "";
		FILE *fp;

		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		fp = fopen(path, "re");
		if (fp) {
			if (!fgets(buf, sizeof(buf), fp))
				buf[0] = '\0';
			fclose(fp);
		}
		if (strstr(buf, ") Z "))
			break;
		usleep(10000);
	}
	ips[0] += 2;
	CHECK(symbolizer__symbolize(s, pid, ips + 1, 1, false, f, 1) == 1 && !f[0].func[0],
	      "zombie miss: %s", frame__str(&f[0]));
	one(s, pid, ips[0], false, &f[0]);
	CHECK(!strcmp(f[0].func, "test_target_alpha") && f[0].offset == 2, "zombie: %s",
	      frame__str(&f[0]));
	waitpid(pid, NULL, 0);
	forget(s, pid);
}

/* mmap a file's bytes with PROT_EXEC so it shows up as code in our maps */
static void *map_exec(const char *path, off_t off, size_t len)
{
	void *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, off);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static bool copy_file(const char *from, const char *to, size_t max)
{
	char buf[65536];
	size_t total = 0;
	ssize_t r;
	int in, out;
	bool ok = true;

	in = open(from, O_RDONLY | O_CLOEXEC);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (in < 0 || out < 0)
		ok = false;
	while (ok && total < max && (r = read(in, buf, sizeof(buf))) > 0) {
		if ((size_t)r > max - total)
			r = (ssize_t)(max - total);
		ok = write(out, buf, (size_t)r) == r;
		total += (size_t)r;
	}
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

/* a file that was unlinked after mmap: maps says "(deleted)", map_files has it */
static void test_deleted(struct symbolizer *s)
{
	char path[] = "/tmp/lw_symtest_del_XXXXXX";
	uint64_t value, seg_vaddr, seg_offset;
	long page = sysconf(_SC_PAGESIZE);
	struct frame f;
	size_t len;
	off_t off;
	char *map;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	close(fd);
	if (!copy_file("/proc/self/exe", path, SIZE_MAX) ||
	    !elf_find_symbol(path, "test_target_beta", &value, &seg_vaddr, &seg_offset)) {
		CHECK(0, "copy self");
		unlink(path);
		return;
	}
	off = (off_t)(seg_offset & ~(uint64_t)(page - 1));
	len = (size_t)(value - seg_vaddr + seg_offset - (uint64_t)off) + 64;
	map = map_exec(path, off, len);
	unlink(path);
	CHECK(map != NULL, "mmap copy");
	if (!map)
		return;
	/* test_target_beta is only a few bytes long: stay inside it */
	one(s, getpid(), (uint64_t)(uintptr_t)map + (value - seg_vaddr + seg_offset - off) + 3,
	    false, &f);
	CHECK(!strcmp(f.func, "test_target_beta") && f.offset == 3, "%s", frame__str(&f));
	CHECK(!strcmp(f.module, strrchr(path, '/') + 1), "%s", f.module);
	printf("deleted: %s\n", frame__str(&f));
	munmap(map, len);
	/* the range may be reused by the next mapping: cached maps would be stale */
	forget(s, getpid());
}

/* non-ELF, truncated and randomly corrupted ELF files must not hurt */
static void test_bad_files(struct symbolizer *s)
{
	char path[] = "/tmp/lw_symtest_bad_XXXXXX";
	unsigned char *img = NULL;
	struct frame f[4];
	uint64_t ips[4];
	size_t size = 0, len, i, k;
	struct stat st;
	char *map;
	int fd, iter, survived = 0;

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	/* text, not ELF */
	for (i = 0; i < 8192; i++)
		if (write(fd, "not an elf file\n", 16) != 16)
			break;
	close(fd);
	map = map_exec(path, 0, 8192);
	CHECK(map != NULL, "mmap text");
	if (map) {
		one(s, getpid(), (uint64_t)(uintptr_t)map + 100, false, &f[0]);
		CHECK(f[0].func[0] == '\0' && !strcmp(f[0].module, strrchr(path, '/') + 1), "%s",
		      frame__str(&f[0]));
		munmap(map, 8192);
		forget(s, getpid());
	}

	/* source image: this binary */
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && st.st_size > 4096) {
		size = (size_t)st.st_size;
		img = malloc(size);
		if (img && read(fd, img, size) != (ssize_t)size) {
			free(img);
			img = NULL;
		}
	}
	if (fd >= 0)
		close(fd);
	CHECK(img != NULL, "read self");
	if (!img) {
		unlink(path);
		return;
	}
	srand(12345);
	for (iter = 0; iter < 300; iter++) {
		unsigned char *mut = malloc(size);
		GElf_Ehdr *eh = (GElf_Ehdr *)mut;
		size_t shoff;

		if (!mut)
			break;
		memcpy(mut, img, size);
		len = size;
		shoff = eh->e_shoff < size ? eh->e_shoff : size / 2;
		if (iter % 3 == 0)
			len = 64 + (size_t)rand() % (size - 64);	/* truncated */
		for (k = 0; k < 12; k++) {
			size_t where;

			switch (rand() % 4) {
			case 0:
				where = (size_t)rand() % 64;
				break;
			case 1:
				where = 64 + (size_t)rand() % 1024;
				break;
			case 2:
				where = shoff + (size_t)rand() % (size - shoff);
				break;
			default:
				where = (size_t)rand() % size;
				break;
			}
			if (where < size)
				mut[where] = (unsigned char)rand();
		}
		unlink(path);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
		if (fd < 0 || write(fd, mut, len) != (ssize_t)len) {
			if (fd >= 0)
				close(fd);
			free(mut);
			continue;
		}
		close(fd);
		free(mut);
		map = map_exec(path, 0, len);
		if (!map)
			continue;
		ips[0] = (uint64_t)(uintptr_t)map;
		ips[1] = (uint64_t)(uintptr_t)map + len / 2;
		ips[2] = (uint64_t)(uintptr_t)map + len - 1;
		ips[3] = (uint64_t)(uintptr_t)map + (size_t)rand() % len;
		if (symbolizer__symbolize(s, getpid(), ips, 4, false, f, 4) == 4)
			survived++;
		munmap(map, len);
		/* maps change every round: start each from a fresh view */
		forget(s, getpid());
	}
	CHECK(survived > 250, "survived %d", survived);
	free(img);
	unlink(path);
}

/* mappings that appear after the pid was cached: maps must be re-read */
static void test_new_mappings(struct symbolizer *s)
{
	void (*fn)(void);
	struct frame f;
	void *anon, *h;

	one(s, getpid(), (uint64_t)(uintptr_t)&test_target_alpha, false, &f);
	anon = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED, "mmap anon");
	if (anon != MAP_FAILED) {
		one(s, getpid(), (uint64_t)(uintptr_t)anon + 16, false, &f);
		CHECK(f.kind == FRAME_JIT && !strcmp(f.module, "[anon]") && !f.func[0], "%s",
		      frame__str(&f));
		munmap(anon, 8192);
		forget(s, getpid());
	}
	/* libcrypt1 is essential in Debian, and nothing here links it */
	h = dlopen("libcrypt.so.1", RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL, "dlopen libcrypt.so.1: %s", dlerror());
	if (!h)
		return;
	*(void **)&fn = dlsym(h, "crypt_checksalt");
	CHECK(fn != NULL, "dlsym crypt_checksalt");
	if (fn) {
		one(s, getpid(), (uint64_t)(uintptr_t)fn + 3, false, &f);
		CHECK(!strcmp(f.func, "crypt_checksalt") && f.offset == 3, "%s", frame__str(&f));
		CHECK(!strncmp(f.module, "libcrypt", 8), "%s", f.module);
		printf("dlopen: %s\n", frame__str(&f));
	}
	dlclose(h);
}

static void test_vdso(struct symbolizer *s)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), vaddr0 = 0, found = 0;
	Elf_Scn *scn = NULL;
	struct map_line ml;
	struct frame f;
	GElf_Shdr sh;
	GElf_Phdr ph;
	GElf_Sym sym;
	size_t i, nph;
	Elf_Data *d;
	char *copy;
	Elf *elf;

	if (!base || !find_exec_mapping(getpid(), "[vdso]", &ml)) {
		CHECK(false, "no vdso");
		return;
	}
	copy = malloc(ml.end - ml.start);
	if (!copy)
		return;
	memcpy(copy, (void *)(uintptr_t)base, ml.end - ml.start);
	elf = elf_memory(copy, ml.end - ml.start);
	if (elf && elf_getphdrnum(elf, &nph) == 0) {
		for (i = 0; i < nph; i++) {
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
				vaddr0 = ph.p_vaddr - ph.p_offset;
				break;
			}
		}
	}
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, "__vdso_clock_gettime"))
				found = sym.st_value;
		}
	}
	if (elf)
		elf_end(elf);
	free(copy);
	one(s, getpid(), ml.start + 4, false, &f);
	CHECK(!strcmp(f.module, "[vdso]"), "%s", frame__str(&f));
	if (!found) {
		CHECK(false, "no __vdso_clock_gettime");
		return;
	}
	one(s, getpid(), base + (found - vaddr0) + 2, false, &f);
	CHECK(strstr(f.func, "clock_gettime") && f.offset == 2, "%s", frame__str(&f));
	printf("vdso: %s\n", frame__str(&f));
}

static void test_kernel(struct symbolizer *s)
{
	char line[512], name[256], mod[128], type, want_mod[140] = "";
	uint64_t addr, sched = 0, modaddr = 0;
	struct frame f[2];
	uint64_t ips[2];
	int fields;
	FILE *fp;

	fp = fopen("/proc/kallsyms", "re");
	if (!fp) {
		CHECK(false, "no /proc/kallsyms");
		return;
	}
	while (fgets(line, sizeof(line), fp)) {
		mod[0] = '\0';
		fields = sscanf(line, "%" SCNx64 " %c %255s [%127[^]]]", &addr, &type, name, mod);
		if (fields < 3 || !addr)
			continue;
		if (fields == 3 && !strcmp(name, "schedule") && (type == 'T' || type == 't'))
			sched = addr;
		if (fields == 4 && !modaddr && type == 't') {
			modaddr = addr;
			snprintf(want_mod, sizeof(want_mod), "[%s]", mod);
		}
	}
	fclose(fp);
	if (!sched) {
		CHECK(false, "kallsyms addresses hidden");
		return;
	}
	ips[0] = sched + 4;
	ips[1] = modaddr;
	CHECK(symbolizer__symbolize(s, 0, ips, modaddr ? 2 : 1, true, f, 2) >= 1, "kernel");
	CHECK(!strcmp(f[0].func, "schedule") && f[0].offset == 4 &&
	      !strcmp(f[0].module, "[kernel]") && f[0].kind == FRAME_KERNEL, "%s",
	      frame__str(&f[0]));
	printf("kernel: %s\n", frame__str(&f[0]));
	if (modaddr) {
		CHECK(!strcmp(f[1].module, want_mod) && f[1].func[0], "%s want %s",
		      frame__str(&f[1]), want_mod);
		printf("kernel module: %s\n", frame__str(&f[1]));
	}
}

/* the big one: first use loads node's symtab, later uses must be cheap */
static void test_node(struct symbolizer *s)
{
	char *argv[] = { "/usr/bin/node", "-e", "setTimeout(()=>{},5000)", NULL };
	uint64_t addr, addr2;
	struct map_line ml;
	double t0, t1, t2, t3;
	struct frame f;
	int pid, pid2;

	if (access(argv[0], X_OK)) {
		CHECK(false, "no /usr/bin/node");
		return;
	}
	pid = spawn(argv, "/node");
	pid2 = spawn(argv, "/node");
	CHECK(pid > 0 && pid2 > 0, "spawn node");
	if (pid <= 0 || pid2 <= 0 || !child_symbol_addr(pid, "/node", "uv_run", &addr, &ml) ||
	    !child_symbol_addr(pid2, "/node", "uv_run", &addr2, &ml)) {
		CHECK(0, "uv_run in node");
		reap(pid);
		reap(pid2);
		return;
	}
	t0 = now_ms();
	one(s, pid, addr + 8, false, &f);
	t1 = now_ms();
	CHECK(!strcmp(f.func, "uv_run") && f.offset == 8 && !strcmp(f.module, "node"), "%s",
	      frame__str(&f));
	one(s, pid, addr + 9, false, &f);
	t2 = now_ms();
	CHECK(!strcmp(f.func, "uv_run") && f.offset == 9, "%s", frame__str(&f));
	/* another process of the same binary shares the loaded table */
	one(s, pid2, addr2 + 8, false, &f);
	t3 = now_ms();
	CHECK(!strcmp(f.func, "uv_run") && f.offset == 8, "%s", frame__str(&f));
	printf("node: %s first %.1f ms, second %.3f ms, other pid %.3f ms\n", frame__str(&f),
	       t1 - t0, t2 - t1, t3 - t2);
	CHECK(t1 - t0 < 2000, "first node lookup took %.0f ms", t1 - t0);
	CHECK(t3 - t2 < 50, "second process reloaded the table: %.1f ms", t3 - t2);
	reap(pid);
	reap(pid2);
}

/* ------------------------------------------------------------------ */
/* crafted symbol tables: a process chooses what it maps */

/*
 * A minimal x86-64 ELF: one R+X PT_LOAD over the file's first 8 KiB, .text at
 * 0x1000, and a .symtab of nsyms FUNC symbols at 0x1000 + i % 4096, named by
 * name_of (NULL: all share one name). Written with plain structs, not the code
 * under test.
 */
static bool crafted_elf(const char *path, size_t nsyms, const char *(*name_of)(size_t))
{
	const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	size_t strsz = 1, symoff = 0x2000, stroff, shstroff, shoff, i;
	Elf64_Ehdr eh = {};
	Elf64_Phdr ph = {};
	Elf64_Shdr sh[5] = {};
	unsigned char code[4096];
	FILE *f = fopen(path, "wb");
	bool ok = f != NULL;

	if (!f)
		return false;
	for (i = 1; i < nsyms; i++)
		strsz += name_of ? strlen(name_of(i)) + 1 : (i == 1 ? 5 : 0);
	stroff = symoff + nsyms * sizeof(Elf64_Sym);
	shstroff = stroff + strsz;
	shoff = (shstroff + sizeof(shstr) + 7) & ~7ul;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(sh[0]);
	eh.e_shnum = 5;
	eh.e_shstrndx = 4;
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_filesz = ph.p_memsz = 0x2000;
	ph.p_align = 0x1000;
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC |
			      SHF_EXECINSTR, .sh_addr = 0x1000, .sh_offset = 0x1000, .sh_size = 0x1000 };
	sh[2] = (Elf64_Shdr){ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = symoff,
			      .sh_size = nsyms * sizeof(Elf64_Sym), .sh_link = 3, .sh_info = 1,
			      .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8 };
	sh[3] = (Elf64_Shdr){ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = stroff,
			      .sh_size = strsz };
	sh[4] = (Elf64_Shdr){ .sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = shstroff,
			      .sh_size = sizeof(shstr) };
	memset(code, 0xc3, sizeof(code));
	ok = ok && fwrite(&eh, sizeof(eh), 1, f) == 1 && fwrite(&ph, sizeof(ph), 1, f) == 1 &&
	     !fseek(f, 0x1000, SEEK_SET) && fwrite(code, sizeof(code), 1, f) == 1;
	for (i = 0; ok && i < nsyms; i++) {
		Elf64_Sym sym = {};
		static size_t name_off;

		if (i == 1 || (i > 1 && name_of))
			name_off = !name_of ? 1 : (i == 1 ? 1 : name_off);
		if (i) {
			sym.st_name = (Elf64_Word)name_off;
			sym.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
			sym.st_shndx = 1;
			sym.st_value = 0x1000 + i % 4096;
			sym.st_size = 1;
			if (name_of)
				name_off += strlen(name_of(i)) + 1;
		}
		ok = fwrite(&sym, sizeof(sym), 1, f) == 1;
	}
	ok = ok && fputc(0, f) != EOF;
	for (i = 1; ok && i < nsyms && (name_of || i == 1); i++)
		ok = fwrite(name_of ? name_of(i) : "bomb", 1, (name_of ? strlen(name_of(i)) : 4) + 1,
			    f) > 0;
	ok = ok && fwrite(shstr, sizeof(shstr), 1, f) == 1 && !fseek(f, (long)shoff, SEEK_SET) &&
	     fwrite(sh, sizeof(sh), 1, f) == 1;
	return !fclose(f) && ok;
}

static const char *small_name(size_t i)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "crafted_%zu", i);
	return buf;
}

static const char *long_name(size_t i)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%0120zu", i);
	return buf;
}

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Symbolize 0x1000 + at in a crafted file mapped here: time and RSS growth. */
static void crafted_one(struct symbolizer *s, const char *path, uint64_t at, struct frame *f,
			double *ms, long *rss_grew_kb)
{
	long rss0 = rss_kb();
	double t0 = now_ms();
	char *map = map_exec(path, 0, 0x2000);

	memset(f, 0, sizeof(*f));
	CHECK(map != NULL, "mmap %s", path);
	if (!map)
		return;
	/* this address may have held another file a moment ago (a library unmapped since) */
	forget(s, getpid());
	one(s, getpid(), (uint64_t)(uintptr_t)map + 0x1000 + at, false, f);
	*ms = now_ms() - t0;
	*rss_grew_kb = rss_kb() - rss0;
	munmap(map, 0x2000);
	forget(s, getpid());
}

/*
 * 2M symbols of one name (the size says so before anything is read), 900k
 * symbols with 120-byte names (over the bytes of names), and a sane table.
 */
static void test_symbol_budget(struct symbolizer *s)
{
	char path[] = "/tmp/lw_symtest_bomb_XXXXXX";
	struct frame f;
	long grew_kb = 0;
	double ms = 0;
	int fd = mkstemp(path);

	CHECK(fd >= 0, "mkstemp");
	if (fd < 0)
		return;
	close(fd);
	CHECK(crafted_elf(path, 1000, small_name), "write a sane table");
	crafted_one(s, path, 17, &f, &ms, &grew_kb);
	CHECK(!strcmp(f.func, "crafted_17") && f.offset == 0, "sane crafted: %s", frame__str(&f));

	CHECK(crafted_elf(path, 2000000, NULL), "write the bomb");
	crafted_one(s, path, 17, &f, &ms, &grew_kb);
	CHECK(!strcmp(f.func, "[symbols over budget]"), "bomb: %s", frame__str(&f));
	CHECK(ms < 1000 && grew_kb < 64 * 1024, "bomb: %.0f ms, RSS +%ld KiB", ms, grew_kb);
	printf("2M symbols: %s in %.1f ms, RSS +%ld KiB\n", frame__str(&f), ms, grew_kb);

	CHECK(crafted_elf(path, 900000, long_name), "write long names");
	crafted_one(s, path, 17, &f, &ms, &grew_kb);
	CHECK(!strcmp(f.func, "[symbols over budget]"), "long names: %s", frame__str(&f));
	CHECK(ms < 2000 && grew_kb < 128 * 1024, "long names: %.0f ms, RSS +%ld KiB", ms, grew_kb);
	printf("900k long names: %s in %.1f ms, RSS +%ld KiB\n", frame__str(&f), ms, grew_kb);
	unlink(path);
}

/* argv run to its end (PATH searched): true when it exits 0 */
static bool command__ok(char *const argv[])
{
	int status, pid = fork();

	if (pid < 0)
		return false;
	if (!pid) {
		execvp(argv[0], argv);
		_exit(127);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status);
}

/*
 * A stripped file whose .gnu_debuglink names a debug file beside it: the
 * debug file's table is held to the same budget as a file's own.
 */
static void test_symbol_budget_in_debug_file(struct symbolizer *s)
{
	char dir[] = "/tmp/lw_symtest_dbg_XXXXXX", dbg[64], stripped[64], link[96];
	char *split[] = { "objcopy", "--strip-all", link, dbg, stripped, NULL };
	struct frame f;
	long grew_kb = 0;
	double ms = 0;

	CHECK(mkdtemp(dir) != NULL, "mkdtemp");
	snprintf(dbg, sizeof(dbg), "%s/crafted.debug", dir);
	snprintf(stripped, sizeof(stripped), "%s/crafted", dir);
	snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);

	CHECK(crafted_elf(dbg, 1000, small_name) && command__ok(split), "split a sane table");
	crafted_one(s, stripped, 17, &f, &ms, &grew_kb);
	CHECK(!strcmp(f.func, "crafted_17"), "sane, from its debug file: %s", frame__str(&f));

	CHECK(crafted_elf(dbg, 2000000, NULL) && command__ok(split), "split the bomb");
	crafted_one(s, stripped, 17, &f, &ms, &grew_kb);
	CHECK(!strcmp(f.func, "[symbols over budget]"), "bomb in the debug file: %s",
	      frame__str(&f));
	CHECK(ms < 1000 && grew_kb < 64 * 1024, "bomb in the debug file: %.0f ms, RSS +%ld KiB",
	      ms, grew_kb);
	printf("2M symbols in a debug file: %s in %.1f ms, RSS +%ld KiB\n", frame__str(&f), ms,
	       grew_kb);
	unlink(stripped);
	unlink(dbg);
	rmdir(dir);
}

/*
 * An exited process's mapping, opened by its path in our namespace: only the
 * very file (device and inode) that was mapped will do.
 */
static void test_fallback_open_checks_the_device(void)
{
	struct proc_mapping m = { .start = 0x1000, .end = 0x2000, .type = PROC_MAP_FILE };
	struct stat st, got;
	struct proc *p;
	int pid, fd;

	if (stat("/usr/bin/python3", &st))
		return;
	pid = fork();
	if (!pid) {
		pause();
		_exit(0);
	}
	p = procs__get(procs, pid);
	CHECK(p != NULL, "procs__get child");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (!p)
		return;
	p = procs__get(procs, pid);
	m.path = "/usr/bin/python3";
	m.inode = st.st_ino;
	m.dev = st.st_dev;
	fd = p ? proc__open_mapping(p, &m, &got) : -1;
	CHECK(fd >= 0 && got.st_ino == st.st_ino, "same device and inode: fd %d", fd);
	if (fd >= 0)
		close(fd);
	m.dev = st.st_dev + 1;
	fd = p ? proc__open_mapping(p, &m, &got) : -1;
	CHECK(fd < 0, "same inode on another device opened: fd %d", fd);
	if (fd >= 0)
		close(fd);
	procs__forget(procs, pid);
}

int main(void)
{
	struct symbolizer *s;

	signal(SIGPIPE, SIG_IGN);
	procs = procs__new();
	s = symbolizer__new(procs);
	CHECK(s != NULL, "symbolizer__new");
	if (!s)
		return check__report();
	test_self(s);
	test_libc(s);
	test_python(s);
	test_garbage(s);
	test_odd_child(s);
	test_deleted(s);
	test_bad_files(s);
	test_new_mappings(s);
	test_vdso(s);
	test_kernel(s);
	test_node(s);
	test_symbol_budget(s);
	test_symbol_budget_in_debug_file(s);
	test_fallback_open_checks_the_device();
	/* still sane after all of the above */
	test_self(s);
	symbolizer__free(s);
	symbolizer__free(NULL);
	procs__free(procs);

	return check__report();
}

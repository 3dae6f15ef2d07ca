// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "lib/clock.h"
#include "lib/text.h"
#include "proc/procs.h"

#define PROCS_HASH 1024
/* processes kept at once; the least recently used make room */
#define PROCS_MAX 4096
/* a /proc file bigger than this is either hostile or not worth it */
#define MAX_MAPS_BYTES (64u << 20)
/*
 * A pid is recycled only after the kernel has gone through pid_max others:
 * checking its start time once per this long is plenty, and a stall's forty
 * stacks then cost one read of /proc/PID/stat, not forty.
 */
#define PROC_RECHECK_NS 100000000ull

struct proc {
	int pid;
	bool alive;
	uint64_t start_time;
	uint64_t image;		/* arg_start: another value after an exec; 0 unknown */
	uint64_t checked_ns;	/* when start_time was last compared with /proc */
	uint64_t last_used;
	struct proc_maps *maps;
	struct proc *hnext;
};

struct procs {
	struct proc *hash[PROCS_HASH];
	size_t n;
	uint64_t tick;
};

/*
 * A whole file, NUL-terminated. /proc files report size 0, so read until
 * EOF; a process exiting mid-read just ends the data early, and the caller
 * only trusts complete lines.
 */
static char *file__read_all(const char *path, size_t max, size_t *len_out)
{
	size_t len = 0, cap = 16384;
	char *buf, *tmp;
	ssize_t r;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = malloc(cap);
	if (!buf)
		goto fail;
	for (;;) {
		if (cap - len < 4096) {
			if (cap >= max)
				break;
			tmp = realloc(buf, cap * 2);
			if (!tmp)
				goto fail;
			buf = tmp;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* ESRCH and friends: the process went away, keep what we have */
			if (!len)
				goto fail;
			break;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	buf[len] = '\0';
	*len_out = len;
	return buf;
fail:
	free(buf);
	close(fd);
	return NULL;
}

/* A small file's text without its final newline, NUL-terminated, or false. */
static bool file__read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return false;
	if (buf[n - 1] == '\n')
		n--;
	buf[n] = '\0';
	return true;
}

/*
 * comm (field 2) is whatever the process named itself (prctl PR_SET_NAME):
 * spaces, '(', ')' and newlines included, so it is the text between the
 * first '(' and the LAST ')', and the fields after it are read from there,
 * never from a line the name may have cut short.
 */
bool proc_stat__parse(const char *text, uint64_t *start_time, uint64_t *image)
{
	const char *p = strrchr(text, ')');
	char *end;

	*start_time = *image = 0;
	if (!p || !strchr(text, '(') || strchr(text, '(') > p)
		return false;
	p++;
	for (int field = 3; field <= 48; field++) {
		while (*p == ' ')
			p++;
		if (field == 22 || field == 48) {
			errno = 0;
			*(field == 22 ? start_time : image) = strtoull(p, &end, 10);
			if (end == p || errno) {
				*image = 0;
				return field == 48;	/* an old kernel without it */
			}
			p = end;
			continue;
		}
		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (!*p || *p == '\n')
			return field > 22;
	}
	return true;
}

/* Field 22 (start time) and field 48 (arg_start) of /proc/PID/stat. */
static bool stat__identity(int pid, uint64_t *start_time, uint64_t *image)
{
	char path[64], buf[2048];

	*image = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!file__read_small(path, buf, sizeof(buf)))
		return false;
	return proc_stat__parse(buf, start_time, image);
}

static bool stat__start_time(int pid, uint64_t *out)
{
	uint64_t image;

	return stat__identity(pid, out, &image);
}

static void proc__destroy(struct proc *p)
{
	proc_maps__put(p->maps);
	free(p);
}

static struct proc **procs__slot(struct procs *ps, int pid)
{
	struct proc **pp = &ps->hash[(unsigned int)pid % PROCS_HASH];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->hnext;
	return pp;
}

static void procs__remove(struct procs *ps, struct proc **pp)
{
	struct proc *p = *pp;

	*pp = p->hnext;
	proc__destroy(p);
	ps->n--;
}

static void procs__evict_lru(struct procs *ps)
{
	struct proc **victim = NULL;

	for (unsigned int h = 0; h < PROCS_HASH; h++) {
		for (struct proc **pp = &ps->hash[h]; *pp; pp = &(*pp)->hnext) {
			if (!victim || (*pp)->last_used < (*victim)->last_used)
				victim = pp;
		}
	}
	if (victim)
		procs__remove(ps, victim);
}

struct procs *procs__new(void)
{
	return calloc(1, sizeof(struct procs));
}

void procs__free(struct procs *ps)
{
	if (!ps)
		return;
	for (unsigned int h = 0; h < PROCS_HASH; h++) {
		while (ps->hash[h])
			procs__remove(ps, &ps->hash[h]);
	}
	free(ps);
}

struct proc *procs__get(struct procs *ps, int pid)
{
	uint64_t start_time = 0, image = 0, now = clock__mono_ns();
	struct proc **pp, *p;
	bool alive;

	if (!ps || pid <= 0)
		return NULL;
	pp = procs__slot(ps, pid);
	p = *pp;
	if (p && now - p->checked_ns < PROC_RECHECK_NS) {
		p->last_used = ++ps->tick;
		return p;
	}
	alive = stat__identity(pid, &start_time, &image);
	/* same pid, different process; or the same process running a new program */
	if (p && alive && (p->start_time != start_time ||
			   (image && p->image && image != p->image))) {
		procs__remove(ps, pp);
		p = NULL;
	}
	if (p) {
		p->alive = alive;
		if (!p->image)
			p->image = image;
		p->checked_ns = now;
		p->last_used = ++ps->tick;
		return p;
	}
	if (!alive)
		return NULL;
	if (ps->n >= PROCS_MAX)
		procs__evict_lru(ps);
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->alive = true;
	p->start_time = start_time;
	p->image = image;
	p->checked_ns = now;
	p->last_used = ++ps->tick;
	pp = procs__slot(ps, pid);
	*pp = p;
	ps->n++;
	return p;
}

void procs__forget(struct procs *ps, int pid)
{
	struct proc **pp;

	if (!ps)
		return;
	pp = procs__slot(ps, pid);
	if (*pp)
		procs__remove(ps, pp);
}

int proc__pid(const struct proc *p)
{
	return p->pid;
}

uint64_t proc__start_time(const struct proc *p)
{
	return p->start_time;
}

uint64_t proc__image(const struct proc *p)
{
	return p->image;
}

bool proc__alive(const struct proc *p)
{
	return p->alive;
}

const struct proc_maps *proc__maps(struct proc *p, bool refresh)
{
	struct proc_maps *maps;
	uint64_t again = 0;
	char path[64], *text;
	size_t len;

	if (p->maps && (!refresh || !p->alive))
		return p->maps;
	snprintf(path, sizeof(path), "/proc/%d/maps", p->pid);
	text = file__read_all(path, MAX_MAPS_BYTES, &len);
	if (!text)
		return p->maps;	/* exited: the old maps are still the best we have */
	maps = proc_maps__parse(text, len);
	if (!maps)
		return p->maps;
	/*
	 * A zombie shows empty maps, a recycled pid someone else's: keep what
	 * the process had while alive.
	 */
	if ((!maps->n && p->maps && p->maps->n) || !stat__start_time(p->pid, &again) ||
	    again != p->start_time) {
		proc_maps__put(maps);
		return p->maps;
	}
	proc_maps__put(p->maps);
	p->maps = maps;
	return maps;
}

bool proc__read(struct proc *p, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	char path[64];
	ssize_t r;
	int fd;

	if (!addr || !len || addr + len < addr || addr > INT64_MAX)
		return false;
	r = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (r == (ssize_t)len)
		return true;
	if (r >= 0 || (errno != ENOSYS && errno != EPERM))
		return false;
	/* kernels or seccomp profiles without process_vm_readv: the mem file */
	snprintf(path, sizeof(path), "/proc/%d/mem", p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	r = pread(fd, buf, len, (off_t)addr);
	close(fd);
	return r == (ssize_t)len;
}

void *proc__read_image(struct proc *p, const struct proc_mapping *m, size_t max, size_t *len,
		       uint64_t *hash)
{
	size_t n = m->end - m->start < max ? m->end - m->start : max;
	unsigned char *image = n ? malloc(n) : NULL;
	uint64_t h = 0xcbf29ce484222325ull;

	if (!image || !proc__read(p, m->start, image, n)) {
		free(image);
		return NULL;
	}
	/* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= image[i];
		h *= 0x100000001b3ull;
	}
	*len = n;
	*hash = h;
	return image;
}

int fd__reopen_regular(int pfd, struct stat *st)
{
	char self[64];
	int fd = -1;

	if (pfd < 0)
		return -1;
	if (!fstat(pfd, st) && S_ISREG(st->st_mode) && st->st_size > 0) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	}
	close(pfd);
	return fd;
}

/*
 * openat2(RESOLVE_IN_ROOT) keeps every symlink jump inside pid's root, which
 * may be another mount namespace. Kernels before 5.6 lack it: the plain
 * /proc/PID/root path then, and callers compare the inode with the maps.
 */
static int path__open_in_root(int pid, const char *path, int flags)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (unsigned int)flags,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char buf[PATH_MAX + 64];
	int dfd, fd;

	snprintf(buf, sizeof(buf), "/proc/%d/root", pid);
	dfd = open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	close(dfd);
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd;
	snprintf(buf, sizeof(buf), "/proc/%d/root%s", pid, path);
	return open(buf, O_PATH | O_CLOEXEC | flags);
}

int proc__open_path(struct proc *p, const char *path, struct stat *st)
{
	if (!path || path[0] != '/' || strlen(path) >= PATH_MAX)
		return -1;
	return fd__reopen_regular(path__open_in_root(p->pid, path, 0), st);
}

static int mapping__open_map_files(int pid, const struct proc_mapping *m, struct stat *st)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, m->start,
		 m->end);
	return fd__reopen_regular(open(path, O_PATH | O_CLOEXEC), st);
}

/*
 * The path inside the target's root first. If it now names a different
 * inode (package upgraded, file replaced) or is gone, map_files still
 * reaches the object that is actually mapped.
 */
int proc__open_mapping(struct proc *p, const struct proc_mapping *m, struct stat *st)
{
	struct stat alt_st;
	int fd = -1, alt;

	if (m->type != PROC_MAP_FILE)
		return -1;
	if (!m->deleted) {
		fd = proc__open_path(p, m->path, st);
		if (fd >= 0 && m->inode && (uint64_t)st->st_ino != m->inode) {
			close(fd);
			fd = -1;
		}
	}
	if (fd < 0) {
		alt = mapping__open_map_files(p->pid, m, &alt_st);
		if (alt >= 0) {
			*st = alt_st;
			return alt;
		}
	}
	/*
	 * The process is gone (a stall just before exit): the same path in our
	 * own namespace will do if it is still the very inode that was mapped:
	 * device and inode, as an inode number alone is reused across filesystems.
	 */
	if (fd < 0 && !m->deleted && m->inode && strlen(m->path) < PATH_MAX) {
		fd = fd__reopen_regular(open(m->path, O_PATH | O_CLOEXEC), st);
		if (fd >= 0 && ((uint64_t)st->st_ino != m->inode || st->st_dev != m->dev)) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* The pid in the process's own pid namespace: the last number of NSpid in its status. */
static int proc__ns_pid(struct proc *p)
{
	char path[64], *text, *line, *end;
	size_t len;
	long v = p->pid;

	snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
	text = file__read_all(path, 1 << 16, &len);
	if (!text)
		return p->pid;
	line = strstr(text, "\nNSpid:");
	if (line) {
		line += 7;
		for (;;) {
			long n = strtol(line, &end, 10);

			if (end == line || n <= 0)
				break;
			v = n;
			line = end;
		}
	}
	free(text);
	return v > 0 && v <= INT32_MAX ? (int)v : p->pid;
}

/* Whether uid is one of the process's (real, effective, saved, filesystem). */
static bool proc__has_uid(struct proc *p, uid_t uid)
{
	char path[64], *text, *line;
	unsigned long ids[4];
	bool has = false;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
	text = file__read_all(path, 1 << 16, &len);
	if (!text)
		return false;
	line = strstr(text, "\nUid:");
	if (line && sscanf(line + 5, "%lu %lu %lu %lu", &ids[0], &ids[1], &ids[2], &ids[3]) == 4) {
		for (int i = 0; i < 4; i++)
			has |= ids[i] == (unsigned long)uid;
	}
	free(text);
	return has;
}

int proc__open_perf_map(struct proc *p, struct stat *st)
{
	char path[64];
	int pfd;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", proc__ns_pid(p));
	/*
	 * The runtime writes the file itself: a symlink there, or a file of
	 * another owner, is someone else's, and its contents would be read
	 * with our rights (a root-only file's lines shown as frame names).
	 */
	pfd = path__open_in_root(p->pid, path, O_NOFOLLOW);
	if (pfd < 0)
		return -1;
	if (fstat(pfd, st) || !S_ISREG(st->st_mode) || !proc__has_uid(p, st->st_uid)) {
		close(pfd);
		return -EACCES;
	}
	return fd__reopen_regular(pfd, st);
}

bool proc__comm(struct proc *p, int tid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", p->pid, tid);
	/* a name may hold a newline: the whole name, as the kernel's events carry it */
	if (!file__read_small(path, buf, len))
		return false;
	str__sanitize(buf);
	return true;
}

bool proc__run_delay(struct proc *p, int tid, uint64_t *ns)
{
	unsigned long long exec_ns, delay_ns;
	char path[64], buf[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", p->pid, tid);
	if (!file__read_small(path, buf, sizeof(buf)) ||
	    sscanf(buf, "%llu %llu", &exec_ns, &delay_ns) != 2)
		return false;
	*ns = delay_ns;
	return true;
}

bool proc__started_as(struct proc *p, char *buf, size_t len)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d/cmdline", p->pid);
	if (!file__read_small(path, buf, len))
		return false;
	/* argv[0] ends at its NUL, or at a space in a rewritten title */
	buf[strcspn(buf, " ")] = '\0';
	str__sanitize(buf);
	return buf[0] != '\0';
}

bool proc__exe(struct proc *p, char *buf, size_t len)
{
	char path[32];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", p->pid);
	n = readlink(path, buf, len - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	str__sanitize(buf);
	return true;
}

/*
 * The v2 path (the "0::" line) where it names a cgroup; on hybrid hosts whose
 * init is not systemd every process sits at the v2 root, and on v1-only
 * hosts there is no such line: then systemd's own v1 hierarchy
 * ("N:name=systemd:"), which is where units and container scopes show.
 */
/*
 * The lines of /proc/PID/cgroup ("ID:CONTROLLERS:PATH"): the v2 path, the
 * path of v1's hierarchy holding controller ("name=systemd", "cpu"), NULL
 * when absent. Pointers into text.
 */
static void cgroup_file__find(char *text, const char *controller, const char **v2,
			      const char **v1)
{
	char *line, *save = NULL;
	size_t clen = strlen(controller);

	*v2 = *v1 = NULL;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL;

		if (!path)
			continue;
		if (path == ctrl + 1) {
			*v2 = path + 1;
			continue;
		}
		/* one of the comma-separated controllers of this hierarchy */
		for (const char *c = ctrl + 1; c < path; c += strcspn(c, ",:") + 1)
			if ((size_t)(path - c) >= clen && !strncmp(c, controller, clen) &&
			    (c[clen] == ',' || c[clen] == ':'))
				*v1 = path + 1;
	}
}

static char *cgroup_file__read(struct proc *p)
{
	char path[32];
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", p->pid);
	return file__read_all(path, 1 << 20, &n);
}

bool proc__cgroup(struct proc *p, char *buf, size_t len)
{
	char *text = cgroup_file__read(p);
	const char *v2, *v1;

	if (!text)
		return false;
	cgroup_file__find(text, "name=systemd", &v2, &v1);
	if (v2 && !strcmp(v2, "/") && v1 && strcmp(v1, "/"))
		v2 = NULL;
	if (v2 || v1) {
		snprintf(buf, len, "%s", v2 ? v2 : v1);
		str__sanitize(buf);
	}
	free(text);
	return v2 || v1;
}

bool proc__cpu_cgroup(struct proc *p, char *buf, size_t len, bool *v1_out)
{
	char *text = cgroup_file__read(p);
	const char *v2, *v1;
	bool found;

	if (!text)
		return false;
	cgroup_file__find(text, "cpu", &v2, &v1);
	found = v1 || v2;
	*v1_out = v1 != NULL;
	/* not sanitized: it names a directory, the caller checks it is one */
	if (found)
		snprintf(buf, len, "%s", v1 ? v1 : v2);
	free(text);
	return found && strlen(v1 ? v1 : v2) < len;
}

bool procs__exists(int pid)
{
	char path[32];

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	return access(path, F_OK) == 0;
}

/* the wait calls loop.bpf.c times, those this architecture has */
static bool syscall__is_wait(long nr)
{
	static const long waits[] = {
#ifdef SYS_poll
		SYS_poll,
#endif
#ifdef SYS_select
		SYS_select,
#endif
#ifdef SYS_epoll_wait
		SYS_epoll_wait,
#endif
		SYS_epoll_pwait, SYS_ppoll, SYS_pselect6,
#ifdef SYS_epoll_pwait2
		SYS_epoll_pwait2,
#endif
	};

	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		if (nr == waits[i])
			return true;
	}
	return false;
}

/* Is a thread of pid inside a wait call? Its syscall file's first number says. */
static bool proc__waiting(int pid)
{
	char path[64], line[64];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		int fd;
		ssize_t n;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/syscall", pid, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
		if (n > 0) {
			line[n] = '\0';
			found = syscall__is_wait(strtol(line, NULL, 10));
		}
	}
	closedir(d);
	return found;
}

/* the most waiting processes looked at: more would be a scan too long to run at start */
#define PROCS_WAITING_SCAN 4096

struct waiting {
	int pid;
	uint64_t start_time;
};

static int waiting__newest_first(const void *a, const void *b)
{
	const struct waiting *x = a, *y = b;

	return x->start_time < y->start_time ? 1 : x->start_time > y->start_time ? -1 : 0;
}

size_t procs__waiting(int *pids, size_t max, bool (*wanted)(const char *comm, void *arg),
		      void *arg)
{
	struct waiting *found = malloc(PROCS_WAITING_SCAN * sizeof(*found));
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	if (!found)
		return 0;
	d = opendir("/proc");
	if (!d) {
		free(found);
		return 0;
	}
	while (n < PROCS_WAITING_SCAN && (de = readdir(d))) {
		char path[48], comm[32] = "";
		uint64_t start_time;
		int pid, fd;
		ssize_t len;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pid = atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (len <= 0)
			continue;
		comm[len] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		if (wanted(comm, arg) && proc__waiting(pid) && stat__start_time(pid, &start_time))
			found[n++] = (struct waiting){ .pid = pid, .start_time = start_time };
	}
	closedir(d);
	/*
	 * The newest first: what a user just started is what they run loopwatch
	 * for, and the setup's time budget may end before the list does (a
	 * loaded host, many big runtimes).
	 */
	qsort(found, n, sizeof(*found), waiting__newest_first);
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		pids[i] = found[i].pid;
	free(found);
	return n;
}

int procs__tgid(int tid)
{
	char path[48], line[128];
	int tgid = 0;
	FILE *f;

	if (tid <= 0)
		return 0;
	/* /proc/TID works for any thread id, though only process ids are listed */
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	}
	fclose(f);
	return tgid > 0 ? tgid : 0;
}

char *procs__read_kallsyms(size_t max, size_t *len)
{
	return file__read_all("/proc/kallsyms", max, len);
}

int procs__kptr_restrict(void)
{
	size_t len;
	char *text = file__read_all("/proc/sys/kernel/kptr_restrict", 64, &len);
	int v = text && len && text[0] >= '0' && text[0] <= '9' ? text[0] - '0' : -1;

	free(text);
	return v;
}

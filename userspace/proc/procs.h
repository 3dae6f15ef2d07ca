/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The traced processes as /proc shows them: the only code that opens
 * /proc/PID or reads a target's memory. Every byte read here is untrusted
 * and may vanish mid-read (the process exits, the pid is reused): readers
 * get false, -1 or an empty answer, never a crash.
 *
 * A process is known by (pid, start time, program image): the table re-checks
 * them at most every 100 ms and gives a recycled pid, or a process that ran
 * exec, a fresh entry. An
 * exited process keeps its last maps, so an event that arrives after its
 * exit still finds its files.
 */
#ifndef LOOPWATCH_PROC_PROCS_H
#define LOOPWATCH_PROC_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include "proc/maps.h"

struct procs;
struct proc;

struct procs *procs__new(void);
void procs__free(struct procs *ps);
/*
 * pid's entry, re-validated; NULL when pid was never seen and does not run
 * now (or out of memory). The pointer is valid until the next procs__get.
 */
struct proc *procs__get(struct procs *ps, int pid);
/* Drop what is kept for pid (its pid may be reused by an unrelated process). */
void procs__forget(struct procs *ps, int pid);

int proc__pid(const struct proc *p);
/* in clock ticks since boot (field 22 of /proc/PID/stat) */
uint64_t proc__start_time(const struct proc *p);
/*
 * Which program image it runs (arg_start of /proc/PID/stat): another value
 * after an exec, which the table treats as a new process; 0 when unknown.
 */
uint64_t proc__image(const struct proc *p);
/*
 * /proc/PID/stat's text (NUL-terminated): its start time (field 22) and
 * arg_start (field 48; 0 when absent). false when there is no start time.
 */
bool proc_stat__parse(const char *text, uint64_t *start_time, uint64_t *image);
/* false once the process is known to have exited (its entry stays for late events) */
bool proc__alive(const struct proc *p);

/*
 * The latest maps snapshot, read on first use; refresh re-reads it (after a
 * miss: a dlopen, new JIT code). The caller may keep it with
 * proc_maps__get(). NULL when the maps could never be read.
 */
const struct proc_maps *proc__maps(struct proc *p, bool refresh);
/* len bytes of the target's memory at addr; false unless all were read */
bool proc__read(struct proc *p, uint64_t addr, void *buf, size_t len);
/*
 * The image of a mapping with no file behind it (the vDSO), copied out of
 * the target: malloc'ed, its first max bytes at most (*len), and a hash of
 * them (*hash: the same in every process that maps the same image); NULL.
 */
void *proc__read_image(struct proc *p, const struct proc_mapping *m, size_t max, size_t *len,
		       uint64_t *hash);
/*
 * A readable fd of the file behind a mapping (only a regular file: a FIFO or
 * a device could block or have side effects), opened inside the target's
 * root and checked to be the very inode mapped; -1 if there is none.
 */
int proc__open_mapping(struct proc *p, const struct proc_mapping *m, struct stat *st);
/* A regular file by the path the target sees, inside its root; -1 if none. */
int proc__open_path(struct proc *p, const char *path, struct stat *st);
/*
 * The perf map a JIT writes for the process (/tmp/perf-PID.map: Node's
 * --perf-basic-prof, Python's -X perf), PID as the process knows itself, in
 * its root: a readable fd, -1 when there is none, -EACCES when it is not the
 * process's own (a symlink, a special file, another user's).
 */
int proc__open_perf_map(struct proc *p, struct stat *st);
/* The thread's name (the process's when tid == pid), sanitized; false if gone. */
bool proc__comm(struct proc *p, int tid, char *buf, size_t len);
/*
 * The thread's total wait for a CPU so far (ns), the scheduler's own count
 * (the run_delay of /proc/PID/task/TID/schedstat, sched_info.run_delay in the
 * kernel): exact for every wait that has ended. false if gone.
 */
bool proc__run_delay(struct proc *p, int tid, uint64_t *ns);
/*
 * The name the process was started as: its argv[0] up to the first space (a
 * process that rewrites its title, like Redis, keeps its name first),
 * sanitized: "redis-server" where /proc/PID/exe says redis-check-rdb, the
 * file its symlink points to. The process can write anything there: for
 * showing, never for identity. false if gone or empty.
 */
bool proc__started_as(struct proc *p, char *buf, size_t len);
/* target of /proc/PID/exe, sanitized; false if gone or unreadable */
bool proc__exe(struct proc *p, char *buf, size_t len);
/*
 * the cgroup v2 path ("0::/..." line of /proc/PID/cgroup), or systemd's v1 one
 * where v2 says only "/" (hybrid hosts) or is missing; sanitized; false if none
 */
bool proc__cgroup(struct proc *p, char *buf, size_t len);
/*
 * the path of the cgroup whose CPU controller rules the process: v1's cpu
 * hierarchy (*v1 set), else v2's; false if none, or too long for buf
 */
bool proc__cpu_cgroup(struct proc *p, char *buf, size_t len, bool *v1);

/* Is there a process with this pid now? */
bool procs__exists(int pid);
/*
 * Processes with a thread inside a wait call now (epoll_wait, poll, select
 * and their variants, as /proc/PID/task/TID/syscall shows): the loops
 * already waiting when loopwatch starts. At most max pids, those wanted()
 * keeps (given the process's name), the most recently started first; how
 * many were written.
 */
size_t procs__waiting(int *pids, size_t max, bool (*wanted)(const char *comm, void *arg),
		      void *arg);
/* The process a thread id belongs to (itself for a process id); 0 if gone. */
int procs__tgid(int tid);
/* /proc/kallsyms' text (malloc'ed, NUL-terminated), at most max bytes; NULL if unreadable */
char *procs__read_kallsyms(size_t max, size_t *len);
/* kernel.kptr_restrict (2: kallsyms' addresses hidden even from root); -1 if unreadable */
int procs__kptr_restrict(void);
/*
 * Turn an O_PATH fd into a readable one, only for a regular file of at least
 * one byte; closes pfd. -1 if not.
 */
int fd__reopen_regular(int pfd, struct stat *st);

#endif

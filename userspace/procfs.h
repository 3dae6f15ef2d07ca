/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reads from /proc about traced processes. Everything read is untrusted and may vanish. */
#ifndef LOOPWATCH_PROCFS_H
#define LOOPWATCH_PROCFS_H

#include <stdbool.h>
#include <stddef.h>

bool proc__exists(int pid);
/* thread name of tid in pid (or the process name when tid == pid); false if gone */
bool proc__read_comm(int pid, int tid, char *buf, size_t len);
/* target of /proc/PID/exe; false if gone or unreadable */
bool proc__read_exe(int pid, char *buf, size_t len);
/* the process's cgroup v2 path ("0::/..." line of /proc/PID/cgroup); false if none */
bool proc__read_cgroup(int pid, char *buf, size_t len);
struct stat;
/*
 * path as pid sees it, resolved inside pid's root (an absolute symlink in a
 * container cannot escape to the host's files): an O_PATH fd, or -1.
 */
int proc__open_in_root(int pid, const char *path);
/*
 * Turn an O_PATH fd into a readable one, only for a regular file: opening a
 * FIFO or a device could block or have side effects. Closes pfd; -1 if not.
 */
int fd__reopen_regular(int pfd, struct stat *st);
/* printable copy of untrusted text: control characters become '?' */
void str__sanitize(char *s);

#endif

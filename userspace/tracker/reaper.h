/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Uprobe links of processes that are gone, destroyed by a thread of their
 * own. Removing a link waits for the kernel's RCU grace period (~0.5-1 s a
 * link on a loaded host): done on the main loop, the links of a few exited
 * processes kept loopwatch from reading the ring buffer for seconds, and a
 * short-lived loop's NEW_LOOP came only after it had gone (no labels).
 * Links given are the reaper's alone.
 */
#ifndef LOOPWATCH_TRACKER_REAPER_H
#define LOOPWATCH_TRACKER_REAPER_H

#include <stddef.h>

struct uprobe_links;
struct reaper;

/* NULL when no thread could be started: reaper__put then destroys at once. */
struct reaper *reaper__new(void);
/* links are destroyed, later, by the reaper's thread (or now if its queue is full) */
void reaper__put(struct reaper *r, struct uprobe_links *links);
/* The fds of the links given and not yet destroyed: they still count as open. */
size_t reaper__fds(struct reaper *r);
/* Waits until every link given is destroyed. */
void reaper__free(struct reaper *r);

#endif

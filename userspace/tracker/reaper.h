/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Links of processes that are gone, destroyed by a thread of their own.
 * Removing a uprobe waits for the kernel's RCU grace period (~0.5-1 s a link
 * on a loaded host): done on the main loop, the links of a few exited
 * processes kept loopwatch from reading the ring buffer for seconds, and a
 * short-lived loop's NEW_LOOP came only after it had gone (no labels).
 */
#ifndef LOOPWATCH_TRACKER_REAPER_H
#define LOOPWATCH_TRACKER_REAPER_H

struct bpf_link;
struct reaper;

/* NULL when no thread could be started: reaper__put then destroys at once. */
struct reaper *reaper__new(void);
/* link is destroyed, later, by the reaper's thread (or now if its queue is full) */
void reaper__put(struct reaper *r, struct bpf_link *link);
/* Waits until every link given is destroyed. */
void reaper__free(struct reaper *r);

#endif

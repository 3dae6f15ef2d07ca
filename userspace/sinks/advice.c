// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "sinks/advice.h"

/* a host that takes this share of the stall time, without being the largest part, adds to it */
#define ADVICE_RUNQ_ADDS 0.2

const char *advice__culprit(const char *via, enum stall_cause cause)
{
	if (cause == CAUSE_RUNQ)
		return "the thread was runnable but had no CPU: the host (or the cgroup's CPU "
		       "quota) is short of CPU; raise its CPU share or move other work off the "
		       "machine.";
	if (cause == CAUSE_CPU) {
		if (strstr(via, "json") || strstr(via, "pickle"))
			return "serializing on the loop: encode in a worker thread or process "
			       "(run_in_executor), send smaller documents, or use a faster "
			       "encoder.";
		return "CPU work on the loop: move it to a worker thread or process "
		       "(run_in_executor, worker_threads), or split it into chunks that yield "
		       "to the loop.";
	}
	if (!strncmp(via, "fsync", 5) || !strncmp(via, "fdatasync", 9) ||
	    !strncmp(via, "sync_file_range", 15))
		return "a disk flush on the loop: flush from a thread, or batch the writes.";
	if (strstr(via, "sleep"))
		return "a blocking sleep on the loop: use the loop's timer (asyncio.sleep, "
		       "setTimeout) instead.";
	if (!strcmp(via, "futex"))
		return "waiting for a lock another thread holds: do not take contended locks "
		       "on the loop; hand the work to that thread instead.";
	if (!strncmp(via, "read", 4) || !strncmp(via, "recv", 4) || !strcmp(via, "connect") ||
	    strstr(via, "poll") || strstr(via, "select"))
		return "a blocking read or network call on the loop: use the loop's async client "
		       "(or run the call in an executor), with a timeout.";
	return "a blocking call on the loop: make it asynchronous or run it in a thread "
	       "(run_in_executor).";
}

const char *advice__runq(const __u64 stall_ns[3])
{
	__u64 total = stall_ns[CAUSE_CPU] + stall_ns[CAUSE_BLOCKED] + stall_ns[CAUSE_RUNQ];
	enum stall_cause main = stall_cause__of(stall_ns[CAUSE_CPU], stall_ns[CAUSE_BLOCKED],
						stall_ns[CAUSE_RUNQ]);

	if (!total)
		return "No stall time: nothing to say about the CPU.";
	if (main == CAUSE_RUNQ)
		return "**The host starves this loop**: waiting for a CPU is the largest part of "
		       "the stall time; raise the process's CPU share (nice, the cgroup's "
		       "cpu.weight or quota) or move other work off the machine.";
	if ((double)stall_ns[CAUSE_RUNQ] >= ADVICE_RUNQ_ADDS * (double)total)
		return main == CAUSE_CPU ?
		       "The host adds to the stalls, but their largest part is the code's own "
		       "work on CPU: fix that first." :
		       "The host adds to the stalls, but their largest part is the code's own "
		       "blocking calls: fix those first.";
	return main == CAUSE_CPU ?
	       "The stalls come from the code's own work on CPU, not from a lack of CPU." :
	       "The stalls come from the code's own blocking calls, not from a lack of CPU.";
}

const char *advice__throttled(bool most)
{
	if (most)
		return "**The CPU quota starves this loop**, not the host: raise the quota, or "
		       "move the CPU-heavy work out of the loop's cgroup (a worker in its own "
		       "cgroup), so the loop's share is not spent by its neighbours.";
	return "The quota adds to the waits; the rest is the host's other work.";
}

const char *advice__hung(bool ended, enum stall_cause cause)
{
	if (ended) {
		if (cause == CAUSE_CPU)
			return "It ended: a long computation on the loop, not a deadlock; move it "
			       "off the loop or split it into chunks.";
		if (cause == CAUSE_BLOCKED)
			return "It ended: a long blocking call on the loop, not a deadlock; give it "
			       "a timeout or move it off the loop.";
		return "It ended: it mostly waited for a CPU, not for the code; the host starved "
		       "it.";
	}
	if (cause == CAUSE_CPU)
		return "It had not ended when last seen, running on CPU: look for a loop that "
		       "does not terminate there.";
	if (cause == CAUSE_BLOCKED)
		return "It had not ended when last seen, asleep: a loop that never returns to its "
		       "wait handles no event at all; look for a deadlock or a call without a "
		       "timeout there.";
	return "It had not ended when last seen, waiting for a CPU: the host starves it.";
}

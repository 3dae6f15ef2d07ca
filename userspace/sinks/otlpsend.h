/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * OTLP/HTTP's transport: a bounded queue of encoded requests and one sender
 * thread that POSTs them (HTTP/1.1, one connection a request, plain http://).
 * The collection never waits on the network: otlp_sender__push takes a lock
 * for a pointer swap and never blocks; a full queue drops its oldest request
 * (counted). A failed request (connection refused, timeout, 429, 5xx) is
 * retried with exponential backoff (0.5 s doubling to 30 s) while it is the
 * oldest; one the receiver refuses outright (another 4xx) is dropped,
 * counted, said once.
 */
#ifndef LOOPWATCH_SINKS_OTLPSEND_H
#define LOOPWATCH_SINKS_OTLPSEND_H

#include <stdbool.h>
#include <stddef.h>
#include "lib/lwtypes.h"

/* what goes where: the request kinds, each to its path */
enum otlp_signal { OTLP_METRICS, OTLP_LOGS, OTLP_NSIGNALS };

/* the sender's own counts (loopwatch's metrics) */
struct otlp_counts {
	__u64 sent;		/* requests the receiver accepted */
	__u64 dropped;		/* requests dropped: queue full, or given up at exit */
	__u64 refused;		/* requests the receiver refused (4xx but 429) */
	__u64 failures;		/* attempts that failed and were retried */
	__u64 queued_bytes;	/* in the queue now */
};

struct otlp_sender;

/*
 * url: http://HOST[:PORT][/PREFIX]; requests go to PREFIX/v1/metrics and
 * PREFIX/v1/logs, as application/json when json, else application/x-protobuf.
 * NULL with a one-line reason in err.
 */
struct otlp_sender *otlp_sender__new(const char *url, size_t max_bytes, bool json, char *err,
				     size_t errlen);
/* Queue one encoded request (ownership of buf passes); never blocks. */
void otlp_sender__push(struct otlp_sender *s, enum otlp_signal sig, void *buf, size_t len);
void otlp_sender__counts(struct otlp_sender *s, struct otlp_counts *out);
/*
 * Send what is queued for at most wait_s more, then stop the thread and free;
 * final (may be NULL): the counts at the end, what was left counted dropped.
 */
void otlp_sender__free(struct otlp_sender *s, double wait_s, struct otlp_counts *final);

#endif

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An epoll loop whose stalls come from a known chain of calls, built with
 * -O2 -fomit-frame-pointer (chainwork) and with frame pointers
 * (chainwork_fp): the unwinder must find every caller either way.
 *
 *   cpu: main > serve_once > handle_request > parse_payload > checksum_block
 *        (a checksum over a buffer, ~15 ms)
 *   io:  main > serve_once > handle_request > store_record > flush_journal
 *        > write() and fsync() of a journal, four times and for >= 8 ms
 *   quiet: 0.2 ms of work, no stall
 *
 * Records ground truth per iteration: its kind, when it started (wall
 * clock) and its busy time.
 *
 * usage: chainwork OUT.json ITERATIONS [--go]   (cpu, io, quiet, quiet, ...)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "groundtruth.h"

#define MAX_RECORDS 4096
/* chainwork_minidebug makes them static */
#ifndef CHAIN
#define CHAIN __attribute__((noipa))
#endif

static struct iter_record records[MAX_RECORDS];
static int nrecords;
static unsigned char payload[64 << 10];
static char journal[1 << 20];
static int journal_fd;
/* results go here, so that no call in the chain is a tail call the frame would vanish in */
volatile uint64_t sink;

CHAIN uint64_t checksum_block(const unsigned char *p, size_t len, uint64_t ns)
{
	uint64_t end = now_ns() + ns, h = 1469598103934665603ull;

	do {
		for (size_t i = 0; i < len; i++)
			h = (h ^ p[i]) * 1099511628211ull;
	} while (now_ns() < end);
	return h;
}

CHAIN uint64_t parse_payload(void)
{
	uint64_t h = checksum_block(payload, sizeof(payload), 15000000);

	sink += h;
	return h;
}

/*
 * At least rounds writes and fsyncs, and on for at least min_ns: a fast disk
 * must not make an io iteration shorter than the tests' threshold.
 */
CHAIN int flush_journal(int rounds, uint64_t min_ns)
{
	uint64_t end = now_ns() + min_ns;
	int err = 0;

	for (int i = 0; i < rounds || now_ns() < end; i++) {
		/* the same 4 MiB over and over: the file stays small */
		if (i % 4 == 0 && lseek(journal_fd, 0, SEEK_SET))
			err = -1;
		if (write(journal_fd, journal, sizeof(journal)) != (ssize_t)sizeof(journal))
			err = -1;
		if (fsync(journal_fd))
			err = -1;
	}
	sink += (uint64_t)err;
	return err;
}

CHAIN int store_record(void)
{
	int err = flush_journal(4, 8000000);

	sink += (uint64_t)err;
	return err;
}

CHAIN void quiet_work(void)
{
	spin_ns(200000);
	sink++;
}

CHAIN void handle_request(const char *kind)
{
	if (!strcmp(kind, "cpu"))
		sink += parse_payload();
	else if (!strcmp(kind, "io"))
		sink += (uint64_t)store_record();
	else
		quiet_work();
	sink++;
}

CHAIN void serve_once(const char *kind)
{
	handle_request(kind);
	sink++;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "cpu", "io", "quiet", "quiet" };
	struct epoll_event out[4];
	char path[64];
	int n, ep, tfd;

	if (argc < 3) {
		fprintf(stderr, "usage: chainwork OUT ITERATIONS [--go]\n");
		return 2;
	}
	n = atoi(argv[2]);
	memset(payload, 7, sizeof(payload));
	memset(journal, 'j', sizeof(journal));
	snprintf(path, sizeof(path), "/var/tmp/chainwork-%d.dat", getpid());
	journal_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (journal_fd < 0)
		return 3;
	unlink(path);	/* the open fd keeps it; nothing is left behind */
	/* ahead of ordinary jobs: the test compares stacks, not the host's load */
	setpriority(PRIO_PROCESS, 0, -10);
	if (go__await(argc > 3 && !strcmp(argv[3], "--go")))
		return 1;
	ep = ticker__open(30000000, &tfd);
	for (int i = 0; i < n && nrecords < MAX_RECORDS; i++) {
		struct iter_record *r = &records[nrecords++];
		uint64_t t0 = ticker__next(ep, tfd, &r->start_wall);

		if (!t0)
			return 1;
		r->label = kinds[i % 4];
		serve_once(r->label);
		r->busy_ns = now_ns() - t0;
	}
	epoll_wait(ep, out, 4, 0);
	close(journal_fd);
	return iter_records__write(argv[1], "kind", "", records, nrecords) ? 1 : 0;
}

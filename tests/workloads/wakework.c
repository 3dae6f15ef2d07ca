// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An epoll loop (one iteration every 50 ms) that asks a worker thread named
 * "answerer" for something and waits for the answer inside the iteration:
 * on a pipe (a blocking read) or on a futex (a condition variable). The
 * worker takes ANSWER_MS (25) of sleep and then answers: the loop's stall is
 * asleep, and the worker is who woke it. Ground truth: the worker's thread
 * id, and each iteration's own time asleep waiting for the answer.
 *
 * process: the answerer is a process of its own (forked, named "answerer"),
 * answering on the pipes: a local service.
 *
 * usage: wakework OUT.json ITERATIONS pipe|futex|process [--go]
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "groundtruth.h"

#define ANSWER_MS 25
#define MAX_ITER 1024

static int req_pipe[2], ans_pipe[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t asked = PTHREAD_COND_INITIALIZER, answered = PTHREAD_COND_INITIALIZER;
static int questions, answers;
static bool use_futex, stop;
static long worker_tid;

static void *answerer__run(void *arg)
{
	char c;

	(void)arg;
	worker_tid = syscall(SYS_gettid);
	for (;;) {
		if (use_futex) {
			pthread_mutex_lock(&lock);
			while (questions == answers && !stop)
				pthread_cond_wait(&asked, &lock);
			pthread_mutex_unlock(&lock);
			if (stop)
				return NULL;
		} else if (read(req_pipe[0], &c, 1) != 1) {
			return NULL;
		}
		usleep(ANSWER_MS * 1000);
		if (use_futex) {
			pthread_mutex_lock(&lock);
			answers++;
			pthread_cond_signal(&answered);
			pthread_mutex_unlock(&lock);
		} else if (write(ans_pipe[1], "a", 1) != 1) {
			return NULL;
		}
	}
}

/* Ask and wait for the answer: the iteration's sleep. */
static void ask_answerer(void)
{
	char c;

	if (use_futex) {
		pthread_mutex_lock(&lock);
		questions++;
		pthread_cond_signal(&asked);
		while (answers < questions)
			pthread_cond_wait(&answered, &lock);
		pthread_mutex_unlock(&lock);
		return;
	}
	if (write(req_pipe[1], "q", 1) != 1 || read(ans_pipe[0], &c, 1) != 1)
		exit(1);
}

int main(int argc, char **argv)
{
	static uint64_t waited_ns[MAX_ITER];
	int ep, tfd, n;
	pthread_t worker;
	double wall;
	FILE *f;

	if (argc < 4 || (strcmp(argv[3], "pipe") && strcmp(argv[3], "futex") &&
			 strcmp(argv[3], "process"))) {
		fprintf(stderr, "usage: wakework OUT.json ITERATIONS pipe|futex|process [--go]\n");
		return 2;
	}
	n = atoi(argv[2]);
	if (n <= 0 || n > MAX_ITER)
		return 2;
	use_futex = !strcmp(argv[3], "futex");
	if (pipe(req_pipe) || pipe(ans_pipe))
		return 1;
	if (go__await(!strcmp(argv[argc - 1], "--go")))
		return 1;
	if (!strcmp(argv[3], "process")) {
		pid_t child = fork();

		if (child < 0)
			return 1;
		if (!child) {
			prctl(PR_SET_NAME, "answerer");
			close(req_pipe[1]);
			close(ans_pipe[0]);
			answerer__run(NULL);
			_exit(0);
		}
		close(req_pipe[0]);
		close(ans_pipe[1]);
		worker_tid = child;
	} else {
		pthread_create(&worker, NULL, answerer__run, NULL);
		pthread_setname_np(worker, "answerer");
	}
	ep = ticker__open(50000000, &tfd);
	for (int i = 0; i < n; i++) {
		uint64_t t0;

		if (!ticker__next(ep, tfd, &wall))
			return 1;
		t0 = now_ns();
		ask_answerer();
		waited_ns[i] = now_ns() - t0;
	}
	/* the last iteration ends at a wait call */
	ticker__next(ep, tfd, &wall);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "{\"pid\":%d,\"tid\":%ld,\"worker_tid\":%ld,\"mode\":\"%s\",\"waited_ns\":[",
		getpid(), syscall(SYS_gettid), worker_tid, argv[3]);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)waited_ns[i]);
	fprintf(f, "]}\n");
	return fclose(f) ? 1 : 0;
}

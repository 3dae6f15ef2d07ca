// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "lib/clock.h"
#include "sinks/otlpsend.h"

#define OTLP_HOST_LEN 256
#define OTLP_PATH_LEN 512
/* a request's whole exchange: connect, send, the status line */
#define OTLP_TIMEOUT_MS 5000
#define OTLP_BACKOFF_MIN_S 0.5
#define OTLP_BACKOFF_MAX_S 30.0

struct otlp_request {
	enum otlp_signal sig;
	void *buf;
	size_t len;
	struct otlp_request *next;
};

struct otlp_sender {
	char host[OTLP_HOST_LEN];
	char port[8];
	char path[OTLP_NSIGNALS][OTLP_PATH_LEN];
	size_t max_bytes;
	const char *content_type;	/* of the encoding otlp.c writes */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* under lock */
	struct otlp_request *head, *tail;
	struct otlp_request *inflight;	/* out of the queue while the sender sends it */
	bool inflight_doomed;		/* its room was needed: dropped whatever happens */
	bool stopping;
	double stop_by;		/* CLOCK_MONOTONIC: give up what is left after this */
	struct otlp_counts counts;
	bool said_refused[OTLP_NSIGNALS];
};

static const char *const signal_paths[OTLP_NSIGNALS] = { "/v1/metrics", "/v1/logs" };

static int url__parse(struct otlp_sender *s, const char *url, char *err, size_t errlen)
{
	const char *p = url, *host, *end, *colon;
	size_t hlen;

	if (strncmp(p, "http://", 7)) {
		snprintf(err, errlen, "--otlp %s: only http://HOST[:PORT][/PATH] (no TLS: send "
			 "through a local OpenTelemetry Collector)", url);
		return -1;
	}
	host = p + 7;
	end = host + strcspn(host, "/");
	colon = memchr(host, ':', (size_t)(end - host));
	hlen = (size_t)((colon ? colon : end) - host);
	if (!hlen || hlen >= sizeof(s->host)) {
		snprintf(err, errlen, "--otlp %s: no host", url);
		return -1;
	}
	memcpy(s->host, host, hlen);
	s->host[hlen] = '\0';
	if (colon) {
		size_t plen = (size_t)(end - colon - 1);
		char *stop;
		long port;

		if (!plen || plen >= sizeof(s->port)) {
			snprintf(err, errlen, "--otlp %s: bad port", url);
			return -1;
		}
		memcpy(s->port, colon + 1, plen);
		s->port[plen] = '\0';
		port = strtol(s->port, &stop, 10);
		if (*stop || port < 1 || port > 65535) {
			snprintf(err, errlen, "--otlp %s: bad port", url);
			return -1;
		}
	} else {
		snprintf(s->port, sizeof(s->port), "4318");
	}
	for (const char *c = end; *c; c++) {
		if ((unsigned char)*c <= ' ' || *c == '?' || *c == '#') {
			snprintf(err, errlen, "--otlp %s: bad path", url);
			return -1;
		}
	}
	/* a trailing slash is not part of the prefix */
	hlen = strlen(end);
	while (hlen && end[hlen - 1] == '/')
		hlen--;
	for (int i = 0; i < OTLP_NSIGNALS; i++) {
		if (hlen + strlen(signal_paths[i]) >= OTLP_PATH_LEN) {
			snprintf(err, errlen, "--otlp %s: path too long", url);
			return -1;
		}
		snprintf(s->path[i], OTLP_PATH_LEN, "%.*s%s", (int)hlen, end, signal_paths[i]);
	}
	return 0;
}

static int ms__left(double deadline)
{
	double left = deadline - clock__mono();

	return left > 0 ? (int)(left * 1000) + 1 : 0;
}

static int fd__wait(int fd, short events, double deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&p, 1, ms__left(deadline));
	} while (n < 0 && errno == EINTR);
	return n > 0 ? 0 : -1;
}

static int sock__connect(const struct otlp_sender *s, double deadline)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1;

	if (getaddrinfo(s->host, s->port, &hints, &res))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen) ||
		    (errno == EINPROGRESS && !fd__wait(fd, POLLOUT, deadline) &&
		     !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) && !soerr))
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int sock__send(int fd, const char *p, size_t len, double deadline)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (fd__wait(fd, POLLOUT, deadline))
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The response's status code, read from its first line; -1: none in time. */
static int sock__status(int fd, double deadline)
{
	char buf[64];
	size_t used = 0;
	int code;

	while (used < sizeof(buf) - 1 && !memchr(buf, '\n', used)) {
		ssize_t n = recv(fd, buf + used, sizeof(buf) - 1 - used, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (fd__wait(fd, POLLIN, deadline))
				return -1;
			continue;
		}
		if (n <= 0)
			break;
		used += (size_t)n;
	}
	buf[used] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
		return -1;
	return code;
}

/* One POST: the HTTP status, or -1 (no connection, no answer in time). */
static int request__post(const struct otlp_sender *s, const struct otlp_request *r)
{
	double deadline = clock__mono() + OTLP_TIMEOUT_MS / 1000.0;
	char head[1024];
	int fd, len, code = -1;

	len = snprintf(head, sizeof(head),
		       "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: %s\r\n"
		       "Content-Length: %zu\r\nConnection: close\r\nUser-Agent: loopwatch\r\n\r\n",
		       s->path[r->sig], s->host, s->port, s->content_type, r->len);
	if (len < 0 || (size_t)len >= sizeof(head))
		return -1;
	fd = sock__connect(s, deadline);
	if (fd < 0)
		return -1;
	if (!sock__send(fd, head, (size_t)len, deadline) &&
	    !sock__send(fd, r->buf, r->len, deadline))
		code = sock__status(fd, deadline);
	close(fd);
	return code;
}

static void request__free(struct otlp_request *r)
{
	free(r->buf);
	free(r);
}

/* under lock: the oldest request out of the queue */
static void queue__pop(struct otlp_sender *s)
{
	struct otlp_request *r = s->head;

	s->head = r->next;
	if (!s->head)
		s->tail = NULL;
	s->counts.queued_bytes -= r->len;
	request__free(r);
}

static void sender__wait(struct otlp_sender *s, double until)
{
	struct timespec ts;
	double wall = clock__wall() + (until - clock__mono());

	ts.tv_sec = (time_t)wall;
	ts.tv_nsec = (long)((wall - (double)ts.tv_sec) * 1e9);
	pthread_cond_timedwait(&s->wake, &s->lock, &ts);
}

/*
 * The oldest request is taken out of the queue while it is sent (unlocked):
 * its bytes still count against the queue's bound. A request that failed
 * goes back to the head for its retry, unless pushes meanwhile needed its
 * room (inflight_doomed): then it is dropped, the newer data kept.
 */
static void *sender__run(void *arg)
{
	struct otlp_sender *s = arg;
	double backoff = OTLP_BACKOFF_MIN_S, retry_at = 0;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct otlp_request *r;
		int code;

		if (s->stopping && (!s->head || clock__mono() >= s->stop_by))
			break;
		if (!s->head || (retry_at && clock__mono() < retry_at)) {
			double until = s->head && retry_at ? retry_at : clock__mono() + 1.0;

			if (s->stopping && s->stop_by < until)
				until = s->stop_by;
			sender__wait(s, until);
			continue;
		}
		r = s->head;
		s->head = r->next;
		if (!s->head)
			s->tail = NULL;
		r->next = NULL;
		s->inflight = r;
		s->inflight_doomed = false;
		pthread_mutex_unlock(&s->lock);
		code = request__post(s, r);
		pthread_mutex_lock(&s->lock);
		s->inflight = NULL;
		if (!s->inflight_doomed)
			s->counts.queued_bytes -= r->len;
		if (code >= 200 && code < 300) {
			s->counts.sent++;
			/* it went after all: not a drop */
			s->counts.dropped -= s->inflight_doomed;
		} else if (code >= 400 && code < 500 && code != 429 && code != 408) {
			s->counts.refused++;
			s->counts.dropped -= s->inflight_doomed;
			if (!s->said_refused[r->sig]) {
				s->said_refused[r->sig] = true;
				fprintf(stderr, "loopwatch: --otlp: %s refused with HTTP %d: not sent "
					"again\n", s->path[r->sig], code);
			}
		} else {
			s->counts.failures++;
			retry_at = clock__mono() + backoff;
			backoff = backoff * 2 < OTLP_BACKOFF_MAX_S ? backoff * 2 : OTLP_BACKOFF_MAX_S;
			if (!s->inflight_doomed) {
				/* back to the head, to be retried first */
				r->next = s->head;
				s->head = r;
				if (!s->tail)
					s->tail = r;
				s->counts.queued_bytes += r->len;
				continue;
			}
			request__free(r);
			continue;
		}
		request__free(r);
		retry_at = 0;
		backoff = OTLP_BACKOFF_MIN_S;
	}
	while (s->head) {
		s->counts.dropped++;
		queue__pop(s);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct otlp_sender *otlp_sender__new(const char *url, size_t max_bytes, bool json, char *err,
				     size_t errlen)
{
	struct otlp_sender *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (url__parse(s, url, err, errlen)) {
		free(s);
		return NULL;
	}
	s->max_bytes = max_bytes;
	s->content_type = json ? "application/json" : "application/x-protobuf";
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	if (pthread_create(&s->thread, NULL, sender__run, s)) {
		snprintf(err, errlen, "--otlp: cannot start its sender thread");
		pthread_cond_destroy(&s->wake);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return NULL;
	}
	return s;
}

void otlp_sender__push(struct otlp_sender *s, enum otlp_signal sig, void *buf, size_t len)
{
	struct otlp_request *r = calloc(1, sizeof(*r));

	if (!r) {
		free(buf);
		pthread_mutex_lock(&s->lock);
		s->counts.dropped++;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	r->sig = sig;
	r->buf = buf;
	r->len = len;
	pthread_mutex_lock(&s->lock);
	if (s->said_refused[sig]) {
		/* the receiver takes none of these (Prometheus takes no logs) */
		s->counts.refused++;
		request__free(r);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	/* room first: the oldest go, the newest numbers are the ones worth having */
	while (s->counts.queued_bytes + len > s->max_bytes) {
		if (s->inflight && !s->inflight_doomed) {
			/* the oldest of all is being sent: it is not retried */
			s->inflight_doomed = true;
			s->counts.queued_bytes -= s->inflight->len;
			s->counts.dropped++;
		} else if (s->head) {
			s->counts.dropped++;
			queue__pop(s);
		} else {
			break;
		}
	}
	if (len > s->max_bytes) {
		s->counts.dropped++;
		request__free(r);
	} else {
		if (s->tail)
			s->tail->next = r;
		else
			s->head = r;
		s->tail = r;
		s->counts.queued_bytes += len;
	}
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
}

void otlp_sender__counts(struct otlp_sender *s, struct otlp_counts *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->counts;
	pthread_mutex_unlock(&s->lock);
}

void otlp_sender__free(struct otlp_sender *s, double wait_s, struct otlp_counts *final)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	s->stop_by = clock__mono() + wait_s;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	if (final)
		*final = s->counts;
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

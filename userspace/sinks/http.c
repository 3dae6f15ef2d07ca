// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The scrape endpoint (--listen ADDR:PORT): /metrics in the text exposition
 * format, or OpenMetrics when the scraper asks for it, from the registry the
 * textfile renders; /healthz. No thread: the listening socket and every
 * connection are non-blocking descriptors in the collector's poll loop. A
 * complete /metrics request makes the sink due at once, so the main loop
 * drains the kernel's numbers and renders them fresh, like node_exporter.
 *
 * A scraper never holds collection up: at most HTTP_MAX_CONNS connections
 * (a new one pushes the oldest out), a request must arrive whole within
 * HTTP_REQUEST_TIMEOUT_S and its answer leave within HTTP_WRITE_TIMEOUT_S,
 * and nothing here ever waits on a socket.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "lib/clock.h"
#include "sinks/httpreq.h"
#include "sinks/promproto.h"
#include "sinks/promreg.h"
#include "sinks/sink.h"

#define HTTP_MAX_CONNS 16
#define HTTP_REQUEST_MAX 8192
#define HTTP_REQUEST_TIMEOUT_S 5.0
#define HTTP_WRITE_TIMEOUT_S 10.0

/* One rendered exposition, shared by the connections that asked for it. */
struct http_body {
	int refs;
	char *data;
	size_t len;
};

enum conn_state { CONN_FREE, CONN_READING, CONN_RENDER, CONN_WRITING };

struct http_conn {
	int fd;
	enum conn_state state;
	double since_s;		/* accepted: the oldest goes first */
	double deadline_s;	/* the request must arrive, or the answer leave, by then */
	struct http_request req;
	char buf[HTTP_REQUEST_MAX + 1];
	size_t len;
	char head[512];		/* status line and headers */
	size_t head_len;
	struct http_body *body;
	const char *text;	/* a short body of our own, when body is NULL */
	size_t text_len;
	size_t sent;		/* of head + body */
};

struct http_server {
	int fd;
	struct prom_registry *reg;
	struct http_conn conns[HTTP_MAX_CONNS];
	double pending_since_s;	/* a /metrics request waits for a render; 0: none */
	bool started;
	double last_interval_s;	/* monotonic, of the latest interval the model closed */
	double interval_s;
};

static void body__put(struct http_body *b)
{
	if (b && --b->refs == 0) {
		free(b->data);
		free(b);
	}
}

static void conn__close(struct http_conn *c)
{
	if (c->state == CONN_FREE)
		return;
	close(c->fd);
	body__put(c->body);
	c->body = NULL;
	c->state = CONN_FREE;
}

static void conn__drop(struct http_server *hs, struct http_conn *c)
{
	conn__close(c);
	prom_registry__count(hs->reg, PROM_SELF_CONNS_DROPPED, 1);
}

/* As much of the answer as the socket takes now; closes the connection once all is sent. */
static void conn__write(struct http_conn *c)
{
	for (;;) {
		size_t body_len = c->body ? c->body->len : c->text_len;
		const char *body = c->body ? c->body->data : c->text;
		struct iovec iov[2];
		struct msghdr msg = { .msg_iov = iov };
		ssize_t n;

		if (c->sent >= c->head_len + body_len) {
			conn__close(c);
			return;
		}
		if (c->sent < c->head_len) {
			iov[msg.msg_iovlen++] = (struct iovec){ c->head + c->sent,
								c->head_len - c->sent };
			if (body_len)
				iov[msg.msg_iovlen++] = (struct iovec){ (void *)body, body_len };
		} else {
			iov[msg.msg_iovlen++] = (struct iovec){
				(void *)(body + (c->sent - c->head_len)),
				body_len - (c->sent - c->head_len) };
		}
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn__close(c);
			return;
		}
		c->sent += (size_t)n;
	}
}

/* The answer: a status, a content type, and either a shared body or a text of ours. */
static void conn__respond(struct http_conn *c, const char *status, const char *type,
			  struct http_body *body, const char *text, double now_s)
{
	size_t len = body ? body->len : strlen(text);

	c->head_len = (size_t)snprintf(c->head, sizeof(c->head),
				       "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
				       "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
				       status, type, len,
				       !strncmp(status, "405", 3) ? "Allow: GET, HEAD\r\n" : "");
	c->body = body;
	if (body)
		body->refs++;
	c->text = body ? NULL : text;
	c->text_len = body ? 0 : len;
	/* HEAD: the same headers, no body */
	if (c->req.method == HTTP_HEAD) {
		body__put(c->body);
		c->body = NULL;
		c->text_len = 0;
	}
	c->sent = 0;
	c->state = CONN_WRITING;
	c->deadline_s = now_s + HTTP_WRITE_TIMEOUT_S;
	conn__write(c);
}

static const char *health__text(const struct http_server *hs, double now_s, bool *ok)
{
	double every = hs->interval_s > 1 ? hs->interval_s : 1;

	*ok = false;
	if (!hs->started)
		return "starting: BPF programs not attached yet\n";
	if (hs->last_interval_s && now_s - hs->last_interval_s > 3 * every + 5)
		return "stalled: no collection interval has ended lately\n";
	*ok = true;
	return "ok\n";
}

static const char index_text[] =
	"loopwatch: event-loop lag, from outside the process.\n"
	"/metrics  Prometheus text format (OpenMetrics when asked for)\n"
	"/healthz  200 while collection runs\n";

/* A whole request head arrived: answer it now, or wait for the next render. */
static void conn__request(struct http_server *hs, struct http_conn *c, double now_s)
{
	const char *text;
	bool ok;

	if (c->req.method == HTTP_OTHER) {
		conn__respond(c, "405 Method Not Allowed", "text/plain", NULL,
			      "only GET and HEAD\n", now_s);
	} else if (!strcmp(c->req.path, "/metrics")) {
		c->state = CONN_RENDER;
		if (!hs->pending_since_s)
			hs->pending_since_s = now_s;
	} else if (!strcmp(c->req.path, "/healthz")) {
		text = health__text(hs, now_s, &ok);
		conn__respond(c, ok ? "200 OK" : "503 Service Unavailable", "text/plain", NULL,
			      text, now_s);
	} else if (!strcmp(c->req.path, "/")) {
		conn__respond(c, "200 OK", "text/plain", NULL, index_text, now_s);
	} else {
		conn__respond(c, "404 Not Found", "text/plain", NULL, "not found\n", now_s);
	}
}

static void conn__read(struct http_server *hs, struct http_conn *c, double now_s)
{
	ssize_t n;
	int ret;

	do {
		n = recv(c->fd, c->buf + c->len, HTTP_REQUEST_MAX - c->len, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		conn__close(c);
		return;
	}
	c->len += (size_t)n;
	c->buf[c->len] = '\0';
	ret = http_request__parse(c->buf, c->len, &c->req);
	if (ret > 0) {
		conn__request(hs, c, now_s);
	} else if (ret < 0) {
		conn__respond(c, "400 Bad Request", "text/plain", NULL, "bad request\n", now_s);
		prom_registry__count(hs->reg, PROM_SELF_CONNS_DROPPED, 1);
	} else if (c->len >= HTTP_REQUEST_MAX) {
		conn__respond(c, "431 Request Header Fields Too Large", "text/plain", NULL,
			      "request too large\n", now_s);
		prom_registry__count(hs->reg, PROM_SELF_CONNS_DROPPED, 1);
	}
}

static struct http_conn *server__slot(struct http_server *hs)
{
	struct http_conn *oldest = NULL;

	for (int i = 0; i < HTTP_MAX_CONNS; i++) {
		struct http_conn *c = &hs->conns[i];

		if (c->state == CONN_FREE)
			return c;
		if (!oldest || c->since_s < oldest->since_s)
			oldest = c;
	}
	/* all taken: the oldest has had its chance, a scraper now must not wait behind it */
	conn__drop(hs, oldest);
	return oldest;
}

static void server__accept(struct http_server *hs, double now_s)
{
	/* a few per wake-up: a flood of connects must not keep the loop here */
	for (int i = 0; i < HTTP_MAX_CONNS; i++) {
		int fd = accept4(hs->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct http_conn *c;

		if (fd < 0)
			return;
		c = server__slot(hs);
		memset(c, 0, offsetof(struct http_conn, buf));
		c->fd = fd;
		c->len = 0;
		c->state = CONN_READING;
		c->since_s = now_s;
		c->deadline_s = now_s + HTTP_REQUEST_TIMEOUT_S;
	}
}

/* ADDR:PORT, :PORT (every address, IPv6 and IPv4) or [IPV6]:PORT: a listening socket. */
static int listen__open(const char *spec, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	const char *colon = strrchr(spec, ':');
	char host[257];
	struct addrinfo *ai = NULL;
	int fd = -1, one = 1, zero = 0, ret;

	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	if (host[0] == '[') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	ret = getaddrinfo(host[0] ? host : "::", colon + 1, &hints, &ai);
	if (ret && !host[0])
		ret = getaddrinfo("0.0.0.0", colon + 1, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "--listen %s: %s", spec, gai_strerror(ret));
		return -1;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* ":PORT" is every address: IPv4 too, through the IPv6 socket */
		if (ai->ai_family == AF_INET6 && !host[0])
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, HTTP_MAX_CONNS)) {
			snprintf(err, errlen, "--listen %s: %s", spec, strerror(errno));
			close(fd);
			fd = -1;
		}
	} else {
		snprintf(err, errlen, "--listen %s: %s", spec, strerror(errno));
	}
	freeaddrinfo(ai);
	return fd;
}

static bool http__wanted(const struct sink_config *cfg)
{
	return cfg->listen != NULL;
}

static int http__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct http_server *hs = calloc(1, sizeof(*hs));
	struct prom_options popts;

	if (!hs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	prom_options__from_config(&popts, cfg);
	hs->reg = prom_registry__shared(&popts);
	if (!hs->reg) {
		snprintf(err, errlen, "out of memory");
		free(hs);
		return -1;
	}
	/* bound before any BPF is loaded: a port in use is a setup error (exit status 2) */
	hs->fd = listen__open(cfg->listen, err, errlen);
	if (hs->fd < 0) {
		prom_registry__put(hs->reg);
		free(hs);
		return -1;
	}
	s->priv = hs;
	return 0;
}

static int http__start(struct sink *s, const struct model *m, double now)
{
	struct http_server *hs = s->priv;

	(void)m;
	hs->started = true;
	hs->last_interval_s = now;
	return 0;
}

static void http__interval(struct sink *s, const struct model *m, double ts)
{
	struct http_server *hs = s->priv;

	(void)ts;
	hs->last_interval_s = clock__mono();
	hs->interval_s = m->interval_s;
}

static double http__due(const struct sink *s)
{
	const struct http_server *hs = s->priv;

	return hs->pending_since_s;
}

/* what a scraper gets: the text, or what is made from it */
enum body_format { BODY_TEXT, BODY_OPENMETRICS, BODY_PROTOBUF, BODY_NFORMATS };

/* the protobuf exposition, with native histograms (--prom-native) */
static char *body__proto(const char *text, const struct prom_registry *reg, size_t *len)
{
	struct pbuf pb = { 0 };

	if (prom_text__to_proto(text, reg, &pb)) {
		pbuf__free(&pb);
		return NULL;
	}
	*len = pb.len;
	return pb.buf ? (char *)pb.buf : calloc(1, 1);
}

/* text, or OpenMetrics or protobuf made from it: a body the waiting connections share */
static struct http_body *body__render(const char *text, size_t len, enum body_format format,
				      const struct prom_registry *reg)
{
	struct http_body *b = calloc(1, sizeof(*b));
	bool openmetrics = format == BODY_OPENMETRICS;
	FILE *out;

	if (!b)
		return NULL;
	b->refs = 1;
	if (format == BODY_PROTOBUF) {
		b->data = body__proto(text, reg, &b->len);
	} else if (!openmetrics) {
		b->data = malloc(len + 1);
		if (b->data)
			memcpy(b->data, text, len + 1);
		b->len = len;
	} else if ((out = open_memstream(&b->data, &b->len))) {
		prom_text__to_openmetrics(text, out);
		if (fclose(out))
			b->data = NULL;
	}
	if (!b->data) {
		free(b);
		return NULL;
	}
	return b;
}

static const char *const content_type[BODY_NFORMATS] = {
	"text/plain; version=0.0.4; charset=utf-8",
	"application/openmetrics-text; version=1.0.0; charset=utf-8",
	PROM_PROTO_CONTENT_TYPE,
};

/*
 * Protobuf only with --prom-native: it is what a scraper asks for first when
 * it wants native histograms, and only then has it more to give than text.
 */
static enum body_format body__format(const struct http_request *req,
				     const struct prom_registry *reg)
{
	if (req->protobuf && prom_registry__has_native(reg))
		return BODY_PROTOBUF;
	return req->openmetrics ? BODY_OPENMETRICS : BODY_TEXT;
}

/* The waiting /metrics requests: one render, one or two bodies, every answer started. */
static int http__flush(struct sink *s, const struct model *m, double now)
{
	struct http_server *hs = s->priv;
	struct http_body *bodies[BODY_NFORMATS] = {};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	hs->pending_since_s = 0;
	if (out) {
		prom_registry__render(hs->reg, m, now, out);
		if (fclose(out)) {
			free(text);
			text = NULL;
		}
	}
	for (int i = 0; i < HTTP_MAX_CONNS; i++) {
		struct http_conn *c = &hs->conns[i];
		enum body_format om = body__format(&c->req, hs->reg);

		if (c->state != CONN_RENDER)
			continue;
		if (text && !bodies[om])
			bodies[om] = body__render(text, len, om, hs->reg);
		if (!bodies[om]) {
			conn__respond(c, "500 Internal Server Error", "text/plain", NULL,
				      "out of memory\n", now);
			continue;
		}
		prom_registry__count(hs->reg, PROM_SELF_SCRAPES, 1);
		conn__respond(c, "200 OK", content_type[om], bodies[om], NULL, now);
	}
	for (int i = 0; i < BODY_NFORMATS; i++)
		body__put(bodies[i]);
	free(text);
	return 0;
}

static int http__pollfds(struct sink *s, struct pollfd *fds, int max)
{
	struct http_server *hs = s->priv;
	double now = clock__mono();
	int n = 0;

	if (max < 1)
		return 0;
	fds[n++] = (struct pollfd){ .fd = hs->fd, .events = POLLIN };
	for (int i = 0; i < HTTP_MAX_CONNS && n < max; i++) {
		struct http_conn *c = &hs->conns[i];

		if ((c->state == CONN_READING || c->state == CONN_WRITING) && now > c->deadline_s)
			conn__drop(hs, c);
		if (c->state == CONN_READING || c->state == CONN_WRITING)
			fds[n++] = (struct pollfd){
				.fd = c->fd,
				.events = c->state == CONN_READING ? POLLIN : POLLOUT };
	}
	return n;
}

static bool http__ready(struct sink *s, const struct pollfd *fd)
{
	struct http_server *hs = s->priv;
	double now = clock__mono();

	if (fd->fd == hs->fd) {
		server__accept(hs, now);
		return true;
	}
	for (int i = 0; i < HTTP_MAX_CONNS; i++) {
		struct http_conn *c = &hs->conns[i];

		if (c->fd != fd->fd || c->state == CONN_FREE)
			continue;
		if (c->state == CONN_READING)
			conn__read(hs, c, now);
		else if (c->state == CONN_WRITING)
			conn__write(c);
		break;
	}
	return true;
}

static void http__close(struct sink *s)
{
	struct http_server *hs = s->priv;

	if (!hs)
		return;
	for (int i = 0; i < HTTP_MAX_CONNS; i++)
		conn__close(&hs->conns[i]);
	close(hs->fd);
	prom_registry__put(hs->reg);
	free(hs);
}

const struct sink_ops http_sink = {
	.name = "scrape endpoint",
	.wanted = http__wanted,
	.open = http__open,
	.start = http__start,
	.interval = http__interval,
	.due = http__due,
	.flush = http__flush,
	.pollfds = http__pollfds,
	.ready = http__ready,
	.close = http__close,
};

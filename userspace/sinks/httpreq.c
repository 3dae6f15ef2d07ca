// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>
#include "sinks/httpreq.h"

/* The end of the head: CRLF CRLF, or LF LF from a hand-typed request. */
static const char *head__end(const char *buf, size_t len)
{
	const char *crlf = memmem(buf, len, "\r\n\r\n", 4), *lf = memmem(buf, len, "\n\n", 2);

	if (crlf && (!lf || crlf < lf))
		return crlf + 4;
	return lf ? lf + 2 : NULL;
}

static bool token__is(const char *s, size_t n, const char *want)
{
	return n == strlen(want) && !memcmp(s, want, n);
}

/* "METHOD SP TARGET SP HTTP/1.x" */
static bool request_line__parse(const char *s, size_t n, struct http_request *req)
{
	const char *sp1 = memchr(s, ' ', n), *sp2, *target, *query;
	size_t tlen;

	if (!sp1)
		return false;
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - s));
	if (!sp2 || n - (size_t)(sp2 + 1 - s) != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) ||
	    (sp2[8] != '0' && sp2[8] != '1'))
		return false;
	req->method = token__is(s, (size_t)(sp1 - s), "GET")    ? HTTP_GET
		      : token__is(s, (size_t)(sp1 - s), "HEAD") ? HTTP_HEAD
								 : HTTP_OTHER;
	target = sp1 + 1;
	query = memchr(target, '?', (size_t)(sp2 - target));
	tlen = (size_t)((query ? query : sp2) - target);
	if (!tlen || target[0] != '/')
		return false;
	if (tlen < sizeof(req->path) && !memchr(target, '\0', tlen)) {
		memcpy(req->path, target, tlen);
		req->path[tlen] = '\0';
	}
	return true;
}

static void header__parse(const char *s, size_t n, struct http_request *req)
{
	static const char om[] = "application/openmetrics-text";

	static const char pb[] = "proto=io.prometheus.client.MetricFamily";

	if (n > 7 && !strncasecmp(s, "accept:", 7) && memmem(s + 7, n - 7, om, sizeof(om) - 1))
		req->openmetrics = true;
	if (n > 7 && !strncasecmp(s, "accept:", 7) && memmem(s + 7, n - 7, pb, sizeof(pb) - 1))
		req->protobuf = true;
}

int http_request__parse(const char *buf, size_t len, struct http_request *req)
{
	const char *end = head__end(buf, len), *line = buf;
	bool first = true;

	memset(req, 0, sizeof(*req));
	if (!end)
		return 0;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = (size_t)(nl - line);

		if (n && line[n - 1] == '\r')
			n--;
		if (first) {
			if (!request_line__parse(line, n, req))
				return -1;
			first = false;
		} else if (n) {
			header__parse(line, n, req);
		}
		line = nl + 1;
	}
	return 1;
}

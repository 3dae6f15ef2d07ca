/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The head of an HTTP/1.x request, as a scraper sends it: method, path,
 * whether it asks for OpenMetrics. Bytes from the network: never trusted,
 * never assumed to be a string.
 */
#ifndef LOOPWATCH_SINKS_HTTPREQ_H
#define LOOPWATCH_SINKS_HTTPREQ_H

#include <stdbool.h>
#include <stddef.h>

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_OTHER };

struct http_request {
	enum http_method method;
	char path[256];		/* without the query string; "" if too long */
	bool openmetrics;	/* Accept names application/openmetrics-text */
	bool protobuf;		/* Accept names the protobuf exposition (MetricFamily) */
};

/* 1: a whole request head is in buf[0..len); 0: more bytes needed; -1: not HTTP/1.x */
int http_request__parse(const char *buf, size_t len, struct http_request *req);

#endif

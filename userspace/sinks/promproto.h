/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The protobuf exposition format (what Prometheus asks for first when native
 * histograms are on), made from the registry's text exposition.
 */
#ifndef LOOPWATCH_SINKS_PROMPROTO_H
#define LOOPWATCH_SINKS_PROMPROTO_H

#include "lib/pbuf.h"
#include "sinks/promreg.h"

#define PROM_PROTO_CONTENT_TYPE \
	"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; " \
	"encoding=delimited"

/*
 * text: what prom_registry__render wrote; reg: where the iteration histogram's
 * native buckets come from (NULL: classic buckets only). Appends to b: 0, or
 * -1 out of memory.
 */
int prom_text__to_proto(const char *text, const struct prom_registry *reg, struct pbuf *b);

#endif

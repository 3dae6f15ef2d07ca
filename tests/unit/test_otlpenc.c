// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sinks/otlpenc.c: one sequence of writes, two encodings. The JSON is held
 * to OTLP's JSON mapping text for text (repeated fields as arrays, 64-bit
 * integers as strings, enums as numbers, a traced string cut where its
 * UTF-8 breaks, as the protobuf cuts it); the protobuf to what lib/pbuf.c
 * writes for the same fields.
 */
#include <stdlib.h>
#include <string.h>
#include "lib/pbuf.h"
#include "sinks/otlpenc.h"

#include "check.h"

/* A Resource with two attributes and a Sum of one point, as otlp.c writes them. */
static void request__write(struct otlp_enc *e)
{
	size_t rm = otlp_enc__begin(e, 1, "resourceMetrics", true), res, kv, any, m, sum, dp;
	size_t packed;

	res = otlp_enc__begin(e, 1, "resource", false);
	for (int i = 0; i < 2; i++) {
		kv = otlp_enc__begin(e, 1, "attributes", true);
		otlp_enc__string(e, 1, "key", i ? "process.pid" : "service.name");
		any = otlp_enc__begin(e, 2, "value", false);
		if (i)
			otlp_enc__int64(e, 3, "intValue", -42);
		else
			otlp_enc__text(e, 1, "stringValue", "api\"\xe2\x82\xac\xff!");
		otlp_enc__end(e, any);
		otlp_enc__end(e, kv);
	}
	otlp_enc__end(e, res);
	m = otlp_enc__begin(e, 2, "metrics", true);
	otlp_enc__string(e, 1, "name", "n");
	sum = otlp_enc__begin(e, 7, "sum", false);
	dp = otlp_enc__begin(e, 1, "dataPoints", true);
	otlp_enc__fixed64(e, 3, "timeUnixNano", 1795669115898984000ull);
	otlp_enc__sfixed64(e, 6, "asInt", 7);
	otlp_enc__double(e, 4, "asDouble", 0.25);
	otlp_enc__sint32(e, 6, "scale", -3);
	packed = otlp_enc__packed_begin(e, 2, "bucketCounts");
	otlp_enc__packed_uint64(e, 0);
	otlp_enc__packed_uint64(e, 18446744073709551615ull);
	otlp_enc__packed_end(e, packed);
	otlp_enc__end(e, dp);
	otlp_enc__enum(e, 2, "aggregationTemporality", 2);
	otlp_enc__bool(e, 3, "isMonotonic", true);
	otlp_enc__end(e, sum);
	otlp_enc__end(e, m);
	otlp_enc__end(e, rm);
	/* a second element of the top-level array */
	rm = otlp_enc__begin(e, 1, "resourceMetrics", true);
	otlp_enc__end(e, rm);
}

static void test_json(void)
{
	static const char want[] =
		"{\"resourceMetrics\":[{\"resource\":{\"attributes\":["
		"{\"key\":\"service.name\",\"value\":{\"stringValue\":\"api\\\"\xe2\x82\xac\"}},"
		"{\"key\":\"process.pid\",\"value\":{\"intValue\":\"-42\"}}]},"
		"\"metrics\":[{\"name\":\"n\",\"sum\":{\"dataPoints\":[{"
		"\"timeUnixNano\":\"1795669115898984000\",\"asInt\":\"7\",\"asDouble\":0.25,"
		"\"scale\":-3,\"bucketCounts\":[\"0\",\"18446744073709551615\"]}],"
		"\"aggregationTemporality\":2,\"isMonotonic\":true}}]},{}]}";
	struct otlp_enc e;
	void *buf = NULL;
	size_t len = 0;

	CHECK(!otlp_enc__init(&e, OTLP_ENC_JSON), "init");
	request__write(&e);
	CHECK(!otlp_enc__finish(&e, &buf, &len), "finish");
	otlp_enc__free(&e);
	CHECK(buf && len == strlen(want) && !memcmp(buf, want, len), "JSON:\n%.*s\nwant\n%s",
	      (int)len, buf ? (char *)buf : "", want);
	free(buf);

	/* nothing written: an empty request object */
	CHECK(!otlp_enc__init(&e, OTLP_ENC_JSON), "init");
	CHECK(!otlp_enc__finish(&e, &buf, &len) && len == 2 && !memcmp(buf, "{}", 2), "empty");
	otlp_enc__free(&e);
	free(buf);
}

static void test_protobuf(void)
{
	struct otlp_enc e;
	struct pbuf b = { 0 };
	size_t rm, res, kv, any, m, sum, dp, packed;
	void *buf = NULL;
	size_t len = 0;

	CHECK(!otlp_enc__init(&e, OTLP_ENC_PROTOBUF), "init");
	request__write(&e);
	CHECK(!otlp_enc__finish(&e, &buf, &len), "finish");
	otlp_enc__free(&e);

	/* the same fields straight through lib/pbuf.c */
	rm = pbuf__begin(&b, 1);
	res = pbuf__begin(&b, 1);
	kv = pbuf__begin(&b, 1);
	pbuf__string(&b, 1, "service.name");
	any = pbuf__begin(&b, 2);
	pbuf__bytes(&b, 1, "api\"\xe2\x82\xac", 7);
	pbuf__end(&b, any);
	pbuf__end(&b, kv);
	kv = pbuf__begin(&b, 1);
	pbuf__string(&b, 1, "process.pid");
	any = pbuf__begin(&b, 2);
	pbuf__uint(&b, 3, (uint64_t)-42);
	pbuf__end(&b, any);
	pbuf__end(&b, kv);
	pbuf__end(&b, res);
	m = pbuf__begin(&b, 2);
	pbuf__string(&b, 1, "n");
	sum = pbuf__begin(&b, 7);
	dp = pbuf__begin(&b, 1);
	pbuf__fixed64(&b, 3, 1795669115898984000ull);
	pbuf__fixed64(&b, 6, 7);
	pbuf__double(&b, 4, 0.25);
	pbuf__sint(&b, 6, -3);
	packed = pbuf__begin(&b, 2);
	pbuf__varint(&b, 0);
	pbuf__varint(&b, 18446744073709551615ull);
	pbuf__end(&b, packed);
	pbuf__end(&b, dp);
	pbuf__uint(&b, 2, 2);
	pbuf__uint(&b, 3, 1);
	pbuf__end(&b, sum);
	pbuf__end(&b, m);
	pbuf__end(&b, rm);
	rm = pbuf__begin(&b, 1);
	pbuf__end(&b, rm);
	CHECK(buf && len == b.len && !memcmp(buf, b.buf, len), "protobuf: %zu bytes, want %zu",
	      len, b.len);
	free(buf);
	pbuf__free(&b);
}

int main(void)
{
	test_json();
	test_protobuf();
	return check__report();
}

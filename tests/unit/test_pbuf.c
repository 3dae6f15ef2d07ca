// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The protobuf encoder: the encoding guide's own examples byte for byte,
 * random nested messages read back by an independent decoder here, and one
 * message as Debian's protoc --decode_raw reads it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/pbuf.h"

#include "check.h"

static bool bytes__eq(const struct pbuf *b, const char *want, size_t n)
{
	return b->len == n && !memcmp(b->buf, want, n);
}

/* https://protobuf.dev/programming-guides/encoding/ */
static void test_guide_examples(void)
{
	struct pbuf b = { 0 };
	size_t m;

	pbuf__uint(&b, 1, 150);
	CHECK(bytes__eq(&b, "\x08\x96\x01", 3), "len %zu", b.len);
	pbuf__reset(&b);
	pbuf__string(&b, 2, "testing");
	CHECK(bytes__eq(&b, "\x12\x07testing", 9), "len %zu", b.len);
	pbuf__reset(&b);
	m = pbuf__begin(&b, 3);
	pbuf__uint(&b, 1, 150);
	pbuf__end(&b, m);
	CHECK(bytes__eq(&b, "\x1a\x03\x08\x96\x01", 5), "len %zu", b.len);
	pbuf__reset(&b);
	/* packed repeated: field 4, [3, 270, 86942] */
	m = pbuf__begin(&b, 4);
	pbuf__varint(&b, 3);
	pbuf__varint(&b, 270);
	pbuf__varint(&b, 86942);
	pbuf__end(&b, m);
	CHECK(bytes__eq(&b, "\x22\x06\x03\x8e\x02\x9e\xa7\x05", 8), "len %zu", b.len);
	pbuf__reset(&b);
	/* int64 -1: ten bytes, two's complement */
	pbuf__uint(&b, 1, (uint64_t)-1);
	CHECK(bytes__eq(&b, "\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11), "len %zu",
	      b.len);
	pbuf__reset(&b);
	/* sint32 -1 and 1: zigzag 1 and 2 */
	pbuf__sint(&b, 1, -1);
	pbuf__sint(&b, 2, 1);
	CHECK(bytes__eq(&b, "\x08\x01\x10\x02", 4), "len %zu", b.len);
	pbuf__reset(&b);
	pbuf__double(&b, 1, 1.0);
	CHECK(bytes__eq(&b, "\x09\x00\x00\x00\x00\x00\x00\xf0\x3f", 9), "len %zu", b.len);
	pbuf__free(&b);
}

/* an independent reader: a varint at *p, false past end */
static bool rd__varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * A random message of depth levels: fields 1 (varint), 2 (fixed64), 3
 * (bytes), 4 (nested), each value also summed into *sum so the reader can
 * prove it saw every one, and every length it met was right.
 */
static void gen(struct pbuf *b, int depth, uint64_t *sum, size_t *nfields)
{
	int n = rnd() % 6;

	for (int i = 0; i < n; i++) {
		uint64_t v = rnd() >> (rnd() % 64);
		char s[300];
		size_t len = rnd() % sizeof(s), m;

		switch (rnd() % 4) {
		case 0:
			pbuf__uint(b, 1, v);
			*sum += v;
			break;
		case 1:
			pbuf__fixed64(b, 2, v);
			*sum += v;
			break;
		case 2:
			memset(s, 'x', len);
			pbuf__bytes(b, 3, s, len);
			*sum += len;
			break;
		default:
			if (!depth)
				continue;
			m = pbuf__begin(b, 4);
			gen(b, depth - 1, sum, nfields);
			pbuf__end(b, m);
			break;
		}
		(*nfields)++;
	}
}

static bool parse(const uint8_t *p, const uint8_t *end, uint64_t *sum, size_t *nfields)
{
	while (p < end) {
		uint64_t tag, v;

		if (!rd__varint(&p, end, &tag))
			return false;
		(*nfields)++;
		switch (tag) {
		case (1 << 3) | 0:
			if (!rd__varint(&p, end, &v))
				return false;
			*sum += v;
			break;
		case (2 << 3) | 1:
			if (end - p < 8)
				return false;
			v = 0;
			for (int i = 7; i >= 0; i--)
				v = (v << 8) | p[i];
			p += 8;
			*sum += v;
			break;
		case (3 << 3) | 2:
			if (!rd__varint(&p, end, &v) || v > (uint64_t)(end - p))
				return false;
			for (uint64_t i = 0; i < v; i++)
				if (p[i] != 'x')
					return false;
			p += v;
			*sum += v;
			break;
		case (4 << 3) | 2:
			if (!rd__varint(&p, end, &v) || v > (uint64_t)(end - p) ||
			    !parse(p, p + v, sum, nfields))
				return false;
			p += v;
			break;
		default:
			return false;
		}
	}
	return p == end;
}

static void test_random_nested_messages_read_back(void)
{
	struct pbuf b = { 0 };
	int bad = 0;

	for (int i = 0; i < 20000; i++) {
		uint64_t sum = 0, got = 0;
		size_t n = 0, ngot = 0;

		pbuf__reset(&b);
		gen(&b, 1 + i % 5, &sum, &n);
		if (b.oom || !parse(b.buf, b.buf + b.len, &got, &ngot) || got != sum || ngot != n)
			bad++;
	}
	CHECK(bad == 0, "%d of 20000 random messages did not read back", bad);
	pbuf__free(&b);
}

/* a nested length over 127 (a two-byte length) inside another, as protoc sees it */
static void test_protoc_decode_raw(void)
{
	static const char want[] =
		"1: 150\n"
		"5 {\n"
		"  2: \"ab\"\n"
		"  6 {\n"
		"    1: 1\n"
		"    3: 0x3ff0000000000000\n"
		"  }\n"
		"}\n"
		"7: 18446744073709551615\n";
	char path[] = "/tmp/loopwatch-pbuf-XXXXXX", cmd[128], got[1024];
	struct pbuf b = { 0 };
	size_t m, inner, n;
	FILE *f;
	int fd;

	pbuf__uint(&b, 1, 150);
	m = pbuf__begin(&b, 5);
	pbuf__string(&b, 2, "ab");
	inner = pbuf__begin(&b, 6);
	pbuf__uint(&b, 1, 1);
	pbuf__double(&b, 3, 1.0);
	pbuf__end(&b, inner);
	pbuf__end(&b, m);
	pbuf__uint(&b, 7, UINT64_MAX);
	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, b.buf, b.len) == (ssize_t)b.len, "temp file");
	close(fd);
	snprintf(cmd, sizeof(cmd), "protoc --decode_raw < %s", path);
	f = popen(cmd, "r");
	n = f ? fread(got, 1, sizeof(got) - 1, f) : 0;
	got[n] = '\0';
	CHECK(f && pclose(f) == 0, "protoc --decode_raw failed (tools/deps.sh test)");
	CHECK(!strcmp(got, want), "protoc read:\n%s", got);
	unlink(path);
	pbuf__free(&b);
}

int main(void)
{
	test_guide_examples();
	test_random_nested_messages_read_back();
	test_protoc_decode_raw();
	return check__report();
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdlib.h>
#include <string.h>
#include "lib/pbuf.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2 };

/* a varint is at most 10 bytes */
#define VARINT_MAX 10

void pbuf__free(struct pbuf *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

void pbuf__reset(struct pbuf *b)
{
	b->len = 0;
	b->oom = false;
}

static bool pbuf__room(struct pbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *p;

	if (b->oom)
		return false;
	if (b->len + n <= b->cap)
		return true;
	while (cap < b->len + n) {
		if (cap > SIZE_MAX / 2) {
			b->oom = true;
			return false;
		}
		cap *= 2;
	}
	p = realloc(b->buf, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->buf = p;
	b->cap = cap;
	return true;
}

static size_t varint__put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

void pbuf__varint(struct pbuf *b, uint64_t v)
{
	if (pbuf__room(b, VARINT_MAX))
		b->len += varint__put(b->buf + b->len, v);
}

void pbuf__raw(struct pbuf *b, const void *p, size_t n)
{
	if (n && pbuf__room(b, n)) {
		memcpy(b->buf + b->len, p, n);
		b->len += n;
	}
}

static void pbuf__tag(struct pbuf *b, unsigned int field, unsigned int wire)
{
	pbuf__varint(b, ((uint64_t)field << 3) | wire);
}

void pbuf__uint(struct pbuf *b, unsigned int field, uint64_t v)
{
	pbuf__tag(b, field, WIRE_VARINT);
	pbuf__varint(b, v);
}

void pbuf__sint(struct pbuf *b, unsigned int field, int64_t v)
{
	pbuf__uint(b, field, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void pbuf__fixed64(struct pbuf *b, unsigned int field, uint64_t v)
{
	pbuf__tag(b, field, WIRE_I64);
	if (!pbuf__room(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (uint8_t)(v >> (8 * i));
}

void pbuf__double(struct pbuf *b, unsigned int field, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	pbuf__fixed64(b, field, bits);
}

void pbuf__bytes(struct pbuf *b, unsigned int field, const void *p, size_t n)
{
	pbuf__tag(b, field, WIRE_LEN);
	pbuf__varint(b, n);
	if (n && pbuf__room(b, n)) {
		memcpy(b->buf + b->len, p, n);
		b->len += n;
	}
}

void pbuf__string(struct pbuf *b, unsigned int field, const char *s)
{
	pbuf__bytes(b, field, s, strlen(s));
}

size_t pbuf__begin(struct pbuf *b, unsigned int field)
{
	pbuf__tag(b, field, WIRE_LEN);
	return b->len;
}

/*
 * The length goes in front of the content: move the content up by the
 * length's size. Lengths are known only at the end, and a canonical (shortest)
 * varint keeps every decoder happy, padded ones are not universally accepted.
 */
void pbuf__end(struct pbuf *b, size_t mark)
{
	uint8_t len[VARINT_MAX];
	size_t n, content;

	if (b->oom || mark > b->len)
		return;
	content = b->len - mark;
	n = varint__put(len, content);
	if (!pbuf__room(b, n))
		return;
	memmove(b->buf + mark + n, b->buf + mark, content);
	memcpy(b->buf + mark, len, n);
	b->len += n;
}

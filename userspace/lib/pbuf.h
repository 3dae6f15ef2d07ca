/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Protocol Buffers, encoded by hand: the one encoder of the protobuf outputs
 * (pprof's profile.proto, OTLP). They need a few scalar types, strings and
 * nested messages, never decoding; a library would bring generated code for
 * hundreds of messages. Wire format: varints, 64-bit fixed, length-delimited
 * fields (https://protobuf.dev/programming-guides/encoding/).
 *
 * A buffer that cannot grow sets oom and keeps what it had: callers check
 * once, at the end, instead of after every field.
 */
#ifndef LOOPWATCH_LIB_PBUF_H
#define LOOPWATCH_LIB_PBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pbuf {
	uint8_t *buf;
	size_t len;
	size_t cap;
	bool oom;
};

void pbuf__free(struct pbuf *b);
void pbuf__reset(struct pbuf *b);
/* a varint, without a tag: the elements of a packed repeated field */
void pbuf__varint(struct pbuf *b, uint64_t v);
/* bytes as they are, no tag: a packed field's elements encoded elsewhere */
void pbuf__raw(struct pbuf *b, const void *p, size_t n);
/* field = varint (uint32/64, int64 as two's complement, bool, enum) */
void pbuf__uint(struct pbuf *b, unsigned int field, uint64_t v);
/* field = sint32/sint64 (zigzag: small negative numbers stay short) */
void pbuf__sint(struct pbuf *b, unsigned int field, int64_t v);
/* field = fixed64 / double (wire type 1) */
void pbuf__fixed64(struct pbuf *b, unsigned int field, uint64_t v);
void pbuf__double(struct pbuf *b, unsigned int field, double v);
/* field = bytes / string (wire type 2) */
void pbuf__bytes(struct pbuf *b, unsigned int field, const void *p, size_t n);
void pbuf__string(struct pbuf *b, unsigned int field, const char *s);
/*
 * A nested message (or packed repeated field): pbuf__begin writes its tag and
 * returns a mark; what is written until pbuf__end(mark) is its content, whose
 * length pbuf__end puts in front of it. Nest freely, end innermost first.
 */
size_t pbuf__begin(struct pbuf *b, unsigned int field);
void pbuf__end(struct pbuf *b, size_t mark);

#endif

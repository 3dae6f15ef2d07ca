/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The two encodings of an OTLP/HTTP request body, behind one writer: otlp.c
 * builds each message once, naming every field by both its protobuf number
 * and its JSON name, and the writer emits one or the other. Protobuf goes
 * through lib/pbuf.h; JSON follows OTLP's "JSON Protobuf Encoding"
 * (lowerCamelCase names, 64-bit integers as decimal strings, enums as
 * integers, repeated fields as arrays; loopwatch sends no ids or bytes).
 * Repeated elements of one field must be written one after another.
 */
#ifndef LOOPWATCH_SINKS_OTLPENC_H
#define LOOPWATCH_SINKS_OTLPENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/pbuf.h"

#define OTLP_ENC_DEPTH 12

enum otlp_encoding { OTLP_ENC_PROTOBUF, OTLP_ENC_JSON };

struct otlp_enc {
	enum otlp_encoding how;
	struct pbuf b;		/* protobuf */
	FILE *f;		/* JSON: a memory stream over jbuf */
	char *jbuf;
	size_t jlen;
	bool oom;
	bool packed_any;	/* an element of the open packed array written */
	int depth;
	struct {
		const char *array;	/* the repeated field whose array is open, or NULL */
		bool any;		/* a member written: the next one needs a comma */
	} lv[OTLP_ENC_DEPTH];
};

/* An empty request body (an object of its own in JSON); -1 out of memory. */
int otlp_enc__init(struct otlp_enc *e, enum otlp_encoding how);
/* The finished body, malloc'ed, the caller's; -1 when any write failed (freed then). */
int otlp_enc__finish(struct otlp_enc *e, void **buf, size_t *len);
void otlp_enc__free(struct otlp_enc *e);

/* A nested message, one element of it when repeated; end it with the mark returned. */
size_t otlp_enc__begin(struct otlp_enc *e, unsigned int field, const char *name, bool repeated);
void otlp_enc__end(struct otlp_enc *e, size_t mark);
/* string: ours (ASCII) / a traced process's, cut before its first invalid UTF-8 byte */
void otlp_enc__string(struct otlp_enc *e, unsigned int field, const char *name, const char *s);
void otlp_enc__text(struct otlp_enc *e, unsigned int field, const char *name, const char *s);
/* int64 / uint64 (varint): a decimal string in JSON */
void otlp_enc__int64(struct otlp_enc *e, unsigned int field, const char *name, int64_t v);
void otlp_enc__uint64(struct otlp_enc *e, unsigned int field, const char *name, uint64_t v);
/* an enum or a uint32 (varint): a number in JSON */
void otlp_enc__enum(struct otlp_enc *e, unsigned int field, const char *name, uint32_t v);
void otlp_enc__bool(struct otlp_enc *e, unsigned int field, const char *name, bool v);
/* sint32 (zigzag): a number in JSON */
void otlp_enc__sint32(struct otlp_enc *e, unsigned int field, const char *name, int32_t v);
/* fixed64 / sfixed64: decimal strings in JSON */
void otlp_enc__fixed64(struct otlp_enc *e, unsigned int field, const char *name, uint64_t v);
void otlp_enc__sfixed64(struct otlp_enc *e, unsigned int field, const char *name, int64_t v);
void otlp_enc__double(struct otlp_enc *e, unsigned int field, const char *name, double v);
/* A packed repeated uint64 (varints; an array of decimal strings in JSON). */
size_t otlp_enc__packed_begin(struct otlp_enc *e, unsigned int field, const char *name);
void otlp_enc__packed_uint64(struct otlp_enc *e, uint64_t v);
void otlp_enc__packed_end(struct otlp_enc *e, size_t mark);

#endif

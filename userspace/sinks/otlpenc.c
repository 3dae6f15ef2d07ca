// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/jsonw.h"
#include "lib/text.h"
#include "sinks/otlpenc.h"

static bool enc__json(const struct otlp_enc *e)
{
	return e->how == OTLP_ENC_JSON;
}

int otlp_enc__init(struct otlp_enc *e, enum otlp_encoding how)
{
	memset(e, 0, sizeof(*e));
	e->how = how;
	if (!enc__json(e))
		return 0;
	e->f = open_memstream(&e->jbuf, &e->jlen);
	if (!e->f)
		return -1;
	fputc('{', e->f);
	return 0;
}

/* The open array of this level closed. */
static void level__close_array(struct otlp_enc *e)
{
	if (e->lv[e->depth].array) {
		fputc(']', e->f);
		e->lv[e->depth].array = NULL;
	}
}

/*
 * Before a member called name: its key, or, for the next element of the
 * repeated field whose array is open, only the comma.
 */
static void json__key(struct otlp_enc *e, const char *name, bool repeated)
{
	const char *open = e->lv[e->depth].array;

	if (repeated && open && !strcmp(open, name)) {
		fputc(',', e->f);
		return;
	}
	level__close_array(e);
	if (e->lv[e->depth].any)
		fputc(',', e->f);
	e->lv[e->depth].any = true;
	fprintf(e->f, "\"%s\":", name);
	if (repeated) {
		fputc('[', e->f);
		e->lv[e->depth].array = name;
	}
}

size_t otlp_enc__begin(struct otlp_enc *e, unsigned int field, const char *name, bool repeated)
{
	if (!enc__json(e))
		return pbuf__begin(&e->b, field);
	json__key(e, name, repeated);
	fputc('{', e->f);
	if (e->depth + 1 >= OTLP_ENC_DEPTH) {
		/* deeper than any OTLP message loopwatch writes: a bug, not data */
		e->oom = true;
		return 0;
	}
	e->depth++;
	memset(&e->lv[e->depth], 0, sizeof(e->lv[e->depth]));
	return 0;
}

void otlp_enc__end(struct otlp_enc *e, size_t mark)
{
	if (!enc__json(e)) {
		pbuf__end(&e->b, mark);
		return;
	}
	level__close_array(e);
	fputc('}', e->f);
	if (e->depth > 0)
		e->depth--;
}

void otlp_enc__string(struct otlp_enc *e, unsigned int field, const char *name, const char *s)
{
	if (!enc__json(e)) {
		pbuf__string(&e->b, field, s);
		return;
	}
	json__key(e, name, false);
	json__string(e->f, s);
}

void otlp_enc__text(struct otlp_enc *e, unsigned int field, const char *name, const char *s)
{
	size_t n = utf8__valid_prefix(s);
	char *cut;

	if (!enc__json(e)) {
		pbuf__bytes(&e->b, field, s, n);
		return;
	}
	/* the same cut as the protobuf's: both encodings carry the same string */
	cut = strndup(s, n);
	if (!cut) {
		e->oom = true;
		return;
	}
	json__key(e, name, false);
	json__string(e->f, cut);
	free(cut);
}

void otlp_enc__int64(struct otlp_enc *e, unsigned int field, const char *name, int64_t v)
{
	if (!enc__json(e)) {
		pbuf__uint(&e->b, field, (uint64_t)v);
		return;
	}
	json__key(e, name, false);
	fprintf(e->f, "\"%" PRId64 "\"", v);
}

void otlp_enc__uint64(struct otlp_enc *e, unsigned int field, const char *name, uint64_t v)
{
	if (!enc__json(e)) {
		pbuf__uint(&e->b, field, v);
		return;
	}
	json__key(e, name, false);
	fprintf(e->f, "\"%" PRIu64 "\"", v);
}

void otlp_enc__enum(struct otlp_enc *e, unsigned int field, const char *name, uint32_t v)
{
	if (!enc__json(e)) {
		pbuf__uint(&e->b, field, v);
		return;
	}
	json__key(e, name, false);
	fprintf(e->f, "%" PRIu32, v);
}

void otlp_enc__bool(struct otlp_enc *e, unsigned int field, const char *name, bool v)
{
	if (!enc__json(e)) {
		pbuf__uint(&e->b, field, v);
		return;
	}
	json__key(e, name, false);
	fputs(v ? "true" : "false", e->f);
}

void otlp_enc__sint32(struct otlp_enc *e, unsigned int field, const char *name, int32_t v)
{
	if (!enc__json(e)) {
		pbuf__sint(&e->b, field, v);
		return;
	}
	json__key(e, name, false);
	fprintf(e->f, "%" PRId32, v);
}

void otlp_enc__fixed64(struct otlp_enc *e, unsigned int field, const char *name, uint64_t v)
{
	if (!enc__json(e)) {
		pbuf__fixed64(&e->b, field, v);
		return;
	}
	json__key(e, name, false);
	fprintf(e->f, "\"%" PRIu64 "\"", v);
}

void otlp_enc__sfixed64(struct otlp_enc *e, unsigned int field, const char *name, int64_t v)
{
	if (!enc__json(e)) {
		pbuf__fixed64(&e->b, field, (uint64_t)v);
		return;
	}
	json__key(e, name, false);
	fprintf(e->f, "\"%" PRId64 "\"", v);
}

void otlp_enc__double(struct otlp_enc *e, unsigned int field, const char *name, double v)
{
	if (!enc__json(e)) {
		pbuf__double(&e->b, field, v);
		return;
	}
	json__key(e, name, false);
	/* JSON has no NaN or infinities: proto3's JSON mapping spells them as strings */
	if (isnan(v))
		fputs("\"NaN\"", e->f);
	else if (isinf(v))
		fputs(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", e->f);
	else
		fprintf(e->f, "%.17g", v);
}

size_t otlp_enc__packed_begin(struct otlp_enc *e, unsigned int field, const char *name)
{
	if (!enc__json(e))
		return pbuf__begin(&e->b, field);
	json__key(e, name, false);
	fputc('[', e->f);
	e->packed_any = false;
	return 0;
}

void otlp_enc__packed_uint64(struct otlp_enc *e, uint64_t v)
{
	if (!enc__json(e)) {
		pbuf__varint(&e->b, v);
		return;
	}
	fprintf(e->f, "%s\"%" PRIu64 "\"", e->packed_any ? "," : "", v);
	e->packed_any = true;
}

void otlp_enc__packed_end(struct otlp_enc *e, size_t mark)
{
	if (!enc__json(e)) {
		pbuf__end(&e->b, mark);
		return;
	}
	fputc(']', e->f);
}

int otlp_enc__finish(struct otlp_enc *e, void **buf, size_t *len)
{
	bool failed;

	if (!enc__json(e)) {
		if (e->b.oom) {
			pbuf__free(&e->b);
			return -1;
		}
		*buf = e->b.buf;
		*len = e->b.len;
		memset(&e->b, 0, sizeof(e->b));
		return 0;
	}
	while (e->depth > 0)
		otlp_enc__end(e, 0);
	level__close_array(e);
	fputc('}', e->f);
	failed = ferror(e->f) || e->oom;
	/* fclose makes jbuf and jlen final */
	failed |= fclose(e->f) != 0;
	e->f = NULL;
	if (failed || !e->jbuf) {
		free(e->jbuf);
		e->jbuf = NULL;
		return -1;
	}
	*buf = e->jbuf;
	*len = e->jlen;
	e->jbuf = NULL;
	return 0;
}

void otlp_enc__free(struct otlp_enc *e)
{
	if (e->f)
		fclose(e->f);
	free(e->jbuf);
	pbuf__free(&e->b);
	memset(e, 0, sizeof(*e));
}

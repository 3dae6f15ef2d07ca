// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Naming V8 frames from the heap of a live process (v8name.h).
 *
 * JSFunction -> SharedFunctionInfo (SFI) -> name_or_scope_info: the name
 * String before the function is compiled, then a ScopeInfo whose function
 * variable slot holds the name and whose position slots the function's
 * start and end in its script. SFI -> script -> Script -> name (the URL)
 * and source: line ends are computed from the source once per script (V8
 * fills Script::line_ends only on demand).
 *
 * Lines: interpreted frames carry their bytecode offset, which the
 * BytecodeArray's source position table maps to a script offset. Sparkplug
 * frames: the pc through the baseline Code's bytecode offset table, then the
 * same. TurboFan and Maglev frames: the pc offset in the Code's position
 * table, whose entries also name the inlined functions (deoptimization
 * data). Frames whose table is missing get the function's start line.
 *
 * Caches (SFI, Script, map types, pc -> Code, named frames) are keyed by
 * address and keep the words they were resolved from; a use re-reads those
 * words (one small read) and resolves again when they differ, so a moved or
 * reused address never names the wrong function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/procs.h"
#include "runtimes/v8/v8name.h"

#define NAME_MAX_CHARS 1024
#define SOURCE_MAX (8u << 20)		/* scripts larger than this: no lines */
#define TABLE_MAX (1u << 20)		/* position tables larger than this: no lines */
#define BYTECODE_MAX (1u << 20)
#define CACHE_SLOTS 4096		/* per cache; a cache 3/4 full is emptied */
#define SCAN_CHUNK 4096
#define SCAN_MAX (256u << 10)
#define CODE_ALIGN 32		/* instructions start at least 32-byte aligned */

/* ---- a small open-addressing cache: u64 key -> owned pointer ---- */

struct cache {
	uint64_t keys[CACHE_SLOTS];
	void *vals[CACHE_SLOTS];
	size_t n;
	void (*free_val)(void *);
};

static size_t cache__slot(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)(key % CACHE_SLOTS);
}

static void *cache__get(const struct cache *c, uint64_t key)
{
	size_t i = cache__slot(key);

	for (size_t k = 0; k < CACHE_SLOTS && c->keys[i]; k++, i = (i + 1) % CACHE_SLOTS)
		if (c->keys[i] == key)
			return c->vals[i];
	return NULL;
}

static void cache__clear(struct cache *c)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		if (c->keys[i] && c->free_val)
			c->free_val(c->vals[i]);
		c->keys[i] = 0;
		c->vals[i] = NULL;
	}
	c->n = 0;
}

/* Takes ownership of val (key != 0); replaces an entry with the same key. */
static void cache__put(struct cache *c, uint64_t key, void *val)
{
	size_t i;

	if (c->n >= CACHE_SLOTS * 3 / 4)
		cache__clear(c);
	for (i = cache__slot(key);; i = (i + 1) % CACHE_SLOTS) {
		if (!c->keys[i]) {
			c->keys[i] = key;
			c->vals[i] = val;
			c->n++;
			return;
		}
		if (c->keys[i] == key) {
			if (c->free_val)
				c->free_val(c->vals[i]);
			c->vals[i] = val;
			return;
		}
	}
}

/* ---- cached objects ---- */

struct script {
	uint64_t name_word, source_word;	/* what it was resolved from */
	char url[160];
	uint32_t *line_ends;	/* script offsets of each '\n', NULL when unknown */
	size_t nlines;
};

struct sfi {
	uint64_t name_word, script_word;	/* what it was resolved from */
	char name[128];
	uint64_t script;	/* tagged Script, 0 when none (builtins) */
	int start, end;		/* the function's script offsets, -1 unknown */
};

/* a source position table, read whole */
struct postab {
	uint32_t len;
	uint8_t *bytes;
	bool breakable;		/* v8_meta.spt_breakable: how code offsets are encoded */
};

/*
 * What a frame came out as, for (SFI, pc, bytecode offset, flags) and the
 * SFI's head words BPF saw: a later capture that saw the same words at the
 * same address saw the same function, whatever a GC did since. The
 * BytecodeArray's address too: one a GC freed before naming gave no line,
 * and the frames captured after, with its new address, can have one.
 */
#define NAMED_MAX 4
struct named {
	uint64_t sfi, pc, bco, ba, name_word, script_word, ints;
	uint32_t flags;
	int k;
	struct frame out[];	/* k of them: one, unless functions were inlined */
};

struct v8_namer {
	const struct v8_target *t;	/* the process of the current call */
	const struct v8_meta *m;
	struct cache maptypes;	/* map address -> instance type + 1 */
	struct cache sfis;
	struct cache scripts;
	struct cache coderanges;	/* pc -> Code found by the InstructionStream scan */
	struct cache named;
};

enum v8_tier { TIER_INTERPRETED, TIER_BASELINE, TIER_MAGLEV, TIER_TURBOFAN, TIER_OPTIMIZED,
	       TIER_BUILTIN, TIER_INLINED, TIER_UNKNOWN };

static const char *const tier_names[] = {
	[TIER_INTERPRETED] = "interpreted", [TIER_BASELINE] = "baseline",
	[TIER_MAGLEV] = "maglev", [TIER_TURBOFAN] = "turbofan", [TIER_OPTIMIZED] = "optimized",
	[TIER_BUILTIN] = "builtin", [TIER_INLINED] = "inlined", [TIER_UNKNOWN] = "unknown",
};

static void script__free(void *v)
{
	struct script *s = v;

	if (s)
		free(s->line_ends);
	free(s);
}

struct v8_namer *v8_namer__new(void)
{
	struct v8_namer *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->sfis.free_val = free;
	n->scripts.free_val = script__free;
	n->named.free_val = free;
	return n;
}

void v8_namer__free(struct v8_namer *n)
{
	if (!n)
		return;
	cache__clear(&n->maptypes);
	cache__clear(&n->sfis);
	cache__clear(&n->scripts);
	cache__clear(&n->coderanges);
	cache__clear(&n->named);
	free(n);
}

/* ---- heap access ---- */

static bool is_heap(uint64_t v)
{
	return (v & 3) == 1;
}

static bool is_smi(uint64_t v)
{
	return (v & 1) == 0;
}

static int64_t smi(uint64_t v)
{
	return (int64_t)v >> 32;
}

static bool rd(struct v8_namer *n, uint64_t addr, void *buf, size_t len)
{
	return proc__read(n->t->p, addr, buf, len);
}

static bool rd_word(struct v8_namer *n, uint64_t addr, uint64_t *v)
{
	return rd(n, addr, v, sizeof(*v));
}

/*
 * A fixed window over an object of unknown size: len bytes from addr, or,
 * when the page after addr's is not mapped (the end of a V8 heap page's
 * committed part), up to that page and zeros after it -- the object ends
 * before it. A read that runs into such a page fails whole.
 */
static bool rd_window(struct v8_namer *n, uint64_t addr, void *buf, size_t len)
{
	size_t to_page = 4096 - (addr & 4095);

	memset(buf, 0, len);
	return rd(n, addr, buf, len) || (to_page < len && rd(n, addr, buf, to_page));
}

/* The instance type of a map, or -1. Cached: the maps looked at live in read-only space. */
static int map__type(struct v8_namer *n, uint64_t map)
{
	uintptr_t c = (uintptr_t)cache__get(&n->maptypes, map);
	uint16_t t;

	if (c)
		return (int)(c - 1);
	if (!is_heap(map) || !rd(n, map - 1 + n->m->map_instance_type, &t, sizeof(t)))
		return -1;
	cache__put(&n->maptypes, map, (void *)(uintptr_t)(t + 1u));
	return t;
}

static int obj__type(struct v8_namer *n, uint64_t obj)
{
	uint64_t map;

	if (!is_heap(obj) || !rd_word(n, obj - 1, &map))
		return -1;
	return map__type(n, map);
}

static bool type__is_string(const struct v8_meta *m, int t)
{
	return t >= 0 && t < m->first_nonstring;
}

/* ---- strings ---- */

struct sbuf {
	char *buf;
	size_t len, cap;
};

/* one UTF-16 unit as UTF-8; control characters and surrogates become '?' */
static void sbuf__put(struct sbuf *b, uint32_t cp)
{
	char enc[3];
	size_t k;

	if (cp < 0x20 || cp == 0x7f || (cp >= 0xd800 && cp < 0xe000))
		cp = cp == '\n' && b->cap > NAME_MAX_CHARS ? '\n' : '?';
	if (cp < 0x80) {
		enc[0] = (char)cp;
		k = 1;
	} else if (cp < 0x800) {
		enc[0] = (char)(0xc0 | cp >> 6);
		enc[1] = (char)(0x80 | (cp & 0x3f));
		k = 2;
	} else {
		enc[0] = (char)(0xe0 | cp >> 12);
		enc[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		enc[2] = (char)(0x80 | (cp & 0x3f));
		k = 3;
	}
	if (b->len + k + 1 > b->cap)
		return;
	memcpy(b->buf + b->len, enc, k);
	b->len += k;
	b->buf[b->len] = '\0';
}

static bool chars__read(struct v8_namer *n, uint64_t addr, uint32_t off, uint32_t len,
			bool one_byte, struct sbuf *b)
{
	uint32_t width = one_byte ? 1 : 2, cap = 64u << 10;
	uint8_t *tmp;

	/* whole sources are read for their line ends: big chunks, few syscalls */
	if ((uint64_t)len * width < cap)
		cap = len * width < 64 ? 64 : len * width;
	tmp = malloc(cap);
	if (!tmp)
		return false;
	while (len && b->len + 4 < b->cap) {
		uint32_t chunk = len * width > cap ? cap / width : len;

		if (!rd(n, addr + (uint64_t)off * width, tmp, chunk * width)) {
			free(tmp);
			return false;
		}
		for (uint32_t i = 0; i < chunk; i++)
			sbuf__put(b, one_byte ? tmp[i] :
				  (uint32_t)(tmp[2 * i] | tmp[2 * i + 1] << 8));
		off += chunk;
		len -= chunk;
	}
	free(tmp);
	return true;
}

/*
 * The characters [off, off + len) of a V8 string: sequential (Latin-1 or
 * UTF-16), cons (first ++ second), thin (its internalized copy), sliced
 * (parent + offset) or external (the data pointer V8 caches after the
 * resource: node's own module sources).
 */
static bool string__read_at(struct v8_namer *n, uint64_t str, uint32_t off, uint32_t len,
			    struct sbuf *b, int depth)
{
	const struct v8_meta *m = n->m;
	uint64_t a = str - 1, w, w2;
	int32_t slen;
	int t = obj__type(n, str);
	bool one = (t & m->str_enc_mask) == m->str_one_byte;

	if (!type__is_string(m, t) || depth > 16)
		return false;
	if (!rd(n, a + m->string_length, &slen, sizeof(slen)) || slen < 0 || off > (uint32_t)slen)
		return false;
	if (len > (uint32_t)slen - off)
		len = (uint32_t)slen - off;
	switch (t & m->str_repr_mask) {
	case 0:	/* sequential */
		return chars__read(n, a + (one ? m->seq_one_chars : m->seq_two_chars), off, len,
				   one, b);
	case 1: {	/* cons */
		int32_t flen;

		if (!rd_word(n, a + m->cons_first, &w) || !rd_word(n, a + m->cons_second, &w2) ||
		    !is_heap(w) || !rd(n, w - 1 + m->string_length, &flen, sizeof(flen)) ||
		    flen < 0)
			return false;
		if (off < (uint32_t)flen) {
			uint32_t l1 = len < (uint32_t)flen - off ? len : (uint32_t)flen - off;

			if (!string__read_at(n, w, off, l1, b, depth + 1))
				return false;
			len -= l1;
			off = (uint32_t)flen;
		}
		return !len || string__read_at(n, w2, off - (uint32_t)flen, len, b, depth + 1);
	}
	case 5:	/* thin */
		return rd_word(n, a + m->thin_actual, &w) &&
		       string__read_at(n, w, off, len, b, depth + 1);
	case 3:	/* sliced */
		if (!rd_word(n, a + m->sliced_parent, &w) ||
		    !rd_word(n, a + m->sliced_offset, &w2) ||
		    !is_smi(w2) || smi(w2) < 0 || smi(w2) > INT32_MAX)
			return false;
		return string__read_at(n, w, off + (uint32_t)smi(w2), len, b, depth + 1);
	case 2:	/* external: resource, then its cached data pointer (measured) */
		if (!rd_word(n, a + m->external_resource + 8, &w) || !w)
			return false;
		return chars__read(n, w, off, len, one, b);
	default:
		return false;
	}
}

static bool string__read(struct v8_namer *n, uint64_t str, char *out, size_t outlen)
{
	struct sbuf b = { .buf = out, .cap = outlen };

	out[0] = '\0';
	return string__read_at(n, str, 0, NAME_MAX_CHARS, &b, 0);
}

/* ---- ScopeInfo: the function name and its start position ---- */

/*
 * After the fixed slots (flags, parameter count, context local count, and
 * from V8 13 two more) come the context locals' names (inline when fewer
 * than 75, else one hash table) and their infos, then optional slots whose
 * presence the flags say, in this order: saved class variable, function
 * variable {name, slot index}, inferred name, position info {start, end},
 * outer scope info. The flag bits move between versions and are not
 * exported, so the optional part is matched by shape: the first String is
 * the name; the first pair of Smis that is not the function variable's slot
 * index is the position info. false: not read, which is no answer (the caller
 * must not keep it as "no name").
 */
static bool scope_info__read(struct v8_namer *n, uint64_t si, char *name, size_t nlen, int *start,
			     int *end)
{
	const struct v8_meta *m = n->m;
	uint64_t w[24];
	int64_t count;
	size_t base, k;
	int name_at = -1;

	*start = *end = -1;
	name[0] = '\0';
	if (!rd_window(n, si - 1 + 8, w, sizeof(w)) || !is_smi(w[m->scopeinfo_ncontextlocals]))
		return false;
	count = smi(w[m->scopeinfo_ncontextlocals]);
	if (count < 0 || count > 100000)
		return false;
	/* V8 13 moved the position info before the locals */
	for (k = m->scopeinfo_ncontextlocals + 1; k + 1 < m->scopeinfo_first_vars; k++) {
		if (is_smi(w[k]) && is_smi(w[k + 1]) && smi(w[k]) >= 0 &&
		    smi(w[k]) <= smi(w[k + 1])) {
			*start = (int)smi(w[k]);
			*end = (int)smi(w[k + 1]);
			break;
		}
	}
	base = m->scopeinfo_first_vars + (count < 75 ? 2 * (size_t)count : 1 + (size_t)count);
	if (base + 8 > sizeof(w) / sizeof(w[0])) {
		if (!rd_window(n, si - 1 + 8 + 8 * base, w, sizeof(w)))
			return false;
		base = 0;
	}
	for (k = base; k < base + 4 && k < 24; k++) {
		if (is_heap(w[k]) && type__is_string(m, obj__type(n, w[k]))) {
			if (string__read(n, w[k], name, nlen))
				name_at = (int)k;
			break;
		}
	}
	if (*start >= 0)
		return true;
	/* the position pair: skip the name and, for the function variable, its index */
	for (k = name_at >= 0 ? (size_t)name_at + 1 : base; k + 1 < base + 8 && k + 1 < 24; k++) {
		if (!is_smi(w[k]) || !is_smi(w[k + 1]))
			continue;
		if (k + 2 < 24 && is_smi(w[k + 2]) && (int)k == name_at + 1)
			continue;	/* {name, index}{start, end}: the index first */
		if (smi(w[k]) >= 0 && smi(w[k]) <= smi(w[k + 1])) {
			*start = (int)smi(w[k]);
			*end = (int)smi(w[k + 1]);
		}
		return true;
	}
	return true;
}

/* ---- Script: URL and line ends ---- */

/* Line ends count UTF-16 units, as script offsets do: a UTF-8 lead byte or ASCII is one. */
static void script__line_ends(struct script *s, const char *src, size_t len)
{
	size_t cap = 256;
	uint32_t pos = 0;

	s->line_ends = malloc(cap * sizeof(*s->line_ends));
	for (size_t i = 0; s->line_ends && i < len; i++) {
		unsigned char ch = (unsigned char)src[i];

		if ((ch & 0xc0) == 0x80)
			continue;
		if (ch == '\n') {
			if (s->nlines == cap) {
				uint32_t *ne = realloc(s->line_ends, 2 * cap * sizeof(*ne));

				if (!ne)
					break;
				s->line_ends = ne;
				cap *= 2;
			}
			s->line_ends[s->nlines++] = pos;
		}
		pos++;
	}
}

static struct script *script__get(struct v8_namer *n, uint64_t sc)
{
	const struct v8_meta *m = n->m;
	struct script *s = cache__get(&n->scripts, sc);
	uint64_t head[4], name_word, source_word;
	int32_t slen;
	char *src;

	/* map, source, name: one read validates a cached entry */
	if (m->script_name >= sizeof(head) || m->script_source >= sizeof(head) ||
	    !rd(n, sc - 1, head, sizeof(head)) || map__type(n, head[0]) != m->t_script)
		return NULL;
	name_word = head[m->script_name / 8];
	source_word = head[m->script_source / 8];
	if (s && s->name_word == name_word && s->source_word == source_word)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->name_word = name_word;
	s->source_word = source_word;
	if (!is_heap(name_word) || !string__read(n, name_word, s->url, sizeof(s->url)))
		s->url[0] = '\0';
	if (is_heap(source_word) && type__is_string(m, obj__type(n, source_word)) &&
	    rd(n, source_word - 1 + m->string_length, &slen, sizeof(slen)) && slen > 0 &&
	    (uint32_t)slen <= SOURCE_MAX) {
		struct sbuf b = { .cap = (size_t)slen * 3 + 1 };

		src = b.buf = malloc(b.cap);
		if (src && string__read_at(n, source_word, 0, (uint32_t)slen, &b, 0))
			script__line_ends(s, src, b.len);
		free(src);
	}
	cache__put(&n->scripts, sc, s);
	return s;
}

/* 1-based line and column of a script offset; 0 when unknown */
static void script__line_col(const struct script *s, int pos, int *line, int *col)
{
	size_t lo = 0, hi = s->nlines;

	*line = *col = 0;
	if (pos < 0 || !s->line_ends)
		return;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->line_ends[mid] < (uint32_t)pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	*line = (int)lo + 1;
	*col = pos - (lo ? (int)s->line_ends[lo - 1] + 1 : 0) + 1;
}

/* ---- SharedFunctionInfo ---- */

static struct sfi *sfi__resolve(struct v8_namer *n, uint64_t name_word, uint64_t script_word)
{
	const struct v8_meta *m = n->m;
	struct sfi *s = calloc(1, sizeof(*s));
	int t = obj__type(n, name_word);

	if (!s)
		return NULL;
	s->name_word = name_word;
	s->script_word = script_word;
	s->start = s->end = -1;
	if (t == m->t_scope_info) {
		/* unread, it is asked again at the next stack, not cached as anonymous */
		if (!scope_info__read(n, name_word, s->name, sizeof(s->name), &s->start,
				      &s->end)) {
			free(s);
			return NULL;
		}
	} else if (!type__is_string(m, t) ||
		   !string__read(n, name_word, s->name, sizeof(s->name))) {
		free(s);
		return NULL;
	}
	if (obj__type(n, script_word) == m->t_script)
		s->script = script_word;
	return s;
}

/* length, formal parameter count, function token offset: fixed at parse time */
#define SFI_INTS_MASK 0xffffffffffffULL

/*
 * The SFI at a tagged address, if it still is the one captured: the SFI map
 * and the same name_or_scope_info word, or, when a GC moved its ScopeInfo
 * (the word then changes), the same script and parse-time ints. Anything
 * else means another object lives there now (compaction moved the SFI, or
 * it died).
 */
static struct sfi *sfi__get(struct v8_namer *n, uint64_t sfi, uint64_t captured_name,
			    uint64_t captured_script, uint64_t captured_ints)
{
	const struct v8_meta *m = n->m;
	uint64_t head[LW_V8_OBJ_READ / 8], name_word, script_word, ints;
	struct sfi *s;

	if (!is_heap(sfi) || !rd_window(n, sfi - 1, head, sizeof(head)) ||
	    map__type(n, head[0]) != m->t_sfi)
		return NULL;
	name_word = head[m->sfi_name_or_scope_info / 8];
	script_word = head[m->sfi_script / 8];
	memcpy(&ints, (const uint8_t *)head + m->sfi_length, sizeof(ints));
	if (name_word != captured_name &&
	    (script_word != captured_script || !is_heap(script_word) ||
	     ((ints ^ captured_ints) & SFI_INTS_MASK)))
		return NULL;
	s = cache__get(&n->sfis, sfi);
	if (s && s->name_word == name_word && s->script_word == script_word)
		return s;
	s = sfi__resolve(n, name_word, script_word);
	if (s)
		cache__put(&n->sfis, sfi, s);
	return s;
}

/* ---- source position tables ---- */

/* A table (ByteArray or TrustedByteArray), read whole; NULL when none. */
static bool postab__read(struct v8_namer *n, uint64_t tab, struct postab *t)
{
	const struct v8_meta *m = n->m;
	uint64_t lenw;
	int ty = obj__type(n, tab);

	t->bytes = NULL;
	if (ty < 0 || (ty != m->t_byte_array && ty != m->t_trusted_byte_array) ||
	    !rd_word(n, tab - 1 + m->fixed_array_length, &lenw) || !is_smi(lenw) ||
	    smi(lenw) <= 0 || smi(lenw) > TABLE_MAX)
		return false;
	t->len = (uint32_t)smi(lenw);
	t->breakable = m->spt_breakable;
	t->bytes = malloc(t->len);
	if (!t->bytes || !rd(n, tab - 1 + m->fixed_array_data, t->bytes, t->len)) {
		free(t->bytes);
		t->bytes = NULL;
		return false;
	}
	return true;
}

static bool postab__vlq(const struct postab *t, uint32_t *i, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (*i >= t->len || shift > 63)
			return false;
		b = t->bytes[(*i)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*out = v;
	return true;
}

static bool postab__zigzag(const struct postab *t, uint32_t *i, int64_t *out)
{
	uint64_t v;

	if (!postab__vlq(t, i, &v))
		return false;
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return true;
}

/*
 * One entry's deltas of (code offset, position): the position a zigzag
 * VLQ; the code offset a zigzag VLQ d, "not a statement" when negative,
 * delta = d >= 0 ? d : -(d + 1), or from V8 14 an unsigned VLQ
 * delta << 2 | is_breakable << 1 | is_statement. Read the old way, a V8 14
 * table's offsets come out about twice as large: lines from earlier code.
 */
static bool postab__entry(const struct postab *t, uint32_t *i, int64_t *code, int64_t *pos)
{
	uint64_t u;

	if (t->breakable) {
		if (!postab__vlq(t, i, &u))
			return false;
		*code = (int64_t)(u >> 2);
	} else {
		if (!postab__zigzag(t, i, code))
			return false;
		if (*code < 0)
			*code = -(*code + 1);
	}
	return postab__zigzag(t, i, pos);
}

/*
 * The raw SourcePosition of the last entry at or before code offset off:
 * entries are deltas from (-1, 0). -1 when none.
 */
static int64_t postab__find(const struct postab *t, int64_t off)
{
	int64_t code = -1, pos = 0, found = -1, dc, dp;
	uint32_t i = 0;

	while (i < t->len && postab__entry(t, &i, &dc, &dp)) {
		code += dc;
		if (code > off)
			break;
		pos += dp;
		found = pos;
	}
	return found;
}

/* SourcePosition: bit 0 external, bits 1-30 script offset + 1, bits 31-46 inlining id */
static int sp__offset(int64_t raw)
{
	if (raw < 0 || (raw & 1))
		return -1;
	return (int)((raw >> 1) & ((1 << 30) - 1)) - 1;
}

static int sp__inlining(int64_t raw)
{
	return raw < 0 ? 0 : (int)((raw >> 31) & 0xffff);
}

/* ---- frames ---- */

static void frame__from_sfi(struct v8_namer *n, const struct sfi *s, uint64_t pc, struct frame *f)
{
	struct script *sc = s->script ? script__get(n, s->script) : NULL;

	memset(f, 0, sizeof(*f));
	f->kind = FRAME_JS;
	f->addr = pc;
	snprintf(f->func, sizeof(f->func), "%s", s->name[0] ? s->name : "<anonymous>");
	if (sc) {
		snprintf(f->file, sizeof(f->file), "%s", sc->url[0] ? sc->url : "<eval>");
		script__line_col(sc, s->start, &f->line, &f->column);
		f->line_inexact = true;
	}
}

/*
 * A script offset as the frame's line and column, when the script is known
 * and the offset lies in the function: a table read from an address a GC
 * has given to another function's code would point elsewhere.
 */
static void frame__at(struct v8_namer *n, const struct sfi *s, int off, struct frame *f)
{
	struct script *sc = s->script ? script__get(n, s->script) : NULL;
	int line, col;

	if (!sc || off < 0 ||
	    (s->start >= 0 && s->end > s->start && (off < s->start || off > s->end)))
		return;
	script__line_col(sc, off, &line, &col);
	if (line) {
		f->line = line;
		f->column = col;
		f->line_inexact = false;
	}
}

/* Script offset of a bytecode offset in a BytecodeArray, -1 when unknown. */
static int bytecode__pos(struct v8_namer *n, uint64_t ba, int64_t bc_off)
{
	struct postab t;
	uint64_t tab;
	int pos;

	if (!rd_word(n, ba - 1 + n->m->bytecode_array_spt, &tab) || !postab__read(n, tab, &t))
		return -1;
	pos = sp__offset(postab__find(&t, bc_off));
	free(t.bytes);
	return pos;
}

/* length of the bytecode at off (with its scaling prefix), 0 when unknown */
static uint32_t bytecode__len(const struct v8_meta *m, const uint8_t *bc, uint32_t len,
			      uint32_t off)
{
	uint32_t scale = 0, op;

	if (off >= len)
		return 0;
	op = bc[off];
	/* Wide, ExtraWide, DebugBreakWide, DebugBreakExtraWide prefix the next one */
	if (op <= 3) {
		scale = (op & 1) ? 2 : 1;
		if (off + 1 >= len || bc[off + 1] >= m->bytecode_count)
			return 0;
		return 1 + m->bytecode_sizes[scale * m->bytecode_count + bc[off + 1]];
	}
	return op < m->bytecode_count ? m->bytecode_sizes[op] : 0;
}

/*
 * Sparkplug code: pc -> bytecode offset, as V8's BytecodeOffsetIterator
 * does: the Code's bytecode offset table holds, per bytecode in order, the
 * unsigned VLQ length of its machine code; bytecode sizes come from
 * kBytecodeSizes.
 */
static int64_t baseline__bytecode_offset(struct v8_namer *n, uint64_t code, uint64_t ba,
					 uint64_t pcoff)
{
	const struct v8_meta *m = n->m;
	uint64_t tabw, lenw, pc_end = 0, d;
	struct postab t;
	uint32_t i = 0, bclen, cur = 0, l;
	int64_t bc_off = -1;
	uint8_t *bc;

	if (!m->bytecode_count || !m->code_bc_offsets ||
	    !rd_word(n, code - 1 + m->code_bc_offsets, &tabw) ||
	    !rd_word(n, ba - 1 + m->bytecode_array_length, &lenw) || !is_smi(lenw) ||
	    smi(lenw) <= 0 || smi(lenw) > BYTECODE_MAX || !postab__read(n, tabw, &t))
		return -1;
	bclen = (uint32_t)smi(lenw);
	bc = malloc(bclen);
	/* the prologue's code first, then one run per bytecode */
	if (!bc || !rd(n, ba - 1 + m->bytecode_array_data, bc, bclen) ||
	    !postab__vlq(&t, &i, &pc_end))
		goto out;
	while (pc_end < pcoff && postab__vlq(&t, &i, &d)) {
		pc_end += d;
		bc_off = cur;
		l = bytecode__len(m, bc, bclen, cur);
		if (!l) {
			bc_off = -1;
			break;
		}
		cur += l;
	}
out:
	free(bc);
	free(t.bytes);
	return bc_off;
}

struct code_info {
	uint64_t code, start;
	uint32_t size;
	int kind;
};

/* Fill ci from a Code object; false unless the pc is inside its instructions. */
static bool code__fields(struct v8_namer *n, uint64_t code, uint64_t pc, struct code_info *ci)
{
	const struct v8_meta *m = n->m;
	uint32_t flags;

	ci->code = code;
	if (!m->code_instruction_start || obj__type(n, code) != m->t_code)
		return false;
	if (m->code_inline)
		ci->start = code - 1 + m->code_instruction_start;
	else if (!rd_word(n, code - 1 + m->code_instruction_start, &ci->start))
		return false;
	if (!rd(n, code - 1 + m->code_flags, &flags, sizeof(flags)) ||
	    !rd(n, code - 1 + m->code_instruction_size, &ci->size, sizeof(ci->size)))
		return false;
	ci->kind = (int)((flags >> m->codekind_shift) & m->codekind_mask);
	return pc >= ci->start && pc - ci->start < ci->size;
}

static bool target__is_jit(const struct v8_target *t, uint64_t pc)
{
	return pc >= t->code_lo && pc < t->code_hi && !(pc >= t->remap_lo && pc < t->remap_hi);
}

static bool target__is_builtin(const struct v8_target *t, uint64_t pc)
{
	return (pc >= t->blob_lo && pc < t->blob_hi) || (pc >= t->remap_lo && pc < t->remap_hi);
}

/*
 * The Code whose instructions hold pc, whatever the JSFunction points at
 * now (OSR code, code deoptimized while on the stack, node 24 where
 * JSFunction has a dispatch handle): instructions start CODE_ALIGN-aligned,
 * istream_header bytes into an InstructionStream whose map has that type
 * and whose second word points back at its Code (the Code's own header on
 * V8 <= 11.2). Scanned back from pc a chunk per read; ranges found are kept.
 */
static bool code__for_pc(struct v8_namer *n, uint64_t pc, struct code_info *ci)
{
	const struct v8_meta *m = n->m;
	uint64_t buf[SCAN_CHUNK / 8], hi = (pc & ~(uint64_t)(CODE_ALIGN - 1)) + CODE_ALIGN;
	uint64_t hdr = m->code_inline ? m->code_instruction_start : m->istream_header;
	int hdr_type = m->code_inline ? m->t_code : m->t_istream;
	uintptr_t cached = (uintptr_t)cache__get(&n->coderanges, pc);

	if (hdr_type == V8M_NO_TYPE || !hdr || hdr > SCAN_CHUNK)
		return false;
	if (cached && code__fields(n, (uint64_t)cached, pc, ci))
		return true;
	for (uint64_t done = 0; done < SCAN_MAX; done += SCAN_CHUNK) {
		uint64_t lo = hi - SCAN_CHUNK;

		/* the words istream_header below each candidate start in [lo, hi) */
		if (!rd(n, lo - hdr, buf, sizeof(buf)))
			return false;
		for (uint64_t s = hi - CODE_ALIGN; s >= lo && s < hi; s -= CODE_ALIGN) {
			uint64_t map = buf[(s - lo) / 8], code = s - hdr + 1;

			if (!is_heap(map) || map__type(n, map) != hdr_type)
				continue;
			if (!m->code_inline && !rd_word(n, s - hdr + m->istream_code, &code))
				return false;
			if (!code__fields(n, code, pc, ci) || ci->start != s)
				return false;
			cache__put(&n->coderanges, pc, (void *)(uintptr_t)code);
			return true;
		}
		hi = lo;
	}
	return false;
}

static bool code__of(struct v8_namer *n, const struct lw_v8_frame *f, struct code_info *ci)
{
	const struct v8_meta *m = n->m;
	uint64_t code;

	/* the function's current code first: no scan when it is the running one */
	if (m->jsfunc_code && is_heap(f->func) && rd_word(n, f->func - 1 + m->jsfunc_code, &code) &&
	    code__fields(n, code, f->pc, ci))
		return true;
	return target__is_jit(n->t, f->pc) && code__for_pc(n, f->pc, ci);
}

/*
 * An optimised frame: the position table of its Code and, for inlined
 * code, DeoptimizationData[InliningPositions] (16-byte {SourcePosition of
 * the call in the caller; int inlined function id}) and its literals (the
 * inlined SFIs, maybe weak references). out[0..max) innermost first.
 */
static int optimized__frames(struct v8_namer *n, const struct lw_v8_frame *f,
			     const struct code_info *ci, const struct sfi *s, struct frame *out,
			     int max)
{
	const struct v8_meta *m = n->m;
	uint64_t spt, dd = 0, lit = 0, ipos = 0;
	struct postab t;
	int64_t raw, pcoff;
	int id, k = 0;

	if (!m->code_spt || !rd_word(n, ci->code - 1 + m->code_spt, &spt) ||
	    !postab__read(n, spt, &t))
		return 1;
	/* a return address is after the call: look up the call itself */
	pcoff = (int64_t)(f->pc - ci->start) - ((f->flags & LW_V8_F_TOP) ? 0 : 1);
	raw = postab__find(&t, pcoff);
	free(t.bytes);
	id = sp__inlining(raw);
	if (id && (!m->code_deopt || !rd_word(n, ci->code - 1 + m->code_deopt, &dd) ||
		   !is_heap(dd) ||
		   !rd_word(n, dd - 1 + m->fixed_array_data + 8 * m->deopt_literals, &lit) ||
		   !rd_word(n, dd - 1 + m->fixed_array_data + 8 * m->deopt_inlining_positions,
			    &ipos) || !is_heap(lit) || !is_heap(ipos)))
		id = 0;
	while (id && k < max - 1) {
		struct sfi *inl;
		uint64_t w, head;
		uint8_t ent[16];
		int32_t fid;

		if (!rd(n, ipos - 1 + m->fixed_array_data + 16 * (uint64_t)(id - 1), ent,
			sizeof(ent)))
			break;
		memcpy(&fid, ent + 8, sizeof(fid));
		if (fid < 0 || fid > 4096 ||
		    !rd_word(n, lit - 1 + m->fixed_array_data + 8 * (uint64_t)fid, &w))
			break;
		/* a weak reference (tag 11) to the SFI, read now: its own head is the check */
		w = (w & ~3ULL) | 1;
		if (!rd_word(n, w - 1 + m->sfi_name_or_scope_info, &head))
			break;
		inl = sfi__get(n, w, head, 0, 0);
		if (!inl)
			break;
		frame__from_sfi(n, inl, f->pc, &out[k]);
		frame__at(n, inl, sp__offset(raw), &out[k]);
		out[k].tier = tier_names[TIER_INLINED];
		k++;
		memcpy(&raw, ent, sizeof(raw));
		id = sp__inlining(raw);
	}
	if (k) {
		/* the frame's own function, at the outermost call site */
		const char *tier = out[0].tier;

		frame__from_sfi(n, s, f->pc, &out[k]);
		out[k].tier = tier;
		out[0].tier = tier_names[TIER_INLINED];
	}
	frame__at(n, s, sp__offset(raw), &out[k]);
	return k + 1;
}

/* Tier, line and inlined frames of a JS frame whose SFI is s; out[0] is filled from s. */
static int frame__lines(struct v8_namer *n, const struct lw_v8_frame *f, const struct sfi *s,
			struct frame *out, int max)
{
	const struct v8_meta *m = n->m;
	int bt = obj__type(n, f->bytecode_array), k;
	bool in_builtin = target__is_builtin(n->t, f->pc);
	struct code_info ci;
	int64_t bc;

	if (!s->script && in_builtin) {
		out->tier = tier_names[TIER_BUILTIN];	/* Array.prototype.forEach... */
		return 1;
	}
	if ((f->flags & LW_V8_F_BC_SMI) && in_builtin) {
		/*
		 * Ignition: the pc is in a bytecode handler or the entry
		 * trampoline, the frame keeps the offset from the tagged array
		 * (OSR code reuses the frame, but runs in JIT code: not here).
		 * The array is read now: still one (bytecode flushing frees it).
		 */
		out->tier = tier_names[TIER_INTERPRETED];
		if (m->bytecode_array_data && bt == m->t_bytecode_array)
			frame__at(n, s, bytecode__pos(n, f->bytecode_array,
						      smi(f->bytecode_offset) -
						      (m->bytecode_array_data - 1)), out);
		/* a running frame saves its offset only when it calls out: its last call's */
		if (f->flags & LW_V8_F_TOP)
			out->line_inexact = true;
		return 1;
	}
	if (!code__of(n, f, &ci)) {
		/* a frameless builtin or stub it called holds the pc: the frame's shape tells */
		out->tier = tier_names[bt == m->t_bytecode_array && is_heap(f->bytecode_offset) ?
				       TIER_BASELINE : in_builtin ? TIER_UNKNOWN : TIER_OPTIMIZED];
		return 1;
	}
	if (ci.kind == (int)m->codekind_baseline) {
		out->tier = tier_names[TIER_BASELINE];
		bc = bt == m->t_bytecode_array ?
		     baseline__bytecode_offset(n, ci.code, f->bytecode_array, f->pc - ci.start) :
		     -1;
		if (bc >= 0)
			frame__at(n, s, bytecode__pos(n, f->bytecode_array, bc), out);
		return 1;
	}
	out->tier = tier_names[ci.kind == (int)m->codekind_maglev ? TIER_MAGLEV :
			       ci.kind == (int)m->codekind_turbofan ? TIER_TURBOFAN :
			       TIER_OPTIMIZED];
	k = optimized__frames(n, f, &ci, s, out, max);
	return k;
}

static int frame__js_marker(struct frame *f, uint64_t pc, const char *text)
{
	frame__marker(f, FRAME_JS, text);
	f->addr = pc;
	return 1;
}

/*
 * A sample in a frameless builtin (an IC, an arithmetic stub) called from
 * compiled JS: frames[0] is the caller's frame with the builtin's pc. The
 * word at sp is the return address into the caller; taken when it lies in
 * the function's own code, so the line is the call's, not the function's
 * first.
 */
static const struct lw_v8_frame *frame__caller_of_builtin(struct v8_namer *n,
							 const struct lw_v8_frame *f,
							 uint64_t top_ret, struct lw_v8_frame *g)
{
	struct code_info ci;
	uint64_t code;

	if (!(f->flags & LW_V8_F_TOP) || !top_ret || (f->flags & LW_V8_F_BC_SMI) ||
	    !target__is_builtin(n->t, f->pc) || !n->m->jsfunc_code || !is_heap(f->func) ||
	    !rd_word(n, f->func - 1 + n->m->jsfunc_code, &code) ||
	    !code__fields(n, code, top_ret - 1, &ci))
		return f;
	*g = *f;
	g->pc = top_ret;
	g->flags &= ~LW_V8_F_TOP;
	return g;
}

int v8_namer__frame(struct v8_namer *n, const struct v8_target *t, const struct lw_v8_frame *f,
		    uint64_t top_ret, struct frame *out, int max)
{
	struct lw_v8_frame g;
	uint64_t key;
	struct named *nm;
	struct sfi *s;
	int k;

	if (max <= 0)
		return 0;
	n->t = t;
	n->m = t->m;
	f = frame__caller_of_builtin(n, f, top_ret, &g);
	key = (f->sfi * 0x9e3779b97f4a7c15ULL) ^ f->pc ^ (f->bytecode_offset << 7) ^ f->flags;
	if (!(f->flags & LW_V8_F_HEADS))
		return frame__js_marker(out, f->pc, "[js: unreadable]");
	/* at capture: was that an SFI? (its map lives in read-only space: never moves) */
	if (map__type(n, f->sfi_map) != n->m->t_sfi)
		return frame__js_marker(out, f->pc, "[js: not a function]");
	nm = cache__get(&n->named, key ?: 1);
	if (nm && nm->sfi == f->sfi && nm->pc == f->pc && nm->bco == f->bytecode_offset &&
	    nm->ba == f->bytecode_array && nm->flags == f->flags && nm->name_word == f->sfi_name &&
	    nm->script_word == f->sfi_script && !((nm->ints ^ f->sfi_ints) & SFI_INTS_MASK)) {
		k = nm->k < max ? nm->k : max;
		memcpy(out, nm->out, (size_t)k * sizeof(*out));
		return k;
	}
	s = sfi__get(n, f->sfi, f->sfi_name, f->sfi_script, f->sfi_ints);
	if (!s)
		return frame__js_marker(out, f->pc, "[js: moved by GC]");
	frame__from_sfi(n, s, f->pc, out);
	if (f->flags & LW_V8_F_BUILTIN_EXIT)
		out->tier = tier_names[TIER_BUILTIN];	/* JSON.stringify, a binding */
	k = f->flags & LW_V8_F_BUILTIN_EXIT ? 1 : frame__lines(n, f, s, out, max);
	nm = calloc(1, sizeof(*nm) + (size_t)(k < NAMED_MAX ? k : NAMED_MAX) * sizeof(*out));
	if (nm) {
		nm->sfi = f->sfi;
		nm->pc = f->pc;
		nm->bco = f->bytecode_offset;
		nm->ba = f->bytecode_array;
		nm->flags = f->flags;
		nm->name_word = f->sfi_name;
		nm->script_word = f->sfi_script;
		nm->ints = f->sfi_ints;
		nm->k = k < NAMED_MAX ? k : NAMED_MAX;
		memcpy(nm->out, out, (size_t)nm->k * sizeof(*out));
		cache__put(&n->named, key ?: 1, nm);
	}
	return k;
}

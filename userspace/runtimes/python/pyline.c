// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <limits.h>
#include "runtimes/python/pyline.h"

/* garbage tables can run a line far off: no int overflow, no negative lines */
static int line__result(int64_t line)
{
	return line < 0 || line > INT_MAX ? -1 : (int)line;
}

/* (addr_incr u8, line_incr s8) pairs: the line changes where addr passes pos */
static int pyline__lnotab(const uint8_t *tab, size_t len, int first, int64_t pos)
{
	int64_t addr = 0, line = first;

	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > pos)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line__result(line);
}

/* (length u8, line_delta s8) ranges; a delta of -128 is a range without a line */
static int pyline__linetable_310(const uint8_t *tab, size_t len, int first, int64_t pos)
{
	int64_t start, end = 0, line = first, cur;

	for (size_t i = 0; i + 1 < len; i += 2) {
		start = end;
		end += tab[i];
		cur = -1;
		if (tab[i + 1] != 0x80) {
			line += (int8_t)tab[i + 1];
			cur = line;
		}
		if (start <= pos && pos < end)
			return line__result(cur);
	}
	return -1;
}

/* little-endian 6-bit chunks, bit 6 says another follows */
static uint32_t varint__read(const uint8_t *tab, size_t len, size_t i)
{
	uint32_t v = 0;
	unsigned int shift = 0;

	while (i < len && shift < 32) {
		uint8_t b = tab[i++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

/*
 * Entries start with a byte with bit 7 set: code in bits 3-6, length-1 in
 * bits 0-2 (code units). Only the line is wanted, so the column bytes that
 * follow are skipped to the next start byte.
 */
static int pyline__locations(const uint8_t *tab, size_t len, int first, int64_t pos)
{
	int64_t addr = 0, line = first;
	size_t i = 0;

	while (i < len) {
		uint8_t b = tab[i];
		unsigned int code = (b >> 3) & 15, n = (b & 7) + 1;

		if (code == 13 || code == 14) {		/* NO_COLUMNS, LONG: svarint delta */
			uint32_t v = varint__read(tab, len, i + 1);

			line += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (code >= 10 && code <= 12) {	/* ONE_LINE0..2 */
			line += (int64_t)code - 10;
		}
		if (addr <= pos && pos < addr + n)
			return code == 15 ? -1 : line__result(line);	/* 15: NONE */
		addr += n;
		for (i++; i < len && !(tab[i] & 0x80); i++)
			;
	}
	return -1;
}

int pyline__find(enum pyline_format fmt, const uint8_t *tab, size_t len, int first, int64_t pos)
{
	if (pos < 0)
		return first;
	if (!tab)
		len = 0;
	switch (fmt) {
	case PYLINE_LNOTAB:
		return pyline__lnotab(tab, len, first, pos);
	case PYLINE_LINETABLE_310:
		return pyline__linetable_310(tab, len, first, pos);
	case PYLINE_LOCATIONS:
		return pyline__locations(tab, len, first, pos);
	}
	return -1;
}

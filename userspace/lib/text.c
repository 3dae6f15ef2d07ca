// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "lib/text.h"

int utf8__seq_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

/* The code point of a valid sequence of n bytes. */
static unsigned int utf8__decode(const unsigned char *s, int n)
{
	unsigned int cp = n == 1 ? s[0] : s[0] & (0x7f >> n);

	for (int i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3f);
	return cp;
}

/*
 * What a terminal or a log reader acts on instead of showing: C0 controls
 * and DEL (ESC starts escape sequences, CR and LF forge lines), C1 controls
 * (U+009B is a one-character CSI on many terminals), the line and paragraph
 * separators, and the bidirectional overrides that reorder what is shown.
 */
static bool codepoint__unsafe(unsigned int cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

char *str__sanitize(char *str)
{
	unsigned char *s = (unsigned char *)str, *out = s;

	while (*s) {
		int n = utf8__seq_len(s);

		if (!n || codepoint__unsafe(utf8__decode(s, n))) {
			*out++ = '?';
			s += n ? n : 1;
			continue;
		}
		while (n--)
			*out++ = *s++;
	}
	*out = '\0';
	return str;
}

size_t utf8__valid_prefix(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	int k;

	while (p[n] && (k = utf8__seq_len(p + n)))
		n += (size_t)k;
	return n;
}

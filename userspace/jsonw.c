// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "jsonw.h"

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static int utf8__seq_len(const unsigned char *s)
{
	int n, i;

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
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	}
	return n;
}

void json__string(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', out);
	while (*s) {
		int n;

		if (*s == '"' || *s == '\\') {
			fputc('\\', out);
			fputc(*s++, out);
			continue;
		}
		if (*s < 0x20 || *s == 0x7f) {
			fprintf(out, "\\u%04x", *s++);
			continue;
		}
		n = utf8__seq_len(s);
		if (!n) {
			fputs("\\ufffd", out);
			s++;
			continue;
		}
		fwrite(s, 1, (size_t)n, out);
		s += n;
	}
	fputc('"', out);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit test for userspace/lib/text.c: the one sanitizer of traced processes' strings. */
#include <stdio.h>
#include <string.h>
#include "lib/text.h"
#include "check.h"

static void expect(const char *in, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", in);
	str__sanitize(buf);
	CHECK(!strcmp(buf, want), "%s -> '%s', want '%s'", in, buf, want);
}

int main(void)
{
	expect("plain name", "plain name");
	expect("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x97\xa5"
	       "\xe6\x9c\xac \xf0\x9f\x98\x80");
	/* an OSC title with BEL, CR LF and a forged line, a CSI */
	expect("\x1b]0;x\x07\r\nloopwatch: ALERT\x1b[2J", "?]0;x???loopwatch: ALERT?[2J");
	expect("del\x7f", "del?");
	/* C1: U+0085 (NEL) and U+009B (CSI) as UTF-8, and as raw bytes */
	expect("a\xc2\x85" "b\xc2\x9b" "c", "a?b?c");
	expect("a\x9b" "b\x85", "a?b?");
	/* line/paragraph separators and bidi overrides, e.g. U+202E */
	expect("x\xe2\x80\xa8y\xe2\x80\xa9z\xe2\x80\xae!\xe2\x81\xa6", "x?y?z?!?");
	/* invalid UTF-8: overlong, surrogate, past U+10FFFF, cut short */
	expect("\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe6\x97", "??|???|????|??");
	/* a sanitized name copied into a smaller buffer: the cut sequence goes, no more */
	CHECK(utf8__valid_prefix("caf\xc3\xa9") == 5, "whole");
	CHECK(utf8__valid_prefix("caf\xc3") == 3, "cut after 3: %zu", utf8__valid_prefix("caf\xc3"));
	CHECK(utf8__valid_prefix("\xe6\x97\xa5\xe6\x97") == 3, "cut mid-sequence");
	CHECK(utf8__valid_prefix("") == 0, "empty");
	return check__report();
}

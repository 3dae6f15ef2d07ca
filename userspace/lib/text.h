/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Text from traced processes (comm, paths, symbol names, Python names): never
 * trusted. Every such string goes through str__sanitize() once, where it
 * enters loopwatch, before any output sees it.
 */
#ifndef LOOPWATCH_LIB_TEXT_H
#define LOOPWATCH_LIB_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Length of the valid UTF-8 sequence at s, 0 if invalid. Strict (no
 * overlongs, surrogates or code points past U+10FFFF): Prometheus rejects a
 * whole file over one bad label value, and JSON readers choke on them too.
 */
int utf8__seq_len(const unsigned char *s);
/*
 * In place, a printable copy: every control character (C0, DEL, C1), line
 * separator and bidirectional override, and every byte that is not valid
 * UTF-8, becomes one '?'. The string can only get shorter. Returns s.
 */
char *str__sanitize(char *s);
/*
 * How much of s is valid UTF-8 from its start: all of a sanitized string,
 * less a sequence cut short when it was copied into a smaller buffer.
 * Protobuf strings must be valid UTF-8: a receiver refuses the whole request.
 */
size_t utf8__valid_prefix(const char *s);

#endif

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Text from traced processes (comm, paths, symbols): never trusted. */
#ifndef LOOPWATCH_LIB_TEXT_H
#define LOOPWATCH_LIB_TEXT_H

/*
 * Length of the valid UTF-8 sequence at s, 0 if invalid. Strict (no
 * overlongs, surrogates or code points past U+10FFFF): Prometheus rejects a
 * whole file over one bad label value, and JSON readers choke on them too.
 */
int utf8__seq_len(const unsigned char *s);
/* In place, a printable copy: control characters become '?'. */
void str__sanitize(char *s);

#endif

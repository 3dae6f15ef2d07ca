/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * C++ symbol names for people: demangled by libstdc++'s __cxa_demangle,
 * then shortened to the qualified function name (return type, template
 * arguments and parameters cut: v8::internal::JsonStringifier::Serialize_),
 * which fits a stack line. Frames keep the raw name beside it.
 */
#ifndef LOOPWATCH_SYMBOLS_DEMANGLE_H
#define LOOPWATCH_SYMBOLS_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The name to show for a symbol: C++ demangled and shortened, a symbol
 * version (@@GLIBC_2.34) and GCC's clone suffixes (.isra.0, .lto_priv.0,
 * .cold…) cut. False when that is the raw name itself.
 */
bool demangle__display(const char *raw, char *out, size_t len);
/* A demangled name (as __cxa_demangle prints it) shortened into out; "" when nothing is left. */
void demangle__shorten(const char *full, char *out, size_t len);

#endif

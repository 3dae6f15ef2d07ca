/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * C++ symbol names for people: demangled by libiberty (the Itanium C++
 * ABI's demangler GCC and libstdc++ share) within a budget, then shortened to the qualified function name (return type, template
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
 * .cold…) cut. False when that is the raw name itself. A name whose
 * demangling goes over its budget shows as itself, cut, with
 * " [demangle over budget]".
 */
bool demangle__display(const char *raw, char *out, size_t len);
/* How many names went over the demangling budget so far. */
unsigned long demangle__over_budget(void);
/* A demangled name (as the demangler prints it) shortened into out; "" when nothing is left. */
void demangle__shorten(const char *full, char *out, size_t len);

#endif

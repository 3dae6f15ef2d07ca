/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef LOOPWATCH_VERSION
#define LOOPWATCH_VERSION "0.1.0"
#endif

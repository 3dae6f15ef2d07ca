/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The plain-text summary, which the live view also prints when it closes. */
#ifndef LOOPWATCH_SINKS_TEXT_H
#define LOOPWATCH_SINKS_TEXT_H

#include <stdio.h>
#include "model/model.h"

void text__summary_print(FILE *out, const struct model *m);

#endif

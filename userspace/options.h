/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command line of loopwatch. */
#ifndef LOOPWATCH_OPTIONS_H
#define LOOPWATCH_OPTIONS_H

#include <stdbool.h>
#include "lwtypes.h"

#define OPT_MAX_PIDS 64

struct options {
	int pids[OPT_MAX_PIDS];
	int npids;
	char comm[LW_COMM_LEN];
	bool has_comm;
	double interval_s;
	double duration_s;	/* 0: until interrupted */
	bool json;
	bool verbose;
};

/* Parses argv into opts; on bad input prints one line and exits with status 2. */
void options__parse(struct options *opts, int argc, char **argv);

#endif

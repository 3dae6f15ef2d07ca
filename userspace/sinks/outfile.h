/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one writer of every output file (--report, --folded, --trace,
 * --prom-file): written whole and replaced atomically, so a reader never sees
 * half of one, and never at the host's expense.
 *
 * - Only a regular file, or nothing, is replaced: `--report /dev/null` as
 *   root must not turn the machine's /dev/null into a report, nor a FIFO,
 *   socket or directory be destroyed for its users. Checked at start and
 *   again before every rename.
 * - The temp file (.BASE.PID.tmp beside the target: one filesystem for the
 *   rename, hidden, not matching *.prom) is created with O_EXCL|O_NOFOLLOW: a
 *   FIFO squatting the name cannot hang the write, a symlink is not followed.
 *   Whatever squats it is removed and the create tried once more.
 * - Rendered in memory, then write(2) + fsync + rename: a failure says why
 *   (ENOSPC, EDQUOT) with the path, once, not stdio's "Input/output error".
 */
#ifndef LOOPWATCH_SINKS_OUTFILE_H
#define LOOPWATCH_SINKS_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

/* the file is 0644 whatever the umask: an unprivileged node_exporter reads it */
#define OUTFILE_WORLD_READABLE	(1u << 0)

struct outfile {
	char *path;
	char *tmp_path;
	const char *flag;	/* for messages: "--report" */
	unsigned int flags;	/* OUTFILE_* */
	char *buf;		/* what outfile__begin's stream rendered */
	size_t len;
	int last_err;		/* said once, not once per write */
	int first_err;		/* the run's first failure, -errno: its exit status */
};

/*
 * Checks that path is a regular file or nothing and that a file can be
 * created beside it; removes temp files of instances that died mid-write:
 * 0, or -1 with a one-line reason in err.
 */
int outfile__init(struct outfile *o, const char *path, const char *flag, unsigned int flags,
		  char *err, size_t errlen);
/* A stream to render into (memory); NULL (said once on stderr) on failure. */
FILE *outfile__begin(struct outfile *o);
/* Close f, write what it holds to the temp file and rename it over the path: 0 or
 * -errno, said once on stderr with the path. */
int outfile__commit(struct outfile *o, FILE *f);
/* 0, or the first write of the run that failed (-errno), even if later ones worked */
int outfile__status(const struct outfile *o);
void outfile__free(struct outfile *o);

#endif

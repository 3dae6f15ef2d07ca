// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The live view: redraws in place like top. q quits; the text summary follows. */
#include <curses.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sinks/rows.h"
#include "sinks/sink.h"
#include "sinks/text.h"

#define TUI_OFFENDER_WINDOW_S 60.0
#define TUI_MAX_PROBES 5

struct tui {
	FILE *out;
	bool open;
};

static bool tui__wanted(const struct sink_config *cfg)
{
	return !cfg->json && !cfg->quiet && cfg->tty;
}

static int tui__open(struct sink *s, const struct sink_config *cfg, char *err, size_t errlen)
{
	struct tui *t = calloc(1, sizeof(*t));

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	t->out = cfg->out;
	s->priv = t;
	return 0;
}

static int tui__start(struct sink *s, const struct model *m, double now)
{
	struct tui *t = s->priv;

	(void)m;
	(void)now;
	if (!initscr())
		return -EIO;
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	timeout(0);
	t->open = true;
	return 0;
}

/* the probes taking the largest share of loop busy time */
static int probes__draw(const struct model *m, int y)
{
	char row[256];

	if (!m->nprobes)
		return y - 1;
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-*s", COLS, probe_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; i < m->nprobes && i < TUI_MAX_PROBES && y < LINES; i++, y++) {
		probe_row__format(row, sizeof(row), &m->probes[i]);
		mvaddnstr(y, 0, row, COLS);
	}
	return y;
}

static void offenders__draw(const struct model *m, double now, int y)
{
	char row[512];
	size_t n;
	struct offender *o = model__offenders(m, now - TUI_OFFENDER_WINDOW_S, &n);

	mvprintw(y++, 0, "Top offenders, last %.0f s: %zu", TUI_OFFENDER_WINDOW_S, n);
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-*s", COLS, offender_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; o && i < n && y < LINES; i++, y++) {
		offender_row__format(row, sizeof(row), &o[i]);
		mvaddnstr(y, 0, row, COLS);
	}
	free(o);
}

static void tui__interval(struct sink *s, const struct model *m, double ts)
{
	struct tui *t = s->priv;
	char when[16], row[256];
	size_t n;
	struct loop_thread **v;
	bool compact = COLS < (int)strlen(loop_row__header());
	/* the loops take the top half, the offenders of the last minute the rest */
	int y = 3, half = LINES / 2;

	if (!t->open)
		return;
	v = model__sorted(m, false, &n);
	time__format(when, sizeof(when), ts);
	erase();
	mvprintw(0, 0, "loopwatch  %s  %zu active loop threads  interval %.1fs  (q quits)",
		 when, n, m->interval_s);
	attron(A_REVERSE);
	mvprintw(2, 0, "%-*s", COLS, compact ? loop_row__compact_header() : loop_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; v && i < n && y < half; i++, y++) {
		if (compact)
			loop_row__compact(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		else
			loop_row__format(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		mvaddnstr(y, 0, row, COLS);
	}
	free(v);
	y = probes__draw(m, y + 1);
	offenders__draw(m, ts, y + 1);
	refresh();
}

static int tui__pollfds(struct sink *s, struct pollfd *fds, int max)
{
	struct tui *t = s->priv;

	if (!t->open || max < 1)
		return 0;
	fds[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	return 1;
}

/* false when the user asked to quit (q) */
static bool tui__ready(struct sink *s, const struct pollfd *fd)
{
	int ch;

	(void)s;
	(void)fd;
	while ((ch = getch()) != ERR) {
		if (ch == 'q' || ch == 'Q')
			return false;
	}
	return true;
}

static void tui__end(struct tui *t)
{
	if (t->open)
		endwin();
	t->open = false;
}

static int tui__summary(struct sink *s, const struct model *m, double ts)
{
	struct tui *t = s->priv;

	(void)ts;
	tui__end(t);
	text__summary_print(t->out, m);
	return 0;
}

static void tui__close(struct sink *s)
{
	struct tui *t = s->priv;

	if (!t)
		return;
	tui__end(t);
	free(t);
}

const struct sink_ops tui_sink = {
	.name = "terminal view",
	.wanted = tui__wanted,
	.open = tui__open,
	.start = tui__start,
	/* the probes panel */
	.interval_needs = MODEL_AGGREGATES,
	.interval = tui__interval,
	.pollfds = tui__pollfds,
	.ready = tui__ready,
	.summary = tui__summary,
	.close = tui__close,
};

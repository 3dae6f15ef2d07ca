// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The live view: redraws in place like top. q quits. */
#include <curses.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sink.h"

static bool tui_open;

int sink_tui__open(void)
{
	if (!initscr())
		return -1;
	cbreak();
	noecho();
	curs_set(0);
	keypad(stdscr, TRUE);
	tui_open = true;
	return 0;
}

#define TUI_OFFENDER_WINDOW_S 60.0

#define TUI_MAX_PROBES 5

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

/*
 * An 80-column terminal cannot hold the full row (~106 columns) and would
 * cut off p99 and max, the columns rows are sorted by: drop the tid and
 * share one column between process and thread names there.
 */
#define TUI_COMPACT_HEADER "    PID COMM/THREAD       ITER/s UTIL%   P50ms   P90ms   P99ms P99.9ms   MAXms"

static void row__compact(char *buf, size_t len, const struct loop_thread *t,
			 const struct loop_view *v, double seconds)
{
	char names[2 * LW_COMM_LEN + 2];

	snprintf(names, sizeof(names), "%s/%s", t->comm, t->thread);
	snprintf(buf, len, "%7u %-16.16s %7.0f %5.1f %7.2f %7.2f %7.2f %7.2f %7.2f", t->pid, names,
		 seconds > 0 ? (double)v->iterations / seconds : 0,
		 100.0 * loop_view__utilization(v), (double)v->lag.p50_ns / 1e6,
		 (double)v->lag.p90_ns / 1e6, (double)v->lag.p99_ns / 1e6,
		 (double)v->lag.p999_ns / 1e6, (double)v->lag.max_ns / 1e6);
}

void sink_tui__interval(const struct model *m, double ts)
{
	char when[16], row[256];
	time_t secs = (time_t)ts;
	struct tm tm;
	size_t n;
	struct loop_thread **v = model__sorted(m, false, &n);

	localtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	erase();
	mvprintw(0, 0, "loopwatch  %s  %zu active loop threads  interval %.1fs  (q quits)",
		 when, n, m->interval_s);
	attron(A_REVERSE);
	bool compact = COLS < (int)strlen(loop_row__header());

	mvprintw(2, 0, "%-*s", COLS, compact ? TUI_COMPACT_HEADER : loop_row__header());
	attroff(A_REVERSE);
	/* the loops take the top half, the offenders of the last minute the rest */
	int y = 3, half = LINES / 2;

	for (size_t i = 0; v && i < n && y < half; i++, y++) {
		if (compact)
			row__compact(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		else
			loop_row__format(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		mvaddnstr(y, 0, row, COLS);
	}
	free(v);
	y = probes__draw(m, y + 1);
	offenders__draw(m, ts, y + 1);
	refresh();
}

bool sink_tui__poll_quit(int timeout_ms)
{
	int ch;

	timeout(timeout_ms);
	ch = getch();
	return ch == 'q' || ch == 'Q';
}

void sink_tui__close(void)
{
	if (tui_open)
		endwin();
	tui_open = false;
}

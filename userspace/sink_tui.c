// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The live view: redraws in place like top. q quits. */
#include <curses.h>
#include <stdlib.h>
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
	mvprintw(2, 0, "%-*s", COLS, loop_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; v && i < n && (int)i + 3 < LINES; i++) {
		loop_row__format(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		mvaddnstr((int)i + 3, 0, row, COLS);
	}
	free(v);
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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The live view: redraws in place like top; the text summary follows when
 * it closes. Keys: q quits, s changes the functions panel's order, p (or
 * space) pauses the redraw, / filters by pid or process name, the arrows
 * pick a loop thread and Enter opens it: its last stalls and blocking calls
 * with their stacks (Enter or Esc closes it).
 */
#include <curses.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "sinks/rows.h"
#include "sinks/sink.h"
#include "sinks/text.h"

#define TUI_MAX_PROBES 5
/* stalls and blocking calls kept for the thread view, all threads together */
#define TUI_EVENTS 64
#define TUI_STACKS 3		/* the heaviest stacks of a stall shown */
#define TUI_FRAMES 8		/* from the culprit frame up */
#define KEY_ESC 27

struct tui_event {
	__u32 pid;
	__u32 tid;
	char *text;		/* lines to show, rendered when it came; NULL: empty slot */
};

struct tui {
	FILE *out;
	bool open;
	const struct model *m;	/* for a redraw on a key */
	double ts;
	enum func_sort sort;
	bool paused;
	bool editing;		/* typing the filter */
	char filter[LW_COMM_LEN];
	int selected;		/* row of the loop table */
	__u32 open_tid;		/* the thread view, 0: none */
	__u32 row_tids[256];	/* tids of the rows last drawn */
	int nrows;
	struct tui_event events[TUI_EVENTS];
	size_t nevents;
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
	/* Esc alone, not the start of an escape sequence to wait for */
	set_escdelay(25);
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

static bool tui__matches(const struct tui *t, __u32 pid, const char *comm)
{
	char num[16];

	if (!t->filter[0])
		return true;
	snprintf(num, sizeof(num), "%u", pid);
	return !strcmp(num, t->filter) || strstr(comm, t->filter);
}

/* Stall time by function since the start, in the order the s key picked. */
static void functions__draw(const struct tui *t, const struct model *m, int y)
{
	char row[512];
	size_t n;
	const struct func_stat **v = attribution__sorted(m->attr, false, t->sort, 0, &n);

	mvprintw(y++, 0, "Functions by %s stall time since the start (s: sort)",
		 func_sort__name(t->sort));
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-*s", COLS, func_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; v && i < n && y < LINES; i++) {
		if (!tui__matches(t, v[i]->pid, v[i]->comm))
			continue;
		func_row__format(row, sizeof(row), v[i], &v[i]->run,
				 model__process_busy_ns(m, v[i]->pid, false));
		mvaddnstr(y++, 0, row, COLS);
	}
	free(v);
}

/* The open thread: its last stalls and blocking calls, newest first, with stacks. */
static void thread__draw(const struct tui *t)
{
	int y = 2;

	mvprintw(y++, 0, "Thread %u: last stalls and blocking calls, newest first "
		 "(Enter or Esc: back)", t->open_tid);
	for (size_t k = 0; k < TUI_EVENTS && y < LINES; k++) {
		const struct tui_event *e = &t->events[(t->nevents + TUI_EVENTS - 1 - k) %
						       TUI_EVENTS];
		const char *line;

		if (!e->text || e->tid != t->open_tid)
			continue;
		for (line = e->text; *line && y < LINES; y++) {
			size_t len = strcspn(line, "\n");

			mvaddnstr(y, 0, line, (int)len < COLS ? (int)len : COLS);
			line += len + (line[len] == '\n');
		}
	}
}

static void tui__draw(struct tui *t)
{
	const struct model *m = t->m;
	char when[16], row[256];
	size_t n;
	struct loop_thread **v;
	bool compact = COLS < (int)strlen(loop_row__header());
	/* the loops take the top third, then the probes, then the functions */
	int y = 3, third = LINES / 3 + 2;

	if (!t->open || !m)
		return;
	time__format(when, sizeof(when), t->ts);
	erase();
	mvprintw(0, 0, "loopwatch  %s  interval %.1fs%s  q quit  s sort  p pause  / filter%s%s  "
		 "arrows+Enter: a thread", when, m->interval_s, t->paused ? "  PAUSED" : "",
		 t->filter[0] || t->editing ? ": " : "", t->filter);
	if (m->events_dropped)
		mvprintw(1, 0, "DROPPED %llu events (ring buffer full), %llu this interval",
			 (unsigned long long)m->events_dropped,
			 (unsigned long long)m->interval_dropped);
	if (t->open_tid) {
		thread__draw(t);
		refresh();
		return;
	}
	v = model__sorted(m, false, &n);
	attron(A_REVERSE);
	mvprintw(2, 0, "%-*s", COLS, compact ? loop_row__compact_header() : loop_row__header());
	attroff(A_REVERSE);
	t->nrows = 0;
	for (size_t i = 0; v && i < n && y < third; i++) {
		if (!tui__matches(t, v[i]->pid, v[i]->comm))
			continue;
		if (compact)
			loop_row__compact(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		else
			loop_row__format(row, sizeof(row), v[i], &v[i]->interval, m->interval_s);
		if (t->nrows == t->selected)
			attron(A_BOLD);
		mvaddnstr(y++, 0, row, COLS);
		attroff(A_BOLD);
		if (t->nrows < (int)(sizeof(t->row_tids) / sizeof(t->row_tids[0])))
			t->row_tids[t->nrows++] = v[i]->tid;
	}
	free(v);
	y = probes__draw(m, y + 1);
	functions__draw(t, m, y + 1);
	refresh();
}

static void tui__interval(struct sink *s, const struct model *m, double ts)
{
	struct tui *t = s->priv;

	t->m = m;
	if (t->paused)
		return;
	t->ts = ts;
	tui__draw(t);
}

/* Lines for the thread view, rendered now: the report is gone after this call. */
static void tui__keep(struct tui *t, __u32 pid, __u32 tid, char *text)
{
	struct tui_event *e = &t->events[t->nevents++ % TUI_EVENTS];

	free(e->text);
	e->pid = pid;
	e->tid = tid;
	e->text = text;
}

static void stack__lines(FILE *out, const struct stack_report *st)
{
	char buf[512];
	int first = stack_report__culprit(st);

	for (int i = first > 0 ? first : 0, k = 0; i < st->nframes && k < TUI_FRAMES; i++, k++) {
		frame__format(&st->frames[i], buf, sizeof(buf));
		fprintf(out, "      %s\n", buf);
	}
}

static void tui__stall(struct sink *s, const struct stall_report *r)
{
	struct tui *t = s->priv;
	char when[16], *text = NULL;
	size_t len, shown = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return;
	time__format(when, sizeof(when), r->ts);
	fprintf(out, "%s STALL %.1f ms: cpu %.1f blocked %.1f runq %.1f ms; %s: %s\n", when,
		ms(r->duration_ns), ms(r->oncpu_ns), ms(r->blocked_ns), ms(r->runq_ns),
		stall_cause__name(r->cause), r->top);
	for (int i = 0; i < r->nstacks && shown < TUI_STACKS; i++, shown++) {
		const struct stack_report *st = &r->stacks[i];

		if (st->blocked)
			fprintf(out, "    blocked in %s %.1f ms:\n", st->syscall, ms(st->ns));
		else if (st->runq)
			fprintf(out, "    waited for a CPU %.1f ms, preempted at:\n", ms(st->ns));
		else
			fprintf(out, "    on CPU, %d samples:\n", st->samples);
		stack__lines(out, st);
	}
	fclose(out);
	tui__keep(t, r->pid, r->tid, text);
}

static void tui__block(struct sink *s, const struct block_report *r)
{
	struct tui *t = s->priv;
	char when[16], top[256], *text = NULL;
	size_t len;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return;
	time__format(when, sizeof(when), r->ts);
	stack_report__top(&r->stack, top, sizeof(top));
	fprintf(out, "%s BLOCK %s %.1f ms%s%s; %s\n", when, r->syscall, ms(r->duration_ns),
		r->path[0] ? " " : "", r->path, top);
	fclose(out);
	tui__keep(t, r->pid, r->tid, text);
}

static int tui__pollfds(struct sink *s, struct pollfd *fds, int max)
{
	struct tui *t = s->priv;

	if (!t->open || max < 1)
		return 0;
	fds[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	return 1;
}

/* The filter being typed: a pid or part of a process name. */
static void filter__key(struct tui *t, int ch)
{
	size_t n = strlen(t->filter);

	if (ch == '\n' || ch == KEY_ENTER) {
		t->editing = false;
	} else if (ch == KEY_ESC) {
		t->editing = false;
		t->filter[0] = '\0';
	} else if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n) {
		t->filter[n - 1] = '\0';
	} else if (ch >= 0x20 && ch < 0x7f && n + 1 < sizeof(t->filter)) {
		t->filter[n] = (char)ch;
		t->filter[n + 1] = '\0';
	}
	t->selected = 0;
}

/* false when the user asked to quit (q) */
static bool tui__key(struct tui *t, int ch)
{
	if (t->editing) {
		filter__key(t, ch);
		return true;
	}
	switch (ch) {
	case 'q':
	case 'Q':
		return false;
	case 's':
		t->sort = (enum func_sort)((t->sort + 1) % FUNC_SORT_MAX);
		break;
	case 'p':
	case ' ':
		t->paused = !t->paused;
		break;
	case '/':
		t->editing = true;
		t->filter[0] = '\0';
		break;
	case KEY_UP:
		if (t->selected > 0)
			t->selected--;
		break;
	case KEY_DOWN:
		if (t->selected + 1 < t->nrows)
			t->selected++;
		break;
	case '\n':
	case KEY_ENTER:
		t->open_tid = t->open_tid || t->selected >= t->nrows ? 0 : t->row_tids[t->selected];
		break;
	case KEY_ESC:
	case KEY_BACKSPACE:
		t->open_tid = 0;
		break;
	}
	return true;
}

static bool tui__ready(struct sink *s, const struct pollfd *fd)
{
	struct tui *t = s->priv;
	int ch;

	(void)fd;
	while ((ch = getch()) != ERR) {
		if (!tui__key(t, ch))
			return false;
		tui__draw(t);
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
	for (size_t i = 0; i < TUI_EVENTS; i++)
		free(t->events[i].text);
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
	.stall = tui__stall,
	.block = tui__block,
	.pollfds = tui__pollfds,
	.ready = tui__ready,
	.summary = tui__summary,
	.close = tui__close,
};

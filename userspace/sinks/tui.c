// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The live view: redraws in place like top; the text summary follows when
 * it closes. Keys: q quits, s changes the functions panel's order, p (or
 * space) pauses the redraw, / filters by pid or process name, the arrows
 * pick a loop thread and Enter opens it: its last stalls and blocking calls
 * with their stacks (Enter or Esc closes it), m the messages, ? the keys.
 *
 * Whatever loopwatch says on stderr while the view is up (a runtime set up,
 * a table full) would be drawn over the screen: stderr goes into a pipe the
 * view reads, its latest line on the status line, all of them written to
 * the real stderr when the view closes.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
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
#define KEY_CTRL_L 12
/* stderr lines kept while the view is up: the latest are shown, then written out */
#define TUI_MESSAGES 32
#define TUI_MESSAGE_LEN 240

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
	int scroll;		/* the thread view's first line shown */
	bool help;		/* the keys, over the view */
	bool show_messages;
	/* stderr while the view is up: the pipe's read end, the real stderr */
	int err_fd;
	int saved_err;
	char messages[TUI_MESSAGES][TUI_MESSAGE_LEN];
	size_t nmessages;	/* ever read; the last TUI_MESSAGES kept */
	char partial[TUI_MESSAGE_LEN];	/* a line not ended yet */
	size_t npartial;
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
	t->err_fd = -1;
	t->saved_err = -1;
	s->priv = t;
	return 0;
}

/*
 * stderr into a pipe while the view is up, if it is the terminal (a file
 * or a journal is left alone). Both ends non-blocking: a burst past the
 * pipe's 64 KiB between two reads loses lines instead of stopping loopwatch.
 */
static void messages__capture(struct tui *t)
{
	int fds[2];

	if (!isatty(STDERR_FILENO) || pipe2(fds, O_CLOEXEC | O_NONBLOCK))
		return;
	t->saved_err = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (t->saved_err < 0 || dup2(fds[1], STDERR_FILENO) < 0) {
		if (t->saved_err >= 0)
			close(t->saved_err);
		t->saved_err = -1;
		close(fds[0]);
		close(fds[1]);
		return;
	}
	close(fds[1]);
	t->err_fd = fds[0];
}

static void messages__add(struct tui *t, const char *line, size_t len)
{
	char *m = t->messages[t->nmessages++ % TUI_MESSAGES];
	size_t k = 0;

	/* a program run by --alert-exec writes here too: nothing reaches curses raw */
	for (size_t i = 0; i < len && k + 1 < TUI_MESSAGE_LEN; i++) {
		unsigned char c = (unsigned char)line[i];

		m[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	m[k] = '\0';
}

/* What came on stderr since the last read; true if anything did. */
static bool messages__read(struct tui *t)
{
	char buf[4096];
	bool got = false;
	ssize_t n;

	while (t->err_fd >= 0 && (n = read(t->err_fd, buf, sizeof(buf))) > 0) {
		got = true;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				messages__add(t, t->partial, t->npartial);
				t->npartial = 0;
			} else if (t->npartial + 1 < sizeof(t->partial)) {
				t->partial[t->npartial++] = buf[i];
			}
		}
	}
	return got;
}

/* The real stderr back, and what was said meanwhile written to it. */
static void messages__release(struct tui *t)
{
	size_t first;

	if (t->saved_err < 0)
		return;
	messages__read(t);
	if (t->npartial)
		messages__add(t, t->partial, t->npartial);
	fflush(stderr);
	dup2(t->saved_err, STDERR_FILENO);
	close(t->saved_err);
	close(t->err_fd);
	t->saved_err = t->err_fd = -1;
	first = t->nmessages > TUI_MESSAGES ? t->nmessages - TUI_MESSAGES : 0;
	if (first)
		fprintf(stderr, "loopwatch: %zu earlier messages of the live view not kept\n",
			first);
	for (size_t i = first; i < t->nmessages; i++)
		fprintf(stderr, "%s\n", t->messages[i % TUI_MESSAGES]);
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
	messages__capture(t);
	return 0;
}

/* the probes taking the largest share of loop busy time */
static int probes__draw(const struct model *m, int y, int bottom)
{
	char row[256];

	if (!m->nprobes)
		return y - 1;
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-*s", COLS, probe_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; i < m->nprobes && i < TUI_MAX_PROBES && y < bottom; i++, y++) {
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

/*
 * Stall time by function since the start, in the order the s key picked.
 * Narrower than the full row plus a name's room: the compact row, so the
 * function, the point of the panel, is never the column cut.
 */
static void functions__draw(const struct tui *t, const struct model *m, int y, int bottom)
{
	char row[512];
	size_t n;
	const struct func_stat **v = attribution__sorted(m->attr, false, t->sort, 0, &n);
	bool compact = COLS < (int)strlen(func_row__header()) + 40;

	mvprintw(y++, 0, "Functions by %s stall time since the start (s: sort)",
		 func_sort__name(t->sort));
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-*s", COLS, compact ? func_row__compact_header() : func_row__header());
	attroff(A_REVERSE);
	for (size_t i = 0; v && i < n && y < bottom; i++) {
		__u64 busy_ns;

		if (!tui__matches(t, v[i]->pid, v[i]->comm))
			continue;
		busy_ns = model__process_busy_ns(m, v[i]->pid, false);
		if (compact)
			func_row__compact(row, sizeof(row), v[i], &v[i]->run, busy_ns);
		else
			func_row__format(row, sizeof(row), v[i], &v[i]->run, busy_ns);
		mvaddnstr(y++, 0, row, COLS);
	}
	free(v);
}

/*
 * The open thread: its last stalls and blocking calls, newest first, with
 * stacks, from line t->scroll on (the arrows and PgUp/PgDn move it).
 */
static void thread__draw(struct tui *t, int bottom)
{
	int y = 2, skip = t->scroll, total = 0;

	mvprintw(y++, 0, "Thread %u: last stalls and blocking calls, newest first "
		 "(arrows/PgUp/PgDn: scroll, Enter or Esc: back)", t->open_tid);
	for (size_t k = 0; k < TUI_EVENTS; k++) {
		const struct tui_event *e = &t->events[(t->nevents + TUI_EVENTS - 1 - k) %
						       TUI_EVENTS];
		const char *line;

		if (!e->text || e->tid != t->open_tid)
			continue;
		for (line = e->text; *line; total++) {
			size_t len = strcspn(line, "\n");

			if (skip > 0)
				skip--;
			else if (y < bottom)
				mvaddnstr(y++, 0, line, (int)len < COLS ? (int)len : COLS);
			line += len + (line[len] == '\n');
		}
	}
	/* scrolled past the end (fewer events now): back to the last page */
	if (t->scroll > 0 && t->scroll >= total)
		t->scroll = total > 0 ? total - 1 : 0;
}

static const char *const tui_keys[] = {
	"q          quit (the summary follows)",
	"s          the functions panel's order: self, blocked, runq, stalls...",
	"p, space   pause the redraw",
	"/          filter by pid or part of a process name (Esc clears)",
	"arrows     pick a loop thread; Enter opens its stalls and blocking calls",
	"           in a thread: arrows, PgUp, PgDn scroll; Enter or Esc back",
	"m          the messages loopwatch printed (stderr) while the view is up",
	"Ctrl-L     redraw the screen",
	"?          this help (any key closes it)",
};

static void help__draw(int bottom)
{
	int y = 2;

	mvprintw(y++, 0, "Keys");
	for (size_t i = 0; i < sizeof(tui_keys) / sizeof(tui_keys[0]) && y < bottom; i++)
		mvaddnstr(y++, 2, tui_keys[i], COLS > 2 ? COLS - 2 : 0);
}

static void messages__draw(const struct tui *t, int bottom)
{
	int y = 2, rows = bottom - 3;
	size_t kept = t->nmessages < TUI_MESSAGES ? t->nmessages : TUI_MESSAGES;
	size_t first = t->nmessages - kept;

	mvprintw(y++, 0, "Messages (stderr), oldest first; written out when the view closes "
		 "(m or Esc: back)");
	if (rows > 0 && kept > (size_t)rows)
		first = t->nmessages - (size_t)rows;
	for (size_t i = first; i < t->nmessages && y < bottom; i++)
		mvaddnstr(y++, 0, t->messages[i % TUI_MESSAGES], COLS);
}

/* The last line: the latest message, or how to get help. */
static void status__draw(const struct tui *t)
{
	char line[TUI_MESSAGE_LEN + 64];

	if (t->nmessages)
		snprintf(line, sizeof(line), "[%zu] %s  (m: messages, ?: keys)", t->nmessages,
			 t->messages[(t->nmessages - 1) % TUI_MESSAGES]);
	else
		snprintf(line, sizeof(line), "?: keys");
	attron(A_REVERSE);
	mvprintw(LINES - 1, 0, "%-*.*s", COLS, COLS, line);
	attroff(A_REVERSE);
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
	status__draw(t);
	/* the keys are one ? away: a title that wrapped would push every row down */
	snprintf(row, sizeof(row), "loopwatch  %s  interval %.1fs%s  q quit  s sort  p pause  "
		 "/ filter%s%s  ? keys", when, m->interval_s, t->paused ? "  PAUSED" : "",
		 t->filter[0] || t->editing ? ": " : "", t->filter);
	mvaddnstr(0, 0, row, COLS);
	if (m->events_dropped)
		mvprintw(1, 0, "DROPPED %llu events (ring buffer full), %llu this interval",
			 (unsigned long long)m->events_dropped,
			 (unsigned long long)m->interval_dropped);
	if (t->help || t->show_messages || t->open_tid) {
		if (t->help)
			help__draw(LINES - 1);
		else if (t->show_messages)
			messages__draw(t, LINES - 1);
		else
			thread__draw(t, LINES - 1);
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
	y = probes__draw(m, y + 1, LINES - 1);
	functions__draw(t, m, y + 1, LINES - 1);
	refresh();
}

static void tui__interval(struct sink *s, const struct model *m, double ts)
{
	struct tui *t = s->priv;

	t->m = m;
	messages__read(t);
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

/*
 * The frames shown for a stack: from its culprit frame up, at most
 * TUI_FRAMES, native ones without their offsets, so that the samples of one
 * function at two instructions read, and merge, as one stack.
 */
static void stack__lines(char *buf, size_t len, const struct stack_report *st)
{
	char frame[512];
	int first = stack_report__culprit(st);
	size_t used = 0;

	buf[0] = '\0';
	for (int i = first > 0 ? first : 0, k = 0; i < st->nframes && k < TUI_FRAMES; i++, k++) {
		int n;

		const struct frame *f = &st->frames[i];

		if ((f->kind == FRAME_NATIVE || f->kind == FRAME_KERNEL) && f->func[0])
			snprintf(frame, sizeof(frame), "%.*s (%.*s)", (int)sizeof(f->func),
				 f->func, (int)sizeof(f->module), f->module);
		else
			frame__format(f, frame, sizeof(frame));
		n = snprintf(buf + used, len - used, "      %s\n", frame);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
}

/* Stacks of one stall that look the same from the culprit up, shown once. */
struct tui_stack_group {
	const struct stack_report *first;
	__u64 ns;
	int samples;
	int count;
	char lines[TUI_FRAMES * 160];
};

#define TUI_STACK_GROUPS 8

static bool stack__same_kind(const struct stack_report *a, const struct stack_report *b)
{
	/* each GIL holder's stack is its own: their names differ */
	if (a->blocked != b->blocked || a->runq != b->runq || a->gil || b->gil)
		return a == b;
	return !a->blocked || !strcmp(a->syscall, b->syscall);
}

static void tui__stall(struct sink *s, const struct stall_report *r)
{
	struct tui *t = s->priv;
	static struct tui_stack_group groups[TUI_STACK_GROUPS];
	char when[16], *text = NULL;
	size_t len;
	int ngroups = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		return;
	time__format(when, sizeof(when), r->ts);
	fprintf(out, "%s STALL %.1f ms: cpu %.1f blocked %.1f runq %.1f gil %.1f ms; %s: %s\n",
		when, ms(r->duration_ns), ms(r->oncpu_ns), ms(r->blocked_ns), ms(r->runq_ns),
		ms(r->gil_ns), stall_cause__name(r->cause), r->top);
	for (int i = 0; i < r->nstacks; i++) {
		const struct stack_report *st = &r->stacks[i];
		struct tui_stack_group *g = &groups[ngroups];
		int k;

		stack__lines(g->lines, sizeof(g->lines), st);
		for (k = 0; k < ngroups; k++) {
			if (stack__same_kind(groups[k].first, st) &&
			    !strcmp(groups[k].lines, g->lines))
				break;
		}
		if (k == ngroups) {
			if (ngroups == TUI_STACK_GROUPS)
				continue;
			g->first = st;
			g->ns = g->samples = g->count = 0;
			ngroups++;
		}
		groups[k].ns += st->ns;
		groups[k].samples += st->samples;
		groups[k].count++;
	}
	/* the heaviest first: the stall's own cause leads */
	for (int k = 1; k < ngroups; k++) {
		for (int j = k; j > 0 && groups[j].ns > groups[j - 1].ns; j--) {
			struct tui_stack_group tmp = groups[j];

			groups[j] = groups[j - 1];
			groups[j - 1] = tmp;
		}
	}
	for (int k = 0; k < ngroups && k < TUI_STACKS; k++) {
		const struct tui_stack_group *g = &groups[k];
		char times[32] = "";

		if (g->count > 1)
			snprintf(times, sizeof(times), " (%d stacks alike)", g->count);
		if (g->first->gil) {
			const struct gil_holder_report *h = NULL;

			for (int i = 0; i < r->ngil_holders; i++)
				if (r->gil_holders[i].stack == (int)(g->first - r->stacks))
					h = &r->gil_holders[i];
			fprintf(out, "    GIL held by %s[%u] %.1f ms%s:\n", h ? h->comm : "?",
				h ? h->tid : 0, ms(g->ns), times);
		} else if (g->first->blocked)
			fprintf(out, "    blocked in %s %.1f ms%s:\n", g->first->syscall, ms(g->ns),
				times);
		else if (g->first->runq)
			fprintf(out, "    waited for a CPU %.1f ms, preempted at%s:\n", ms(g->ns), times);
		else
			fprintf(out, "    on CPU, %d samples%s:\n", g->samples, times);
		fputs(g->lines, out);
	}
	if (ngroups > TUI_STACKS)
		fprintf(out, "    (%d more stacks)\n", ngroups - TUI_STACKS);
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
	int n = 0;

	if (!t->open || max < 1)
		return 0;
	fds[n++] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	if (t->err_fd >= 0 && max > 1)
		fds[n++] = (struct pollfd){ .fd = t->err_fd, .events = POLLIN };
	return n;
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

/* The thread view's keys: scrolling, and back. */
static void thread__key(struct tui *t, int ch)
{
	int page = LINES > 6 ? LINES - 4 : 1;

	switch (ch) {
	case KEY_UP:
		t->scroll -= t->scroll > 0;
		break;
	case KEY_DOWN:
		t->scroll++;
		break;
	case KEY_PPAGE:
		t->scroll = t->scroll > page ? t->scroll - page : 0;
		break;
	case KEY_NPAGE:
		t->scroll += page;
		break;
	case KEY_HOME:
		t->scroll = 0;
		break;
	case '\n':
	case KEY_ENTER:
	case KEY_ESC:
	case KEY_BACKSPACE:
		t->open_tid = 0;
		t->scroll = 0;
		break;
	}
}

/* false when the user asked to quit (q) */
static bool tui__key(struct tui *t, int ch)
{
	if (t->editing) {
		filter__key(t, ch);
		return true;
	}
	if (ch == KEY_CTRL_L) {
		clearok(curscr, TRUE);
		return true;
	}
	if (t->help) {
		t->help = false;
		return ch != 'q' && ch != 'Q';
	}
	if (t->show_messages && (ch == 'm' || ch == KEY_ESC || ch == '\n' || ch == KEY_ENTER)) {
		t->show_messages = false;
		return true;
	}
	if (t->open_tid && ch != 'q' && ch != 'Q' && ch != '?') {
		thread__key(t, ch);
		return true;
	}
	switch (ch) {
	case '?':
		t->help = true;
		break;
	case 'm':
		t->show_messages = true;
		break;
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
		t->open_tid = t->selected >= t->nrows ? 0 : t->row_tids[t->selected];
		t->scroll = 0;
		break;
	}
	return true;
}

static bool tui__ready(struct sink *s, const struct pollfd *fd)
{
	struct tui *t = s->priv;
	int ch;

	if (fd->fd == t->err_fd) {
		if (messages__read(t))
			tui__draw(t);
		return true;
	}
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
	messages__release(t);
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

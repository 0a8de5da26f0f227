/*
 * The session's line editor on libedit (see lineedit.h and
 * docs/internals/lineedit.md). libedit does the editing, the display and
 * the in-memory history; this file adds what a session needs around it:
 * reading characters itself (EL_GETCFN) so that signals and a cancel flag
 * end a read, Ctrl-C as a key, multi-line entries, completion bounded to
 * the workspace, and a history file that a cloned repository cannot turn
 * into a way to write elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/strvec.h"
#include "base/termsafe.h"
#include "base/utf8.h"
#include "cli/lineedit.h"
#include "pipeline/rundir.h"

#include "cli/lineedit_int.h"


/* -- signals while reading ----------------------------------------------- */

static volatile sig_atomic_t le_winch, le_cont;
static int le_tty_fd = -1, le_paste_fd = -1;
static struct termios le_cooked;

static const int le_fatal_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

struct le_sigsave {
	struct sigaction winch, cont, fatal[ARRAY_SIZE(le_fatal_sigs)];
	int fatal_set[ARRAY_SIZE(le_fatal_sigs)];
};

static void le_on_flag(int sig)
{
	if (sig == SIGWINCH)
		le_winch = 1;
	else
		le_cont = 1;
}

/* Put the terminal back, then die of the signal (SA_RESETHAND made it SIG_DFL). */
static void le_on_fatal(int sig)
{
	int saved = errno;

	if (le_paste_fd >= 0) {
		ssize_t w = write(le_paste_fd, PASTE_OFF, sizeof(PASTE_OFF) - 1);

		(void)w;	/* nothing more to do in a handler */
	}
	if (le_tty_fd >= 0)
		tcsetattr(le_tty_fd, TCSANOW, &le_cooked);
	raise(sig);	/* blocked until this handler returns, then fatal */
	errno = saved;
}

static void le_signals_enter(struct lineedit *le, struct le_sigsave *save)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = le_on_flag;	/* no SA_RESTART: the wait must see it */
	le_winch = le_cont = 0;
	sigaction(SIGWINCH, &sa, &save->winch);
	sigaction(SIGCONT, &sa, &save->cont);

	if (tcgetattr(le->in_fd, &le_cooked) == 0)
		le_tty_fd = le->in_fd;
	le_paste_fd = le->paste_mode ? le->out_fd : -1;
	for (i = 0; i < ARRAY_SIZE(le_fatal_sigs); i++) {
		struct sigaction cur;

		save->fatal_set[i] = 0;
		if (sigaction(le_fatal_sigs[i], NULL, &cur) < 0 || cur.sa_handler != SIG_DFL ||
		    (cur.sa_flags & SA_SIGINFO))
			continue;
		sa.sa_handler = le_on_fatal;
		sa.sa_flags = SA_RESETHAND;
		if (sigaction(le_fatal_sigs[i], &sa, &save->fatal[i]) == 0)
			save->fatal_set[i] = 1;
	}
}

static void le_signals_leave(struct le_sigsave *save)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(le_fatal_sigs); i++)
		if (save->fatal_set[i])
			sigaction(le_fatal_sigs[i], &save->fatal[i], NULL);
	sigaction(SIGWINCH, &save->winch, NULL);
	sigaction(SIGCONT, &save->cont, NULL);
	le_tty_fd = le_paste_fd = -1;
}

/* -- libedit callbacks ---------------------------------------------------- */

struct lineedit *le_of(EditLine *el)
{
	void *p = NULL;

	el_get(el, EL_CLIENTDATA, &p);
	return p;
}

static char *le_prompt(EditLine *el)
{
	return (char *)le_of(el)->prompt;
}

/*
 * Wait up to `ms` (-1: for ever) for a byte of in_fd: 1 with it, 0 at
 * the end or when the time passed, -1 on error or when the caller
 * cancels (sig_interrupt set, errno EINTR). Resizes and continues are
 * handled while waiting.
 */
static int le_byte(struct lineedit *le, EditLine *el, char *c, int ms)
{
	for (;;) {
		struct pollfd p = { .fd = le->in_fd, .events = POLLIN };
		ssize_t k;
		int r;

		if (le->cancel && *le->cancel) {
			le->sig_interrupt = 1;
			errno = EINTR;
			return -1;
		}
		le->from_inject = le->inject_off < le->inject.len;
		if (le->from_inject) {
			*c = le->inject.buf[le->inject_off++];
			if (le->inject_off == le->inject.len) {
				buf_reset(&le->inject);
				le->inject_off = 0;
			}
			return 1;
		}
		if (le_winch) {
			le_winch = 0;
			el_resize(el);
		}
		if (le_cont) {
			/* stopped from outside: the shell may have changed the mode */
			le_cont = 0;
			if (le->have_raw)
				tcsetattr(le->in_fd, TCSADRAIN, &le->raw);
			el_set(el, EL_REFRESH);
		}
		r = poll(&p, 1, ms);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		if (r == 0)
			return 0;
		k = read(le->in_fd, c, 1);
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		return k == 1;
	}
}

/*
 * In an incremental search (Ctrl-R) libedit reads keys one character at a
 * time, and ESC ends the search: the rest of an arrow's or Home's
 * sequence would be typed as text. So there a key's sequence is read
 * whole and given as the control key of the same motion (which ends the
 * search and then moves); an unknown sequence as a lone ESC.
 */
static int le_search_key(struct lineedit *le, EditLine *el)
{
	char seq[16], c;
	size_t n = 0;
	int r;

	r = le_byte(le, el, &c, 50);
	if (r < 0)
		return -1;
	if (r == 0 || (c != '[' && c != 'O'))
		return 033;	/* a lone ESC (what followed, if anything, is dropped) */
	seq[n++] = c;
	for (;;) {
		r = le_byte(le, el, &c, 50);
		if (r < 0)
			return -1;
		if (r == 0)
			return 033;
		if (n < sizeof(seq) - 1)
			seq[n++] = c;
		if ((unsigned char)c >= 0x40 && (unsigned char)c <= 0x7e)
			break;
	}
	seq[n] = '\0';
	switch (seq[n - 1]) {
	case 'A': return 'P' & 037;
	case 'B': return 'N' & 037;
	case 'C': return 'F' & 037;
	case 'D': return 'B' & 037;
	case 'H': return 'A' & 037;
	case 'F': return 'E' & 037;
	case '~':
		if (!strcmp(seq, "[1~") || !strcmp(seq, "[7~"))
			return 'A' & 037;
		if (!strcmp(seq, "[4~") || !strcmp(seq, "[8~"))
			return 'E' & 037;
		if (!strcmp(seq, "[3~"))
			return 'D' & 037;
		break;
	}
	return 033;
}

/* Whether the ESC just read is the Esc key: nothing follows it within ESC_ALONE_MS. */
static int le_esc_alone(struct lineedit *le)
{
	struct pollfd p = { .fd = le->in_fd, .events = POLLIN };

	return poll(&p, 1, ESC_ALONE_MS) == 0;
}

/*
 * Read one character for libedit: poll() first (never restarted after a
 * signal, whatever SA_RESTART says), so a resize, a continue after a stop
 * and the caller's cancel flag are seen while waiting. -1 with EINTR ends
 * el_gets() when the caller cancels.
 */
static int le_getc(EditLine *el, wchar_t *wc)
{
	struct lineedit *le = le_of(el);
	char mb[MB_LEN_MAX];
	size_t n = 0;

	if (!le->have_raw && tcgetattr(le->in_fd, &le->raw) == 0)
		le->have_raw = 1;
	for (;;) {
		mbstate_t st;
		size_t r;
		char c;
		int k = le_byte(le, el, &c, -1);

		if (k <= 0)
			return k;
		if (c == 033 && le->searching && !le->pasting && n == 0) {
			k = le_search_key(le, el);
			if (k < 0)
				return -1;
			c = (char)k;
		} else if (c == 033 && !le->pasting && n == 0 && !le->from_inject &&
			   le_esc_alone(le)) {
			/*
			 * The Esc key, not the start of a sequence: once, nothing (not
			 * libedit's meta prefix, which printed "^[" before the next
			 * key); twice in a row, ESC_TWICE (fx-escape).
			 */
			if (!le->esc_alone) {
				le->esc_alone = 1;
				continue;
			}
			le->esc_alone = 0;
			buf_addstr(&le->inject, ESC_TWICE + 1);
		} else if (!le->from_inject) {
			le->esc_alone = 0;
		}
		mb[n++] = c;
		memset(&st, 0, sizeof(st));
		r = mbrtowc(wc, mb, n, &st);
		if (r == (size_t)-2) {
			if (n < sizeof(mb))
				continue;
			n = 0;	/* too long to be a character: dropped */
			continue;
		}
		if (r == (size_t)-1) {
			n = 0;	/* not a character in this encoding: dropped */
			continue;
		}
		if (r == 0)
			*wc = L'\0';
		/* what an incremental search takes as its own; anything else ends it */
		if (le->pasting) {
			/* text, whatever it is */
		} else if (*wc == ('R' & 037) || *wc == ('S' & 037))
			le->searching = 1;
		else if (le->searching && !(*wc >= 0x20 && *wc != 0x7f) && *wc != 0x7f &&
			 *wc != ('H' & 037) && *wc != ('W' & 037))
			le->searching = 0;
		return 1;
	}
}

/* Ctrl-C: show "^C" at the end of the line and end the read; the line is dropped. */
static unsigned char le_key_interrupt(EditLine *el, int ch)
{
	struct lineedit *le = le_of(el);
	const LineInfo *li = el_line(el);

	(void)ch;
	le->key_interrupt = 1;
	le->key_dropped = (size_t)(li->lastchar - li->buffer);
	el_cursor(el, (int)(li->lastchar - li->cursor));
	el_insertstr(el, "^C");
	el_push(el, "\n");
	return CC_REFRESH;
}

/* Alt-Enter: a newline in the entry, at the cursor. */
static unsigned char le_key_newline(EditLine *el, int ch)
{
	(void)ch;
	if (el_insertstr(el, "\n") < 0)
		return CC_ERROR;
	return CC_REFRESH;
}

/* The lines and the characters of UTF-8 `text` (a last newline ends a line, not starts one). */
static void le_fold_count(const char *text, size_t len, size_t *lines, size_t *chars)
{
	size_t i;

	*lines = 1;
	*chars = 0;
	for (i = 0; i < len; i++) {
		*lines += text[i] == '\n' && i + 1 < len;
		*chars += ((unsigned char)text[i] & 0xc0) != 0x80;
	}
}

/* The placeholder of folded paste `i` (0-based; caller frees). */
static char *le_fold_name(const char *text, size_t i)
{
	size_t lines, chars;

	le_fold_count(text, strlen(text), &lines, &chars);
	return lines > 1 ? xstrfmt("[Pasted text #%zu +%zu lines]", i + 1, lines)
			 : xstrfmt("[Pasted text #%zu, %zu characters]", i + 1, chars);
}

/*
 * Put `text` (UTF-8) into the line at the cursor. A long text (more than
 * PASTE_FOLD_LINES lines or PASTE_FOLD_CHARS characters) is shown as one
 * line, "[Pasted text #N +L lines]", and kept aside: the entry gets the
 * whole text in its place (le_unfold()).
 */
static void le_insert_text(struct lineedit *le, EditLine *el, const char *text, size_t len)
{
	size_t lines, chars;
	char *s;

	if (!len)
		return;
	le_fold_count(text, len, &lines, &chars);
	s = xstrndup(text, len);
	if (lines > PASTE_FOLD_LINES || chars > PASTE_FOLD_CHARS) {
		strvec_push(&le->pastes, s);
		free(s);
		s = le_fold_name(le->pastes.v[le->pastes.nr - 1], le->pastes.nr - 1);
	}
	el_insertstr(el, s);
	free(s);
}

/*
 * The entry with each folded paste's placeholder replaced by its text (a
 * placeholder the person deleted drops its text); the pastes are
 * forgotten. FX_ELIMIT when the whole is over LINEEDIT_MAX_ENTRY.
 */
static int le_unfold(struct lineedit *le, struct buf *line)
{
	struct buf out = BUF_INIT;
	size_t i;
	int ret = 0;

	for (i = 0; i < le->pastes.nr; i++) {
		char *name = le_fold_name(le->pastes.v[i], i);
		char *at = strstr(line->buf, name);

		if (at) {
			buf_reset(&out);
			buf_add(&out, line->buf, (size_t)(at - line->buf));
			buf_addstr(&out, le->pastes.v[i]);
			buf_addstr(&out, at + strlen(name));
			buf_reset(line);
			buf_addbuf(line, &out);
		}
		free(name);
	}
	if (line->len > LINEEDIT_MAX_ENTRY)
		ret = err_set(FX_ELIMIT, "an entry is longer than %d bytes", LINEEDIT_MAX_ENTRY);
	strvec_clear(&le->pastes);
	buf_release(&out);
	return ret;
}

/*
 * A bracketed paste (the terminal sends ESC [ 200 ~ text ESC [ 201 ~):
 * the text goes into the line as it is, its newlines too, instead of
 * every pasted line being an Enter; a long one folded (le_insert_text()).
 * Control characters but tab and newline are dropped; past
 * LINEEDIT_MAX_ENTRY the rest is read and dropped. Ctrl-C ends a paste
 * whose end never comes (and the line).
 */
static unsigned char le_key_paste(EditLine *el, int ch)
{
	static const wchar_t end[] = L"\033[201~";
	struct lineedit *le = le_of(el);
	struct buf text = BUF_INIT;
	wchar_t wc, prev = 0;
	size_t m = 0, i;

	(void)ch;
	le->pasting = 1;
	while (el_wgetc(el, &wc) == 1) {
		wchar_t pend[ARRAY_SIZE(end)];
		size_t np = 0;

		if (wc == end[m]) {
			if (end[++m] == L'\0')
				break;
			continue;
		}
		if (wc == ('C' & 037)) {
			/* no terminal pastes a Ctrl-C: a paste that never ends, given up */
			el_push(el, "\003");
			break;
		}
		/* not the end after all: what matched so far is text */
		for (i = 0; i < m; i++)
			pend[np++] = end[i];
		m = 0;
		if (wc == end[0])
			m = 1;
		else
			pend[np++] = wc;
		for (i = 0; i < np; i++) {
			wchar_t c = pend[i];
			char mb[MB_LEN_MAX];
			mbstate_t st;
			size_t k;

			/* CR LF (LF CR after the terminal's ICRNL and INLCR): one newline */
			if ((c == L'\r' && prev == L'\n') || (c == L'\n' && prev == L'\r')) {
				prev = 0;
				continue;
			}
			prev = c;
			if (c == L'\r')
				c = L'\n';
			else if (c < 0x20 && c != L'\t' && c != L'\n')
				c = 0;
			if (!c || text.len >= LINEEDIT_MAX_ENTRY)
				continue;
			memset(&st, 0, sizeof(st));
			k = wcrtomb(mb, c, &st);
			if (k != (size_t)-1)
				buf_add(&text, mb, k);
		}
	}
	le_insert_text(le, el, text.buf, text.len);
	buf_release(&text);
	le->pasting = 0;
	return CC_REFRESH;
}

/* Esc Esc: at an empty line, the last message, to edit and send again; else nothing. */
static unsigned char le_key_escape(EditLine *el, int ch)
{
	struct lineedit *le = le_of(el);
	const LineInfo *li = el_line(el);

	(void)ch;
	if (!le->recall || li->lastchar != li->buffer)
		return CC_NORM;
	le_insert_text(le, el, le->recall, strlen(le->recall));
	return CC_REFRESH;
}

/* Ctrl-Z: suspend with the terminal as it was, edit on when continued. */
static unsigned char le_key_suspend(EditLine *el, int ch)
{
	struct lineedit *le = le_of(el);
	struct termios raw;
	int have = tcgetattr(le->in_fd, &raw) == 0;

	(void)ch;
	if (le_tty_fd >= 0)
		tcsetattr(le->in_fd, TCSADRAIN, &le_cooked);
	fputs("\n", le->fout);
	fflush(le->fout);
	raise(SIGTSTP);
	le_cont = 0;
	if (have)
		tcsetattr(le->in_fd, TCSADRAIN, &raw);
	return CC_REDISPLAY;
}

/* A key sequence that means nothing here (F-keys, PageUp...): swallowed whole. */
static unsigned char le_key_ignore(EditLine *el, int ch)
{
	(void)el;
	(void)ch;
	return CC_NORM;
}

/* -- text ----------------------------------------------------------------- */

/*
 * Drop control characters but '\n' and '\t' (C0, DEL, and C1 as UTF-8
 * U+0080-U+009F): what a key sends that libedit did not take as a command
 * (Ctrl-V ESC, half an unknown escape sequence) never reaches the caller.
 */
void le_sanitize(struct buf *b)
{
	size_t i, o = 0;

	for (i = 0; i < b->len; i++) {
		unsigned char c = (unsigned char)b->buf[i];

		if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			continue;
		if (c == 0xc2 && i + 1 < b->len && (unsigned char)b->buf[i + 1] >= 0x80 &&
		    (unsigned char)b->buf[i + 1] <= 0x9f) {
			i++;
			continue;
		}
		b->buf[o++] = (char)c;
	}
	buf_setlen(b, o);
}

/* Whether `s` (len bytes) ends in a `\` that is not itself escaped. */
static int le_continues(const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && s[len - 1 - n] == '\\')
		n++;
	return n % 2 == 1;
}

int lineedit_dropped(const struct lineedit *le)
{
	return le && le->dropped;
}

int lineedit_is_tty(const struct lineedit *le)
{
	return le && le->tty;
}

/* -- open, read, close ------------------------------------------------------ */

static locale_t le_locale(void)
{
	locale_t loc = newlocale(LC_CTYPE_MASK, "", (locale_t)0);
	const char *cs = loc ? nl_langinfo_l(CODESET, loc) : "";

	if (loc && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8")))
		return loc;
	/* terminals and models speak UTF-8; the C locale would drop it */
	if (loc)
		freelocale(loc);
	loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	if (!loc)
		loc = newlocale(LC_CTYPE_MASK, "", (locale_t)0);
	return loc;
}

static void le_bind(EditLine *el, const char *key, const char *fn)
{
	el_set(el, EL_BIND, key, fn, NULL);
}

/* Ctrl-O at an empty line: the session's /last (the last command's whole output). */
static unsigned char le_key_last(EditLine *el, int ch)
{
	const LineInfo *li = el_line(el);

	(void)ch;
	if (li->lastchar != li->buffer || el_insertstr(el, "/last") < 0)
		return CC_ERROR;
	/* Enter, as if typed: the line is shown, then taken */
	el_push(el, "\r");
	return CC_REFRESH;
}

static void le_bind_keys(struct lineedit *le)
{
	static const char *const ignored[] = {
		"\033[2~", "\033[5~", "\033[6~", "\033OP", "\033OQ", "\033OR", "\033OS",
		"\033[11~", "\033[12~", "\033[13~", "\033[14~", "\033[15~", "\033[17~",
		"\033[18~", "\033[19~", "\033[20~", "\033[21~", "\033[23~", "\033[24~",
		"\033[E", "\033[G", "\033[Z", "\033[201~", NULL
	};
	EditLine *el = le->el;
	const char *const *k;
	struct termios t;
	char intr[3] = "^C";
	int i;

	le_bind(el, "^C", "fx-interrupt");
	if (tcgetattr(le->in_fd, &t) == 0 && t.c_cc[VINTR] != _POSIX_VDISABLE &&
	    t.c_cc[VINTR] < 0x20) {
		intr[1] = (char)(t.c_cc[VINTR] + '@');
		le_bind(el, intr, "fx-interrupt");
	}
	el_wset(el, EL_ADDFN, L"fx-last", L"The last command's output (Ctrl-O)", le_key_last);
	le_bind(el, "^O", "fx-last");
	le_bind(el, "^Z", "fx-suspend");
	le_bind(el, "^I", "fx-complete");
	le_bind(el, "^R", "em-inc-search-prev");
	le_bind(el, "^S", "em-inc-search-next");
	le_bind(el, PASTE_START, "fx-paste");
	le_bind(el, ESC_TWICE, "fx-escape");
	le_bind(el, "\033\r", "fx-newline");
	le_bind(el, "\033\n", "fx-newline");
	le_bind(el, "\033[1~", "ed-move-to-beg");
	le_bind(el, "\033[7~", "ed-move-to-beg");
	le_bind(el, "\033[4~", "ed-move-to-end");
	le_bind(el, "\033[8~", "ed-move-to-end");
	le_bind(el, "\033[3~", "ed-delete-next-char");
	le_bind(el, "\033[1;5C", "em-next-word");
	le_bind(el, "\033[1;5D", "ed-prev-word");
	le_bind(el, "\033[1;3C", "em-next-word");
	le_bind(el, "\033[1;3D", "ed-prev-word");
	for (k = ignored; *k; k++)
		le_bind(el, *k, "fx-ignore");
	/*
	 * libedit looks characters below U+0100 up in its key map, whose upper
	 * half are meta commands (U+00E9 'é' would run M-i): they are text.
	 * Meta keys typed as ESC + key stay bound.
	 */
	for (i = 0x80; i <= 0xff; i++) {
		char u[3] = { (char)(0xc0 | (i >> 6)), (char)(0x80 | (i & 0x3f)), '\0' };

		if (i >= 0xa0)
			le_bind(el, u, "ed-insert");
	}
}

static int le_open_editor(struct lineedit *le)
{
	HistEvent ev;
	int fd_in, fd_out;

	fd_in = dup(le->in_fd);
	fd_out = dup(le->out_fd);
	if (fd_in < 0 || fd_out < 0)
		goto fail;
	le->fin = fdopen(fd_in, "r");
	if (!le->fin)
		goto fail;
	fd_in = -1;
	le->fout = fdopen(fd_out, "w");
	if (!le->fout)
		goto fail;
	fd_out = -1;
	le->el = el_init_fd("forgex", le->fin, le->fout, le->fout, le->in_fd, le->out_fd,
			    le->out_fd);
	if (!le->el)
		goto fail;
	le->hist = history_init();
	if (!le->hist)
		goto fail;
	history(le->hist, &ev, H_SETSIZE, (int)le->hist_max);
	history(le->hist, &ev, H_SETUNIQUE, 1);
	el_set(le->el, EL_CLIENTDATA, le);
	el_set(le->el, EL_EDITOR, "emacs");
	el_set(le->el, EL_SIGNAL, 0);
	el_set(le->el, EL_HIST, history, le->hist);
	el_set(le->el, EL_PROMPT_ESC, le_prompt, '\1');
	el_set(le->el, EL_GETCFN, le_getc);
	el_wset(le->el, EL_ADDFN, L"fx-interrupt", L"Drop the line (Ctrl-C)", le_key_interrupt);
	el_wset(le->el, EL_ADDFN, L"fx-newline", L"Insert a newline (Alt-Enter)", le_key_newline);
	el_wset(le->el, EL_ADDFN, L"fx-suspend", L"Suspend forgex (Ctrl-Z)", le_key_suspend);
	el_wset(le->el, EL_ADDFN, L"fx-complete", L"Complete a command or path", le_key_complete);
	el_wset(le->el, EL_ADDFN, L"fx-ignore", L"Ignore a key", le_key_ignore);
	el_wset(le->el, EL_ADDFN, L"fx-paste", L"Take a bracketed paste as text", le_key_paste);
	el_wset(le->el, EL_ADDFN, L"fx-escape", L"The last message, to edit (Esc Esc)",
		le_key_escape);
	/* (el_wset: the narrow EL_ADDFN leaks its copies of the names) */
	/* keys are keys while editing: Ctrl-C must not be a signal then */
	el_set(le->el, EL_SETTY, "-d", "-isig", "-ixon", NULL);
	/* the user's ~/.editrc ($EDITRC) first; the session's own keys win */
	el_source(le->el, NULL);
	le_bind_keys(le);
	return 0;
fail:
	if (fd_in >= 0)
		close(fd_in);
	if (fd_out >= 0)
		close(fd_out);
	return err_set_errno(FX_EOS, "cannot set up the line editor");
}

int lineedit_open(struct lineedit **out, const struct lineedit_opts *opts)
{
	struct lineedit *le = xcalloc(1, sizeof(*le));
	const char *const *c, *term;
	int ret;

	le->in_fd = opts->in_fd;
	le->out_fd = opts->out_fd;
	le->cancel = opts->cancel;
	buf_init(&le->in, 0);
	buf_init(&le->inject, 0);
	buf_init(&le->hist_problem, 0);
	strvec_init(&le->pastes);
	strvec_init(&le->entries);
	strvec_init(&le->commands);
	le->hist_max = opts->history_max ? opts->history_max : HIST_DEFAULT;
	if (le->hist_max > HIST_MAX_ENTRIES)
		le->hist_max = HIST_MAX_ENTRIES;
	for (c = opts->commands; c && *c; c++)
		strvec_push(&le->commands, *c);
	if (opts->workspace)
		le->ws_real = realpath(opts->workspace, NULL);
	/*
	 * A terminal that cannot move the cursor (TERM unset or "dumb", as in
	 * Emacs's M-x shell) gets plain lines: the terminal's own line editing,
	 * Ctrl-C as SIGINT to the caller's handler.
	 */
	term = getenv("TERM");
	le->tty = isatty(le->in_fd) && isatty(le->out_fd) && term && *term &&
		  strcmp(term, "dumb");
	if (le->tty) {
		locale_t old = (locale_t)0;

		le->paste_mode = 1;
		le->loc = le_locale();
		if (le->loc)
			old = uselocale(le->loc);	/* el_set() converts with it */
		ret = le_open_editor(le);
		if (le->loc)
			uselocale(old);
		if (ret < 0) {
			lineedit_close(le);
			return ret;
		}
	}
	if (opts->history_path && *opts->history_path) {
		const char *p = opts->history_path, *at = NULL, *q = p;

		le->hist_path = xstrdup(p);
		if (!strncmp(p, ".forgex/", 8)) {
			le->hist_ws = xstrdup(".");
			le->hist_rel = xstrdup(p + 8);
		} else {
			while ((q = strstr(q, "/.forgex/"))) {
				at = q;
				q++;
			}
			if (at) {
				le->hist_ws = at == p ? xstrdup("/") : xstrndup(p, (size_t)(at - p));
				le->hist_rel = xstrdup(at + 9);
			}
		}
		le_hist_load(le);
	}
	*out = le;
	return 0;
}

/* Plain reading: the next line of in_fd (without "\n"), 0 at its end, 1 with a line. */
static int le_plain_line(struct lineedit *le, struct buf *piece)
{
	for (;;) {
		char *nl = memchr(le->in.buf, '\n', le->in.len);
		struct pollfd p = { .fd = le->in_fd, .events = POLLIN };
		char chunk[4096];
		ssize_t k;

		if (nl) {
			size_t n = (size_t)(nl - le->in.buf);

			buf_reset(piece);
			buf_add(piece, le->in.buf, n);
			memmove(le->in.buf, nl + 1, le->in.len - n - 1);
			buf_setlen(&le->in, le->in.len - n - 1);
			if (piece->len && piece->buf[piece->len - 1] == '\r')
				buf_setlen(piece, piece->len - 1);
			return 1;
		}
		if (le->in.len > LINEEDIT_MAX_ENTRY)
			return err_set(FX_ELIMIT, "an input line is longer than %d bytes",
				       LINEEDIT_MAX_ENTRY);
		if (le->cancel && *le->cancel)
			return FX_EINTR;
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return err_set_errno(FX_EOS, "cannot read the input");
		}
		k = read(le->in_fd, chunk, sizeof(chunk));
		if (k < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return err_set_errno(FX_EOS, "cannot read the input");
		}
		if (k == 0) {
			if (!le->in.len)
				return 0;
			buf_reset(piece);
			buf_addbuf(piece, &le->in);
			buf_reset(&le->in);
			return 1;
		}
		buf_add(&le->in, chunk, (size_t)k);
	}
}

static int le_read_plain(struct lineedit *le, const char *prompt, struct buf *line)
{
	struct buf piece = BUF_INIT;
	int more = 0, r, ret;

	for (;;) {
		if (isatty(le->in_fd)) {
			const char *pr = more ? CONT_PROMPT : prompt;

			fsutil_write_all(le->out_fd, pr, strlen(pr));
		}
		r = le_plain_line(le, &piece);
		if (r == FX_EINTR) {
			/* what was read of the line stays for the next read */
			le->dropped = line->len > 0;
			ret = LINEEDIT_INTERRUPT;
			break;
		}
		if (r < 0) {
			ret = r;
			break;
		}
		if (r == 0) {
			/* the end of the input ends a pending continuation */
			if (more)
				buf_setlen(line, line->len - 1);
			ret = more ? LINEEDIT_LINE : LINEEDIT_EOF;
			break;
		}
		more = le_continues(piece.buf, piece.len);
		buf_add(line, piece.buf, piece.len - (size_t)more);
		if (line->len > LINEEDIT_MAX_ENTRY) {
			ret = err_set(FX_ELIMIT, "an entry is longer than %d bytes", LINEEDIT_MAX_ENTRY);
			break;
		}
		if (!more) {
			ret = LINEEDIT_LINE;
			break;
		}
		buf_addch(line, '\n');
	}
	if (ret != LINEEDIT_LINE)
		buf_reset(line);
	buf_release(&piece);
	return ret;
}

static int le_read_tty(struct lineedit *le, const char *prompt, struct buf *line)
{
	struct le_sigsave save;
	locale_t old = (locale_t)0;
	int more = 0, ret;

	le_signals_enter(le, &save);
	if (le->loc)
		old = uselocale(le->loc);
	le->have_raw = 0;
	le->searching = 0;
	if (le->paste_mode) {
		fputs(PASTE_ON, le->fout);
		fflush(le->fout);
	}
	for (;;) {
		const char *s;
		size_t n;
		int count = 0;

		le->prompt = more ? CONT_PROMPT : prompt;
		le->key_interrupt = le->sig_interrupt = 0;
		/* a ~/.editrc or a tty change may have rebound them */
		le_bind(le->el, "^C", "fx-interrupt");
		/*
		 * The editing mode before the prompt is written, not after
		 * (el_gets() writes it first): a key typed as the prompt
		 * appears, a Ctrl-D say, is not eaten by the cooked mode.
		 */
		el_set(le->el, EL_PREP_TERM, 1);
		s = el_gets(le->el, &count);
		el_set(le->el, EL_PREP_TERM, 0);
		if (le->key_interrupt || le->sig_interrupt) {
			if (le->sig_interrupt) {
				const LineInfo *li = el_line(le->el);

				le->key_dropped = li ? (size_t)(li->lastchar - li->buffer) : 0;
				fputs("\n", le->fout);
			}
			le->dropped = line->len || le->key_dropped;
			ret = LINEEDIT_INTERRUPT;
			break;
		}
		if (!s) {
			if (count == 0) {
				/* Ctrl-D at an empty line, or the terminal went away */
				fputs("\n", le->fout);
				if (more)
					buf_setlen(line, line->len - 1);
				ret = more ? LINEEDIT_LINE : LINEEDIT_EOF;
			} else {
				ret = err_set_errno(FX_EOS, "cannot read the terminal");
			}
			break;
		}
		n = strlen(s);
		if (n && s[n - 1] == '\n')
			n--;
		more = le_continues(s, n);
		buf_add(line, s, n - (size_t)more);
		if (line->len > LINEEDIT_MAX_ENTRY) {
			ret = err_set(FX_ELIMIT, "an entry is longer than %d bytes", LINEEDIT_MAX_ENTRY);
			break;
		}
		if (!more) {
			ret = LINEEDIT_LINE;
			break;
		}
		buf_addch(line, '\n');
	}
	if (le->paste_mode)
		fputs(PASTE_OFF, le->fout);
	fflush(le->fout);
	if (le->loc)
		uselocale(old);
	le_signals_leave(&save);
	if (ret != LINEEDIT_LINE)
		buf_reset(line);
	return ret;
}

int lineedit_read(struct lineedit *le, const char *prompt, struct buf *line)
{
	int ret;

	buf_reset(line);
	le->dropped = 0;
	if (!prompt)
		prompt = "";
	le->esc_alone = 0;
	ret = le->tty ? le_read_tty(le, prompt, line) : le_read_plain(le, prompt, line);
	if (ret == LINEEDIT_LINE && le->pastes.nr && (ret = le_unfold(le, line)) < 0)
		buf_reset(line);
	strvec_clear(&le->pastes);
	if (ret == LINEEDIT_LINE)
		le_sanitize(line);
	return ret;
}

void lineedit_prefill(struct lineedit *le, const char *text)
{
	const char *p = text;

	if (!le->tty || !text)
		return;
	/* each line as a paste (a tab is text, not completion), then its Enter */
	while (*p) {
		size_t n = strcspn(p, "\n"), i;

		if (n) {
			buf_addstr(&le->inject, PASTE_START);
			for (i = 0; i < n; i++)
				if (p[i] != 033)
					buf_addch(&le->inject, p[i]);
			buf_addstr(&le->inject, PASTE_END);
		}
		p += n;
		if (*p == '\n') {
			if (n)
				buf_addch(&le->inject, '\r');
			p++;
		}
	}
}

void lineedit_set_recall(struct lineedit *le, const char *text)
{
	free(le->recall);
	le->recall = text && *text ? xstrdup(text) : NULL;
}

void lineedit_close(struct lineedit *le)
{
	if (!le)
		return;
	if (le->el)
		el_end(le->el);	/* puts the terminal back when it was left raw */
	if (le->hist)
		history_end(le->hist);
	if (le->fin)
		fclose(le->fin);
	if (le->fout)
		fclose(le->fout);
	if (le->loc)
		freelocale(le->loc);
	buf_release(&le->in);
	buf_release(&le->inject);
	buf_release(&le->hist_problem);
	strvec_clear(&le->pastes);
	free(le->recall);
	strvec_clear(&le->entries);
	strvec_clear(&le->commands);
	free(le->hist_path);
	free(le->hist_ws);
	free(le->hist_rel);
	free(le->ws_real);
	free(le->tab_line);
	free(le);
}

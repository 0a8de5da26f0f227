/*
 * Approval of commands; see approval.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "sandbox/approval.h"

/* Unreadable answers before the question counts as answered no. */
#define MAX_TRIES 3
/* Longest answer line read; a longer one is unreadable. */
#define MAX_ANSWER 64

static pthread_mutex_t ask_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*ask_hook)(void *data, int asking);
static void *ask_hook_data;

void approval_set_hook(void (*fn)(void *data, int asking), void *data)
{
	pthread_mutex_lock(&ask_lock);
	ask_hook = fn;
	ask_hook_data = data;
	pthread_mutex_unlock(&ask_lock);
}

/* ---- showing the command ---------------------------------------------- */

/* One strict UTF-8 sequence at `s`: its length, or 0 when it is not valid UTF-8. */
static size_t utf8_len(const unsigned char *s, uint32_t *cp)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		c = s[0] & 0x0f;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		c = s[0] & 0x07;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	/* the NUL terminator stops this before the end of the string */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 1; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	*cp = c;
	return n;
}

/* Code points that are invisible, or reorder or break the text around them. */
static int hidden_cp(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0xad || c == 0x61c || c == 0x180e ||
	       (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
	       (c >= 0x2060 && c <= 0x206f) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) ||
	       (c >= 0xe0000 && c <= 0xe007f);
}

/*
 * Walk `s`: for each piece, `plain` bytes are shown as they are; else the
 * piece is one control byte, invalid byte, or hidden code point `*cp`.
 */
static size_t next_piece(const char *s, int *plain, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;

	if (u[0] < 0x20 || u[0] == 0x7f) {
		*plain = 0;
		*cp = u[0];
		return 1;
	}
	n = utf8_len(u, cp);
	if (!n) {
		*plain = 0;
		*cp = 0x80000000u | u[0];	/* a raw byte */
		return 1;
	}
	*plain = !hidden_cp(*cp);
	return n;
}

static int needs_escapes(const char *s)
{
	int plain;
	uint32_t cp;

	while (*s) {
		s += next_piece(s, &plain, &cp);
		if (!plain)
			return 1;
	}
	return 0;
}

static void add_escape(struct buf *out, uint32_t cp)
{
	if (cp & 0x80000000u)
		buf_addf(out, "\\x%02x", cp & 0xff);
	else if (cp == '\n')
		buf_addstr(out, "\\n");
	else if (cp == '\t')
		buf_addstr(out, "\\t");
	else if (cp == '\r')
		buf_addstr(out, "\\r");
	else if (cp < 0x80)
		buf_addf(out, "\\x%02x", cp);
	else if (cp < 0x10000)
		buf_addf(out, "\\u%04x", cp);
	else
		buf_addf(out, "\\U%08x", cp);
}

void approval_add_visible(struct buf *out, const char *s)
{
	int plain;
	uint32_t cp;

	while (*s) {
		size_t n = next_piece(s, &plain, &cp);

		if (plain)
			buf_add(out, s, n);
		else
			add_escape(out, cp);
		s += n;
	}
}

/* bash's $'...': every byte as written, with escapes for what must not reach the terminal. */
static void add_ansi_c_quoted(struct buf *out, const char *s)
{
	int plain;
	uint32_t cp;

	buf_addstr(out, "$'");
	while (*s) {
		size_t n = next_piece(s, &plain, &cp);

		if (plain && (*s == '\\' || *s == '\''))
			buf_addch(out, '\\');
		if (plain)
			buf_add(out, s, n);
		else
			add_escape(out, cp);
		s += n;
	}
	buf_addch(out, '\'');
}

void approval_format_argv(struct buf *out, const char *const *argv, size_t argc)
{
	size_t i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i] ? argv[i] : "";

		if (i)
			buf_addch(out, ' ');
		if (needs_escapes(a))
			add_ansi_c_quoted(out, a);
		else
			buf_add_shell_quoted(out, a);
	}
}

/* ---- what is remembered ----------------------------------------------- */

static pthread_mutex_t always_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strvec always = STRVEC_INIT;
static const volatile sig_atomic_t *ask_cancel;

void approval_set_cancel(const volatile sig_atomic_t *flag)
{
	pthread_mutex_lock(&ask_lock);
	ask_cancel = flag;
	pthread_mutex_unlock(&ask_lock);
}

static void name_of(struct buf *out, const char *argv0)
{
	policy_base_name(out, argv0 ? argv0 : "");
}

int approval_always_has(const char *argv0)
{
	struct buf name = BUF_INIT;
	int found;

	name_of(&name, argv0);
	pthread_mutex_lock(&always_lock);
	found = name.len && strvec_find(&always, name.buf) >= 0;
	pthread_mutex_unlock(&always_lock);
	buf_release(&name);
	return found;
}

void approval_always_add(const char *argv0)
{
	struct buf name = BUF_INIT;

	name_of(&name, argv0);
	pthread_mutex_lock(&always_lock);
	if (name.len && strvec_find(&always, name.buf) < 0)
		strvec_push(&always, name.buf);
	pthread_mutex_unlock(&always_lock);
	buf_release(&name);
}

void approval_always_reset(void)
{
	pthread_mutex_lock(&always_lock);
	strvec_clear(&always);
	pthread_mutex_unlock(&always_lock);
}

void approval_answer_release(struct approval_answer *a)
{
	free(a->reason);
	a->reason = NULL;
	a->verdict = APPROVE_NO;
	a->interrupted = 0;
	a->remembered = 0;
}

void approval_add_refusal(struct buf *out, const char *const *argv, size_t argc,
			  const struct approval_answer *a)
{
	buf_addstr(out, "Command not approved: ");
	approval_format_argv(out, argv, argc);
	if (a && a->reason && *a->reason)
		buf_addf(out, " \xe2\x80\x94 the person said: \"%s\"", a->reason);
}

/* ---- the terminal ------------------------------------------------------ */

/*
 * While a question is asked the terminal is in canonical mode with echo
 * (whatever a line editor of the front left it in), ISIG off so that ^C is
 * not SIGINT for forgex but a byte, and ^C an end of line (VEOL) so that
 * the read returns at once with it.
 */
struct tty_mode {
	int saved;
	struct termios t;
};

static void tty_enter(int fd, struct tty_mode *m)
{
	struct termios t;

	m->saved = 0;
	if (!isatty(fd) || tcgetattr(fd, &m->t) < 0)
		return;
	m->saved = 1;
	t = m->t;
	t.c_lflag |= ICANON | ECHO | ECHOE | ECHOK;
	t.c_lflag &= ~(tcflag_t)ISIG;
	t.c_iflag |= ICRNL;
	t.c_iflag &= ~(tcflag_t)(INLCR | IGNCR);
	t.c_cc[VEOL] = 0x03;
	if (t.c_cc[VEOF] == _POSIX_VDISABLE)
		t.c_cc[VEOF] = 0x04;
	while (tcsetattr(fd, TCSANOW, &t) < 0 && errno == EINTR)
		;
	/* type-ahead cannot answer a question it was typed before */
	tcflush(fd, TCIFLUSH);
}

static void tty_leave(int fd, const struct tty_mode *m)
{
	if (!m->saved)
		return;
	while (tcsetattr(fd, TCSANOW, &m->t) < 0 && errno == EINTR)
		;
}

/* ---- asking ----------------------------------------------------------- */

enum { LINE_EOF = 0, LINE_OK = 1, LINE_INTR = 2 };

static int cancelled(void)
{
	return ask_cancel && *ask_cancel;
}

/*
 * Read one line (without its newline) into `line`, keeping at most `max`
 * bytes of it. LINE_OK: a line; LINE_EOF: end of input (^D) before a
 * complete line; LINE_INTR: ^C, or the cancel flag; FX_EOS: a read failed.
 */
static int read_line(int in, struct buf *line, size_t max)
{
	char c;

	buf_reset(line);
	for (;;) {
		struct pollfd p = { in, POLLIN, 0 };
		ssize_t n;
		int r;

		if (cancelled())
			return LINE_INTR;
		r = poll(&p, 1, ask_cancel ? 100 : -1);
		if (r < 0 && errno != EINTR)
			return err_set_errno(FX_EOS, "cannot read the answer");
		if (r <= 0)
			continue;
		n = read(in, &c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return err_set_errno(FX_EOS, "cannot read the answer");
		if (n == 0 || c == 0x04)
			return LINE_EOF;
		if (c == 0x03)
			return LINE_INTR;
		if (c == '\n')
			return LINE_OK;
		if (line->len <= max)
			buf_addch(line, c);
	}
}

/* 'y', 'a', 'n' (also empty), 'e', or -1 for anything else. */
static int parse_answer(struct buf *line)
{
	static const struct { const char *word; int answer; } words[] = {
		{ "y", 'y' }, { "yes", 'y' }, { "a", 'a' }, { "always", 'a' },
		{ "n", 'n' }, { "no", 'n' }, { "", 'n' }, { "e", 'e' },
	};
	size_t i;

	buf_trim(line);
	for (i = 0; i < line->len; i++)
		if (line->buf[i] >= 'A' && line->buf[i] <= 'Z')
			line->buf[i] = (char)(line->buf[i] - 'A' + 'a');
	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (!strcmp(line->buf, words[i].word))
			return words[i].answer;
	return -1;
}

static int say(int out, const char *s)
{
	return fsutil_write_all(out, s, strlen(s));
}

/* Keep at most APPROVAL_REASON_MAX bytes of `line`, cut on a character, escaped. */
static char *clean_reason(struct buf *line)
{
	struct buf r = BUF_INIT;
	size_t n;
	int cut = 0;

	buf_trim(line);
	if (!line->len)
		return NULL;
	n = line->len;
	if (n > APPROVAL_REASON_MAX) {
		n = APPROVAL_REASON_MAX;
		while (n > 0 && ((unsigned char)line->buf[n] & 0xc0) == 0x80)
			n--;
		cut = 1;
	}
	buf_setlen(line, n);
	approval_add_visible(&r, line->buf);
	if (cut)
		buf_addstr(&r, "...");
	return buf_detach(&r, NULL);
}

/*
 * Ask `question` until an answer parse_answer() reads, or MAX_TRIES
 * unreadable ones; `again` is the prompt after an unreadable answer. `e`
 * then asks for the reason. Fills `a`; a no without the person saying so
 * leaves err_last() saying why.
 */
static int ask_until(struct approval_answer *a, int in, int out, const char *question,
		     const char *again)
{
	struct buf line = BUF_INIT;
	struct tty_mode mode;
	int tries, r;

	memset(a, 0, sizeof(*a));
	err_clear();
	tty_enter(in, &mode);
	if (!mode.saved && isatty(in))
		tcflush(in, TCIFLUSH);
	for (tries = 0; tries < MAX_TRIES; tries++) {
		if (say(out, tries ? again : question) < 0)
			goto out;
		r = read_line(in, &line, MAX_ANSWER);
		if (r < 0)
			goto out;
		if (r == LINE_INTR) {
			a->interrupted = 1;
			say(out, "\nNot run.\n");
			goto out;
		}
		if (r == LINE_EOF) {
			err_set(FX_EDENIED, "no answer to the approval question (end of input)");
			say(out, "\n");
			goto out;
		}
		switch (parse_answer(&line)) {
		case 'y':
			a->verdict = APPROVE_ONCE;
			goto out;
		case 'a':
			a->verdict = APPROVE_ALWAYS;
			goto out;
		case 'n':
			goto out;
		case 'e':
			if (say(out, "Tell the model why: ") < 0)
				goto out;
			r = read_line(in, &line, APPROVAL_REASON_MAX + 4);
			if (r == LINE_OK)
				a->reason = clean_reason(&line);
			else if (r == LINE_INTR)
				a->interrupted = 1;
			if (r == LINE_INTR || r == LINE_EOF)
				say(out, "\n");
			goto out;
		default:
			break;
		}
	}
	err_set(FX_EDENIED, "no readable answer to the approval question");
	say(out, "Not run.\n");
out:
	tty_leave(in, &mode);
	buf_release(&line);
	return a->verdict;
}

static void begin(void)
{
	pthread_mutex_lock(&ask_lock);
	if (ask_hook)
		ask_hook(ask_hook_data, 1);
}

static void end(void)
{
	if (ask_hook)
		ask_hook(ask_hook_data, 0);
	pthread_mutex_unlock(&ask_lock);
}

int approval_ask_command_fd(struct approval_answer *a, int in, int out,
			    const struct approval_request *rq)
{
	struct buf msg = BUF_INIT, name = BUF_INIT;
	int answer;

	name_of(&name, rq->argc ? rq->argv[0] : "");
	buf_addstr(&msg, "\nforgex: this command needs approval");
	if (rq->reason && *rq->reason) {
		buf_addstr(&msg, ": ");
		approval_add_visible(&msg, rq->reason);
	}
	buf_addstr(&msg, "\n  $ ");
	approval_format_argv(&msg, rq->argv, rq->argc);
	if (rq->cwd) {
		buf_addstr(&msg, "\n  in ");
		approval_add_visible(&msg, *rq->cwd ? rq->cwd : ".");
		buf_addstr(&msg, " (of the workspace)");
	}
	if (rq->network)
		buf_addstr(&msg, "\n  approved, it runs with network access");
	buf_addstr(&msg, "\n  y: yes, once   a: yes, and '");
	approval_add_visible(&msg, name.buf);
	buf_addstr(&msg, "' without asking for the rest of this session\n"
		   "  n: no   e: no, and tell the model why\nRun it? [y/a/N/e] ");
	begin();
	answer = ask_until(a, in, out, msg.buf, "Please answer y, a, n or e. Run it? [y/a/N/e] ");
	end();
	buf_release(&msg);
	buf_release(&name);
	return answer;
}

static int open_tty(const char *tty)
{
	const char *path = tty ? tty : "/dev/tty";
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		err_set_errno(FX_EDENIED, "no terminal to ask for approval on (%s)", path);
	return fd;
}

int approval_ask_command(struct approval_answer *a, const char *tty,
			 const struct approval_request *rq)
{
	int fd, answer;

	memset(a, 0, sizeof(*a));
	fd = open_tty(tty);
	if (fd < 0)
		return APPROVE_NO;
	answer = approval_ask_command_fd(a, fd, fd, rq);
	close(fd);
	return answer;
}

int approval_ask_fd(int in, int out, const char *const *argv, size_t argc, const char *reason)
{
	struct approval_request rq = { argv, argc, NULL, reason, 0 };
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int answer = approval_ask_command_fd(&a, in, out, &rq);

	approval_answer_release(&a);
	return answer != APPROVE_NO;
}

int approval_ask_tty(const char *tty, const char *const *argv, size_t argc, const char *reason)
{
	struct approval_request rq = { argv, argc, NULL, reason, 0 };
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int answer = approval_ask_command(&a, tty, &rq);

	approval_answer_release(&a);
	return answer != APPROVE_NO;
}

int approval_ask_what_answer_fd(struct approval_answer *a, int in, int out, const char *what,
				const char *shown, const char *reason)
{
	struct buf msg = BUF_INIT;
	int answer;

	buf_addstr(&msg, "\nforgex: ");
	approval_add_visible(&msg, what);
	buf_addstr(&msg, " needs approval");
	if (reason && *reason) {
		buf_addstr(&msg, ": ");
		approval_add_visible(&msg, reason);
	}
	buf_addstr(&msg, "\n  ");
	approval_add_visible(&msg, shown);
	buf_addstr(&msg, "\n  y: yes, once   a: yes, and this tool without asking for the rest of "
		   "this session\n  n: no   e: no, and tell the model why\nRun it? [y/a/N/e] ");
	begin();
	answer = ask_until(a, in, out, msg.buf, "Please answer y, a, n or e. Run it? [y/a/N/e] ");
	end();
	buf_release(&msg);
	return answer;
}

int approval_ask_what_answer(struct approval_answer *a, const char *tty, const char *what,
			     const char *shown, const char *reason)
{
	int fd, answer;

	memset(a, 0, sizeof(*a));
	fd = open_tty(tty);
	if (fd < 0)
		return APPROVE_NO;
	answer = approval_ask_what_answer_fd(a, fd, fd, what, shown, reason);
	close(fd);
	return answer;
}

int approval_ask_what_fd(int in, int out, const char *what, const char *shown,
			 const char *reason)
{
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int answer = approval_ask_what_answer_fd(&a, in, out, what, shown, reason);

	approval_answer_release(&a);
	return answer;
}

int approval_ask_what(const char *tty, const char *what, const char *shown, const char *reason)
{
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int answer = approval_ask_what_answer(&a, tty, what, shown, reason);

	approval_answer_release(&a);
	return answer;
}

int approval_decide(struct approval_answer *out, enum approval_mode mode,
		    const struct approval_request *rq)
{
	memset(out, 0, sizeof(*out));
	switch (mode) {
	case APPROVAL_SAFE:
		err_set(FX_EDENIED, "approval mode is safe: commands that need approval do not run");
		return APPROVE_NO;
	case APPROVAL_AUTO:
		out->verdict = APPROVE_ONCE;
		return APPROVE_ONCE;
	case APPROVAL_ASK:
		if (rq->argc && approval_always_has(rq->argv[0])) {
			out->verdict = APPROVE_ONCE;
			out->remembered = 1;
			return APPROVE_ONCE;
		}
		if (approval_ask_command(out, NULL, rq) == APPROVE_ALWAYS && rq->argc)
			approval_always_add(rq->argv[0]);
		return out->verdict;
	}
	err_set(FX_EDENIED, "unknown approval mode %d", (int)mode);
	return APPROVE_NO;
}

int approval_resolve(enum approval_mode mode, const char *const *argv, size_t argc,
		     const char *reason)
{
	struct approval_request rq = { argv, argc, NULL, reason, 0 };
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int answer = approval_decide(&a, mode, &rq);

	approval_answer_release(&a);
	return answer != APPROVE_NO;
}

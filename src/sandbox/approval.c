/*
 * Approval of commands; see approval.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
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

/* ---- asking ----------------------------------------------------------- */

/*
 * Read one line (without its newline) into `line`. 1: a line; 0: end of
 * input before a complete line; FX_EOS: a read failed. A line longer than
 * MAX_ANSWER is read whole and comes back cut, which no answer matches.
 */
static int read_answer(int in, struct buf *line)
{
	char c;

	buf_reset(line);
	for (;;) {
		ssize_t n = read(in, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_errno(FX_EOS, "cannot read the answer");
		if (n == 0)
			return 0;
		if (c == '\n')
			return 1;
		if (line->len <= MAX_ANSWER)
			buf_addch(line, c);
	}
}

/* y/yes: 1; n/no or empty: 0; anything else: -1. */
static int parse_answer(struct buf *line)
{
	size_t i;

	buf_trim(line);
	for (i = 0; i < line->len; i++)
		if (line->buf[i] >= 'A' && line->buf[i] <= 'Z')
			line->buf[i] = (char)(line->buf[i] - 'A' + 'a');
	if (!strcmp(line->buf, "y") || !strcmp(line->buf, "yes"))
		return 1;
	if (!line->len || !strcmp(line->buf, "n") || !strcmp(line->buf, "no"))
		return 0;
	return -1;
}

static int say(int out, const struct buf *b)
{
	return fsutil_write_all(out, b->buf, b->len);
}

/*
 * Ask `question` (the whole first prompt) until an answer `parse` reads
 * (>= 0) or MAX_TRIES unreadable ones; `again` is the prompt after an
 * unreadable answer. No answer, or none readable, is 0 with err_last()
 * saying why.
 */
static int ask_until(int in, int out, struct buf *question, const char *again,
		     int (*parse)(struct buf *line))
{
	struct buf line = BUF_INIT;
	int tries, answer = 0;

	/* type-ahead cannot answer a question it was typed before */
	if (isatty(in))
		tcflush(in, TCIFLUSH);
	for (tries = 0; tries < MAX_TRIES; tries++) {
		int r;

		if (say(out, question) < 0)
			goto out;
		r = read_answer(in, &line);
		if (r < 0)
			goto out;
		if (r == 0) {
			err_set(FX_EDENIED, "no answer to the approval question (end of input)");
			goto out;
		}
		r = parse(&line);
		if (r >= 0) {
			answer = r;
			goto out;
		}
		buf_reset(question);
		buf_addstr(question, again);
	}
	err_set(FX_EDENIED, "no readable answer to the approval question");
	buf_reset(question);
	buf_addstr(question, "Not run.\n");
	say(out, question);
out:
	buf_release(&line);
	return answer;
}

static int ask_locked(int in, int out, const char *const *argv, size_t argc, const char *reason)
{
	struct buf msg = BUF_INIT;
	int answer;

	buf_addstr(&msg, "\nforgex: this command needs approval");
	if (reason && *reason) {
		buf_addstr(&msg, ": ");
		approval_add_visible(&msg, reason);
	}
	buf_addstr(&msg, "\n  $ ");
	approval_format_argv(&msg, argv, argc);
	buf_addstr(&msg, "\nRun it? [y/N] ");
	answer = ask_until(in, out, &msg, "Please answer y or n. Run it? [y/N] ", parse_answer);
	buf_release(&msg);
	return answer;
}

int approval_ask_fd(int in, int out, const char *const *argv, size_t argc, const char *reason)
{
	int answer;

	pthread_mutex_lock(&ask_lock);
	if (ask_hook)
		ask_hook(ask_hook_data, 1);
	answer = ask_locked(in, out, argv, argc, reason);
	if (ask_hook)
		ask_hook(ask_hook_data, 0);
	pthread_mutex_unlock(&ask_lock);
	return answer;
}

int approval_ask_tty(const char *tty, const char *const *argv, size_t argc, const char *reason)
{
	const char *path = tty ? tty : "/dev/tty";
	int fd, answer;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err_set_errno(FX_EDENIED, "no terminal to ask for approval on (%s)", path);
		return 0;
	}
	answer = approval_ask_fd(fd, fd, argv, argc, reason);
	close(fd);
	return answer;
}

/* y/yes: APPROVE_ONCE; a/always: APPROVE_ALWAYS; n/no or empty: 0; else -1. */
static int parse_answer_always(struct buf *line)
{
	int r = parse_answer(line);

	if (r >= 0)
		return r;
	if (!strcmp(line->buf, "a") || !strcmp(line->buf, "always"))
		return APPROVE_ALWAYS;
	return -1;
}

int approval_ask_what_fd(int in, int out, const char *what, const char *shown,
			 const char *reason)
{
	struct buf msg = BUF_INIT;
	int answer;

	pthread_mutex_lock(&ask_lock);
	if (ask_hook)
		ask_hook(ask_hook_data, 1);
	buf_addstr(&msg, "\nforgex: ");
	approval_add_visible(&msg, what);
	buf_addstr(&msg, " needs approval");
	if (reason && *reason) {
		buf_addstr(&msg, ": ");
		approval_add_visible(&msg, reason);
	}
	buf_addstr(&msg, "\n  ");
	approval_add_visible(&msg, shown);
	buf_addstr(&msg, "\nRun it? [y]es, [a]lways (this session), [N]o: ");
	answer = ask_until(in, out, &msg, "Please answer y, a or n. Run it? [y/a/N] ",
			   parse_answer_always);
	if (ask_hook)
		ask_hook(ask_hook_data, 0);
	pthread_mutex_unlock(&ask_lock);
	buf_release(&msg);
	return answer;
}

int approval_ask_what(const char *tty, const char *what, const char *shown, const char *reason)
{
	const char *path = tty ? tty : "/dev/tty";
	int fd, answer;

	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err_set_errno(FX_EDENIED, "no terminal to ask for approval on (%s)", path);
		return 0;
	}
	answer = approval_ask_what_fd(fd, fd, what, shown, reason);
	close(fd);
	return answer;
}

int approval_resolve(enum approval_mode mode, const char *const *argv, size_t argc,
		     const char *reason)
{
	switch (mode) {
	case APPROVAL_SAFE:
		err_set(FX_EDENIED, "approval mode is safe: commands that need approval do not run");
		return 0;
	case APPROVAL_AUTO:
		return 1;
	case APPROVAL_ASK:
		return approval_ask_tty(NULL, argv, argc, reason);
	}
	err_set(FX_EDENIED, "unknown approval mode %d", (int)mode);
	return 0;
}

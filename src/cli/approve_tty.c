/*
 * The approval question on a terminal; see approve_tty.h. What is
 * decided, and remembered, is the approver's (sandbox/approval.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/utf8.h"
#include "cli/approve_tty.h"
#include "cli/progress.h"

/* Unreadable answers before the question counts as answered no. */
#define MAX_TRIES 3
/* Longest answer line read; a longer one is unreadable. */
#define MAX_ANSWER 64

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

/*
 * Read one line (without its newline) into `line`, keeping at most `max`
 * bytes of it. LINE_OK: a line; LINE_EOF: end of input (^D) before a
 * complete line; LINE_INTR: ^C, or `*cancel`; FX_EOS: a read failed.
 */
static int read_line(int in, struct buf *line, size_t max, const volatile sig_atomic_t *cancel)
{
	char c;

	buf_reset(line);
	for (;;) {
		struct pollfd p = { in, POLLIN, 0 };
		ssize_t n;
		int r;

		if (cancel && *cancel)
			return LINE_INTR;
		r = poll(&p, 1, cancel ? 100 : -1);
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
		n = utf8_cut(line->buf, line->len, APPROVAL_REASON_MAX);
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
		     const char *again, const volatile sig_atomic_t *cancel)
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
		r = read_line(in, &line, MAX_ANSWER, cancel);
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
			r = read_line(in, &line, APPROVAL_REASON_MAX + 4, cancel);
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

/* The question about a command: its reason, argv, folder, network, and the keys. */
static void command_question(struct buf *msg, const struct approval_request *rq)
{
	struct buf shape = BUF_INIT;

	approval_command_shape(&shape, rq->argv, rq->argc);
	buf_addstr(msg, "\nforgex: this command needs approval");
	if (rq->reason && *rq->reason) {
		buf_addstr(msg, ": ");
		approval_add_visible(msg, rq->reason);
	}
	buf_addstr(msg, "\n  $ ");
	approval_format_argv(msg, rq->argv, rq->argc);
	if (rq->cwd) {
		buf_addstr(msg, "\n  in ");
		approval_add_visible(msg, *rq->cwd ? rq->cwd : ".");
		buf_addstr(msg, " (of the workspace)");
	}
	if (rq->network)
		buf_addstr(msg, "\n  approved, it runs with network access");
	/* the shape is escaped already (approval_format_argv()) */
	buf_addstr(msg, "\n  y: yes, once   a: yes, and '");
	buf_addbuf(msg, &shape);
	buf_addstr(msg, "' without asking for the rest of this session\n"
		   "  n: no   e: no, and tell the model why\nRun it? [y/a/N/e] ");
	buf_release(&shape);
}

/* The question about an MCP tool call: what, why, its arguments, and the keys. */
static void tool_question(struct buf *msg, const struct approval_request *rq)
{
	buf_addstr(msg, "\nforgex: ");
	approval_add_visible(msg, rq->what ? rq->what : "");
	buf_addstr(msg, " needs approval");
	if (rq->reason && *rq->reason) {
		buf_addstr(msg, ": ");
		approval_add_visible(msg, rq->reason);
	}
	buf_addstr(msg, "\n  ");
	approval_add_visible(msg, rq->shown ? rq->shown : "");
	if (rq->kind == APPROVAL_NETWORK_DOMAIN)
		buf_addstr(msg, "\n  y: yes, for this command   a: yes, and this domain without "
			   "asking for the rest of this session\n  n: no   e: no, and tell the model "
			   "why\nAllow it? [y/a/N/e] ");
	else
		buf_addstr(msg, "\n  y: yes, once   a: yes, and this tool without asking for the "
			   "rest of this session\n  n: no   e: no, and tell the model why\nRun it? "
			   "[y/a/N/e] ");
}

int approve_tty_ask_fd(struct approval_answer *a, int in, int out,
		       const struct approval_request *rq, const volatile sig_atomic_t *cancel)
{
	struct buf msg = BUF_INIT;
	int answer;

	if (rq->kind != APPROVAL_COMMAND)
		tool_question(&msg, rq);
	else
		command_question(&msg, rq);
	answer = ask_until(a, in, out, msg.buf, "Please answer y, a, n or e. Run it? [y/a/N/e] ",
			   cancel);
	buf_release(&msg);
	return answer;
}

int approve_tty_ask(void *data, struct approval_answer *a, const struct approval_request *rq,
		    const volatile sig_atomic_t *cancel)
{
	const struct approve_tty *t = data;
	const char *path = t && t->tty ? t->tty : "/dev/tty";
	int fd, answer;

	memset(a, 0, sizeof(*a));
	fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err_set_errno(FX_EDENIED, "no terminal to ask for approval on (%s)", path);
		return APPROVE_NO;
	}
	progress_hold();
	answer = approve_tty_ask_fd(a, fd, fd, rq, cancel);
	progress_release(t ? t->label : NULL);
	close(fd);
	return answer;
}

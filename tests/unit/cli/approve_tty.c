/*
 * The approval question on a terminal (cli/approve_tty.c), asked for real
 * on a pseudo-terminal (posix_openpt) with a child process playing forgex
 * and the test playing the person; through an approver where the answer
 * is the approver's to use (the controlling terminal, the cancel flag).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "cli/approve_tty.h"

static const char *const pip[] = { "pip", "install", "requests" };
static const char reason[] = "Command 'pip' may access the network";

/* ---- asking on a pseudo-terminal -------------------------------------- */

struct pty {
	int master;
	char *slave_path;
};

static void pty_open(struct pty *p)
{
	p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(p->master >= 0);
	assert_int_equal(grantpt(p->master), 0);
	assert_int_equal(unlockpt(p->master), 0);
	p->slave_path = xstrdup(ptsname(p->master));
}

static void pty_close(struct pty *p)
{
	if (p->master >= 0)
		close(p->master);
	free(p->slave_path);
}

/*
 * Read from the master into `seen` until `want` shows up after `*from` (or
 * 5 s pass); `*from` then moves past it.
 */
static void pty_expect(struct pty *p, struct buf *seen, size_t *from, const char *want)
{
	const char *at;

	while (!(at = strstr(seen->buf + *from, want))) {
		struct pollfd pfd = { p->master, POLLIN, 0 };
		char chunk[512];
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0)
			fail_msg("timed out waiting for \"%s\"; saw \"%s\"", want, seen->buf);
		n = read(p->master, chunk, sizeof(chunk));
		if (n <= 0)
			fail_msg("pty closed waiting for \"%s\"; saw \"%s\"", want, seen->buf);
		buf_add(seen, chunk, (size_t)n);
	}
	*from = (size_t)(at - seen->buf) + strlen(want);
}

/* Read what is left until the child's side of the pty is closed. */
static void pty_drain(struct pty *p, struct buf *seen)
{
	for (;;) {
		struct pollfd pfd = { p->master, POLLIN, 0 };
		char chunk[512];
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0)
			fail_msg("timed out waiting for the asker to finish; saw \"%s\"", seen->buf);
		n = read(p->master, chunk, sizeof(chunk));
		if (n <= 0)
			return;	/* EIO: no slave is open any more */
		buf_add(seen, chunk, (size_t)n);
	}
}

static void pty_type(struct pty *p, const char *s)
{
	assert_int_equal(fsutil_write_all(p->master, s, strlen(s)), 0);
}

enum how {
	ASK_FD,		/* approve_tty_ask_fd() on the slave */
	ASK_TTY_PATH,	/* approve_tty_ask() on the slave's path */
	ASK_CTTY,	/* approver_decide(ask) with the slave as controlling terminal */
};

/* Ask about `pip` on `fd`, or on the terminal of `t` (fd < 0): 1 approved (y or a), 0 not. */
static int ask_pip(int fd, struct approve_tty *t)
{
	struct approval_request rq = { APPROVAL_COMMAND, reason, pip, 3, NULL, 0, NULL, NULL, NULL };
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int answer;

	if (fd >= 0)
		answer = approve_tty_ask_fd(&a, fd, fd, &rq, NULL);
	else
		answer = approve_tty_ask(t, &a, &rq, NULL);
	approval_answer_release(&a);
	return answer != APPROVE_NO;
}

/* The same through an approver that asks on /dev/tty, in mode ask. */
static int decide_pip(void)
{
	struct approval_request rq = { APPROVAL_COMMAND, reason, pip, 3, NULL, 0, NULL, NULL, NULL };
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approver ap;
	int answer;

	approver_init(&ap, approve_tty_ask, NULL, NULL);
	answer = approver_decide(&ap, &a, APPROVAL_ASK, &rq);
	approval_answer_release(&a);
	approver_release(&ap);
	return answer != APPROVE_NO;
}

/* Start a child that asks on the pty; its exit status is the answer (or 2, 3 on trouble). */
static pid_t start_asker(struct pty *p, enum how how)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int fd, answer;

		close(p->master);	/* the person's side is the parent's only */
		if (setsid() < 0)
			_exit(3);
		if (how == ASK_CTTY) {
			fd = open(p->slave_path, O_RDWR);	/* becomes the controlling terminal */
			if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0)
				_exit(3);
			answer = decide_pip();
		} else if (how == ASK_TTY_PATH) {
			struct approve_tty t = { p->slave_path, NULL };

			answer = ask_pip(-1, &t);
			/* O_NOCTTY: asking did not make it our controlling terminal */
			if (open("/dev/tty", O_RDWR) >= 0)
				_exit(2);
		} else {
			fd = open(p->slave_path, O_RDWR | O_NOCTTY);
			if (fd < 0)
				_exit(3);
			answer = ask_pip(fd, NULL);
		}
		_exit(answer);
	}
	return pid;
}

static int wait_answer(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_true(WEXITSTATUS(st) <= 1);
	return WEXITSTATUS(st);
}

/* Ask, answer with `typed` (after each prompt), return the answer and what the person saw. */
static int converse(enum how how, const char *const *typed, size_t n, struct buf *seen)
{
	struct pty p;
	pid_t pid;
	size_t i, from = seen->len;
	int answer;

	pty_open(&p);
	pid = start_asker(&p, how);
	for (i = 0; i < n; i++) {
		/* each answer after its own prompt */
		pty_expect(&p, seen, &from, "[y/a/N/e] ");
		if (typed[i])
			pty_type(&p, typed[i]);
		else
			pty_type(&p, "\x04");	/* ^D at the start of a line: end of input */
	}
	pty_drain(&p, seen);
	answer = wait_answer(pid);
	pty_close(&p);
	return answer;
}

static void test_approval_ask_yes(void **state)
{
	static const char *const yes[] = { "y\n", "yes\n", "Y\n", "  YES \n" };
	struct buf seen = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		buf_reset(&seen);
		assert_int_equal(converse(ASK_FD, &yes[i], 1, &seen), 1);
	}
	/* the person saw the reason and the exact command */
	assert_non_null(strstr(seen.buf, "needs approval: Command 'pip' may access the network"));
	assert_non_null(strstr(seen.buf, "$ pip install requests"));
	buf_release(&seen);
}

static void test_approval_ask_no(void **state)
{
	static const char *const no[] = { "n\n", "no\n", "NO\n", "\n" };
	struct buf seen = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(no); i++) {
		buf_reset(&seen);
		assert_int_equal(converse(ASK_FD, &no[i], 1, &seen), 0);
	}
	buf_release(&seen);
}

static void test_approval_ask_garbage(void **state)
{
	static const char *const then_yes[] = { "maybe\n", "yess\n", "y\n" };
	static const char *const only_garbage[] = { "sure\n", "ok\n", "y e s\n" };
	static const char *const long_line[] = {
		"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n",
		"n\n",
	};
	struct buf seen = BUF_INIT;

	(void)state;
	/* garbage is asked again */
	assert_int_equal(converse(ASK_FD, then_yes, 3, &seen), 1);
	assert_non_null(strstr(seen.buf, "Please answer y, a, n or e."));
	/* three times garbage is no */
	buf_reset(&seen);
	assert_int_equal(converse(ASK_FD, only_garbage, 3, &seen), 0);
	assert_non_null(strstr(seen.buf, "Not run."));
	buf_reset(&seen);
	assert_int_equal(converse(ASK_FD, long_line, 2, &seen), 0);
	buf_release(&seen);
}

static void test_approval_ask_eof(void **state)
{
	static const char *const eof[] = { NULL };
	static const char *const garbage_then_eof[] = { "what?\n", NULL };
	struct buf seen = BUF_INIT;

	(void)state;
	assert_int_equal(converse(ASK_FD, eof, 1, &seen), 0);
	buf_reset(&seen);
	assert_int_equal(converse(ASK_FD, garbage_then_eof, 2, &seen), 0);
	buf_release(&seen);
}

static void test_approval_ask_hangup(void **state)
{
	struct pty p;
	struct buf seen = BUF_INIT;
	size_t from = 0;
	pid_t pid;

	(void)state;
	pty_open(&p);
	pid = start_asker(&p, ASK_FD);
	pty_expect(&p, &seen, &from, "[y/a/N/e] ");
	/* the terminal goes away: the read fails, and that is no */
	close(p.master);
	p.master = -1;
	assert_int_equal(wait_answer(pid), 0);
	pty_close(&p);
	buf_release(&seen);
}

static void test_approval_typeahead_is_discarded(void **state)
{
	struct pty p;
	struct buf seen = BUF_INIT;
	struct pollfd pfd;
	size_t from = 0;
	int slave;
	pid_t pid;

	(void)state;
	pty_open(&p);
	slave = open(p.slave_path, O_RDWR | O_NOCTTY);
	assert_true(slave >= 0);
	/* "y" typed before the question: wait until the terminal holds it as a line */
	pty_type(&p, "y\n");
	pfd.fd = slave;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	pid = start_asker(&p, ASK_FD);
	pty_expect(&p, &seen, &from, "[y/a/N/e] ");
	pty_type(&p, "n\n");
	assert_int_equal(wait_answer(pid), 0);
	close(slave);
	pty_close(&p);
	buf_release(&seen);
}

static void test_approval_ask_tty_path_and_ctty(void **state)
{
	static const char *const yes[] = { "y\n" };
	static const char *const no[] = { "n\n" };
	struct buf seen = BUF_INIT;

	(void)state;
	assert_int_equal(converse(ASK_TTY_PATH, yes, 1, &seen), 1);
	buf_reset(&seen);
	assert_int_equal(converse(ASK_TTY_PATH, no, 1, &seen), 0);
	/* an approver in mode ask: /dev/tty is the child's own terminal */
	buf_reset(&seen);
	assert_int_equal(converse(ASK_CTTY, yes, 1, &seen), 1);
	assert_non_null(strstr(seen.buf, "$ pip install requests"));
	buf_reset(&seen);
	assert_int_equal(converse(ASK_CTTY, no, 1, &seen), 0);
	buf_release(&seen);
}

static void test_approval_no_terminal_is_no(void **state)
{
	int in[2], st;
	pid_t pid;

	(void)state;
	/* standard input says yes, but only a terminal may answer */
	assert_int_equal(pipe(in), 0);
	assert_int_equal(write(in[1], "y\ny\ny\n", 6), 6);
	close(in[1]);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int answer;

		dup2(in[0], 0);
		if (setsid() < 0)	/* a new session has no controlling terminal */
			_exit(3);
		answer = decide_pip();
		if (answer == 0 && !strstr(err_last(), "no terminal to ask for approval on"))
			_exit(4);
		_exit(answer);
	}
	close(in[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_approval_missing_tty_path(void **state)
{
	struct approve_tty t = { "/nonexistent/tty", NULL };

	assert_int_equal(ask_pip(-1, &t), 0);
	(void)state;
	assert_non_null(strstr(err_last(), "no terminal to ask for approval on (/nonexistent/tty)"));
}

/* ---- a, e, Ctrl-C: the whole answer ----------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct full {
	int verdict, interrupted, restored;
	char reason[1024];
};

/*
 * A child asks approve_tty_ask_fd() on the pty as its controlling
 * terminal (with ISIG on, as a shell leaves it, and a SIGINT handler
 * that would end it with 9); it reports the answer, and whether the
 * terminal's settings were put back, on a pipe.
 */
static pid_t start_full(struct pty *p, int *rfd, const char *cwd, int network)
{
	int pfd[2];
	pid_t pid;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static const char *const argv[] = { "pip", "install", "x" };
		struct approval_request rq = { APPROVAL_COMMAND, reason, argv, 3, cwd, network,
					       NULL, NULL, NULL };
		struct approval_answer a = APPROVAL_ANSWER_INIT;
		struct termios before, after;
		struct full f;
		int fd;

		close(pfd[0]);
		close(p->master);
		if (setsid() < 0)
			_exit(3);
		fd = open(p->slave_path, O_RDWR);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0 || tcgetattr(fd, &before) < 0)
			_exit(3);
		/* "\n" as written, so that the test sees what was written */
		before.c_oflag &= ~(tcflag_t)OPOST;
		if (tcsetattr(fd, TCSANOW, &before) < 0)
			_exit(3);
		signal(SIGINT, SIG_DFL);
		memset(&f, 0, sizeof(f));
		f.verdict = approve_tty_ask_fd(&a, fd, fd, &rq, NULL);
		f.interrupted = a.interrupted;
		if (a.reason)
			snprintf(f.reason, sizeof(f.reason), "%s", a.reason);
		f.restored = tcgetattr(fd, &after) == 0 && before.c_lflag == after.c_lflag &&
			     before.c_iflag == after.c_iflag &&
			     before.c_cc[VEOL] == after.c_cc[VEOL];
		approval_answer_release(&a);
		if (write(pfd[1], &f, sizeof(f)) != (ssize_t)sizeof(f))
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	*rfd = pfd[0];
	return pid;
}

static void finish_full(struct pty *p, pid_t pid, int rfd, struct buf *seen, struct full *f)
{
	int st;

	pty_drain(p, seen);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* a Ctrl-C never reached the process as SIGINT */
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(read(rfd, f, sizeof(*f)), (ssize_t)sizeof(*f));
	close(rfd);
	assert_true(f->restored);
}

/* Answer `first`, then (when not NULL) `second` after "Tell the model why: ". */
static void full_case(const char *first, const char *second, struct full *f, struct buf *seen)
{
	struct pty p;
	size_t from = 0;
	int rfd;
	pid_t pid;

	pty_open(&p);
	pid = start_full(&p, &rfd, "src/lib", 1);
	pty_expect(&p, seen, &from, "[y/a/N/e] ");
	pty_type(&p, first);
	if (second) {
		pty_expect(&p, seen, &from, "Tell the model why: ");
		pty_type(&p, second);
	}
	finish_full(&p, pid, rfd, seen, f);
	pty_close(&p);
}

static void test_approval_shows_folder_network_and_keys(void **state)
{
	struct buf seen = BUF_INIT;
	struct full f;

	(void)state;
	full_case("a\n", NULL, &f, &seen);
	assert_int_equal(f.verdict, APPROVE_ALWAYS);
	assert_non_null(strstr(seen.buf, "needs approval: Command 'pip' may access the network\n"
			       "  $ pip install x\n  in src/lib (of the workspace)\n"
			       "  approved, it runs with network access\n"));
	assert_non_null(strstr(seen.buf, "a: yes, and 'pip install' without asking"));
	assert_non_null(strstr(seen.buf, "e: no, and tell the model why"));
	buf_reset(&seen);
	full_case("always\n", NULL, &f, &seen);
	assert_int_equal(f.verdict, APPROVE_ALWAYS);
	buf_release(&seen);
}

static void test_approval_e_takes_a_reason(void **state)
{
	struct buf seen = BUF_INIT;
	struct full f;
	char long_reason[700];

	(void)state;
	full_case("e\n", "use the vendored copy\n", &f, &seen);
	assert_int_equal(f.verdict, APPROVE_NO);
	assert_false(f.interrupted);
	assert_string_equal(f.reason, "use the vendored copy");
	/* control characters are escaped */
	buf_reset(&seen);
	full_case("E\n", "  no \x1b[31mred\t \n", &f, &seen);
	assert_string_equal(f.reason, "no \\x1b[31mred");
	/* and the length is capped, on a character boundary */
	memset(long_reason, 'x', sizeof(long_reason));
	memcpy(long_reason + APPROVAL_REASON_MAX - 1, "\xc3\xa9", 2);
	long_reason[sizeof(long_reason) - 2] = '\n';
	long_reason[sizeof(long_reason) - 1] = '\0';
	buf_reset(&seen);
	full_case("e\n", long_reason, &f, &seen);
	assert_int_equal(strlen(f.reason), APPROVAL_REASON_MAX - 1 + 3);
	assert_string_equal(f.reason + APPROVAL_REASON_MAX - 1, "...");
	/* an empty reason is a plain no */
	buf_reset(&seen);
	full_case("e\n", "\n", &f, &seen);
	assert_int_equal(f.verdict, APPROVE_NO);
	assert_int_equal(f.reason[0], '\0');
	buf_release(&seen);
}

static void test_approval_ctrl_c_is_no_at_once(void **state)
{
	struct buf seen = BUF_INIT;
	struct pty p;
	struct full f;
	size_t from = 0;
	double t0;
	int rfd;
	pid_t pid;

	(void)state;
	pty_open(&p);
	pid = start_full(&p, &rfd, NULL, 0);
	pty_expect(&p, &seen, &from, "[y/a/N/e] ");
	/* half an answer, then ^C: no Enter needed */
	pty_type(&p, "y");
	t0 = now_s();
	pty_type(&p, "\x03");
	pty_expect(&p, &seen, &from, "Not run.\n");
	assert_true(now_s() - t0 < 2.0);
	finish_full(&p, pid, rfd, &seen, &f);
	assert_int_equal(f.verdict, APPROVE_NO);
	assert_true(f.interrupted);
	/* without a folder or network, neither line is shown */
	assert_null(strstr(seen.buf, "  in "));
	assert_null(strstr(seen.buf, "network access"));
	pty_close(&p);
	/* ^C while typing the reason: no, and no reason */
	buf_reset(&seen);
	full_case("e\n", "because\x03", &f, &seen);
	assert_int_equal(f.verdict, APPROVE_NO);
	assert_true(f.interrupted);
	assert_int_equal(f.reason[0], '\0');
	/* ^D: no */
	buf_reset(&seen);
	full_case("\x04", NULL, &f, &seen);
	assert_int_equal(f.verdict, APPROVE_NO);
	assert_false(f.interrupted);
	buf_release(&seen);
}

static volatile sig_atomic_t stop_flag;

static void on_alarm(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/*
 * A signal handler's flag (say SIGTERM's), the approver's cancel, ends the
 * question as no, without an answer.
 */
static void test_approval_cancel_flag_is_no(void **state)
{
	struct pty p;
	struct buf seen = BUF_INIT;
	size_t from = 0;
	double t0;
	int st;
	pid_t pid;

	(void)state;
	pty_open(&p);
	t0 = now_s();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct approval_request rq = { APPROVAL_COMMAND, reason, pip, 3, NULL, 0,
					       NULL, NULL, NULL };
		struct approval_answer a = APPROVAL_ANSWER_INIT;
		struct approve_tty t = { p.slave_path, NULL };
		struct approver ap;
		struct sigaction sa;

		close(p.master);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;	/* the flag alone must be enough */
		sigaction(SIGALRM, &sa, NULL);
		approver_init(&ap, approve_tty_ask, &t, &stop_flag);
		alarm(1);
		if (approver_decide(&ap, &a, APPROVAL_ASK, &rq) != APPROVE_NO || !a.interrupted)
			_exit(5);
		_exit(0);
	}
	pty_expect(&p, &seen, &from, "[y/a/N/e] ");
	pty_drain(&p, &seen);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(now_s() - t0 < 4.0);
	pty_close(&p);
	buf_release(&seen);
}

/* An MCP tool call: what it is, its arguments, and the keys; `a` means this tool. */
static void test_approval_mcp_tool_question(void **state)
{
	struct pty p;
	struct buf seen = BUF_INIT;
	size_t from = 0;
	int st;
	pid_t pid;

	(void)state;
	pty_open(&p);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct approval_request rq = { APPROVAL_MCP_TOOL, "every MCP tool call is approved",
					       NULL, 0, NULL, 0, "docs__search",
					       "the MCP tool search (server docs)",
					       "arguments: {\"q\":\"x\x1b[2J\"}" };
		struct approval_answer a = APPROVAL_ANSWER_INIT;
		int fd;

		close(p.master);
		fd = open(p.slave_path, O_RDWR | O_NOCTTY);
		if (fd < 0)
			_exit(3);
		if (approve_tty_ask_fd(&a, fd, fd, &rq, NULL) != APPROVE_ALWAYS)
			_exit(5);
		_exit(0);
	}
	pty_expect(&p, &seen, &from, "[y/a/N/e] ");
	pty_type(&p, "a\n");
	pty_drain(&p, &seen);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_non_null(strstr(seen.buf, "forgex: the MCP tool search (server docs) needs approval: "
			       "every MCP tool call is approved"));
	/* the arguments cannot redraw the terminal */
	assert_non_null(strstr(seen.buf, "arguments: {\"q\":\"x\\x1b[2J\"}"));
	assert_non_null(strstr(seen.buf, "a: yes, and this tool without asking"));
	pty_close(&p);
	buf_release(&seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_approval_ask_yes),
		cmocka_unit_test(test_approval_ask_no),
		cmocka_unit_test(test_approval_ask_garbage),
		cmocka_unit_test(test_approval_ask_eof),
		cmocka_unit_test(test_approval_ask_hangup),
		cmocka_unit_test(test_approval_typeahead_is_discarded),
		cmocka_unit_test(test_approval_ask_tty_path_and_ctty),
		cmocka_unit_test(test_approval_no_terminal_is_no),
		cmocka_unit_test(test_approval_missing_tty_path),
		cmocka_unit_test(test_approval_shows_folder_network_and_keys),
		cmocka_unit_test(test_approval_e_takes_a_reason),
		cmocka_unit_test(test_approval_ctrl_c_is_no_at_once),
		cmocka_unit_test(test_approval_cancel_flag_is_no),
		cmocka_unit_test(test_approval_mcp_tool_question),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("cli/approve_tty", tests, NULL, NULL);
}

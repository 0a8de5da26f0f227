/*
 * The session's line editor, driven as a person drives it: lineedit_read()
 * runs in a child on a real pseudo-terminal, the test types bytes into the
 * master side (arrow keys, Home/End, Ctrl-R, Tab, Alt-Enter, Ctrl-C...)
 * and gets each result back, byte for byte, over a pipe.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#include "base/buf.h"
#include "base/err.h"
#include "base/termsafe.h"
#include "cli/lineedit.h"
#include "helpers/testutil.h"

#define PROMPT "P> "
#define TIMEOUT_MS 20000	/* the machine is shared: generous */

static const char *const commands[] = { "/run", "/plan", "/exit", "/help", NULL };

struct cfg {
	const char *history;	/* history_path */
	size_t history_max;
	const char *workspace;
	const char *cwd;
	int plain;		/* read from a pipe instead of the terminal */
	int add;		/* lineedit_history_add() every line */
	int cancel_on_usr1;	/* SIGUSR1 sets the cancel flag */
	const char *term;	/* TERM (default xterm) */
};

struct kid {
	pid_t pid;
	int master;		/* the terminal's other side */
	int res;		/* results from the child */
	int in;			/* plain: the pipe the child reads */
	struct buf out;		/* what the child showed on the terminal */
	struct buf frames;	/* results not yet taken */
	int mode;		/* the terminal after the last result: cooked() */
	int dropped;		/* lineedit_dropped() after it */
};

static volatile sig_atomic_t kid_cancel;

static void kid_on_usr1(int sig)
{
	(void)sig;
	kid_cancel = 1;
}

/* Whether terminal `fd` is in its normal mode (1), raw (0); -1: none. */
static int cooked(int fd)
{
	struct termios t;

	if (fd < 0 || tcgetattr(fd, &t) < 0)
		return -1;
	return (t.c_lflag & (ICANON | ISIG | ECHO)) == (ICANON | ISIG | ECHO);
}

static void put_frame(int fd, int rc, const char *s, size_t n, int mode, int dropped)
{
	char head[64];
	int k = snprintf(head, sizeof(head), "R %d %zu %d %d\n", rc, n, mode, dropped);

	if (write(fd, head, (size_t)k) < 0 || (n && write(fd, s, n) < 0))
		_exit(3);
}

static FX_NORETURN void kid_main(const struct cfg *cfg, int resfd, int infd)
{
	struct lineedit_opts o = LINEEDIT_OPTS_INIT;
	struct lineedit *le;
	struct buf line = BUF_INIT;
	int rc;

	setenv("TERM", cfg->term ? cfg->term : "xterm", 1);
	if (cfg->cwd && chdir(cfg->cwd) < 0)
		_exit(4);
	if (cfg->cancel_on_usr1) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = kid_on_usr1;
		sa.sa_flags = SA_RESTART;	/* as a session's handler may be */
		sigaction(SIGUSR1, &sa, NULL);
		o.cancel = &kid_cancel;
	}
	o.in_fd = cfg->plain ? infd : 0;
	o.out_fd = 1;
	o.history_path = cfg->history;
	o.history_max = cfg->history_max;
	o.commands = commands;
	o.workspace = cfg->workspace;
	if (lineedit_open(&le, &o) < 0) {
		put_frame(resfd, -100, err_last(), strlen(err_last()), 0, 0);
		_exit(5);
	}
	for (;;) {
		/* a cancel that came before the read counts for it: cleared once used */
		rc = lineedit_read(le, PROMPT, &line);
		if (rc == LINEEDIT_INTERRUPT)
			kid_cancel = 0;
		put_frame(resfd, rc, line.buf, line.len, cooked(cfg->plain ? -1 : 0),
			  lineedit_dropped(le));
		if (rc == LINEEDIT_LINE && cfg->add)
			lineedit_history_add(le, line.buf);
		if (rc != LINEEDIT_LINE && rc != LINEEDIT_INTERRUPT)
			break;
	}
	lineedit_close(le);
	buf_release(&line);
#ifdef __SANITIZE_ADDRESS__
	__lsan_do_leak_check();	/* _exit() skips it; a leak makes the exit status non-zero */
#endif
	_exit(0);
}

static void kid_drain(struct kid *k);

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void kid_start(struct kid *k, const struct cfg *cfg)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	int rp[2], ip[2] = { -1, -1 };

	memset(k, 0, sizeof(*k));
	buf_init(&k->out, 0);
	buf_init(&k->frames, 0);
	assert_int_equal(pipe(rp), 0);
	if (cfg->plain)
		assert_int_equal(pipe(ip), 0);
	k->pid = forkpty(&k->master, NULL, NULL, &ws);
	assert_true(k->pid >= 0);
	if (k->pid == 0) {
		close(rp[0]);
		if (ip[1] >= 0)
			close(ip[1]);
		kid_main(cfg, rp[1], ip[0]);
	}
	close(rp[1]);
	k->res = rp[0];
	k->in = -1;
	if (cfg->plain) {
		close(ip[0]);
		k->in = ip[1];
	}
}

/* Read what is there (the terminal's output and results) for up to `ms`. */
static void kid_pump(struct kid *k, int ms)
{
	struct pollfd p[2] = { { .fd = k->master, .events = POLLIN },
			       { .fd = k->res, .events = POLLIN } };
	char b[4096];
	ssize_t n;

	if (poll(p, 2, ms) <= 0)
		return;
	if (p[0].revents & (POLLIN | POLLHUP)) {
		n = read(k->master, b, sizeof(b));
		if (n > 0)
			buf_add(&k->out, b, (size_t)n);
	}
	if (p[1].revents & (POLLIN | POLLHUP)) {
		n = read(k->res, b, sizeof(b));
		if (n > 0)
			buf_add(&k->frames, b, (size_t)n);
	}
}

/* The next result: its code, and its text in `text` (reset first). */
static int kid_result(struct kid *k, struct buf *text)
{
	long end = now_ms() + TIMEOUT_MS;

	buf_reset(text);
	while (now_ms() < end) {
		char *nl = memchr(k->frames.buf, '\n', k->frames.len);
		int rc;
		size_t n, head;

		if (nl && sscanf(k->frames.buf, "R %d %zu %d %d", &rc, &n, &k->mode,
				 &k->dropped) == 4) {
			head = (size_t)(nl - k->frames.buf) + 1;
			if (k->frames.len >= head + n) {
				buf_add(text, k->frames.buf + head, n);
				memmove(k->frames.buf, k->frames.buf + head + n,
					k->frames.len - head - n);
				buf_setlen(&k->frames, k->frames.len - head - n);
				return rc;
			}
		}
		kid_pump(k, 20);
	}
	fail_msg("no result from the child in %d ms; terminal showed: %s", TIMEOUT_MS, k->out.buf);
	return -1000;
}

/* Wait until the child edits (its terminal is raw, without ISIG). */
static void kid_wait_edit(struct kid *k)
{
	long end = now_ms() + TIMEOUT_MS;
	struct termios t;

	while (now_ms() < end) {
		if (tcgetattr(k->master, &t) == 0 && !(t.c_lflag & ICANON) && !(t.c_lflag & ISIG))
			return;
		kid_pump(k, 5);
	}
	fail_msg("the child never started editing; terminal showed: %s", k->out.buf);
}

/*
 * Take what the terminal showed so far: the child wrote all of a read's
 * output before its result, so after a result it is all in the pty.
 */
static void kid_drain(struct kid *k)
{
	for (;;) {
		struct pollfd p = { .fd = k->master, .events = POLLIN };
		char b[4096];
		ssize_t n;

		if (poll(&p, 1, 20) <= 0 || !(p.revents & POLLIN))
			return;
		n = read(k->master, b, sizeof(b));
		if (n <= 0)
			return;
		buf_add(&k->out, b, (size_t)n);
	}
}

/* Wait until the terminal showed `s` (since the start). */
static void kid_wait_output(struct kid *k, const char *s)
{
	long end = now_ms() + TIMEOUT_MS;

	while (!strstr(k->out.buf, s) && now_ms() < end)
		kid_pump(k, 10);
	if (!strstr(k->out.buf, s))
		fail_msg("the terminal never showed '%s': %s", s, k->out.buf);
}

static void kid_type(struct kid *k, const char *keys)
{
	size_t n = strlen(keys);

	kid_wait_edit(k);
	assert_int_equal(write(k->master, keys, n), (ssize_t)n);
}

/* Type `keys` at a fresh prompt and expect a line `want`. */
static void expect_line(struct kid *k, const char *keys, const char *want)
{
	struct buf got = BUF_INIT;

	int rc;

	kid_type(k, keys);
	rc = kid_result(k, &got);
	if (rc != LINEEDIT_LINE || got.len != strlen(want) || memcmp(got.buf, want, got.len)) {
		char *g = termsafe_dup(got.buf, 0), *w = termsafe_dup(want, 0);
		char *ks = termsafe_dup(keys, 0);

		fail_msg("keys \"%s\": got %d \"%s\", want \"%s\"", ks, rc, g, w);
	}
	buf_release(&got);
}

static int kid_reap(struct kid *k)
{
	int st = 0;
	long end = now_ms() + TIMEOUT_MS;

	for (;;) {
		pid_t r = waitpid(k->pid, &st, WNOHANG);

		if (r == k->pid || r < 0)
			break;
		if (now_ms() > end) {
			kill(k->pid, SIGKILL);
			waitpid(k->pid, &st, 0);
			fail_msg("the child did not end");
		}
		kid_pump(k, 10);
	}
	kid_pump(k, 0);
	return st;
}

static int kid_end(struct kid *k)
{
	int st = kid_reap(k);

	kid_drain(k);
	close(k->master);
	close(k->res);
	if (k->in >= 0)
		close(k->in);
	buf_release(&k->frames);
	return st;
}

/* Ctrl-D at an empty prompt, then the child ends. */
static void kid_quit(struct kid *k)
{
	struct buf got = BUF_INIT;
	int st;

	kid_type(k, "\004");
	assert_int_equal(kid_result(k, &got), LINEEDIT_EOF);
	st = kid_end(k);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the child ended with status %#x; its terminal showed:\n%s", st, k->out.buf);
	buf_release(&got);
	buf_release(&k->out);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	const char *p = hay;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

/* -- editing ------------------------------------------------------------- */

static void test_lineedit_typing_and_edit_keys(void **state)
{
	struct cfg cfg = { 0 };
	struct kid k;

	(void)state;
	kid_start(&k, &cfg);
	expect_line(&k, "hello world\r", "hello world");
	/* Left, Right; the escape bytes of the keys are keys, not text */
	expect_line(&k, "helo\033[Dl\033[C!\r", "hello!");
	expect_line(&k, "helo\033OD\033ODl\r", "hello");
	/* Home / End in their xterm, vt and application forms */
	expect_line(&k, "world\033[Hhello \033[F!\r", "hello world!");
	expect_line(&k, "b\033[1~a\033[4~c\r", "abc");
	expect_line(&k, "b\033OHa\033OFc\r", "abc");
	/* Ctrl-A / Ctrl-E, Delete, Ctrl-D inside a line deletes */
	expect_line(&k, "yz\001x\005!\r", "xyz!");
	expect_line(&k, "abXc\033[D\033[D\033[3~\r", "abc");
	expect_line(&k, "xab\001\004\r", "ab");
	/* words and cutting, as docs/usage.md lists them */
	expect_line(&k, "one two\033[1;5Dx\r", "one xtwo");
	expect_line(&k, "one two\033bx\033fy\r", "one xtwoy");
	expect_line(&k, "foo bar\027baz\r", "foo baz");
	expect_line(&k, "one two\025three\r", "three");
	expect_line(&k, "abc\001\013xyz\r", "xyz");
	expect_line(&k, "abc\001\013\031\031\r", "abcabc");
	/* Ctrl-Z (the test's child cannot stop: orphaned) leaves the line as it was */
	expect_line(&k, "ab\032c\r", "abc");
	/* keys with no meaning here are swallowed whole */
	expect_line(&k, "a\033[5~\033[6~\033OP\033[15~\033[2~b\r", "ab");
	/* Ctrl-V ESC would put a raw ESC in the line: it is dropped */
	expect_line(&k, "a\026\033b\r", "ab");
	/* UTF-8 is kept, whatever the locale of the test */
	expect_line(&k, "caf\xc3\xa9 \xe2\x86\x92 ok\033[D\033[D\033[D\033[D\033[D\033[C!\r",
		    "caf\xc3\xa9 !\xe2\x86\x92 ok");
	kid_quit(&k);
}

static void test_lineedit_ctrl_c_and_ctrl_d(void **state)
{
	struct cfg cfg = { 0 };
	struct buf got = BUF_INIT;
	struct kid k;

	(void)state;
	kid_start(&k, &cfg);
	/* Ctrl-C without Enter: INTERRUPT at once, the line dropped */
	kid_type(&k, "half a line\003");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	assert_int_equal(got.len, 0);
	/* ... and the terminal is back in its normal mode */
	assert_int_equal(k.mode, 1);
	assert_int_equal(k.dropped, 1);
	/* the next entry does not carry the dropped text */
	expect_line(&k, "next\r", "next");
	/* Ctrl-C at an empty prompt: INTERRUPT too (the caller decides to leave) */
	kid_type(&k, "\003");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	assert_int_equal(k.dropped, 0);
	/* typed and erased again: the prompt is empty */
	kid_type(&k, "ab\177\177\003");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	assert_int_equal(k.dropped, 0);
	kid_quit(&k);
	buf_release(&got);
}

static void test_lineedit_multiline(void **state)
{
	struct cfg cfg = { 0 };
	struct buf got = BUF_INIT;
	struct kid k;

	(void)state;
	kid_start(&k, &cfg);
	/* Alt-Enter (ESC CR and ESC LF) puts a newline at the cursor */
	expect_line(&k, "one\033\rtwo\033\nthree\r", "one\ntwo\nthree");
	expect_line(&k, "ac\033[D\033\r\r", "a\nc");
	/* a bracketed paste is text: its newlines (CR, CR LF) do not submit */
	expect_line(&k, "say \033[200~line one\rline two\r\nend\033[A\033[20x\033[201~!\r",
		    "say line one\nline two\nend[A[20x!");
	/* a paste that never ends: Ctrl-C still gets out */
	kid_type(&k, "\033[200~stuck\003");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	kid_drain(&k);
	assert_non_null(strstr(k.out.buf, "\033[?2004h"));
	assert_non_null(strstr(k.out.buf, "\033[?2004l"));
	kid_quit(&k);
	buf_release(&got);
}

static void test_lineedit_backslash_continuation(void **state)
{
	struct cfg cfg = { 0 };
	struct buf got = BUF_INIT;
	struct kid k;
	long end;

	(void)state;
	kid_start(&k, &cfg);
	kid_type(&k, "first \\\r");
	/* the continuation prompt shows before the next line is typed */
	end = now_ms() + TIMEOUT_MS;
	while (!strstr(k.out.buf, "... ") && now_ms() < end)
		kid_pump(&k, 20);
	assert_non_null(strstr(k.out.buf, "... "));
	kid_type(&k, "second\\\r");
	kid_type(&k, "third\r");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
	assert_string_equal(got.buf, "first \nsecond\nthird");
	/* an escaped backslash does not continue */
	expect_line(&k, "a\\\\\r", "a\\\\");
	/* Ctrl-D on an empty continuation line sends what was gathered */
	kid_type(&k, "p\\\r");
	kid_type(&k, "\004");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
	assert_string_equal(got.buf, "p");
	/* Ctrl-C on a continuation line drops the whole entry */
	kid_type(&k, "x\\\r");
	kid_type(&k, "y\003");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	expect_line(&k, "z\r", "z");
	kid_quit(&k);
	buf_release(&got);
}

/* -- history --------------------------------------------------------------- */

static void test_lineedit_history_across_sessions(void **state)
{
	char *ws = tu_mkdtemp();
	char *path = xstrfmt("%s/.forgex/history", ws);
	struct cfg cfg = { .history = path, .add = 1 };
	struct stat st;
	struct kid k;
	char *file;

	(void)state;
	kid_start(&k, &cfg);
	expect_line(&k, "first entry\r", "first entry");
	expect_line(&k, "second\r", "second");
	expect_line(&k, "multi\033\rline \\back\r", "multi\nline \\back");
	expect_line(&k, "second\r", "second");	/* same as an older one: kept */
	expect_line(&k, "second\r", "second");	/* same as the last: not again */
	kid_quit(&k);

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	file = tu_read(ws, ".forgex/history");
	assert_string_equal(file, "first entry\nsecond\nmulti\\nline \\\\back\nsecond\n");
	free(file);

	/* a new session: Up recalls from the file, multi-line whole */
	cfg.add = 0;
	kid_start(&k, &cfg);
	expect_line(&k, "\033[A\r", "second");
	expect_line(&k, "\033[A\033[A\r", "multi\nline \\back");
	expect_line(&k, "\033[A\033[A\033[A\033[A\r", "first entry");
	/* Down comes back; application-mode arrows too */
	expect_line(&k, "\033OA\033OA\033OA\033[B\r", "multi\nline \\back");
	/* Ctrl-R finds an entry by a piece of it; Enter takes it */
	expect_line(&k, "\022irst\r", "first entry");
	expect_line(&k, "\022ine \r", "multi\nline \\back");
	/* Ctrl-R, then an edit key ends the search and edits the found line */
	expect_line(&k, "\022sec\033[F!\r", "second!");
	kid_quit(&k);
	free(path);
	tu_rmtree(ws);
}

static void expect_refused(const char *ws, const char *path, const char *why)
{
	struct cfg cfg = { .history = path, .add = 1 };
	struct kid k;

	kid_start(&k, &cfg);
	expect_line(&k, "one\r", "one");
	expect_line(&k, "two\r", "two");
	/* in memory, Up still works */
	expect_line(&k, "\033[A\033[A\r", "one");
	kid_type(&k, "\004");
	{
		struct buf got = BUF_INIT;

		assert_int_equal(kid_result(&k, &got), LINEEDIT_EOF);
		buf_release(&got);
	}
	kid_end(&k);
	/* said once, with the reason */
	assert_int_equal(count(k.out.buf, "history is kept in memory only"), 1);
	if (!strstr(k.out.buf, why))
		fail_msg("no '%s' in: %s", why, k.out.buf);
	buf_release(&k.out);
	(void)ws;
}

static void test_lineedit_history_refuses_links_and_fifos(void **state)
{
	char *ws = tu_mkdtemp(), *outside = tu_outside_mkdtemp();
	char *victim = xstrfmt("%s/bashrc", outside), *path = xstrfmt("%s/.forgex/history", ws);
	char *link_dir = xstrfmt("%s/.forgex", ws), *content;
	struct stat st;

	(void)state;
	tu_write(outside, "bashrc", "ORIGINAL\n");
	assert_int_equal(mkdir(link_dir, 0755), 0);
	/* a cloned repository's .forgex/history as a link to ~/.bashrc */
	assert_int_equal(symlink(victim, path), 0);
	expect_refused(ws, path, "symbolic link");
	content = tu_read(outside, "bashrc");
	assert_string_equal(content, "ORIGINAL\n");
	free(content);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));

	/* a FIFO: never waited on, never written */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	expect_refused(ws, path, "named pipe");

	/* a hard link to the victim */
	assert_int_equal(unlink(path), 0);
	if (link(victim, path) == 0) {
		expect_refused(ws, path, "hard links");
		content = tu_read(outside, "bashrc");
		assert_string_equal(content, "ORIGINAL\n");
		free(content);
		unlink(path);
	}

	/* another user's file (a root test can make one) */
	if (geteuid() == 0) {
		tu_write(ws, ".forgex/history", "theirs\n");
		assert_int_equal(chown(path, 65534, 65534), 0);
		expect_refused(ws, path, "belongs to another user");
		content = tu_read(ws, ".forgex/history");
		assert_string_equal(content, "theirs\n");
		free(content);
		unlink(path);
	}

	/* .forgex itself a link to somewhere else: nothing made there */
	assert_int_equal(rmdir(link_dir), 0);
	assert_int_equal(symlink(outside, link_dir), 0);
	expect_refused(ws, path, "symbolic link");
	{
		char *p = xstrfmt("%s/history", outside);

		assert_int_not_equal(lstat(p, &st), 0);
		free(p);
	}
	content = tu_read(outside, "bashrc");
	assert_string_equal(content, "ORIGINAL\n");
	free(content);

	free(victim);
	free(path);
	free(link_dir);
	tu_rmtree(ws);
	tu_rmtree(outside);
}

static void test_lineedit_history_huge_file_is_bounded(void **state)
{
	char *ws = tu_mkdtemp();
	char *path = xstrfmt("%s/.forgex/history", ws);
	struct cfg cfg = { .history = path, .history_max = 50, .add = 1 };
	struct buf big = BUF_INIT;
	struct kid k;
	char *file;
	size_t lines = 0;
	int i;

	(void)state;
	/* 4 MiB of entries, a NUL, a ESC and a line with no end */
	for (i = 0; big.len < 4 * 1024 * 1024; i++)
		buf_addf(&big, "entry %d\n", i);
	buf_addstr(&big, "bad\033[31m red\n");
	buf_addstr(&big, "newest");
	tu_write(ws, ".forgex/history", big.buf);
	kid_start(&k, &cfg);
	expect_line(&k, "\033[A\r", "newest");
	expect_line(&k, "\033[A\033[A\r", "bad[31m red");
	{
		char *want = xstrfmt("entry %d", i - 1);

		expect_line(&k, "\033[A\033[A\033[A\033[A\r", want);
		free(want);
	}
	kid_quit(&k);
	/* compacted to the newest 50 (+ what this session added) */
	file = tu_read(ws, ".forgex/history");
	for (char *p = file; (p = strchr(p, '\n')); p++)
		lines++;
	assert_true(lines <= 50 + 3);
	assert_true(lines >= 50);
	assert_null(strstr(file, "\033"));
	free(file);
	buf_release(&big);
	free(path);
	tu_rmtree(ws);
}

static void test_lineedit_history_compacts_as_it_grows(void **state)
{
	char *ws = tu_mkdtemp();
	char *path = xstrfmt("%s/.forgex/history", ws);
	struct cfg cfg = { .history = path, .history_max = 3, .add = 1 };
	struct kid k;
	char *file;
	int i;

	(void)state;
	kid_start(&k, &cfg);
	for (i = 1; i <= 7; i++) {
		char *keys = xstrfmt("e%d\r", i), *want = xstrfmt("e%d", i);

		expect_line(&k, keys, want);
		free(keys);
		free(want);
	}
	kid_quit(&k);
	/* past 2 x 3 entries (the 7th) the file was rewritten with the newest 3 */
	file = tu_read(ws, ".forgex/history");
	assert_string_equal(file, "e5\ne6\ne7\n");
	free(file);
	/* and only the newest 3 come back */
	cfg.add = 0;
	kid_start(&k, &cfg);
	expect_line(&k, "\033[A\033[A\033[A\033[A\033[A\r", "e5");
	kid_quit(&k);
	free(path);
	tu_rmtree(ws);
}

/* -- completion ------------------------------------------------------------ */

static void test_lineedit_tab_completion(void **state)
{
	/* the workspace inside a folder with a secret next to it */
	char *outside = tu_outside_mkdtemp(), *ws = xstrfmt("%s/ws", outside);
	char *link = xstrfmt("%s/out", ws);
	struct cfg cfg;
	struct kid k;
	size_t at;

	(void)state;
	tu_write(ws, "src/main.c", "");
	tu_write(ws, "src/util.c", "");
	tu_write(ws, "README.md", "");
	tu_write(ws, "docs/usage.md", "");
	tu_write(ws, ".hidden", "");
	tu_write(outside, "secret.txt", "");
	tu_write(outside, "sub/secret2.txt", "");
	assert_int_equal(symlink(outside, link), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.workspace = ws;
	cfg.cwd = ws;
	kid_start(&k, &cfg);
	/* slash commands */
	expect_line(&k, "/pl\t\r", "/plan ");
	expect_line(&k, "/e\tnow\r", "/exit now");
	/* paths: a file gets a space, a folder its '/' */
	expect_line(&k, "cat RE\t\r", "cat README.md ");
	expect_line(&k, "see src/ma\t\r", "see src/main.c ");
	expect_line(&k, "do\tu\t\r", "docs/usage.md ");
	/* a word in the middle of a line */
	expect_line(&k, "open \t\r", "open ");
	/* ambiguous: first Tab adds nothing, the second lists */
	at = k.out.len;
	expect_line(&k, "src/\t\t\r", "src/");
	kid_drain(&k);
	assert_non_null(strstr(k.out.buf + at, "main.c"));
	assert_non_null(strstr(k.out.buf + at, "util.c"));
	/* a link is offered as a name, never followed out */
	expect_line(&k, "ou\t\r", "out ");
	at = k.out.len;
	expect_line(&k, "out/\t\t\r", "out/");
	kid_drain(&k);
	assert_null(strstr(k.out.buf + at, "secret"));
	/* nothing above the workspace */
	at = k.out.len;
	expect_line(&k, "../\t\t\r", "../");
	expect_line(&k, "src/../../\t\t\r", "src/../../");
	expect_line(&k, "../se\t\r", "../se");
	expect_line(&k, "out/se\t\r", "out/se");
	expect_line(&k, "out/su\t\r", "out/su");
	kid_drain(&k);
	assert_null(strstr(k.out.buf + at, "secret"));
	/* an absolute path is completed only inside the workspace too */
	{
		char *keys = xstrfmt("%s/se\t\r", outside), *want = xstrfmt("%s/se", outside);

		expect_line(&k, keys, want);
		free(keys);
		free(want);
		keys = xstrfmt("%s/REA\t\r", ws);
		want = xstrfmt("%s/README.md ", ws);
		expect_line(&k, keys, want);
		free(keys);
		free(want);
	}
	/* inside, ".." that stays in is fine */
	expect_line(&k, "src/../REA\t\r", "src/../README.md ");
	/* dot files only when asked for */
	expect_line(&k, ".hi\t\r", ".hidden ");
	kid_quit(&k);
	free(link);
	free(ws);
	tu_rmtree(outside);
}

/* -- signals, terminal, plain input ------------------------------------- */

static void test_lineedit_sigterm_restores_terminal(void **state)
{
	struct cfg cfg = { 0 };
	struct termios t;
	struct kid k;
	int st;

	(void)state;
	kid_start(&k, &cfg);
	kid_type(&k, "typing");
	kill(k.pid, SIGTERM);
	st = kid_reap(&k);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGTERM);
	/* the terminal was put back before the child died */
	assert_int_equal(tcgetattr(k.master, &t), 0);
	assert_true(t.c_lflag & ICANON);
	assert_true(t.c_lflag & ISIG);
	assert_true(t.c_lflag & ECHO);
	kid_end(&k);
	buf_release(&k.out);
}

static void test_lineedit_cancel_flag_and_resize(void **state)
{
	struct cfg cfg = { .cancel_on_usr1 = 1 };
	struct winsize ws = { .ws_row = 10, .ws_col = 20 };
	struct buf got = BUF_INIT;
	struct kid k;

	(void)state;
	kid_start(&k, &cfg);
	/*
	 * A resize while editing: libedit learns the new width at once (with
	 * xterm's terminfo it wraps at the last column with " \b"), and
	 * nothing typed changes. At 80 columns there is no wrap.
	 */
	expect_line(&k, "abcxxxxxxxxxxxxxxxxxxxxxxxxxxx\r", "abcxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	kid_drain(&k);
	assert_null(strstr(k.out.buf, " \b"));
	kid_type(&k, "abc");
	kid_wait_output(&k, "P> abc");
	assert_int_equal(ioctl(k.master, TIOCSWINSZ, &ws), 0);
	kid_pump(&k, 200);
	kid_type(&k, "xxxxxxxxxxxxxxxxxxxxxxxxxxx\r");
	assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
	assert_string_equal(got.buf, "abcxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	kid_drain(&k);
	/* the prompt (3) and 17 characters fill the 20 columns */
	assert_non_null(strstr(k.out.buf, "abcxxxxxxxxxxxxxx \b"));
	/* the caller's handler sets the cancel flag: the read ends at once */
	kid_type(&k, "xyz");
	kid_wait_output(&k, "xyz");
	kill(k.pid, SIGUSR1);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	assert_int_equal(k.mode, 1);
	assert_int_equal(k.dropped, 1);
	expect_line(&k, "after\r", "after");
	kid_quit(&k);
	buf_release(&got);
}

static void test_lineedit_plain_input(void **state)
{
	static const char input[] = "hello\n/exit\nfoo \\\nbar\r\n\033[Aesc\n\n"
				    "last, with no newline \\";
	struct cfg cfg = { .plain = 1 };
	static const char *const want[] = { "hello", "/exit", "foo \nbar", "[Aesc", "",
					    "last, with no newline " };
	struct buf got = BUF_INIT;
	struct kid k;
	size_t i;
	int st;

	(void)state;
	kid_start(&k, &cfg);
	assert_int_equal(write(k.in, input, sizeof(input) - 1), (ssize_t)sizeof(input) - 1);
	close(k.in);
	k.in = -1;
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
		assert_string_equal(got.buf, want[i]);
	}
	assert_int_equal(kid_result(&k, &got), LINEEDIT_EOF);
	st = kid_end(&k);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* no prompt and no editor on a pipe */
	assert_null(strstr(k.out.buf, PROMPT));
	assert_null(strchr(k.out.buf, '\033'));
	buf_release(&got);
	buf_release(&k.out);
}

/* A terminal that cannot move the cursor: the terminal's own line editing. */
static void test_lineedit_dumb_terminal(void **state)
{
	struct cfg cfg = { .term = "dumb", .cancel_on_usr1 = 1 };
	struct buf got = BUF_INIT;
	struct termios t;
	struct kid k;
	long end;

	(void)state;
	kid_start(&k, &cfg);
	kid_wait_output(&k, PROMPT);
	/* cooked: the kernel's erase works, no escape sequence is sent */
	assert_int_equal(tcgetattr(k.master, &t), 0);
	assert_true(t.c_lflag & ICANON);
	assert_int_equal(write(k.master, "helo\177lo\r", 8), 8);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
	assert_string_equal(got.buf, "hello");
	assert_int_equal(write(k.master, "a \\\rb\r", 6), 6);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
	assert_string_equal(got.buf, "a \nb");
	/* Ctrl-C is the terminal's SIGINT; the caller's handler cancels */
	end = now_ms() + 200;
	while (now_ms() < end)
		kid_pump(&k, 20);
	kill(k.pid, SIGUSR1);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	assert_int_equal(write(k.master, "\004", 1), 1);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_EOF);
	kid_end(&k);
	assert_null(strchr(k.out.buf, '\033'));
	buf_release(&got);
	buf_release(&k.out);
}

static void test_lineedit_plain_cancel(void **state)
{
	struct cfg cfg = { .plain = 1, .cancel_on_usr1 = 1 };
	struct buf got = BUF_INIT;
	struct kid k;
	long end;

	(void)state;
	kid_start(&k, &cfg);
	assert_int_equal(write(k.in, "part", 4), 4);
	/* the SA_RESTART handler would restart a read(); the wait still ends */
	end = now_ms() + 300;
	while (now_ms() < end)
		kid_pump(&k, 20);
	kill(k.pid, SIGUSR1);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_INTERRUPT);
	assert_int_equal(write(k.in, "ial\n", 4), 4);
	assert_int_equal(kid_result(&k, &got), LINEEDIT_LINE);
	assert_string_equal(got.buf, "partial");
	close(k.in);
	k.in = -1;
	assert_int_equal(kid_result(&k, &got), LINEEDIT_EOF);
	kid_end(&k);
	buf_release(&got);
	buf_release(&k.out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lineedit_typing_and_edit_keys),
		cmocka_unit_test(test_lineedit_ctrl_c_and_ctrl_d),
		cmocka_unit_test(test_lineedit_multiline),
		cmocka_unit_test(test_lineedit_backslash_continuation),
		cmocka_unit_test(test_lineedit_history_across_sessions),
		cmocka_unit_test(test_lineedit_history_refuses_links_and_fifos),
		cmocka_unit_test(test_lineedit_history_huge_file_is_bounded),
		cmocka_unit_test(test_lineedit_history_compacts_as_it_grows),
		cmocka_unit_test(test_lineedit_tab_completion),
		cmocka_unit_test(test_lineedit_sigterm_restores_terminal),
		cmocka_unit_test(test_lineedit_cancel_flag_and_resize),
		cmocka_unit_test(test_lineedit_plain_input),
		cmocka_unit_test(test_lineedit_plain_cancel),
		cmocka_unit_test(test_lineedit_dumb_terminal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

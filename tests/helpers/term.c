/*
 * A terminal with forgex on it, for end-to-end tests of the session: the
 * real binary as the leader of a new session whose controlling terminal is
 * a pseudo-terminal, typed at key by key, against build/mockllm (see
 * term.h for the contract of each function).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/term.h"

void term_pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* JSON written with single quotes, for readable scripts (caller frees). */
char *term_sq(const char *s)
{
	char *d = xstrdup(s), *p;

	for (p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

/*
 * A terminal with forgex on it
 */

/* forgex of the running test, killed by the teardown if the test fails. */
static pid_t live_pid;

/*
 * The text from `from` on, printable: escapes shown as \e, \r dropped, and
 * the terminal mode switches a person does not see (\e[?2004h, bracketed
 * paste on, and the like) left out (caller frees).
 */
char *term_shown(const struct term *t, size_t from)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = from; i < t->out.len; i++) {
		unsigned char c = (unsigned char)t->out.buf[i];

		if (c == '\033' && i + 2 < t->out.len && t->out.buf[i + 1] == '[' &&
		    t->out.buf[i + 2] == '?') {
			size_t k = i + 3;

			while (k < t->out.len && (isdigit((unsigned char)t->out.buf[k]) ||
						  t->out.buf[k] == ';'))
				k++;
			if (k < t->out.len && (t->out.buf[k] == 'h' || t->out.buf[k] == 'l')) {
				i = k;
				continue;
			}
		}
		if (c == '\033')
			buf_addstr(&b, "\\e");
		else if (c == '\\')
			buf_addstr(&b, "\\\\");
		else if (c == '\r')
			continue;
		else if (c < 32 && c != '\n' && c != '\t')
			buf_addf(&b, "^%c", c + 64);
		else
			buf_addch(&b, (char)c);
	}
	return buf_detach(&b, NULL);
}

/*
 * Start `forgex args...` in project `p` (its HOME and XDG_CONFIG_HOME, and
 * what sc_proj_env() added) on a new 100x40 terminal, as a terminal
 * emulator would: TERM=xterm, no NO_COLOR unless the project sets it.
 */
void term_start(struct term *t, const struct sc_proj *p, const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);
	size_t i;

	memset(t, 0, sizeof(*t));
	buf_init(&t->out, 0);
	t->status = -1;
	t->prompt = TERM_PROMPT;
	for (i = 0; i < p->env_nr; i++)
		if (!strncmp(p->env[i], "NO_COLOR=", 9) && p->env[i][9])
			t->prompt = "forgex> ";
	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (t->master < 0 || grantpt(t->master) || unlockpt(t->master))
		die("posix_openpt");
	t->pid = fork();
	if (t->pid < 0)
		die("fork");
	if (!t->pid) {
		struct winsize ws = { 40, 100, 0, 0 };
		int slave;

		if (setsid() < 0)
			_exit(124);
		slave = open(ptsname(t->master), O_RDWR);
		if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
			_exit(124);
		ioctl(slave, TIOCSWINSZ, &ws);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
		if (chdir(p->dir))
			_exit(125);
		setenv("TERM", "xterm", 1);
		unsetenv("NO_COLOR");
		for (i = 0; i < p->env_nr; i++)
			putenv((char *)p->env[i]);
		execv(argv.v[0], (char *const *)argv.v);
		_exit(127);
	}
	strvec_clear(&argv);
	live_pid = t->pid;
}

/* Make the terminal `rows` x `cols` (the kernel sends SIGWINCH to forgex). */
void term_resize(struct term *t, int rows, int cols)
{
	struct winsize ws = { (unsigned short)rows, (unsigned short)cols, 0, 0 };

	if (ioctl(t->master, TIOCSWINSZ, &ws) < 0)
		fail_msg("TIOCSWINSZ: %s", strerror(errno));
}

/* Read what is there, waiting up to `ms`; 0 once the terminal is closed by every holder. */
int term_pump(struct term *t, int ms)
{
	struct pollfd pf = { t->master, POLLIN, 0 };
	char chunk[8192];
	ssize_t n;
	int r = poll(&pf, 1, ms);

	if (r < 0 && errno != EINTR)
		die("poll");
	if (r <= 0)
		return 1;
	n = read(t->master, chunk, sizeof(chunk));
	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return 0;	/* EIO: nothing holds the other side any more */
	buf_add(&t->out, chunk, (size_t)n);
	ALLOC_GROW(t->at, t->reads + 1, t->alloc);
	t->ends = xrealloc(t->ends, t->alloc * sizeof(*t->ends));
	t->at[t->reads] = tu_now();
	t->ends[t->reads] = t->out.len;
	t->reads++;
	return 1;
}

/* When the byte at `off` of the output was read. */
double term_time_at(const struct term *t, size_t off)
{
	size_t i;

	for (i = 0; i < t->reads; i++)
		if (off < t->ends[i])
			return t->at[i];
	return -1;
}

/*
 * Wait up to `timeout` s for `text` after the mark; the mark moves past it.
 * Returns the offset where it begins. Fails the test (with what the
 * terminal showed) when it does not come.
 */
size_t term_expect_at(struct term *t, const char *text, double timeout, int line)
{
	double end = tu_now() + timeout;
	int open = 1;

	for (;;) {
		const char *at = memmem(t->out.buf + t->mark, t->out.len - t->mark, text,
					strlen(text));

		if (at) {
			size_t off = (size_t)(at - t->out.buf);

			t->mark = off + strlen(text);
			return off;
		}
		if (!open || tu_now() > end) {
			char *s = term_shown(t, 0), *want = xstrdup(text), *p;

			for (p = want; *p; p++)
				if (*p == '\033')
					*p = '~';
			fail_msg("line %d: '%s' (\\e as ~) did not show within %.0f s%s; the terminal "
				 "(searched from byte %zu):\n%s", line, want, timeout,
				 open ? "" : " (the terminal closed)", t->mark, s);
		}
		open = term_pump(t, 20);
	}
}


/*
 * Wait for the prompt, then for the line editor to be reading: libedit
 * writes the prompt before it turns the terminal's canonical mode off, and
 * a key typed in between is taken by the kernel's line discipline (Ctrl-D
 * there becomes a NUL byte). A person is never that fast; a test is.
 * TCGETS on the master side reports the terminal's (the slave's) modes.
 */
size_t term_prompt_at(struct term *t, int line)
{
	size_t off = term_expect_at(t, t->prompt, TERM_STEP, line);
	double end = tu_now() + TERM_STEP;
	struct termios tio;

	for (;;) {
		if (tcgetattr(t->master, &tio) < 0)
			fail_msg("line %d: tcgetattr on the terminal: %s", line, strerror(errno));
		if (!(tio.c_lflag & ICANON))
			return off;
		if (tu_now() > end)
			fail_msg("line %d: the line editor did not start reading", line);
		term_pump(t, 5);
	}
}


/* Type `keys` (raw bytes, as a terminal sends them). */
void term_send(struct term *t, const char *keys)
{
	size_t len = strlen(keys), off = 0;

	while (off < len) {
		ssize_t n = write(t->master, keys + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_msg("write to the terminal: %s", strerror(errno));
		off += (size_t)n;
	}
}

/* Type `keys` one key press at a time, as a person does (escape sequences whole). */
void term_type(struct term *t, const char *keys)
{
	char one[8];

	while (*keys) {
		size_t n = 1;

		if (keys[0] == '\033' && keys[1] == '[') {
			for (n = 2; keys[n] && !isalpha((unsigned char)keys[n]) && keys[n] != '~'; n++)
				;
			if (keys[n])
				n++;
		} else if (keys[0] == '\033' && keys[1] == 'O' && keys[2]) {
			n = 3;	/* SS3 (Home, End, F1-F4): one write, as a terminal sends it */
		}
		memcpy(one, keys, n);
		one[n] = '\0';
		term_send(t, one);
		keys += n;
		term_pump(t, 30);
	}
}

/* Wait for forgex to leave; its exit status. */
int term_wait_at(struct term *t, double timeout, int line)
{
	double end = tu_now() + timeout;
	int st;

	while (term_pump(t, 50))
		if (tu_now() > end) {
			char *s = term_shown(t, 0);

			kill(t->pid, SIGKILL);
			fail_msg("line %d: forgex did not leave within %.0f s; the terminal:\n%s", line,
				 timeout, s);
		}
	while (waitpid(t->pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	t->pid = 0;
	live_pid = 0;
	t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return t->status;
}


void term_release(struct term *t)
{
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (t->master >= 0)
		close(t->master);
	buf_release(&t->out);
	free(t->at);
	free(t->ends);
	if (live_pid == t->pid)
		live_pid = 0;
	memset(t, 0, sizeof(*t));
	t->master = -1;
}

int term_teardown(void **state)
{
	(void)state;
	if (live_pid > 0) {
		kill(live_pid, SIGKILL);
		while (waitpid(live_pid, NULL, 0) < 0 && errno == EINTR)
			;
		live_pid = 0;
	}
	return 0;
}

/* The session id from the banner ("forgex\e[m session ID: model ..."); caller frees. */
char *term_banner_id(const struct term *t)
{
	const char *s = memmem(t->out.buf, t->out.len, " session ", 9), *e;

	assert_non_null(s);
	s += 9;
	e = s + strcspn(s, ": ");
	return xstrndup(s, (size_t)(e - s));
}

/*
 * The project and the mock
 */

void fx_start(struct fx *f, const char *script_sq, const char *mode)
{
	memset(f, 0, sizeof(*f));
	f->t.master = -1;
	f->script = term_sq(script_sq);
	mock_start(&f->m, f->script);
	sc_proj_init(&f->p, &f->m, mode, NULL);
}

void fx_release(struct fx *f)
{
	term_release(&f->t);
	mock_release(&f->m);
	sc_proj_release(&f->p);
	free(f->script);
}

/* `forgex chat` (or `args`) on the terminal, up to its first prompt. */
void fx_chat(struct fx *f, const char *const *args)
{
	static const char *const chat[] = { "chat", NULL };

	term_start(&f->t, &f->p, args ? args : chat);
	term_expect(&f->t, " session ");
	term_prompt(&f->t);
}

/* Type a line and Enter; wait for the prompt after what it did. Returns the offset after the echo. */
size_t fx_say(struct fx *f, const char *line)
{
	size_t from;

	term_type(&f->t, line);
	term_send(&f->t, "\r");
	term_expect(&f->t, "\r\n");	/* the editor's newline: the line was taken */
	from = f->t.mark;
	term_prompt(&f->t);
	return from;
}

/* The printable text between offsets `from` and `to` (caller frees). */
char *term_between(const struct term *t, size_t from, size_t to)
{
	struct term cut = *t;

	cut.out.len = to;
	return term_shown(&cut, from);
}

/* The chat requests' bodies. */
json_t *fx_requests(const struct fx *f)
{
	return sc_chat_requests(&f->m);
}

/* The content of the last message of request `n` with `role`. */
const char *req_last_of(json_t *reqs, size_t n, const char *role)
{
	json_t *msgs = json_object_get(json_array_get(reqs, n), "messages");
	size_t i = json_array_size(msgs);

	while (i-- > 0) {
		const char *r = jsonx_str(json_array_get(msgs, i), "role");

		if (r && !strcmp(r, role))
			return jsonx_str(json_array_get(msgs, i), "content");
	}
	return NULL;
}

/* Processes whose command line holds `marker` (zombies have none), named in `who` (may be NULL). */
int tu_count_procs(const char *marker, struct buf *who)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		die("opendir /proc");
	while ((e = readdir(d))) {
		char path[300], cmd[4096];
		ssize_t len, i;
		int fd;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (len <= 0)
			continue;
		for (i = 0; i < len; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[len] = '\0';
		if (strstr(cmd, marker)) {
			n++;
			if (who)
				buf_addf(who, "  %s: %.200s\n", e->d_name, cmd);
		}
	}
	closedir(d);
	return n;
}

/*
 * A tree, to compare: every folder and file under `dir` but .git, .forgex
 * and __pycache__, with its mode and (for files) bytes, sorted.
 */
static void tu_tree_walk(struct strvec *out, const char *dir, const char *rel)
{
	char *path = *rel ? xstrfmt("%s/%s", dir, rel) : xstrdup(dir);
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d)
		die("opendir %s", path);
	while ((e = readdir(d))) {
		char *r, *full;
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (!*rel && (!strcmp(e->d_name, ".git") || !strcmp(e->d_name, ".forgex"))) ||
		    !strcmp(e->d_name, "__pycache__"))
			continue;
		r = *rel ? xstrfmt("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
		full = xstrfmt("%s/%s", dir, r);
		if (lstat(full, &st) < 0)
			die("lstat %s", full);
		if (S_ISDIR(st.st_mode)) {
			strvec_pushf(out, "%s/ %o", r, (unsigned)(st.st_mode & 07777));
			tu_tree_walk(out, dir, r);
		} else {
			char *text = tu_read(dir, r);

			strvec_pushf(out, "%s %o %s", r, (unsigned)(st.st_mode & 07777),
				     text ? text : "(unreadable)");
			free(text);
		}
		free(r);
		free(full);
	}
	closedir(d);
	free(path);
}

int tu_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *tu_tree(const char *dir)
{
	struct strvec v = STRVEC_INIT;
	struct buf b = BUF_INIT;
	size_t i;

	tu_tree_walk(&v, dir, "");
	qsort(v.v, v.nr, sizeof(*v.v), tu_cmp_str);
	for (i = 0; i < v.nr; i++)
		buf_addf(&b, "%s\n--\n", v.v[i]);
	strvec_clear(&v);
	return buf_detach(&b, NULL);
}

/*
 * Children outside the sandbox (see proc.h): fork, the child's few
 * async-signal-safe steps, exec errors over a close-on-exec pipe, and a
 * parent that captures, waits and kills within a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/path.h"
#include "base/proc.h"

extern char **environ;

/* Where the child's own ends are moved before dup2(): above 0-2. */
#define CHILD_FD_FLOOR 10

void proc_init(struct proc *p)
{
	memset(p, 0, sizeof(*p));
	strvec_init(&p->argv);
	p->in_fd = p->out_fd = p->err_fd = -1;
}

/* ------------------------------------------------------- environment */

/* The seed's _SAFE_ENV_VARS: everything else in forgex's environment stays out. */
static const char *const safe_env_vars[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USERPROFILE",
	"SYSTEMROOT", "SYSTEMDRIVE", "COMSPEC", "PATHEXT", "TEMP", "TMP",
};

void proc_env_build(struct strvec *env, const char *const *overrides)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(safe_env_vars); i++) {
		const char *v = getenv(safe_env_vars[i]);

		if (v)
			strvec_pushf(env, "%s=%s", safe_env_vars[i], v);
	}
	for (; overrides && *overrides; overrides++)
		if (strchr(*overrides, '=') && **overrides != '=')
			proc_env_set(env, *overrides);
}

void proc_env_set(struct strvec *env, const char *kv)
{
	size_t i, n = strcspn(kv, "=");

	for (i = 0; i < env->nr; i++) {
		if (!strncmp(env->v[i], kv, n) && env->v[i][n] == '=') {
			free((char *)env->v[i]);
			env->v[i] = xstrdup(kv);
			return;
		}
	}
	strvec_push(env, kv);
}

const char *proc_env_get(const struct strvec *env, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < env->nr; i++)
		if (!strncmp(env->v[i], name, n) && env->v[i][n] == '=')
			return env->v[i] + n + 1;
	return NULL;
}

/* The value of PATH in a NULL-terminated environment, or NULL. */
static const char *env_path(const char *const *env)
{
	if (!env)
		return getenv("PATH");
	for (; *env; env++)
		if (!strncmp(*env, "PATH=", 5))
			return *env + 5;
	return NULL;
}

/*
 * The program to execute: a name with a '/' as it is (the child resolves
 * a relative one in its own folder), else the first regular executable
 * file of that name on `path_env` (a default when unset); relative
 * entries, and the empty entry ("."), count from `dir`.
 */
static char *find_program(const char *prog, const char *path_env, const char *dir)
{
	struct buf cand = BUF_INIT;
	const char *p;

	if (strchr(prog, '/'))
		return xstrdup(prog);
	for (p = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		struct stat st;

		buf_reset(&cand);
		if (!n || *p != '/') {
			if (dir)
				buf_addf(&cand, "%s/", dir);
			if (n)
				buf_add(&cand, p, n);
			else
				buf_addch(&cand, '.');
		} else {
			buf_add(&cand, p, n);
		}
		buf_addch(&cand, '/');
		buf_addstr(&cand, prog);
		if (!stat(cand.buf, &st) && S_ISREG(st.st_mode) && !access(cand.buf, X_OK))
			return buf_detach(&cand, NULL);
		p += n;
		if (*p == ':')
			p++;
	}
	buf_release(&cand);
	return NULL;
}

/* ------------------------------------------------------------- start */

static void close_pair(int fd[2])
{
	if (fd[0] >= 0)
		close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	fd[0] = fd[1] = -1;
}

/* The child's end of stream `which`: 0 stdin, 1 stdout, 2 stderr. */
static int open_null(int which)
{
	return open("/dev/null", (which ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
}

/*
 * In the child, async-signal-safe only: put `src` on `target`. The
 * sources were moved above CHILD_FD_FLOOR first, so no dup2() here
 * overwrites a source another still needs.
 */
static int child_dup(int src, int target)
{
	if (src < 0)
		return 0;	/* PROC_IO_INHERIT: left as it is */
	return dup2(src, target) < 0 ? -1 : 0;
}

static FX_NORETURN void child_fail(int report, int e)
{
	ssize_t n;

	do
		n = write(report, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	_exit(127);
}

int proc_start(struct proc *p)
{
	/* [i][0] the parent's end, [i][1] the child's */
	int fds[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } }, report[2] = { -1, -1 };
	const enum proc_io io[3] = { p->in, p->in == PROC_IO_SOCKET ? PROC_IO_INHERIT : p->out,
				     p->err };
	char *const *envp = p->env ? (char *const *)p->env : environ;
	pid_t parent = getpid(), pid;
	int i, child_errno = 0, ret;
	ssize_t n;

	if (!p->argv.nr)
		BUG("proc_start() with no argv");
	free(p->path);
	p->path = find_program(p->argv.v[0], env_path(p->env), p->dir);
	if (!p->path)
		return err_set(FX_ENOTFOUND, "program '%s' not found on PATH", p->argv.v[0]);
	for (i = 0; i < 3; i++) {
		int r = 0;

		switch (io[i]) {
		case PROC_IO_NULL:
			fds[i][1] = open_null(i);
			r = fds[i][1] < 0 ? -1 : 0;
			break;
		case PROC_IO_INHERIT:
			break;
		case PROC_IO_FILE: {
			const char *path = i == 1 ? p->out_path : i == 2 ? p->err_path : NULL;

			if (!path)
				BUG("PROC_IO_FILE of stream %d without a path", i);
			fds[i][1] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fds[i][1] < 0) {
				ret = err_set_errno(FX_EOS, "%s: cannot open %s", p->argv.v[0],
						    path);
				goto fail;
			}
			break;
		}
		case PROC_IO_SOCKET:
			if (i)
				BUG("PROC_IO_SOCKET is for stdin only");
			r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds[i]);
			break;
		case PROC_IO_PIPE:
		case PROC_IO_CAPTURE:
			if (io[i] == PROC_IO_CAPTURE && (!i || !(i == 1 ? p->out_buf : p->err_buf)))
				BUG("PROC_IO_CAPTURE of stream %d without a buffer", i);
			r = pipe2(fds[i], O_CLOEXEC);
			if (!r && !i) {
				/* stdin: the child reads the pipe's read end */
				int t = fds[i][0];

				fds[i][0] = fds[i][1];
				fds[i][1] = t;
			}
			break;
		}
		if (r < 0) {
			ret = err_set_errno(FX_EOS, "%s: cannot set up its standard streams",
					    p->argv.v[0]);
			goto fail;
		}
	}
	if (pipe2(report, O_CLOEXEC) < 0) {
		ret = err_set_errno(FX_EOS, "%s: pipe", p->argv.v[0]);
		goto fail;
	}
	pid = fork();
	if (pid < 0) {
		ret = err_set_errno(FX_EOS, "%s: fork", p->argv.v[0]);
		goto fail;
	}
	if (pid == 0) {
		/* the child: only async-signal-safe calls from here on */
		static const int reset[] = { SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD };
		int src[3];
		sigset_t none;
		size_t k;

		for (k = 0; k < ARRAY_SIZE(reset); k++)
			signal(reset[k], SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (p->flags & PROC_NEW_GROUP)
			setpgid(0, 0);
		if (p->flags & PROC_DIE_WITH_PARENT) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(127);	/* forgex died before the prctl */
		}
		for (i = 0; i < 3; i++) {
			int from = i == 1 && p->in == PROC_IO_SOCKET ? fds[0][1] : fds[i][1];

			src[i] = from < 0 ? -1 : fcntl(from, F_DUPFD_CLOEXEC, CHILD_FD_FLOOR);
			if (from >= 0 && src[i] < 0)
				child_fail(report[1], errno);
		}
		for (i = 0; i < 3; i++)
			if (child_dup(src[i], i) < 0)
				child_fail(report[1], errno);
		if (p->dir && chdir(p->dir) < 0)
			child_fail(report[1], errno);
		execve(p->path, (char *const *)p->argv.v, envp);
		child_fail(report[1], errno);
	}
	close(report[1]);
	report[1] = -1;
	for (i = 0; i < 3; i++) {
		if (fds[i][1] >= 0)
			close(fds[i][1]);
		fds[i][1] = -1;
	}
	do
		n = read(report[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(report[0]);
	report[0] = -1;
	p->pid = pid;
	if (n == (ssize_t)sizeof(child_errno)) {
		while (waitpid(pid, &p->status, 0) < 0 && errno == EINTR)
			;
		p->exited = 1;
		for (i = 0; i < 3; i++)
			close_pair(fds[i]);
		errno = child_errno;
		return err_set_errno(FX_ENOTFOUND, "cannot run %s", p->path);
	}
	p->in_fd = fds[0][0];
	p->out_fd = fds[1][0];
	p->err_fd = fds[2][0];
	p->deadline_ms = p->timeout_ms > 0 ? (long long)clk_mono_ms() + p->timeout_ms : 0;
	return 0;

fail:
	for (i = 0; i < 3; i++)
		close_pair(fds[i]);
	close_pair(report);
	return ret;
}

/* ------------------------------------------------------ wait, finish */

int proc_wait(struct proc *p, int block)
{
	pid_t r;

	if (p->exited || p->pid <= 0)
		return 1;
	do
		r = waitpid(p->pid, &p->status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	if (r < 0)
		p->status = 255 << 8;
	p->exited = 1;
	return 1;
}

void proc_kill(struct proc *p, int sig)
{
	if (p->pid <= 0 || p->exited)
		return;
	kill(p->flags & PROC_NEW_GROUP ? -p->pid : p->pid, sig);
}

/* Milliseconds left before the deadline (-1: no deadline), at least 0. */
static int left_ms(const struct proc *p)
{
	long long left;

	if (!p->deadline_ms)
		return -1;
	left = p->deadline_ms - (long long)clk_mono_ms();
	return left <= 0 ? 0 : left > 60000 ? 60000 : (int)left;
}

static void keep(struct buf *b, size_t max, size_t *dropped, const char *data, size_t n)
{
	size_t room = b->len < max ? max - b->len : 0;

	if (n > room) {
		*dropped += n - room;
		n = room;
	}
	buf_add(b, data, n);
}

/* Read the captured streams until both are at EOF. 0, or FX_ETIMEOUT. */
static int drain_captures(struct proc *p)
{
	size_t max = p->capture_max ? p->capture_max : PROC_CAPTURE_MAX;
	int *fd[2] = { &p->out_fd, &p->err_fd };
	struct buf *to[2] = { p->out_buf, p->err_buf };
	size_t *dropped[2] = { &p->out_dropped, &p->err_dropped };
	const int capture[2] = { p->out == PROC_IO_CAPTURE && p->in != PROC_IO_SOCKET,
				 p->err == PROC_IO_CAPTURE };

	for (;;) {
		struct pollfd pfd[2];
		int nfds = 0, which[2], k, r, timeout = left_ms(p);

		for (k = 0; k < 2; k++) {
			if (!capture[k] || *fd[k] < 0)
				continue;
			pfd[nfds].fd = *fd[k];
			pfd[nfds].events = POLLIN;
			which[nfds++] = k;
		}
		if (!nfds)
			return 0;
		if (!timeout)
			return FX_ETIMEOUT;
		r = poll(pfd, (nfds_t)nfds, timeout);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return 0;	/* leave it to the wait */
		for (k = 0; k < nfds; k++) {
			char chunk[4096];
			ssize_t n;

			if (!pfd[k].revents)
				continue;
			n = read(pfd[k].fd, chunk, sizeof(chunk));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				close(*fd[which[k]]);
				*fd[which[k]] = -1;
				continue;
			}
			keep(to[which[k]], max, dropped[which[k]], chunk, (size_t)n);
		}
	}
}

int proc_finish(struct proc *p)
{
	int timed_out = drain_captures(p) == FX_ETIMEOUT;

	while (!timed_out && !proc_wait(p, !p->deadline_ms)) {
		struct timespec ts = { 0, 2 * 1000 * 1000 };

		if (!left_ms(p))
			timed_out = 1;
		else
			nanosleep(&ts, NULL);
	}
	if (timed_out) {
		proc_kill(p, SIGKILL);
		proc_wait(p, 1);
		p->timed_out = 1;
		return err_set(FX_ETIMEOUT, "%s did not finish within %d ms", p->argv.v[0],
			       p->timeout_ms);
	}
	if (WIFEXITED(p->status))
		return WEXITSTATUS(p->status);
	if (WIFSIGNALED(p->status))
		return 128 + WTERMSIG(p->status);
	return 255;
}

int proc_run(struct proc *p)
{
	int ret = proc_start(p);

	return ret < 0 ? ret : proc_finish(p);
}

void proc_release(struct proc *p)
{
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->err_fd >= 0)
		close(p->err_fd);
	if (p->pid > 0) {
		if (p->flags & PROC_NEW_GROUP)
			kill(-p->pid, SIGKILL);
		else if (!p->exited)
			kill(p->pid, SIGKILL);
		proc_wait(p, 1);
	}
	strvec_clear(&p->argv);
	free(p->path);
	proc_init(p);
}

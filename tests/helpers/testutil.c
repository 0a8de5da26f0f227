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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/err.h"
#include "base/path.h"
#include "helpers/testutil.h"
#include "verify/verify.h"

extern char **environ;

char *tu_outside_mkdtemp(void)
{
	char *tmpl = xstrdup("/var/tmp/forgex-outside-XXXXXX");

	if (!mkdtemp(tmpl))
		die("mkdtemp in /var/tmp: %s", strerror(errno));
	return tmpl;
}

char *tu_mkdtemp(void)
{
	const char *t = getenv("TMPDIR");
	char *tmpl = xstrfmt("%s/forgex-test-XXXXXX", t && *t ? t : "/tmp");
	char *real;

	if (!mkdtemp(tmpl))
		die("mkdtemp: %s", strerror(errno));
	real = realpath(tmpl, NULL);
	free(tmpl);
	return real;
}

void tu_rmtree(char *path)
{
	if (path)
		fsutil_remove_tree(path);
	free(path);
}

void tu_write(const char *dir, const char *rel, const char *content)
{
	struct buf p = BUF_INIT, d = BUF_INIT;
	FILE *f;

	path_join(&p, dir, rel);
	path_dirname(&d, p.buf);
	if (fsutil_mkdir_p(d.buf, 0755) < 0)
		die("%s", err_last());
	f = fopen(p.buf, "w");
	if (!f || fputs(content, f) < 0 || fclose(f))
		die("cannot write %s", p.buf);
	buf_release(&p);
	buf_release(&d);
}

char *tu_read(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT, c = BUF_INIT;
	char *ret = NULL;

	path_join(&p, dir, rel);
	if (!fsutil_read_file(&c, p.buf, 0))
		ret = buf_detach(&c, NULL);
	buf_release(&p);
	buf_release(&c);
	return ret;
}

static char *isolated_home;
static pid_t isolated_owner;

static void isolated_home_remove(void)
{
	/* a forked child that calls exit() must not remove the parent's home */
	if (getpid() == isolated_owner)
		tu_rmtree(isolated_home);
	else
		free(isolated_home);
	isolated_home = NULL;
}

const char *tu_home(void)
{
	return isolated_home;
}

/*
 * Before main(): give this test process, and so every child it starts
 * however it starts them, a home of its own (see testutil.h).
 */
__attribute__((constructor)) static void isolate_home(void)
{
	static const char *const vars[][2] = {
		{ "HOME", "" }, { "XDG_CONFIG_HOME", "/.config" },
		{ "XDG_STATE_HOME", "/.local/state" }, { "XDG_CACHE_HOME", "/.cache" },
	};
	const char *keep = getenv("TU_KEEP_HOME");
	size_t i;

	if (keep && *keep && strcmp(keep, "0"))
		return;
	isolated_home = tu_mkdtemp();
	isolated_owner = getpid();
	atexit(isolated_home_remove);
	for (i = 0; i < ARRAY_SIZE(vars); i++) {
		char *v = xstrfmt("%s%s", isolated_home, vars[i][1]);

		setenv(vars[i][0], v, 1);
		free(v);
	}
}

void tu_trust(const char *dir, const char *const *env_extra)
{
	const char *argv[] = { tu_forgex(), "-C", dir, "trust", NULL };
	struct tu_result r;

	tu_run(&r, argv, NULL, env_extra, NULL);
	if (r.status != 0)
		die("forgex trust in %s failed (%d): %s", dir, r.status, r.err.buf);
	tu_result_release(&r);
}

const char *tu_forgex(void)
{
	const char *b = getenv("FORGEX_BIN");

	return b && *b ? b : "build/forgex";
}

/* The current environment with `extra` ("K=V" set, "K" removed) into `env`. */
static void env_with(struct strvec *env, const char *const *extra)
{
	char **e;

	for (e = environ; *e; e++) {
		const char *const *x;
		int drop = 0;

		for (x = extra; x && *x; x++) {
			size_t n = strcspn(*x, "=");

			if (!strncmp(*e, *x, n) && (*e)[n] == '=')
				drop = 1;
		}
		if (!drop)
			strvec_push(env, *e);
	}
	for (; extra && *extra; extra++)
		if (strchr(*extra, '='))
			strvec_push(env, *extra);
}

void tu_run(struct tu_result *r, const char *const *argv, const char *cwd,
	    const char *const *env_extra, const char *input)
{
	int in[2], out[2], err[2], st;
	struct strvec env = STRVEC_INIT;
	size_t inlen = input ? strlen(input) : 0, inpos = 0;
	pid_t pid;

	buf_init(&r->out, 0);
	buf_init(&r->err, 0);
	env_with(&env, env_extra);
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (cwd && chdir(cwd))
			_exit(125);
		execvpe(argv[0], (char *const *)argv, (char *const *)env.v);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	if (!inlen) {
		close(in[1]);
		in[1] = -1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		struct pollfd p[3] = {
			{ out[0], POLLIN, 0 }, { err[0], POLLIN, 0 }, { in[1], POLLOUT, 0 },
		};
		char chunk[65536];
		int i, open_fds = 0;

		for (i = 0; i < 3; i++)
			open_fds += p[i].fd >= 0;
		if (!open_fds)
			break;
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (i = 0; i < 2; i++) {
			if (p[i].fd >= 0 && p[i].revents) {
				ssize_t n = read(p[i].fd, chunk, sizeof(chunk));

				if (n > 0) {
					buf_add(i ? &r->err : &r->out, chunk, (size_t)n);
				} else if (n == 0 || errno != EINTR) {
					close(p[i].fd);
					if (i)
						err[0] = -1;
					else
						out[0] = -1;
				}
			}
		}
		if (p[2].fd >= 0 && p[2].revents) {
			ssize_t n = write(in[1], input + inpos, inlen - inpos);

			if (n > 0)
				inpos += (size_t)n;
			if (n < 0 || inpos == inlen) {
				close(in[1]);
				in[1] = -1;
			}
		}
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	strvec_clear(&env);
}

void tu_result_release(struct tu_result *r)
{
	buf_release(&r->out);
	buf_release(&r->err);
}

void tu_sh(const char *dir, const char *cmd)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct tu_result r;

	tu_run(&r, argv, dir, NULL, NULL);
	if (r.status)
		fail_msg("%s: %s%s", cmd, r.out.buf, r.err.buf);
	tu_result_release(&r);
}

char *tu_sh_out(const char *dir, const char *cmd)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct tu_result r;
	char *out;

	tu_run(&r, argv, dir, NULL, NULL);
	if (r.status)
		fail_msg("%s: %s%s", cmd, r.out.buf, r.err.buf);
	buf_rtrim(&r.out);
	out = xstrdup(r.out.buf);
	tu_result_release(&r);
	return out;
}

char *tu_fmt(const char *f, ...)
{
	static char *ring[32];
	static unsigned n;
	va_list ap;
	char *p;

	va_start(ap, f);
	p = xstrvfmt(f, ap);
	va_end(ap);
	free(ring[n % 32]);
	ring[n++ % 32] = p;
	return p;
}

void tu_git_init(const char *dir)
{
	tu_sh(dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@e "
	      "commit -qm init");
	tu_seed_bytecode(dir);
}

void tu_seed_bytecode(const char *workspace)
{
	const char *seed = getenv("FORGEX_TEST_PYCACHE");
	struct buf dir = BUF_INIT;
	char *real;

	if (!seed || !*seed || !fsutil_is_dir(seed))
		return;
	/* a folder forgex will make (a batch's worktree) is named as it will be */
	real = realpath(workspace, NULL);
	if (!real && errno == ENOENT && *workspace == '/')
		real = xstrdup(workspace);
	/* where forgex could not make the folder either, its runs say so themselves */
	if (!real || verify_cache_dir(&dir, real) < 0) {
		err_clear();
		free(real);
		buf_release(&dir);
		return;
	}
	buf_addstr(&dir, "/pycache");
	if (!fsutil_exists(dir.buf)) {
		/* links, not copies (a tenth of the cost): Python replaces a .pyc, never rewrites it */
		const char *argv[] = { "sh", "-c", "cp -R -l \"$0\" \"$1\" 2>/dev/null || "
				       "{ rm -rf \"$1\" && cp -R \"$0\" \"$1\"; }", seed, dir.buf, NULL };
		struct tu_result r;

		tu_run(&r, argv, NULL, NULL, NULL);
		if (r.status)
			fail_msg("copying %s to %s: %s", seed, dir.buf, r.err.buf);
		tu_result_release(&r);
	}
	buf_release(&dir);
	free(real);
}

int tu_run_group(const char *name, const struct CMUnitTest *tests, size_t nr,
		 int (*setup)(void **), int (*teardown)(void **))
{
	const char *spec = getenv("TEST_SHARD");
	unsigned long k = 0, n = 0;
	struct CMUnitTest *mine;
	size_t i, kept = 0;
	int ret;

	if (!spec || !*spec)
		return _cmocka_run_group_tests(name, tests, nr, setup, teardown);
	if (sscanf(spec, "%lu/%lu", &k, &n) != 2 || !n || !k || k > n)
		die("TEST_SHARD=%s: expected k/n with 1 <= k <= n", spec);
	mine = xcalloc(nr ? nr : 1, sizeof(*mine));
	for (i = k - 1; i < nr; i += n)
		mine[kept++] = tests[i];
	ret = _cmocka_run_group_tests(name, mine, kept, setup, teardown);
	free(mine);
	return ret;
}

double tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tu_run_watched(struct tu_result *r, const char *const *argv, const char *cwd,
		    const char *const *env_extra, struct tu_watch *w)
{
	struct strvec env = STRVEC_INIT;
	int out[2], err[2], st, sent = 0, open_fds = 2;
	pid_t pid;

	buf_init(&r->out, 0);
	buf_init(&r->err, 0);
	w->mark_at = 0;
	w->killed = 0;
	env_with(&env, env_extra);
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		die("pipe");
	w->started = tu_now();
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int null = open("/dev/null", O_RDONLY);

		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (cwd && chdir(cwd))
			_exit(125);
		execvpe(argv[0], (char *const *)argv, (char *const *)env.v);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	while (open_fds) {
		struct pollfd p[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
		double t = tu_now() - w->started;
		int i;

		if (t > w->deadline) {
			kill(pid, SIGKILL);
			w->killed = 1;
			break;
		}
		if (w->sig && !sent &&
		    (w->sig_marker ? strstr(r->err.buf, w->sig_marker) != NULL : t >= w->sig_after)) {
			kill(pid, w->sig);
			sent = 1;
		}
		if (poll(p, 2, 20) < 0 && errno != EINTR)
			die("poll");
		for (i = 0; i < 2; i++) {
			char chunk[4096];
			ssize_t n;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, chunk, sizeof(chunk));
			if (n > 0) {
				buf_add(i ? &r->err : &r->out, chunk, (size_t)n);
				if (!i && w->mark && !w->mark_at && strstr(r->out.buf, w->mark))
					w->mark_at = tu_now();
			} else if (n == 0 || errno != EINTR) {
				close(p[i].fd);
				if (i)
					err[0] = -1;
				else
					out[0] = -1;
				open_fds--;
			}
		}
	}
	if (out[0] >= 0)
		close(out[0]);
	if (err[0] >= 0)
		close(err[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	w->ended = tu_now();
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	strvec_clear(&env);
}

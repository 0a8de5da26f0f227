/*
 * The native backend against the real kernel: Landlock, namespaces,
 * seccomp, rlimits, kill-all, memory bound. Each test skips, saying why,
 * when this kernel lacks what it needs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <pwd.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

#define NOBODY 65534

static char *ws;
static struct config cfg;

static void cfg_setup(struct config *c, const char *backend)
{
	/* the built-in defaults, as a user without a config file has them */
	config_init(c);
	free(c->sandbox.backend);
	c->sandbox.backend = xstrdup(backend);
	strvec_push(&c->terminal.denied, "rm");	/* replaces the default list: sh allowed */
}

static void cfg_teardown(struct config *c)
{
	config_release(c);
}

static void set_str(char **field, const char *v)
{
	free(*field);
	*field = xstrdup(v);
}

/* cmocka 1.1 has skip() but no message: print the reason first. */
#define skip_msg(...) do { print_message("SKIP: " __VA_ARGS__); print_message("\n"); skip(); } while (0)

/* Skip (with the reason) unless this kernel can run the native backend. */
static void need_native(void)
{
	const struct sandbox_caps *c = sandbox_kernel_caps();
	struct executor ex;

	if (!c->landlock_abi)
		skip_msg("Landlock is not available on this kernel");
	if (executor_init(&ex, &cfg, ws) < 0)
		skip_msg("the native backend cannot run here: %s", err_last());
	executor_release(&ex);
}


static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	cfg_setup(&cfg, "native");
	sandbox_probe_mask(0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sandbox_probe_mask(0);
	cfg_teardown(&cfg);
	tu_rmtree(ws);
	ws = NULL;
	return 0;
}

/*
 * A folder outside the workspace that the sandbox can see: /tmp is the
 * command's own tmpfs, so victims placed there would be out of reach for
 * the wrong reason.
 */
static char *outside_mkdtemp(void)
{
	char *tmpl = xstrfmt("/var/tmp/forgex-outside-XXXXXX");

	if (!mkdtemp(tmpl))
		fail_msg("mkdtemp: %s", strerror(errno));
	return tmpl;
}

static int run_argv(struct exec_result *r, struct executor *ex, const char *cwd, int timeout_ms,
		    const char *const *env, const char *const *argv)
{
	struct exec_request req = { argv, 0, cwd, timeout_ms, env };

	int ret;

	while (argv[req.argc])
		req.argc++;
	ret = executor_run(r, ex, &req);
	if (ret < 0)
		print_message("executor_run: %s\n", err_last());
	return ret;
}

#define RUN(r, ex, ...) run_argv((r), (ex), NULL, 0, NULL, (const char *const[]){ __VA_ARGS__, NULL })

static void init_ex(struct executor *ex)
{
	if (executor_init(ex, &cfg, ws) < 0)
		fail_msg("executor_init: %s", err_last());
	assert_string_equal(executor_backend_name(ex), "native");
}

static void test_native_writes_outside_fail(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	char *outside, *home_file, *etc_file, *link, *dotdot, *victim, *ws_base;
	/* the user's real home: the test's own HOME is a folder under /tmp (testutil.h) */
	struct passwd *pw = getpwuid(getuid());
	const char *home = pw && pw->pw_dir ? pw->pw_dir : NULL;
	struct buf base = BUF_INIT;

	(void)state;
	need_native();
	outside = outside_mkdtemp();
	tu_write(outside, "victim.txt", "keep me\n");
	victim = xstrfmt("%s/victim.txt", outside);
	home_file = xstrfmt("%s/forgex-escape-%ld", home && *home ? home : outside, (long)getpid());
	etc_file = xstrfmt("/etc/forgex-escape-%ld", (long)getpid());
	link = xstrfmt("%s/link", ws);
	assert_int_equal(symlink(outside, link), 0);
	path_basename(&base, ws);
	ws_base = buf_detach(&base, NULL);
	dotdot = xstrfmt("../%s-dotdot", ws_base);
	init_ex(&ex);

	/* the mount namespace answers first: everything outside is read-only */
	assert_int_equal(RUN(&r, &ex, "touch", home_file), 0);
	assert_int_not_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err.buf, "Read-only file system"));
	assert_false(fsutil_exists(home_file));
	exec_result_release(&r);
	/* and without it, Landlock alone holds */
	{
		struct executor ex2;

		sandbox_probe_mask(SB_FEAT_MNTNS);
		cfg.sandbox.allow_unconfined = 1;
		init_ex(&ex2);
		assert_int_equal(RUN(&r, &ex2, "touch", home_file), 0);
		assert_int_not_equal(r.exit_code, 0);
		assert_non_null(strstr(r.err.buf, "Permission denied"));
		assert_false(fsutil_exists(home_file));
		exec_result_release(&r);
		executor_release(&ex2);
		cfg.sandbox.allow_unconfined = 0;
		sandbox_probe_mask(0);
	}

	assert_int_equal(RUN(&r, &ex, "sh", "-c", "echo x > \"$1\"", "sh", etc_file), 0);
	assert_int_not_equal(r.exit_code, 0);
	assert_false(fsutil_exists(etc_file));
	exec_result_release(&r);

	/* through a symlink planted in the workspace */
	assert_int_equal(RUN(&r, &ex, "touch", "link/pwned"), 0);
	assert_int_not_equal(r.exit_code, 0);
	assert_null(tu_read(outside, "pwned"));
	exec_result_release(&r);
	assert_int_equal(RUN(&r, &ex, "mkdir", "link/dir"), 0);
	assert_int_not_equal(r.exit_code, 0);
	assert_false(fsutil_exists(outside) && tu_read(outside, "dir"));
	exec_result_release(&r);

	/*
	 * through .. (the workspace is under /tmp here, so this lands in the
	 * command's private /tmp, never in ours)
	 */
	assert_int_equal(RUN(&r, &ex, "touch", dotdot), 0);
	{
		char *p = xstrfmt("%s-dotdot", ws);

		assert_false(fsutil_exists(p));
		free(p);
	}
	exec_result_release(&r);

	/* existing files outside: no truncation, no unlink, no rename, no chmod */
	assert_int_equal(RUN(&r, &ex, "truncate", "-s", "0", victim), 0);
	assert_int_not_equal(r.exit_code, 0);
	exec_result_release(&r);
	assert_int_equal(RUN(&r, &ex, "unlink", victim), 0);
	assert_int_not_equal(r.exit_code, 0);
	exec_result_release(&r);
	assert_int_equal(RUN(&r, &ex, "mv", victim, "stolen.txt"), 0);
	assert_int_not_equal(r.exit_code, 0);
	exec_result_release(&r);
	{
		char *c = tu_read(outside, "victim.txt");

		assert_non_null(c);
		assert_string_equal(c, "keep me\n");
		free(c);
	}
	/* but reading outside is fine */
	assert_int_equal(RUN(&r, &ex, "cat", victim), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out.buf, "keep me\n");
	exec_result_release(&r);

	executor_release(&ex);
	unlink(home_file);
	unlink(etc_file);
	free(home_file);
	free(etc_file);
	free(link);
	free(dotdot);
	free(victim);
	free(ws_base);
	tu_rmtree(outside);
}

static void test_native_writes_inside_work(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	char *extra = tu_mkdtemp(), *c, *tmpdir;

	(void)state;
	need_native();
	strvec_push(&cfg.sandbox.writable_roots, extra);
	init_ex(&ex);
	assert_int_equal(run_argv(&r, &ex, NULL, 0, NULL, (const char *const[]){
		"sh", "-c",
		"set -e; echo a > a.txt; mkdir -p d/e; echo b > d/e/b.txt; mv a.txt d/a.txt; "
		"echo t > \"$TMPDIR/t\"; cat \"$TMPDIR/t\"; echo \"$TMPDIR\"; "
		"echo x > \"$1/extra.txt\"; echo n > /dev/null",
		"sh", extra, NULL }), 0);
	assert_int_equal(r.exit_code, 0);
	assert_true(!strncmp(r.out.buf, "t\n", 2));
	c = tu_read(ws, "d/a.txt");
	assert_string_equal(c, "a\n");
	free(c);
	c = tu_read(ws, "d/e/b.txt");
	assert_string_equal(c, "b\n");
	free(c);
	c = tu_read(extra, "extra.txt");
	assert_string_equal(c, "x\n");
	free(c);
	/* the private TMPDIR is a tmpfs of the command's own on /tmp: nothing reaches ours */
	tmpdir = xstrndup(r.out.buf + 2, strcspn(r.out.buf + 2, "\n"));
	assert_string_equal(tmpdir, "/tmp");
	free(tmpdir);
	exec_result_release(&r);
	{
		char *name = xstrfmt("/tmp/forgex-private-%ld", (long)getpid());
		char *script = xstrfmt("echo t > %s && cat %s", name, name);

		assert_int_equal(RUN(&r, &ex, "sh", "-c", script), 0);
		assert_int_equal(r.exit_code, 0);
		assert_string_equal(r.out.buf, "t\n");
		assert_false(fsutil_exists(name));
		exec_result_release(&r);
		free(script);
		free(name);
	}
	executor_release(&ex);
	tu_rmtree(extra);
}

/*
 * workspace_read_only (the repository map's ctags): the workspace and the
 * writable roots can be read, not written, by the kernel's refusal; the
 * private /tmp still can.
 */
/* "<dir>/<rel>" in a buffer of its own (the next call reuses it). */
static const char *xstrfmt_tmp(const char *dir, const char *rel)
{
	static char *last;

	free(last);
	last = xstrfmt("%s/%s", dir, rel);
	return last;
}

static void test_native_workspace_read_only(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	char *extra = tu_mkdtemp(), *script;

	(void)state;
	need_native();
	tu_write(ws, "ro.txt", "read me\n");
	strvec_push(&cfg.sandbox.writable_roots, extra);
	init_ex(&ex);
	ex.workspace_read_only = 1;
	script = xstrfmt("cat ro.txt; echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"; "
			 "echo x > new.txt; echo y > \"%s/extra.txt\"; echo z >> ro.txt; exit 0",
			 extra);
	assert_int_equal(RUN(&r, &ex, "sh", "-c", script), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out.buf, "read me\nt\n");
	/* three refusals, each the kernel's */
	assert_non_null(strstr(r.err.buf, "new.txt"));
	assert_non_null(strstr(r.err.buf, "extra.txt"));
	assert_non_null(strstr(r.err.buf, "ro.txt"));
	if (!strstr(r.err.buf, "Read-only file system") && !strstr(r.err.buf, "Permission denied"))
		fail_msg("not refused by the kernel: %s", r.err.buf);
	assert_false(fsutil_exists(xstrfmt_tmp(ws, "new.txt")));
	assert_false(fsutil_exists(xstrfmt_tmp(extra, "extra.txt")));
	{
		char *c = tu_read(ws, "ro.txt");

		assert_string_equal(c, "read me\n");
		free(c);
	}
	exec_result_release(&r);
	executor_release(&ex);
	/* the same executor without the flag writes: the refusals above were the flag's */
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "sh", "-c", "echo x > new.txt"), 0);
	assert_int_equal(r.exit_code, 0);
	assert_true(fsutil_exists(xstrfmt_tmp(ws, "new.txt")));
	exec_result_release(&r);
	executor_release(&ex);
	free(script);
	tu_rmtree(extra);
}

static int listen_local(int *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s, 16), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return s;
}

static void connect_attempt(struct exec_result *r, struct executor *ex, int port)
{
	char *script = xstrfmt("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port);

	assert_int_equal(RUN(r, ex, "bash", "-c", script), 0);
	free(script);
}

static void test_native_no_network(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	int port, s;

	(void)state;
	need_native();
	s = listen_local(&port);

	/*
	 * network = true does not give the host's network either: the command
	 * keeps its own namespace, where nobody listens on 127.0.0.1:PORT
	 * (only the egress proxy's bridge, tests/unit/sandbox/native_network.c)
	 */
	if (sandbox_kernel_caps()->netns) {
		cfg.sandbox.network = 1;
		init_ex(&ex);
		connect_attempt(&r, &ex, port);
		assert_int_not_equal(r.exit_code, 0);
		assert_non_null(strstr(r.err.buf, "Connection refused"));
		exec_result_release(&r);
		executor_release(&ex);
	}

	cfg.sandbox.network = 0;
	if (!sandbox_kernel_caps()->netns)
		print_message("note: no network namespaces; testing the seccomp fallback only\n");
	init_ex(&ex);
	connect_attempt(&r, &ex, port);
	assert_int_not_equal(r.exit_code, 0);
	assert_null(strstr(r.out.buf, "connected"));
	exec_result_release(&r);
	/* loopback inside the sandbox works (test suites run local servers) */
	if (sandbox_kernel_caps()->netns) {
		assert_int_equal(RUN(&r, &ex, "cat", "/sys/class/net/lo/operstate"), 0);
		assert_int_equal(r.exit_code, 0);
		assert_true(!strcmp(r.out.buf, "unknown\n") || !strcmp(r.out.buf, "up\n"));
		exec_result_release(&r);
	}
	executor_release(&ex);

	/* where namespaces are impossible: seccomp refuses the socket */
	if (!sandbox_kernel_caps()->seccomp) {
		close(s);
		skip_msg("seccomp is not available: the fallback cannot be tested");
	}
	sandbox_probe_mask(SB_FEAT_NETNS);
	init_ex(&ex);
	connect_attempt(&r, &ex, port);
	assert_int_not_equal(r.exit_code, 0);
	assert_non_null(strstr(r.err.buf, "Permission denied"));
	exec_result_release(&r);
	executor_release(&ex);
	close(s);
}

/* A program that connects to 127.0.0.1:PORT and says what happened. */
static const char probe_py[] =
	"#!/usr/bin/python3\n"
	"import socket, sys\n"
	"try:\n"
	"    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5).close()\n"
	"    print('connected')\n"
	"except OSError as e:\n"
	"    print('failed:', e.strerror, file=sys.stderr)\n"
	"    sys.exit(3)\n";

static void probe(struct exec_result *r, struct executor *ex, const char *prog, int port,
		  int want_ret)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", port);
	assert_int_equal(RUN(r, ex, prog, p), want_ret);
}

/* A person who says yes, always. */
static int say_always(void *data, struct approval_answer *out, const struct approval_request *rq,
		      const volatile sig_atomic_t *cancel)
{
	(void)data;
	(void)rq;
	(void)cancel;
	out->verdict = APPROVE_ALWAYS;
	return APPROVE_ALWAYS;
}

/*
 * Issue 20: a command on the network list that is approved (mode auto,
 * or an `a` answer remembered) gets no network with network = false: it
 * does not reach a listener on the host's 127.0.0.1, any more than a
 * command that needed no approval (its own namespace: nobody listens on
 * its loopback; or, without namespaces, the seccomp rule).
 */
static void test_native_approved_network_command(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct approver ap;
	struct executor ex;
	int port, s, pass;

	(void)state;
	need_native();
	s = listen_local(&port);
	/* "curl" by its name is a network command; "probe" is not */
	tu_write(ws, "bin/curl", probe_py);
	tu_write(ws, "bin/probe", probe_py);
	{
		char *a = xstrfmt("%s/bin/curl", ws), *b = xstrfmt("%s/bin/probe", ws);

		assert_int_equal(chmod(a, 0755), 0);
		assert_int_equal(chmod(b, 0755), 0);
		free(a);
		free(b);
	}
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			if (!sandbox_kernel_caps()->seccomp)
				break;
			/* no network namespaces: seccomp and Landlock are the wall */
			sandbox_probe_mask(SB_FEAT_NETNS);
		}
		set_str(&cfg.permissions.mode, "auto");
		init_ex(&ex);
		probe(&r, &ex, "./bin/curl", port, 0);
		assert_int_equal(r.exit_code, 3);
		assert_null(strstr(r.out.buf, "connected"));
		if (pass == 0 && sandbox_kernel_caps()->netns)
			assert_non_null(strstr(r.err.buf, "failed: Connection refused"));
		else
			assert_non_null(strstr(r.err.buf, "failed: Permission denied"));
		exec_result_release(&r);
		probe(&r, &ex, "./bin/probe", port, 0);
		assert_int_equal(r.exit_code, 3);
		if (pass == 0 && sandbox_kernel_caps()->netns)
			assert_non_null(strstr(r.err.buf, "failed: Connection refused"));
		else
			assert_non_null(strstr(r.err.buf, "failed: Permission denied"));
		exec_result_release(&r);
		executor_release(&ex);

		/* mode ask: not approved (nobody to ask) is refused, approved runs with network */
		set_str(&cfg.permissions.mode, "ask");
		init_ex(&ex);
		probe(&r, &ex, "./bin/curl", port, FX_EDENIED);
		assert_non_null(strstr(err_last(), "Command not approved: ./bin/curl"));
		approver_init(&ap, say_always, NULL, NULL);
		ex.approver = &ap;
		probe(&r, &ex, "./bin/curl", port, 0);
		assert_int_equal(r.exit_code, 3);	/* approved, and still offline */
		assert_null(strstr(r.out.buf, "connected"));
		exec_result_release(&r);
		probe(&r, &ex, "./bin/probe", port, 0);
		assert_int_equal(r.exit_code, 3);
		assert_null(strstr(r.out.buf, "connected"));
		exec_result_release(&r);
		/* remembered: asked no more, and still no network */
		ap.ask = NULL;
		probe(&r, &ex, "./bin/curl", port, 0);
		assert_int_equal(r.exit_code, 3);
		assert_null(strstr(r.out.buf, "connected"));
		exec_result_release(&r);
		ex.approver = NULL;
		approver_release(&ap);
		/*
		 * Approved by the configuration, not by a person (the harness runs
		 * a configured test command so): no network, as before.
		 */
		ex.policy.mode = APPROVAL_AUTO;
		probe(&r, &ex, "./bin/curl", port, 0);
		assert_int_equal(r.exit_code, 3);
		assert_null(strstr(r.out.buf, "connected"));
		exec_result_release(&r);
		executor_release(&ex);
	}
	close(s);
}

/* The file's content once a whole line is there (a shell creates it empty first). */
static char *read_line_file(const char *dir, const char *file)
{
	char *s = tu_read(dir, file);

	if (s && (!*s || s[strlen(s) - 1] != '\n')) {
		free(s);
		s = NULL;
	}
	return s;
}

/*
 * The host pid of a live "sleep MARKER" (the sandbox has its own /proc and
 * PID namespace: a command cannot tell us its host pid), or 0.
 */
static pid_t find_sleep(const char *marker)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t found = 0;

	while (d && !found && (de = readdir(d))) {
		struct buf b = BUF_INIT;
		char *f;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		f = xstrfmt("/proc/%s/cmdline", de->d_name);
		if (fsutil_read_file(&b, f, 4096) >= 0 && b.len > strlen(marker) + 1 &&
		    !strcmp(b.buf + b.len - strlen(marker) - 1, marker) &&
		    strstr(b.buf, "sleep")) {
			char *st = xstrfmt("/proc/%s/stat", de->d_name);
			struct buf s = BUF_INIT;

			/* zombies do not count: they are dead and being reaped */
			if (fsutil_read_file(&s, st, 4096) >= 0 && !strstr(s.buf, ") Z "))
				found = (pid_t)atoi(de->d_name);
			buf_release(&s);
			free(st);
		}
		buf_release(&b);
		free(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether "sleep MARKER" is alive, once `file` says it was started. */
static int pid_alive(const char *dir, const char *file, const char *marker)
{
	char *s = NULL;
	int i;

	for (i = 0; i < 300 && !(s = read_line_file(dir, file)); i++)
		usleep(10000);
	if (!s)
		fail_msg("%s was never written", file);
	free(s);
	return find_sleep(marker) != 0;
}

static char marker[3][32];

static const char *const *markers_env(void)
{
	static char env[3][40];
	static const char *v[4];
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(marker[i], sizeof(marker[i]), "%d.%ld", 301 + i, (long)getpid());
		snprintf(env[i], sizeof(env[i]), "M%d=%.30s", i + 1, marker[i]);
		v[i] = env[i];
	}
	v[3] = NULL;
	return v;
}

static volatile sig_atomic_t cancel_flag;
static struct timespec cancel_at;

static void on_cancel(int sig)
{
	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &cancel_at);
	cancel_flag = 1;
}

static double secs(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

/*
 * A Python command whose processes all ignore SIGTERM: two children (one
 * in a session of its own), each with a "sleep MARKER" below it.
 */
static const char stubborn_tree_py[] =
	"import os, signal, sys, time\n"
	"signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
	"for i, m in enumerate(sys.argv[1:3]):\n"
	"    if os.fork() == 0:\n"
	"        if i: os.setsid()\n"
	"        if os.fork() == 0:\n"
	"            os.execvp('sleep', ['sleep', m])\n"
	"        time.sleep(300)\n"
	"        os._exit(0)\n"
	"time.sleep(300)\n";

/*
 * An interrupt (the cancel flag a SIGINT handler sets) stops a running
 * command and everything it started within a second, even when all of
 * them ignore SIGTERM; executor_run() returns FX_EINTR. Natively and with
 * the "none" backend (no PID namespace: the process group and what the
 * supervisor adopted).
 */
static void test_native_interrupt_kills_the_tree_within_a_second(void **state)
{
	static const char *const backends[] = { "native", "none" };
	struct sigaction sa, old;
	size_t b;

	(void)state;
	need_native();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_cancel;
	sigaction(SIGUSR2, &sa, &old);
	tu_write(ws, "tree.py", stubborn_tree_py);
	for (b = 0; b < ARRAY_SIZE(backends); b++) {
		struct exec_result r = EXEC_RESULT_INIT;
		struct timespec back;
		struct executor ex;
		char m1[32], m2[32];
		double took;
		int i, ret;
		pid_t pid;

		set_str(&cfg.sandbox.backend, backends[b]);
		cfg.sandbox.allow_unconfined = 1;
		if (executor_init(&ex, &cfg, ws) < 0)
			fail_msg("executor_init (%s): %s", backends[b], err_last());
		snprintf(m1, sizeof(m1), "401.%ld%zu", (long)getpid(), b);
		snprintf(m2, sizeof(m2), "402.%ld%zu", (long)getpid(), b);
		cancel_flag = 0;
		executor_set_cancel(&ex, -1, &cancel_flag);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			/* the person presses Ctrl-C once the whole tree is up */
			for (i = 0; i < 1500 && (!find_sleep(m1) || !find_sleep(m2)); i++)
				usleep(20000);
			kill(getppid(), SIGUSR2);
			_exit(0);
		}
		ret = run_argv(&r, &ex, NULL, 60000, NULL,
			       (const char *const[]){ "python3", "tree.py", m1, m2, NULL });
		clock_gettime(CLOCK_MONOTONIC, &back);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		assert_int_equal(ret, FX_EINTR);
		assert_true(cancel_flag);
		took = secs(&back) - secs(&cancel_at);
		print_message("%s: interrupt to return: %.0f ms\n", backends[b], took * 1000);
		/* within a second (the SIGTERM grace was a second before) */
		assert_true(took < 1.0);
		/* none of it is left */
		assert_int_equal(find_sleep(m1), 0);
		assert_int_equal(find_sleep(m2), 0);
		executor_release(&ex);
	}
	sigaction(SIGUSR2, &old, NULL);
}

/* A background child and a setsid one. */
static const char kill_all_script[] =
	"sh -c 'echo x > bg.pid; exec sleep $M1' & "
	"setsid sh -c 'echo x > setsid.pid; exec sleep $M2' & "
	"while [ ! -s bg.pid ] || [ ! -s setsid.pid ]; do sleep 0.05; done; "
	"echo started; sleep $M3";

static void check_kill_all(void)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	init_ex(&ex);
	assert_int_equal(run_argv(&r, &ex, NULL, 1500, markers_env(),
				  (const char *const[]){ "sh", "-c", kill_all_script, NULL }), 0);
	assert_true(r.timed_out);
	assert_string_equal(r.out.buf, "started\n");
	assert_true(r.duration_ms < 6000);
	assert_false(pid_alive(ws, "bg.pid", marker[0]));
	assert_false(pid_alive(ws, "setsid.pid", marker[1]));
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_native_timeout_kills_everything(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	need_native();
	check_kill_all();
	if (sandbox_kernel_caps()->pidns) {
		/* the command is PID 2: its supervisor is the namespace's init */
		init_ex(&ex);
		assert_int_equal(RUN(&r, &ex, "sh", "-c", "echo $$"), 0);
		assert_string_equal(r.out.buf, "2\n");
		exec_result_release(&r);
		executor_release(&ex);
		/* and without a PID namespace, the subreaper supervisor does it */
		tu_rmtree(ws);
		ws = tu_mkdtemp();
		sandbox_probe_mask(SB_FEAT_PIDNS);
		check_kill_all();
	}
}

/* Peak RSS of a process running the executor on 1 GiB of output. */
static void test_native_gigabyte_output_bounded(void **state)
{
	struct {
		long hwm_kb;
		int ret, truncated, exit_code, head_ok, tail_ok, mark_ok;
		unsigned long long total;
		size_t len;
	} rep;
	int p[2], st;
	pid_t pid;

	(void)state;
	need_native();
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_result r = EXEC_RESULT_INIT;
		struct executor ex;
		char line[256];
		FILE *f;

		memset(&rep, 0, sizeof(rep));
		if (executor_init(&ex, &cfg, ws) < 0)
			_exit(2);
		rep.ret = run_argv(&r, &ex, NULL, 120000, NULL,
				   (const char *const[]){ "sh", "-c",
					"printf HEAD; head -c 1073741824 /dev/zero; printf TAIL",
					NULL });
		rep.truncated = r.truncated;
		rep.exit_code = r.exit_code;
		rep.total = (unsigned long long)r.out_total;
		rep.len = r.out.len;
		rep.head_ok = !strncmp(r.out.buf, "HEAD\0\0", 6);
		rep.tail_ok = r.out.len > 8 && !memcmp(r.out.buf + r.out.len - 5, "\0TAIL", 5);
		rep.mark_ok = memmem(r.out.buf, r.out.len, "bytes omitted", 13) != NULL;
		f = fopen("/proc/self/status", "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "VmHWM:", 6))
				rep.hwm_kb = strtol(line + 6, NULL, 10);
		if (f)
			fclose(f);
		exec_result_release(&r);
		executor_release(&ex);
		if (write(p[1], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
			_exit(3);
		_exit(0);
	}
	close(p[1]);
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(read(p[0], &rep, sizeof(rep)), (ssize_t)sizeof(rep));
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	print_message("1 GiB of output: peak RSS of the executing process %ld kB\n", rep.hwm_kb);
	assert_int_equal(rep.ret, 0);
	assert_int_equal(rep.exit_code, 0);
	assert_true(rep.truncated);
	assert_true(rep.total == (1ULL << 30) + 8);
	assert_true(rep.len < 1000000 + 100);
	assert_true(rep.head_ok);
	assert_true(rep.tail_ok);
	assert_true(rep.mark_ok);
	assert_true(rep.hwm_kb > 0 && rep.hwm_kb < 64 * 1024);
}

/*
 * Processes of `uid` whose command line holds `mark` (other test runs on
 * this machine have processes as nobody too: only ours may count).
 */
static int count_uid_procs(uid_t uid, const char *mark)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int n = 0;

	while (d && (de = readdir(d))) {
		struct buf b = BUF_INIT;
		struct stat sb;
		char *f;
		size_t i;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, 0) < 0 || sb.st_uid != uid)
			continue;
		f = xstrfmt("/proc/%s/cmdline", de->d_name);
		if (fsutil_read_file(&b, f, 4096) >= 0) {
			for (i = 0; i < b.len; i++)
				if (!b.buf[i])
					b.buf[i] = ' ';
			n += strstr(b.buf, mark) != NULL;
		}
		buf_release(&b);
		free(f);
	}
	if (d)
		closedir(d);
	return n;
}

/*
 * Run `script` under native with max_processes = `limit` in a child that
 * first drops to `uid` (unless it is 0). Writes the command's stderr to
 * `err` and returns the child's verdict: 0 ran; 10 executor_init failed;
 * 11 could not drop privileges.
 */
static int run_limited(uid_t uid, const char *dir, long limit, const char *script,
		       int timeout_ms, struct buf *err)
{
	int p[2], st;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_result r = EXEC_RESULT_INIT;
		struct executor ex;

		close(p[0]);
		if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
			_exit(11);
		if (uid)
			setenv("HOME", "/nonexistent", 1);
		cfg.sandbox.max_processes = limit;
		if (executor_init(&ex, &cfg, dir) < 0) {
			dprintf(p[1], "%s", err_last());
			_exit(10);
		}
		if (run_argv(&r, &ex, NULL, timeout_ms, NULL,
			     (const char *const[]){ "sh", "-c", script, NULL }) < 0) {
			dprintf(p[1], "%s", err_last());
			_exit(12);
		}
		dprintf(p[1], "exit=%d\n%s", r.exit_code, r.err.buf);
		exec_result_release(&r);
		executor_release(&ex);
		_exit(0);
	}
	close(p[1]);
	fsutil_read_fd(err, p[0], 1 << 20);
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_native_fork_bomb_unprivileged(void **state)
{
	struct buf err = BUF_INIT;
	struct timespec a, b;
	char *mark;
	int ret, before;

	(void)state;
	need_native();
	if (geteuid() != 0)
		skip_msg("needs root to drop to the unprivileged uid %d (running as %d)", NOBODY,
			 (int)geteuid());
	assert_int_equal(chown(ws, NOBODY, NOBODY), 0);
	mark = xstrfmt("f() { f | f & }; f; sleep 3 # forgex-bomb-%ld", (long)getpid());
	before = count_uid_procs(NOBODY, mark);
	assert_int_equal(before, 0);
	ret = run_limited(NOBODY, ws, 40, mark, 4000, &err);
	if (ret == 11)
		skip_msg("cannot drop privileges to uid %d", NOBODY);
	if (ret == 10 && strstr(err.buf, "cannot enforce"))
		skip_msg("native cannot run unprivileged here: %s", err.buf);
	assert_int_equal(ret, 0);
	/* the shell ran into the limit... */
	assert_non_null(strstr(err.buf, "fork"));
	/* ...and nothing is left, and the machine answers */
	assert_int_equal(count_uid_procs(NOBODY, mark), 0);
	free(mark);
	clock_gettime(CLOCK_MONOTONIC, &a);
	{
		struct tu_result r;

		tu_run(&r, (const char *const[]){ "true", NULL }, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 2);
	buf_release(&err);
}

static void test_native_process_limit(void **state)
{
	static const char spawn100[] =
		"i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done; echo done";
	struct buf err = BUF_INIT;
	int ret;

	(void)state;
	need_native();
	/* as the caller: root is limited through a pids cgroup, others by RLIMIT_NPROC */
	ret = run_limited(0, ws, 20, spawn100, 3000, &err);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(err.buf, "fork"));
	buf_reset(&err);
	/* a limit above what the command needs changes nothing */
	ret = run_limited(0, ws, 512, "sleep 0.1 & sleep 0.1 & wait; echo ok", 5000, &err);
	assert_int_equal(ret, 0);
	assert_null(strstr(err.buf, "fork"));
	assert_non_null(strstr(err.buf, "exit=0"));
	buf_release(&err);
}

static void test_native_unprivileged_identity(void **state)
{
	struct buf err = BUF_INIT;
	int ret;

	(void)state;
	need_native();
	if (geteuid() != 0)
		skip_msg("needs root to drop to uid %d", NOBODY);
	assert_int_equal(chown(ws, NOBODY, NOBODY), 0);
	ret = run_limited(NOBODY, ws, 64, "id -u >&2; echo in > f; cat f >&2", 5000, &err);
	if (ret == 11)
		skip_msg("cannot drop privileges to uid %d", NOBODY);
	if (ret)
		print_message("child said: %s\n", err.buf);
	assert_int_equal(ret, 0);
	assert_string_equal(err.buf, "exit=0\n65534\nin\n");
	buf_release(&err);
}

static void test_native_memory_limit(void **state)
{
	static const char big[] = "x=$(head -c 300000000 /dev/zero | tr '\\0' a); echo ${#x}";
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	need_native();
	set_str(&cfg.sandbox.memory_limit, "128m");
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "bash", "-c", big), 0);
	assert_int_not_equal(r.exit_code, 0);
	assert_null(strstr(r.out.buf, "300000000"));
	exec_result_release(&r);
	executor_release(&ex);

	set_str(&cfg.sandbox.memory_limit, "");
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "bash", "-c", big), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out.buf, "300000000\n");
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_native_dies_with_forgex(void **state)
{
	char *s = NULL;
	pid_t pid, sleeper;
	int i;

	const char *const *env;

	(void)state;
	need_native();
	env = markers_env();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_result r = EXEC_RESULT_INIT;
		struct executor ex;

		if (executor_init(&ex, &cfg, ws) < 0)
			_exit(2);
		run_argv(&r, &ex, NULL, 60000, env, (const char *const[]){
			"sh", "-c", "echo x > s.pid; exec sleep $M1", NULL });
		_exit(0);
	}
	for (i = 0; i < 300 && !(s = read_line_file(ws, "s.pid")); i++)
		usleep(10000);
	assert_non_null(s);
	free(s);
	for (i = 0; i < 300 && !(sleeper = find_sleep(marker[0])); i++)
		usleep(10000);
	assert_true(sleeper > 1);
	assert_int_equal(kill(sleeper, 0), 0);
	/* forgex is killed without any chance to clean up */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (i = 0; i < 300 && kill(sleeper, 0) == 0; i++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;	/* we may be the subreaper of what was left */
		usleep(10000);
	}
	assert_int_not_equal(kill(sleeper, 0), 0);
}

static void test_native_refuses_what_it_cannot_enforce(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	sandbox_probe_mask(SB_FEAT_LANDLOCK);
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "Landlock"));

	sandbox_probe_mask(SB_FEAT_NETNS | SB_FEAT_SECCOMP);
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "network isolation"));
	assert_non_null(strstr(err_last(), "seccomp (refusing setuid bits"));
	/* network = true goes only through the proxy, which needs a network namespace */
	cfg.sandbox.network = 1;
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "a network namespace (network = true"));
	assert_non_null(strstr(err_last(), "seccomp"));
	cfg.sandbox.network = 0;
	sandbox_probe_mask(SB_FEAT_NETNS);
	if (sandbox_kernel_caps()->landlock_abi) {
		init_ex(&ex);
		executor_release(&ex);
	}

	/* no mount namespace, no IPC namespace: refused, each named */
	sandbox_probe_mask(SB_FEAT_MNTNS | SB_FEAT_IPCNS);
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "a mount namespace (read-only system"));
	assert_non_null(strstr(err_last(), "an IPC namespace"));

	if (geteuid() == 0) {
		sandbox_probe_mask(SB_FEAT_CGROUP);
		assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
		assert_non_null(strstr(err_last(), "process limit"));
	}

	/* allow_unconfined: runs, and says what is missing */
	sandbox_probe_mask(SB_FEAT_LANDLOCK);
	cfg.sandbox.allow_unconfined = 1;
	init_ex(&ex);
	assert_int_equal(executor_warnings(&ex)->nr, 1);
	assert_non_null(strstr(executor_warnings(&ex)->v[0], "Landlock"));
	assert_int_equal(RUN(&r, &ex, "true"), 0);
	assert_int_equal(r.exit_code, 0);
	exec_result_release(&r);
	executor_release(&ex);
	cfg.sandbox.allow_unconfined = 0;

	/* auto with nothing usable refuses, naming why */
	set_str(&cfg.sandbox.backend, "auto");
	{
		char *path = xstrdup(getenv("PATH"));

		setenv("PATH", "/nonexistent", 1);
		assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
		assert_non_null(strstr(err_last(), "native: "));
		assert_non_null(strstr(err_last(), "docker: "));
		cfg.sandbox.allow_unconfined = 1;
		assert_int_equal(executor_init(&ex, &cfg, ws), 0);
		assert_string_equal(executor_backend_name(&ex), "none");
		assert_non_null(strstr(executor_warnings(&ex)->v[0], "no sandbox"));
		executor_release(&ex);
		setenv("PATH", path, 1);
		free(path);
	}
	sandbox_probe_mask(0);
	if (sandbox_kernel_caps()->landlock_abi) {
		cfg.sandbox.allow_unconfined = 0;
		assert_int_equal(executor_init(&ex, &cfg, ws), 0);
		assert_string_equal(executor_backend_name(&ex), "native");
		assert_true(executor_caps(&ex) & SB_CAP_FS);
		assert_true(executor_caps(&ex) & SB_CAP_NET);
		executor_release(&ex);
		/* what is missing is not claimed */
		cfg.sandbox.allow_unconfined = 1;
		set_str(&cfg.sandbox.backend, "native");
		sandbox_probe_mask(SB_FEAT_LANDLOCK | SB_FEAT_PIDNS);
		assert_int_equal(executor_init(&ex, &cfg, ws), 0);
		assert_false(executor_caps(&ex) & SB_CAP_FS);
		assert_false(executor_caps(&ex) & SB_CAP_PIDNS);
		assert_true(executor_caps(&ex) & SB_CAP_NET);
		executor_release(&ex);
		sandbox_probe_mask(0);
	}
}

static void test_native_child_setup_failure_fails_closed(void **state)
{
	static const char *const stages[] = {
		NULL, "setrlimit", "no_new_privs", "seccomp", "landlock_restrict_self",
		"mount: make / private", "drop capabilities",
	};
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	int i;

	(void)state;
	need_native();
	sandbox_probe_mask(SB_FEAT_NETNS);	/* so that there is a seccomp stage */
	init_ex(&ex);
	for (i = 1; i < (int)ARRAY_SIZE(stages); i++) {
		sandbox_inject_child_failure = i;
		assert_int_equal(RUN(&r, &ex, "touch", "ran"), FX_EDENIED);
		assert_non_null(strstr(err_last(), "sandbox setup failed"));
		assert_non_null(strstr(err_last(), stages[i]));
		assert_false(tu_read(ws, "ran") != NULL);
	}
	sandbox_inject_child_failure = 0;
	assert_int_equal(RUN(&r, &ex, "touch", "ran"), 0);
	assert_int_equal(r.exit_code, 0);
	exec_result_release(&r);
	executor_release(&ex);
}

/* Commands that ignore SIGTERM get SIGKILL after the grace, descendants too. */
static const char stubborn_script[] =
	"trap '' TERM; "
	"setsid sh -c 'echo x > stubborn.pid; exec sleep $M1' & "
	"while [ ! -s stubborn.pid ]; do sleep 0.05; done; echo started; exec sleep $M2";

static void check_stubborn(void)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	init_ex(&ex);
	ex.grace_ms = 300;
	assert_int_equal(run_argv(&r, &ex, NULL, 700, markers_env(),
				  (const char *const[]){ "sh", "-c", stubborn_script, NULL }), 0);
	assert_true(r.timed_out);
	assert_string_equal(r.out.buf, "started\n");
	assert_int_equal(r.exit_code, 128 + SIGKILL);
	assert_true(r.duration_ms < 4000);
	assert_false(pid_alive(ws, "stubborn.pid", marker[0]));
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_native_sigterm_ignored(void **state)
{
	(void)state;
	need_native();
	check_stubborn();
	if (sandbox_kernel_caps()->pidns) {
		tu_rmtree(ws);
		ws = tu_mkdtemp();
		sandbox_probe_mask(SB_FEAT_PIDNS);
		check_stubborn();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_native_sigterm_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_writes_outside_fail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_writes_inside_work, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_workspace_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_no_network, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_approved_network_command, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_native_interrupt_kills_the_tree_within_a_second,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_timeout_kills_everything, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_native_gigabyte_output_bounded, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_native_fork_bomb_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_process_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_unprivileged_identity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_memory_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_dies_with_forgex, setup, teardown),
		cmocka_unit_test_setup_teardown(test_native_refuses_what_it_cannot_enforce, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_native_child_setup_failure_fails_closed, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

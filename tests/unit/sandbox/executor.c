/*
 * The executor with the "none" backend: what every backend shares (policy
 * gate, working folder, environment, exit codes, output cap, kill-all,
 * cancel). Real processes, real kernel.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/path.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

static char *ws;
static struct config cfg;

/* The defaults of DESIGN.md section 3, by hand: tests only link libforgex. */
static void cfg_setup(struct config *c, const char *backend)
{
	/* the built-in defaults, as a user without a config file has them */
	config_init(c);
	free(c->sandbox.backend);
	c->sandbox.backend = xstrdup(backend);
}

static void cfg_teardown(struct config *c)
{
	config_release(c);
}

/* Let the tests use sh: a non-empty deny list replaces the default one. */
static void allow_shells(struct config *c)
{
	strvec_clear(&c->terminal.denied);
	strvec_push(&c->terminal.denied, "rm");
}

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	cfg_setup(&cfg, "none");
	allow_shells(&cfg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cfg_teardown(&cfg);
	tu_rmtree(ws);
	ws = NULL;
	return 0;
}

static int run_argv(struct exec_result *r, struct executor *ex, const char *cwd, int timeout_ms,
		    const char *const *env, const char *const *argv)
{
	struct exec_request req = { argv, 0, cwd, timeout_ms, env };

	while (argv[req.argc])
		req.argc++;
	return executor_run(r, ex, &req);
}

#define RUN(r, ex, ...) run_argv((r), (ex), NULL, 0, NULL, (const char *const[]){ __VA_ARGS__, NULL })

static void init_ex(struct executor *ex)
{
	int ret = executor_init(ex, &cfg, ws);

	if (ret < 0)
		fail_msg("executor_init: %s", err_last());
}

/*
 * This process's open descriptors, read in-process: an `ls` child saw the
 * pipes its own run opens here while they were open or closed, as the
 * scheduler had it, and under load the count moved.
 */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the listing's own */
}

static void test_executor_exit_codes(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	pid_t kids[8];
	int fds_before;

	(void)state;
	init_ex(&ex);
	fds_before = count_fds();
	assert_string_equal(executor_backend_name(&ex), "none");

	assert_int_equal(RUN(&r, &ex, "true"), 0);
	assert_int_equal(r.exit_code, 0);
	assert_false(r.timed_out);
	exec_result_release(&r);

	assert_int_equal(RUN(&r, &ex, "false"), 0);
	assert_int_equal(r.exit_code, 1);
	exec_result_release(&r);

	assert_int_equal(RUN(&r, &ex, "sh", "-c", "echo out; echo err >&2; exit 7"), 0);
	assert_int_equal(r.exit_code, 7);
	assert_string_equal(r.out.buf, "out\n");
	assert_string_equal(r.err.buf, "err\n");
	exec_result_release(&r);

	assert_int_equal(RUN(&r, &ex, "forgex-no-such-command-xyz", "a"), 0);
	assert_int_equal(r.exit_code, 127);
	assert_string_equal(r.err.buf, "command not found: forgex-no-such-command-xyz");
	assert_string_equal(r.argv.v[1], "a");
	exec_result_release(&r);

	/* exists but is not executable */
	tu_write(ws, "notes.txt", "plain text\n");
	assert_int_equal(RUN(&r, &ex, "./notes.txt"), 0);
	assert_int_equal(r.exit_code, 126);
	assert_non_null(strstr(r.err.buf, "failed to execute command"));
	assert_non_null(strstr(r.err.buf, "Permission denied"));
	exec_result_release(&r);

	/* executable bit but no valid format: execve fails in the child */
	tu_write(ws, "bin/garbage", "\x01\x02 not a program\n");
	{
		char *p = xstrfmt("%s/bin/garbage", ws);

		assert_int_equal(chmod(p, 0755), 0);
		free(p);
	}
	assert_int_equal(RUN(&r, &ex, "bin/garbage"), 0);
	assert_int_equal(r.exit_code, 126);
	assert_non_null(strstr(r.err.buf, "Exec format error"));
	exec_result_release(&r);

	/* death by signal: 128 + N, and the signal named */
	assert_int_equal(RUN(&r, &ex, "sh", "-c", "kill -TERM $$; sleep 5"), 0);
	assert_int_equal(r.exit_code, 128 + SIGTERM);
	assert_int_equal(r.term_signal, SIGTERM);
	assert_non_null(strstr(r.err.buf, "SIGTERM"));
	exec_result_release(&r);

	assert_int_equal(RUN(&r, &ex, "sh", "-c", "kill -KILL $$"), 0);
	assert_int_equal(r.exit_code, 128 + SIGKILL);
	assert_non_null(strstr(r.err.buf, "SIGKILL"));
	exec_result_release(&r);

	/* nothing leaks: no descriptor, no child (not even a zombie) */
	assert_int_equal(count_fds(), fds_before);
	assert_int_equal(sb_list_children(kids, ARRAY_SIZE(kids)), 0);
	executor_release(&ex);
}

static void test_executor_path_lookup_uses_child_path(void **state)
{
	const char *env[] = { NULL, NULL };
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	char *p;

	(void)state;
	tu_write(ws, "tools/mytool", "#!/bin/sh\necho mytool ran\n");
	p = xstrfmt("%s/tools/mytool", ws);
	assert_int_equal(chmod(p, 0755), 0);
	free(p);
	init_ex(&ex);
	/* not on forgex's PATH */
	assert_int_equal(RUN(&r, &ex, "mytool"), 0);
	assert_int_equal(r.exit_code, 127);
	exec_result_release(&r);
	/* on the child's */
	p = xstrfmt("PATH=%s/tools:/usr/bin:/bin", ws);
	env[0] = p;
	assert_int_equal(run_argv(&r, &ex, NULL, 0, env, (const char *const[]){ "mytool", NULL }), 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out.buf, "mytool ran\n");
	exec_result_release(&r);
	free(p);
	executor_release(&ex);
}

static void test_executor_env_sanitized(void **state)
{
	const char *env[] = { "FORGEX_TEST_OVERRIDE=yes", "LANG=C.UTF-8", NULL };
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	setenv("OPENAI_API_KEY", "sk-test-secret-123", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "aws-secret", 1);
	setenv("LANG", "en_US.UTF-8", 1);
	init_ex(&ex);
	assert_int_equal(run_argv(&r, &ex, NULL, 0, env,
				  (const char *const[]){ "env",
							 NULL }), 0);
	assert_int_equal(r.exit_code, 0);
	assert_null(strstr(r.out.buf, "OPENAI_API_KEY"));
	assert_null(strstr(r.out.buf, "sk-test-secret"));
	assert_null(strstr(r.out.buf, "AWS_SECRET"));
	assert_non_null(strstr(r.out.buf, "PATH="));
	assert_non_null(strstr(r.out.buf, "FORGEX_TEST_OVERRIDE=yes"));
	/* an override replaces the inherited value */
	assert_non_null(strstr(r.out.buf, "LANG=C.UTF-8"));
	assert_null(strstr(r.out.buf, "en_US"));
	exec_result_release(&r);
	executor_release(&ex);
	unsetenv("OPENAI_API_KEY");
	unsetenv("AWS_SECRET_ACCESS_KEY");
}

static void test_executor_cwd_confined(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	char *outside = tu_mkdtemp(), *link, *want;

	(void)state;
	tu_write(ws, "sub/dir/f", "x");
	init_ex(&ex);

	assert_int_equal(run_argv(&r, &ex, "sub/dir", 0, NULL,
				  (const char *const[]){ "pwd", NULL }), 0);
	want = xstrfmt("%s/sub/dir\n", ws);
	assert_string_equal(r.out.buf, want);
	free(want);
	exec_result_release(&r);

	assert_int_equal(run_argv(&r, &ex, "..", 0, NULL, (const char *const[]){ "pwd", NULL }),
			 FX_EDENIED);
	assert_true(!strncmp(err_last(), "Working directory escapes workspace: ",
			     strlen("Working directory escapes workspace: ")));
	assert_int_equal(run_argv(&r, &ex, "/etc", 0, NULL, (const char *const[]){ "pwd", NULL }),
			 FX_EDENIED);
	assert_int_equal(run_argv(&r, &ex, "sub/../../", 0, NULL,
				  (const char *const[]){ "pwd", NULL }), FX_EDENIED);
	/* through a symlink planted in the workspace */
	link = xstrfmt("%s/escape", ws);
	assert_int_equal(symlink(outside, link), 0);
	assert_int_equal(run_argv(&r, &ex, "escape", 0, NULL,
				  (const char *const[]){ "touch", "pwned", NULL }), FX_EDENIED);
	assert_non_null(strstr(err_last(), "Working directory escapes workspace"));
	assert_null(tu_read(outside, "pwned"));

	/* a missing folder inside is not an escape, but nothing runs */
	assert_int_equal(run_argv(&r, &ex, "missing", 0, NULL,
				  (const char *const[]){ "touch", "x", NULL }), 0);
	assert_int_equal(r.exit_code, 127);
	assert_non_null(strstr(r.err.buf, "cannot change to working directory"));
	exec_result_release(&r);

	free(link);
	tu_rmtree(outside);
	executor_release(&ex);
}

static void test_executor_stdin_is_dev_null(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	init_ex(&ex);
	/* cat would block forever on a terminal or an inherited pipe */
	assert_int_equal(run_argv(&r, &ex, NULL, 5000, NULL,
				  (const char *const[]){ "cat", NULL }), 0);
	assert_int_equal(r.exit_code, 0);
	assert_false(r.timed_out);
	assert_string_equal(r.out.buf, "");
	exec_result_release(&r);
	assert_int_equal(RUN(&r, &ex, "readlink", "/proc/self/fd/0"), 0);
	assert_string_equal(r.out.buf, "/dev/null\n");
	exec_result_release(&r);
	/* no descriptor of forgex leaks into the command beyond 0, 1, 2 */
	assert_int_equal(RUN(&r, &ex, "ls", "/proc/self/fd"), 0);
	assert_string_equal(r.out.buf, "0\n1\n2\n3\n");	/* 3: ls's own listing */
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_executor_policy_refusals(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	/* the default deny list */
	strvec_clear(&cfg.terminal.denied);
	free(cfg.permissions.mode);
	cfg.permissions.mode = xstrdup("safe");
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "rm", "-rf", "/"), FX_EDENIED);
	assert_true(!strncmp(err_last(), "Command denied by policy: ",
			     strlen("Command denied by policy: ")));
	assert_non_null(strstr(err_last(), "rm"));
	assert_int_equal(RUN(&r, &ex, "/bin/bash", "-c", "echo"), FX_EDENIED);
	assert_int_equal(RUN(&r, &ex, "curl", "http://example.com/a b", "it's"), FX_EDENIED);
	assert_string_equal(err_last(),
			    "Command not approved: curl 'http://example.com/a b' 'it'\"'\"'s'");
	{
		struct exec_request req = { (const char *const[]){ NULL }, 0, NULL, 0, NULL };

		assert_int_equal(executor_run(&r, &ex, &req), FX_EDENIED);
		assert_string_equal(err_last(), "Empty command");
	}
	executor_release(&ex);

	/* auto mode approves network commands (the seed: network_allowed) */
	free(cfg.permissions.mode);
	cfg.permissions.mode = xstrdup("auto");
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "curl", "--version"), 0);
	assert_true(r.exit_code == 0 || r.exit_code == 127);
	exec_result_release(&r);
	executor_release(&ex);
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

static int pid_alive(const char *dir, const char *file)
{
	char *s = NULL;
	long pid;
	int i;

	for (i = 0; i < 300 && !(s = read_line_file(dir, file)); i++)
		usleep(10000);
	if (!s)
		fail_msg("%s was never written", file);
	pid = strtol(s, NULL, 10);
	free(s);
	assert_true(pid > 1);
	return kill((pid_t)pid, 0) == 0;
}

/* The command starts a background grandchild and one that escapes with setsid. */
static const char kill_all_script[] =
	"sleep 300 & cut -d' ' -f4 /proc/self/stat >/dev/null; "
	"sh -c 'cut -d\" \" -f4 /proc/self/stat > bg.pid; exec sleep 301' & "
	"setsid sh -c 'cut -d\" \" -f4 /proc/self/stat > setsid.pid; exec sleep 302' & "
	"while [ ! -s bg.pid ] || [ ! -s setsid.pid ]; do sleep 0.05; done; "
	"echo started; sleep 303";

static void test_executor_timeout_kills_everything(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	double t0;
	struct timespec ts;

	(void)state;
	init_ex(&ex);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + ts.tv_nsec / 1e9;
	assert_int_equal(run_argv(&r, &ex, NULL, 1500, NULL,
				  (const char *const[]){ "sh", "-c", kill_all_script, NULL }), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_true(r.timed_out);
	assert_true(ts.tv_sec + ts.tv_nsec / 1e9 - t0 < 6.0);
	assert_string_equal(r.out.buf, "started\n");
	assert_non_null(strstr(r.err.buf, "timed out"));
	assert_true(r.exit_code > 128);
	assert_false(pid_alive(ws, "bg.pid"));
	assert_false(pid_alive(ws, "setsid.pid"));
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_executor_leftovers_killed_at_exit(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	(void)state;
	init_ex(&ex);
	/* the command exits at once; a setsid daemon holding stdout must not survive */
	assert_int_equal(run_argv(&r, &ex, NULL, 10000, NULL,
				  (const char *const[]){ "sh", "-c",
					"setsid sh -c 'cut -d\" \" -f4 /proc/self/stat > d.pid; "
					"exec sleep 300' & while [ ! -s d.pid ]; do sleep 0.05; done; "
					"echo bye", NULL }), 0);
	assert_false(r.timed_out);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out.buf, "bye\n");
	assert_true(r.duration_ms < 5000);
	assert_false(pid_alive(ws, "d.pid"));
	exec_result_release(&r);
	executor_release(&ex);
}

/* forgex killed outright: the supervisor (SIGHUP as parent-death signal) cleans up */
static void test_executor_dies_with_forgex(void **state)
{
	char *s = NULL;
	pid_t pid, sleeper, bg;
	int i;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_result r = EXEC_RESULT_INIT;
		struct executor ex;

		if (executor_init(&ex, &cfg, ws) < 0)
			_exit(2);
		run_argv(&r, &ex, NULL, 60000, NULL, (const char *const[]){ "sh", "-c",
			"setsid sh -c 'cut -d\" \" -f4 /proc/self/stat > bg.pid; exec sleep 300' & "
			"cut -d' ' -f4 /proc/self/stat > s.pid; exec sleep 300", NULL });
		_exit(0);
	}
	for (i = 0; i < 300 && !(s = read_line_file(ws, "s.pid")); i++)
		usleep(10000);
	assert_non_null(s);
	sleeper = (pid_t)strtol(s, NULL, 10);
	free(s);
	for (i = 0; i < 300 && !(s = read_line_file(ws, "bg.pid")); i++)
		usleep(10000);
	assert_non_null(s);
	bg = (pid_t)strtol(s, NULL, 10);
	free(s);
	assert_int_equal(kill(sleeper, 0), 0);
	assert_int_equal(kill(bg, 0), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (i = 0; i < 300 && (kill(sleeper, 0) == 0 || kill(bg, 0) == 0); i++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;	/* the supervisor may be re-parented to us */
		usleep(10000);
	}
	assert_int_not_equal(kill(sleeper, 0), 0);
	assert_int_not_equal(kill(bg, 0), 0);
}

static void test_executor_output_head_and_tail(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	const char *mark;

	(void)state;
	cfg.terminal.max_output_bytes = 1000;
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "seq", "1", "100000"), 0);
	assert_int_equal(r.exit_code, 0);
	assert_true(r.truncated);
	assert_int_equal(r.out_total, 588895);
	assert_true(!strncmp(r.out.buf, "1\n2\n3\n", 6));
	mark = strstr(r.out.buf, "\n[... forgex: 587895 bytes omitted ...]\n");
	assert_non_null(mark);
	assert_true(r.out.len < 1100);
	assert_string_equal(r.out.buf + r.out.len - 13, "99999\n100000\n");
	exec_result_release(&r);

	/* under the cap: whole, not truncated */
	assert_int_equal(RUN(&r, &ex, "seq", "1", "10"), 0);
	assert_false(r.truncated);
	assert_string_equal(r.out.buf, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_executor_result_json(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	json_t *j;

	(void)state;
	init_ex(&ex);
	assert_int_equal(RUN(&r, &ex, "sh", "-c", "printf 'a\\377b'; echo e >&2; exit 3"), 0);
	j = exec_result_to_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 3);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "argv"), 0)), "sh");
	assert_string_equal(json_string_value(json_object_get(j, "stdout")), "a\xef\xbf\xbd" "b");
	assert_string_equal(json_string_value(json_object_get(j, "stderr")), "e\n");
	assert_true(json_is_false(json_object_get(j, "timed_out")));
	assert_true(json_is_false(json_object_get(j, "truncated")));
	assert_true(json_is_real(json_object_get(j, "duration_ms")));
	assert_true(json_real_value(json_object_get(j, "duration_ms")) > 0);
	json_decref(j);
	exec_result_release(&r);
	executor_release(&ex);
}

static volatile sig_atomic_t cancel_flag;

static void on_alarm(int sig)
{
	(void)sig;
	cancel_flag = 1;
}

static void test_executor_cancel(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct itimerval it = { { 0, 0 }, { 0, 300000 } };
	struct sigaction sa, old;
	struct executor ex;
	struct timespec a, b;
	int p[2];

	(void)state;
	init_ex(&ex);
	/* a flag set by a signal handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &old);
	executor_set_cancel(&ex, -1, &cancel_flag);
	clock_gettime(CLOCK_MONOTONIC, &a);
	setitimer(ITIMER_REAL, &it, NULL);
	assert_int_equal(run_argv(&r, &ex, NULL, 60000, NULL,
				  (const char *const[]){ "sh", "-c", kill_all_script, NULL }), FX_EINTR);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 4);
	assert_false(pid_alive(ws, "bg.pid"));
	assert_false(pid_alive(ws, "setsid.pid"));
	sigaction(SIGALRM, &old, NULL);

	/* a readable descriptor */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	executor_set_cancel(&ex, p[0], NULL);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(RUN(&r, &ex, "sleep", "60"), FX_EINTR);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(b.tv_sec - a.tv_sec < 4);
	close(p[0]);
	close(p[1]);
	executor_release(&ex);
}

static void test_executor_parse_size(void **state)
{
	uint64_t v = 0;

	(void)state;
	assert_int_equal(executor_parse_size(&v, "2g"), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(executor_parse_size(&v, "512m"), 0);
	assert_int_equal(v, 512ULL << 20);
	assert_int_equal(executor_parse_size(&v, "64KB"), 0);
	assert_int_equal(v, 64ULL << 10);
	assert_int_equal(executor_parse_size(&v, "1048576"), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(executor_parse_size(&v, "1.5g"), FX_EINVAL);
	assert_int_equal(executor_parse_size(&v, "g"), FX_EINVAL);
	assert_int_equal(executor_parse_size(&v, "0"), FX_EINVAL);
	assert_int_equal(executor_parse_size(&v, "99999999999999999999"), FX_EINVAL);
	assert_int_equal(executor_parse_size(&v, "12q"), FX_EINVAL);
}

static void test_executor_init_refusals(void **state)
{
	struct executor ex;

	(void)state;
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("chroot");
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EINVAL);
	assert_non_null(strstr(err_last(), "chroot"));
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("none");
	free(cfg.sandbox.memory_limit);
	cfg.sandbox.memory_limit = xstrdup("lots");
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EINVAL);
	assert_non_null(strstr(err_last(), "memory_limit"));
	free(cfg.sandbox.memory_limit);
	cfg.sandbox.memory_limit = xstrdup("");
	strvec_push(&cfg.sandbox.writable_roots, "/nonexistent/forgex/root");
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "writable_roots"));
	strvec_clear(&cfg.sandbox.writable_roots);
	assert_int_equal(executor_init(&ex, &cfg, "/nonexistent/forgex/ws"), FX_ENOTFOUND);
	/* "none" is never silent */
	init_ex(&ex);
	assert_int_equal(executor_warnings(&ex)->nr, 1);
	assert_non_null(strstr(executor_warnings(&ex)->v[0], "without confinement"));
	executor_release(&ex);
}

/* Commands that ignore SIGTERM get SIGKILL after the grace, descendants too. */
static const char stubborn_script[] =
	"trap '' TERM; "
	"setsid sh -c 'cut -d\" \" -f4 /proc/self/stat > stubborn.pid; exec sleep 300' & "
	"while [ ! -s stubborn.pid ]; do sleep 0.05; done; echo started; exec sleep 301";

static void check_stubborn(void)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;

	init_ex(&ex);
	ex.grace_ms = 300;
	assert_int_equal(run_argv(&r, &ex, NULL, 700, NULL,
				  (const char *const[]){ "sh", "-c", stubborn_script, NULL }), 0);
	assert_true(r.timed_out);
	assert_string_equal(r.out.buf, "started\n");
	assert_int_equal(r.exit_code, 128 + SIGKILL);
	assert_true(r.duration_ms < 4000);
	assert_false(pid_alive(ws, "stubborn.pid"));
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_executor_sigterm_ignored(void **state)
{
	(void)state;
	check_stubborn();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_executor_sigterm_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_exit_codes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_path_lookup_uses_child_path, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_executor_env_sanitized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_cwd_confined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_stdin_is_dev_null, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_policy_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_timeout_kills_everything, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_executor_leftovers_killed_at_exit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_executor_dies_with_forgex, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_output_head_and_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_result_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_executor_cancel, setup, teardown),
		cmocka_unit_test(test_executor_parse_size),
		cmocka_unit_test_setup_teardown(test_executor_init_refusals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

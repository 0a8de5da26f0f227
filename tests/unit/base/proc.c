#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/proc.h"

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A proc running `sh -c script`. */
static void shell(struct proc *p, const char *script)
{
	proc_init(p);
	strvec_push(&p->argv, "sh");
	strvec_push(&p->argv, "-c");
	strvec_push(&p->argv, script);
}

static void test_proc_exit_status(void **state)
{
	struct proc p;

	(void)state;
	shell(&p, "exit 3");
	assert_int_equal(proc_run(&p), 3);
	assert_true(p.exited);
	proc_release(&p);

	shell(&p, "exit 0");
	assert_int_equal(proc_run(&p), 0);
	proc_release(&p);

	shell(&p, "kill -TERM $$");
	assert_int_equal(proc_run(&p), 128 + SIGTERM);
	proc_release(&p);
}

static void test_proc_not_found(void **state)
{
	struct proc p;

	(void)state;
	proc_init(&p);
	strvec_push(&p.argv, "forgex-no-such-program");
	assert_int_equal(proc_run(&p), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "not found on PATH"));
	proc_release(&p);

	/* found, but not something execve() runs: an error of start, not a 127 */
	proc_init(&p);
	strvec_push(&p.argv, "/dev/null");
	assert_int_equal(proc_start(&p), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "cannot run /dev/null"));
	proc_release(&p);
}

static void test_proc_capture(void **state)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	struct proc p;

	(void)state;
	shell(&p, "echo to-out; echo to-err >&2; exit 1");
	p.out = p.err = PROC_IO_CAPTURE;
	p.out_buf = &out;
	p.err_buf = &err;
	assert_int_equal(proc_run(&p), 1);
	assert_string_equal(out.buf, "to-out\n");
	assert_string_equal(err.buf, "to-err\n");
	proc_release(&p);

	/* stderr to /dev/null by default: nothing reaches the capture of stdout */
	buf_reset(&out);
	shell(&p, "echo hidden >&2; printf shown");
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	assert_int_equal(proc_run(&p), 0);
	assert_string_equal(out.buf, "shown");
	proc_release(&p);
	buf_release(&out);
	buf_release(&err);
}

static void test_proc_flood_bounded(void **state)
{
	struct buf out = BUF_INIT;
	struct proc p;

	(void)state;
	/* 8 MiB, far over the cap: read to the end (the child is not blocked), kept at 1000 */
	shell(&p, "head -c 8388608 /dev/zero");
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	p.capture_max = 1000;
	p.timeout_ms = 20000;
	assert_int_equal(proc_run(&p), 0);
	assert_int_equal(out.len, 1000);
	assert_int_equal(p.out_dropped, 8388608 - 1000);
	proc_release(&p);
	buf_release(&out);
}

static void test_proc_timeout_kills(void **state)
{
	struct buf out = BUF_INIT;
	struct proc p;
	long long t0 = now_ms();

	(void)state;
	/* it holds its output open: the timeout must end the read too */
	shell(&p, "echo started; exec sleep 30");
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	p.timeout_ms = 300;
	assert_int_equal(proc_run(&p), FX_ETIMEOUT);
	assert_true(p.timed_out);
	assert_true(p.exited);
	assert_true(WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGKILL);
	assert_string_equal(out.buf, "started\n");
	assert_true(now_ms() - t0 < 10000);
	proc_release(&p);

	/* without captures: only the wait */
	shell(&p, "exec sleep 30");
	p.timeout_ms = 200;
	assert_int_equal(proc_run(&p), FX_ETIMEOUT);
	proc_release(&p);
	buf_release(&out);
}

static void test_proc_env(void **state)
{
	struct strvec env = STRVEC_INIT;
	const char *const over[] = { "FOO=bar", "noequals", "=empty", "HOME=/nowhere", NULL };
	struct buf out = BUF_INIT;
	struct proc p;

	(void)state;
	setenv("FORGEX_TEST_SECRET", "s3cret", 1);
	proc_env_build(&env, over);
	assert_non_null(proc_env_get(&env, "PATH"));
	assert_null(proc_env_get(&env, "FORGEX_TEST_SECRET"));
	assert_string_equal(proc_env_get(&env, "FOO"), "bar");
	assert_string_equal(proc_env_get(&env, "HOME"), "/nowhere");
	assert_null(proc_env_get(&env, "noequals"));
	proc_env_set(&env, "FOO=baz");
	assert_string_equal(proc_env_get(&env, "FOO"), "baz");

	shell(&p, "printf '%s|%s' \"$FOO\" \"${FORGEX_TEST_SECRET-unset}\"");
	p.env = env.v;
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	assert_int_equal(proc_run(&p), 0);
	assert_string_equal(out.buf, "baz|unset");
	proc_release(&p);

	/* NULL: forgex's own environment, secrets and all */
	buf_reset(&out);
	shell(&p, "printf %s \"$FORGEX_TEST_SECRET\"");
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	assert_int_equal(proc_run(&p), 0);
	assert_string_equal(out.buf, "s3cret");
	proc_release(&p);
	unsetenv("FORGEX_TEST_SECRET");
	strvec_clear(&env);
	buf_release(&out);
}

static void test_proc_cwd(void **state)
{
	char tmpl[] = "/tmp/forgex-proc-XXXXXX", *dir = mkdtemp(tmpl), real[PATH_MAX];
	struct buf out = BUF_INIT;
	struct proc p;
	FILE *f;

	(void)state;
	assert_non_null(dir);
	assert_non_null(realpath(dir, real));
	/* a relative program path counts from the child's folder */
	assert_int_equal(chdir("/"), 0);
	{
		char script[PATH_MAX + 16];

		snprintf(script, sizeof(script), "%s/hello.sh", real);
		f = fopen(script, "w");
		assert_non_null(f);
		fputs("#!/bin/sh\npwd -P\n", f);
		fclose(f);
		assert_int_equal(chmod(script, 0755), 0);
	}
	proc_init(&p);
	strvec_push(&p.argv, "./hello.sh");
	p.dir = real;
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	assert_int_equal(proc_run(&p), 0);
	buf_rtrim(&out);
	assert_string_equal(out.buf, real);
	proc_release(&p);

	/* a folder that is not there: an error of start */
	proc_init(&p);
	strvec_push(&p.argv, "sh");
	p.dir = "/nonexistent-forgex-folder";
	assert_int_equal(proc_start(&p), FX_ENOTFOUND);
	proc_release(&p);

	{
		char script[PATH_MAX + 16];

		snprintf(script, sizeof(script), "%s/hello.sh", real);
		unlink(script);
	}
	rmdir(real);
	buf_release(&out);
}

static void test_proc_pipe_and_socket(void **state)
{
	struct buf out = BUF_INIT;
	char reply[64];
	struct proc p;
	ssize_t n;
	size_t got = 0;

	(void)state;
	shell(&p, "cat");
	p.in = PROC_IO_PIPE;
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	assert_int_equal(proc_start(&p), 0);
	assert_true(p.in_fd >= 0);
	assert_int_equal(write(p.in_fd, "through\n", 8), 8);
	close(p.in_fd);
	p.in_fd = -1;
	assert_int_equal(proc_finish(&p), 0);
	assert_string_equal(out.buf, "through\n");
	proc_release(&p);

	/* one socket for both ways */
	shell(&p, "read x; echo \"got $x\"");
	p.in = PROC_IO_SOCKET;
	assert_int_equal(proc_start(&p), 0);
	assert_int_equal(send(p.in_fd, "hi\n", 3, MSG_NOSIGNAL), 3);
	while (got < sizeof(reply) - 1 &&
	       (n = recv(p.in_fd, reply + got, sizeof(reply) - 1 - got, 0)) > 0)
		got += (size_t)n;
	reply[got] = '\0';
	assert_string_equal(reply, "got hi\n");
	assert_int_equal(proc_wait(&p, 1), 1);
	assert_true(WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0);
	/* it is gone: writing is EPIPE, never SIGPIPE */
	assert_true(send(p.in_fd, "x", 1, MSG_NOSIGNAL) < 0);
	assert_int_equal(errno, EPIPE);
	proc_release(&p);
	buf_release(&out);
}

/* Whether `pid` is gone (or a zombie nobody reaped yet). */
static int gone(pid_t pid)
{
	char path[64], st[512];
	FILE *f;
	int dead;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;
	dead = fgets(st, sizeof(st), f) && strstr(st, ") Z ");
	fclose(f);
	return dead;
}

static void test_proc_group_killed_on_release(void **state)
{
	char line[32] = "";
	struct proc p;
	long grandchild;
	int i;
	FILE *f;

	(void)state;
	shell(&p, "sleep 30 & echo $!; wait");
	p.out = PROC_IO_PIPE;
	p.flags = PROC_NEW_GROUP | PROC_DIE_WITH_PARENT;
	assert_int_equal(proc_start(&p), 0);
	f = fdopen(p.out_fd, "r");
	assert_non_null(f);
	p.out_fd = -1;
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	grandchild = strtol(line, NULL, 10);
	assert_true(grandchild > 0);
	assert_int_equal(proc_wait(&p, 0), 0);
	proc_release(&p);
	assert_int_equal(p.pid, 0);
	for (i = 0; i < 200 && !gone((pid_t)grandchild); i++)
		usleep(10000);
	assert_true(gone((pid_t)grandchild));
}

static void test_proc_capture_all(void **state)
{
	struct buf out = BUF_INIT;
	struct proc p;

	(void)state;
	/* PROC_CAPTURE_ALL: 8 MiB, far over the default cap, kept whole */
	shell(&p, "head -c 8388608 /dev/zero");
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	p.capture_max = PROC_CAPTURE_ALL;
	p.timeout_ms = 20000;
	assert_int_equal(proc_run(&p), 0);
	assert_int_equal(out.len, 8388608);
	assert_int_equal(p.out_dropped, 0);
	proc_release(&p);
	buf_release(&out);
}

/* The whole of file `path`, in `b`. */
static void slurp(struct buf *b, const char *path)
{
	char chunk[256];
	size_t n;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	buf_reset(b);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(b, chunk, n);
	fclose(f);
}

static void test_proc_file(void **state)
{
	char tmpl[] = "/tmp/forgex-proc-XXXXXX", *dir = mkdtemp(tmpl);
	char out_path[64], err_path[64], missing[80];
	struct buf got = BUF_INIT;
	struct proc p;
	FILE *f;

	(void)state;
	assert_non_null(dir);
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	snprintf(err_path, sizeof(err_path), "%s/err", dir);
	snprintf(missing, sizeof(missing), "%s/no-such-folder/out", dir);
	/* a longer file already there: truncated, not overwritten in place */
	f = fopen(err_path, "w");
	assert_non_null(f);
	fputs("an old and much longer stderr\n", f);
	fclose(f);

	shell(&p, "echo to-out; echo to-err >&2; exit 2");
	p.out = p.err = PROC_IO_FILE;
	p.out_path = out_path;
	p.err_path = err_path;
	assert_int_equal(proc_run(&p), 2);
	proc_release(&p);
	slurp(&got, out_path);
	assert_string_equal(got.buf, "to-out\n");
	slurp(&got, err_path);
	assert_string_equal(got.buf, "to-err\n");

	/* a file that cannot be opened: an error of start, nothing runs */
	shell(&p, "echo ran > \"$0\"");
	strvec_push(&p.argv, out_path);
	p.out = PROC_IO_FILE;
	p.out_path = missing;
	assert_int_equal(proc_start(&p), FX_EOS);
	assert_non_null(strstr(err_last(), "cannot open"));
	assert_int_equal(p.pid, 0);
	proc_release(&p);
	err_clear();
	slurp(&got, out_path);
	assert_string_equal(got.buf, "to-out\n");

	unlink(out_path);
	unlink(err_path);
	rmdir(dir);
	buf_release(&got);
}

static void test_proc_poll_and_kill_group(void **state)
{
	char tmpl[] = "/tmp/forgex-proc-XXXXXX", *dir = mkdtemp(tmpl), out_path[64];
	struct buf got = BUF_INIT;
	struct proc p;
	long grandchild = 0;
	int i;

	(void)state;
	assert_non_null(dir);
	snprintf(out_path, sizeof(out_path), "%s/out", dir);
	/* a leader that waits on a grandchild in its group, its output in a file */
	shell(&p, "sleep 30 & echo $!; wait");
	p.out = PROC_IO_FILE;
	p.out_path = out_path;
	p.flags = PROC_NEW_GROUP | PROC_DIE_WITH_PARENT;
	assert_int_equal(proc_start(&p), 0);
	for (i = 0; i < 500 && !grandchild; i++) {
		slurp(&got, out_path);
		grandchild = strtol(got.buf, NULL, 10);
		if (!grandchild)
			usleep(10000);
	}
	assert_true(grandchild > 0);
	/* polling never blocks while it runs */
	assert_int_equal(proc_wait(&p, 0), 0);
	assert_false(p.exited);
	/* the group as a whole: the grandchild goes too */
	proc_kill(&p, SIGTERM);
	for (i = 0; i < 500 && !proc_wait(&p, 0); i++)
		usleep(10000);
	assert_true(p.exited);
	/* reaped: proc_finish() gives its status at once */
	assert_int_equal(proc_finish(&p), 128 + SIGTERM);
	for (i = 0; i < 200 && !gone((pid_t)grandchild); i++)
		usleep(10000);
	assert_true(gone((pid_t)grandchild));
	proc_release(&p);

	unlink(out_path);
	rmdir(dir);
	buf_release(&got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_exit_status),
		cmocka_unit_test(test_proc_not_found),
		cmocka_unit_test(test_proc_capture),
		cmocka_unit_test(test_proc_flood_bounded),
		cmocka_unit_test(test_proc_timeout_kills),
		cmocka_unit_test(test_proc_env),
		cmocka_unit_test(test_proc_cwd),
		cmocka_unit_test(test_proc_pipe_and_socket),
		cmocka_unit_test(test_proc_group_killed_on_release),
		cmocka_unit_test(test_proc_capture_all),
		cmocka_unit_test(test_proc_file),
		cmocka_unit_test(test_proc_poll_and_kill_group),
	};

	return cmocka_run_group_tests_name("base/proc", tests, NULL, NULL);
}

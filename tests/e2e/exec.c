/*
 * `forgex exec` through the real binary, in temporary projects with their
 * own .forgex/config.toml.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "helpers/testutil.h"
#include "sandbox/sandbox.h"

static char *ws;

#define skip_msg(...) do { print_message("SKIP: " __VA_ARGS__); print_message("\n"); skip(); } while (0)

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	/* sh may run (a non-empty deny list replaces the default one) */
	tu_write(ws, ".forgex/config.toml",
		 "[terminal]\ndenied = [\"rm\"]\n[sandbox]\nbackend = \"none\"\n");
	tu_trust(ws, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmtree(ws);
	ws = NULL;
	return 0;
}

static void run(struct tu_result *r, const char *const *env, ...)
{
	const char *argv[32];
	va_list ap;
	int n = 0;

	argv[n++] = tu_forgex();
	va_start(ap, env);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	tu_run(r, argv, ws, env, NULL);
}

static void test_exec_passes_output_and_status(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, "exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3", NULL);
	assert_int_equal(r.status, 3);
	assert_string_equal(r.out.buf, "out\n");
	/* the warning that nothing confines the command, then its stderr */
	assert_non_null(strstr(r.err.buf, "without confinement"));
	assert_non_null(strstr(r.err.buf, "err\n"));
	tu_result_release(&r);

	run(&r, NULL, "-q", "exec", "--", "forgex-no-such-program", NULL);
	assert_int_equal(r.status, 127);
	assert_string_equal(r.err.buf, "command not found: forgex-no-such-program");
	tu_result_release(&r);

	run(&r, NULL, "-q", "exec", "--", "sh", "-c", "kill -KILL $$", NULL);
	assert_int_equal(r.status, 137);
	assert_non_null(strstr(r.err.buf, "SIGKILL"));
	tu_result_release(&r);
}

static void test_exec_json(void **state)
{
	struct tu_result r;
	json_error_t e;
	json_t *j;

	(void)state;
	run(&r, NULL, "-q", "exec", "--json", "--", "sh", "-c", "printf hi; exit 2", NULL);
	assert_int_equal(r.status, 2);
	j = json_loads(r.out.buf, 0, &e);
	if (!j)
		fail_msg("not JSON: %s", r.out.buf);
	assert_int_equal(json_object_size(j), 7);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "argv"), 2)),
			    "printf hi; exit 2");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 2);
	assert_string_equal(json_string_value(json_object_get(j, "stdout")), "hi");
	assert_string_equal(json_string_value(json_object_get(j, "stderr")), "");
	assert_true(json_is_false(json_object_get(j, "timed_out")));
	assert_true(json_is_false(json_object_get(j, "truncated")));
	assert_true(json_is_number(json_object_get(j, "duration_ms")));
	json_decref(j);
	tu_result_release(&r);
}

static void test_exec_refusals_exit_4(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, "-q", "exec", "--", "rm", "-rf", "x", NULL);
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.err.buf, "Command denied by policy: "));
	assert_string_equal(r.out.buf, "");
	tu_result_release(&r);

	/* "safe" never approves (not "ask": the test may have a terminal) */
	run(&r, (const char *const[]){ "FORGEX_PERMISSIONS_MODE=safe", NULL }, "-q", "exec", "--",
	    "curl", "http://example.com", NULL);
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.err.buf, "Command not approved: curl http://example.com"));
	tu_result_release(&r);

	run(&r, NULL, "-q", "exec", "--cwd", "..", "--", "ls", NULL);
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.err.buf, "Working directory escapes workspace: "));
	tu_result_release(&r);

	run(&r, NULL, "-q", "exec", "--backend", "chroot", "--", "ls", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);

	run(&r, NULL, "exec", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	run(&r, NULL, "exec", "--timeout", "soon", "--", "ls", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
}

static void test_exec_environment_and_cwd(void **state)
{
	const char *env[] = { "OPENAI_API_KEY=sk-e2e-secret", NULL };
	struct tu_result r;
	char *want;

	(void)state;
	run(&r, env, "-q", "exec", "--", "env", NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out.buf, "sk-e2e-secret"));
	assert_non_null(strstr(r.out.buf, "PATH="));
	tu_result_release(&r);

	tu_write(ws, "sub/f", "");
	run(&r, NULL, "-q", "exec", "--cwd", "sub", "--", "pwd", NULL);
	want = xstrfmt("%s/sub\n", ws);
	assert_string_equal(r.out.buf, want);
	free(want);
	tu_result_release(&r);

	/* stdin is /dev/null even when forgex's is a pipe with data */
	{
		const char *argv[] = { tu_forgex(), "-q", "exec", "--", "cat", NULL };

		tu_run(&r, argv, ws, NULL, "this must not reach the command\n");
		assert_int_equal(r.status, 0);
		assert_string_equal(r.out.buf, "");
		tu_result_release(&r);
	}
}

static void test_exec_timeout(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, "-q", "exec", "--timeout", "0.5", "--json", "--", "sleep", "30", NULL);
	assert_int_equal(r.status, 128 + SIGTERM);
	assert_non_null(strstr(r.out.buf, "\"timed_out\": true"));
	tu_result_release(&r);
}

static void test_exec_native(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, "-q", "exec", "--backend", "native", "--", "true", NULL);
	if (r.status == 4) {
		print_message("SKIP: native cannot run here: %s\n", r.err.buf);
		tu_result_release(&r);
		skip();
	}
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	run(&r, NULL, "-q", "exec", "--backend", "native", "--", "touch", "/etc/forgex-e2e-escape",
	    NULL);
	assert_int_not_equal(r.status, 0);
	/* the command's own mount tree is read-only outside the workspace */
	assert_non_null(strstr(r.err.buf, "Read-only file system"));
	assert_false(fsutil_exists("/etc/forgex-e2e-escape"));
	tu_result_release(&r);
	run(&r, NULL, "-q", "exec", "--backend", "native", "--", "sh", "-c",
	    "echo in > inside.txt && cat inside.txt", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "in\n");
	tu_result_release(&r);
}

/* Ctrl-C on forgex stops the command and everything it started: exit 130. */
static void test_exec_interrupt(void **state)
{
	const char *argv[] = {
		tu_forgex(), "-q", "exec", "--", "sh", "-c",
		"setsid sh -c 'cut -d\" \" -f4 /proc/self/stat > d.pid; exec sleep 300' & "
		"sleep 300", NULL,
	};
	struct timespec a, b;
	char *s = NULL;
	pid_t pid, daemon_pid;
	int st, i, devnull;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		devnull = open("/dev/null", O_RDWR);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (chdir(ws) < 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (i = 0; i < 500; i++) {
		s = tu_read(ws, "d.pid");
		if (s && *s && s[strlen(s) - 1] == '\n')
			break;
		free(s);
		s = NULL;
		usleep(10000);
	}
	assert_non_null(s);
	daemon_pid = (pid_t)strtol(s, NULL, 10);
	free(s);
	assert_int_equal(kill(daemon_pid, 0), 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	kill(pid, SIGINT);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 130);
	assert_true(b.tv_sec - a.tv_sec < 4);
	assert_int_not_equal(kill(daemon_pid, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_exec_passes_output_and_status, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_refusals_exit_4, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_environment_and_cwd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_native, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_interrupt, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

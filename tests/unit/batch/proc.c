/*
 * The batch's children through base/proc: git never asks on a terminal,
 * a failed command's error, a task's streams in its log files.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "batch/proc.h"
#include "helpers/testutil.h"

static void test_command_env_and_output(void **state)
{
	const char *const argv[] = { "sh", "-c", "printf '%s|%s' \"$GIT_TERMINAL_PROMPT\" "
				     "\"$FORGEX_BATCH_TEST\"", NULL };
	struct buf out = BUF_INIT;

	(void)state;
	/* forgex's own environment, with git's prompt off over whatever was set */
	setenv("GIT_TERMINAL_PROMPT", "1", 1);
	setenv("FORGEX_BATCH_TEST", "kept", 1);
	assert_int_equal(batch_command(&out, argv), 0);
	assert_string_equal(out.buf, "0|kept");
	unsetenv("GIT_TERMINAL_PROMPT");
	unsetenv("FORGEX_BATCH_TEST");
	buf_release(&out);
}

static void test_command_errors(void **state)
{
	const char *const fails[] = { "sh", "-c", "echo first >&2; echo 'the reason' >&2; exit 3",
				      NULL };
	const char *const missing[] = { "forgex-no-such-program", NULL };

	(void)state;
	assert_int_equal(batch_command(NULL, fails), FX_ERROR);
	assert_string_equal(err_last(), "sh -c: exit status 3: the reason");
	err_clear();
	assert_int_equal(batch_command(NULL, missing), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "not found on PATH"));
	err_clear();
}

static void test_spawn_to_files(void **state)
{
	char *dir = tu_mkdtemp(), *out = xstrfmt("%s/t.jsonl", dir), *err = xstrfmt("%s/t.stderr", dir);
	const char *const argv[] = { "sh", "-c", "echo event; echo oops >&2; exec sleep 30", NULL };
	struct proc p;
	char *text;
	int i;

	(void)state;
	assert_int_equal(batch_spawn(&p, argv, out, err), 0);
	/* killed only once it has written both */
	for (i = 0; i < 500; i++) {
		text = tu_read(dir, "t.stderr");
		if (text && *text)
			break;
		free(text);
		text = NULL;
		usleep(10000);
	}
	free(text);
	assert_int_equal(proc_wait(&p, 0), 0);
	proc_kill(&p, SIGTERM);
	for (i = 0; i < 500 && !proc_wait(&p, 0); i++)
		usleep(10000);
	assert_int_equal(proc_finish(&p), 128 + SIGTERM);
	proc_release(&p);
	text = tu_read(dir, "t.jsonl");
	assert_string_equal(text, "event\n");
	free(text);
	text = tu_read(dir, "t.stderr");
	assert_string_equal(text, "oops\n");
	free(text);
	free(out);
	free(err);
	tu_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_env_and_output),
		cmocka_unit_test(test_command_errors),
		cmocka_unit_test(test_spawn_to_files),
	};

	return cmocka_run_group_tests_name("batch/proc", tests, NULL, NULL);
}

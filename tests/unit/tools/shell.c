/*
 * run_command and run_tests: through the permissions, the command policy
 * and the executor (backend "none"), with what the model gets back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/permissions.h"
#include "tools/registry.h"
#include "tools/shell.h"
#include "verify/verify.h"

struct env {
	struct config cfg;
	struct executor ex;
	struct shell_tools sh;
	struct tool_registry reg;
	struct tool_ctx ctx;
	char *ws;
	struct buf out;
	int status;
	/* what on_command saw */
	int commands;
	char *last_tool;
	int last_code;
	int last_exit;
};

static void on_command(void *data, const char *tool, const struct strvec *argv, int code,
		       const struct exec_result *r)
{
	struct env *e = data;

	(void)argv;
	e->commands++;
	free(e->last_tool);
	e->last_tool = xstrdup(tool);
	e->last_code = code;
	e->last_exit = r ? r->exit_code : -1000;
}

static int setup_with(void **state, const char *toml)
{
	struct env *e = xcalloc(1, sizeof(*e));

	e->ws = tu_mkdtemp();
	config_init(&e->cfg);
	if (config_apply_string(&e->cfg, toml, strlen(toml), "t.toml", CFG_USER) < 0 ||
	    executor_init(&e->ex, &e->cfg, e->ws) < 0)
		fail_msg("%s", err_last());
	e->sh = (struct shell_tools)SHELL_TOOLS_INIT;
	e->sh.executor = &e->ex;
	e->sh.on_command = on_command;
	e->sh.data = e;
	registry_init(&e->reg);
	if (tools_register_shell(&e->reg, &e->sh) < 0 || tool_ctx_init(&e->ctx, &e->reg, e->ws) < 0)
		fail_msg("%s", err_last());
	buf_init(&e->out, 0);
	*state = e;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, "[sandbox]\nbackend = \"none\"\n[permissions]\nmode = \"safe\"\n");
}

static int teardown(void **state)
{
	struct env *e = *state;

	tool_ctx_release(&e->ctx);
	registry_release(&e->reg);
	shell_tools_release(&e->sh);
	executor_release(&e->ex);
	config_release(&e->cfg);
	buf_release(&e->out);
	free(e->last_tool);
	tu_rmtree(e->ws);
	free(e);
	return 0;
}

static int call_as(struct env *e, unsigned granted, const char *name, const char *args)
{
	buf_reset(&e->out);
	e->status = tool_dispatch(&e->ctx, granted, name, args, &e->out);
	return e->status;
}

static int call(struct env *e, const char *name, const char *args)
{
	return call_as(e, permissions_for_role("builder"), name, args);
}

#define assert_contains(hay, needle) \
	do { \
		if (!strstr((hay), (needle))) \
			fail_msg("expected \"%s\" in:\n%s", (needle), (hay)); \
	} while (0)

static void test_shell_run_command_result(void **state)
{
	struct env *e = *state;

	tu_write(e->ws, "sub/f.txt", "x\n");
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"printf\", \"out\\\\nline2\"]}"), TOOL_OK);
	assert_contains(e->out.buf, "$ printf 'out\\nline2'\nexit_code: 0\ntimed_out: false\n"
			"truncated: false\nduration_ms: ");
	assert_contains(e->out.buf, "--- stdout (9 bytes) ---\nout\nline2\n--- stderr (0 bytes) ---\n");
	assert_int_equal(e->commands, 1);
	assert_string_equal(e->last_tool, "run_command");
	assert_int_equal(e->last_code, 0);
	assert_int_equal(e->last_exit, 0);
	/* cwd inside the workspace */
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"ls\"], \"cwd\": \"sub\"}"), TOOL_OK);
	assert_contains(e->out.buf, "--- stdout (6 bytes) ---\nf.txt\n");
	/* a failing command is still a result */
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"cat\", \"missing\"]}"), TOOL_OK);
	assert_contains(e->out.buf, "exit_code: 1\n");
	assert_contains(e->out.buf, "missing: No such file or directory");
	assert_int_equal(e->last_exit, 1);
	/* and a program that does not exist */
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"no-such-program-xyz\"]}"), TOOL_OK);
	assert_contains(e->out.buf, "exit_code: 127\n");
}

static void test_shell_run_command_refusals(void **state)
{
	struct env *e = *state;

	assert_int_equal(call(e, "run_command", "{\"argv\": []}"), TOOL_REFUSED);
	assert_contains(e->out.buf, "argv: must have at least 1 item");
	assert_int_equal(call(e, "run_command", "{\"argv\": \"ls -la\"}"), TOOL_REFUSED);
	assert_contains(e->out.buf, "argv: expected array, got string");
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"ls\"], \"timeout_seconds\": 0}"),
			 TOOL_REFUSED);
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"ls\"], \"shell\": true}"), TOOL_REFUSED);
	assert_int_equal(e->commands, 0);
	/* the policy */
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"rm\", \"-rf\", \".\"]}"), TOOL_REFUSED);
	assert_string_equal(e->out.buf, "error: Command denied by policy: Command 'rm' is in the "
			    "deny list");
	assert_int_equal(e->commands, 1);
	assert_int_equal(e->last_code, FX_EDENIED);
	assert_int_equal(e->last_exit, -1000);
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"busybox\", \"rm\", \"x\"]}"), TOOL_REFUSED);
	assert_contains(e->out.buf, "Command denied by policy");
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"wget\", \"http://example.com\"]}"),
			 TOOL_REFUSED);
	assert_contains(e->out.buf, "error: Command not approved: wget http://example.com");
	/* cwd outside the workspace */
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"ls\"], \"cwd\": \"../..\"}"), TOOL_REFUSED);
	assert_contains(e->out.buf, "escapes workspace");
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"ls\"], \"cwd\": \"/etc\"}"), TOOL_REFUSED);
	/* the role gate comes first */
	assert_int_equal(call_as(e, permissions_for_role("supervisor"), "run_command",
				 "{\"argv\": [\"ls\"]}"), TOOL_REFUSED);
	assert_contains(e->out.buf, "missing permissions: terminal");
	assert_int_equal(call_as(e, permissions_for_role("architect"), "run_tests", "{}"),
			 TOOL_REFUSED);
	assert_contains(e->out.buf, "missing permissions: test");
}

static void test_shell_run_command_timeout(void **state)
{
	struct env *e = *state;

	assert_int_equal(call(e, "run_command", "{\"argv\": [\"sleep\", \"30\"], \"timeout_seconds\": 1}"),
			 TOOL_OK);
	assert_contains(e->out.buf, "timed_out: true\n");
	assert_contains(e->out.buf, "note: the command ran out of time and was stopped\n");
}

/* [terminal] timeout_seconds = 1: a model asking for 3600 still gets 1 second. */
static void test_shell_run_command_timeout_never_extends(void **state)
{
	struct env *e;
	double t0;
	struct timespec ts;

	setup_with(state, "[sandbox]\nbackend = \"none\"\n[permissions]\nmode = \"safe\"\n"
		   "[terminal]\ntimeout_seconds = 1\n");
	e = *state;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"sleep\", \"20\"], \"timeout_seconds\": 3600}"),
			 TOOL_OK);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	assert_contains(e->out.buf, "timed_out: true\n");
	assert_true((double)ts.tv_sec + ts.tv_nsec / 1e9 - t0 < 15.0);
	teardown(state);
}

static void test_shell_run_command_head_and_tail(void **state)
{
	struct env *e = *state;
	const char *cut;

	e->sh.head_bytes = 10;
	e->sh.tail_bytes = 12;
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"seq\", \"1\", \"1000\"]}"), TOOL_OK);
	/* seq 1 1000: 3893 bytes */
	assert_contains(e->out.buf, "truncated: true\n");
	assert_contains(e->out.buf, "--- stdout (3893 bytes) ---\n1\n2\n3\n4\n5\n\n"
			"[... forgex: 3871 bytes omitted ...]\n98\n999\n1000\n--- stderr");
	cut = strstr(e->out.buf, "--- stdout");
	assert_true(strlen(cut) < 120);
}

static void test_shell_run_command_utf8(void **state)
{
	struct env *e = *state;

	/* invalid UTF-8 becomes U+FFFD; the head cut does not split a character */
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"printf\", \"a\\\\377b\"]}"), TOOL_OK);
	assert_contains(e->out.buf, "a\xef\xbf\xbd" "b");
	e->sh.head_bytes = 2;
	e->sh.tail_bytes = 2;
	assert_int_equal(call(e, "run_command", "{\"argv\": [\"printf\", \"a\xc3\xa9\xc3\xa9\xc3\xa9z\"]}"),
			 TOOL_OK);
	assert_contains(e->out.buf, "a\n[... forgex: 6 bytes omitted ...]\nz\n");
}

static void test_shell_run_tests_failing(void **state)
{
	struct env *e = *state;

	tu_write(e->ws, "Makefile",
		 "test:\n\t@printf '1..2\\nok 1 - parses\\nnot ok 2 - rejects empty input\\n"
		 "#   got: 0\\n#   expected: -1\\n'; exit 1\n");
	assert_int_equal(call(e, "run_tests", "{}"), TOOL_OK);
	assert_contains(e->out.buf, "command: make test (make: ");
	assert_contains(e->out.buf, "outcome: FAIL (exit code ");
	assert_contains(e->out.buf, "passed: 1, failed: 1, skipped: 0, errors: 0\n");
	assert_contains(e->out.buf, "formats: tap\n");
	assert_contains(e->out.buf, "failing tests (1):\n- rejects empty input [fail]\n");
	assert_contains(e->out.buf, "    | ");
	assert_contains(e->out.buf, "expected: -1");
	assert_non_null(e->sh.last_tests);
	assert_int_equal(e->sh.last_tests->passed, 1);
	assert_int_equal(e->sh.last_tests->failed, 1);
	assert_string_equal(e->last_tool, "run_tests");
	assert_int_equal(call(e, "run_tests", "{\"x\": 1}"), TOOL_REFUSED);
}

static void test_shell_run_tests_passing_and_configured(void **state)
{
	struct env *e = *state;
	struct strvec cmd = STRVEC_INIT;

	tu_write(e->ws, "Makefile", "test:\n\t@echo '1..1'; echo 'ok 1 - works'\n"
		 "other:\n\t@echo '1..2'; echo 'ok 1 - a'; echo 'ok 2 - b'\n");
	assert_int_equal(call(e, "run_tests", "{}"), TOOL_OK);
	assert_contains(e->out.buf, "outcome: PASS (exit code 0");
	assert_contains(e->out.buf, "passed: 1, failed: 0");
	assert_null(strstr(e->out.buf, "failing tests"));
	/* the configured command wins */
	strvec_push(&cmd, "make");
	strvec_push(&cmd, "other");
	e->sh.test_command = &cmd;
	assert_int_equal(call(e, "run_tests", "{}"), TOOL_OK);
	assert_contains(e->out.buf, "command: make other (configured");
	assert_contains(e->out.buf, "passed: 2, failed: 0");
	e->sh.test_command = NULL;
	strvec_clear(&cmd);
}

static void test_shell_run_tests_unrecognised_output(void **state)
{
	struct env *e = *state;

	tu_write(e->ws, "Makefile", "test:\n\t@echo 'something broke badly'; exit 3\n");
	assert_int_equal(call(e, "run_tests", "{}"), TOOL_OK);
	assert_contains(e->out.buf, "outcome: FAIL (exit code ");
	assert_contains(e->out.buf, "something broke badly");
}

static void test_shell_run_tests_nothing_found(void **state)
{
	struct env *e = *state;

	assert_int_equal(call(e, "run_tests", "{}"), TOOL_FAILED);
	assert_contains(e->out.buf, "error: no test command: ");
	assert_null(e->sh.last_tests);
}

static void test_shell_register_needs_executor(void **state)
{
	struct tool_registry reg = TOOL_REGISTRY_INIT;
	struct shell_tools sh = SHELL_TOOLS_INIT;

	(void)state;
	assert_int_equal(tools_register_shell(&reg, &sh), FX_EINVAL);
	assert_int_equal(tools_register_shell(&reg, NULL), FX_EINVAL);
	assert_int_equal(reg.nr, 0);
	registry_release(&reg);
}

static void test_shell_registered_twice(void **state)
{
	struct env *e = *state;

	assert_int_equal(tools_register_shell(&e->reg, &e->sh), FX_EEXISTS);
	assert_non_null(registry_find(&e->reg, "run_command"));
	assert_int_equal(registry_find(&e->reg, "run_command")->needs, PERM_TERMINAL);
	assert_int_equal(registry_find(&e->reg, "run_tests")->needs, PERM_TEST);
	assert_int_equal(registry_find(&e->reg, "run_tests")->flags & TOOL_TERMINAL, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_shell_run_command_result),
		T(test_shell_run_command_refusals),
		T(test_shell_run_command_timeout),
		cmocka_unit_test(test_shell_run_command_timeout_never_extends),
		T(test_shell_run_command_head_and_tail),
		T(test_shell_run_command_utf8),
		T(test_shell_run_tests_failing),
		T(test_shell_run_tests_passing_and_configured),
		T(test_shell_run_tests_unrecognised_output),
		T(test_shell_run_tests_nothing_found),
		cmocka_unit_test(test_shell_register_needs_executor),
		T(test_shell_registered_twice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * `forgex policy check` through the real binary, in temporary projects
 * with their own .forgex/config.toml.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/testutil.h"

static char *ws;

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmtree(ws);
	ws = NULL;
	return 0;
}

static void project(const char *toml)
{
	tu_write(ws, ".forgex/config.toml", toml);
	tu_trust(ws, NULL);
}

/* Run `forgex ARGS... NULL` in `cwd` (NULL: the project) with `env` added. */
static void run(struct tu_result *r, const char *cwd, const char *const *env, ...)
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
	tu_run(r, argv, cwd ? cwd : ws, env, NULL);
}

static void expect(struct tu_result *r, int status, const char *out)
{
	if (r->status != status || strcmp(r->out.buf, out))
		fail_msg("got status %d, stdout \"%s\", stderr \"%s\"; want %d, \"%s\"", r->status,
			 r->out.buf, r->err.buf, status, out);
	assert_int_equal(r->err.len, 0);
	tu_result_release(r);
}

static void expect_json(struct tu_result *r, int status, const char *decision,
			const char *reason)
{
	json_error_t e;
	json_t *j;

	if (r->status != status)
		fail_msg("got status %d (stdout \"%s\", stderr \"%s\"), want %d", r->status,
			 r->out.buf, r->err.buf, status);
	/* one line holding one JSON object with exactly these two members */
	assert_non_null(strchr(r->out.buf, '\n'));
	assert_ptr_equal(strchr(r->out.buf, '\n'), r->out.buf + r->out.len - 1);
	j = json_loads(r->out.buf, 0, &e);
	if (!j)
		fail_msg("not JSON: %s (%s)", r->out.buf, e.text);
	assert_int_equal(json_object_size(j), 2);
	assert_string_equal(json_string_value(json_object_get(j, "decision")), decision);
	assert_string_equal(json_string_value(json_object_get(j, "reason")), reason);
	json_decref(j);
	tu_result_release(r);
}

static void test_policy_check_default_project(void **state)
{
	struct tu_result r;

	(void)state;
	project("[permissions]\nmode = \"ask\"\n");
	run(&r, NULL, NULL, "policy", "check", "--", "ls", "-la", NULL);
	expect(&r, 0, "allow\n");
	run(&r, NULL, NULL, "policy", "check", "--", "rm", "-rf", "/", NULL);
	expect(&r, 4, "deny: Command 'rm' is in the deny list\n");
	run(&r, NULL, NULL, "policy", "check", "--", "/usr/bin/SUDO", "id", NULL);
	expect(&r, 4, "deny: Command 'sudo' is in the deny list\n");
	run(&r, NULL, NULL, "policy", "check", "--", "pip3.11", "install", "requests", NULL);
	expect(&r, 5, "approval: Command 'pip3.11' may access the network\n");
	/* without "--" the command starts at the first operand */
	run(&r, NULL, NULL, "policy", "check", "curl", "-s", "http://example.com", NULL);
	expect(&r, 5, "approval: Command 'curl' may access the network\n");
	/* the wrapper extension, end to end */
	run(&r, NULL, NULL, "policy", "check", "--", "busybox", "rm", "-rf", "x", NULL);
	expect(&r, 4, "deny: Command 'rm' is in the deny list (run by 'busybox')\n");
	run(&r, NULL, NULL, "policy", "check", "--", "command", "-v", "rm", NULL);
	expect(&r, 0, "allow\n");
}

static void test_policy_check_json(void **state)
{
	struct tu_result r;

	(void)state;
	project("");
	run(&r, NULL, NULL, "policy", "check", "--json", "--", "git", "status", NULL);
	expect_json(&r, 0, "allow", "");
	run(&r, NULL, NULL, "policy", "check", "--json", "--", "rm", "x", NULL);
	expect_json(&r, 4, "deny", "Command 'rm' is in the deny list");
	run(&r, NULL, NULL, "policy", "check", "--json", "--", "npm", "install", NULL);
	expect_json(&r, 5, "approval", "Command 'npm' may access the network");
	/* the exact form the help promises */
	run(&r, NULL, NULL, "policy", "check", "--json", "rm", NULL);
	expect(&r, 4, "{\"decision\": \"deny\", \"reason\": \"Command 'rm' is in the deny list\"}\n");
}

static void test_policy_check_allowlist_config(void **state)
{
	struct tu_result r;

	(void)state;
	project("[terminal]\nallowed = [\"ls\", \"git\", \"python\", \"rm\"]\n");
	run(&r, NULL, NULL, "policy", "check", "--", "git", "log", NULL);
	expect(&r, 0, "allow\n");
	run(&r, NULL, NULL, "policy", "check", "--", "python3.12", "-m", "pytest", NULL);
	expect(&r, 0, "allow\n");
	run(&r, NULL, NULL, "policy", "check", "--", "cat", "x", NULL);
	expect(&r, 4, "deny: Command 'cat' is not in the allowlist\n");
	/* the deny list comes first, allowlist or not */
	run(&r, NULL, NULL, "policy", "check", "--", "rm", "x", NULL);
	expect(&r, 4, "deny: Command 'rm' is in the deny list\n");
	run(&r, NULL, NULL, "policy", "check", "--json", "--", "make", NULL);
	expect_json(&r, 4, "deny", "Command 'make' is not in the allowlist");
	/* a name from the command line cannot put escape sequences on the terminal */
	run(&r, NULL, NULL, "policy", "check", "--", "cat\x1b[2J\r", NULL);
	expect(&r, 4, "deny: Command 'cat\\x1b[2j\\r' is not in the allowlist\n");
	/* JSON stays valid for a name that is not UTF-8 */
	run(&r, NULL, NULL, "policy", "check", "--json", "--", "/bin/\xff" "CAT", NULL);
	expect_json(&r, 4, "deny", "Command '\xef\xbf\xbd" "cat' is not in the allowlist");
}

static void test_policy_check_custom_denied(void **state)
{
	struct tu_result r;

	(void)state;
	/* a non-empty deny list replaces the default one */
	project("[terminal]\ndenied = [\"git\"]\n");
	run(&r, NULL, NULL, "policy", "check", "--", "git", "push", NULL);
	expect(&r, 4, "deny: Command 'git' is in the deny list\n");
	run(&r, NULL, NULL, "policy", "check", "--", "rm", "x", NULL);
	expect(&r, 0, "allow\n");
	/* an empty one means the default */
	project("[terminal]\ndenied = []\n");
	run(&r, NULL, NULL, "policy", "check", "--", "rm", "x", NULL);
	expect(&r, 4, "deny: Command 'rm' is in the deny list\n");
}

static void test_policy_check_modes(void **state)
{
	const char *env_auto[] = { "FORGEX_PERMISSIONS_MODE=auto", NULL };
	const char *env_safe[] = { "FORGEX_PERMISSIONS_MODE=safe", NULL };
	struct tu_result r;

	(void)state;
	project("[permissions]\nmode = \"ask\"\n");
	run(&r, NULL, NULL, "policy", "check", "--", "pip", "install", "x", NULL);
	expect(&r, 5, "approval: Command 'pip' may access the network\n");
	/* the environment beats the project file: auto allows the network */
	run(&r, NULL, env_auto, "policy", "check", "--", "pip", "install", "x", NULL);
	expect(&r, 0, "allow\n");
	run(&r, NULL, env_auto, "policy", "check", "--json", "--", "pip", "install", "x", NULL);
	expect_json(&r, 0, "allow", "");
	/* auto does not lift the deny list */
	run(&r, NULL, env_auto, "policy", "check", "--", "rm", "x", NULL);
	expect(&r, 4, "deny: Command 'rm' is in the deny list\n");
	/* safe: the command still needs approval (which safe never gives) */
	run(&r, NULL, env_safe, "policy", "check", "--", "pip", "install", "x", NULL);
	expect(&r, 5, "approval: Command 'pip' may access the network\n");
	/* mode auto in the project file, and a flag beating it */
	project("[permissions]\nmode = \"auto\"\n");
	run(&r, NULL, NULL, "policy", "check", "--", "wget", "x", NULL);
	expect(&r, 0, "allow\n");
	run(&r, NULL, NULL, "-c", "permissions.mode=ask", "policy", "check", "--", "wget", "x", NULL);
	expect(&r, 5, "approval: Command 'wget' may access the network\n");
}

static void test_policy_check_from_a_subfolder(void **state)
{
	char *sub = xstrfmt("%s/src/deep", ws);
	struct tu_result r;

	(void)state;
	project("[terminal]\nallowed = [\"ls\"]\n");
	tu_write(ws, "src/deep/x.c", "");
	run(&r, sub, NULL, "policy", "check", "--", "cat", "x.c", NULL);
	expect(&r, 4, "deny: Command 'cat' is not in the allowlist\n");
	free(sub);
}

static void test_policy_check_usage_and_config_errors(void **state)
{
	struct tu_result r;

	(void)state;
	project("");
	run(&r, NULL, NULL, "policy", "check", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "needs a command"));
	assert_int_equal(r.out.len, 0);
	tu_result_release(&r);
	run(&r, NULL, NULL, "policy", "check", "--json", "--", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	run(&r, NULL, NULL, "policy", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	run(&r, NULL, NULL, "policy", "allow", "ls", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "unknown subcommand 'allow'"));
	tu_result_release(&r);
	run(&r, NULL, NULL, "policy", "check", "--frob", "ls", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "unknown option '--frob'"));
	tu_result_release(&r);
	run(&r, NULL, NULL, "policy", "check", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "usage: forgex policy check"));
	tu_result_release(&r);
	/* a bad mode is a configuration error, not a decision */
	/* an invalid file cannot be trusted; it is an error either way */
	tu_write(ws, ".forgex/config.toml", "[permissions]\nmode = \"yolo\"\n");
	run(&r, NULL, NULL, "policy", "check", "--", "ls", NULL);
	assert_int_equal(r.status, 2);
	assert_int_equal(r.out.len, 0);
	assert_non_null(strstr(r.err.buf, "permissions.mode"));
	tu_result_release(&r);
}

static void test_policy_listed_in_help(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, NULL, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "  policy "));
	tu_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_policy_check_default_project, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_check_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_check_allowlist_config, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_check_custom_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_check_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_check_from_a_subfolder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_policy_check_usage_and_config_errors, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_policy_listed_in_help, setup, teardown),
	};

	return cmocka_run_group_tests_name("e2e/policy", tests, NULL, NULL);
}

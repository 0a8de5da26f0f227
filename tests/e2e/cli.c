/* The real binary: global options, config, init, doctor. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers/testutil.h"

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
	tu_run(r, argv, cwd, env, NULL);
}

static void test_cli_version_and_help(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, NULL, "--version", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "forgex 0."));
	tu_result_release(&r);
	run(&r, NULL, NULL, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "config"));
	assert_non_null(strstr(r.out.buf, "doctor"));
	tu_result_release(&r);
	run(&r, NULL, NULL, "help", "init", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "usage: forgex init"));
	tu_result_release(&r);
	run(&r, NULL, NULL, "config", "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "usage: forgex config"));
	tu_result_release(&r);
}

static void test_cli_unknown_command_suggests(void **state)
{
	struct tu_result r;

	(void)state;
	run(&r, NULL, NULL, "frobnicate", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "'frobnicate' is not a forgex command"));
	assert_non_null(strstr(r.err.buf, "most similar command"));
	tu_result_release(&r);
	run(&r, NULL, NULL, "doctr", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "\tdoctor"));
	tu_result_release(&r);
}

static json_t *find_key(json_t *keys, const char *key)
{
	size_t i;
	json_t *k;

	json_array_foreach(keys, i, k)
		if (!strcmp(json_string_value(json_object_get(k, "key")), key))
			return k;
	return NULL;
}

static void test_cli_config_show_origins(void **state)
{
	const char *env[] = { "FORGEX_TERMINAL_TIMEOUT_SECONDS=30", NULL };
	char *ws = tu_mkdtemp(), *sub = xstrfmt("%s/src/deep", ws);
	struct tu_result r;
	json_error_t e;
	json_t *j, *keys, *k;

	(void)state;
	tu_write(ws, ".forgex/config.toml", "[permissions]\nmode = \"auto\"\n");
	tu_write(ws, "src/deep/x.c", "");
	tu_trust(ws, NULL);
	run(&r, sub, env, "config", "show", "--json", NULL);
	assert_int_equal(r.status, 0);
	j = json_loads(r.out.buf, 0, &e);
	assert_non_null(j);
	keys = json_object_get(j, "keys");
	k = find_key(keys, "permissions.mode");
	assert_non_null(k);
	assert_string_equal(json_string_value(json_object_get(k, "value")), "auto");
	assert_string_equal(json_string_value(json_object_get(k, "origin")), "project");
	k = find_key(keys, "terminal.timeout_seconds");
	assert_int_equal(json_integer_value(json_object_get(k, "value")), 30);
	assert_string_equal(json_string_value(json_object_get(k, "origin")), "env");
	k = find_key(keys, "sandbox.backend");
	assert_string_equal(json_string_value(json_object_get(k, "origin")), "default");
	assert_string_equal(json_string_value(json_object_get(j, "workspace")), ws);
	json_decref(j);
	tu_result_release(&r);

	/* a flag beats the environment */
	run(&r, ws, env, "-c", "terminal.timeout_seconds=45", "config", "get", "terminal.timeout_seconds", NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "45\n");
	tu_result_release(&r);
	free(sub);
	tu_rmtree(ws);
}

static void test_cli_config_user_file_layer(void **state)
{
	char *ws = tu_mkdtemp(), *xdg = tu_mkdtemp(), *envx = xstrfmt("XDG_CONFIG_HOME=%s", xdg);
	const char *env[] = { envx, NULL };
	struct tu_result r;

	(void)state;
	tu_write(xdg, "forgex/config.toml", "[sandbox]\nbackend = \"none\"\nmax_processes = 64\n");
	tu_write(ws, ".forgex/config.toml", "[sandbox]\nmax_processes = 128\n");
	tu_trust(ws, NULL);
	run(&r, ws, env, "config", "show", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "sandbox.backend = \"none\"  # user ("));
	assert_non_null(strstr(r.out.buf, "sandbox.max_processes = 128  # project ("));
	tu_result_release(&r);
	free(envx);
	tu_rmtree(ws);
	tu_rmtree(xdg);
}

static void test_cli_config_errors_exit_2(void **state)
{
	char *ws = tu_mkdtemp();
	struct tu_result r;

	(void)state;
	tu_write(ws, ".forgex/config.toml", "[permissions]\nmode = \"auto\"\n\n[terminal]\nbogus = 1\n");
	run(&r, ws, NULL, "config", "show", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, ".forgex/config.toml:5"));
	assert_non_null(strstr(r.err.buf, "terminal.bogus"));
	assert_int_equal(r.out.len, 0);
	tu_result_release(&r);

	tu_write(ws, ".forgex/config.toml", "[terminal]\ntimeout_seconds = \"thirty\"\n");
	run(&r, ws, NULL, "config", "show", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, ".forgex/config.toml:2"));
	assert_non_null(strstr(r.err.buf, "terminal.timeout_seconds"));
	assert_non_null(strstr(r.err.buf, "expected an integer"));
	tu_result_release(&r);

	tu_write(ws, ".forgex/config.toml", "[terminal\n");
	run(&r, ws, NULL, "config", "show", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, ".forgex/config.toml:1:"));
	tu_result_release(&r);

	run(&r, ws, NULL, "config", "get", "no.such", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	tu_rmtree(ws);
}

static void test_cli_init_twice(void **state)
{
	const char *git_init[] = { "git", "init", "-q", NULL };
	char *ws = tu_mkdtemp(), *cfg1, *cfg2, *excl;
	struct tu_result r;

	(void)state;
	tu_run(&r, git_init, ws, NULL, NULL);
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	run(&r, ws, NULL, "init", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "Wrote"));
	tu_result_release(&r);
	cfg1 = tu_read(ws, ".forgex/config.toml");
	assert_non_null(cfg1);
	assert_non_null(strstr(cfg1, "# timeout_seconds = 120"));
	tu_write(ws, ".forgex/config.toml", "[permissions]\nmode = \"safe\"\n");
	run(&r, ws, NULL, "init", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "already exists"));
	tu_result_release(&r);
	cfg2 = tu_read(ws, ".forgex/config.toml");
	assert_string_equal(cfg2, "[permissions]\nmode = \"safe\"\n");
	excl = tu_read(ws, ".git/info/exclude");
	assert_non_null(strstr(excl, ".forgex/runs/\n"));
	assert_non_null(strstr(excl, ".forgex/checkpoints/\n"));
	/* only once, however often init runs */
	assert_null(strstr(strstr(excl, ".forgex/runs/") + 1, ".forgex/runs/"));
	run(&r, ws, NULL, "init", "--force", NULL);
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	free(cfg2);
	cfg2 = tu_read(ws, ".forgex/config.toml");
	assert_string_equal(cfg1, cfg2);
	/* the written config is valid and all-default */
	run(&r, ws, NULL, "config", "show", NULL);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out.buf, "# project"));
	tu_result_release(&r);
	free(cfg1);
	free(cfg2);
	free(excl);
	tu_rmtree(ws);
}

static void test_cli_doctor(void **state)
{
	struct tu_result r;
	json_error_t e;
	json_t *j;

	(void)state;
	run(&r, NULL, NULL, "doctor", "--json", NULL);
	j = json_loads(r.out.buf, 0, &e);
	assert_non_null(j);
	assert_int_equal(r.status, json_integer_value(json_object_get(j, "failures")) ? 1 : 0);
	assert_true(json_array_size(json_object_get(j, "checks")) >= 7);
	json_decref(j);
	tu_result_release(&r);
	{
		const char *env[] = { "PATH=/nonexistent", NULL };

		/* without git on PATH, doctor fails and says so */
		run(&r, NULL, env, "doctor", NULL);
		assert_int_equal(r.status, 1);
		assert_non_null(strstr(r.out.buf, "git"));
		assert_non_null(strstr(r.out.buf, "FAIL"));
		tu_result_release(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli_version_and_help),
		cmocka_unit_test(test_cli_unknown_command_suggests),
		cmocka_unit_test(test_cli_config_show_origins),
		cmocka_unit_test(test_cli_config_user_file_layer),
		cmocka_unit_test(test_cli_config_errors_exit_2),
		cmocka_unit_test(test_cli_init_twice),
		cmocka_unit_test(test_cli_doctor),
	};

	return cmocka_run_group_tests_name("e2e/cli", tests, NULL, NULL);
}

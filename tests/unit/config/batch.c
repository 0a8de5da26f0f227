/*
 * The [batch] section (forgex batch's defaults) and [pipeline] must_pass:
 * defaults, every key from a file, the environment and -c, the errors
 * that name the file, line and key, and what an untrusted project file
 * may not set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "helpers/testutil.h"

static void apply_ok(struct config *cfg, const char *text, enum cfg_origin o)
{
	int ret = config_apply_string(cfg, text, strlen(text), "test.toml", o);

	if (ret)
		fail_msg("config_apply_string: %s", err_last());
}

static void test_batch_defaults(void **state)
{
	struct config cfg;

	(void)state;
	config_init(&cfg);
	assert_int_equal(cfg.batch.jobs, 0);
	assert_int_equal(cfg.batch.wall_seconds, 0);
	assert_int_equal(cfg.batch.grace_seconds, 30);
	assert_int_equal(cfg.batch.max_tokens, 0);
	assert_true(cfg.batch.max_cost_usd == 0);
	assert_true(cfg.batch.max_cost_total_usd == 0);
	assert_string_equal(cfg.batch.url_template, "https://github.com/{repo}.git");
	assert_int_equal(cfg.batch.keep, 0);
	assert_int_equal(cfg.pipeline.must_pass.nr, 0);
	assert_int_equal(config_validate(&cfg), 0);
	config_release(&cfg);
}

static void test_batch_every_key(void **state)
{
	static const char text[] =
		"[batch]\njobs = 3\nwall_seconds = 600\ngrace_seconds = 5\nmax_tokens = 20000\n"
		"max_cost_usd = 0.5\nmax_cost_total_usd = 12.5\n"
		"url_template = \"https://git.example.org/{repo}\"\nkeep = true\n"
		"[pipeline]\nmust_pass = [\"tests/test_x.py::TestA::test_b\", \"test_c (mod.Class)\"]\n";
	struct config cfg;
	struct buf v = BUF_INIT;
	enum cfg_origin o;

	(void)state;
	config_init(&cfg);
	apply_ok(&cfg, text, CFG_USER);
	assert_int_equal(config_validate(&cfg), 0);
	assert_int_equal(cfg.batch.jobs, 3);
	assert_int_equal(cfg.batch.wall_seconds, 600);
	assert_int_equal(cfg.batch.grace_seconds, 5);
	assert_int_equal(cfg.batch.max_tokens, 20000);
	assert_true(cfg.batch.max_cost_usd == 0.5);
	assert_true(cfg.batch.max_cost_total_usd == 12.5);
	assert_string_equal(cfg.batch.url_template, "https://git.example.org/{repo}");
	assert_int_equal(cfg.batch.keep, 1);
	assert_int_equal(cfg.pipeline.must_pass.nr, 2);
	assert_string_equal(cfg.pipeline.must_pass.v[1], "test_c (mod.Class)");
	assert_int_equal(config_get(&cfg, "batch.jobs", &v, &o), 0);
	assert_string_equal(v.buf, "3");
	assert_int_equal(o, CFG_USER);
	config_release(&cfg);
	buf_release(&v);
}

/* The environment over the files, -c over the environment. */
static void test_batch_precedence(void **state)
{
	const char *env[] = { "FORGEX_BATCH_JOBS=5", "FORGEX_BATCH_KEEP=true", NULL };
	struct config cfg;
	struct buf v = BUF_INIT;
	enum cfg_origin o;

	(void)state;
	config_init(&cfg);
	apply_ok(&cfg, "[batch]\njobs = 2\nwall_seconds = 60\n", CFG_USER);
	apply_ok(&cfg, "[batch]\nwall_seconds = 30\n", CFG_PROJECT);
	assert_int_equal(config_apply_env(&cfg, env), 0);
	assert_int_equal(cfg.batch.jobs, 5);
	assert_int_equal(cfg.batch.keep, 1);
	assert_int_equal(cfg.batch.wall_seconds, 30);
	assert_int_equal(config_set(&cfg, "batch.jobs", "7", CFG_FLAG), 0);
	assert_int_equal(config_set(&cfg, "pipeline.must_pass", "[\"a::b\"]", CFG_FLAG), 0);
	assert_int_equal(cfg.batch.jobs, 7);
	assert_string_equal(cfg.pipeline.must_pass.v[0], "a::b");
	assert_int_equal(config_get(&cfg, "batch.jobs", &v, &o), 0);
	assert_int_equal(o, CFG_FLAG);
	buf_release(&v);
	config_release(&cfg);
}

static void expect_error(const char *text, const char *needle1, const char *needle2)
{
	struct config cfg;
	int ret;

	config_init(&cfg);
	ret = config_apply_string(&cfg, text, strlen(text), "bad.toml", CFG_USER);
	if (!ret)
		ret = config_validate(&cfg);
	assert_true(ret < 0);
	if (!strstr(err_last(), needle1) || (needle2 && !strstr(err_last(), needle2)))
		fail_msg("message '%s' lacks '%s' / '%s'", err_last(), needle1,
			 needle2 ? needle2 : "");
	config_release(&cfg);
}

static void test_batch_errors(void **state)
{
	const char *badenv[] = { "FORGEX_BATCH_JOBS=many", NULL };
	struct config cfg;

	(void)state;
	expect_error("[batch]\njobs = 2000\n", "bad.toml:2: key 'batch.jobs'", "out of range");
	expect_error("[batch]\njobs = -1\n", "bad.toml:2: key 'batch.jobs'", "out of range");
	expect_error("[batch]\n\nwall_seconds = \"1h\"\n", "bad.toml:3: key 'batch.wall_seconds'",
		     "expected an integer");
	expect_error("[batch]\nmax_cost_total_usd = -2.0\n", "key 'batch.max_cost_total_usd'",
		     "out of range");
	expect_error("[batch]\nkeep = \"yes\"\n", "key 'batch.keep'", "expected a boolean");
	expect_error("[batch]\nmax_cost = 3.0\n", "bad.toml:2", "unknown key 'batch.max_cost'");
	expect_error("[batch]\nurl_template = \"https://example.org/x.git\"\n",
		     "bad.toml:2: key 'batch.url_template'", "has no {repo}");
	expect_error("[pipeline]\nmust_pass = \"tests/test_x.py::test_a\"\n",
		     "bad.toml:2: key 'pipeline.must_pass'", NULL);
	config_init(&cfg);
	assert_true(config_apply_env(&cfg, badenv) < 0);
	assert_non_null(strstr(err_last(), "FORGEX_BATCH_JOBS"));
	assert_int_equal(cfg.batch.jobs, 0);
	config_release(&cfg);
}

/* A cloned repository's file must not choose where a batch clones from, nor narrow the gate. */
static void test_batch_untrusted_project(void **state)
{
	struct config cfg;

	(void)state;
	config_init(&cfg);
	apply_ok(&cfg, "[batch]\nurl_template = \"https://evil.example/{repo}\"\njobs = 2\n"
		 "[pipeline]\nmust_pass = [\"test_trivial\"]\n", CFG_PROJECT);
	assert_string_equal(cfg.batch.url_template, "https://github.com/{repo}.git");
	assert_int_equal(cfg.pipeline.must_pass.nr, 0);
	assert_int_equal(cfg.batch.jobs, 2);	/* ungated keys apply */
	assert_int_equal(cfg.ignored_nr, 2);
	assert_non_null(config_trust_rule("batch.url_template"));
	assert_non_null(config_trust_rule("pipeline.must_pass"));
	assert_null(config_trust_rule("batch.jobs"));
	config_release(&cfg);
	config_init(&cfg);
	cfg.project_trusted = 1;
	apply_ok(&cfg, "[batch]\nurl_template = \"https://mirror.example/{repo}\"\n", CFG_PROJECT);
	assert_string_equal(cfg.batch.url_template, "https://mirror.example/{repo}");
	assert_int_equal(cfg.ignored_nr, 0);
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_defaults),
		cmocka_unit_test(test_batch_every_key),
		cmocka_unit_test(test_batch_precedence),
		cmocka_unit_test(test_batch_errors),
		cmocka_unit_test(test_batch_untrusted_project),
	};

	return cmocka_run_group_tests_name("config/batch", tests, NULL, NULL);
}

/* verify_compare(), the JSON forms, and verify_run() through its seam. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "unit/verify/fixture.h"

static void parse_str(struct verify_result *r, const char *out, int exit_code)
{
	struct verify_output o;

	memset(&o, 0, sizeof(o));
	o.out = out;
	o.out_len = strlen(out);
	o.exit_code = exit_code;
	verify_parse(r, &o);
}

static const struct verify_change_entry *entry(const struct verify_comparison *c,
					       const char *name)
{
	size_t i;

	for (i = 0; i < c->entries_nr; i++)
		if (!strcmp(c->entries[i].name, name))
			return &c->entries[i];
	return NULL;
}

#define ASSERT_CHANGE(c, name, ch) \
	do { \
		const struct verify_change_entry *e_ = entry((c), (name)); \
		assert_non_null(e_); \
		assert_string_equal(verify_change_name(e_->change), verify_change_name(ch)); \
	} while (0)

/* Outputs that list every test: each kind of change. */
static void test_verify_compare_all_listed(void **state)
{
	struct verify_result base = VERIFY_RESULT_INIT, cur = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;

	(void)state;
	parse_str(&base, "1..5\nok 1 - same\nok 2 - breaks\nnot ok 3 - stays\n"
		  "not ok 4 - gets_fixed\nok 5 - removed_later\n", 1);
	parse_str(&cur, "1..5\nok 1 - same\nnot ok 2 - breaks\nnot ok 3 - stays\n"
		  "ok 4 - gets_fixed\nok 5 - brand_new\n", 1);
	verify_compare(&c, &base, &cur);
	ASSERT_CHANGE(&c, "same", VERIFY_UNCHANGED);
	ASSERT_CHANGE(&c, "breaks", VERIFY_NEWLY_FAILING);
	ASSERT_CHANGE(&c, "stays", VERIFY_STILL_FAILING);
	ASSERT_CHANGE(&c, "gets_fixed", VERIFY_FIXED);
	ASSERT_CHANGE(&c, "brand_new", VERIFY_NEW);
	ASSERT_CHANGE(&c, "removed_later", VERIFY_REMOVED);
	assert_int_equal(c.entries_nr, 6);
	assert_int_equal(c.counts[VERIFY_NEWLY_FAILING], 1);
	assert_int_equal(c.counts[VERIFY_FIXED], 1);
	assert_true(c.regressed);
	assert_int_equal(entry(&c, "breaks")->before, VERIFY_PASS);
	assert_int_equal(entry(&c, "breaks")->after, VERIFY_FAIL);
	assert_int_equal(entry(&c, "brand_new")->before, -1);
	verify_comparison_release(&c);
	verify_result_release(&base);
	verify_result_release(&cur);
}

/*
 * pytest without -v lists failures only: a failure the baseline did not
 * name may have passed silently (newly failing), and a baseline failure
 * the current run does not name is fixed.
 */
static void test_verify_compare_failures_only(void **state)
{
	struct verify_result base = VERIFY_RESULT_INIT, cur = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;

	(void)state;
	parse_str(&base, "============ test session starts ============\n"
		  "FAILED t.py::test_old - assert 0\n"
		  "========= 1 failed, 9 passed in 0.10s =========\n", 1);
	parse_str(&cur, "============ test session starts ============\n"
		  "FAILED t.py::test_new - assert 0\n"
		  "========= 1 failed, 9 passed in 0.10s =========\n", 1);
	verify_compare(&c, &base, &cur);
	ASSERT_CHANGE(&c, "t.py::test_new", VERIFY_NEWLY_FAILING);
	ASSERT_CHANGE(&c, "t.py::test_old", VERIFY_FIXED);
	assert_true(c.regressed);	/* same counts, but a different test broke */
	verify_comparison_release(&c);
	verify_result_release(&cur);

	/* everything passes now */
	parse_str(&cur, "============ test session starts ============\n"
		  "========= 10 passed in 0.10s =========\n", 0);
	verify_compare(&c, &base, &cur);
	ASSERT_CHANGE(&c, "t.py::test_old", VERIFY_FIXED);
	assert_false(c.regressed);
	verify_comparison_release(&c);
	verify_result_release(&cur);

	/* unreadable output that failed: do not claim the fix */
	parse_str(&cur, "Segmentation fault\n", 139);
	verify_compare(&c, &base, &cur);
	ASSERT_CHANGE(&c, "t.py::test_old", VERIFY_STILL_FAILING);
	verify_comparison_release(&c);
	verify_result_release(&cur);
	verify_result_release(&base);
}

/* Without names, the run-level numbers decide. */
static void test_verify_compare_counts_only(void **state)
{
	struct verify_result base = VERIFY_RESULT_INIT, cur = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;

	(void)state;
	parse_str(&base, "40 passed, 2 failed\n", 1);
	parse_str(&cur, "39 passed, 3 failed\n", 1);
	verify_compare(&c, &base, &cur);
	assert_int_equal(c.entries_nr, 0);
	assert_int_equal(c.failing_before, 2);
	assert_int_equal(c.failing_after, 3);
	assert_true(c.regressed);
	verify_comparison_release(&c);
	verify_compare(&c, &cur, &base);
	assert_false(c.regressed);
	verify_comparison_release(&c);
	verify_result_release(&base);
	verify_result_release(&cur);
}

/* Baseline go -json (all named) against the fixed run (all pass). */
static void test_verify_compare_fixtures(void **state)
{
	struct verify_result base = VERIFY_RESULT_INIT, cur = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;

	(void)state;
	fixture_parse(&base, "go/json_fail");
	fixture_parse(&cur, "go/json_pass");
	verify_compare(&c, &base, &cur);
	ASSERT_CHANGE(&c, "TestAdd", VERIFY_UNCHANGED);
	ASSERT_CHANGE(&c, "TestSkipped", VERIFY_UNCHANGED);
	ASSERT_CHANGE(&c, "TestAddWrong", VERIFY_REMOVED);	/* json_pass ran without it */
	ASSERT_CHANGE(&c, "TestTable/small", VERIFY_REMOVED);
	/* no test fails now, but TestTable/small passed and did not run: a drop */
	assert_int_equal(c.regressions, 0);
	assert_true(c.passed_drop > 0);
	assert_true(c.regressed);
	verify_comparison_release(&c);
	verify_compare(&c, &cur, &base);
	ASSERT_CHANGE(&c, "TestAddWrong", VERIFY_NEW);
	assert_true(c.regressed);	/* a new test that fails */
	verify_comparison_release(&c);
	verify_result_release(&base);
	verify_result_release(&cur);
}

static void test_verify_result_json_round_trip(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT, back = VERIFY_RESULT_INIT;
	json_t *j, *j2;
	char *a, *b;
	size_t i;

	(void)state;
	fixture_parse(&r, "pytest/verbose");
	j = verify_result_to_json(&r);
	assert_false(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(json_object_get(j, "failed")), 3);
	assert_string_equal(jsonx_str(json_array_get(json_object_get(j, "tests"), 1), "outcome"),
			    "fail");
	assert_int_equal(verify_result_from_json(&back, j), 0);
	assert_int_equal(back.passed, r.passed);
	assert_int_equal(back.errors, r.errors);
	assert_int_equal(back.exit_code, 1);
	assert_int_equal(back.tests_nr, r.tests_nr);
	for (i = 0; i < r.tests_nr; i++) {
		assert_string_equal(back.tests[i].name, r.tests[i].name);
		assert_int_equal(back.tests[i].outcome, r.tests[i].outcome);
		assert_string_equal(back.tests[i].format, "pytest");
	}
	j2 = verify_result_to_json(&back);
	a = json_dumps(j, JSON_SORT_KEYS);
	b = json_dumps(j2, JSON_SORT_KEYS);
	assert_string_equal(a, b);
	free(a);
	free(b);
	json_decref(j);
	json_decref(j2);
	verify_result_release(&r);
	verify_result_release(&back);
}

static void test_verify_result_json_rejects(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	json_t *j;

	(void)state;
	j = json_string("x");
	assert_int_equal(verify_result_from_json(&r, j), FX_EPARSE);
	json_decref(j);
	j = json_pack("{s:i, s:i, s:i, s:i, s:i, s:[{s:s}]}", "passed", 1, "failed", 0,
		      "skipped", 0, "errors", 0, "exit_code", 0, "tests", "name", "x");
	assert_int_equal(verify_result_from_json(&r, j), FX_EPARSE);
	assert_non_null(strstr(err_last(), "test 0 needs a name and an outcome"));
	json_decref(j);
	j = json_pack("{s:s}", "passed", "many");
	assert_int_equal(verify_result_from_json(&r, j), FX_EPARSE);
	assert_non_null(strstr(err_last(), "'passed'"));
	json_decref(j);
	assert_int_equal(r.tests_nr, 0);
}

static void test_verify_comparison_json(void **state)
{
	struct verify_result base = VERIFY_RESULT_INIT, cur = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;
	json_t *j, *e;

	(void)state;
	parse_str(&base, "1..2\nok 1 - a\nnot ok 2 - b\n", 1);
	parse_str(&cur, "1..2\nnot ok 1 - a\nok 2 - b\n", 1);
	verify_compare(&c, &base, &cur);
	j = verify_comparison_to_json(&c);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counts"),
							   "newly_failing")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counts"),
							   "fixed")), 1);
	assert_true(json_is_true(json_object_get(j, "regressed")));
	e = json_array_get(json_object_get(j, "entries"), 0);
	assert_string_equal(jsonx_str(e, "name"), "a");
	assert_string_equal(jsonx_str(e, "change"), "newly_failing");
	assert_string_equal(jsonx_str(e, "before"), "pass");
	assert_string_equal(jsonx_str(e, "after"), "fail");
	json_decref(j);
	verify_comparison_release(&c);
	verify_result_release(&base);
	verify_result_release(&cur);
}

/* ---- verify_run() through the seam ---- */

struct fake {
	const char *fixture;
	int ret;
	int calls;
	long seen_timeout;
	const char *seen_argv0;
};

static int fake_run(struct verify_capture *out, const struct verify_request *req, void *data)
{
	struct fake *f = data;
	struct fixture fx;

	f->calls++;
	f->seen_timeout = req->timeout_seconds;
	f->seen_argv0 = req->cmd->argv.v[0];
	if (f->ret < 0)
		return err_set(f->ret, "Command denied by policy: test");
	fixture_load(&fx, f->fixture);
	buf_addbuf(&out->out, &fx.out);
	buf_addbuf(&out->err, &fx.err);
	out->exit_code = fx.exit_code;
	out->duration_ms = 42;
	fixture_release(&fx);
	return 0;
}

static void test_verify_run_through_seam(void **state)
{
	struct verify_command cmd = VERIFY_COMMAND_INIT;
	struct verify_result r = VERIFY_RESULT_INIT;
	struct verify_request req = { &cmd, "/nonexistent", 30 };
	struct fake f = { "cargo/fail", 0, 0, 0, NULL };

	(void)state;
	strvec_pushv(&cmd.argv, (const char *[]){ "cargo", "test", NULL });
	assert_int_equal(verify_run(&r, &req, fake_run, &f), 0);
	assert_int_equal(f.calls, 1);
	assert_int_equal(f.seen_timeout, 30);
	assert_string_equal(f.seen_argv0, "cargo");
	assert_int_equal(r.passed, 4);
	assert_int_equal(r.failed, 2);
	assert_int_equal(r.exit_code, 101);
	assert_int_equal(r.duration_ms, 42);
	verify_result_release(&r);

	/* a refusal passes through, the result untouched */
	f.ret = FX_EDENIED;
	assert_int_equal(verify_run(&r, &req, fake_run, &f), FX_EDENIED);
	assert_non_null(strstr(err_last(), "denied by policy"));
	assert_int_equal(r.tests_nr, 0);
	assert_null(r.tail);

	/* nothing to run */
	strvec_clear(&cmd.argv);
	assert_int_equal(verify_run(&r, &req, fake_run, &f), FX_EINVAL);
	assert_int_equal(f.calls, 2);
	verify_command_release(&cmd);
}

/* Two tests called "works": they pair by order, a pass and a fail stay two. */
static void test_verify_compare_same_names(void **state)
{
	struct verify_result base = VERIFY_RESULT_INIT, cur = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;

	(void)state;
	parse_str(&base, "1..2\nok 1 - works\nnot ok 2 - works\n", 1);
	parse_str(&cur, "1..2\nnot ok 1 - works\nok 2 - works\n", 1);
	assert_int_equal(base.tests_nr, 2);
	assert_int_equal(base.passed, 1);
	assert_int_equal(base.failed, 1);
	verify_compare(&c, &base, &cur);
	assert_int_equal(c.entries_nr, 2);
	assert_int_equal(c.entries[0].change, VERIFY_NEWLY_FAILING);
	assert_int_equal(c.entries[1].change, VERIFY_FIXED);
	assert_int_equal(c.regressions, 1);
	assert_true(c.regressed);
	verify_comparison_release(&c);
	verify_result_release(&base);
	verify_result_release(&cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_compare_all_listed),
		cmocka_unit_test(test_verify_compare_failures_only),
		cmocka_unit_test(test_verify_compare_counts_only),
		cmocka_unit_test(test_verify_compare_fixtures),
		cmocka_unit_test(test_verify_result_json_round_trip),
		cmocka_unit_test(test_verify_result_json_rejects),
		cmocka_unit_test(test_verify_comparison_json),
		cmocka_unit_test(test_verify_run_through_seam),
		cmocka_unit_test(test_verify_compare_same_names),
	};

	return cmocka_run_group_tests_name("verify/compare", tests, NULL, NULL);
}

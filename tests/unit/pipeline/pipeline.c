/* The deterministic gate and the test description given to the roles. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "pipeline/pipeline.h"

static void parse_str(struct verify_result *r, const char *out, int exit_code)
{
	struct verify_output o;

	memset(&o, 0, sizeof(o));
	o.out = out;
	o.out_len = strlen(out);
	o.exit_code = exit_code;
	verify_parse(r, &o);
}

static int gate(struct buf *why, const char *base, int base_exit, const char *cur, int cur_exit)
{
	struct verify_result b = VERIFY_RESULT_INIT, c = VERIFY_RESULT_INIT;
	struct verify_comparison cmp = VERIFY_COMPARISON_INIT;
	int blocked;

	parse_str(&b, base, base_exit);
	parse_str(&c, cur, cur_exit);
	verify_compare(&cmp, &b, &c);
	blocked = pipeline_gate(why, 1, &c, &cmp);
	verify_comparison_release(&cmp);
	verify_result_release(&b);
	verify_result_release(&c);
	return blocked;
}

static void test_pipeline_gate_baseline_pass_now_fails(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	assert_int_equal(gate(&why, "1..2\nok 1 - a\nok 2 - b\n", 0,
			      "1..2\nok 1 - a\nnot ok 2 - b\n", 1), 1);
	assert_non_null(strstr(why.buf, "did not fail at baseline now fail"));
	assert_non_null(strstr(why.buf, "b"));
	buf_release(&why);
}

/* Real `python3 -m unittest` output, no -v: only failures are named. */
#define UT_ADD_FAILS \
	"F.\n======================================================================\n" \
	"FAIL: test_add (test_calc.CalcTest.test_add)\n" \
	"----------------------------------------------------------------------\n" \
	"Traceback (most recent call last):\n" \
	"  File \"/tmp/fxv/ut/test_calc.py\", line 8, in test_add\n" \
	"    self.assertEqual(add(2, 3), 5)\nAssertionError: -1 != 5\n\n" \
	"----------------------------------------------------------------------\n" \
	"Ran 2 tests in 0.000s\n\nFAILED (failures=1)\n"
#define UT_SUB_FAILS \
	".F\n======================================================================\n" \
	"FAIL: test_sub (test_calc.CalcTest.test_sub)\n" \
	"----------------------------------------------------------------------\n" \
	"Traceback (most recent call last):\n" \
	"  File \"/tmp/fxv/ut/test_calc.py\", line 11, in test_sub\n" \
	"    self.assertEqual(sub(5, 3), 2)\nAssertionError: -2 != 2\n\n" \
	"----------------------------------------------------------------------\n" \
	"Ran 2 tests in 0.000s\n\nFAILED (failures=1)\n"

/* Passing tests unnamed: a failure the complete baseline did not have is a regression. */
static void test_pipeline_gate_failures_only_baseline(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	assert_int_equal(gate(&why, UT_ADD_FAILS, 1, UT_SUB_FAILS, 1), 1);
	assert_non_null(strstr(why.buf, "did not fail at baseline now fail: "
				       "test_calc.CalcTest.test_sub"));
	buf_release(&why);
}

/* A baseline cut short names only what it saw: an unnamed test is not known to pass. */
static void test_pipeline_gate_incomplete_baseline(void **state)
{
	struct verify_result b = VERIFY_RESULT_INIT, c = VERIFY_RESULT_INIT;
	struct verify_comparison cmp = VERIFY_COMPARISON_INIT;
	struct buf why = BUF_INIT;

	(void)state;
	parse_str(&b, UT_ADD_FAILS, 1);
	b.truncated = 1;
	parse_str(&c, UT_SUB_FAILS, 1);
	verify_compare(&cmp, &b, &c);
	assert_false(cmp.baseline_complete);
	assert_int_equal(cmp.regressions, 0);
	assert_int_equal(pipeline_gate(&why, 1, &c, &cmp), 0);
	verify_comparison_release(&cmp);
	/* named passing at baseline: a regression all the same */
	verify_result_release(&b);
	verify_result_release(&c);
	parse_str(&b, "1..2\nok 1 - a\nok 2 - b\n", 0);
	b.timed_out = 1;
	parse_str(&c, "1..2\nok 1 - a\nnot ok 2 - b\n", 1);
	verify_compare(&cmp, &b, &c);
	assert_int_equal(pipeline_gate(&why, 1, &c, &cmp), 1);
	assert_non_null(strstr(why.buf, "passed at baseline now fail: b"));
	verify_comparison_release(&cmp);
	verify_result_release(&b);
	verify_result_release(&c);
	buf_release(&why);
}

/* A passing test that no longer runs: the passed count drops, no fix explains it. */
static void test_pipeline_gate_passed_drop(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	assert_int_equal(gate(&why, "1..3\nok 1 - a\nok 2 - b\nnot ok 3 - c\n", 1,
			      "1..2\nok 1 - a\nnot ok 2 - c\n", 1), 1);
	assert_non_null(strstr(why.buf, "1 fewer test pass than at baseline"));
	assert_non_null(strstr(why.buf, "2 tests ran, 3 at baseline"));
	buf_reset(&why);
	/* a fix explains one more pass; nothing lost */
	assert_int_equal(gate(&why, "1..3\nok 1 - a\nok 2 - b\nnot ok 3 - c\n", 1,
			      "1..3\nok 1 - a\nok 2 - b\nok 3 - c\n", 0), 0);
	buf_release(&why);
}

/* Judged by the exit status: failing before, passing now is a fix, nothing lost. */
static void test_pipeline_gate_exit_status_fixed(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	assert_int_equal(gate(&why, "make: *** [test] Error 1\n", 2, "", 0), 0);
	assert_int_equal(why.len, 0);
	/* and passing before, failing now blocks */
	assert_int_equal(gate(&why, "", 0, "make: *** [test] Error 1\n", 2), 1);
	assert_non_null(strstr(why.buf, "(exit status 2)"));
	buf_release(&why);
}

/* No baseline at all: every failing test blocks. */
static void test_pipeline_gate_no_baseline(void **state)
{
	struct verify_result b = VERIFY_RESULT_INIT, c = VERIFY_RESULT_INIT;
	struct verify_comparison cmp = VERIFY_COMPARISON_INIT;
	struct buf why = BUF_INIT;

	(void)state;
	parse_str(&c, UT_SUB_FAILS, 1);
	verify_compare(&cmp, &b, &c);
	assert_int_equal(pipeline_gate(&why, 1, &c, &cmp), 1);
	assert_non_null(strstr(why.buf, "test_calc.CalcTest.test_sub"));
	verify_comparison_release(&cmp);
	verify_result_release(&c);
	buf_release(&why);
}

static void test_pipeline_gate_still_failing_is_for_review(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	/* failing before and after: not the gate's business, the reviewers judge */
	assert_int_equal(gate(&why, "1..2\nok 1 - a\nnot ok 2 - b\n", 1,
			      "1..2\nok 1 - a\nnot ok 2 - b\n", 1), 0);
	/* fixed: passes the gate */
	assert_int_equal(gate(&why, "1..2\nok 1 - a\nnot ok 2 - b\n", 1,
			      "1..2\nok 1 - a\nok 2 - b\n", 0), 0);
	assert_int_equal(why.len, 0);
	buf_release(&why);
}

static void test_pipeline_gate_tests_could_not_run(void **state)
{
	struct buf why = BUF_INIT;
	struct verify_result r = VERIFY_RESULT_INIT;

	(void)state;
	assert_int_equal(pipeline_gate(&why, 0, NULL, NULL), 1);
	assert_non_null(strstr(why.buf, "could not run"));
	buf_reset(&why);
	parse_str(&r, "1..1\nok 1 - a\n", 0);
	r.timed_out = 1;
	assert_int_equal(pipeline_gate(&why, 1, &r, NULL), 1);
	assert_non_null(strstr(why.buf, "timed out"));
	verify_result_release(&r);
	buf_release(&why);
}

static void test_pipeline_describe_tests_has_excerpts(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	struct buf out = BUF_INIT;

	(void)state;
	parse_str(&r, "1..2\nok 1 - a\nnot ok 2 - subtracts\n  ---\n  message: 'expected 1 got 5'\n"
		  "  ...\n", 1);
	pipeline_describe_tests(&out, &r, NULL, 4096);
	assert_non_null(strstr(out.buf, "passed 1, failed 1"));
	assert_non_null(strstr(out.buf, "- subtracts: fail"));
	buf_reset(&out);
	pipeline_describe_tests(&out, &r, NULL, 10);
	assert_non_null(strstr(out.buf, "[... cut ...]"));
	verify_result_release(&r);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline_gate_baseline_pass_now_fails),
		cmocka_unit_test(test_pipeline_gate_failures_only_baseline),
		cmocka_unit_test(test_pipeline_gate_incomplete_baseline),
		cmocka_unit_test(test_pipeline_gate_passed_drop),
		cmocka_unit_test(test_pipeline_gate_no_baseline),
		cmocka_unit_test(test_pipeline_gate_exit_status_fixed),
		cmocka_unit_test(test_pipeline_gate_still_failing_is_for_review),
		cmocka_unit_test(test_pipeline_gate_tests_could_not_run),
		cmocka_unit_test(test_pipeline_describe_tests_has_excerpts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

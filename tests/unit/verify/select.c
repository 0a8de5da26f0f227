/* Must-pass tests: test ids as the parsers name them, selections per runner, the gate. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "verify/verify.h"

static void assert_key(const char *id, const char *want)
{
	char *k = verify_test_key(id);

	assert_string_equal(k, want);
	free(k);
}

static void test_verify_test_key(void **state)
{
	(void)state;
	/* Django, and unittest before 3.11 */
	assert_key("test_b (mod.Class)", "mod.Class.test_b");
	assert_key("test_order (admin_views.tests.AdminViewBasicTest)",
		   "admin_views.tests.AdminViewBasicTest.test_order");
	/* unittest 3.11+ */
	assert_key("test_b (mod.Class.test_b)", "mod.Class.test_b");
	/* pytest node ids and dotted names as they are */
	assert_key("tests/test_x.py::TestA::test_b", "tests/test_x.py::TestA::test_b");
	assert_key("tests/test_x.py::test_p[a (b)]", "tests/test_x.py::test_p[a (b)]");
	assert_key("mod.Class.test_b", "mod.Class.test_b");
	/* not the form: kept */
	assert_key("a b (c)", "a b (c)");
	assert_key("x (y z)", "x (y z)");
	assert_key("x ()", "x ()");
}

static void command(struct verify_command *c, const char *kind, const char *const *argv)
{
	*c = (struct verify_command)VERIFY_COMMAND_INIT;
	strvec_pushv(&c->argv, argv);
	c->kind = xstrdup(kind);
	c->reason = xstrdup("because");
}

static char *joined(const struct verify_command *c)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < c->argv.nr; i++)
		buf_addf(&b, "%s%s", i ? " | " : "", c->argv.v[i]);
	return buf_detach(&b, NULL);
}

/* `ids` (NULL-terminated) selected from `argv` of `kind`: `want` (" | " between words), or unchanged. */
static void assert_select(const char *kind, const char *const *argv, const char *const *ids,
			  int ret, const char *want)
{
	struct verify_command c;
	struct strvec v = STRVEC_INIT;
	char *got;

	command(&c, kind, argv);
	strvec_pushv(&v, ids);
	assert_int_equal(verify_select(&c, &v), ret);
	got = joined(&c);
	assert_string_equal(got, want);
	if (ret == 1)
		assert_non_null(strstr(c.reason, "because; narrowed to the"));
	else
		assert_string_equal(c.reason, "because");
	free(got);
	strvec_clear(&v);
	verify_command_release(&c);
}

static void test_verify_select_runners(void **state)
{
	const char *const pytest[] = { "python3", "-m", "pytest", NULL };
	const char *const bare_pytest[] = { "/usr/bin/pytest", "-q", NULL };
	const char *const discover[] = { "python3", "-m", "unittest", "discover", "-s", "tests", NULL };
	const char *const runtests[] = { "./tests/runtests.py", "--settings=test_sqlite", NULL };
	const char *const manage[] = { "python", "manage.py", "test", NULL };
	const char *const make[] = { "make", "check", NULL };
	const char *const node_ids[] = { "tests/test_x.py::TestA::test_b", "t.py::test_c", NULL };
	const char *const django_ids[] = { "test_b (mod.Class)", "test_c (mod.Class.test_c)", NULL };
	const char *const none[] = { NULL };

	(void)state;
	assert_select("pytest", pytest, node_ids, 1, "python3 | -m | pytest | -rA | "
		      "tests/test_x.py::TestA::test_b | t.py::test_c");
	/* a configured command is recognised by what it starts */
	assert_select("configured", bare_pytest, node_ids, 1, "/usr/bin/pytest | -q | -rA | "
		      "tests/test_x.py::TestA::test_b | t.py::test_c");
	assert_select("configured", pytest, node_ids, 1, "python3 | -m | pytest | -rA | "
		      "tests/test_x.py::TestA::test_b | t.py::test_c");
	/* -k works with discover and its -s, naming a test would not */
	assert_select("unittest", discover, django_ids, 1, "python3 | -m | unittest | discover | -s | "
		      "tests | -v | -k | mod.Class.test_b | -k | mod.Class.test_c");
	assert_select("configured", runtests, django_ids, 1, "./tests/runtests.py | "
		      "--settings=test_sqlite | --verbosity=2 | mod.Class.test_b | mod.Class.test_c");
	assert_select("configured", manage, django_ids, 1, "python | manage.py | test | --verbosity=2 | "
		      "mod.Class.test_b | mod.Class.test_c");
	/* a runner forgex cannot narrow runs whole */
	assert_select("make", make, node_ids, 0, "make | check");
	assert_select("configured", make, node_ids, 0, "make | check");
	/* no must-pass tests: nothing changes */
	assert_select("pytest", pytest, none, 0, "python3 | -m | pytest");
}

static void test_verify_select_refuses_options(void **state)
{
	static const char *const bad[][2] = {
		{ "-p", NULL }, { "--pdb", NULL }, { "", NULL }, { "a\nb", NULL },
	};
	const char *const pytest[] = { "python3", "-m", "pytest", NULL };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct verify_command c;
		struct strvec v = STRVEC_INIT;

		command(&c, "pytest", pytest);
		strvec_push(&v, "t.py::ok");
		strvec_push(&v, bad[i][0]);
		assert_int_equal(verify_select(&c, &v), FX_EINVAL);
		assert_non_null(strstr(err_last(), "not a test id"));
		/* nothing added */
		assert_int_equal(c.argv.nr, 3);
		err_clear();
		strvec_clear(&v);
		verify_command_release(&c);
	}
}

static void parse_str(struct verify_result *r, const char *out, int exit_code)
{
	struct verify_output o;

	memset(&o, 0, sizeof(o));
	o.out = out;
	o.out_len = strlen(out);
	o.exit_code = exit_code;
	verify_parse(r, &o);
}

static void test_verify_must_pass_gate(void **state)
{
	static const char unittest_v[] =
		"test_add (test_calc.CalcTest.test_add) ... ok\n"
		"test_mul (test_calc.CalcTest.test_mul) ... ok\n"
		"test_sub (test_calc.CalcTest.test_sub) ... FAIL\n\n"
		"======================================================================\n"
		"FAIL: test_sub (test_calc.CalcTest.test_sub)\n"
		"----------------------------------------------------------------------\n"
		"AssertionError: -2 != 2\n\n"
		"----------------------------------------------------------------------\n"
		"Ran 3 tests in 0.001s\n\nFAILED (failures=1)\n";
	struct verify_result r = VERIFY_RESULT_INIT;
	struct strvec ids = STRVEC_INIT, ok = STRVEC_INIT;
	struct buf why = BUF_INIT;

	(void)state;
	parse_str(&r, unittest_v, 1);
	assert_int_equal(verify_outcome_of(&r, "test_add (test_calc.CalcTest)"), VERIFY_PASS);
	assert_int_equal(verify_outcome_of(&r, "test_calc.CalcTest.test_sub"), VERIFY_FAIL);
	assert_int_equal(verify_outcome_of(&r, "test_div (test_calc.CalcTest)"), -1);
	assert_int_equal(verify_outcome_of(NULL, "x"), -1);

	strvec_push(&ids, "test_add (test_calc.CalcTest)");
	strvec_push(&ids, "test_sub (test_calc.CalcTest)");
	strvec_push(&ids, "test_div (test_calc.CalcTest)");
	assert_int_equal(verify_must_pass_gate(&why, &r, &ids), 1);
	assert_string_equal(why.buf, "must-pass tests that do not pass: test_sub "
			    "(test_calc.CalcTest) (fail), test_div (test_calc.CalcTest) (not in "
			    "the output)");
	/* after what another gate said */
	buf_reset(&why);
	buf_addstr(&why, "tests that passed at baseline now fail: x");
	assert_int_equal(verify_must_pass_gate(&why, NULL, &ids), 1);
	assert_non_null(strstr(why.buf, "now fail: x; must-pass tests that do not pass: test_add "
			       "(test_calc.CalcTest) (the tests did not run)"));
	/* every one passes: nothing said */
	buf_reset(&why);
	strvec_push(&ok, "test_calc.CalcTest.test_add");
	strvec_push(&ok, "test_mul (test_calc.CalcTest)");
	assert_int_equal(verify_must_pass_gate(&why, &r, &ok), 0);
	assert_int_equal(why.len, 0);
	assert_int_equal(verify_must_pass_gate(&why, &r, NULL), 0);
	buf_release(&why);
	strvec_clear(&ids);
	strvec_clear(&ok);
	verify_result_release(&r);
}

/* pytest -rA names passing tests in its short summary: the node ids the gate looks for. */
static void test_verify_must_pass_pytest_ra(void **state)
{
	static const char pytest_ra[] =
		"============================= test session starts ==============================\n"
		"collected 2 items\n\n"
		"test_calc.py .F                                                          [100%]\n\n"
		"=================================== FAILURES ===================================\n"
		"______________________________ TestCalc.test_sub _______________________________\n"
		"E       assert -2 == 2\n"
		"=========================== short test summary info ============================\n"
		"PASSED test_calc.py::TestCalc::test_add\n"
		"FAILED test_calc.py::TestCalc::test_sub - assert -2 == 2\n"
		"========================= 1 failed, 1 passed in 0.01s ==========================\n";
	struct verify_result r = VERIFY_RESULT_INIT;
	struct strvec ids = STRVEC_INIT;
	struct buf why = BUF_INIT;

	(void)state;
	parse_str(&r, pytest_ra, 1);
	assert_int_equal(verify_outcome_of(&r, "test_calc.py::TestCalc::test_add"), VERIFY_PASS);
	strvec_push(&ids, "test_calc.py::TestCalc::test_add");
	strvec_push(&ids, "test_calc.py::TestCalc::test_sub");
	assert_int_equal(verify_must_pass_gate(&why, &r, &ids), 1);
	assert_string_equal(why.buf, "must-pass tests that do not pass: "
			    "test_calc.py::TestCalc::test_sub (fail)");
	buf_release(&why);
	strvec_clear(&ids);
	verify_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_test_key),
		cmocka_unit_test(test_verify_select_runners),
		cmocka_unit_test(test_verify_select_refuses_options),
		cmocka_unit_test(test_verify_must_pass_gate),
		cmocka_unit_test(test_verify_must_pass_pytest_ra),
	};

	return cmocka_run_group_tests_name("verify/select", tests, NULL, NULL);
}

/*
 * Every captured output under tests/fixtures/verify/ parses to the counts,
 * formats and failing tests the runner itself reported (see each
 * fixture's .stdout/.stderr: the numbers below are read off them).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "unit/verify/fixture.h"

struct expect {
	const char *fixture;
	long passed, failed, skipped, errors;
	const char *formats;		/* space-separated, in table order */
	const char *failing[6];		/* every failing or erroring test, in order */
	const char *excerpt_of;		/* a failing test whose excerpt ... */
	const char *excerpt_has;	/* ... contains this */
	long named;			/* tests_nr, or -1 not checked */
};

static const struct expect cases[] = {
	/* pytest 7.2.1 */
	{ "pytest/default", 4, 3, 2, 1, "pytest",
	  { "test_calc.py::test_add_wrong", "test_calc.py::test_even[3]",
	    "test_calc.py::TestGroup::test_inside_fails", "test_calc.py::test_uses_broken" },
	  "test_calc.py::test_add_wrong", "E       assert 4 == 5", 4 },
	{ "pytest/ra", 4, 3, 2, 1, "pytest",
	  { "test_calc.py::test_uses_broken", "test_calc.py::test_add_wrong",
	    "test_calc.py::test_even[3]", "test_calc.py::TestGroup::test_inside_fails" },
	  "test_calc.py::TestGroup::test_inside_fails", "some captured output", 9 },
	{ "pytest/verbose", 4, 3, 2, 1, "pytest",
	  { "test_calc.py::test_add_wrong", "test_calc.py::test_uses_broken",
	    "test_calc.py::test_even[3]", "test_calc.py::TestGroup::test_inside_fails" },
	  "test_calc.py::test_uses_broken", "RuntimeError: fixture exploded", 10 },
	{ "pytest/quiet", 4, 3, 2, 1, "pytest",
	  { "test_calc.py::test_add_wrong", "test_calc.py::test_even[3]",
	    "test_calc.py::TestGroup::test_inside_fails", "test_calc.py::test_uses_broken" },
	  "test_calc.py::test_even[3]", "assert ((3 % 2) == 0 or 3 == 1)", 4 },
	{ "pytest/pass", 2, 0, 0, 0, "pytest", { NULL }, NULL, NULL, 0 },
	{ "pytest/collect_error", 0, 0, 0, 1, "pytest", { "broken/test_syntax.py" },
	  "broken/test_syntax.py", "SyntaxError: invalid syntax", 1 },
	{ "pytest/no_tests", 0, 0, 0, 1, "pytest", { "(exit status 5)" },
	  "(exit status 5)", "no tests ran", 1 },
	/* unittest, Python 3.11 */
	{ "unittest/fail", 3, 2, 2, 1, "unittest",
	  { "test_shapes.TestShapes.test_broken", "test_shapes.TestShapes.test_perimeter",
	    "test_shapes.TestShapes.test_sub (i=2)" },
	  "test_shapes.TestShapes.test_perimeter", "AssertionError: 10 != 12", 3 },
	{ "unittest/verbose", 3, 2, 2, 1, "unittest",
	  { "test_shapes.TestShapes.test_broken", "test_shapes.TestShapes.test_perimeter",
	    "test_shapes.TestShapes.test_sub (i=2)" },
	  "test_shapes.TestShapes.test_broken", "ValueError: boom", 8 },
	{ "unittest/pass", 2, 0, 0, 0, "unittest", { NULL }, NULL, NULL, 0 },
	{ "unittest/import_error", 2, 0, 0, 1, "unittest", { "test_importfail" },
	  "test_importfail", "No module named 'no_such_module_for_forgex'", 1 },
	/* go 1.19 */
	{ "go/json_fail", 3, 2, 1, 0, "gojson", { "TestAddWrong", "TestTable/big" },
	  "TestAddWrong", "Add(2, 2) = 4, want 5", 6 },
	{ "go/plain_fail", 0, 2, 0, 0, "go", { "TestAddWrong", "TestTable/big" },
	  "TestTable/big", "got 101 want 102", 2 },
	{ "go/verbose_fail", 3, 2, 1, 0, "go", { "TestAddWrong", "TestTable/big" },
	  "TestAddWrong", "checking 2+2", 6 },
	{ "go/json_pass", 2, 0, 1, 0, "gojson", { NULL }, NULL, NULL, 3 },
	{ "go/json_build_error", 0, 0, 0, 1, "go", { "example.com/broken" },
	  "example.com/broken", "undefined: undefinedThing", 1 },
	{ "go/plain_build_error", 0, 0, 0, 1, "go", { "example.com/broken" },
	  "example.com/broken", "undefined: undefinedThing", 1 },
	/* cargo 1.95 */
	{ "cargo/fail", 4, 2, 1, 0, "cargo", { "tests::adds_wrong", "integration_bad" },
	  "integration_bad", "sum too small", 7 },
	{ "cargo/fail_fast", 2, 1, 1, 0, "cargo", { "tests::adds_wrong" },
	  "tests::adds_wrong", "left: 4", 4 },
	{ "cargo/pass", 2, 0, 1, 0, "cargo", { NULL }, NULL, NULL, 3 },
	{ "cargo/compile_error", 0, 0, 0, 2, "cargo",
	  { "could not compile `calc` (lib)", "could not compile `calc` (lib test)" },
	  "could not compile `calc` (lib)", "mismatched types", 2 },
	/* node 20 */
	{ "node/tap_fail", 3, 2, 2, 0, "tap", { "adds wrong", "group > inner fails" },
	  "adds wrong", "4 !== 5", 7 },
	{ "node/spec_fail", 3, 2, 2, 0, "node", { "adds wrong", "group > inner fails" },
	  "group > inner fails", "Error: inner boom", 7 },
	{ "node/tap_pass", 1, 0, 0, 0, "tap", { NULL }, NULL, NULL, 1 },
	{ "node/spec_pass", 1, 0, 0, 0, "node", { NULL }, NULL, NULL, 1 },
	/* Jest 29 */
	{ "jest/fail", 3, 2, 2, 0, "jest", { "adds wrong", "group \xe2\x80\xba inner fails" },
	  "adds wrong", "Received: 4", 2 },
	{ "jest/verbose", 3, 2, 2, 0, "jest", { "adds wrong", "group \xe2\x80\xba inner fails" },
	  "group \xe2\x80\xba inner fails", "inner boom", 7 },
	{ "jest/pass", 1, 0, 0, 0, "jest", { NULL }, NULL, NULL, 1 },
	{ "jest/suite_error", 1, 0, 0, 1, "jest", { "./broken.test.js" },
	  "./broken.test.js", "Cannot find module './no-such-module'", 1 },
	/* Vitest 3 */
	{ "vitest/fail", 3, 2, 2, 0, "vitest",
	  { "math.test.js > adds wrong", "math.test.js > group > inner fails" },
	  "math.test.js > adds wrong", "expected 4 to be 5", 6 },
	{ "vitest/verbose", 3, 2, 2, 0, "vitest",
	  { "math.test.js > adds wrong", "math.test.js > group > inner fails" },
	  "math.test.js > group > inner fails", "Error: inner boom", 7 },
	{ "vitest/pass", 1, 0, 0, 0, "vitest", { NULL }, NULL, NULL, 0 },
	{ "vitest/suite_error", 1, 0, 0, 1, "vitest", { "broken.test.js" },
	  "broken.test.js", "Cannot find module './no-such-module.js'", 1 },
	/* ctest 3.25; "unit" runs the cmocka suite, which is not counted again */
	{ "ctest/fail", 1, 3, 2, 0, "ctest", { "fails", "crashes", "unit" },
	  "unit", "[  FAILED  ] test_add_wrong", 6 },
	{ "ctest/pass", 1, 0, 0, 0, "ctest", { NULL }, NULL, NULL, 1 },
	{ "ctest/plain_fail_no_output", 1, 2, 2, 0, "ctest", { "fails", "crashes" },
	  "fails", "expected 4, got 5", 5 },
	{ "ctest/plain_fail_no_output", 1, 2, 2, 0, "ctest", { "fails", "crashes" },
	  "crashes", "Exception: SegFault\nabout to crash", 5 },
	/* cmocka 1.1.5 */
	{ "cmocka/fail", 1, 1, 1, 1, "cmocka", { "test_add_wrong", "test_needs_setup" },
	  "test_add_wrong", "0x4 != 0x5", 4 },
	{ "cmocka/pass", 2, 0, 0, 0, "cmocka", { NULL }, NULL, NULL, 2 },
	{ "cmocka/crash", 1, 0, 0, 1, "cmocka", { "test_aborts" },
	  "test_aborts", "did not finish", 2 },
	{ "cmocka/tap_fail", 1, 2, 1, 0, "tap",
	  { "test_add_wrong", "test_needs_setup Could not run test: Test setup failed" },
	  "test_add_wrong", "0x4 != 0x5", 4 },
	{ "cmocka/tap_pass", 2, 0, 0, 0, "tap", { NULL }, NULL, NULL, 2 },
	/* a format forgex does not know: the exit status speaks */
	{ "cmocka/subunit_fail", 0, 0, 0, 1, "", { "(exit status 2)" },
	  "(exit status 2)", "test_needs_setup", 1 },
	/* meson 1.0 */
	{ "meson/fail", 1, 1, 2, 0, "meson", { "fails" }, "fails", ">>> MALLOC_PERTURB_", 4 },
	{ "meson/fail_errorlogs", 1, 1, 2, 0, "meson", { "fails" },
	  "fails", "expected 4, got 5", 4 },
	{ "meson/pass", 1, 0, 1, 0, "meson", { NULL }, NULL, NULL, 2 },
	/* Test::More 1.302 */
	{ "tap/fail", 3, 2, 2, 0, "tap", { "adds wrong", "group > inner fails" }, NULL, NULL, 7 },
	{ "tap/bail", 1, 0, 0, 1, "tap", { "Bail out!  database is gone" }, NULL, NULL, 2 },
	{ "tap/pass", 2, 0, 0, 0, "tap", { NULL }, NULL, NULL, 2 },
	/* unittest -v with docstrings: "name (id)", then "Doc ... ok"; no cargo */
	{ "unittest/docstrings", 3, 1, 1, 0, "unittest", { "test_doc.DocTest.test_doc_fail" },
	  "test_doc.DocTest.test_doc_fail", "AssertionError: 1 != 3", 5 },
	/* node: two tests called "works" are a pass and a fail; "# pass N" counts */
	{ "node/dup_tap", 2, 2, 0, 0, "tap", { "works", "group > inner" },
	  "group > inner", "inner dup", 4 },
	{ "node/dup_spec", 2, 2, 0, 0, "node", { "works", "group > inner" },
	  "group > inner", "inner dup", 4 },
	/* size-limit's spinner "✔ Adding to empty esbuild project" is no test */
	{ "node/size_limit", 0, 0, 0, 0, "", { NULL }, NULL, NULL, 0 },
	/* mocha 10: its own format, not node's; same-name tests apart */
	{ "mocha/fail", 3, 2, 1, 0, "mocha", { "calc > adds wrong", "calc > nested > works" },
	  "calc > nested > works", "Error: dup boom", 6 },
	/* Jest 25: "✕ adds wrong (4ms)" is the failure of the ● block, once */
	{ "jest/jest25_fail", 1, 2, 1, 0, "jest", { "adds wrong", "group \xe2\x80\xba inner fails" },
	  "adds wrong", "Received: 4", 4 },
	/* Vitest 3: two tests called "works" are a pass and a fail */
	{ "vitest/dup", 2, 2, 0, 0, "vitest",
	  { "dup.test.js > works", "dup.test.js > group > inner" },
	  "dup.test.js > group > inner", "inner dup", 4 },
	/* automake's parallel harness: PASS/FAIL/SKIP/XFAIL/XPASS/ERROR */
	{ "automake/fail", 1, 2, 2, 1, "automake", { "fail.sh", "xpass.sh", "hard.sh" },
	  "fail.sh", "FAIL: fail.sh", 6 },
	/* make check running cmocka, TAP and unittest: the counts add up */
	{ "make/mixed", 8, 3, 3, 1, "unittest cmocka tap",
	  { "test_add_wrong", "test_needs_setup", "adds wrong", "group > inner fails" },
	  "test_add_wrong", "checking 2 + 2", 13 },
};

static void check_case(const struct expect *e)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	struct buf formats = BUF_INIT;
	size_t i, k = 0;

	fixture_parse(&r, e->fixture);
	assert_int_equal(r.passed, e->passed);
	assert_int_equal(r.failed, e->failed);
	assert_int_equal(r.skipped, e->skipped);
	assert_int_equal(r.errors, e->errors);
	for (i = 0; i < r.formats.nr; i++)
		buf_addf(&formats, "%s%s", i ? " " : "", r.formats.v[i]);
	assert_string_equal(formats.buf, e->formats);
	for (i = 0; i < r.tests_nr; i++) {
		if (r.tests[i].outcome != VERIFY_FAIL && r.tests[i].outcome != VERIFY_ERROR)
			continue;
		assert_true(k < ARRAY_SIZE(e->failing));
		assert_non_null(e->failing[k]);
		assert_string_equal(r.tests[i].name, e->failing[k]);
		k++;
	}
	assert_true(k == ARRAY_SIZE(e->failing) || !e->failing[k]);
	if (e->excerpt_of) {
		const struct verify_test *t = NULL;

		/* the failing one: a passing test may have the same name */
		for (i = 0; i < r.tests_nr && !t; i++)
			if (!strcmp(r.tests[i].name, e->excerpt_of) &&
			    (r.tests[i].outcome == VERIFY_FAIL || r.tests[i].outcome == VERIFY_ERROR))
				t = &r.tests[i];

		assert_non_null(t);
		assert_non_null(t->excerpt);
		if (!strstr(t->excerpt, e->excerpt_has))
			fail_msg("%s: excerpt of '%s' lacks '%s':\n%s", e->fixture, e->excerpt_of,
				 e->excerpt_has, t->excerpt);
		assert_true(strlen(t->excerpt) <= VERIFY_EXCERPT_MAX);
	}
	if (e->named >= 0)
		assert_int_equal(r.tests_nr, e->named);
	/* the verdict follows the counts and the exit status */
	assert_int_equal(verify_result_ok(&r),
			 r.exit_code == 0 && e->failed == 0 && e->errors == 0);
	buf_release(&formats);
	verify_result_release(&r);
}

/* One test per fixture, named after it. */
static void test_verify_parse_fixture(void **state)
{
	check_case(*state);
}

/* Every fixture folder has its VERSIONS note and is covered by a case. */
static void test_verify_fixture_versions_noted(void **state)
{
	static const char *const dirs[] = {
		"pytest", "unittest", "go", "cargo", "node", "jest", "vitest", "ctest",
		"cmocka", "meson", "tap", "make", "mocha", "automake",
	};
	struct buf p = BUF_INIT, c = BUF_INIT;
	size_t i, k;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(dirs); i++) {
		int covered = 0;

		buf_reset(&c);
		fixture_path(&p, dirs[i], "x");
		buf_setlen(&p, p.len - 2);
		buf_addstr(&p, "/VERSIONS");
		assert_int_equal(fsutil_read_file(&c, p.buf, 4096), 0);
		assert_true(c.len > 3);
		for (k = 0; k < ARRAY_SIZE(cases); k++)
			covered |= !strncmp(cases[k].fixture, dirs[i], strlen(dirs[i])) &&
				   cases[k].fixture[strlen(dirs[i])] == '/';
		assert_true(covered);
	}
	buf_release(&p);
	buf_release(&c);
}

/* A make check that exits 0 while its suites failed is still a failure. */
static void test_verify_parse_failures_beat_exit_status(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;

	(void)state;
	fixture_parse(&r, "make/mixed");
	assert_int_equal(r.exit_code, 0);
	assert_false(verify_result_ok(&r));
	verify_result_release(&r);
}

/* The nested cmocka run inside ctest is quoted, not counted. */
static void test_verify_parse_nested_runner_counted_once(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;

	(void)state;
	fixture_parse(&r, "ctest/fail");
	assert_null(fixture_find(&r, "test_add_wrong"));
	assert_int_equal(r.formats.nr, 1);
	verify_result_release(&r);
}

/* No fixture of a format that states its counts disagrees with its lines. */
static void test_verify_parse_fixtures_agree(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct verify_result r = VERIFY_RESULT_INIT;

		fixture_parse(&r, cases[i].fixture);
		if (r.disagreements.nr)
			fail_msg("%s: %s", cases[i].fixture, r.disagreements.v[0]);
		verify_result_release(&r);
	}
}

/*
 * Mangled output (a test line lost, say to an interleaved write): the
 * summary and the lines disagree, and the result says so.
 */
static void test_verify_parse_disagreement_reported(void **state)
{
	static const struct {
		const char *fixture, *drop, *says;
	} cases2[] = {
		{ "mocha/fail", "  \xe2\x9c\x94 top level\n", "mocha: the summary says 3 passed, the test lines 2" },
		{ "node/dup_spec", "\xe2\x9c\x94 works (", "node: the summary says 2 passed, the test lines 1" },
		{ "automake/fail", "PASS: pass.sh\n", "automake: the summary says 1 passed, the test lines 0" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases2); i++) {
		struct fixture f;
		struct verify_output o;
		struct verify_result r = VERIFY_RESULT_INIT;
		char *at, *nl;

		fixture_load(&f, cases2[i].fixture);
		at = strstr(f.out.buf, cases2[i].drop);
		assert_non_null(at);
		nl = strchr(at, '\n');
		memmove(at, nl + 1, strlen(nl + 1) + 1);
		f.out.len = strlen(f.out.buf);
		o = fixture_output(&f);
		verify_parse(&r, &o);
		assert_int_equal(r.disagreements.nr, 1);
		assert_string_equal(r.disagreements.v[0], cases2[i].says);
		verify_result_release(&r);
		fixture_release(&f);
	}
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_verify_parse_fixtures_agree),
		cmocka_unit_test(test_verify_parse_disagreement_reported),
		cmocka_unit_test(test_verify_fixture_versions_noted),
		cmocka_unit_test(test_verify_parse_failures_beat_exit_status),
		cmocka_unit_test(test_verify_parse_nested_runner_counted_once),
	};
	struct CMUnitTest tests[ARRAY_SIZE(cases) + ARRAY_SIZE(fixed)];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct CMUnitTest t = cmocka_unit_test_prestate(test_verify_parse_fixture,
								 (void *)&cases[i]);

		t.name = cases[i].fixture;
		tests[i] = t;
	}
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		tests[ARRAY_SIZE(cases) + i] = fixed[i];
	return _cmocka_run_group_tests("verify/parse", tests, ARRAY_SIZE(tests), NULL, NULL);
}

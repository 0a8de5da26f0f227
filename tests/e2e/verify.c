/*
 * The real binary: `forgex verify` on small projects made in temporary
 * folders (Python unittest, a C project with a Makefile and cmocka, a
 * `node --test` project), each with one passing and one failing test,
 * run through the real executor and sandbox.
 *
 * Every run names permissions.mode, so no test ever waits for an answer
 * on a terminal, and allows the unconfined fallback, so a machine without
 * Landlock or namespaces still runs the tests (the sandbox has its own
 * tests).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "helpers/testutil.h"

static void run(struct tu_result *r, const char *cwd, const char *mode, ...)
{
	const char *argv[32];
	char *mode_flag = xstrfmt("permissions.mode=%s", mode);
	va_list ap;
	int n = 0;

	argv[n++] = tu_forgex();
	argv[n++] = "-c";
	argv[n++] = mode_flag;
	argv[n++] = "-c";
	argv[n++] = "sandbox.allow_unconfined=true";
	va_start(ap, mode);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	tu_run(r, argv, cwd, NULL, NULL);
	free(mode_flag);
}

/* Whether `prog` is on PATH. */
static int have(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int found = 0;

	if (!path)
		return 0;
	copy = xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *p = xstrfmt("%s/%s", dir, prog);

		found = access(p, X_OK) == 0;
		free(p);
	}
	free(copy);
	return found;
}

#define NEED(prog) \
	do { \
		if (!have(prog)) { \
			print_message("# skip: %s is not installed\n", (prog)); \
			skip(); \
		} \
	} while (0)

#define ASSERT_HAS(hay, needle) \
	do { \
		if (!strstr((hay), (needle))) \
			fail_msg("expected '%s' in:\n%s", (needle), (hay)); \
	} while (0)

/* --json: the counts and the failing names. */
static void check_json(const char *ws, const char *mode, long passed, long failed,
		       const char *failing, const char *kind)
{
	struct tu_result r;
	json_t *j, *res, *t;
	size_t i, nfail = 0;

	run(&r, ws, mode, "verify", "--json", NULL);
	assert_int_equal(r.status, failed ? 1 : 0);
	j = json_loads(r.out.buf, 0, NULL);
	if (!j)
		fail_msg("not JSON:\n%s\nstderr:\n%s", r.out.buf, r.err.buf);
	assert_string_equal(jsonx_str(json_object_get(j, "command"), "kind"), kind);
	res = json_object_get(j, "result");
	assert_int_equal(jsonx_int(res, "passed", -1), passed);
	assert_int_equal(jsonx_int(res, "failed", -1), failed);
	assert_int_equal(jsonx_int(res, "errors", -1), 0);
	assert_int_equal(jsonx_bool(res, "ok", -1), failed == 0);
	json_array_foreach(json_object_get(res, "tests"), i, t) {
		if (strcmp(jsonx_str(t, "outcome"), "fail"))
			continue;
		nfail++;
		assert_string_equal(jsonx_str(t, "name"), failing);
		assert_non_null(jsonx_str(t, "excerpt"));
	}
	assert_int_equal(nfail, failed);
	json_decref(j);
	tu_result_release(&r);
}

/* One test that passes and one that fails, its message holding a character that reorders text. */
#define CALC_TESTS \
	"import unittest\n\n\n" \
	"class TestCalc(unittest.TestCase):\n" \
	"    def test_good(self):\n" \
	"        self.assertEqual(1 + 1, 2)\n\n" \
	"    def test_bad(self):\n" \
	"        self.assertEqual(2 + 2, 5, 'sneaky \\u202e reversed')\n"

static void test_verify_e2e_python_unittest(void **state)
{
	char *ws;
	struct tu_result r;

	(void)state;
	NEED("python3");
	ws = tu_mkdtemp();
	tu_write(ws, "test_calc.py", CALC_TESTS);
	run(&r, ws, "ask", "verify", NULL);
	assert_int_equal(r.status, 1);
	ASSERT_HAS(r.out.buf, "command: python3 -m unittest discover\n");
	ASSERT_HAS(r.out.buf, "reason:  found Python test file test_calc.py and no pytest "
			      "configuration\n");
	ASSERT_HAS(r.out.buf, "formats: unittest\n");
	ASSERT_HAS(r.out.buf, "result:  FAIL: 1 passed, 1 failed, 0 skipped, 0 errors");
	ASSERT_HAS(r.out.buf, "  FAIL  test_calc.TestCalc.test_bad\n");
	ASSERT_HAS(r.out.buf, "AssertionError: 4 != 5");
	/* what the tests print cannot reorder the terminal */
	ASSERT_HAS(r.out.buf, "sneaky \\u202e reversed");
	assert_null(strstr(r.out.buf, "\xe2\x80\xae"));
	assert_null(strstr(r.out.buf, "test_good\n"));
	tu_result_release(&r);
	check_json(ws, "ask", 1, 1, "test_calc.TestCalc.test_bad", "unittest");

	/* fixed: exit 0 */
	tu_write(ws, "test_calc.py",
		 "import unittest\n\n\n"
		 "class TestCalc(unittest.TestCase):\n"
		 "    def test_good(self):\n"
		 "        self.assertEqual(1 + 1, 2)\n");
	run(&r, ws, "ask", "verify", NULL);
	assert_int_equal(r.status, 0);
	ASSERT_HAS(r.out.buf, "result:  PASS: 1 passed, 0 failed");
	assert_null(strstr(r.out.buf, "failing tests"));
	tu_result_release(&r);
	tu_rmtree(ws);
}

static void test_verify_e2e_make_c(void **state)
{
	char *ws;
	struct tu_result r;

	(void)state;
	NEED("make");
	NEED("cc");
	ws = tu_mkdtemp();
	tu_write(ws, "calc.c", "int add(int a, int b) { return a + b; }\n");
	tu_write(ws, "calc_test.c",
		 "#include <stdarg.h>\n#include <stddef.h>\n#include <setjmp.h>\n"
		 "#include <stdint.h>\n#include <cmocka.h>\n\n"
		 "int add(int a, int b);\n\n"
		 "static void test_add_ok(void **s) { (void)s; assert_int_equal(add(1, 2), 3); }\n"
		 "static void test_add_bad(void **s) { (void)s; assert_int_equal(add(2, 2), 5); }\n\n"
		 "int main(void)\n{\n"
		 "\tconst struct CMUnitTest t[] = { cmocka_unit_test(test_add_ok),\n"
		 "\t\tcmocka_unit_test(test_add_bad) };\n"
		 "\treturn cmocka_run_group_tests(t, NULL, NULL);\n}\n");
	tu_write(ws, "Makefile",
		 "CC ?= cc\n\n"
		 "all: calc_test\n\n"
		 "calc_test: calc.c calc_test.c\n"
		 "\t$(CC) -o $@ calc.c calc_test.c -lcmocka\n\n"
		 ".PHONY: test\n"
		 "test: calc_test\n"
		 "\t./calc_test\n");
	run(&r, ws, "ask", "verify", NULL);
	assert_int_equal(r.status, 1);
	ASSERT_HAS(r.out.buf, "command: make test\n");
	ASSERT_HAS(r.out.buf, "reason:  Makefile has a 'test' target\n");
	ASSERT_HAS(r.out.buf, "1 passed, 1 failed, 0 skipped, 0 errors");
	ASSERT_HAS(r.out.buf, "  FAIL  test_add_bad\n");
	ASSERT_HAS(r.out.buf, "0x4 != 0x5");
	tu_result_release(&r);
	check_json(ws, "ask", 1, 1, "test_add_bad", "make");
	tu_rmtree(ws);
}

static void write_node_project(const char *ws)
{
	tu_write(ws, "package.json",
		 "{\"name\": \"calc\", \"version\": \"1.0.0\", \"private\": true,\n"
		 " \"scripts\": {\"test\": \"node --test\"}}\n");
	tu_write(ws, "calc.test.js",
		 "const test = require('node:test');\n"
		 "const assert = require('node:assert');\n\n"
		 "test('adds', () => { assert.strictEqual(1 + 2, 3); });\n"
		 "test('adds wrong', () => { assert.strictEqual(2 + 2, 5); });\n");
}

static void test_verify_e2e_node_test(void **state)
{
	char *ws;
	struct tu_result r;

	(void)state;
	NEED("node");
	NEED("npm");
	ws = tu_mkdtemp();
	write_node_project(ws);
	/* npm may use the network: auto mode approves it */
	run(&r, ws, "auto", "verify", NULL);
	assert_int_equal(r.status, 1);
	ASSERT_HAS(r.out.buf, "command: npm test\n");
	ASSERT_HAS(r.out.buf, "reason:  package.json has scripts.test: node --test\n");
	ASSERT_HAS(r.out.buf, "1 passed, 1 failed, 0 skipped, 0 errors");
	ASSERT_HAS(r.out.buf, "  FAIL  adds wrong\n");
	ASSERT_HAS(r.out.buf, "4 !== 5");
	tu_result_release(&r);
	check_json(ws, "auto", 1, 1, "adds wrong", "npm");
	tu_rmtree(ws);
}

/* A detected command passes the policy: safe mode refuses npm (exit 4). */
static void test_verify_e2e_policy_refuses_detected(void **state)
{
	char *ws;
	struct tu_result r;

	(void)state;
	NEED("node");
	NEED("npm");
	ws = tu_mkdtemp();
	write_node_project(ws);
	run(&r, ws, "safe", "verify", NULL);
	assert_int_equal(r.status, 4);
	ASSERT_HAS(r.err.buf, "Command not approved: npm test");
	assert_int_equal(r.out.len, 0);
	tu_result_release(&r);

	/* from a project file nobody trusted, configuring it approves nothing */
	tu_write(ws, ".forgex/config.toml", "[pipeline]\ntest_command = [\"npm\", \"test\"]\n");
	run(&r, ws, "safe", "verify", NULL);
	assert_int_equal(r.status, 4);
	ASSERT_HAS(r.err.buf, "Command not approved: npm test");
	tu_result_release(&r);

	/* trusted, the same command from the configuration is the user's own: it runs */
	tu_trust(ws, NULL);
	run(&r, ws, "safe", "verify", NULL);
	assert_int_equal(r.status, 1);
	ASSERT_HAS(r.out.buf, "reason:  [pipeline] test_command is set\n");
	ASSERT_HAS(r.out.buf, "  FAIL  adds wrong\n");
	tu_result_release(&r);

	/* but a denied program stays denied */
	tu_write(ws, ".forgex/config.toml", "[pipeline]\ntest_command = [\"rm\", \"-rf\", \"x\"]\n");
	run(&r, ws, "auto", "verify", NULL);
	assert_int_equal(r.status, 4);
	ASSERT_HAS(r.err.buf, "denied by policy");
	tu_result_release(&r);
	tu_rmtree(ws);
}

static void test_verify_e2e_nothing_to_run(void **state)
{
	char *ws = tu_mkdtemp();
	struct tu_result r;

	(void)state;
	tu_write(ws, "README.md", "nothing here\n");
	tu_write(ws, "CMakeLists.txt", "project(x C)\n");
	run(&r, ws, "ask", "verify", NULL);
	assert_int_equal(r.status, 2);
	ASSERT_HAS(r.err.buf, "no test command found in");
	ASSERT_HAS(r.err.buf, "[pipeline] test_command");
	ASSERT_HAS(r.err.buf, "CMakeLists.txt exists but no build*/ folder");
	assert_int_equal(r.out.len, 0);
	tu_result_release(&r);
	tu_rmtree(ws);
}

/*
 * [pipeline] must_pass: verify runs only those tests and each must pass,
 * as the gate of `forgex run` requires; an id that is not in the output
 * fails it too.
 */
static void test_verify_e2e_must_pass(void **state)
{
	static const char set_good[] = "pipeline.must_pass=[\"test_calc.TestCalc.test_good\"]";
	struct tu_result r;
	json_t *j, *e;
	size_t i;
	char *ws;

	(void)state;
	NEED("python3");
	ws = tu_mkdtemp();
	tu_write(ws, "test_calc.py", CALC_TESTS);

	/* narrowed to the one that passes: test_bad does not run */
	run(&r, ws, "ask", "-c", set_good, "verify", NULL);
	assert_int_equal(r.status, 0);
	ASSERT_HAS(r.out.buf, "result:  PASS: 1 passed, 0 failed");
	ASSERT_HAS(r.out.buf, "must pass ([pipeline] must_pass): 1 of 1 pass\n"
			      "  PASS    test_calc.TestCalc.test_good\n");
	assert_null(strstr(r.out.buf, "test_bad"));
	tu_result_release(&r);

	/* one of two fails, one is in no output: exit 1, each named */
	run(&r, ws, "ask", "-c",
	    "pipeline.must_pass=[\"test_calc.TestCalc.test_good\", \"test_calc.TestCalc.test_bad\", "
	    "\"test_calc.TestCalc.test_gone\"]", "verify", NULL);
	assert_int_equal(r.status, 1);
	ASSERT_HAS(r.out.buf, "must pass ([pipeline] must_pass): 1 of 3 pass\n"
			      "  PASS    test_calc.TestCalc.test_good\n"
			      "  FAIL    test_calc.TestCalc.test_bad\n"
			      "  MISSING test_calc.TestCalc.test_gone\n");
	tu_result_release(&r);

	/* --json: each id with its outcome, and the verdict */
	run(&r, ws, "ask", "-c",
	    "pipeline.must_pass=[\"test_calc.TestCalc.test_good\", \"test_calc.TestCalc.test_gone\"]",
	    "verify", "--json", NULL);
	assert_int_equal(r.status, 1);
	j = json_loads(r.out.buf, 0, NULL);
	if (!j)
		fail_msg("not JSON:\n%s", r.out.buf);
	assert_int_equal(jsonx_bool(json_object_get(j, "result"), "ok", -1), 1);
	assert_int_equal(jsonx_bool(j, "ok", -1), 0);
	assert_int_equal(json_array_size(json_object_get(j, "must_pass")), 2);
	json_array_foreach(json_object_get(j, "must_pass"), i, e)
		assert_string_equal(jsonx_str(e, "outcome"), i ? "missing" : "pass");
	json_decref(j);
	tu_result_release(&r);

	/* an id that would be an option: a usage error, nothing runs */
	run(&r, ws, "ask", "-c", "pipeline.must_pass=[\"--pdb\"]", "verify", NULL);
	assert_int_equal(r.status, 2);
	ASSERT_HAS(r.err.buf, "pipeline.must_pass");
	assert_null(strstr(r.out.buf, "result:"));
	tu_result_release(&r);

	/* a project file nobody trusted cannot narrow the tests: all of them run */
	tu_write(ws, ".forgex/config.toml",
		 "[pipeline]\nmust_pass = [\"test_calc.TestCalc.test_good\"]\n");
	run(&r, ws, "ask", "verify", NULL);
	assert_int_equal(r.status, 1);
	ASSERT_HAS(r.out.buf, "result:  FAIL: 1 passed, 1 failed");
	assert_null(strstr(r.out.buf, "must pass"));
	ASSERT_HAS(r.err.buf, "must_pass");
	tu_result_release(&r);
	tu_rmtree(ws);
}

static void test_verify_e2e_usage(void **state)
{
	struct tu_result r;
	char *ws = tu_mkdtemp();

	(void)state;
	run(&r, ws, "ask", "verify", "--help", NULL);
	assert_int_equal(r.status, 0);
	ASSERT_HAS(r.out.buf, "usage: forgex verify [--json]");
	tu_result_release(&r);
	run(&r, ws, "ask", "verify", "--frob", NULL);
	assert_int_equal(r.status, 2);
	ASSERT_HAS(r.err.buf, "unknown option '--frob'");
	tu_result_release(&r);
	run(&r, ws, "ask", "verify", "extra", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_e2e_python_unittest),
		cmocka_unit_test(test_verify_e2e_make_c),
		cmocka_unit_test(test_verify_e2e_node_test),
		cmocka_unit_test(test_verify_e2e_policy_refuses_detected),
		cmocka_unit_test(test_verify_e2e_nothing_to_run),
		cmocka_unit_test(test_verify_e2e_must_pass),
		cmocka_unit_test(test_verify_e2e_usage),
	};

	return cmocka_run_group_tests_name("e2e/verify", tests, NULL, NULL);
}

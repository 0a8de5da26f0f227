/*
 * The test gate of `forgex run`, end to end: the real binary against
 * build/mockllm, on projects whose tests really run the way users run
 * them: plain `python3 -m unittest` and pytest without -v, so that only
 * failures are named; no -B.
 *
 * The Builder's edit fixes test_add and breaks test_sub, and the
 * Supervisor votes PASS: the gate must overrule it, name the newly
 * failing and the fixed tests, and put the tree back. A project with no
 * tests ends "PASS (unverified: no tests)". A rollback removes what
 * forgex's own test runs built and leaves ignored files alone.
 *
 * Provider settings go in the user's configuration (XDG_CONFIG_HOME in a
 * temporary folder), the test command in the project's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

#define ASSERT_HAS(hay, needle) \
	do { \
		if (!strstr((hay), (needle))) \
			fail_msg("expected '%s' in:\n%s", (needle), (hay)); \
	} while (0)

static const char calc_py[] =
	"def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";

static const char test_calc_unittest[] =
	"import unittest\n\nfrom calc import add, sub\n\n\n"
	"class CalcTest(unittest.TestCase):\n"
	"    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
	"    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n";

static const char test_calc_pytest[] =
	"from calc import add, sub\n\n\n"
	"def test_add():\n    assert add(2, 3) == 5\n\n\n"
	"def test_sub():\n    assert sub(5, 3) == 2\n";

struct env {
	char *xdg, *cache;
	char *xdg_kv, *cache_kv;
};

static void env_init(struct env *e, const struct mock *m)
{
	char *prov = sc_provider_toml(m, "auto"), *cfg;

	e->xdg = tu_mkdtemp();
	e->cache = tu_mkdtemp();
	e->xdg_kv = xstrfmt("XDG_CONFIG_HOME=%s", e->xdg);
	e->cache_kv = xstrfmt("XDG_CACHE_HOME=%s", e->cache);
	cfg = xstrfmt("%s[sandbox]\nallow_unconfined = true\n", prov);
	tu_write(e->xdg, "forgex/config.toml", cfg);
	free(cfg);
	free(prov);
}

static void env_release(struct env *e)
{
	tu_rmtree(e->xdg);
	tu_rmtree(e->cache);
	free(e->xdg_kv);
	free(e->cache_kv);
}

static void forgex(struct tu_result *r, const struct env *e, const char *dir, ...)
{
	const char *argv[16];
	const char *envv[] = { e->xdg_kv, e->cache_kv, "PYTHONDONTWRITEBYTECODE", NULL };
	va_list ap;
	int n = 0;

	argv[n++] = tu_forgex();
	va_start(ap, dir);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	tu_run(r, argv, dir, envv, NULL);
}

#define PLAN "{\"summary\": \"Fix add\", \"steps\": [{\"id\": \"1\", \"title\": \"Make add add\"," \
	" \"description\": \"return a + b\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FIX_ADD "{\"path\": \"calc.py\", \"old_string\": \"def add(a, b):\\n    return a - b\"," \
	" \"new_string\": \"def add(a, b):\\n    return a + b\"}"
#define BREAK_SUB "{\"path\": \"calc.py\", \"old_string\": \"def sub(a, b):\\n    return a - b\"," \
	" \"new_string\": \"def sub(a, b):\\n    return b - a\"}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"looks right\"], \"required_fixes\": []}"

/* Every file of `dir` but .git and .forgex, with its bytes. */
static void snapshot_into(struct buf *out, const char *dir, const char *rel)
{
	struct dirent **names;
	int n, i;
	char *path = xstrfmt("%s/%s", dir, rel);

	n = scandir(path, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		char *sub = *rel ? xstrfmt("%s/%s", rel, nm) : xstrdup(nm);
		char *full = xstrfmt("%s/%s", dir, sub);

		if (strcmp(nm, ".") && strcmp(nm, "..") && strcmp(sub, ".git") &&
		    strcmp(sub, ".forgex")) {
			if (fsutil_is_dir(full)) {
				buf_addf(out, "%s/\n", sub);
				snapshot_into(out, dir, sub);
			} else {
				struct buf b = BUF_INIT;

				fsutil_read_file(&b, full, 0);
				buf_addf(out, "%s: %s\n", sub, b.buf);
				buf_release(&b);
			}
		}
		free(sub);
		free(full);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	free(path);
}

static char *snapshot(const char *dir)
{
	struct buf b = BUF_INIT;

	snapshot_into(&b, dir, "");
	return buf_detach(&b, NULL);
}

/* summary.json of the newest run of `dir`. */
static json_t *summary(const char *dir)
{
	struct dirent **names;
	char *runs = xstrfmt("%s/.forgex/runs", dir), *last = NULL, *p;
	json_t *j = NULL;
	int n, i;

	n = scandir(runs, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			free(last);
			last = xstrdup(names[i]->d_name);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	assert_non_null(last);
	p = xstrfmt("%s/%s/summary.json", runs, last);
	j = json_load_file(p, 0, NULL);
	assert_non_null(j);
	free(p);
	free(last);
	free(runs);
	return j;
}

static int list_has(const json_t *tests, const char *key, const char *name)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(tests, key), i, v)
		if (!strcmp(json_string_value(v), name))
			return 1;
	return 0;
}

static char *python_project(const char *test_file, const char *test_src, const char *cmd)
{
	char *dir = tu_mkdtemp(), *cfg;

	tu_write(dir, "calc.py", calc_py);
	tu_write(dir, test_file, test_src);
	tu_write(dir, ".gitignore", "__pycache__/\n");
	tu_git_init(dir);
	cfg = xstrfmt("[pipeline]\ntest_command = %s\nmax_iterations = 1\n", cmd);
	tu_write(dir, ".forgex/config.toml", cfg);
	free(cfg);
	return dir;
}

/*
 * Fix add, break sub, Supervisor PASS: `newly`/`fixed` are the names the
 * runner gives those tests.
 */
static void gate_case(const char *test_file, const char *test_src, const char *cmd,
		      const char *newly, const char *fixed)
{
	json_t *steps = json_array(), *sum, *t;
	struct mock m;
	struct env e;
	struct tu_result r;
	char *s, *dir, *before, *after, *want;

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "edit_file", BREAK_SUB);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	env_init(&e, &m);
	dir = python_project(test_file, test_src, cmd);
	before = snapshot(dir);
	forgex(&r, &e, dir, "run", "make add add", NULL);
	if (r.status != 1)
		fail_msg("status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	ASSERT_HAS(r.out.buf, "FAIL: ");
	want = xstrfmt("tests that did not fail at baseline now fail: %s", newly);
	ASSERT_HAS(r.out.buf, want);
	free(want);
	want = xstrfmt("  newly failing: %s\n", newly);
	ASSERT_HAS(r.out.buf, want);
	free(want);
	want = xstrfmt("  fixed: %s\n", fixed);
	ASSERT_HAS(r.out.buf, want);
	free(want);
	ASSERT_HAS(r.out.buf, "tests before  1 passed, 1 failed");
	ASSERT_HAS(r.out.buf, "tests after   1 passed, 1 failed");
	after = snapshot(dir);
	assert_string_equal(after, before);
	sum = summary(dir);
	assert_string_equal(jsonx_str(sum, "verdict"), "FAIL");
	t = json_object_get(sum, "tests");
	assert_true(list_has(t, "newly_failing", newly));
	assert_true(list_has(t, "fixed", fixed));
	assert_int_equal(json_array_size(json_object_get(t, "still_failing")), 0);
	assert_true(jsonx_bool(t, "baseline_complete", 0));
	assert_true(jsonx_bool(t, "fresh", 0));
	json_decref(sum);
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	env_release(&e);
	free(s);
	tu_rmtree(dir);
}

static void test_gate_unittest_without_v(void **state)
{
	(void)state;
	gate_case("test_calc.py", test_calc_unittest, "[\"python3\", \"-m\", \"unittest\"]",
		  "test_calc.CalcTest.test_sub", "test_calc.CalcTest.test_add");
}

/* The python3 that has pytest: the one on PATH, else Debian's. */
static const char *pytest_python(void)
{
	static const char *const pythons[] = { "python3", "/usr/bin/python3", NULL };
	size_t i;

	for (i = 0; pythons[i]; i++) {
		const char *argv[] = { pythons[i], "-c", "import pytest", NULL };
		struct tu_result r;
		int ok;

		tu_run(&r, argv, NULL, NULL, NULL);
		ok = r.status == 0;
		tu_result_release(&r);
		if (ok)
			return pythons[i];
	}
	return NULL;
}

static void test_gate_pytest_without_v(void **state)
{
	const char *py = pytest_python();
	char *cmd;

	(void)state;
	if (!py) {
		print_message("# skip: no python3 with pytest (scripts/deps.sh runners)\n");
		skip();
	}
	cmd = xstrfmt("[\"%s\", \"-m\", \"pytest\"]", py);
	gate_case("test_calc.py", test_calc_pytest, cmd, "test_calc.py::test_sub",
		  "test_calc.py::test_add");
	free(cmd);
}

/* No tests at all: a PASS that says it is not verified, in text and JSON. */
static void test_gate_no_tests_is_unverified(void **state)
{
	json_t *steps = json_array(), *sum;
	struct mock m;
	struct env e;
	struct tu_result r;
	char *s, *dir;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \"NOTES.md\", \"content\": \"notes\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	env_init(&e, &m);
	dir = tu_mkdtemp();
	tu_write(dir, "README.md", "no tests here\n");
	tu_git_init(dir);
	forgex(&r, &e, dir, "run", "write notes", NULL);
	if (r.status != 0)
		fail_msg("status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	ASSERT_HAS(r.out.buf, "PASS (unverified: no tests): ");
	sum = summary(dir);
	assert_string_equal(jsonx_str(sum, "verdict"), "PASS (unverified: no tests)");
	assert_string_equal(jsonx_str(sum, "unverified"), "no tests");
	assert_false(jsonx_bool(sum, "verified", 1));
	assert_string_equal(jsonx_str(sum, "outcome"), "pass");
	json_decref(sum);
	tu_result_release(&r);
	/* --json: the run_end event says so too */
	mock_release(&m);
	steps = json_array();
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \"NOTES2.md\", \"content\": \"more\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	free(s);
	s = sc_script(steps);
	mock_start(&m, s);
	env_release(&e);
	env_init(&e, &m);
	forgex(&r, &e, dir, "run", "--json", "write more notes", NULL);
	assert_int_equal(r.status, 0);
	ASSERT_HAS(r.out.buf, "\"verdict\":\"PASS (unverified: no tests)\"");
	tu_result_release(&r);
	mock_release(&m);
	env_release(&e);
	free(s);
	tu_rmtree(dir);
}

/*
 * The checkpoint comes before the baseline: a FAIL's rollback removes
 * the binary forgex's own `make test` built (untracked, not ignored),
 * and leaves the ignored object file alone; the tree gets no __pycache__.
 */
static void test_gate_rollback_removes_test_products(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct env e;
	struct tu_result r;
	char *s, *dir, *o;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", "{\"path\": \"calc.c\", \"old_string\": \"a + b\", \"new_string\": \"a * b\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	env_init(&e, &m);
	dir = tu_mkdtemp();
	tu_write(dir, "calc.c", "int add(int a, int b) { return a + b; }\n");
	tu_write(dir, "main.c", "int add(int, int);\nint main(void) { return add(2, 3) != 5; }\n");
	tu_write(dir, "Makefile", "calc_test: calc.o main.c\n\t$(CC) -o $@ calc.o main.c\n\n"
		 "calc.o: calc.c\n\t$(CC) -c -o $@ calc.c\n\n"
		 ".PHONY: test\ntest: calc_test\n\t./calc_test\n");
	tu_write(dir, ".gitignore", "*.o\n");
	tu_git_init(dir);
	tu_write(dir, ".forgex/config.toml", "[pipeline]\nmax_iterations = 1\n");
	forgex(&r, &e, dir, "run", "make add add", NULL);
	if (r.status != 1)
		fail_msg("status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	ASSERT_HAS(r.out.buf, "restored");
	/* judged by the exit status alone: passed at baseline, fails now */
	ASSERT_HAS(r.out.buf, "tests that did not fail at baseline now fail: (exit status 2)");
	/* "files changed" is the agents' change; the test runs' binary is not in it */
	ASSERT_HAS(r.out.buf, "\n calc.c    | 2 +-\n 1 file changed by the run\n");
	assert_null(strstr(r.out.buf, "calc_test |"));
	{
		json_t *sum = summary(dir), *tp = json_object_get(sum, "test_products");

		assert_int_equal(json_array_size(tp), 1);
		assert_string_equal(json_string_value(json_array_get(tp, 0)), "calc_test");
		json_decref(sum);
	}
	/* built by the baseline run, not there before: gone */
	o = xstrfmt("%s/calc_test", dir);
	assert_false(access(o, F_OK) == 0);
	free(o);
	/* ignored: left as the test run made it */
	o = xstrfmt("%s/calc.o", dir);
	assert_true(access(o, F_OK) == 0);
	free(o);
	{
		char *c = tu_read(dir, "calc.c");

		assert_string_equal(c, "int add(int a, int b) { return a + b; }\n");
		free(c);
	}
	tu_result_release(&r);
	mock_release(&m);
	env_release(&e);
	free(s);
	tu_rmtree(dir);
}

/* commit = true commits the agents' change, not the binary the test runs built. */
static void test_gate_commit_leaves_test_products(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct env e;
	struct tu_result r;
	char *s, *dir;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", "{\"path\": \"calc.c\", \"old_string\": \"a - b\", \"new_string\": \"a + b\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	env_init(&e, &m);
	dir = tu_mkdtemp();
	tu_write(dir, "calc.c", "int add(int a, int b) { return a - b; }\n");
	tu_write(dir, "main.c", "int add(int, int);\nint main(void) { return add(2, 3) != 5; }\n");
	tu_write(dir, "Makefile", "calc_test: calc.c main.c\n\t$(CC) -o $@ calc.c main.c\n\n"
		 ".PHONY: test\ntest: calc_test\n\t./calc_test\n");
	tu_git_init(dir);
	tu_write(dir, ".forgex/config.toml", "[pipeline]\nmax_iterations = 1\ncommit = true\n");
	{
		const char *envv[] = { e.xdg_kv, e.cache_kv, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e",
				       "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", NULL };
		const char *argv[] = { tu_forgex(), "run", "make add add", NULL };

		tu_run(&r, argv, dir, envv, NULL);
	}
	if (r.status != 0)
		fail_msg("status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	ASSERT_HAS(r.out.buf, "committed");
	tu_result_release(&r);
	{
		const char *argv[] = { "git", "show", "--stat", "--format=", "HEAD", NULL };

		tu_run(&r, argv, dir, NULL, NULL);
		ASSERT_HAS(r.out.buf, "calc.c");
		assert_null(strstr(r.out.buf, "calc_test"));
		tu_result_release(&r);
	}
	/* the binary the test runs built stays in the tree, untracked */
	{
		char *o = xstrfmt("%s/calc_test", dir);

		assert_true(access(o, F_OK) == 0);
		free(o);
	}
	mock_release(&m);
	env_release(&e);
	free(s);
	tu_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate_unittest_without_v),
		cmocka_unit_test(test_gate_pytest_without_v),
		cmocka_unit_test(test_gate_no_tests_is_unverified),
		cmocka_unit_test(test_gate_rollback_removes_test_products),
		cmocka_unit_test(test_gate_commit_leaves_test_products),
	};

	return cmocka_run_group_tests_name("e2e/gate", tests, NULL, NULL);
}

/*
 * forgex batch with SWE-bench tasks, end to end: FAIL_TO_PASS and
 * PASS_TO_PASS reach each task's verify gate. A generated Python project
 * (unittest, found by detection; and pytest where it is installed) with
 * add() wrong, sub() and mul() right, and a test_div that fails at every
 * commit and is no must-pass test. The tasks name test_add as FAIL_TO_PASS
 * and test_sub, test_mul as PASS_TO_PASS, in Django's "test (module.Class)"
 * form for unittest and as node ids for pytest. Against the scripted mock
 * (one per kind, answering by role; the Supervisor always says PASS):
 *   breaks   the Builder fixes add() and breaks sub(): FAIL, rolled back;
 *   holds    the Builder fixes add(): PASS;
 *   unfixed  the Builder touches mul() harmlessly, test_add still fails:
 *            FAIL by the must-pass gate alone (nothing regressed, so the
 *            baseline comparison would have let it through), rolled back.
 * Each results.jsonl line records every must-pass test's outcome before
 * and after; the tests that ran were narrowed to the must-pass ones.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

enum kind { K_BREAKS, K_HOLDS, K_UNFIXED, K__N };
static const char *const kind_names[] = { "breaks", "holds", "unfixed" };

#define PLAN "{\"id\": \"ar\", \"name\": \"submit_plan\", \"arguments\": {\"summary\": \"Fix add\"," \
	" \"steps\": [{\"id\": \"1\", \"title\": \"fix\", \"description\": \"a + b\"," \
	" \"files\": [\"calc.py\"]}], \"acceptance\": [\"test_add passes\"]}}"
#define FINISH(id) "{\"id\": \"" id "\", \"name\": \"finish\", \"arguments\": {\"summary\": \"done\"}}"
#define VERDICT "{\"id\": \"sv\", \"name\": \"submit_verdict\", \"arguments\": {\"verdict\": " \
	"\"PASS\", \"reasons\": [\"r\"], \"required_fixes\": []}}"
#define EDIT(id, from, to) "{\"id\": \"" id "\", \"name\": \"edit_file\", \"arguments\": " \
	"{\"path\": \"calc.py\", \"old_string\": \"" from "\", \"new_string\": \"" to "\"}}"
#define FIX_ADD EDIT("bx-edit-1", "return a - b", "return a + b")
#define BREAK_SUB EDIT("bx-edit-2", "return x - y", "return y - x")
#define TOUCH_MUL EDIT("bx-edit-1", "return a * b", "return b * a")

/* First match wins: the later roles first, the Builder's second turn before its first. */
#define ROLES(first) \
	"{\"on_match\": [" \
	"{\"body_contains\": \"You are the Supervisor\", \"tool_calls\": [" VERDICT "]}," \
	"{\"body_contains\": \"You are the Expert Coder\", \"tool_calls\": [" FINISH("ex") "]}," \
	"{\"body_contains\": \"bx-edit-1\", \"tool_calls\": [" FINISH("bf") "]}," \
	"{\"body_contains\": \"You are the Builder\", \"tool_calls\": [" first "]}," \
	"{\"body_contains\": \"You are the Architect\", \"tool_calls\": [" PLAN "]}" \
	"], \"steps\": []}"

static const char *const scripts[] = {
	ROLES(FIX_ADD "," BREAK_SUB),
	ROLES(FIX_ADD),
	ROLES(TOUCH_MUL),
};

static const char calc_py[] =
	"def add(a, b):\n    return a - b\n\n\ndef sub(x, y):\n    return x - y\n\n\n"
	"def mul(a, b):\n    return a * b\n\n\ndef div(a, b):\n    return a * b\n";

static const char test_unittest[] =
	"import unittest\n\nfrom calc import add, sub, mul, div\n\n\n"
	"class CalcTest(unittest.TestCase):\n"
	"    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
	"    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n\n"
	"    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n"
	"    def test_div(self):\n        self.assertEqual(div(6, 3), 2)\n";

static const char test_pytest[] =
	"from calc import add, sub, mul, div\n\n\n"
	"class TestCalc:\n"
	"    def test_add(self):\n        assert add(2, 3) == 5\n\n"
	"    def test_sub(self):\n        assert sub(5, 3) == 2\n\n"
	"    def test_mul(self):\n        assert mul(2, 3) == 6\n\n"
	"    def test_div(self):\n        assert div(6, 3) == 2\n";

static struct mock mocks[K__N];
static struct sc_proj proj;		/* the user's configuration (HOME) */
static char *root;			/* repositories, tasks, results */

/* ROOT/repos/local/NAME: one commit of calc.py and its test; returns the commit. */
static char *make_repo(const char *name, const char *test_src)
{
	char *dir = xstrfmt("%s/repos/local/%s", root, name), *commit;

	fsutil_mkdir_p(dir, 0755);
	tu_write(dir, "calc.py", calc_py);
	tu_write(dir, "test_calc.py", test_src);
	tu_write(dir, ".gitignore", "__pycache__/\n.pytest_cache/\n");
	free(tu_sh_out(dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@e "
		    "commit -qm one"));
	commit = tu_sh_out(dir, "git rev-parse HEAD");
	free(dir);
	return commit;
}

static int setup(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < K__N; k++)
		mock_start(&mocks[k], scripts[k]);
	sc_proj_init(&proj, NULL, "auto", "[pipeline]\nmax_iterations = 1\n");
	sc_proj_env(&proj, "PYTHONDONTWRITEBYTECODE=1");
	root = tu_mkdtemp();
	return 0;
}

static int teardown(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < K__N; k++)
		mock_release(&mocks[k]);
	sc_proj_release(&proj);
	tu_rmtree(root);
	return 0;
}

/* One SWE-bench instance line of kind `k` on ROOT/repos/local/REPO. */
static void add_task(struct buf *b, const char *prefix, enum kind k, const char *repo,
		     const char *commit, const char *f2p, const char *p2p, const char *extra)
{
	buf_addf(b, "{\"instance_id\": \"%s-%s\", \"repo\": \"local/%s\", \"base_commit\": \"%s\", "
		 "\"problem_statement\": \"add() subtracts; make it add\", \"FAIL_TO_PASS\": %s, "
		 "\"PASS_TO_PASS\": %s, \"config\": {\"providers.default.base_url\": \"%s\"}%s}\n",
		 prefix, kind_names[k], repo, commit, f2p, p2p, mocks[k].base_url, extra);
}

static json_t *read_results(const char *path)
{
	char *s = tu_read("/", path + 1);
	json_t *arr = json_array();
	const char *p = s;

	if (!s)
		fail_msg("no %s", path);
	while (*p) {
		const char *nl = strchr(p, '\n');
		json_t *l = NULL;

		assert_non_null(nl);
		assert_int_equal(jsonx_parse(&l, p, (size_t)(nl - p), "result"), 0);
		json_array_append_new(arr, l);
		p = nl + 1;
	}
	free(s);
	return arr;
}

static const json_t *line_of(const json_t *res, const char *id)
{
	size_t i;
	const json_t *l;

	json_array_foreach(res, i, l)
		if (!strcmp(jsonx_str(l, "id"), id))
			return l;
	fail_msg("no result for %s", id);
	return NULL;
}

/* The must-pass record of `test` in `line`: its set, outcome before and after. */
static void assert_record(const json_t *line, const char *test, const char *set,
			  const char *before, const char *after)
{
	const json_t *mp = json_object_get(line, "must_pass"), *e;
	size_t i;

	assert_true(json_is_array(mp));
	json_array_foreach(mp, i, e) {
		if (strcmp(jsonx_str(e, "test"), test))
			continue;
		assert_string_equal(jsonx_str(e, "set"), set);
		if (!jsonx_str(e, "before") || strcmp(jsonx_str(e, "before"), before) ||
		    !jsonx_str(e, "after") || strcmp(jsonx_str(e, "after"), after))
			fail_msg("%s in %s: before %s, after %s; expected %s, %s", test,
				 jsonx_str(line, "id"), jsonx_str(e, "before") ?: "null",
				 jsonx_str(e, "after") ?: "null", before, after);
		return;
	}
	fail_msg("%s: no must-pass record of %s", jsonx_str(line, "id"), test);
}

/*
 * The last "after" test result in the task's events log names the
 * must-pass tests (`named`) and not test_div; its verify command carried
 * `arg`, the selection.
 */
static void assert_narrowed(const char *out, const char *key, const char *const *named,
			    const char *arg)
{
	char *log = tu_read(out, tu_fmt("logs/%s.jsonl", key)), *p, *nl;
	json_t *after = NULL;
	int saw_arg = 0;
	size_t i;

	assert_non_null(log);
	for (p = log; p && *p; p = nl + 1) {
		json_t *ev = NULL;

		nl = strchr(p, '\n');
		if (!nl)
			break;
		if (jsonx_parse(&ev, p, (size_t)(nl - p), "event") < 0)
			continue;
		if (!strcmp(jsonx_str(ev, "type") ?: "", "command")) {
			const json_t *a;

			json_array_foreach(json_object_get(ev, "argv"), i, a)
				saw_arg |= !strcmp(json_string_value(a), arg);
		}
		if (!strcmp(jsonx_str(ev, "type") ?: "", "test_result") &&
		    !strcmp(jsonx_str(ev, "what") ?: "", "after")) {
			json_decref(after);
			after = json_incref(json_object_get(ev, "result"));
		}
		json_decref(ev);
	}
	if (!saw_arg)
		fail_msg("%s: no verify command with '%s' in its log", key, arg);
	assert_non_null(after);
	{
		struct buf names = BUF_INIT;
		const json_t *t;

		json_array_foreach(json_object_get(after, "tests"), i, t)
			buf_addf(&names, "%s\n", jsonx_str(t, "name"));
		for (i = 0; named[i]; i++)
			if (!strstr(names.buf ?: "", named[i]))
				fail_msg("%s: '%s' not in the tests run:\n%s", key, named[i], names.buf);
		if (names.buf && strstr(names.buf, "test_div"))
			fail_msg("%s: test_div ran, the tests were not narrowed:\n%s", key, names.buf);
		buf_release(&names);
	}
	json_decref(after);
	free(log);
}

static void assert_pristine(const char *wt)
{
	char *st = tu_sh_out(wt, "git status --porcelain --untracked-files=all");
	char *calc = tu_read(wt, "calc.py");

	if (*st)
		fail_msg("%s is not its commit:\n%s", wt, st);
	assert_string_equal(calc, calc_py);
	free(st);
	free(calc);
}

/* Run the batch of `tasks` into ROOT/OUT with the clone URL template of the local repos. */
static void run_batch(const char *tasks, const char *out)
{
	char *tmpl = xstrfmt("%s/repos/{repo}", root), *path = xstrfmt("%s/%s", root, tasks);
	char *dir = xstrfmt("%s/%s", root, out);
	struct tu_result r;

	SC_FORGEX(&r, &proj, "batch", path, "-j", "3", "--out", dir, "--keep", "--repo-url", tmpl,
		  "--wall-time", "120", "--mirrors", tu_fmt("%s/mirrors", root));
	/* some tasks fail: 1 */
	if (r.status != 1)
		fail_msg("batch: status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "3 of 3 tasks finished"));
	tu_result_release(&r);
	free(tmpl);
	free(path);
	free(dir);
}

static void test_must_pass_unittest_django_ids(void **state)
{
	const char *f2p = "[\"test_add (test_calc.CalcTest)\"]";
	/* a string holding the list, as the published data sets have it */
	const char *p2p = "\"[\\\"test_sub (test_calc.CalcTest)\\\", "
			  "\\\"test_mul (test_calc.CalcTest)\\\"]\"";
	const char *const named[] = { "test_calc.CalcTest.test_add", "test_calc.CalcTest.test_sub",
				      "test_calc.CalcTest.test_mul", NULL };
	char *commit = make_repo("calc-ut", test_unittest), *out;
	struct buf b = BUF_INIT;
	json_t *res;
	const json_t *l;
	int k;

	(void)state;
	for (k = 0; k < K__N; k++)
		add_task(&b, "ut", (enum kind)k, "calc-ut", commit, f2p, p2p, "");
	tu_write(root, "ut.jsonl", b.buf);
	buf_release(&b);
	run_batch("ut.jsonl", "ut-out");
	out = xstrfmt("%s/ut-out", root);
	res = read_results(tu_fmt("%s/results.jsonl", out));
	assert_int_equal(json_array_size(res), 3);

	/* fixes test_add, breaks test_sub: FAIL, the tree back as it was */
	l = line_of(res, "ut-breaks");
	assert_string_equal(jsonx_str(l, "status"), "FAIL");
	assert_non_null(strstr(jsonx_str(l, "error"), "must-pass tests that do not pass: "
			       "test_sub (test_calc.CalcTest) (fail)"));
	assert_record(l, "test_add (test_calc.CalcTest)", "FAIL_TO_PASS", "fail", "pass");
	assert_record(l, "test_sub (test_calc.CalcTest)", "PASS_TO_PASS", "pass", "fail");
	assert_record(l, "test_mul (test_calc.CalcTest)", "PASS_TO_PASS", "pass", "pass");
	assert_pristine(tu_fmt("%s/work/ut-breaks", out));
	assert_narrowed(out, "ut-breaks", named, "test_calc.CalcTest.test_add");

	/* fixes test_add, the others hold: PASS, with the patch */
	l = line_of(res, "ut-holds");
	if (strcmp(jsonx_str(l, "status"), "PASS"))
		fail_msg("ut-holds: %s (%s)", jsonx_str(l, "status"), jsonx_str(l, "error") ?: "");
	assert_record(l, "test_add (test_calc.CalcTest)", "FAIL_TO_PASS", "fail", "pass");
	assert_record(l, "test_sub (test_calc.CalcTest)", "PASS_TO_PASS", "pass", "pass");
	assert_record(l, "test_mul (test_calc.CalcTest)", "PASS_TO_PASS", "pass", "pass");
	assert_non_null(strstr(jsonx_str(l, "model_patch"), "+    return a + b"));
	assert_narrowed(out, "ut-holds", named, "test_calc.CalcTest.test_mul");

	/* nothing regressed, test_add still fails: the must-pass gate alone refuses it */
	l = line_of(res, "ut-unfixed");
	assert_string_equal(jsonx_str(l, "status"), "FAIL");
	assert_non_null(strstr(jsonx_str(l, "error"), "must-pass tests that do not pass: "
			       "test_add (test_calc.CalcTest) (fail)"));
	assert_null(strstr(jsonx_str(l, "error"), "now fail"));
	assert_record(l, "test_add (test_calc.CalcTest)", "FAIL_TO_PASS", "fail", "fail");
	assert_record(l, "test_mul (test_calc.CalcTest)", "PASS_TO_PASS", "pass", "pass");
	assert_pristine(tu_fmt("%s/work/ut-unfixed", out));
	json_decref(res);
	free(out);
	free(commit);
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

static void test_must_pass_pytest_node_ids(void **state)
{
	const char *py = pytest_python();
	const char *f2p = "[\"test_calc.py::TestCalc::test_add\"]";
	const char *p2p = "[\"test_calc.py::TestCalc::test_sub\", \"test_calc.py::TestCalc::test_mul\"]";
	const char *const named[] = { "test_calc.py::TestCalc::test_add",
				      "test_calc.py::TestCalc::test_sub",
				      "test_calc.py::TestCalc::test_mul", NULL };
	char *commit, *out, *extra;
	struct buf b = BUF_INIT;
	json_t *res;
	const json_t *l;
	int k;

	(void)state;
	if (!py) {
		print_message("# skip: no python3 with pytest (scripts/deps.sh runners)\n");
		skip();
	}
	commit = make_repo("calc-pt", test_pytest);
	extra = xstrfmt(", \"test_command\": [\"%s\", \"-m\", \"pytest\", \"-p\", \"no:cacheprovider\"]",
			py);
	for (k = 0; k < K__N; k++)
		add_task(&b, "pt", (enum kind)k, "calc-pt", commit, f2p, p2p, extra);
	free(extra);
	tu_write(root, "pt.jsonl", b.buf);
	buf_release(&b);
	run_batch("pt.jsonl", "pt-out");
	out = xstrfmt("%s/pt-out", root);
	res = read_results(tu_fmt("%s/results.jsonl", out));

	l = line_of(res, "pt-breaks");
	assert_string_equal(jsonx_str(l, "status"), "FAIL");
	assert_non_null(strstr(jsonx_str(l, "error"), "test_calc.py::TestCalc::test_sub (fail)"));
	assert_record(l, "test_calc.py::TestCalc::test_add", "FAIL_TO_PASS", "fail", "pass");
	assert_record(l, "test_calc.py::TestCalc::test_sub", "PASS_TO_PASS", "pass", "fail");
	assert_pristine(tu_fmt("%s/work/pt-breaks", out));
	assert_narrowed(out, "pt-breaks", named, "test_calc.py::TestCalc::test_add");

	l = line_of(res, "pt-holds");
	if (strcmp(jsonx_str(l, "status"), "PASS"))
		fail_msg("pt-holds: %s (%s)", jsonx_str(l, "status"), jsonx_str(l, "error") ?: "");
	assert_record(l, "test_calc.py::TestCalc::test_add", "FAIL_TO_PASS", "fail", "pass");
	assert_record(l, "test_calc.py::TestCalc::test_mul", "PASS_TO_PASS", "pass", "pass");
	assert_narrowed(out, "pt-holds", named, "-rA");

	l = line_of(res, "pt-unfixed");
	assert_string_equal(jsonx_str(l, "status"), "FAIL");
	assert_non_null(strstr(jsonx_str(l, "error"), "test_calc.py::TestCalc::test_add (fail)"));
	assert_record(l, "test_calc.py::TestCalc::test_add", "FAIL_TO_PASS", "fail", "fail");
	assert_pristine(tu_fmt("%s/work/pt-unfixed", out));
	json_decref(res);
	free(out);
	free(commit);
}

/* A must-pass id that would be an option is refused with the tasks file's line. */
static void test_must_pass_bad_id(void **state)
{
	struct tu_result r;
	char *path = xstrfmt("%s/bad.jsonl", root);

	(void)state;
	tu_write(root, "bad.jsonl", "{\"instance_id\": \"x\", \"repo\": \"local/none\", "
		 "\"base_commit\": \"abc\", \"problem_statement\": \"p\", "
		 "\"FAIL_TO_PASS\": [\"--pdb\"]}\n");
	SC_FORGEX(&r, &proj, "batch", path, "--out", tu_fmt("%s/bad-out", root));
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "bad.jsonl:1"));
	assert_non_null(strstr(r.err.buf, "FAIL_TO_PASS: '--pdb' is not a test id"));
	tu_result_release(&r);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_must_pass_unittest_django_ids),
		cmocka_unit_test(test_must_pass_pytest_node_ids),
		cmocka_unit_test(test_must_pass_bad_id),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

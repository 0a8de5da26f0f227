/*
 * apply_patch end to end: the real `forgex run` against build/mockllm
 * playing a model of the GPT-5 family, which is offered apply_patch
 * instead of edit_file and changes two files (one updated, one added) in
 * one call, in a temporary git repository whose Python tests really run.
 * A second run shows a patch that cannot apply changing nothing, and the
 * model reading why.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

static const char calc_py[] =
	"def add(a, b):\n"
	"    return a - b\n"
	"\n"
	"\n"
	"def sub(a, b):\n"
	"    return a - b\n";

static const char test_calc_py[] =
	"import unittest\n"
	"\n"
	"from calc import add, sub\n"
	"\n"
	"\n"
	"class CalcTest(unittest.TestCase):\n"
	"    def test_add(self):\n"
	"        self.assertEqual(add(2, 3), 5)\n"
	"\n"
	"    def test_sub(self):\n"
	"        self.assertEqual(sub(5, 3), 2)\n"
	"\n"
	"\n"
	"if __name__ == '__main__':\n"
	"    unittest.main()\n";

/* The patch as a GPT-5 model writes it: an @@ anchor, three lines of context. */
static const char fix_patch[] =
	"*** Begin Patch\n"
	"*** Update File: calc.py\n"
	"@@ def add(a, b):\n"
	"-    return a - b\n"
	"+    return a + b\n"
	"*** Add File: docs/CHANGES.md\n"
	"+# Changes\n"
	"+\n"
	"+- add() adds\n"
	"*** End Patch\n";

static const char bad_patch[] =
	"*** Begin Patch\n"
	"*** Update File: calc.py\n"
	"@@\n"
	"-    return a - b\n"
	"+    return a + b\n"
	"*** Update File: test_calc.py\n"
	"@@\n"
	"-        self.assertEqual(add(2, 3), 6)\n"
	"+        self.assertEqual(add(2, 3), 5)\n"
	"*** End Patch\n";

static void call(json_t *steps, const char *name, json_t *args)
{
	static int n;
	char id[32];

	snprintf(id, sizeof(id), "call_%d", ++n);
	json_array_append_new(steps, json_pack("{s:[{s:s, s:s, s:o}]}", "tool_calls", "id", id,
					       "name", name, "arguments", args));
}

static char *script(json_t *steps)
{
	struct buf b = BUF_INIT;
	json_t *s = json_pack("{s:o}", "steps", steps);

	jsonx_dump(&b, s, 0);
	json_decref(s);
	return buf_detach(&b, NULL);
}

static json_t *plan(void)
{
	return json_pack("{s:s, s:[{s:s, s:s, s:s, s:[s]}], s:[s]}", "summary", "Fix add",
			 "steps", "id", "1", "title", "Make add add", "description", "return a + b",
			 "files", "calc.py", "acceptance", "test_add passes");
}

/* A repository; the provider lives in the user file (XDG_CONFIG_HOME = `home`). */
static char *project(const struct mock *m, const char *home, const char *model, const char *more)
{
	char *dir = tu_mkdtemp();
	char *user = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"%s\"\n"
			     "api_key_env = \"FX_E2E_NO_KEY\"\nmax_retries = 0\ntimeout_seconds = 30\n%s"
			     "[permissions]\nmode = \"auto\"\n[sandbox]\nbackend = \"none\"\n"
			     "allow_unconfined = true\n", m->base_url, model, more);

	tu_write(dir, "calc.py", calc_py);
	tu_write(dir, "test_calc.py", test_calc_py);
	tu_write(dir, ".gitignore", "__pycache__/\n");
	tu_git_init(dir);
	tu_write(dir, ".forgex/config.toml",
		 "[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\", \"-v\"]\n");
	tu_write(home, "forgex/config.toml", user);
	free(user);
	return dir;
}

static void run_forgex(struct tu_result *r, const char *dir, const char *home, const char *req)
{
	char *x = xstrfmt("XDG_CONFIG_HOME=%s", home), *h = xstrfmt("HOME=%s", home);
	const char *env[] = { x, h, NULL };
	const char *argv[] = { tu_forgex(), "run", req, NULL };
	char *abs = realpath(tu_forgex(), NULL);

	argv[0] = abs ? abs : tu_forgex();
	tu_run(r, argv, dir, env, NULL);
	free(abs);
	free(x);
	free(h);
}

/* The names of the tools a request offered, space-separated. */
static void tool_names(struct buf *out, const json_t *req)
{
	json_t *tools = json_object_get(json_object_get(req, "body"), "tools"), *t;
	size_t i;

	json_array_foreach(tools, i, t)
		buf_addf(out, "%s%s", i ? " " : "", jsonx_str(json_object_get(t, "function"), "name"));
}

static void test_patch_e2e_gpt5_applies(void **state)
{
	json_t *steps = json_array(), *reqs, *builder, *sys;
	char *s, *dir, *home = tu_mkdtemp(), *c;
	struct buf names = BUF_INIT;
	struct tu_result r;
	struct mock m;

	(void)state;
	call(steps, "submit_plan", plan());
	call(steps, "apply_patch", json_pack("{s:s}", "input", fix_patch));
	call(steps, "finish", json_pack("{s:s}", "summary", "fixed add, noted it"));
	call(steps, "finish", json_pack("{s:s}", "summary", "nothing to add"));
	call(steps, "submit_verdict", json_pack("{s:s, s:[s], s:[]}", "verdict", "PASS", "reasons",
					       "tests pass", "required_fixes"));
	s = script(steps);
	mock_start(&m, s);
	dir = project(&m, home, "gpt-5-mini", "");
	run_forgex(&r, dir, home, "make add add");
	if (r.status)
		fail_msg("forgex run failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	if (!strstr(r.out.buf, "PASS") || !strstr(r.out.buf, "tests after   2 passed, 0 failed"))
		fail_msg("unexpected outcome:\n%s\n%s", r.out.buf, r.err.buf);
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"));
	free(c);
	c = tu_read(dir, "docs/CHANGES.md");
	assert_non_null(c);
	assert_string_equal(c, "# Changes\n\n- add() adds\n");
	free(c);

	/* What the builder was offered and told, and what it read back. */
	reqs = mock_requests(&m);
	builder = json_array_get(reqs, 1);
	tool_names(&names, builder);
	assert_non_null(strstr(names.buf, "apply_patch"));
	assert_null(strstr(names.buf, "edit_file"));
	sys = json_array_get(json_object_get(json_object_get(builder, "body"), "messages"), 0);
	assert_non_null(strstr(jsonx_str(sys, "content"), "you change files with apply_patch"));
	{
		json_t *after = json_array_get(reqs, 2);
		json_t *msgs = json_object_get(json_object_get(after, "body"), "messages");
		json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);

		assert_string_equal(jsonx_str(last, "role"), "tool");
		assert_non_null(strstr(jsonx_str(last, "content"),
				       "applied the patch: 2 hunks\nM calc.py\nA docs/CHANGES.md\n"));
	}
	json_decref(reqs);
	buf_release(&names);
	tu_result_release(&r);

	/* forgex replay: offline, the same tools offered, the same outcome */
	{
		char *x = xstrfmt("XDG_CONFIG_HOME=%s", home), *h = xstrfmt("HOME=%s", home);
		char *abs = realpath(tu_forgex(), NULL);
		const char *env[] = { x, h, NULL };
		const char *argv[] = { abs, "replay", "--strict", "last", NULL };
		size_t before = mock_count(&m, "/chat/completions");

		tu_run(&r, argv, dir, env, NULL);
		if (r.status || !strstr(r.out.buf, "Same outcome"))
			fail_msg("replay (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
		assert_int_equal(mock_count(&m, "/chat/completions"), before);
		tu_result_release(&r);
		free(abs);
		free(x);
		free(h);
	}
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
	tu_rmtree(home);
}

/*
 * A patch whose second file does not match: nothing is written, the model
 * reads why (with the closest lines), sends the right patch, and the run
 * passes. edit_tools = "apply_patch" gives it to a model that would get
 * edit_file.
 */
static void test_patch_e2e_refused_then_fixed(void **state)
{
	json_t *steps = json_array(), *reqs, *msgs, *last;
	char *s, *dir, *home = tu_mkdtemp(), *c;
	struct buf names = BUF_INIT;
	struct tu_result r;
	struct mock m;

	(void)state;
	call(steps, "submit_plan", plan());
	call(steps, "apply_patch", json_pack("{s:s}", "input", bad_patch));
	call(steps, "apply_patch", json_pack("{s:s}", "input", fix_patch));
	call(steps, "finish", json_pack("{s:s}", "summary", "fixed add"));
	call(steps, "finish", json_pack("{s:s}", "summary", "nothing to add"));
	call(steps, "submit_verdict", json_pack("{s:s, s:[s], s:[]}", "verdict", "PASS", "reasons",
					       "tests pass", "required_fixes"));
	s = script(steps);
	mock_start(&m, s);
	dir = project(&m, home, "qwen2.5-coder", "edit_tools = \"apply_patch\"\n");
	run_forgex(&r, dir, home, "make add add");
	if (r.status)
		fail_msg("forgex run failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	reqs = mock_requests(&m);
	tool_names(&names, json_array_get(reqs, 1));
	assert_non_null(strstr(names.buf, "apply_patch"));
	assert_null(strstr(names.buf, "edit_file"));
	msgs = json_object_get(json_object_get(json_array_get(reqs, 2), "body"), "messages");
	last = json_array_get(msgs, json_array_size(msgs) - 1);
	assert_non_null(strstr(jsonx_str(last, "content"), "error: test_calc.py: the lines of chunk 1"));
	assert_non_null(strstr(jsonx_str(last, "content"),
			       "-        self.assertEqual(add(2, 3), 6)\n+        self.assertEqual(add(2, 3), 5)\n"));
	assert_non_null(strstr(jsonx_str(last, "content"), "Nothing was written"));
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "return a + b"));
	free(c);
	c = tu_read(dir, "test_calc.py");
	assert_string_equal(c, test_calc_py);
	free(c);
	json_decref(reqs);
	buf_release(&names);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
	tu_rmtree(home);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_e2e_gpt5_applies),
		cmocka_unit_test(test_patch_e2e_refused_then_fixed),
	};

	return cmocka_run_group_tests_name("e2e/patch", tests, NULL, NULL);
}

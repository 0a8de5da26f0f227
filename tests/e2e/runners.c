/*
 * `forgex verify --json` against real test runners on projects written
 * here, as a user runs them: plain `python3 -m unittest` (no -B), mocha,
 * Jest 25 and 29, Vitest, node --test, go test, ctest, meson, automake's
 * harness, cargo, pytest. Each project is also run by the runner itself, outside
 * forgex, and the counts forgex reports must equal the runner's own
 * summary. A runner the machine does not have skips with the reason
 * (the npm ones come from scripts/test-runners.sh, which `scripts/deps.sh
 * runners` calls).
 *
 * Every forgex child gets its own XDG_CACHE_HOME, so the toolchain caches
 * it keeps (docs/internals/verify.md) are looked at in a temporary folder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pwd.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "helpers/testutil.h"

static char *cache_home;

static int have(const char *prog)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int found = 0;

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0;
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

/* The program of an npm runner from scripts/test-runners.sh; skips when absent. */
static char *npm_runner(const char *name)
{
	const char *top = getenv("FORGEX_TOP");
	char *script = xstrfmt("%s/scripts/test-runners.sh", top && *top ? top : ".");
	const char *argv[] = { "sh", script, "path", name, NULL };
	struct tu_result r;
	char *out;

	tu_run(&r, argv, NULL, NULL, NULL);
	free(script);
	buf_trim(&r.out);
	if (r.status) {
		print_message("# skip: %s\n", r.out.buf);
		tu_result_release(&r);
		skip();
	}
	out = buf_detach(&r.out, NULL);
	tu_result_release(&r);
	return out;
}

/* Run `argv` in `ws` as the user would (the runner itself); all output. */
/*
 * The user's real home, for toolchains that live there (rustup's cargo
 * needs its ~/.rustup): a test program's own HOME is a fresh folder
 * (testutil.h). NULL: keep that one.
 */
static char *toolchain_home;

static char *runner(const char *ws, const char *const *argv)
{
	struct tu_result r;
	struct buf b = BUF_INIT;
	char *h = toolchain_home ? xstrfmt("HOME=%s", toolchain_home) : NULL;
	const char *env[] = { h, NULL };

	tu_run(&r, argv, ws, env, NULL);
	free(h);
	buf_addbuf(&b, &r.out);
	buf_addbuf(&b, &r.err);
	tu_result_release(&r);
	return buf_detach(&b, NULL);
}

/* The number right before `suffix` at its first place after `anchor` ("" : start); -1. */
static long num_before(const char *text, const char *anchor, const char *suffix)
{
	const char *a = *anchor ? strstr(text, anchor) : text, *p, *q;

	if (!a)
		return -1;
	p = strstr(a, suffix);
	if (!p)
		return -1;
	q = p;
	while (q > a && q[-1] >= '0' && q[-1] <= '9')
		q--;
	return q == p ? -1 : strtol(q, NULL, 10);
}

/* The number right after `prefix`; -1. */
static long num_after(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);

	if (!p)
		return -1;
	p += strlen(prefix);
	while (*p == ' ')
		p++;
	return *p >= '0' && *p <= '9' ? strtol(p, NULL, 10) : -1;
}

/* forgex verify --json in `ws`, with `config` -c settings (NULL-terminated). */
static json_t *verify_json(const char *ws, int want_status, ...)
{
	const char *argv[32];
	char *env_cache = xstrfmt("XDG_CACHE_HOME=%s", cache_home);
	char *h = toolchain_home ? xstrfmt("HOME=%s", toolchain_home) : NULL;
	const char *env[] = { env_cache, "PYTHONDONTWRITEBYTECODE", h, NULL };
	struct tu_result r;
	va_list ap;
	json_t *j;
	int n = 0;

	argv[n++] = tu_forgex();
	argv[n++] = "-c";
	argv[n++] = "permissions.mode=auto";
	argv[n++] = "-c";
	argv[n++] = "sandbox.allow_unconfined=true";
	va_start(ap, want_status);
	while (n < 28 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n++] = "verify";
	argv[n++] = "--json";
	argv[n] = NULL;
	tu_run(&r, argv, ws, env, NULL);
	j = json_loads(r.out.buf, 0, NULL);
	if (!j || r.status != want_status)
		fail_msg("status %d (want %d):\n%s\nstderr:\n%s", r.status, want_status, r.out.buf,
			 r.err.buf);
	tu_result_release(&r);
	free(env_cache);
	free(h);
	return j;
}

static json_t *result_of(json_t *j)
{
	return json_object_get(j, "result");
}

static void assert_counts(json_t *j, long passed, long failed, long skipped, long errors)
{
	json_t *r = result_of(j);
	char *dump = json_dumps(r, JSON_COMPACT);

	if (jsonx_int(r, "passed", -9) != passed || jsonx_int(r, "failed", -9) != failed ||
	    jsonx_int(r, "skipped", -9) != skipped || jsonx_int(r, "errors", -9) != errors)
		fail_msg("want %ld passed, %ld failed, %ld skipped, %ld errors; got %s", passed,
			 failed, skipped, errors, dump);
	if (json_array_size(json_object_get(r, "disagreements")))
		fail_msg("counts disagree: %s", dump);
	free(dump);
}

static void assert_format(json_t *j, const char *format)
{
	json_t *f = json_object_get(result_of(j), "formats");

	if (json_array_size(f) != 1 || strcmp(json_string_value(json_array_get(f, 0)), format))
		fail_msg("want formats [%s], got %s", format, json_dumps(f, JSON_COMPACT));
}

/* The outcome of the `nth` (0-based) test called `name` in the result, or NULL. */
static const char *outcome_of(json_t *j, const char *name, int nth)
{
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(result_of(j), "tests"), i, t)
		if (!strcmp(jsonx_str(t, "name"), name) && nth-- == 0)
			return jsonx_str(t, "outcome");
	return NULL;
}

/*
 * Python: the stale .pyc a user meets. The baseline-like first run
 * compiles calc.py; an edit of the same size within the same second (an
 * editor, a model's edit_file) leaves size and mtime as they were, so a
 * __pycache__ next to the source would answer with the old code. forgex
 * runs Python with its bytecode in a private, emptied cache: the second
 * run sees the edit, and the tree gets no __pycache__.
 */
static void test_runners_python_no_stale_bytecode(void **state)
{
	char *ws = tu_mkdtemp(), *own, *c;
	json_t *j;
	struct stat st;
	const char *argv[] = { "python3", "-m", "unittest", NULL };

	(void)state;
	NEED("python3");
	tu_write(ws, "calc.py", "def add(a, b):\n    return a - b\n");
	tu_write(ws, "test_calc.py",
		 "import unittest\n\nfrom calc import add\n\n\n"
		 "class CalcTest(unittest.TestCase):\n"
		 "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
		 "    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n");
	/* the user's own earlier run left a __pycache__ (plain python3, no -B) */
	{
		const char *env[] = { "PYTHONDONTWRITEBYTECODE", NULL };
		struct tu_result r;

		tu_run(&r, argv, ws, env, NULL);
		assert_int_equal(r.status, 1);
		tu_result_release(&r);
	}
	j = verify_json(ws, 1, "-c", "pipeline.test_command=[\"python3\", \"-m\", \"unittest\"]",
			NULL);
	assert_counts(j, 1, 1, 0, 0);
	json_decref(j);
	/* same size, same mtime: what Python's .pyc check cannot tell apart */
	own = xstrfmt("%s/calc.py", ws);
	assert_int_equal(stat(own, &st), 0);
	free(own);
	tu_write(ws, "calc.py", "def add(a, b):\n    return a + b\n");
	{
		char *ts = xstrfmt("@%lld", (long long)st.st_mtime);
		char *p = xstrfmt("%s/calc.py", ws);
		const char *touch[] = { "touch", "-d", ts, p, NULL };
		struct tu_result r;

		tu_run(&r, touch, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
		free(ts);
		free(p);
	}
	/* the runner itself, as the user runs it, answers from the stale bytecode */
	{
		const char *env[] = { "PYTHONDONTWRITEBYTECODE", NULL };
		struct tu_result r;

		tu_run(&r, argv, ws, env, NULL);
		assert_int_equal(r.status, 1);
		ASSERT_HAS(r.err.buf, "AssertionError: -1 != 5");
		tu_result_release(&r);
	}
	j = verify_json(ws, 0, "-c", "pipeline.test_command=[\"python3\", \"-m\", \"unittest\"]",
			NULL);
	assert_counts(j, 2, 0, 0, 0);
	assert_true(jsonx_bool(result_of(j), "fresh", 0));
	json_decref(j);
	/* forgex's runs wrote their bytecode in its cache, not in the tree */
	c = xstrfmt("%s/forgex/tests", cache_home);
	{
		const char *find[] = { "sh", "-c", "find \"$0\" -path '*pycache*' -name 'calc*.pyc' | "
				       "grep -c . ", c, NULL };
		struct tu_result r;

		tu_run(&r, find, NULL, NULL, NULL);
		assert_true(atoi(r.out.buf) >= 1);
		tu_result_release(&r);
	}
	free(c);
	own = xstrfmt("%s/.pytest_cache", ws);
	assert_false(access(own, F_OK) == 0);
	free(own);
	tu_rmtree(ws);
}

/* The one line `cmd` prints (sh -c, $0 = arg), or fail. */
static char *sh_line(const char *cmd, const char *arg)
{
	const char *argv[] = { "sh", "-c", cmd, arg, NULL };
	struct tu_result r;
	char *nl, *out;

	tu_run(&r, argv, NULL, NULL, NULL);
	nl = strchr(r.out.buf, '\n');
	if (r.status || !nl || nl == r.out.buf)
		fail_msg("%s: status %d, printed '%s'%s", cmd, r.status, r.out.buf, r.err.buf);
	*nl = '\0';
	out = xstrdup(r.out.buf);
	tu_result_release(&r);
	return out;
}

/*
 * Only the workspace's part of the bytecode prefix is emptied before a run:
 * the standard library's .pyc from the first run is read, not written
 * again, by the second. A link planted in the prefix (test commands can
 * write it) is removed, not followed: what it points at stays.
 */
static void test_runners_python_bytecode_kept_outside_the_workspace(void **state)
{
	char *ws = tu_mkdtemp(), *real, *prefix, *lib, *first, *link, *outside, *kept, *p;
	const char *rest;
	struct stat before, after;
	json_t *j;

	(void)state;
	NEED("python3");
	tu_write(ws, "calc.py", "def add(a, b):\n    return a + b\n");
	tu_write(ws, "test_calc.py", "import unittest\n\nfrom calc import add\n\n\n"
		 "class CalcTest(unittest.TestCase):\n"
		 "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n");
	real = realpath(ws, NULL);
	assert_non_null(real);
	j = verify_json(ws, 0, "-c", "pipeline.test_command=[\"python3\", \"-m\", \"unittest\"]",
			NULL);
	assert_counts(j, 1, 0, 0, 0);
	json_decref(j);
	p = xstrfmt("%s/forgex/tests/%s-", cache_home, strrchr(real, '/') + 1);
	prefix = sh_line("ls -d \"$0\"*/pycache", p);
	free(p);
	/* the project's bytecode under the workspace's path, unittest's elsewhere */
	p = xstrfmt("%s%s", prefix, real);
	free(sh_line("find \"$0\" -name 'calc*.pyc'", p));
	free(p);
	lib = sh_line("find \"$0\" -path '*/unittest/*' -name 'case*.pyc' | head -n 1", prefix);
	assert_null(strstr(lib, real));
	assert_int_equal(stat(lib, &before), 0);
	j = verify_json(ws, 0, "-c", "pipeline.test_command=[\"python3\", \"-m\", \"unittest\"]",
			NULL);
	assert_counts(j, 1, 0, 0, 0);
	json_decref(j);
	assert_int_equal(stat(lib, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_true(before.st_mtim.tv_sec == after.st_mtim.tv_sec &&
		    before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

	/* the first folder of the workspace's path in the prefix made a link */
	rest = strchr(real + 1, '/');
	assert_non_null(rest);
	first = xstrndup(real + 1, (size_t)(rest - real - 1));
	link = xstrfmt("%s/%s", prefix, first);
	tu_rmtree(xstrdup(link));
	outside = tu_mkdtemp();
	p = xstrfmt("%s%s", outside, rest);
	tu_write(p, "keep.pyc", "kept\n");
	free(p);
	assert_int_equal(symlink(outside, link), 0);
	j = verify_json(ws, 0, "-c", "pipeline.test_command=[\"python3\", \"-m\", \"unittest\"]",
			NULL);
	assert_counts(j, 1, 0, 0, 0);
	json_decref(j);
	kept = xstrfmt("%s%s/keep.pyc", outside, rest);
	assert_int_equal(access(kept, F_OK), 0);
	assert_int_equal(lstat(link, &after), 0);
	assert_true(S_ISDIR(after.st_mode));	/* the link went; Python made the folder anew */
	free(kept);
	tu_rmtree(outside);
	free(link);
	free(first);
	free(lib);
	free(prefix);
	free(real);
	tu_rmtree(ws);
}

/* unittest -v with docstrings: the docstring line follows the name line. */
static void test_runners_unittest_docstrings(void **state)
{
	char *ws = tu_mkdtemp(), *own;
	const char *argv[] = { "python3", "-m", "unittest", "-v", NULL };
	json_t *j;

	(void)state;
	NEED("python3");
	tu_write(ws, "test_doc.py",
		 "import unittest\n\n\nclass DocTest(unittest.TestCase):\n"
		 "    def test_plain(self):\n        pass\n\n"
		 "    def test_doc_pass(self):\n        \"\"\"Adds two numbers.\"\"\"\n\n"
		 "    def test_doc_fail(self):\n        \"\"\"test that subtraction works\"\"\"\n"
		 "        self.assertEqual(2 - 1, 3)\n");
	own = runner(ws, argv);
	j = verify_json(ws, 1, "-c", "pipeline.test_command=[\"python3\", \"-m\", \"unittest\", \"-v\"]",
			NULL);
	assert_int_equal(num_after(own, "Ran "), 3);
	assert_counts(j, 2, 1, 0, 0);
	assert_format(j, "unittest");	/* the "test that ..." docstring is no cargo test */
	assert_string_equal(outcome_of(j, "test_doc.DocTest.test_doc_pass", 0), "pass");
	assert_string_equal(outcome_of(j, "test_doc.DocTest.test_doc_fail", 0), "fail");
	assert_int_equal(json_array_size(json_object_get(result_of(j), "tests")), 3);
	json_decref(j);
	free(own);
	tu_rmtree(ws);
}

/* The python3 that has pytest: the one on PATH, else Debian's; NULL. */
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

/* pytest without -v: failures named, passes counted; no .pytest_cache in the tree. */
static void test_runners_pytest_without_v(void **state)
{
	const char *py = pytest_python();
	char *ws, *own, *cfg, *pc;
	json_t *j;

	(void)state;
	if (!py) {
		print_message("# skip: no python3 with pytest (scripts/deps.sh runners)\n");
		skip();
	}
	ws = tu_mkdtemp();
	tu_write(ws, "test_calc.py", "def test_add():\n    assert 1 + 2 == 3\n\n\n"
		 "def test_sub():\n    assert 5 - 3 == 1\n\n\ndef test_mul():\n    assert 2 * 2 == 4\n");
	{
		const char *argv[] = { py, "-m", "pytest", "-p", "no:cacheprovider", NULL };

		own = runner(ws, argv);
	}
	cfg = xstrfmt("pipeline.test_command=[\"%s\", \"-m\", \"pytest\"]", py);
	j = verify_json(ws, 1, "-c", cfg, NULL);
	assert_counts(j, num_before(own, "", " passed"), num_before(own, "", " failed"), 0, 0);
	assert_counts(j, 2, 1, 0, 0);
	assert_string_equal(outcome_of(j, "test_calc.py::test_sub", 0), "fail");
	assert_int_equal(json_array_size(json_object_get(result_of(j), "tests")), 1);
	json_decref(j);
	pc = xstrfmt("%s/.pytest_cache", ws);
	assert_false(access(pc, F_OK) == 0);
	free(pc);
	free(cfg);
	free(own);
	tu_rmtree(ws);
}

static void write_mocha_project(const char *ws)
{
	tu_write(ws, "test/calc.test.js",
		 "const assert = require('assert');\n"
		 "describe('calc', function () {\n"
		 "  it('adds', function () { assert.strictEqual(1 + 2, 3); });\n"
		 "  it('adds wrong', function () { assert.strictEqual(2 + 2, 5); });\n"
		 "  it.skip('skipped one', function () {});\n"
		 "  describe('nested', function () {\n"
		 "    it('works', function () {});\n"
		 "    it('works', function () { throw new Error('dup boom'); });\n"
		 "  });\n"
		 "});\n");
}

/* mocha: its own format, not node's; two tests called "works" are two results. */
static void test_runners_mocha(void **state)
{
	char *ws, *mocha, *own, *cfg;
	const char *argv[2];
	json_t *j;

	(void)state;
	NEED("node");
	mocha = npm_runner("mocha");
	ws = tu_mkdtemp();
	write_mocha_project(ws);
	argv[0] = mocha;
	argv[1] = NULL;
	own = runner(ws, argv);
	cfg = xstrfmt("pipeline.test_command=[\"%s\"]", mocha);
	j = verify_json(ws, 1, "-c", cfg, NULL);
	assert_counts(j, num_before(own, "", " passing"), num_before(own, "", " failing"),
		      num_before(own, "", " pending"), 0);
	assert_counts(j, 2, 2, 1, 0);
	assert_format(j, "mocha");
	assert_string_equal(outcome_of(j, "calc > nested > works", 0), "pass");
	assert_string_equal(outcome_of(j, "calc > nested > works", 1), "fail");
	json_decref(j);
	free(cfg);
	free(own);
	free(mocha);
	tu_rmtree(ws);
}

static void write_jest_project(const char *ws)
{
	tu_write(ws, "package.json", "{\"name\": \"calc\", \"private\": true}\n");
	tu_write(ws, "math.test.js",
		 "test('adds', () => { expect(1 + 2).toBe(3); });\n"
		 "test('adds wrong', () => { expect(2 + 2).toBe(5); });\n"
		 "describe('group', () => {\n"
		 "  test('inner fails', () => { throw new Error('inner boom'); });\n"
		 "  test.skip('skipped', () => {});\n"
		 "});\n");
}

/* Jest 25 prints "✕ adds wrong (4ms)": each failure counted once. */
static void jest_case(const char *which)
{
	char *ws, *jest, *own, *cfg;
	const char *argv[3];
	json_t *j;

	NEED("node");
	jest = npm_runner(which);
	ws = tu_mkdtemp();
	write_jest_project(ws);
	argv[0] = jest;
	argv[1] = "--ci";
	argv[2] = NULL;
	own = runner(ws, argv);
	cfg = xstrfmt("pipeline.test_command=[\"%s\", \"--ci\"]", jest);
	j = verify_json(ws, 1, "-c", cfg, NULL);
	assert_counts(j, num_before(own, "Tests:", " passed"), num_before(own, "Tests:", " failed"),
		      num_before(own, "Tests:", " skipped"), 0);
	assert_counts(j, 1, 2, 1, 0);
	assert_format(j, "jest");
	assert_string_equal(outcome_of(j, "adds wrong", 0), "fail");
	assert_null(outcome_of(j, "adds wrong", 1));
	json_decref(j);
	free(cfg);
	free(own);
	free(jest);
	tu_rmtree(ws);
}

static void test_runners_jest25(void **state)
{
	(void)state;
	jest_case("jest25");
}

static void test_runners_jest29(void **state)
{
	(void)state;
	jest_case("jest29");
}

static void test_runners_vitest(void **state)
{
	char *ws, *vitest, *own, *cfg;
	const char *argv[3];
	json_t *j;

	(void)state;
	NEED("node");
	vitest = npm_runner("vitest");
	ws = tu_mkdtemp();
	tu_write(ws, "package.json", "{\"name\": \"calc\", \"private\": true, \"type\": \"module\"}\n");
	tu_write(ws, "math.test.js",
		 "import { test, expect, describe } from 'vitest';\n"
		 "test('adds', () => { expect(1 + 2).toBe(3); });\n"
		 "test('adds wrong', () => { expect(2 + 2).toBe(5); });\n"
		 "describe('group', () => {\n"
		 "  test('inner fails', () => { throw new Error('inner boom'); });\n"
		 "  test.skip('skipped', () => {});\n"
		 "});\n");
	argv[0] = vitest;
	argv[1] = "run";
	argv[2] = NULL;
	own = runner(ws, argv);
	cfg = xstrfmt("pipeline.test_command=[\"%s\", \"run\"]", vitest);
	j = verify_json(ws, 1, "-c", cfg, NULL);
	assert_counts(j, num_before(own, "Tests ", " passed"), num_before(own, "Tests ", " failed"),
		      num_before(own, "Tests ", " skipped"), 0);
	assert_format(j, "vitest");
	json_decref(j);
	free(cfg);
	free(own);
	free(vitest);
	tu_rmtree(ws);
}

/* node --test: TAP with "# pass N" when not on a terminal; same names stay apart. */
static void test_runners_node(void **state)
{
	char *ws, *own;
	const char *argv[] = { "node", "--test", NULL };
	json_t *j;

	(void)state;
	NEED("node");
	ws = tu_mkdtemp();
	tu_write(ws, "dup.test.js",
		 "const test = require('node:test');\n"
		 "const assert = require('node:assert');\n"
		 "test('works', () => { assert.strictEqual(1, 1); });\n"
		 "test('works', () => { assert.strictEqual(1, 2); });\n"
		 "test.describe('group', () => {\n"
		 "  test.it('inner', () => {});\n"
		 "  test.it('inner', () => { throw new Error('inner dup'); });\n"
		 "  test.it.skip('later', () => {});\n"
		 "});\n");
	own = runner(ws, argv);
	j = verify_json(ws, 1, "-c", "pipeline.test_command=[\"node\", \"--test\"]", NULL);
	assert_counts(j, num_after(own, "# pass "), num_after(own, "# fail "),
		      num_after(own, "# skipped "), 0);
	assert_counts(j, 2, 2, 1, 0);
	assert_format(j, "tap");
	assert_string_equal(outcome_of(j, "works", 0), "pass");
	assert_string_equal(outcome_of(j, "works", 1), "fail");
	json_decref(j);
	/* the spec reporter: node's own summary lines */
	j = verify_json(ws, 1, "-c",
			"pipeline.test_command=[\"node\", \"--test\", \"--test-reporter=spec\"]", NULL);
	assert_counts(j, 2, 2, 1, 0);
	assert_format(j, "node");
	json_decref(j);
	free(own);
	tu_rmtree(ws);
}

/* A size-limit spinner's "✔ Adding to empty esbuild project" is no test. */
static void test_runners_size_limit_spinner_is_no_test(void **state)
{
	char *ws, *sl, *cfg, *mods;
	json_t *j;

	(void)state;
	NEED("node");
	sl = npm_runner("size-limit");
	ws = tu_mkdtemp();
	tu_write(ws, "index.js", "module.exports = 1;\n");
	tu_write(ws, "package.json",
		 "{\"name\": \"sl\", \"version\": \"1.0.0\", \"devDependencies\": {\"size-limit\": "
		 "\"^11.0.0\", \"@size-limit/file\": \"^11.0.0\", \"@size-limit/esbuild\": "
		 "\"^11.0.0\"}, \"size-limit\": [{\"path\": \"index.js\", \"limit\": \"1 kB\"}]}\n");
	/* the project's node_modules: the runner's own install */
	mods = xstrdup(sl);
	*strstr(mods, "/.bin/size-limit") = '\0';
	{
		char *link = xstrfmt("%s/node_modules", ws);

		assert_int_equal(symlink(mods, link), 0);
		free(link);
	}
	cfg = xstrfmt("pipeline.test_command=[\"%s\"]", sl);
	j = verify_json(ws, 0, "-c", cfg, NULL);
	ASSERT_HAS(jsonx_str(result_of(j), "tail"), "\xe2\x9c\x94 Adding to empty esbuild project");
	assert_counts(j, 0, 0, 0, 0);
	assert_int_equal(json_array_size(json_object_get(result_of(j), "formats")), 0);
	json_decref(j);
	free(cfg);
	free(mods);
	free(sl);
	tu_rmtree(ws);
}

/* go test twice in a row: its cache is forgex's, writable in the sandbox. */
static void test_runners_go_twice(void **state)
{
	char *ws, *gc;
	json_t *j;
	int k;

	(void)state;
	NEED("go");
	ws = tu_mkdtemp();
	tu_write(ws, "go.mod", "module example.com/calc\n\ngo 1.19\n");
	tu_write(ws, "calc.go", "package calc\n\nfunc Add(a, b int) int { return a + b }\n");
	tu_write(ws, "calc_test.go",
		 "package calc\n\nimport \"testing\"\n\n"
		 "func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\n"
		 "func TestTable(t *testing.T) {\n"
		 "\tfor _, c := range []struct {\n\t\tname    string\n\t\ta, b, w int\n\t}{{\"small\", 1, 1, 2}, "
		 "{\"big\", 50, 50, 101}} {\n"
		 "\t\tc := c\n\t\tt.Run(c.name, func(t *testing.T) {\n"
		 "\t\t\tif Add(c.a, c.b) != c.w {\n\t\t\t\tt.Errorf(\"got %d want %d\", Add(c.a, c.b), c.w)\n"
		 "\t\t\t}\n\t\t})\n\t}\n}\n");
	for (k = 0; k < 2; k++) {
		j = verify_json(ws, 1, NULL);
		/* Go counts leaves: TestTable is counted through its subtests */
		assert_counts(j, 2, 1, 0, 0);
		assert_string_equal(outcome_of(j, "TestTable/big", 0), "fail");
		json_decref(j);
	}
	gc = xstrfmt("%s/forgex/tests", cache_home);
	{
		const char *find[] = { "sh", "-c", "find \"$0\" -maxdepth 2 -name go-build | grep -c .",
				       gc, NULL };
		struct tu_result r;

		tu_run(&r, find, NULL, NULL, NULL);
		assert_true(atoi(r.out.buf) >= 1);
		tu_result_release(&r);
	}
	free(gc);
	tu_rmtree(ws);
}

/* ctest after a source edit: forgex builds first, so no stale binary answers. */
static void test_runners_ctest_rebuilds(void **state)
{
	char *ws;
	json_t *j;

	(void)state;
	NEED("cmake");
	NEED("ctest");
	NEED("cc");
	ws = tu_mkdtemp();
	tu_write(ws, "CMakeLists.txt",
		 "cmake_minimum_required(VERSION 3.13)\nproject(calc C)\nenable_testing()\n"
		 "add_executable(calc_test calc_test.c calc.c)\nadd_test(NAME adds COMMAND calc_test)\n"
		 "add_test(NAME zero COMMAND calc_test 0)\n");
	tu_write(ws, "calc.c", "int add(int a, int b) { return a - b; }\n");
	tu_write(ws, "calc_test.c",
		 "#include <stdio.h>\nint add(int, int);\n"
		 "int main(int argc, char **argv) {\n"
		 "\tif (argc > 1) return add(0, 0) != 0;\n"
		 "\tif (add(2, 3) != 5) { printf(\"expected 5, got %d\\n\", add(2, 3)); return 1; }\n"
		 "\treturn 0;\n}\n");
	{
		const char *argv[] = { "sh", "-c", "cmake -S . -B build >/dev/null && "
				       "cmake --build build >/dev/null", NULL };
		struct tu_result r;

		tu_run(&r, argv, ws, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	j = verify_json(ws, 1, NULL);
	assert_counts(j, 1, 1, 0, 0);
	json_decref(j);
	tu_write(ws, "calc.c", "int add(int a, int b) { return a + b; }\n");
	j = verify_json(ws, 0, NULL);
	assert_counts(j, 2, 0, 0, 0);
	{
		char *b = json_dumps(json_object_get(json_object_get(j, "command"), "build"),
				     JSON_COMPACT);

		assert_string_equal(b, "[\"cmake\",\"--build\",\"build\"]");
		free(b);
	}
	json_decref(j);
	/* a build that fails is said to, and no test result is claimed */
	tu_write(ws, "calc.c", "int add(int a, int b) { return a + ; }\n");
	j = verify_json(ws, 1, NULL);
	ASSERT_HAS(jsonx_str(result_of(j), "fresh_note"), "the build before the tests failed");
	assert_false(jsonx_bool(result_of(j), "ok", 1));
	json_decref(j);
	tu_rmtree(ws);
}

/* meson test after a source edit: meson rebuilds first, the edit is seen. */
static void test_runners_meson_rebuilds(void **state)
{
	char *ws;
	json_t *j;

	(void)state;
	NEED("meson");
	NEED("ninja");
	NEED("cc");
	ws = tu_mkdtemp();
	tu_write(ws, "meson.build", "project('calc', 'c')\n"
		 "t = executable('calc_test', 'calc_test.c', 'calc.c')\n"
		 "test('adds', t)\ntest('zero', t, args: ['0'])\n");
	tu_write(ws, "calc.c", "int add(int a, int b) { return a - b; }\n");
	tu_write(ws, "calc_test.c",
		 "#include <stdio.h>\nint add(int, int);\n"
		 "int main(int argc, char **argv) {\n"
		 "\t(void)argv;\n\tif (argc > 1) return add(0, 0) != 0;\n"
		 "\tif (add(2, 3) != 5) { printf(\"expected 5, got %d\\n\", add(2, 3)); return 1; }\n"
		 "\treturn 0;\n}\n");
	{
		const char *argv[] = { "meson", "setup", "build", NULL };
		struct tu_result r;

		tu_run(&r, argv, ws, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	j = verify_json(ws, 1, NULL);
	assert_counts(j, 1, 1, 0, 0);
	assert_format(j, "meson");
	assert_true(jsonx_bool(result_of(j), "fresh", 0));
	json_decref(j);
	tu_write(ws, "calc.c", "int add(int a, int b) { return a + b; }\n");
	j = verify_json(ws, 0, NULL);
	assert_counts(j, 2, 0, 0, 0);
	json_decref(j);
	tu_rmtree(ws);
}

/* automake's harness: PASS/FAIL/SKIP/XFAIL/XPASS/ERROR and "# TOTAL:". */
static void test_runners_automake(void **state)
{
	char *ws, *own;
	const char *check[] = { "make", "check", NULL };
	json_t *j;

	(void)state;
	NEED("autoreconf");
	NEED("automake");
	NEED("make");
	NEED("cc");
	ws = tu_mkdtemp();
	tu_write(ws, "configure.ac", "AC_INIT([calc], [1.0])\nAM_INIT_AUTOMAKE([foreign])\n"
		 "AC_PROG_CC\nAC_CONFIG_FILES([Makefile])\nAC_OUTPUT\n");
	tu_write(ws, "Makefile.am", "TESTS = pass.sh fail.sh skip.sh xfail.sh xpass.sh hard.sh\n"
		 "XFAIL_TESTS = xfail.sh xpass.sh\nEXTRA_DIST = $(TESTS)\n");
	tu_write(ws, "pass.sh", "#!/bin/sh\nexit 0\n");
	tu_write(ws, "fail.sh", "#!/bin/sh\necho 'expected 4, got 5'\nexit 1\n");
	tu_write(ws, "skip.sh", "#!/bin/sh\nexit 77\n");
	tu_write(ws, "xfail.sh", "#!/bin/sh\nexit 1\n");
	tu_write(ws, "xpass.sh", "#!/bin/sh\nexit 0\n");
	tu_write(ws, "hard.sh", "#!/bin/sh\nexit 99\n");
	{
		const char *argv[] = { "sh", "-c", "chmod +x *.sh && autoreconf -i >/dev/null 2>&1 && "
				       "./configure >/dev/null 2>&1", NULL };
		struct tu_result r;

		tu_run(&r, argv, ws, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	own = runner(ws, check);
	j = verify_json(ws, 1, NULL);	/* detected: the Makefile's 'check' target */
	assert_int_equal(num_after(own, "# PASS:"), 1);
	assert_counts(j, num_after(own, "# PASS:"),
		      num_after(own, "# FAIL:") + num_after(own, "# XPASS:"),
		      num_after(own, "# SKIP:") + num_after(own, "# XFAIL:"), num_after(own, "# ERROR:"));
	assert_format(j, "automake");
	assert_string_equal(outcome_of(j, "fail.sh", 0), "fail");
	assert_string_equal(outcome_of(j, "hard.sh", 0), "error");
	assert_string_equal(outcome_of(j, "xfail.sh", 0), "skip");
	json_decref(j);
	free(own);
	tu_rmtree(ws);
}

static void test_runners_cargo(void **state)
{
	char *ws, *own;
	const char *argv[] = { "cargo", "test", NULL };
	json_t *j;

	(void)state;
	NEED("cargo");
	ws = tu_mkdtemp();
	tu_write(ws, "Cargo.toml", "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
	tu_write(ws, "src/lib.rs",
		 "pub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n"
		 "    use super::*;\n    #[test]\n    fn adds() { assert_eq!(add(1, 2), 3); }\n"
		 "    #[test]\n    fn adds_wrong() { assert_eq!(add(2, 2), 5); }\n"
		 "    #[test]\n    #[ignore]\n    fn ignored() {}\n}\n");
	{
		struct passwd *pw = getpwuid(getuid());

		toolchain_home = pw && pw->pw_dir ? xstrdup(pw->pw_dir) : NULL;
	}
	j = verify_json(ws, 1, NULL);
	own = runner(ws, argv);
	free(toolchain_home);
	toolchain_home = NULL;
	assert_counts(j, num_before(own, "test result:", " passed"),
		      num_before(own, "test result:", " failed"),
		      num_before(own, "test result:", " ignored"), 0);
	assert_counts(j, 1, 1, 1, 0);
	json_decref(j);
	free(own);
	tu_rmtree(ws);
}

static int setup(void **state)
{
	(void)state;
	cache_home = tu_mkdtemp();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmtree(cache_home);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runners_python_no_stale_bytecode),
		cmocka_unit_test(test_runners_python_bytecode_kept_outside_the_workspace),
		cmocka_unit_test(test_runners_unittest_docstrings),
		cmocka_unit_test(test_runners_pytest_without_v),
		cmocka_unit_test(test_runners_mocha),
		cmocka_unit_test(test_runners_jest25),
		cmocka_unit_test(test_runners_jest29),
		cmocka_unit_test(test_runners_vitest),
		cmocka_unit_test(test_runners_node),
		cmocka_unit_test(test_runners_size_limit_spinner_is_no_test),
		cmocka_unit_test(test_runners_go_twice),
		cmocka_unit_test(test_runners_ctest_rebuilds),
		cmocka_unit_test(test_runners_meson_rebuilds),
		cmocka_unit_test(test_runners_automake),
		cmocka_unit_test(test_runners_cargo),
	};

	return tu_run_group("e2e/runners", tests, sizeof(tests) / sizeof(tests[0]), setup, teardown);
}

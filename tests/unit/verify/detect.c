/* verify_detect() in temporary project folders: each rule, and their order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "verify/verify.h"

/* Detect in `ws` and return the argv joined with spaces (caller frees), or NULL. */
static char *detect(const char *ws, const struct strvec *configured, char **reason)
{
	struct verify_command c = VERIFY_COMMAND_INIT;
	struct buf b = BUF_INIT;
	size_t i;

	if (verify_detect(&c, ws, configured) < 0) {
		if (reason)
			*reason = xstrdup(err_last());
		return NULL;
	}
	for (i = 0; i < c.argv.nr; i++)
		buf_addf(&b, "%s%s", i ? " " : "", c.argv.v[i]);
	if (reason)
		*reason = xstrdup(c.reason);
	verify_command_release(&c);
	return buf_detach(&b, NULL);
}

#define ASSERT_DETECT(ws, want) \
	do { \
		char *got_ = detect((ws), NULL, NULL); \
		if (!(want)) { \
			assert_null(got_); \
		} else { \
			assert_non_null(got_); \
			assert_string_equal(got_, (want)); \
		} \
		free(got_); \
	} while (0)

static void test_verify_detect_configured_wins(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL, *got;
	struct strvec cmd = STRVEC_INIT;
	struct verify_command c = VERIFY_COMMAND_INIT;

	(void)state;
	tu_write(ws, "Makefile", "test:\n\ttrue\n");
	strvec_pushv(&cmd, (const char *[]){ "./run-tests", "--fast", NULL });
	got = detect(ws, &cmd, &reason);
	assert_string_equal(got, "./run-tests --fast");
	assert_string_equal(reason, "[pipeline] test_command is set");
	assert_int_equal(verify_detect(&c, ws, &cmd), 0);
	assert_true(c.configured);
	assert_string_equal(c.kind, "configured");
	verify_command_release(&c);
	/* detected commands are not "configured": they pass the policy */
	assert_int_equal(verify_detect(&c, ws, NULL), 0);
	assert_false(c.configured);
	verify_command_release(&c);
	free(got);
	free(reason);
	strvec_clear(&cmd);
	tu_rmtree(ws);
}

static void test_verify_detect_makefile_targets(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL, *got;

	(void)state;
	tu_write(ws, "Makefile", "all: prog\n\ncheck: prog\n\t./prog --self-test\n");
	got = detect(ws, NULL, &reason);
	assert_string_equal(got, "make check");
	assert_string_equal(reason, "Makefile has a 'check' target");
	free(got);
	free(reason);
	/* test wins over check, several targets on one line */
	tu_write(ws, "Makefile", "check: all\nlint test unit: prog\n\t./prog\n");
	ASSERT_DETECT(ws, "make test");
	/* a continued line */
	tu_write(ws, "Makefile", "all \\\n  test: prog\n\t./prog\n");
	ASSERT_DETECT(ws, "make test");
	/* double-colon rules are rules */
	tu_write(ws, "Makefile", "check:: prog\n\t./prog\n");
	ASSERT_DETECT(ws, "make check");
	tu_rmtree(ws);
}

/* Lines that mention test and a colon but define no such rule. */
static void test_verify_detect_makefile_not_targets(void **state)
{
	char *ws = tu_mkdtemp();

	(void)state;
	tu_write(ws, "Makefile",
		 "# test: run the tests (not yet)\n"
		 "TEST_URL = http://example.invalid:8080/test\n"
		 "test := 1\n"
		 "check ::= 2\n"
		 "test: CFLAGS += -DTEST\n"
		 ".PHONY: test check\n"
		 "all:\n"
		 "\ttest: this is a recipe line\n"
		 "define TEMPLATE\n"
		 "test: inside a define\n"
		 "endef\n"
		 "tests: all\n"
		 "checker: all\n");
	ASSERT_DETECT(ws, NULL);
	tu_rmtree(ws);
}

/* make reads GNUmakefile, then makefile, then Makefile: only the first. */
static void test_verify_detect_makefile_names(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL, *got;

	(void)state;
	tu_write(ws, "makefile", "check:\n\ttrue\n");
	got = detect(ws, NULL, &reason);
	assert_string_equal(got, "make check");
	assert_string_equal(reason, "makefile has a 'check' target");
	free(got);
	free(reason);
	tu_write(ws, "GNUmakefile", "all:\n\ttrue\n");
	ASSERT_DETECT(ws, NULL);	/* GNUmakefile hides the others */
	tu_write(ws, "GNUmakefile", "test:\n\ttrue\n");
	ASSERT_DETECT(ws, "make test");
	tu_rmtree(ws);
}

static void test_verify_detect_package_json(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL, *got;

	(void)state;
	tu_write(ws, "package.json", "{\"scripts\": {\"test\": \"node --test\"}}");
	got = detect(ws, NULL, &reason);
	assert_string_equal(got, "npm test");
	assert_string_equal(reason, "package.json has scripts.test: node --test");
	free(got);
	free(reason);
	/* npm init's placeholder is not a test command */
	tu_write(ws, "package.json", "{\"scripts\": {\"test\": \"echo \\\"Error: no test "
		 "specified\\\" && exit 1\"}}");
	got = detect(ws, NULL, &reason);
	assert_null(got);
	assert_non_null(strstr(reason, "placeholder"));
	free(reason);
	/* broken JSON is said, not fatal */
	tu_write(ws, "package.json", "{\"scripts\": ");
	got = detect(ws, NULL, &reason);
	assert_null(got);
	assert_non_null(strstr(reason, "package.json is not valid JSON"));
	free(reason);
	tu_rmtree(ws);
}

static void test_verify_detect_pytest_configs(void **state)
{
	static const struct {
		const char *file, *content, *reason;
	} yes[] = {
		{ "pyproject.toml", "[project]\nname = \"x\"\n\n[ tool.pytest.ini_options ]  # here\n"
		  "addopts = \"-q\"\n", "pyproject.toml has [tool.pytest.ini_options]" },
		{ "pytest.ini", "", "pytest.ini exists" },
		{ "setup.cfg", "[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n",
		  "setup.cfg has [tool:pytest]" },
		{ "tox.ini", "[tox]\nenvlist = py3\n[pytest]\n", "tox.ini has [pytest]" },
		{ "conftest.py", "import pytest\n", "conftest.py exists" },
	};
	static const struct {
		const char *file, *content;
	} no[] = {
		{ "pyproject.toml", "[project]\nname = \"x\"\n[tool.black]\n" },
		{ "pyproject.toml", "[project]\ndescription = \"\"\"\nuse tool.pytest.ini_options\n\"\"\"\n" },
		{ "setup.cfg", "[metadata]\nname = x\n" },
		{ "tox.ini", "[tox]\n[testenv]\ncommands = pytest\n" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		char *ws = tu_mkdtemp(), *reason = NULL, *got;

		tu_write(ws, yes[i].file, yes[i].content);
		got = detect(ws, NULL, &reason);
		assert_non_null(got);
		assert_string_equal(got, "python3 -m pytest");
		assert_string_equal(reason, yes[i].reason);
		free(got);
		free(reason);
		tu_rmtree(ws);
	}
	for (i = 0; i < ARRAY_SIZE(no); i++) {
		char *ws = tu_mkdtemp();

		tu_write(ws, no[i].file, no[i].content);
		ASSERT_DETECT(ws, NULL);
		tu_rmtree(ws);
	}
}

static void test_verify_detect_unittest(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL, *got;

	(void)state;
	tu_write(ws, "test_top.py", "import unittest\n");
	got = detect(ws, NULL, &reason);
	assert_string_equal(got, "python3 -m unittest discover");
	assert_string_equal(reason, "found Python test file test_top.py and no pytest configuration");
	free(got);
	free(reason);
	tu_rmtree(ws);

	/* a tests/ folder that is not a package: discover must start there */
	ws = tu_mkdtemp();
	tu_write(ws, "tests/test_x.py", "");
	ASSERT_DETECT(ws, "python3 -m unittest discover -s tests");
	/* a package chain: discover finds it from the top */
	tu_write(ws, "tests/__init__.py", "");
	ASSERT_DETECT(ws, "python3 -m unittest discover");
	tu_rmtree(ws);

	/* x_test.py needs its pattern */
	ws = tu_mkdtemp();
	tu_write(ws, "calc_test.py", "");
	ASSERT_DETECT(ws, "python3 -m unittest discover -p *_test.py");
	tu_rmtree(ws);

	/* test files in dependencies and hidden folders do not count */
	ws = tu_mkdtemp();
	tu_write(ws, "node_modules/x/test_a.py", "");
	tu_write(ws, ".venv/lib/test_b.py", "");
	tu_write(ws, "build/test_c.py", "");
	tu_write(ws, "src/testing.py", "");
	ASSERT_DETECT(ws, NULL);
	tu_rmtree(ws);
}

static void test_verify_detect_go_cargo_cmake_meson(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL, *got;

	(void)state;
	tu_write(ws, "go.mod", "module x\n");
	ASSERT_DETECT(ws, "go test -json ./...");
	tu_rmtree(ws);

	ws = tu_mkdtemp();
	tu_write(ws, "Cargo.toml", "[package]\nname = \"x\"\n");
	ASSERT_DETECT(ws, "cargo test");
	tu_rmtree(ws);

	/* CMake needs a configured build folder, else it says so */
	ws = tu_mkdtemp();
	tu_write(ws, "CMakeLists.txt", "project(x)\n");
	got = detect(ws, NULL, &reason);
	assert_null(got);
	assert_non_null(strstr(reason, "no test command found"));
	assert_non_null(strstr(reason, "CMakeLists.txt exists but no build*/ folder"));
	free(reason);
	tu_write(ws, "out/CTestTestfile.cmake", "");	/* not build* */
	ASSERT_DETECT(ws, NULL);
	tu_write(ws, "build-asan/CTestTestfile.cmake", "");
	tu_write(ws, "build/CTestTestfile.cmake", "");
	got = detect(ws, NULL, &reason);
	assert_string_equal(got, "ctest --test-dir build --output-on-failure");
	assert_string_equal(reason, "CMakeLists.txt with tests configured in build/");
	free(got);
	free(reason);
	tu_rmtree(ws);

	ws = tu_mkdtemp();
	tu_write(ws, "meson.build", "project('x', 'c')\n");
	ASSERT_DETECT(ws, NULL);
	tu_write(ws, "builddir/meson-private/coredata.dat", "");
	ASSERT_DETECT(ws, "meson test -C builddir");
	tu_rmtree(ws);
}

/* The order of the rules, one pair at a time. */
static void test_verify_detect_order(void **state)
{
	char *ws = tu_mkdtemp();

	(void)state;
	tu_write(ws, "meson.build", "");
	tu_write(ws, "b/meson-private/x", "");
	ASSERT_DETECT(ws, "meson test -C b");
	tu_write(ws, "CMakeLists.txt", "");
	tu_write(ws, "build/CTestTestfile.cmake", "");
	ASSERT_DETECT(ws, "ctest --test-dir build --output-on-failure");
	tu_write(ws, "Cargo.toml", "");
	ASSERT_DETECT(ws, "cargo test");
	tu_write(ws, "go.mod", "");
	ASSERT_DETECT(ws, "go test -json ./...");
	tu_write(ws, "test_a.py", "");
	ASSERT_DETECT(ws, "python3 -m unittest discover");
	tu_write(ws, "pytest.ini", "");
	ASSERT_DETECT(ws, "python3 -m pytest");
	tu_write(ws, "package.json", "{\"scripts\":{\"test\":\"jest\"}}");
	ASSERT_DETECT(ws, "npm test");
	tu_write(ws, "Makefile", "check:\n\ttrue\n");
	ASSERT_DETECT(ws, "make check");
	tu_rmtree(ws);
}

static void test_verify_detect_nothing(void **state)
{
	char *ws = tu_mkdtemp(), *reason = NULL;
	struct verify_command c = VERIFY_COMMAND_INIT;
	struct strvec empty = STRVEC_INIT;

	(void)state;
	tu_write(ws, "README", "hello\n");
	assert_int_equal(verify_detect(&c, ws, &empty), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "no test command found in"));
	assert_non_null(strstr(err_last(), "[pipeline] test_command"));
	assert_int_equal(c.argv.nr, 0);	/* untouched on failure */
	free(reason);
	tu_write(ws, "x", "");
	{
		char *file = xstrfmt("%s/x", ws);

		assert_int_equal(verify_detect(&c, file, NULL), FX_ENOTFOUND);
		assert_non_null(strstr(err_last(), "not a folder"));
		free(file);
	}
	tu_rmtree(ws);
}

static void test_verify_command_json(void **state)
{
	struct verify_command c = VERIFY_COMMAND_INIT;
	char *ws = tu_mkdtemp();
	json_t *j;

	(void)state;
	tu_write(ws, "go.mod", "");
	assert_int_equal(verify_detect(&c, ws, NULL), 0);
	j = verify_command_to_json(&c);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "argv"), 2)),
			    "-json");
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "go");
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "go.mod exists");
	assert_true(json_is_false(json_object_get(j, "configured")));
	json_decref(j);
	verify_command_release(&c);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_detect_configured_wins),
		cmocka_unit_test(test_verify_detect_makefile_targets),
		cmocka_unit_test(test_verify_detect_makefile_not_targets),
		cmocka_unit_test(test_verify_detect_makefile_names),
		cmocka_unit_test(test_verify_detect_package_json),
		cmocka_unit_test(test_verify_detect_pytest_configs),
		cmocka_unit_test(test_verify_detect_unittest),
		cmocka_unit_test(test_verify_detect_go_cargo_cmake_meson),
		cmocka_unit_test(test_verify_detect_order),
		cmocka_unit_test(test_verify_detect_nothing),
		cmocka_unit_test(test_verify_command_json),
	};

	return cmocka_run_group_tests_name("verify/detect", tests, NULL, NULL);
}

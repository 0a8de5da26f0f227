#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "helpers/testutil.h"

static char *ws;

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	tu_write(ws, "src/a.c", "int a;\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmtree(ws);
	return 0;
}

static char *in_ws(const char *rel)
{
	struct buf b = BUF_INIT;

	path_join(&b, ws, rel);
	return buf_detach(&b, NULL);
}

static void test_path_resolve_inside(void **state)
{
	char *out = NULL, *want = in_ws("src/a.c");

	(void)state;
	assert_int_equal(path_resolve_in_workspace(&out, ws, "src/./a.c"), 0);
	assert_string_equal(out, want);
	free(out);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "."), 0);
	assert_string_equal(out, ws);
	free(out);
	/* missing components are fine, as with Python's non-strict resolve() */
	assert_int_equal(path_resolve_in_workspace(&out, ws, "new/dir/../file"), 0);
	free(want);
	want = in_ws("new/file");
	assert_string_equal(out, want);
	free(out);
	free(want);
}

static void test_path_resolve_dotdot_escape(void **state)
{
	char *out = NULL;

	(void)state;
	assert_int_equal(path_resolve_in_workspace(&out, ws, ".."), FX_EDENIED);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "src/../../x"), FX_EDENIED);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "/etc/passwd"), FX_EDENIED);
	assert_null(out);
	assert_non_null(strstr(err_last(), "outside the workspace"));
}

static void test_path_resolve_symlink_escape(void **state)
{
	char *out = NULL, *link = in_ws("evil"), *rel = in_ws("rel");

	(void)state;
	assert_int_equal(symlink("/etc", link), 0);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "evil/passwd"), FX_EDENIED);
	/* a relative link that climbs out */
	assert_int_equal(symlink("../..", rel), 0);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "rel"), FX_EDENIED);
	assert_null(out);
	free(link);
	free(rel);
}

static void test_path_resolve_symlink_inside(void **state)
{
	char *out = NULL, *link = in_ws("lnk"), *want = in_ws("src/a.c");

	(void)state;
	assert_int_equal(symlink("src", link), 0);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "lnk/a.c"), 0);
	assert_string_equal(out, want);
	free(out);
	free(link);
	free(want);
}

static void test_path_resolve_loop(void **state)
{
	char *out = NULL, *a = in_ws("loop1"), *b = in_ws("loop2");

	(void)state;
	assert_int_equal(symlink("loop2", a), 0);
	assert_int_equal(symlink("loop1", b), 0);
	assert_int_equal(path_resolve_in_workspace(&out, ws, "loop1/x"), FX_ELIMIT);
	free(a);
	free(b);
}

static void test_path_is_within(void **state)
{
	(void)state;
	assert_true(path_is_within("/a/b", "/a"));
	assert_true(path_is_within("/a", "/a"));
	assert_false(path_is_within("/ab", "/a"));
	assert_true(path_is_within("/x", "/"));
}

static void test_path_names(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	path_basename(&b, "/usr/bin/python3.12//");
	assert_string_equal(b.buf, "python3.12");
	buf_reset(&b);
	path_basename(&b, "/");
	assert_string_equal(b.buf, "");
	buf_reset(&b);
	path_dirname(&b, "a/b/c");
	assert_string_equal(b.buf, "a/b");
	buf_reset(&b);
	path_dirname(&b, "c");
	assert_string_equal(b.buf, ".");
	buf_reset(&b);
	path_dirname(&b, "/c");
	assert_string_equal(b.buf, "/");
	buf_reset(&b);
	path_join(&b, "/a/", "/b");
	assert_string_equal(b.buf, "/a/b");
	buf_reset(&b);
	path_relative(&b, "/w/x/y", "/w");
	assert_string_equal(b.buf, "x/y");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_resolve_inside),
		cmocka_unit_test(test_path_resolve_dotdot_escape),
		cmocka_unit_test(test_path_resolve_symlink_escape),
		cmocka_unit_test(test_path_resolve_symlink_inside),
		cmocka_unit_test(test_path_resolve_loop),
		cmocka_unit_test(test_path_is_within),
		cmocka_unit_test(test_path_names),
	};

	return cmocka_run_group_tests_name("base/path", tests, setup, teardown);
}

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

static void test_err_set_prefix_errno(void **state)
{
	(void)state;
	err_clear();
	assert_string_equal(err_last(), "");
	assert_int_equal(err_set(FX_ENOTFOUND, "no file '%s'", "x"), FX_ENOTFOUND);
	assert_int_equal(err_prefix(FX_EINVAL, "loading %s", "cfg"), FX_EINVAL);
	assert_string_equal(err_last(), "loading cfg: no file 'x'");
	assert_int_equal(err_last_code(), FX_EINVAL);
	errno = ENOENT;
	err_set_errno(FX_EOS, "open");
	assert_string_equal(err_last(), "open: No such file or directory");
	assert_string_equal(err_name(FX_EOS), "EOS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err_set_prefix_errno),
	};

	return cmocka_run_group_tests_name("base/err", tests, NULL, NULL);
}

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/strvec.h"

static void test_strvec_push_pop_find(void **state)
{
	struct strvec sv = STRVEC_INIT;
	const char *init[] = { "a", "b", NULL };

	(void)state;
	assert_non_null(sv.v);
	assert_null(sv.v[0]);
	strvec_pushv(&sv, init);
	strvec_pushf(&sv, "%s-%d", "c", 3);
	assert_int_equal(sv.nr, 3);
	assert_string_equal(sv.v[2], "c-3");
	assert_null(sv.v[3]);
	assert_int_equal(strvec_find(&sv, "b"), 1);
	assert_int_equal(strvec_find(&sv, "z"), -1);
	strvec_pop(&sv);
	assert_int_equal(sv.nr, 2);
	assert_null(sv.v[2]);
	strvec_clear(&sv);
	assert_int_equal(sv.nr, 0);
	assert_null(sv.v[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strvec_push_pop_find),
	};

	return cmocka_run_group_tests_name("base/strvec", tests, NULL, NULL);
}

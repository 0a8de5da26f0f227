#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/utf8.h"

/* "aé€😀": 1 + 2 + 3 + 4 bytes. */
static const char mixed[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";

static void test_utf8_cut_never_splits_a_sequence(void **state)
{
	size_t len = strlen(mixed);

	(void)state;
	assert_int_equal(utf8_cut(mixed, len, 100), len);
	assert_int_equal(utf8_cut(mixed, len, len), len);
	assert_int_equal(utf8_cut(mixed, len, 0), 0);
	assert_int_equal(utf8_cut(mixed, len, 1), 1);
	assert_int_equal(utf8_cut(mixed, len, 2), 1);	/* inside é */
	assert_int_equal(utf8_cut(mixed, len, 3), 3);
	assert_int_equal(utf8_cut(mixed, len, 5), 3);	/* inside € */
	assert_int_equal(utf8_cut(mixed, len, 6), 6);
	assert_int_equal(utf8_cut(mixed, len, 9), 6);	/* inside 😀 */
}

static void test_utf8_cut_passes_invalid_bytes(void **state)
{
	/* A lone lead byte is cut after, as any byte; only continuations are stepped over. */
	const char bad[] = "ab\xc3" "cd";

	(void)state;
	assert_int_equal(utf8_cut(bad, 5, 3), 3);
	/* Nothing but continuation bytes: the prefix shrinks to nothing. */
	assert_int_equal(utf8_cut("\x80\x80\x80", 3, 2), 0);
}

static void test_utf8_start_skips_continuations(void **state)
{
	size_t len = strlen(mixed);

	(void)state;
	assert_int_equal(utf8_start(mixed, len, 0), 0);
	assert_int_equal(utf8_start(mixed, len, 2), 3);
	assert_int_equal(utf8_start(mixed, len, 4), 6);
	assert_int_equal(utf8_start(mixed, len, 7), len);
	assert_int_equal(utf8_start(mixed, len, len), len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_cut_never_splits_a_sequence),
		cmocka_unit_test(test_utf8_cut_passes_invalid_bytes),
		cmocka_unit_test(test_utf8_start_skips_continuations),
	};

	return cmocka_run_group_tests_name("base/utf8", tests, NULL, NULL);
}

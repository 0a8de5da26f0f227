#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

static void test_clk_mono_never_goes_back(void **state)
{
	struct timespec pause = { 0, 2000000 };
	double s0 = clk_mono_s(), m0 = clk_mono_ms(), s1, m1;

	(void)state;
	nanosleep(&pause, NULL);
	s1 = clk_mono_s();
	m1 = clk_mono_ms();
	assert_true(s1 - s0 >= 0.002);
	assert_true(m1 - m0 >= 2.0);
	/* the two read the same clock */
	assert_true(m1 / 1000.0 - s1 < 1.0 && s1 - m1 / 1000.0 < 1.0);
}

static void test_clk_wall_ms_is_the_date(void **state)
{
	long long before = (long long)time(NULL) * 1000, ms = clk_wall_ms();

	(void)state;
	assert_true(ms >= before && ms < before + 2000);
}

static void test_clk_iso8601(void **state)
{
	char out[32];

	(void)state;
	clk_iso8601(out, sizeof(out), 0);
	assert_string_equal(out, "1970-01-01T00:00:00Z");
	clk_iso8601(out, sizeof(out), 1700000000);
	assert_string_equal(out, "2023-11-14T22:13:20Z");
}

static void test_clk_iso8601_now_ms_shape(void **state)
{
	char out[32], date[32];
	size_t i;

	(void)state;
	clk_iso8601_now_ms(out, sizeof(out));
	/* YYYY-MM-DDTHH:MM:SS.mmmZ */
	assert_int_equal(strlen(out), 24);
	for (i = 0; i < 24; i++) {
		if (i == 4 || i == 7)
			assert_int_equal(out[i], '-');
		else if (i == 10)
			assert_int_equal(out[i], 'T');
		else if (i == 13 || i == 16)
			assert_int_equal(out[i], ':');
		else if (i == 19)
			assert_int_equal(out[i], '.');
		else if (i == 23)
			assert_int_equal(out[i], 'Z');
		else
			assert_true(out[i] >= '0' && out[i] <= '9');
	}
	/* the same day as the seconds form, unless midnight passed in between */
	clk_iso8601(date, sizeof(date), time(NULL));
	assert_true(!strncmp(out, date, 10) || !strncmp(out + 11, "23:59", 5) ||
		    !strncmp(date + 11, "00:00", 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clk_mono_never_goes_back),
		cmocka_unit_test(test_clk_wall_ms_is_the_date),
		cmocka_unit_test(test_clk_iso8601),
		cmocka_unit_test(test_clk_iso8601_now_ms_shape),
	};

	return cmocka_run_group_tests_name("base/clock", tests, NULL, NULL);
}

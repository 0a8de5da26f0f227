#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/utf8.h"

/* "aé€😀": 1 + 2 + 3 + 4 bytes. */
static const char mixed[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";

static void test_utf8_decode_strict(void **state)
{
	static const struct { const char *s; size_t len; size_t n; uint32_t cp; } cases[] = {
		{ "A", 1, 1, 0x41 },
		{ "\xc3\xa9", 2, 2, 0xe9 },
		{ "\xe2\x82\xac", 3, 3, 0x20ac },
		{ "\xf0\x9f\x98\x80", 4, 4, 0x1f600 },
		{ "\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff },
		{ "\xc3", 1, 0, 0 },			/* cut short */
		{ "\xe2\x82", 2, 0, 0 },
		{ "\x80", 1, 0, 0 },			/* a continuation byte alone */
		{ "\xc0\xaf", 2, 0, 0 },		/* overlong '/' */
		{ "\xe0\x80\xaf", 3, 0, 0 },		/* overlong */
		{ "\xed\xa0\x80", 3, 0, 0 },		/* surrogate U+D800 */
		{ "\xf4\x90\x80\x80", 4, 0, 0 },	/* above U+10FFFF */
		{ "\xc3(", 2, 0, 0 },			/* not a continuation */
		{ "\xff", 1, 0, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t cp = 0;
		size_t n = utf8_decode(cases[i].s, cases[i].len, &cp);

		if (n != cases[i].n)
			fail_msg("case %zu: length %zu, expected %zu", i, n, cases[i].n);
		if (n && cp != cases[i].cp)
			fail_msg("case %zu: U+%04X, expected U+%04X", i, (unsigned)cp,
				 (unsigned)cases[i].cp);
	}
}

static void test_utf8_encode_round_trips(void **state)
{
	static const uint32_t cps[] = { 0, 0x41, 0x7f, 0x80, 0x7ff, 0x800, 0xfffd, 0xffff, 0x10000,
					0x1f600, 0x10ffff };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cps) / sizeof(cps[0]); i++) {
		struct buf b = BUF_INIT;
		uint32_t cp = 0;

		utf8_encode(&b, cps[i]);
		assert_int_equal(b.len, cps[i] < 0x80 ? 1 : cps[i] < 0x800 ? 2 : cps[i] < 0x10000 ? 3 : 4);
		assert_int_equal(utf8_decode(b.buf, b.len, &cp), b.len);
		assert_int_equal(cp, cps[i]);
		buf_release(&b);
	}
}

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
	/* A long run of them: at most 3 are stepped over, as no sequence has more. */
	assert_int_equal(utf8_cut("a\x80\x80\x80\x80\x80\x80\x80x", 9, 7), 4);
}

static void test_utf8_incomplete_tells_a_cut_sequence(void **state)
{
	(void)state;
	assert_int_equal(utf8_incomplete("\xc3", 1), 1);		/* é, cut */
	assert_int_equal(utf8_incomplete("\xe2\x82", 2), 1);	/* €, cut */
	assert_int_equal(utf8_incomplete("\xe0", 1), 1);		/* needs A0..BF next */
	assert_int_equal(utf8_incomplete("\xf0\x9f\x98", 3), 1);	/* 😀, cut */
	assert_int_equal(utf8_incomplete("\xf4", 1), 1);		/* needs 80..8F next */
	assert_int_equal(utf8_incomplete("a", 1), 0);			/* whole */
	assert_int_equal(utf8_incomplete("\xc3\xa9", 2), 0);		/* whole */
	assert_int_equal(utf8_incomplete("\xe0\x80", 2), 0);		/* overlong: invalid */
	assert_int_equal(utf8_incomplete("\xed\xa0", 2), 0);		/* a surrogate: invalid */
	assert_int_equal(utf8_incomplete("\x80", 1), 0);		/* no lead byte */
	assert_int_equal(utf8_incomplete("\xff", 1), 0);
	assert_int_equal(utf8_incomplete("", 0), 0);
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
		cmocka_unit_test(test_utf8_decode_strict),
		cmocka_unit_test(test_utf8_encode_round_trips),
		cmocka_unit_test(test_utf8_cut_never_splits_a_sequence),
		cmocka_unit_test(test_utf8_cut_passes_invalid_bytes),
		cmocka_unit_test(test_utf8_incomplete_tells_a_cut_sequence),
		cmocka_unit_test(test_utf8_start_skips_continuations),
	};

	return cmocka_run_group_tests_name("base/utf8", tests, NULL, NULL);
}

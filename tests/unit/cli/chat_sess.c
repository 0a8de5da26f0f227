/*
 * The rows of the lists of sessions (cli/chat_sess.h): the age, the cut
 * of a first message to the width, terminal-safe.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "cli/chat_sess.h"

static void expect_age(long long then, long long now, const char *want)
{
	struct buf b = BUF_INIT;

	chat_sess_age(&b, then, now);
	assert_string_equal(b.buf, want);
	buf_release(&b);
}

static void test_age(void **state)
{
	(void)state;
	expect_age(0, 1000, "?");
	expect_age(1000, 1000, "just now");
	expect_age(1000, 1009, "just now");
	expect_age(1000, 1042, "42 s ago");
	expect_age(1000, 1000 + 185, "3 min ago");
	expect_age(1000, 1000 + 3599, "59 min ago");
	expect_age(1000, 1000 + 5 * 3600 + 7, "5 h ago");
	expect_age(1000, 1000 + 86400 + 1, "1 day ago");
	expect_age(1000, 1000 + 3 * 86400, "3 days ago");
}

static void expect_cut(const char *text, size_t cols, int mark_more, const char *want)
{
	struct buf b = BUF_INIT;

	chat_sess_cut(&b, text, cols, mark_more);
	assert_string_equal(b.buf, want);
	buf_release(&b);
}

static void test_cut(void **state)
{
	(void)state;
	/* fits: as it is */
	expect_cut("fix the bug", 11, 1, "fix the bug");
	expect_cut("fix the bug", 0, 1, "fix the bug");
	/* one column too many: cut, and "..." within the width */
	expect_cut("fix the bug", 10, 1, "fix the...");
	/* more lines: the first, marked only when asked */
	expect_cut("first line\nsecond", 40, 1, "first line...");
	expect_cut("first line\nsecond", 40, 0, "first line");
	expect_cut("first line\n", 40, 1, "first line");
	/* escapes are text, and count as what they show */
	expect_cut("a\033[2Jb", 0, 1, "a\\e[2Jb");
	expect_cut("a\033[2Jbcdefgh", 8, 1, "a\\e[2...");
	/* never half a character: "é" is one column of two bytes */
	expect_cut("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 4, 1, "\xc3\xa9...");
	expect_cut("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 4, 1, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
}

static void test_row(void **state)
{
	struct chat_session_info si = { (char *)"make add subtract\nand more", 2, 1000 };
	struct buf b = BUF_INIT;

	(void)state;
	chat_sess_row(&b, &si, 1000 + 185, 0);
	assert_string_equal(b.buf, "3 min ago     2 turns  make add subtract...");
	buf_reset(&b);
	si.turns = 1;
	chat_sess_row(&b, &si, 1000 + 185, 32);
	assert_string_equal(b.buf, "3 min ago     1 turn   make a...");
	assert_int_equal(strlen(b.buf), 32);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_age),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* forgex's own messages wrapped to a width (cli/textwrap.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "cli/textwrap.h"

static void expect(const char *text, unsigned width, unsigned indent, const char *want)
{
	struct buf out = BUF_INIT;

	textwrap(&out, text, strlen(text), width, indent);
	if (strcmp(out.buf, want))
		fail_msg("wrapped at %u:\n%s\nwanted:\n%s", width, out.buf, want);
	buf_release(&out);
}

static void test_wrap_at_spaces(void **state)
{
	(void)state;
	expect("forgex: warning: one two three four five six\n", 20, 2,
	       "forgex: warning: one\n  two three four\n  five six\n");
	/* fits: as it is, spaces and all */
	expect("short  line\n", 20, 2, "short  line\n");
	/* each line on its own */
	expect("aaa bbb\nccc ddd eee\n", 8, 0, "aaa bbb\nccc ddd\neee\n");
	/* code points, not bytes: "é" is one column */
	expect("\xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\xc3\xa9\n", 6, 0,
	       "\xc3\xa9\xc3\xa9\xc3\xa9 \xc3\xa9\xc3\xa9\n");
}

static void test_wrap_long_word_and_no_width(void **state)
{
	(void)state;
	/* a word longer than a row is cut within it */
	expect("see /a/very/long/path/that/never/ends here\n", 12, 2,
	       "see\n  /a/very/lo\n  ng/path/th\n  at/never/e\n  nds here\n");
	/* width 0 (not a terminal) or too narrow: unchanged */
	expect("one two three\n", 0, 2, "one two three\n");
	expect("one two three\n", 9, 2, "one two three\n");
	assert_int_equal(textwrap_width(-1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap_at_spaces),
		cmocka_unit_test(test_wrap_long_word_and_no_width),
	};

	return cmocka_run_group_tests_name("cli/textwrap", tests, NULL, NULL);
}

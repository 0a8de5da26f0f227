#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/termsafe.h"

static char *safe(const char *s, size_t len, unsigned flags)
{
	struct buf b = BUF_INIT;

	buf_add_termsafe(&b, s, len, flags);
	return buf_detach(&b, NULL);
}

#define SAFE_EQ(in, flags, want) do { \
		char *got_ = safe(in, sizeof(in) - 1, flags); \
		assert_string_equal(got_, want); \
		free(got_); \
	} while (0)

/* The sequences an attacker uses: OSC 52, screen clear, title, BEL, CR. */
static void test_termsafe_escapes_controls(void **state)
{
	(void)state;
	SAFE_EQ("plan \x1b]52;c;ZXZpbA==\x07 done", 0, "plan \\e]52;c;ZXZpbA==\\x07 done");
	SAFE_EQ("\x1b[2J\x1b[H", 0, "\\e[2J\\e[H");
	SAFE_EQ("ok\rFAKE", 0, "ok\\rFAKE");
	SAFE_EQ("a\nb\tc", 0, "a\\nb\\tc");
	SAFE_EQ("a\nb\tc", TERMSAFE_MULTILINE, "a\nb\tc");
	SAFE_EQ("x\x7fy\x08z", TERMSAFE_MULTILINE, "x\\x7Fy\\x08z");
	/* C1 CSI, as UTF-8 (U+009B) and as a lone byte */
	SAFE_EQ("\xc2\x9b" "2J", 0, "\\u{009B}2J");
	SAFE_EQ("\x9b" "2J", 0, "\\x9B2J");
	/* bidi override, zero-width space */
	SAFE_EQ("a\xe2\x80\xae" "b\xe2\x80\x8b", 0, "a\\u{202E}b\\u{200B}");
	/* a NUL inside */
	SAFE_EQ("a\0b", 0, "a\\x00b");
}

static void test_termsafe_keeps_text(void **state)
{
	const char *s = "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 [x] \\e";

	(void)state;
	assert_false(termsafe_needed(s, strlen(s), 0));
	SAFE_EQ("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 [x] \\e", 0,
		"caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 [x] \\e");
	/* overlong and surrogate encodings are not UTF-8 */
	SAFE_EQ("\xc0\xaf\xed\xa0\x80", 0, "\\xC0\\xAF\\xED\\xA0\\x80");
	/* a sequence cut at the end */
	SAFE_EQ("ab\xe2\x9c", 0, "ab\\xE2\\x9C");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_termsafe_escapes_controls),
		cmocka_unit_test(test_termsafe_keeps_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

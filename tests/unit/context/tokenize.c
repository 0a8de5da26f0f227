/*
 * The identifier scan of the repository map.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "context/tokenize.h"

static int collect(void *data, const char *s, size_t len, uint64_t h)
{
	struct buf *b = data;

	assert_true(h == ctx_ident_hash(s, len));
	if (b->len)
		buf_addch(b, ' ');
	buf_add(b, s, len);
	return 0;
}

static char *scan(const char *text, size_t *n)
{
	struct buf b = BUF_INIT;
	size_t got = ctx_tokenize(text, strlen(text), collect, &b);

	if (n)
		*n = got;
	return buf_detach(&b, NULL);
}

static void test_tokenize_identifiers(void **state)
{
	size_t n;
	char *s = scan("int foo_bar(struct Baz *b) { return b->q + $x9 + _y; }", &n);

	(void)state;
	/* "q" is too short to say anything; $ and _ start names */
	assert_string_equal(s, "int foo_bar struct Baz return $x9 _y");
	assert_int_equal(n, 7);
	free(s);
}

static void test_tokenize_numbers_skipped_whole(void **state)
{
	char *s = scan("x = 0x1fULL + 10ul + 3e10 + 1_000 + abc123 + 9lives;", NULL);

	(void)state;
	/* a run starting with a digit is a number, suffix and all */
	assert_string_equal(s, "abc123");
	free(s);
}

static void test_tokenize_utf8_and_edges(void **state)
{
	char *s = scan("caf\xc3\xa9_name(\xce\xbb\xce\xbb) ab", NULL);

	(void)state;
	assert_string_equal(s, "caf\xc3\xa9_name \xce\xbb\xce\xbb ab");
	free(s);
	s = scan("", NULL);
	assert_string_equal(s, "");
	free(s);
	s = scan("zz", NULL);	/* a name at the very end */
	assert_string_equal(s, "zz");
	free(s);
}

static void test_tokenize_long_names_dropped(void **state)
{
	struct buf t = BUF_INIT;
	char *s;
	size_t i;

	(void)state;
	for (i = 0; i < CTX_IDENT_MAX + 1; i++)
		buf_addch(&t, 'a');
	buf_addstr(&t, " ok_name ");
	for (i = 0; i < CTX_IDENT_MAX; i++)
		buf_addch(&t, 'b');
	s = scan(t.buf, NULL);
	assert_int_equal(strlen(s), strlen("ok_name ") + CTX_IDENT_MAX);
	assert_memory_equal(s, "ok_name b", 9);
	free(s);
	buf_release(&t);
}

static int stop_at_second(void *data, const char *s, size_t len, uint64_t h)
{
	int *n = data;

	(void)s;
	(void)len;
	(void)h;
	return ++*n == 2;
}

static void test_tokenize_stop(void **state)
{
	int n = 0;

	(void)state;
	assert_int_equal(ctx_tokenize("aa bb cc dd", 11, stop_at_second, &n), 2);
	assert_int_equal(n, 2);
}

static void test_tokenize_binary_bytes(void **state)
{
	static const char bin[] = "ab\0cd\x01\xff\xfe" "ef";
	struct buf b = BUF_INIT;

	(void)state;
	/* NUL and control bytes separate; high bytes join (UTF-8 or not) */
	ctx_tokenize(bin, sizeof(bin) - 1, collect, &b);
	assert_string_equal(b.buf, "ab cd \xff\xfe" "ef");
	buf_release(&b);
}

static void test_hash_stable(void **state)
{
	(void)state;
	/* the cache depends on these values staying the same across machines */
	assert_true(ctx_hash("", 0) == ctx_hash("", 0));
	assert_true(ctx_hash("abc", 3) != ctx_hash("abd", 3));
	assert_true(ctx_hash("abcdefgh", 8) != ctx_hash("abcdefgh\0", 9));
	assert_true(ctx_hash("abcdefghijklmnop", 16) != ctx_hash("ijklmnopabcdefgh", 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokenize_identifiers),
		cmocka_unit_test(test_tokenize_numbers_skipped_whole),
		cmocka_unit_test(test_tokenize_utf8_and_edges),
		cmocka_unit_test(test_tokenize_long_names_dropped),
		cmocka_unit_test(test_tokenize_stop),
		cmocka_unit_test(test_tokenize_binary_bytes),
		cmocka_unit_test(test_hash_stable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

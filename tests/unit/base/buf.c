#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

static void test_buf_init_is_empty_string(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	assert_non_null(b.buf);
	assert_string_equal(b.buf, "");
	assert_int_equal(b.len, 0);
	buf_release(&b);
}

static void test_buf_add_and_format(void **state)
{
	struct buf b = BUF_INIT;
	char *s;
	size_t n;
	int i;

	(void)state;
	buf_addstr(&b, "abc");
	buf_addch(&b, '-');
	for (i = 0; i < 1000; i++)
		buf_addf(&b, "%d,", i);
	assert_memory_equal(b.buf, "abc-0,1,2,", 10);
	assert_int_equal(b.len, strlen(b.buf));
	s = buf_detach(&b, &n);
	assert_int_equal(n, strlen(s));
	assert_string_equal(b.buf, "");
	free(s);
}

static void test_buf_cap_refuses_without_change(void **state)
{
	struct buf b = BUF_INIT_CAP(8);

	(void)state;
	assert_int_equal(buf_add_capped(&b, "12345", 5), 0);
	assert_int_equal(buf_add_capped(&b, "6789", 4), FX_ELIMIT);
	assert_string_equal(b.buf, "12345");
	assert_int_equal(buf_add_capped(&b, "678", 3), 0);
	assert_string_equal(b.buf, "12345678");
	assert_int_equal(buf_add_capped(&b, "x", 1), FX_ELIMIT);
	assert_non_null(strstr(err_last(), "8 bytes"));
	buf_release(&b);
}

static void test_buf_trim(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	buf_addstr(&b, " \t hello world \n\n");
	buf_trim(&b);
	assert_string_equal(b.buf, "hello world");
	buf_release(&b);
}

static void test_buf_shell_quote(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	buf_add_shell_quoted(&b, "plain-arg_1.txt");
	buf_addch(&b, ' ');
	buf_add_shell_quoted(&b, "it's here");
	buf_addch(&b, ' ');
	buf_add_shell_quoted(&b, "");
	buf_addch(&b, ' ');
	buf_add_shell_quoted(&b, "$(rm -rf /)");
	assert_string_equal(b.buf, "plain-arg_1.txt 'it'\"'\"'s here' '' '$(rm -rf /)'");
	buf_release(&b);
}

static void test_headtail_small_stream_kept_whole(void **state)
{
	struct headtail h;
	struct buf out = BUF_INIT;

	(void)state;
	headtail_init(&h, 10, 10);
	headtail_add(&h, "hello ", 6);
	headtail_add(&h, "world!", 6);
	headtail_render(&h, &out);
	assert_string_equal(out.buf, "hello world!");
	assert_int_equal(headtail_dropped(&h), 0);
	headtail_release(&h);
	buf_release(&out);
}

static void test_headtail_keeps_head_and_tail(void **state)
{
	struct headtail h;
	struct buf out = BUF_INIT;
	char chunk[7];
	int i;

	(void)state;
	headtail_init(&h, 4, 6);
	/* 1000 chunks of "abcdefg" in odd sizes to wrap the ring many ways */
	for (i = 0; i < 1000; i++) {
		memcpy(chunk, "abcdefg", 7);
		headtail_add(&h, chunk, 3);
		headtail_add(&h, chunk + 3, 4);
	}
	headtail_add(&h, "0123456789", 10);
	headtail_render(&h, &out);
	assert_int_equal(h.total, 7010);
	assert_int_equal(headtail_dropped(&h), 7010 - 10);
	assert_string_equal(out.buf, "abcd\n[... forgex: 7000 bytes omitted ...]\n456789");
	headtail_release(&h);
	buf_release(&out);
}

static void test_headtail_ring_wraps_in_small_writes(void **state)
{
	struct headtail h;
	struct buf out = BUF_INIT;
	const char *s = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
	size_t i;

	(void)state;
	headtail_init(&h, 2, 5);
	for (i = 0; i < strlen(s); i++)
		headtail_add(&h, s + i, 1);
	headtail_render(&h, &out);
	assert_string_equal(out.buf, "AB\n[... forgex: 19 bytes omitted ...]\nVWXYZ");
	headtail_release(&h);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_init_is_empty_string),
		cmocka_unit_test(test_buf_add_and_format),
		cmocka_unit_test(test_buf_cap_refuses_without_change),
		cmocka_unit_test(test_buf_trim),
		cmocka_unit_test(test_buf_shell_quote),
		cmocka_unit_test(test_headtail_small_stream_kept_whole),
		cmocka_unit_test(test_headtail_keeps_head_and_tail),
		cmocka_unit_test(test_headtail_ring_wraps_in_small_writes),
	};

	return cmocka_run_group_tests_name("base/buf", tests, NULL, NULL);
}

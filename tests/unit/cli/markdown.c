/*
 * The Markdown renderer of the session (cli/markdown.c): what each
 * construct looks like on a terminal with colour, the stream that renders
 * a block once it is complete, and hostile text (escape sequences inside
 * code, a huge table, fences that never close, deep nesting).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "cli/markdown.h"

/* The rendering of `md`, escapes shown as \e (caller frees). */
static char *shown(const char *md, size_t len)
{
	struct buf out = BUF_INIT, s = BUF_INIT;
	size_t i;

	markdown_render(&out, md, len);
	for (i = 0; i < out.len; i++)
		if (out.buf[i] == '\033')
			buf_addstr(&s, "\\e");
		else
			buf_addch(&s, out.buf[i]);
	buf_release(&out);
	return buf_detach(&s, NULL);
}

static void expect(const char *md, const char *want)
{
	char *got = shown(md, strlen(md));

	if (strcmp(got, want))
		fail_msg("markdown:\n%s\nrendered:\n%s\nwanted:\n%s", md, got, want);
	free(got);
}

/* Fed in pieces of `step` bytes; every byte of output, escapes as \e (caller frees). */
static char *streamed(const char *md, size_t step, int *open)
{
	struct markdown_stream *m = markdown_stream_new();
	struct buf out = BUF_INIT, s = BUF_INIT;
	size_t i, len = strlen(md);

	for (i = 0; i < len; i += step)
		markdown_stream_feed(m, md + i, len - i < step ? len - i : step, &out);
	*open = markdown_stream_finish(m, &out);
	markdown_stream_free(m);
	for (i = 0; i < out.len; i++)
		if (out.buf[i] == '\033')
			buf_addstr(&s, "\\e");
		else
			buf_addch(&s, out.buf[i]);
	buf_release(&out);
	return buf_detach(&s, NULL);
}

static void test_markdown_inline(void **state)
{
	(void)state;
	expect("Some **bold**, *italic*, `code` and ~~gone~~.\n",
	       "Some \\e[1mbold\\e[22m, \\e[3mitalic\\e[23m, \\e[36mcode\\e[39m and "
	       "\\e[9mgone\\e[29m.\n");
	/* a link shows where it goes; an autolink once */
	expect("See [the docs](https://x.org/a) or <https://y.org>.\n",
	       "See the docs\\e[2m (https://x.org/a)\\e[22m or https://y.org.\n");
	expect("a &amp; b &lt;c&gt; &#65;\n", "a & b <c> A\n");
}

static void test_markdown_headings_and_blocks(void **state)
{
	(void)state;
	expect("# Title\n\n## Part\n\nText.\n",
	       "\\e[1m\\e[4mTitle\\e[24m\\e[22m\n\n\\e[1mPart\\e[22m\n\nText.\n");
	expect("> quoted\n> more\n", "\\e[2m\xe2\x94\x82 \\e[22mquoted\n\\e[2m\xe2\x94\x82 \\e[22mmore\n");
	expect("---\n", "\\e[2m\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\\e[22m\n");
}

static void test_markdown_lists(void **state)
{
	(void)state;
	expect("- one\n- two\n  - nested\n",
	       "\xe2\x80\xa2 one\n\xe2\x80\xa2 two\n  \xe2\x80\xa2 nested\n");
	expect("3. three\n4. four\n", "3. three\n4. four\n");
}

static void test_markdown_fence(void **state)
{
	(void)state;
	expect("```python\nprint('hi')\n  x = 1\n```\n",
	       "\\e[2m```python\\e[22m\nprint('hi')\n  x = 1\n\\e[2m```\\e[22m\n");
	/* text in a code block is code: no emphasis */
	expect("```\n**not bold**\n```\n", "\\e[2m```\\e[22m\n**not bold**\n\\e[2m```\\e[22m\n");
}

static void test_markdown_table_aligned(void **state)
{
	(void)state;
	expect("| Name | Size |\n|:-----|-----:|\n| a | 1 |\n| longer | 12345 |\n",
	       "\\e[1mName\\e[22m  \\e[2m \xe2\x94\x82 \\e[22m \\e[1mSize\\e[22m\n"
	       "\\e[2m\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\xbc\xe2\x94\x80"
	       "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\\e[22m\n"
	       "a     \\e[2m \xe2\x94\x82 \\e[22m    1\n"
	       "longer\\e[2m \xe2\x94\x82 \\e[22m12345\n");
}

static void test_markdown_escapes_in_code_are_shown(void **state)
{
	char *got;

	(void)state;
	/* an escape sequence (clear screen, OSC 52 clipboard) in a fence, a code span, a cell */
	got = shown("```sh\n\033[2J\033]52;c;ZXZpbA==\a\n```\n`\033[31m` and \xc2\x9b" "2J\n\n"
		    "| a |\n|---|\n| \033[H |\n", 0 + strlen("```sh\n\033[2J\033]52;c;ZXZpbA==\a\n"
		    "```\n`\033[31m` and \xc2\x9b" "2J\n\n| a |\n|---|\n| \033[H |\n"));
	/* (shown() writes a real ESC as \e too: the raw bytes are checked below) */
	assert_non_null(strstr(got, "\n\\e[2J\\e]52;c;ZXZpbA==\\x07\n"));
	assert_non_null(strstr(got, "\\e[36m\\e[31m\\e[39m"));
	assert_non_null(strstr(got, "\\u{009B}2J"));
	assert_non_null(strstr(got, "\\e[H"));
	free(got);
	/* the raw bytes: no ESC but the renderer's own, no BEL, no C1 CSI */
	{
		struct buf out = BUF_INIT;
		const char *md = "```\n\033]0;title\a\r\b\n```\n<b>\033[5m</b> &#27;[2J &#x9b;\n";
		size_t i;

		markdown_render(&out, md, strlen(md));
		assert_null(memchr(out.buf, '\a', out.len));
		assert_null(memchr(out.buf, '\r', out.len));
		assert_null(memchr(out.buf, '\b', out.len));
		assert_null(strstr(out.buf, "\xc2\x9b"));
		for (i = 0; i < out.len; i++)
			if (out.buf[i] == '\033')
				assert_true(out.buf[i + 1] == '[' && strchr("0123456789;", out.buf[i + 2]));
		/* raw HTML is text */
		assert_non_null(strstr(out.buf, "<b>\\e[5m</b>"));
		assert_non_null(strstr(out.buf, "\\e[2J"));
		buf_release(&out);
	}
}

static void test_markdown_huge_table(void **state)
{
	struct buf md = BUF_INIT, out = BUF_INIT;
	size_t i, rows = 0;
	char *p;

	(void)state;
	/* 200 columns (md4c takes 128 at most), 2000 rows, one cell of 100 KB */
	for (i = 0; i < 200; i++)
		buf_addf(&md, "| c%zu ", i);
	buf_addstr(&md, "|\n");
	for (i = 0; i < 200; i++)
		buf_addstr(&md, "|---");
	buf_addstr(&md, "|\n");
	for (i = 0; i < 2000; i++)
		buf_addf(&md, "| %zu | x |\n", i);
	buf_addstr(&md, "| ");
	for (i = 0; i < 100000; i++)
		buf_addch(&md, 'w');
	buf_addstr(&md, " |\n");
	markdown_render(&out, md.buf, md.len);
	for (p = out.buf; (p = strchr(p, '\n')); p++)
		rows++;
	/* a header, its rule, 2001 rows */
	assert_int_equal(rows, 2003);
	/* the long cell is not padded to its width in the other rows: each at most 128 columns */
	for (p = out.buf; *p; p = strchr(p, '\n') + 1)
		if (strcspn(p, "\n") < 100000)
			assert_true(strcspn(p, "\n") < 128 * (60 + 16));
	buf_release(&md);
	buf_release(&out);
}

static void test_markdown_unterminated_fence(void **state)
{
	int open;
	char *got;

	(void)state;
	got = shown("```c\nint x;\n", strlen("```c\nint x;\n"));
	assert_string_equal(got, "\\e[2m```c\\e[22m\nint x;\n\\e[2m```\\e[22m\n");
	free(got);
	/* streamed: held to the end, then shown whole */
	got = streamed("Intro.\n\n```c\nint x;\n**y**", 3, &open);
	assert_string_equal(got, "Intro.\n\n\\e[2m```c\\e[22m\nint x;\n**y**\n\\e[2m```\\e[22m");
	assert_true(open);
	free(got);
}

static void test_markdown_deep_nesting(void **state)
{
	struct buf md = BUF_INIT, out = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < 5000; i++)
		buf_addch(&md, '>');
	buf_addstr(&md, " deep\n");
	for (i = 0; i < 200; i++)
		buf_addf(&md, "%*s- level\n", (int)(i * 2), "");
	markdown_render(&out, md.buf, md.len);
	assert_non_null(strstr(out.buf, "deep"));
	assert_non_null(strstr(out.buf, "level"));
	buf_release(&md);
	buf_release(&out);
}

/* A stream shows each line once it ends, and the same as rendering the whole. */
static void test_markdown_stream_lines(void **state)
{
	struct markdown_stream *m = markdown_stream_new();
	struct buf out = BUF_INIT;
	int open;
	char *got;

	(void)state;
	/* a plain start is shown word by word */
	markdown_stream_feed(m, "Hello wor", 9, &out);
	assert_string_equal(out.buf, "Hello ");
	markdown_stream_feed(m, "ld, **bo", 8, &out);
	assert_string_equal(out.buf, "Hello world, ");
	markdown_stream_feed(m, "ld** end\n- it", 13, &out);
	/* "- it" is held: it may become a list item */
	assert_string_equal(out.buf, "Hello world, \033[1mbold\033[22m end\n");
	markdown_stream_feed(m, "em\n", 3, &out);
	assert_string_equal(out.buf, "Hello world, \033[1mbold\033[22m end\n\xe2\x80\xa2 item\n");
	/* a table waits for its end */
	buf_reset(&out);
	markdown_stream_feed(m, "| a | b |\n|---|---|\n| 1 | 2 |\n", 30, &out);
	assert_int_equal(out.len, 0);
	markdown_stream_feed(m, "\nAfter.\n", 8, &out);
	assert_non_null(strstr(out.buf, "\033[1ma\033[22m"));
	assert_non_null(strstr(out.buf, "After.\n"));
	open = markdown_stream_finish(m, &out);
	assert_false(open);
	markdown_stream_free(m);
	buf_release(&out);

	/* fed a byte at a time, the same as in one piece */
	{
		const char *md = "# Plan\n\nRun `make` **now**:\n\n1. build\n2. test_all\n\n"
				 "```sh\nmake\n```\n\nsnake_case_name and x_y stay\n";
		char *whole;

		got = streamed(md, 1, &open);
		whole = streamed(md, strlen(md), &open);
		assert_string_equal(got, whole);
		assert_non_null(strstr(got, "snake_case_name and x_y stay\n"));
		assert_non_null(strstr(got, "\\e[1m\\e[4mPlan"));
		free(whole);
		free(got);
	}
	/* a line shown in part whose rest would begin a block is still a paragraph */
	got = streamed("Steps - one\nItems 1. two\nNote # three\n", 1, &open);
	assert_string_equal(got, "Steps - one\nItems 1. two\nNote # three\n");
	free(got);
	/* text without a newline ends open */
	got = streamed("First part. Second part.", 5, &open);
	assert_string_equal(got, "First part. Second part.");
	assert_true(open);
	free(got);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Only the renderer's own SGR sequences reach the terminal: ESC [ digits ; m. */
static void assert_only_sgr(const struct buf *out)
{
	size_t i, k;

	for (i = 0; i < out->len; i++) {
		unsigned char c = (unsigned char)out->buf[i];

		if (c == '\033') {
			assert_true(i + 1 < out->len && out->buf[i + 1] == '[');
			for (k = i + 2; k < out->len && strchr("0123456789;", out->buf[k]); k++)
				;
			assert_true(k < out->len && out->buf[k] == 'm');
			i = k;
			continue;
		}
		if (c < 0x20 && c != '\n' && c != '\t')
			fail_msg("control byte 0x%02x at %zu", c, i);
		assert_true(c != 0x7f);
		if (c == 0xc2 && i + 1 < out->len)
			assert_false((unsigned char)out->buf[i + 1] >= 0x80 &&
				     (unsigned char)out->buf[i + 1] <= 0x9f);
	}
}

/* A long line or a long fence streamed in small pieces costs time in proportion, not squared. */
static void test_markdown_stream_long_input_in_pieces(void **state)
{
	struct buf md = BUF_INIT, out = BUF_INIT;
	struct markdown_stream *m;
	double t0;
	size_t i;

	(void)state;
	for (i = 0; i < (2u << 20); i++)
		buf_addch(&md, "abcdefg_*x"[i % 10]);
	buf_addstr(&md, "\n```\n");
	for (i = 0; i < 20000; i++)
		buf_addf(&md, "line %zu of a long code block\n", i);
	t0 = now();
	m = markdown_stream_new();
	for (i = 0; i < md.len; i += 7)
		markdown_stream_feed(m, md.buf + i, md.len - i < 7 ? md.len - i : 7, &out);
	markdown_stream_finish(m, &out);
	markdown_stream_free(m);
	/* a quadratic scan takes minutes here */
	assert_true(now() - t0 < 20.0);
	assert_non_null(strstr(out.buf, "line 19999 of a long code block\n"));
	buf_release(&md);
	buf_release(&out);
}

/* Random bytes in random pieces: no crash, and nothing but the renderer's styles is sent raw. */
static void test_markdown_stream_random_input(void **state)
{
	static const char alphabet[] = "ab #*_`~|-+>1.\n\n   \t[]()!<&;\\\033\a\r\xc2\x9b\xe2";
	unsigned seed = 12345;
	int round;

	(void)state;
	for (round = 0; round < 300; round++) {
		struct markdown_stream *m = markdown_stream_new();
		struct buf md = BUF_INIT, out = BUF_INIT, whole = BUF_INIT;
		size_t i, len;

		seed = seed * 1103515245u + 12345u;
		len = (seed >> 8) % 2000;
		for (i = 0; i < len; i++) {
			seed = seed * 1103515245u + 12345u;
			buf_addch(&md, alphabet[(seed >> 16) % (sizeof(alphabet) - 1)]);
		}
		for (i = 0; i < md.len;) {
			size_t n;

			seed = seed * 1103515245u + 12345u;
			n = 1 + (seed >> 16) % 40;
			if (n > md.len - i)
				n = md.len - i;
			markdown_stream_feed(m, md.buf + i, n, &out);
			i += n;
		}
		markdown_stream_finish(m, &out);
		markdown_stream_free(m);
		assert_only_sgr(&out);
		markdown_render(&whole, md.buf, md.len);
		assert_only_sgr(&whole);
		buf_release(&md);
		buf_release(&out);
		buf_release(&whole);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_markdown_inline),
		cmocka_unit_test(test_markdown_headings_and_blocks),
		cmocka_unit_test(test_markdown_lists),
		cmocka_unit_test(test_markdown_fence),
		cmocka_unit_test(test_markdown_table_aligned),
		cmocka_unit_test(test_markdown_escapes_in_code_are_shown),
		cmocka_unit_test(test_markdown_huge_table),
		cmocka_unit_test(test_markdown_unterminated_fence),
		cmocka_unit_test(test_markdown_deep_nesting),
		cmocka_unit_test(test_markdown_stream_lines),
		cmocka_unit_test(test_markdown_stream_long_input_in_pieces),
		cmocka_unit_test(test_markdown_stream_random_input),
	};

	return cmocka_run_group_tests_name("cli/markdown", tests, NULL, NULL);
}

/*
 * What the session shows, end to end on a pseudo-terminal against
 * build/mockllm: a command's last lines and its whole output (/last,
 * Ctrl-O, forgex log), the model's Markdown rendered with colour and left
 * byte for byte under NO_COLOR, forgex's warnings wrapped at word
 * boundaries to the terminal's width, /plan shown once, and `forgex run`
 * coloured like the session on a terminal and plain under NO_COLOR.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/scripted.h"
#include "helpers/term.h"
#include "helpers/testutil.h"

/* A command writing 20 lines ("row 1" .. "row 20") and exiting 3. */
#define TWENTY "{'tool_calls': [{'id': 'c1', 'name': 'run_command', 'arguments': {'argv': " \
	"['python3', '-c', 'import sys\\nfor i in range(1, 21): print(\\'row\\', i)\\n" \
	"sys.exit(3)']}}]}"

/* How many times `needle` is in `hay`. */
static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

static void test_show_command_tail_last_ctrl_o_and_log(void **state)
{
	struct fx f;
	struct tu_result r;
	size_t from, i;
	char *text, *id, want[64];

	(void)state;
	fx_start(&f, "{'steps': [" TWENTY ", {'text': 'It failed.'}]}", "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "run the script");
	text = term_between(&f.t, from, f.t.mark);
	/* the last 8 lines, dimmed, under the call; then the exit status */
	assert_non_null(strstr(text, "    \\e[2m... 12 earlier lines: /last or Ctrl-O shows the "
			       "whole output\\e[m\n"));
	for (i = 13; i <= 20; i++) {
		snprintf(want, sizeof(want), "    \\e[2mrow %zu\\e[m\n", i);
		assert_non_null(strstr(text, want));
	}
	assert_null(strstr(text, "row 12\\e"));
	assert_non_null(strstr(text, "    \\e[2mrow 20\\e[m\n  \\e[33m!\\e[m \\e[2mexit 3\\e[m"));
	assert_non_null(strstr(text, "It failed."));
	free(text);

	/* /last: all 20 */
	from = fx_say(&f, "/last");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "$ python3 -c "));
	assert_non_null(strstr(text, "(exit 3, 20 lines)"));
	for (i = 1; i <= 20; i++) {
		snprintf(want, sizeof(want), "\nrow %zu\n", i);
		assert_non_null(strstr(text, want));
	}
	free(text);

	/* Ctrl-O at the empty prompt: the same */
	term_send(&f.t, "\017");
	term_expect(&f.t, "/last\r\n");
	from = f.t.mark;
	term_prompt(&f.t);
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "(exit 3, 20 lines)"));
	for (i = 1; i <= 20; i++) {
		snprintf(want, sizeof(want), "\nrow %zu\n", i);
		assert_non_null(strstr(text, want));
	}
	free(text);
	id = term_banner_id(&f.t);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);

	/* forgex log SESSION: the command's output under its event */
	SC_FORGEX(&r, &f.p, "log", id);
	assert_int_equal(r.status, 0);
	for (i = 1; i <= 20; i++) {
		snprintf(want, sizeof(want), "       | row %zu\n", i);
		assert_non_null(strstr(r.out.buf, want));
	}
	tu_result_release(&r);
	free(id);
	fx_release(&f);
}

#define MD "# Title\n\nSome **bold** and `code`.\n\n```python\nprint(1)\n```\n\n- one\n- two\n\n" \
	"| a | bb |\n|---|---|\n| 1 | 2 |\n"

static void test_show_markdown_rendered_and_raw_with_no_color(void **state)
{
	struct fx f;
	size_t from;
	char *text, *script = xstrfmt("{'steps': [{'text': %s, 'delta_chars': 7}]}",
				      "'# Title\\n\\nSome **bold** and `code`.\\n\\n```python\\n"
				      "print(1)\\n```\\n\\n- one\\n- two\\n\\n"
				      "| a | bb |\\n|---|---|\\n| 1 | 2 |\\n'");

	(void)state;
	fx_start(&f, script, "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "show markdown");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "\\e[1m\\e[4mTitle\\e[24m\\e[22m\n"));
	assert_non_null(strstr(text, "Some \\e[1mbold\\e[22m and \\e[36mcode\\e[39m.\n"));
	assert_non_null(strstr(text, "\\e[2m```python\\e[22m\nprint(1)\n\\e[2m```\\e[22m\n"));
	assert_non_null(strstr(text, "\xe2\x80\xa2 one\n\xe2\x80\xa2 two\n"));
	/* the table: columns aligned, the header bold */
	assert_non_null(strstr(text, "\\e[1ma\\e[22m\\e[2m \xe2\x94\x82 \\e[22m\\e[1mbb\\e[22m\n"));
	assert_non_null(strstr(text, "1\\e[2m \xe2\x94\x82 \\e[22m2\n"));
	assert_null(strstr(text, "**bold**"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);

	/* NO_COLOR: byte for byte as the model sent it */
	fx_start(&f, script, "auto");
	sc_proj_env(&f.p, "NO_COLOR=1");
	fx_chat(&f, NULL);
	from = fx_say(&f, "show markdown");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, MD))
		fail_msg("not as sent:\n%s", text);
	assert_null(strstr(text, "\\e["));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
	free(script);
}

static void test_show_warning_wraps_at_word_boundaries(void **state)
{
	struct fx f;
	struct strvec rows = STRVEC_INIT;
	struct buf joined = BUF_INIT;
	size_t from, i;
	char *text, *link, *p;
	const char *w;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Hello.'}]}", "auto");
	/* AGENTS.md a link: it is not read, and a warning says so */
	link = xstrfmt("%s/AGENTS.md", f.p.dir);
	assert_int_equal(symlink("/nonexistent/instructions-elsewhere", link), 0);
	fx_chat(&f, NULL);
	term_resize(&f.t, 40, 60);
	from = fx_say(&f, "hi");
	text = term_between(&f.t, from, f.t.mark);
	w = strstr(text, "forgex: warning: ");
	if (!w)
		fail_msg("no warning:\n%s", text);
	/* its rows: up to the first that is not indented as a continuation */
	for (p = (char *)w; *p;) {
		size_t n = strcspn(p, "\n");

		if (rows.nr && strncmp(p, "  ", 2))
			break;
		{
			char *row = xstrndup(p, n);

			strvec_push(&rows, row);
			free(row);
		}
		p += n + (p[n] == '\n');
	}
	assert_true(rows.nr >= 2);
	for (i = 0; i < rows.nr; i++) {
		const char *s = rows.v[i];
		size_t cps = 0;

		for (; *s; s++)
			cps += ((unsigned char)*s & 0xc0) != 0x80;
		if (cps > 60)
			fail_msg("row %zu is %zu columns: '%s'", i, cps, rows.v[i]);
		/* each row ends at a word's end: the next begins a word */
		buf_addf(&joined, "%s%s", i ? " " : "", rows.v[i] + (i ? 2 : 0));
	}
	/* joined again at the spaces: the message whole, no word cut */
	assert_non_null(strstr(joined.buf, "AGENTS.md is (or passes through) a symbolic link; "));
	buf_release(&joined);
	strvec_clear(&rows);
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(link);
	fx_release(&f);
}

#define GO_PLAN "{'summary': 'Add a greeting module', 'steps': [{'id': '1', 'title': " \
	"'Write hello.py', 'description': 'hello() returns hi', 'files': ['hello.py']}], " \
	"'acceptance': ['hello() returns hi']}"

static void test_show_plan_once(void **state)
{
	struct fx f;
	size_t from;
	char *text;

	(void)state;
	fx_start(&f, "{'steps': [{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': "
		 GO_PLAN "}]}]}", "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "/plan add a hello module");
	text = term_between(&f.t, from, f.t.mark);
	if (count(text, "1. Write hello.py") != 1 || count(text, "plan: Add a greeting module") != 1)
		fail_msg("the plan not once:\n%s", text);
	assert_null(strstr(text, "\"steps\""));
	assert_non_null(strstr(text, "/go runs the pipeline on this plan"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

#define PASSING "{'steps': [" \
	"{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': " GO_PLAN "}]}," \
	"{'tool_calls': [{'id': 'b0', 'name': 'run_command', 'arguments': {'argv': " \
	"['python3', '-c', 'print(\\'built ok\\')']}}]}," \
	"{'tool_calls': [{'id': 'b1', 'name': 'finish', 'arguments': {'summary': 'ok'}}]}," \
	"{'tool_calls': [{'id': 'x1', 'name': 'finish', 'arguments': {'summary': 'ok'}}]}," \
	"{'tool_calls': [{'id': 's1', 'name': 'submit_verdict', 'arguments': " \
	"{'verdict': 'PASS', 'reasons': ['fine'], 'required_fixes': []}}]}]}"

static void test_show_run_coloured_on_a_terminal(void **state)
{
	static const char *const run[] = { "run", "say hello", NULL };
	struct fx f;
	char *text;

	(void)state;
	fx_start(&f, PASSING, "auto");
	term_start(&f.t, &f.p, run);
	term_wait(&f.t);
	text = term_shown(&f.t, 0);
	if (f.t.status || !strstr(text, "\\e[32m\\e[1mPASS: "))
		fail_msg("forgex run (%d):\n%s", f.t.status, text);
	/* the stages dimmed */
	assert_non_null(strstr(text, "\\e[2m==> architect\\e[m\n"));
	free(text);
	/* forgex log RUN: the Builder's command's output under its event */
	{
		struct tu_result r;

		SC_FORGEX(&r, &f.p, "log", "last");
		assert_int_equal(r.status, 0);
		if (!strstr(r.out.buf, " command ") || !strstr(r.out.buf, "\n       | built ok\n"))
			fail_msg("forgex log last:\n%s", r.out.buf);
		tu_result_release(&r);
	}
	fx_release(&f);

	/* NO_COLOR: the same words, no colour */
	fx_start(&f, PASSING, "auto");
	sc_proj_env(&f.p, "NO_COLOR=1");
	term_start(&f.t, &f.p, run);
	term_wait(&f.t);
	text = term_shown(&f.t, 0);
	if (f.t.status || !strstr(text, "\nPASS: "))
		fail_msg("forgex run (%d):\n%s", f.t.status, text);
	assert_non_null(strstr(text, "==> architect\n"));
	assert_null(strstr(text, "\\e[3"));
	assert_null(strstr(text, "\\e[2m"));
	free(text);
	fx_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_show_command_tail_last_ctrl_o_and_log, term_teardown),
		cmocka_unit_test_teardown(test_show_markdown_rendered_and_raw_with_no_color,
					  term_teardown),
		cmocka_unit_test_teardown(test_show_warning_wraps_at_word_boundaries, term_teardown),
		cmocka_unit_test_teardown(test_show_plan_once, term_teardown),
		cmocka_unit_test_teardown(test_show_run_coloured_on_a_terminal, term_teardown),
	};

	return cmocka_run_group_tests_name("e2e/chat_show", tests, NULL, NULL);
}

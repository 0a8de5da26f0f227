#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "tools/match.h"

#define assert_contains(hay, needle) \
	do { \
		const char *h_ = (hay), *n_ = (needle); \
		if (!strstr(h_, n_)) \
			fail_msg("expected to find \"%s\" in:\n%s", n_, h_); \
	} while (0)

static void test_match_tabs_and_crlf(void **state)
{
	struct match_result r = MATCH_RESULT_INIT;
	struct buf why = BUF_INIT;
	const char *text = "int f(void)\r\n{\r\n\tif (x)\r\n\t\treturn 1;\r\n\treturn 0;\r\n}\r\n";

	const char *old = "    if (x)\n        return 1;\n", *new_text = "    if (x && y)\n        return 2;\n";

	(void)state;
	/* LF and spaces from the model, CRLF and tabs in the file. */
	assert_int_equal(match_apply(&r, text, strlen(text), old, strlen(old), new_text,
				    strlen(new_text), 0, "f.c", &why), 0);
	assert_true(r.pass != MATCH_EXACT);
	assert_string_equal(r.text.buf,
			    "int f(void)\r\n{\r\n\tif (x && y)\r\n\t\treturn 2;\r\n\treturn 0;\r\n}\r\n");
	match_result_release(&r);
	buf_release(&why);
}

static void test_match_line_numbers(void **state)
{
	struct match_result r = MATCH_RESULT_INIT;
	struct buf why = BUF_INIT;
	const char *text = "a\nX\nb\nX\nc\nX\n";

	(void)state;
	/* Each replacement adds a line: later ones are numbered in the new text. */
	assert_int_equal(match_apply(&r, text, strlen(text), "X\n", 2, "Y\nY\n", 4, 1, "f", &why), 0);
	assert_string_equal(r.text.buf, "a\nY\nY\nb\nY\nY\nc\nY\nY\n");
	assert_int_equal(r.count, 3);
	assert_int_equal(r.lines[0], 2);
	assert_int_equal(r.lines[1], 5);
	assert_int_equal(r.lines[2], 8);
	match_result_release(&r);
	/* No match in an empty text. */
	assert_int_equal(match_apply(&r, "", 0, "x", 1, "y", 1, 0, "f", &why), FX_ENOTFOUND);
	assert_contains(why.buf, "empty");
	assert_int_equal(r.text.len, 0);
	buf_release(&why);
}


/*
 * The passes, case by case, through match_apply(). `pass` is the pass that
 * must have matched (for ret 0); `why` a text the explanation must hold
 * (for a refusal), so a refusal for another reason fails the case.
 */
struct match_case {
	const char *name;
	const char *text, *old, *new_text;
	int replace_all;
	int ret;
	const char *expect;	/* the new text (ret 0) */
	enum match_pass pass;
	const char *why;	/* in the explanation (ret < 0) */
};

static const struct match_case match_cases[] = {
	/* ---- line ends and the final newline ---- */
	{ "crlf file, LF old and new: stays CRLF",
	  "a\r\nb\r\nc\r\n", "b\nc\n", "B\nC\nD\n", 0, 0, "a\r\nB\r\nC\r\nD\r\n", MATCH_EXACT, NULL },
	{ "crlf file, exact CRLF old, LF new: the new lines get CRLF",
	  "a\r\nb\r\n", "a\r\n", "x\ny\n", 0, 0, "x\r\ny\r\nb\r\n", MATCH_EXACT, NULL },
	{ "LF file, CRLF new: LF",
	  "a\nb\n", "a\n", "x\r\ny\r\n", 0, 0, "x\ny\nb\n", MATCH_EXACT, NULL },
	{ "crlf file, replace_all with LF old",
	  "x = 1\r\ny\r\nx = 1\r\n", "x = 1\n", "x = 2\n", 1, 0, "x = 2\r\ny\r\nx = 2\r\n", MATCH_EXACT,
	  NULL },
	{ "final newline kept when new drops it",
	  "a\nb\n", "b\n", "c", 0, 0, "a\nc\n", MATCH_EXACT, NULL },
	{ "no final newline kept when new adds one",
	  "a\nb", "b", "c\n", 0, 0, "a\nc", MATCH_EXACT, NULL },
	{ "no final newline kept on a line pass at the end",
	  "x\ny  ", "y\n", "z\n", 0, 0, "x\nz", MATCH_TRAILING, NULL },
	{ "crlf file on a line pass: CRLF",
	  "if (a)  \r\n\tb();\r\n", "if (a)\n\tb();\n", "if (a)\n\tc();\n", 0, 0,
	  "if (a)  \r\n\tc();\r\n", MATCH_TRAILING, NULL },
	{ "only line ends differ: nothing to do",
	  "a\r\nb\r\n", "a\r\n", "a\n", 0, FX_EINVAL, NULL, MATCH_EXACT, "leaves f as it is" },

	/* ---- trailing whitespace ---- */
	{ "trailing spaces in the file",
	  "x = 1   \ny = 2\n", "x = 1\ny = 2", "x = 3\ny = 2", 0, 0, "x = 3\ny = 2\n", MATCH_TRAILING,
	  NULL },
	{ "trailing pass ambiguous",
	  "a \nb\na\t\nb\n", "a\nb", "c", 0, FX_EINVAL, NULL, MATCH_EXACT,
	  "ignoring trailing whitespace it matches 2 places, at lines 1, 3" },

	/* ---- indentation ---- */
	/* Aider tests/basic/test_editblock.py test_replace_part_with_missing_leading_whitespace */
	{ "aider: missing leading whitespace",
	  "    line1\n    line2\n    line3\n", "line1\nline2\n", "new_line1\nnew_line2\n", 0, 0,
	  "    new_line1\n    new_line2\n    line3\n", MATCH_INDENT, NULL },
	/* Aider test_replace_part_with_just_some_missing_leading_whitespace */
	{ "aider: just some missing leading whitespace",
	  "    line1\n    line2\n    line3\n", " line1\n line2\n", " new_line1\n     new_line2\n", 0, 0,
	  "    new_line1\n        new_line2\n    line3\n", MATCH_INDENT, NULL },
	/* Aider test_replace_part_with_missing_varied_leading_whitespace */
	{ "aider: missing varied leading whitespace",
	  "\n    line1\n    line2\n        line3\n    line4\n", "line2\n    line3\n",
	  "new_line2\n    new_line3\n", 0, 0,
	  "\n    line1\n    new_line2\n        new_line3\n    line4\n", MATCH_INDENT, NULL },
	/* Aider test_replace_part_with_missing_leading_whitespace_including_blank_line */
	{ "aider: missing leading whitespace including a blank line",
	  "    line1\n    line2\n    line3\n", "\n  line1\n  line2\n", "  new_line1\n  new_line2\n", 0,
	  0, "    new_line1\n    new_line2\n    line3\n", MATCH_INDENT, NULL },
	{ "blank lines at the end of old that the file lacks",
	  "a\nb\nc\n", "b\n\n\n", "B\n\n\n", 0, 0, "a\nB\nc\n", MATCH_EXACT, NULL },
	/* issue 12: this wrote "    return 2" at the if's level, a SyntaxError */
	{ "issue 12: flattened python body, one line replaced",
	  "def f(x):\n    if x:\n        return 1\n    return 0\n", "if x:\nreturn 1", "if x:\nreturn 2", 0,
	  0, "def f(x):\n    if x:\n        return 2\n    return 0\n", MATCH_INDENT, NULL },
	{ "issue 12: flattened python body, both lines replaced one for one",
	  "def f(x):\n    if x:\n        return 1\n", "if x:\nreturn 1", "if y:\nreturn 2", 0, 0,
	  "def f(x):\n    if y:\n        return 2\n", MATCH_INDENT, NULL },
	{ "issue 12: flattened old, structured new: refused, not guessed",
	  "def f(x):\n    if x:\n        return 1\n", "if x:\nreturn 1",
	  "if x:\n    return 2\nelse:\n    return 3", 0, FX_EINVAL, NULL, MATCH_EXACT,
	  "does not correspond to the file's in one consistent way" },
	{ "issue 12: flattened old, insertion between lines of different depth: refused",
	  "def f(x):\n    if x:\n        return 1\n", "if x:\nreturn 1", "if x:\nprint(x)\nreturn 1", 0,
	  FX_EINVAL, NULL, MATCH_EXACT, "where line 2 of new_string belongs cannot be told" },
	{ "two-space model against a four-space file: indentation mapped level by level",
	  "def f():\n    for i in x:\n        g(i)\n", "for i in x:\n  g(i)\n",
	  "for i in x:\n  if i:\n    g(i)\n", 0, 0,
	  "def f():\n    for i in x:\n        if i:\n            g(i)\n", MATCH_INDENT, NULL },
	{ "model indents more than the file: shift taken away",
	  "a\n  b\n", "  a\n    b\n", "  a2\n    b\n", 0, 0, "a2\n  b\n", MATCH_INDENT, NULL },
	{ "model indents more, new line less than the shift: refused",
	  "a\n  b\n", "  a\n    b\n", " a2\n    b\n", 0, FX_EINVAL, NULL, MATCH_EXACT,
	  "has less indentation than the 2 spaces" },
	{ "model indents more, new line already at the file's indentation: written as it is",
	  "a\n  b\n", "  a\n    b\n", "a2\n    b\n", 0, 0, "a2\n  b\n", MATCH_INDENT, NULL },
	{ "kept lines are written as the file has them",
	  "\tif (x) {  \n\t\ty();\n\t}\n", "if (x) {\n    y();\n}\n", "if (x) {\n    z();\n}\n", 0, 0,
	  "\tif (x) {  \n\t\tz();\n\t}\n", MATCH_INDENT, NULL },

	/* ---- internal whitespace ---- */
	{ "runs of spaces inside a line",
	  "x  =  foo(a,   b)\nz\n", "x = foo(a, b)", "x = foo(a, c)", 0, 0, "x = foo(a, c)\nz\n",
	  MATCH_SPACES, NULL },
	{ "runs of spaces: ambiguous",
	  "f(a,  b)\nf(a,   b)\n", "f(a, b)", "g()", 0, FX_EINVAL, NULL, MATCH_EXACT,
	  "runs of spaces inside lines it matches 2 places" },
	{ "whitespace removed only by the near-miss matcher, which says so",
	  "f(a,b)\n", "f(a, b)", "g()", 0, 0, "g()\n", MATCH_NEAR, NULL },
	{ "a short line that differs beyond whitespace is not a near miss",
	  "count += 10\n", "count -= 10", "count = 0", 0, FX_ENOTFOUND, NULL, MATCH_EXACT,
	  "was not found" },

	/* ---- unicode punctuation ---- */
	{ "curly quotes and an en dash in the file",
	  "msg = \xe2\x80\x9chello\xe2\x80\x9d \xe2\x80\x93 done\nnext\n", "msg = \"hello\" - done",
	  "msg = \"bye\" - done", 0, 0, "msg = \"bye\" - done\nnext\n", MATCH_UNICODE, NULL },
	{ "no-break space and non-breaking hyphen, kept line untouched",
	  "a\xc2\xa0=\xc2\xa0" "1  # non\xe2\x80\x91" "breaking\nb = 2\n", "a = 1  # non-breaking\nb = 2",
	  "a = 1  # non-breaking\nb = 3", 0, 0,
	  "a\xc2\xa0=\xc2\xa0" "1  # non\xe2\x80\x91" "breaking\nb = 3\n", MATCH_UNICODE, NULL },
	/* OpenCode test/patch/patch.test.ts 'should match canonically equivalent unicode lines' */
	{ "canonical equivalence: the file in NFD, old_string in NFC",
	  "caf" "e\xcc\x81" " au lait\nnext\n", "caf\xc3\xa9 au lait", "tea", 0, 0, "tea\nnext\n",
	  MATCH_UNICODE, NULL },
	{ "canonical equivalence: combining marks in either order",
	  "a\xcc\x81\xcc\xa3\n", "a\xcc\xa3\xcc\x81", "b", 0, 0, "b\n", MATCH_UNICODE, NULL },
	/* OpenCode 'should not match compatibility-equivalent unicode lines' */
	{ "a compatibility form is other text: the ligature fi",
	  "of\xef\xac\x81" "ce\n", "office", "studio", 0, FX_ENOTFOUND, NULL, MATCH_EXACT,
	  "was not found" },
	{ "curly single quotes: ambiguous",
	  "it\xe2\x80\x99s\nit\xe2\x80\x98s\n", "it's", "it is", 0, FX_EINVAL, NULL, MATCH_EXACT,
	  "matches 2 places" },

	/* ---- escapes the model doubled ---- */
	{ "doubled quotes",
	  "print(\"hi\")\nx = 'a'\n", "print(\\\"hi\\\")", "print(\\\"bye\\\")", 0, 0,
	  "print(\"bye\")\nx = 'a'\n", MATCH_ESCAPES, NULL },
	{ "literal \\n for a line break",
	  "a\nb\n", "a\\nb", "a\\nc", 0, 0, "a\nc\n", MATCH_ESCAPES, NULL },
	{ "template literal with \\` and \\$",
	  "const s = `${x}`;\n", "const s = \\`\\${x}\\`;", "const s = \\`\\${y}\\`;", 0, 0,
	  "const s = `${y}`;\n", MATCH_ESCAPES, NULL },
	{ "single quote",
	  "say('no')\n", "say(\\'no\\')", "say(\\'yes\\')", 0, 0, "say('yes')\n", MATCH_ESCAPES, NULL },
	{ "a real escape in the file still matches exactly first",
	  "printf(\"a\\n\");\n", "printf(\"a\\n\");", "printf(\"b\\n\");", 0, 0,
	  "printf(\"b\\n\");\n", MATCH_EXACT, NULL },

	/* ---- OpenCode packages/opencode/test/tool/edit.test.ts ---- */
	{ "opencode: handles CRLF line endings",
	  "line1\r\nold\r\nline3", "old", "new", 0, 0, "line1\r\nnew\r\nline3", MATCH_EXACT, NULL },
	{ "opencode: handles multiline replacements",
	  "line1\nline2\nline3", "line2", "new line 2\nextra line", 0, 0,
	  "line1\nnew line 2\nextra line\nline3", MATCH_EXACT, NULL },
	/* OpenCode writes "updated\nblock" as given; forgex gives each line the
	 * indentation of the line it replaces one for one */
	{ "opencode: a line-trimmed unicode block",
	  "header\n  cafe\xcc\x81 \xf0\x9f\xa7\xaa  \n\t\xe6\x9d\xb1\xe4\xba\xac \xe2\x9c\xa8\nfooter\n",
	  "cafe\xcc\x81 \xf0\x9f\xa7\xaa\n\xe6\x9d\xb1\xe4\xba\xac \xe2\x9c\xa8", "updated\nblock", 0, 0,
	  "header\n  updated\n\tblock\nfooter\n", MATCH_INDENT, NULL },
	{ "opencode: rejects loose block-anchor matches",
	  "function configure() {\n  keepImportantState()\n  removeAllUserData()\n}",
	  "function configure() {\n  const enabled = true\n}",
	  "function configure() {\n  const enabled = false\n}", 0, FX_ENOTFOUND, NULL, MATCH_EXACT,
	  "was not found" },
	/* OpenCode's EscapeNormalizedReplacer case ("escape normalized match") */
	{ "opencode: escape normalized match",
	  "line1\nline2\nline3", "line1\\nline2\\nline3", "replaced", 0, 0, "replaced", MATCH_ESCAPES,
	  NULL },

	/* ---- letter case only as the last resort; the diff on no match ---- */
	{ "case differs: matched ignoring case, one place, new as sent",
	  "Hello World\n", "hello world", "bye", 0, 0, "bye\n", MATCH_CASE, NULL },
	{ "case differs in two places: refused, both listed",
	  "Hello World\nHELLO WORLD\n", "hello world", "bye", 0, FX_EINVAL, NULL, MATCH_EXACT,
	  "ignoring letter case (new_string was written as sent) it matches 2 places, at lines 1, 2" },
	{ "case differs, replace_all: never ignoring case",
	  "Hello World\n", "hello world", "bye", 1, FX_ENOTFOUND, NULL, MATCH_EXACT,
	  "never ignoring letter case" },
	{ "not found: the diff names the first differing column",
	  "int a = 1;\nint b = 2;\nint c = 3;\n", "int a = 1;\nint b = 39;\n", "x\n", 0, FX_ENOTFOUND,
	  NULL, MATCH_EXACT, " int a = 1;\n-int b = 39;\n+int b = 2;\n  (pair 1: from column 9 "
	  "old_string has '3', the file has '2')" },
	{ "not found: a tab against spaces is named",
	  "\tint a = 1;\n\treturn a;\n", "  int a = 1;\n  return bb;\n", "x\n", 0, FX_ENOTFOUND, NULL,
	  MATCH_EXACT, "old_string has a space, the file has a tab" },
};

static void test_match_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(match_cases); i++) {
		const struct match_case *c = &match_cases[i];
		struct match_result r = MATCH_RESULT_INIT;
		struct buf why = BUF_INIT;
		int ret = match_apply(&r, c->text, strlen(c->text), c->old, strlen(c->old), c->new_text,
				     strlen(c->new_text), c->replace_all, "f", &why);

		if (ret != c->ret)
			fail_msg("%s: returned %d, expected %d; explanation:\n%s", c->name, ret, c->ret,
				 why.buf);
		if (!ret) {
			if (strcmp(r.text.buf, c->expect))
				fail_msg("%s: wrote\n[%s]\nexpected\n[%s]", c->name, r.text.buf, c->expect);
			if (r.pass != c->pass)
				fail_msg("%s: matched by pass %d (%s), expected %d", c->name, (int)r.pass,
					 match_pass_name(r.pass), (int)c->pass);
		} else {
			if (r.text.len)
				fail_msg("%s: a refusal left text behind", c->name);
			if (!strstr(why.buf, c->why))
				fail_msg("%s: expected \"%s\" in:\n%s", c->name, c->why, why.buf);
		}
		match_result_release(&r);
		buf_release(&why);
	}
}


/* The matchers added for issue 21, one by one, through match_apply_at(). */
static const struct chain_case {
	const char *name, *text, *old, *new_text;
	int replace_all;
	size_t start_line;
	int ret;
	const char *expect;	/* the new text, or what the explanation holds */
	enum match_pass pass;
} chain_cases[] = {
	{ "line numbers N<TAB> removed from old and new", "a\nb\nc\n", "     2\tb\n     3\tc\n",
	  "     2\tB\n     3\tc\n", 0, 0, 0, "a\nB\nc\n", MATCH_LINENO },
	{ "line numbers 'N | ' removed from old; new without any kept", "x = 1\ny = 2\n",
	  "1 | x = 1\n2 | y = 2", "x = 1\ny = 3", 0, 0, 0, "x = 1\ny = 3\n", MATCH_LINENO },
	{ "line numbers not one after the other: not a read, not removed", "a\nb\n", "1 | a\n3 | b",
	  "a\nc", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "line numbers of a read choose among repeated lines", "x\ny\nx\ny\n", "3\tx\n4\ty",
	  "3\tz\n4\ty", 0, 0, 0, "x\ny\nz\ny\n", MATCH_LINENO },
	{ "start_line chooses the occurrence starting there", "x\nx\nx\n", "x\n", "y\n", 0, 2, 0,
	  "x\ny\nx\n", MATCH_EXACT },
	{ "start_line within no occurrence: refused, all listed", "x\na\nx\n", "x\n", "y\n", 0, 2,
	  FX_EINVAL, "start_line 2 is not within exactly one of them", MATCH_EXACT },
	{ "no start_line with repeats: the hint names it", "x\nx\n", "x\n", "y\n", 0, 0, FX_EINVAL,
	  "Or give start_line", MATCH_EXACT },
	{ "start_line on a normal-form match", "  x\n  y\n  x\n  y\n", "x\ny", "z\ny", 0, 3, 0,
	  "  x\n  y\n  z\n  y\n", MATCH_INDENT },
	{ "replace_all on lines matched ignoring indentation", "  a\n  b\n  c\n  a\n  b\n", "a\nb",
	  "x\nb", 1, 0, 0, "  x\n  b\n  c\n  x\n  b\n", MATCH_INDENT },
	{ "near miss: a missing comma in a passage of four lines",
	  "f(\n  one,\n  two\n)\n", "f(\n  one\n  two\n)", "f(\n  one,\n  three\n)", 0, 0, 0,
	  "f(\n  one,\n  three\n)\n", MATCH_NEAR },
	{ "near miss: two passages as close, refused with both named",
	  "f(\n  one,\n  two\n)\nf(\n  one,\n  two\n)\n", "f(\n  one\n  two\n)", "g()", 0, 0,
	  FX_EINVAL, "2 passages are equally close to it (90% alike), at lines 1, 5", MATCH_EXACT },
	{ "near miss: two passages as close, start_line chooses",
	  "f(\n  one,\n  two\n)\nf(\n  one,\n  two\n)\n", "f(\n  one\n  two\n)", "g()", 0, 5,
	  0, "f(\n  one,\n  two\n)\ng()\n", MATCH_NEAR },
	{ "near miss: two passages as close, replace_all replaces each",
	  "f(\n  one,\n  two\n)\nf(\n  one,\n  two\n)\n", "f(\n  one\n  two\n)", "g()", 1, 0,
	  0, "g()\ng()\n", MATCH_NEAR },
	{ "near miss: a closer and a less close passage: the closer, not both",
	  "f(\n  one,\n  two\n)\nh(\n  one,\n  two;\n)\n", "f(\n  one\n  two\n)", "g()", 1, 0,
	  0, "g()\nh(\n  one,\n  two;\n)\n", MATCH_NEAR },
	{ "near miss: one quote for another is a slip",
	  "x\nprint(\"hello there\")\ny\n", "x\nprint('hello there')\ny", "x\nprint('bye')\ny", 0,
	  0, 0, "x\nprint('bye')\ny\n", MATCH_NEAR },
	{ "no whitespace: a one-line function for three lines",
	  "int f() {\n  return 1;\n}\nint g;\n", "int f(){return 1;}", "int f(){return 2;}", 0, 0,
	  0, "int f(){return 2;}\nint g;\n", MATCH_NOSPACE },
	{ "no whitespace: words run together are not a match",
	  "int f() {\n  return x;\n}\n", "int f(){returnx;}", "int f(){return 2;}", 0, 0,
	  FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "no whitespace: a passage of several lines",
	  "a(b, c);\nz\na(b,\n  c);\n", "a(b,c);\nz\na(b,c);", "q", 0, 0, 0, "q\n", MATCH_NOSPACE },
	{ "no whitespace: the same text twice is refused",
	  "call(alpha,\n beta);\ncall(alpha,\n  beta);\n", "call(alpha,beta);", "q", 0, 0,
	  FX_ENOTFOUND, "occurs 2 times", MATCH_EXACT },
	/* Gemini (distance 1 of 21), Roo at 0.9 and Zed (each line 80% alike) apply it too */
	{ "near miss: one value differs in a passage whose other line is the same",
	  "int a = 1;\nint b = 2;\n", "int a = 1;\nint b = 3;", "x", 0, 0, 0, "x\n", MATCH_NEAR },
	{ "near miss: two values differ in a passage of two lines: not one",
	  "int a = 1;\nint b = 2;\n", "int a = 7;\nint b = 3;", "x", 0, 0, FX_ENOTFOUND,
	  "was not found", MATCH_EXACT },
	{ "near miss: a line under 80% alike in a short passage: not one",
	  "int a = 1;\nint b = 2;\nint c = 3;\n", "int a = 1;\nint b = 39;\nint c = 3;", "x", 0, 0,
	  FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "new already at the file's indentation is not indented again",
	  "def f():\n    if x:\n        return 1\n", "if x:\n    return 1", "    if x:\n        return 2",
	  0, 0, 0, "def f():\n    if x:\n        return 2\n", MATCH_INDENT },
	{ "first line copied without its indentation, new a block like it",
	  "\n  function oldFunc() {\n    // some code\n  }", "function  oldFunc() {\n    // some code\n  }",
	  "function newFunc() {\n  // new code\n}", 0, 0, 0,
	  "\n  function newFunc() {\n    // new code\n  }", MATCH_SPACES },
	{ "a line number and nothing else is not stripped to nothing (found by the fuzzer)",
	  "\xe2\n\n\n\n\x04\n\n\x04", "1\t", "M ", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "a near miss whose lines cannot be placed says both (found by the fuzzer)",
	  "\n\v\xff\xff\n\xff", "\t\xff\t\xff\t\t\t", "\v\t\t\t\t\t\t\t\t\t\t\t\t\t\t\x7f\n8",
	  0, 0, FX_EINVAL, "are the only close passage, but: ", MATCH_EXACT },
	{ "a piece of a line with blanks around it", "say hello now\n", " hello ", " bye ", 0, 0, 0,
	  "say bye now\n", MATCH_EXACT },
	{ "a piece of a line with blank lines and blanks around it (Continue)",
	  "function test() {}\n", "\t\nfunction test()\n\t", "function run()", 0, 0, 0,
	  "function run() {}\n", MATCH_EXACT },
	{ "tabs sent for the file's \\t (OpenCode's escape-normalised replacer)",
	  "head\nvalue\\twith\\t tabs\nfoot\n", "value\twith\t tabs", "value\twith\t spaces", 0, 0, 0,
	  "head\nvalue\\twith\\t spaces\nfoot\n", MATCH_TABS },
	{ "tabs as indentation stay tabs",
	  "x\n\ty = \"a\\tb\"\n", "\ty = \"a\tb\"", "\ty = \"a\tc\"", 0, 0, 0,
	  "x\n\ty = \"a\\tc\"\n", MATCH_TABS },
	{ "one line for several takes the first's depth",
	  "if x:\n    if y:\n        a()\n", "if y:\na()", "b()", 0, 0, 0, "if x:\n    b()\n",
	  MATCH_INDENT },
	{ "one line for several: a replaced line left of the first is not placed",
	  "if x:\n        a()\n    b()\n", "a()\nb()", "c()", 0, 0, FX_EINVAL,
	  "cannot be told", MATCH_EXACT },
	{ "no whitespace at all: the file's words are glued too (Continue)",
	  "if (typeof a === 'number') {\n    return a;\n}\n", "if(typeofa==='number'){returna;}",
	  "return 0;", 0, 0, 0, "return 0;\n", MATCH_NOSPACE },
	{ "no whitespace: old_string ending its line ends the match at a line end",
	  "total = 0\ncount  = total + 1\n", "total = 0\ncount \n", "total = 0\n", 0, 0,
	  FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "no whitespace: Unicode spaces are whitespace",
	  "function\xc2\xa0process(input)\xe2\x80\x80{\n}\n", "functionprocess(input){}", "f(){}", 0, 0,
	  0, "f(){}\n", MATCH_NOSPACE },
	{ "letter case in a piece of a line (Continue)",
	  "Hello World\n", "hello", "Bye", 0, 0, 0, "Bye World\n", MATCH_CASE },
	{ "letter case in a piece of a line never cuts a word",
	  "sayHello()\n", "hello", "bye", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "letter case in a piece of a line: twice is not one place",
	  "Hello, HELLO\n", "hello", "bye", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "a mixed-line-end file: new_string takes the line ends of the text it replaces",
	  "line1\r\nline2\nline3", "\r\nline2", "\r\nLINE2", 0, 0, 0, "line1\r\nLINE2\nline3",
	  MATCH_EXACT },
	{ "near miss: an inner line copied with text added (Cline)",
	  "/**\n * the first line of the comment\n * the second line\n */\nfunction f() {}\n",
	  "/**\n * the first line of the comment.diff\n * the second line\n */\nfunction f() {}",
	  "g();", 0, 0, 0, "g();\n", MATCH_NEAR },
	{ "near miss: an inner line of the file's longer than the model's is not extended",
	  "/**\n * the first line of the comment.diff\n * the second line\n */\nfunction f() {}\n",
	  "/**\n * the first line\n * the second line\n */\nfunction f() {}",
	  "g();", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "near miss: the last line copied with the next line's text is not one",
	  "a(b, c);\nz\na(b,\n  c);\n", "a(b, c);\nz\na(b, c);", "q", 0, 0, 0, "q\n",
	  MATCH_NOSPACE },
	/* ---- a misspelt word in one line (Continue's typo cases) ---- */
	{ "misspelling: two letters swapped",
	  "x = 1\nlet total = getUserName(id);\n", "let total = getUserNaem(id);", "y", 0, 0, 0,
	  "x = 1\ny\n", MATCH_NEAR },
	{ "misspelling: a letter left out, with other spacing",
	  "log('Debug info');\n", "log( 'Debug nfo' );", "y", 0, 0, 0, "y\n", MATCH_NEAR },
	{ "misspelling: a letter added",
	  "const message = 'Hello';\n", "const messsage = 'Hello';", "y", 0, 0, 0, "y\n",
	  MATCH_NEAR },
	{ "misspelling: new_string spelt as old_string is written with the file's spelling",
	  "const message = 'Hello';\nlog(message);\n", "const mesage = 'Hello';",
	  "const mesage = 'Hello, all'; // mesage1 mesage", 0, 0, 0,
	  "const message = 'Hello, all'; // mesage1 message\nlog(message);\n", MATCH_NEAR },
	{ "misspelling in a passage of lines: new_string is written with the file's spelling",
	  "user.name = input;\nsave(user);\nlog(user);\n", "user.nmae = input;\nsave(user);",
	  "user.nmae = input.trim();\nsave(user);", 0, 0, 0,
	  "user.name = input.trim();\nsave(user);\nlog(user);\n", MATCH_NEAR },
	{ "misspelling: a spelling the file has elsewhere is another name",
	  "const counts = tally(words);\nuse(count);\n", "const count = tally(words);", "y", 0, 0,
	  FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "misspelling: a letter changed into another is another name",
	  "panel.setEnabled(user.isAdmin);\n", "panel.getEnabled(user.isAdmin);", "y", 0, 0,
	  FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "misspelling: a digit more is another name",
	  "const limit = config.retry1;\n", "const limit = config.retry12;", "y", 0, 0,
	  FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "misspelling: in a word of three letters it is another word",
	  "let cat = 1; let dog = 2;\n", "let cart = 1; let dog = 2;", "y", 0, 0, FX_ENOTFOUND,
	  "was not found", MATCH_EXACT },
	{ "misspelling: a line under 12 characters is too short to tell",
	  "go(info);\n", "go(inof);", "y", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "misspelling: two lines alike misspelt are two readings",
	  "a = getUserName(1);\nb = 2;\na = getUserName(1);\n", "a = getUserNaem(1);", "y", 0, 0,
	  FX_EINVAL, "equally close", MATCH_EXACT },
	/* ---- letter case of every script ---- */
	{ "letter case beyond ASCII: whole lines",
	  "# \xc3\x84nderungen\nx\n", "# \xc3\x84NDERUNGEN", "# neu", 0, 0, 0, "# neu\nx\n",
	  MATCH_CASE },
	{ "letter case beyond ASCII: the dotted capital I for i and a combining dot (Continue)",
	  "x \xc4\xb0 y", "i\xcc\x87", "R", 0, 0, 0, "x R y", MATCH_CASE },
	{ "letter case beyond ASCII: a piece never ends inside a folded character",
	  "x \xc4\xb0 y", "x i", "R", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "letter case beyond ASCII: the final sigma is a sigma",
	  "\xce\x9f\xce\x94\xce\x9f\xce\xa3 1\n", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82 1", "y", 0, 0,
	  0, "y\n", MATCH_CASE },
	/* ---- no whitespace: two words kept apart ---- */
	{ "no whitespace: two words of old_string's two lines in one line (OpenCode)",
	  "prefix alpha   beta suffix\ntail", "alpha\nbeta", "changed", 0, 0, 0,
	  "prefix changed suffix\ntail", MATCH_NOSPACE },
	{ "no whitespace: two words under 8 characters could be anywhere",
	  "x ab cd y\n", "ab\ncd", "q", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
	{ "no whitespace: one word of 10 characters could be anywhere",
	  "(alphabeta)\n", "(alpha\nbeta)", "q", 0, 0, FX_ENOTFOUND, "was not found", MATCH_EXACT },
};

static void test_match_chain(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(chain_cases); i++) {
		const struct chain_case *c = &chain_cases[i];
		struct match_result r = MATCH_RESULT_INIT;
		struct buf why = BUF_INIT;
		int ret = match_apply_at(&r, c->text, strlen(c->text), c->old, strlen(c->old),
					 c->new_text, strlen(c->new_text), c->replace_all, c->start_line,
					 "f", &why);

		if (ret != c->ret)
			fail_msg("%s: returned %d, expected %d; explanation:\n%s", c->name, ret, c->ret,
				 why.buf);
		if (!ret) {
			if (strcmp(r.text.buf, c->expect))
				fail_msg("%s: wrote\n[%s]\nexpected\n[%s]", c->name, r.text.buf, c->expect);
			if (r.pass != c->pass)
				fail_msg("%s: matched by pass %d (%s), expected %d", c->name, (int)r.pass,
					 match_pass_name(r.pass), (int)c->pass);
		} else if (!strstr(why.buf, c->expect)) {
			fail_msg("%s: expected \"%s\" in:\n%s", c->name, c->expect, why.buf);
		}
		match_result_release(&r);
		buf_release(&why);
	}
}

/* Placeholders: whole comment or parenthesised lines standing for code left out. */
static void test_match_placeholders(void **state)
{
	static const struct {
		const char *old, *new_text;
		size_t line;
	} cases[] = {
		{ "x", "(rest of methods ...)", 1 },
		{ "x", "a\n  // ... rest of methods ...\n", 2 },
		{ "x", "# ... existing code ...", 1 },
		{ "x", "(rest of code unchanged)", 1 },
		{ "x", "<!-- ... rest of the file unchanged ... -->", 1 },
		{ "x", "    // Lines 1-50 remain unchanged", 1 },
		{ "(rest of methods ...)", "(Rest of methods ...)", 0 },
		{ "x", "return v; // rest of methods ...", 0 },
		{ "x", "const s = \"(rest of methods ...)\";", 0 },
		{ "x", "...", 0 },
		{ "x", "# the rest of the code is unchanged by this flag", 0 },
		{ "x", "// ... alle anderen Methoden ...", 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct buf what = BUF_INIT;
		size_t got = match_find_placeholder(cases[i].old, strlen(cases[i].old), cases[i].new_text,
						    strlen(cases[i].new_text), &what);

		if (got != cases[i].line)
			fail_msg("'%s': line %zu, expected %zu", cases[i].new_text, got, cases[i].line);
		buf_release(&what);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_tabs_and_crlf),
		cmocka_unit_test(test_match_line_numbers),
		cmocka_unit_test(test_match_cases),
		cmocka_unit_test(test_match_chain),
		cmocka_unit_test(test_match_placeholders),
	};

	return cmocka_run_group_tests_name("tools/match", tests, NULL, NULL);
}

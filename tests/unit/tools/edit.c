#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "tools/edit.h"
#include "unit/tools/common.h"

static const char *py =
	"def total(items):\n"
	"    result = 0\n"
	"    for item in items:\n"
	"        if item > 0:\n"
	"            result += item\n"
	"    return result\n"
	"\n"
	"def count(items):\n"
	"    result = 0\n"
	"    for item in items:\n"
	"        result += 1\n"
	"    return result\n";

/* Edit `path` through the tool and return the status; the result is in t->out. */
static int edit(struct tt *t, const char *path, const char *old, const char *new_text, int all)
{
	return tt_callj(t, tt_builder(), "edit_file",
			json_pack("{s:s,s:s,s:s,s:b}", "path", path, "old_string", old,
				  "new_string", new_text, "replace_all", all));
}

static void test_edit_exact_unique(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "calc.py", py);
	assert_int_equal(edit(&t, "calc.py", "        if item > 0:\n", "        if item >= 0:\n", 0),
			 TOOL_OK);
	assert_contains(t.out.buf, "edited calc.py: 1 replacement, at line 4");
	assert_contains(t.out.buf, "     4\t        if item >= 0:\n");
	c = tu_read(t.ws, "calc.py");
	assert_non_null(strstr(c, "if item >= 0:"));
	assert_int_equal(strlen(c), strlen(py) + 1);
	free(c);
	assert_int_equal(t.ctx.changed.nr, 1);
	tt_teardown(&t);
}

/* The model got the indentation wrong: applied once, re-indented to the file. */
static void test_edit_wrong_indentation_applies_once(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "calc.py", py);
	/* Two-space indentation instead of the file's four and eight, and a trailing space. */
	assert_int_equal(edit(&t, "calc.py",
			      "  for item in items:\n    if item > 0:  \n      result += item\n",
			      "  for item in items:\n    if item > 0 and item < 100:\n"
			      "      result += item\n    else:\n      result -= 1\n", 0), TOOL_OK);
	assert_contains(t.out.buf, "1 replacement, at line 3");
	assert_contains(t.out.buf, "re-indented");
	c = tu_read(t.ws, "calc.py");
	assert_string_equal(c,
		"def total(items):\n"
		"    result = 0\n"
		"    for item in items:\n"
		"        if item > 0 and item < 100:\n"
		"            result += item\n"
		"        else:\n"
		"            result -= 1\n"
		"    return result\n"
		"\n"
		"def count(items):\n"
		"    result = 0\n"
		"    for item in items:\n"
		"        result += 1\n"
		"    return result\n");
	free(c);
	tt_teardown(&t);
}

static void test_edit_tabs_and_crlf(void **state)
{
	struct edit_result r = EDIT_RESULT_INIT;
	struct buf why = BUF_INIT;
	const char *text = "int f(void)\r\n{\r\n\tif (x)\r\n\t\treturn 1;\r\n\treturn 0;\r\n}\r\n";

	const char *old = "    if (x)\n        return 1;\n", *new_text = "    if (x && y)\n        return 2;\n";

	(void)state;
	/* LF and spaces from the model, CRLF and tabs in the file. */
	assert_int_equal(edit_apply(&r, text, strlen(text), old, strlen(old), new_text,
				    strlen(new_text), 0, "f.c", &why), 0);
	assert_true(r.pass != EDIT_EXACT);
	assert_string_equal(r.text.buf,
			    "int f(void)\r\n{\r\n\tif (x && y)\r\n\t\treturn 2;\r\n\treturn 0;\r\n}\r\n");
	edit_result_release(&r);
	buf_release(&why);
}

static void test_edit_ambiguous_writes_nothing(void **state)
{
	struct stat before, after;
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "calc.py", py);
	assert_int_equal(stat(tt_path(&t, "calc.py"), &before), 0);
	assert_int_equal(edit(&t, "calc.py", "    result = 0\n", "    result = 1\n", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "occurs 2 times in calc.py, at lines 2, 9");
	assert_contains(t.out.buf, "replace_all");
	assert_contains(t.out.buf, "     2\t    result = 0\n");
	assert_contains(t.out.buf, "     9\t    result = 0\n");
	/* Not even whitespace-tolerantly unique: also refused, with both places. */
	assert_int_equal(edit(&t, "calc.py", "result = 0\nfor item in items:\n", "x\n", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "matches 2 places, at lines 2, 9");
	c = tu_read(t.ws, "calc.py");
	assert_string_equal(c, py);
	free(c);
	assert_int_equal(stat(tt_path(&t, "calc.py"), &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);	/* not even rewritten */
	assert_int_equal(t.ctx.changed.nr, 0);
	/* replace_all changes both. */
	assert_int_equal(edit(&t, "calc.py", "    result = 0\n", "    result = 1\n", 1), TOOL_OK);
	assert_contains(t.out.buf, "2 replacements, at line 2, 9");
	c = tu_read(t.ws, "calc.py");
	assert_null(strstr(c, "result = 0"));
	free(c);
	tt_teardown(&t);
}

static void test_edit_not_found_shows_closest(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "calc.py", py);
	assert_int_equal(edit(&t, "calc.py", "    for itm in items:\n        result += 2\n",
			      "    pass\n", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "was not found in calc.py");
	/* The best passage is lines 10-11 (one letter and one digit off), shown numbered. */
	assert_contains(t.out.buf, "--- lines 10-11 (");
	assert_contains(t.out.buf, "    10\t    for item in items:\n    11\t        result += 1\n");
	{
		const char *first = strstr(t.out.buf, "--- lines");

		assert_non_null(first);
		assert_int_equal(strncmp(first, "--- lines 10-11", 15), 0);
	}
	c = tu_read(t.ws, "calc.py");
	assert_string_equal(c, py);
	free(c);
	tt_teardown(&t);
}

static void test_edit_create_with_empty_old(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	assert_int_equal(edit(&t, "pkg/new.py", "", "print('hi')\n", 0), TOOL_OK);
	assert_contains(t.out.buf, "created pkg/new.py");
	c = tu_read(t.ws, "pkg/new.py");
	assert_string_equal(c, "print('hi')\n");
	free(c);
	assert_int_equal(edit(&t, "pkg/new.py", "", "other\n", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "exists and is not empty");
	c = tu_read(t.ws, "pkg/new.py");
	assert_string_equal(c, "print('hi')\n");
	free(c);
	tu_write(t.ws, "empty.txt", "");
	assert_int_equal(edit(&t, "empty.txt", "", "filled\n", 0), TOOL_OK);
	c = tu_read(t.ws, "empty.txt");
	assert_string_equal(c, "filled\n");
	free(c);
	tt_teardown(&t);
}

static void test_edit_refusals(void **state)
{
	struct tt t;
	int fd;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "same\n");
	assert_int_equal(edit(&t, "a.txt", "same", "same", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "nothing to change");
	assert_int_equal(edit(&t, "missing.txt", "x", "y", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "does not exist");
	fd = open(tt_path(&t, "b.bin"), O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "ab\0cd", 5), 5);
	close(fd);
	assert_int_equal(edit(&t, "b.bin", "ab", "xy", 0), TOOL_FAILED);
	assert_contains(t.out.buf, "binary");
	assert_int_equal(edit(&t, "a.txt", "nowhere", "x", 1), TOOL_FAILED);
	assert_contains(t.out.buf, "replace_all needs exact occurrences");
	assert_int_equal(t.ctx.changed.nr, 0);
	tt_teardown(&t);
}

static void test_edit_keeps_mode_and_follows_inner_link(void **state)
{
	struct stat st;
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "run.sh", "#!/bin/sh\necho one\n");
	assert_int_equal(chmod(tt_path(&t, "run.sh"), 0755), 0);
	assert_int_equal(symlink("run.sh", tt_path(&t, "link.sh")), 0);
	assert_int_equal(edit(&t, "link.sh", "echo one", "echo two", 0), TOOL_OK);
	c = tu_read(t.ws, "run.sh");
	assert_string_equal(c, "#!/bin/sh\necho two\n");
	free(c);
	assert_int_equal(stat(tt_path(&t, "run.sh"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(lstat(tt_path(&t, "link.sh"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	tt_teardown(&t);
}

/*
 * The model saw .env redacted: writing back what it saw would replace the
 * secret with the placeholder. Editing around the secret works.
 */
static void test_edit_never_writes_the_redaction_placeholder(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, ".env", "DEBUG=0\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", ".env", "content",
					    "DEBUG=1\nAWS_SECRET_ACCESS_KEY=[REDACTED]\n")), TOOL_FAILED);
	assert_non_null(strstr(t.out.buf, "stands for a secret forgex hid from you"));
	assert_int_equal(edit(&t, ".env", "DEBUG=0\nAWS_SECRET_ACCESS_KEY=[REDACTED]",
			      "DEBUG=1\nAWS_SECRET_ACCESS_KEY=[REDACTED]", 0), TOOL_FAILED);
	assert_int_equal(edit(&t, ".env", "DEBUG=0", "DEBUG=1\nX=[REDACTED]", 0), TOOL_FAILED);
	assert_non_null(strstr(t.out.buf, "stands for a secret forgex hid from you"));
	assert_int_equal(edit(&t, ".env", "DEBUG=0", "DEBUG=1", 0), TOOL_OK);
	c = tu_read(t.ws, ".env");
	assert_string_equal(c, "DEBUG=1\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n");
	free(c);
	/* a file that already says [REDACTED] may keep saying it */
	tu_write(t.ws, "doc.md", "output shows [REDACTED] here\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "doc.md", "content",
					    "output shows [REDACTED] there\n")), TOOL_OK);
	tt_teardown(&t);
}

static void test_edit_apply_line_numbers(void **state)
{
	struct edit_result r = EDIT_RESULT_INIT;
	struct buf why = BUF_INIT;
	const char *text = "a\nX\nb\nX\nc\nX\n";

	(void)state;
	/* Each replacement adds a line: later ones are numbered in the new text. */
	assert_int_equal(edit_apply(&r, text, strlen(text), "X\n", 2, "Y\nY\n", 4, 1, "f", &why), 0);
	assert_string_equal(r.text.buf, "a\nY\nY\nb\nY\nY\nc\nY\nY\n");
	assert_int_equal(r.count, 3);
	assert_int_equal(r.lines[0], 2);
	assert_int_equal(r.lines[1], 5);
	assert_int_equal(r.lines[2], 8);
	edit_result_release(&r);
	/* No match in an empty text. */
	assert_int_equal(edit_apply(&r, "", 0, "x", 1, "y", 1, 0, "f", &why), FX_ENOTFOUND);
	assert_contains(why.buf, "empty");
	assert_int_equal(r.text.len, 0);
	buf_release(&why);
}


/*
 * The passes, case by case, through edit_apply(). `pass` is the pass that
 * must have matched (for ret 0); `why` a text the explanation must hold
 * (for a refusal), so a refusal for another reason fails the case.
 */
struct edit_case {
	const char *name;
	const char *text, *old, *new_text;
	int replace_all;
	int ret;
	const char *expect;	/* the new text (ret 0) */
	enum edit_pass pass;
	const char *why;	/* in the explanation (ret < 0) */
};

static const struct edit_case edit_cases[] = {
	/* ---- line ends and the final newline ---- */
	{ "crlf file, LF old and new: stays CRLF",
	  "a\r\nb\r\nc\r\n", "b\nc\n", "B\nC\nD\n", 0, 0, "a\r\nB\r\nC\r\nD\r\n", EDIT_EXACT, NULL },
	{ "crlf file, exact CRLF old, LF new: the new lines get CRLF",
	  "a\r\nb\r\n", "a\r\n", "x\ny\n", 0, 0, "x\r\ny\r\nb\r\n", EDIT_EXACT, NULL },
	{ "LF file, CRLF new: LF",
	  "a\nb\n", "a\n", "x\r\ny\r\n", 0, 0, "x\ny\nb\n", EDIT_EXACT, NULL },
	{ "crlf file, replace_all with LF old",
	  "x = 1\r\ny\r\nx = 1\r\n", "x = 1\n", "x = 2\n", 1, 0, "x = 2\r\ny\r\nx = 2\r\n", EDIT_EXACT,
	  NULL },
	{ "final newline kept when new drops it",
	  "a\nb\n", "b\n", "c", 0, 0, "a\nc\n", EDIT_EXACT, NULL },
	{ "no final newline kept when new adds one",
	  "a\nb", "b", "c\n", 0, 0, "a\nc", EDIT_EXACT, NULL },
	{ "no final newline kept on a line pass at the end",
	  "x\ny  ", "y\n", "z\n", 0, 0, "x\nz", EDIT_TRAILING, NULL },
	{ "crlf file on a line pass: CRLF",
	  "if (a)  \r\n\tb();\r\n", "if (a)\n\tb();\n", "if (a)\n\tc();\n", 0, 0,
	  "if (a)  \r\n\tc();\r\n", EDIT_TRAILING, NULL },
	{ "only line ends differ: nothing to do",
	  "a\r\nb\r\n", "a\r\n", "a\n", 0, FX_EINVAL, NULL, EDIT_EXACT, "leaves f as it is" },

	/* ---- trailing whitespace ---- */
	{ "trailing spaces in the file",
	  "x = 1   \ny = 2\n", "x = 1\ny = 2", "x = 3\ny = 2", 0, 0, "x = 3\ny = 2\n", EDIT_TRAILING,
	  NULL },
	{ "trailing pass ambiguous",
	  "a \nb\na\t\nb\n", "a\nb", "c", 0, FX_EINVAL, NULL, EDIT_EXACT,
	  "ignoring trailing whitespace it matches 2 places, at lines 1, 3" },

	/* ---- indentation ---- */
	/* Aider tests/basic/test_editblock.py test_replace_part_with_missing_leading_whitespace */
	{ "aider: missing leading whitespace",
	  "    line1\n    line2\n    line3\n", "line1\nline2\n", "new_line1\nnew_line2\n", 0, 0,
	  "    new_line1\n    new_line2\n    line3\n", EDIT_INDENT, NULL },
	/* Aider test_replace_part_with_just_some_missing_leading_whitespace */
	{ "aider: just some missing leading whitespace",
	  "    line1\n    line2\n    line3\n", " line1\n line2\n", " new_line1\n     new_line2\n", 0, 0,
	  "    new_line1\n        new_line2\n    line3\n", EDIT_INDENT, NULL },
	/* Aider test_replace_part_with_missing_varied_leading_whitespace */
	{ "aider: missing varied leading whitespace",
	  "\n    line1\n    line2\n        line3\n    line4\n", "line2\n    line3\n",
	  "new_line2\n    new_line3\n", 0, 0,
	  "\n    line1\n    new_line2\n        new_line3\n    line4\n", EDIT_INDENT, NULL },
	/* Aider test_replace_part_with_missing_leading_whitespace_including_blank_line */
	{ "aider: missing leading whitespace including a blank line",
	  "    line1\n    line2\n    line3\n", "\n  line1\n  line2\n", "  new_line1\n  new_line2\n", 0,
	  0, "    new_line1\n    new_line2\n    line3\n", EDIT_INDENT, NULL },
	{ "blank lines at the end of old that the file lacks",
	  "a\nb\nc\n", "b\n\n\n", "B\n\n\n", 0, 0, "a\nB\nc\n", EDIT_EXACT, NULL },
	/* issue 12: this wrote "    return 2" at the if's level, a SyntaxError */
	{ "issue 12: flattened python body, one line replaced",
	  "def f(x):\n    if x:\n        return 1\n    return 0\n", "if x:\nreturn 1", "if x:\nreturn 2", 0,
	  0, "def f(x):\n    if x:\n        return 2\n    return 0\n", EDIT_INDENT, NULL },
	{ "issue 12: flattened python body, both lines replaced one for one",
	  "def f(x):\n    if x:\n        return 1\n", "if x:\nreturn 1", "if y:\nreturn 2", 0, 0,
	  "def f(x):\n    if y:\n        return 2\n", EDIT_INDENT, NULL },
	{ "issue 12: flattened old, structured new: refused, not guessed",
	  "def f(x):\n    if x:\n        return 1\n", "if x:\nreturn 1",
	  "if x:\n    return 2\nelse:\n    return 3", 0, FX_EINVAL, NULL, EDIT_EXACT,
	  "does not correspond to the file's in one consistent way" },
	{ "issue 12: flattened old, insertion between lines of different depth: refused",
	  "def f(x):\n    if x:\n        return 1\n", "if x:\nreturn 1", "if x:\nprint(x)\nreturn 1", 0,
	  FX_EINVAL, NULL, EDIT_EXACT, "where line 2 of new_string belongs cannot be told" },
	{ "two-space model against a four-space file: indentation mapped level by level",
	  "def f():\n    for i in x:\n        g(i)\n", "for i in x:\n  g(i)\n",
	  "for i in x:\n  if i:\n    g(i)\n", 0, 0,
	  "def f():\n    for i in x:\n        if i:\n            g(i)\n", EDIT_INDENT, NULL },
	{ "model indents more than the file: shift taken away",
	  "a\n  b\n", "  a\n    b\n", "  a2\n    b\n", 0, 0, "a2\n  b\n", EDIT_INDENT, NULL },
	{ "model indents more, new line less than the shift: refused",
	  "a\n  b\n", "  a\n    b\n", "a2\n    b\n", 0, FX_EINVAL, NULL, EDIT_EXACT,
	  "has less indentation than the 2 spaces" },
	{ "kept lines are written as the file has them",
	  "\tif (x) {  \n\t\ty();\n\t}\n", "if (x) {\n    y();\n}\n", "if (x) {\n    z();\n}\n", 0, 0,
	  "\tif (x) {  \n\t\tz();\n\t}\n", EDIT_INDENT, NULL },

	/* ---- internal whitespace ---- */
	{ "runs of spaces inside a line",
	  "x  =  foo(a,   b)\nz\n", "x = foo(a, b)", "x = foo(a, c)", 0, 0, "x = foo(a, c)\nz\n",
	  EDIT_SPACES, NULL },
	{ "runs of spaces: ambiguous",
	  "f(a,  b)\nf(a,   b)\n", "f(a, b)", "g()", 0, FX_EINVAL, NULL, EDIT_EXACT,
	  "runs of spaces inside lines it matches 2 places" },
	{ "whitespace is not removed, only runs folded",
	  "f(a,b)\n", "f(a, b)", "g()", 0, FX_ENOTFOUND, NULL, EDIT_EXACT, "was not found" },

	/* ---- unicode punctuation ---- */
	{ "curly quotes and an en dash in the file",
	  "msg = \xe2\x80\x9chello\xe2\x80\x9d \xe2\x80\x93 done\nnext\n", "msg = \"hello\" - done",
	  "msg = \"bye\" - done", 0, 0, "msg = \"bye\" - done\nnext\n", EDIT_UNICODE, NULL },
	{ "no-break space and non-breaking hyphen, kept line untouched",
	  "a\xc2\xa0=\xc2\xa0" "1  # non\xe2\x80\x91" "breaking\nb = 2\n", "a = 1  # non-breaking\nb = 2",
	  "a = 1  # non-breaking\nb = 3", 0, 0,
	  "a\xc2\xa0=\xc2\xa0" "1  # non\xe2\x80\x91" "breaking\nb = 3\n", EDIT_UNICODE, NULL },
	{ "curly single quotes: ambiguous",
	  "it\xe2\x80\x99s\nit\xe2\x80\x98s\n", "it's", "it is", 0, FX_EINVAL, NULL, EDIT_EXACT,
	  "matches 2 places" },

	/* ---- escapes the model doubled ---- */
	{ "doubled quotes",
	  "print(\"hi\")\nx = 'a'\n", "print(\\\"hi\\\")", "print(\\\"bye\\\")", 0, 0,
	  "print(\"bye\")\nx = 'a'\n", EDIT_ESCAPES, NULL },
	{ "literal \\n for a line break",
	  "a\nb\n", "a\\nb", "a\\nc", 0, 0, "a\nc\n", EDIT_ESCAPES, NULL },
	{ "template literal with \\` and \\$",
	  "const s = `${x}`;\n", "const s = \\`\\${x}\\`;", "const s = \\`\\${y}\\`;", 0, 0,
	  "const s = `${y}`;\n", EDIT_ESCAPES, NULL },
	{ "single quote",
	  "say('no')\n", "say(\\'no\\')", "say(\\'yes\\')", 0, 0, "say('yes')\n", EDIT_ESCAPES, NULL },
	{ "a real escape in the file still matches exactly first",
	  "printf(\"a\\n\");\n", "printf(\"a\\n\");", "printf(\"b\\n\");", 0, 0,
	  "printf(\"b\\n\");\n", EDIT_EXACT, NULL },

	/* ---- OpenCode packages/opencode/test/tool/edit.test.ts ---- */
	{ "opencode: handles CRLF line endings",
	  "line1\r\nold\r\nline3", "old", "new", 0, 0, "line1\r\nnew\r\nline3", EDIT_EXACT, NULL },
	{ "opencode: handles multiline replacements",
	  "line1\nline2\nline3", "line2", "new line 2\nextra line", 0, 0,
	  "line1\nnew line 2\nextra line\nline3", EDIT_EXACT, NULL },
	/* OpenCode writes "updated\nblock" as given; forgex gives each line the
	 * indentation of the line it replaces one for one */
	{ "opencode: a line-trimmed unicode block",
	  "header\n  cafe\xcc\x81 \xf0\x9f\xa7\xaa  \n\t\xe6\x9d\xb1\xe4\xba\xac \xe2\x9c\xa8\nfooter\n",
	  "cafe\xcc\x81 \xf0\x9f\xa7\xaa\n\xe6\x9d\xb1\xe4\xba\xac \xe2\x9c\xa8", "updated\nblock", 0, 0,
	  "header\n  updated\n\tblock\nfooter\n", EDIT_INDENT, NULL },
	{ "opencode: rejects loose block-anchor matches",
	  "function configure() {\n  keepImportantState()\n  removeAllUserData()\n}",
	  "function configure() {\n  const enabled = true\n}",
	  "function configure() {\n  const enabled = false\n}", 0, FX_ENOTFOUND, NULL, EDIT_EXACT,
	  "was not found" },
	/* OpenCode's EscapeNormalizedReplacer case ("escape normalized match") */
	{ "opencode: escape normalized match",
	  "line1\nline2\nline3", "line1\\nline2\\nline3", "replaced", 0, 0, "replaced", EDIT_ESCAPES,
	  NULL },

	/* ---- never case-insensitive; the diff on no match ---- */
	{ "case differs: not found",
	  "Hello World\n", "hello world", "bye", 0, FX_ENOTFOUND, NULL, EDIT_EXACT, "was not found" },
	{ "not found: the diff names the first differing column",
	  "int a = 1;\nint b = 2;\nint c = 3;\n", "int a = 1;\nint b = 3;\n", "x\n", 0, FX_ENOTFOUND,
	  NULL, EDIT_EXACT, " int a = 1;\n-int b = 3;\n+int b = 2;\n  (pair 1: from column 9 "
	  "old_string has '3', the file has '2')" },
	{ "not found: a tab against spaces is named",
	  "\tint a = 1;\n\treturn a;\n", "  int a = 1;\n  return b;\n", "x\n", 0, FX_ENOTFOUND, NULL,
	  EDIT_EXACT, "old_string has a space, the file has a tab" },
};

static void test_edit_cases(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(edit_cases); i++) {
		const struct edit_case *c = &edit_cases[i];
		struct edit_result r = EDIT_RESULT_INIT;
		struct buf why = BUF_INIT;
		int ret = edit_apply(&r, c->text, strlen(c->text), c->old, strlen(c->old), c->new_text,
				     strlen(c->new_text), c->replace_all, "f", &why);

		if (ret != c->ret)
			fail_msg("%s: returned %d, expected %d; explanation:\n%s", c->name, ret, c->ret,
				 why.buf);
		if (!ret) {
			if (strcmp(r.text.buf, c->expect))
				fail_msg("%s: wrote\n[%s]\nexpected\n[%s]", c->name, r.text.buf, c->expect);
			if (r.pass != c->pass)
				fail_msg("%s: matched by pass %d (%s), expected %d", c->name, (int)r.pass,
					 edit_pass_name(r.pass), (int)c->pass);
		} else {
			if (r.text.len)
				fail_msg("%s: a refusal left text behind", c->name);
			if (!strstr(why.buf, c->why))
				fail_msg("%s: expected \"%s\" in:\n%s", c->name, c->why, why.buf);
		}
		edit_result_release(&r);
		buf_release(&why);
	}
}

/* The case through the tool: the result names the pass; a refusal writes nothing. */
static void test_edit_pass_named_in_result(void **state)
{
	const char *body = "def f(x):\n    if x:\n        return 1\n    return 0\n";
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "m.py", body);
	assert_int_equal(edit(&t, "m.py", "if x:\nreturn 1", "if x:\n    return 2\nelse:\n    pass", 0),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "Nothing was written");
	c = tu_read(t.ws, "m.py");
	assert_string_equal(c, body);
	free(c);
	assert_int_equal(t.ctx.changed.nr, 0);
	assert_int_equal(edit(&t, "m.py", "if x:\nreturn 1", "if x:\nreturn 2", 0), TOOL_OK);
	assert_contains(t.out.buf, "(old_string matched ignoring indentation and trailing whitespace; "
			"new_string was re-indented to the file)");
	c = tu_read(t.ws, "m.py");
	assert_string_equal(c, "def f(x):\n    if x:\n        return 2\n    return 0\n");
	free(c);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edit_exact_unique),
		cmocka_unit_test(test_edit_never_writes_the_redaction_placeholder),
		cmocka_unit_test(test_edit_wrong_indentation_applies_once),
		cmocka_unit_test(test_edit_tabs_and_crlf),
		cmocka_unit_test(test_edit_ambiguous_writes_nothing),
		cmocka_unit_test(test_edit_not_found_shows_closest),
		cmocka_unit_test(test_edit_create_with_empty_old),
		cmocka_unit_test(test_edit_refusals),
		cmocka_unit_test(test_edit_keeps_mode_and_follows_inner_link),
		cmocka_unit_test(test_edit_apply_line_numbers),
		cmocka_unit_test(test_edit_cases),
		cmocka_unit_test(test_edit_pass_named_in_result),
	};

	return cmocka_run_group_tests_name("tools/edit", tests, NULL, NULL);
}

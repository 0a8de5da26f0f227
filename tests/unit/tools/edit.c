#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

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
	assert_contains(t.out.buf, "replace_all matches exactly, with whitespace");
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


/* start_line through the tool: chosen, named in the result, checked by the schema. */
static void test_edit_start_line(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "calc.py", py);
	assert_int_equal(tt_call(&t, tt_builder(), "edit_file",
				 "{\"path\":\"calc.py\",\"old_string\":\"    result = 0\\n\","
				 "\"new_string\":\"    result = 1\\n\",\"start_line\":9}"), TOOL_OK);
	assert_contains(t.out.buf, "at line 9");
	assert_contains(t.out.buf, "start_line 9 chose this one");
	c = tu_read(t.ws, "calc.py");
	assert_non_null(strstr(c, "def count(items):\n    result = 1\n"));
	assert_non_null(strstr(c, "def total(items):\n    result = 0\n"));
	free(c);
	assert_int_equal(tt_call(&t, tt_builder(), "edit_file",
				 "{\"path\":\"calc.py\",\"old_string\":\"x\",\"new_string\":\"y\","
				 "\"start_line\":0}"), TOOL_REFUSED);
	assert_contains(t.out.buf, "start_line");
	tt_teardown(&t);
}

/* A lazy placeholder is refused before anything is matched, and nothing is written. */
static void test_edit_placeholder_refused(void **state)
{
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "calc.py", py);
	assert_int_equal(edit(&t, "calc.py", "def count(items):\n    result = 0\n",
			      "def count(items):\n    # ... rest of the function unchanged ...\n", 0),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "line 2 of new_string, '# ... rest of the function unchanged ...', "
			"stands for code left out");
	c = tu_read(t.ws, "calc.py");
	assert_string_equal(c, py);
	free(c);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edit_exact_unique),
		cmocka_unit_test(test_edit_never_writes_the_redaction_placeholder),
		cmocka_unit_test(test_edit_wrong_indentation_applies_once),
		cmocka_unit_test(test_edit_ambiguous_writes_nothing),
		cmocka_unit_test(test_edit_not_found_shows_closest),
		cmocka_unit_test(test_edit_create_with_empty_old),
		cmocka_unit_test(test_edit_refusals),
		cmocka_unit_test(test_edit_keeps_mode_and_follows_inner_link),
		cmocka_unit_test(test_edit_pass_named_in_result),
		cmocka_unit_test(test_edit_start_line),
		cmocka_unit_test(test_edit_placeholder_refused),
	};

	return cmocka_run_group_tests_name("tools/edit", tests, NULL, NULL);
}

/* The TOML parser: values, lookups, positions, errors, limits, big input. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "config/toml.h"

/* Parse `text` (NUL-terminated) or fail the test with the error. */
static struct toml_value *parse_ok(const char *text)
{
	struct toml_value *doc = NULL;
	int r = toml_parse(&doc, text, strlen(text), "t.toml");

	if (r != 0)
		fail_msg("unexpected error %d: %s\n--- input:\n%s", r, err_last(), text);
	assert_non_null(doc);
	assert_int_equal(doc->type, TOML_TABLE);
	return doc;
}

/*
 * `len` bytes of `text` must fail with FX_EPARSE and exactly the message
 * "t.toml:`want`" (`want` starts with "LINE:COL: ").
 */
static void parse_fails_n(const char *text, size_t len, const char *want)
{
	struct toml_value *doc = NULL;
	const char *msg;
	int r;

	err_clear();
	r = toml_parse(&doc, text, len, "t.toml");
	if (r != FX_EPARSE)
		fail_msg("expected FX_EPARSE, got %d for:\n%s", r, text);
	assert_null(doc);
	msg = err_last();
	if (strncmp(msg, "t.toml:", 7) || strcmp(msg + 7, want))
		fail_msg("message\n  '%s'\nexpected\n  't.toml:%s'\nfor input:\n%s", msg, want, text);
}

static void parse_fails(const char *text, const char *want)
{
	parse_fails_n(text, strlen(text), want);
}

static const struct toml_value *get(const struct toml_value *t, const char *key,
				    enum toml_type type)
{
	const struct toml_value *v = toml_table_get(t, key);

	if (!v)
		fail_msg("no key '%s'", key);
	if (v->type != type)
		fail_msg("key '%s' is a %s, not a %s", key, toml_type_name(v->type), toml_type_name(type));
	return v;
}

static void test_toml_scalars(void **state)
{
	struct toml_value *doc;

	(void)state;
	doc = parse_ok(
		"dec = +1_000\n"
		"neg = -17\n"
		"zero = -0\n"
		"hex = 0xDEAD_beef\n"
		"oct = 0o755\n"
		"bin = 0b1101\n"
		"max = 9223372036854775807\n"
		"min = -9223372036854775808\n"
		"hexmax = 0x7fffffffffffffff\n"
		"f1 = 6.626e-34\n"
		"f2 = -3.141_592\n"
		"f3 = 1E3\n"
		"pinf = +inf\n"
		"ninf = -inf\n"
		"qnan = nan\n"
		"yes = true\n"
		"no = false\n"
		"odt = 1979-05-27T07:32:00.999999-07:00\n"
		"odt2 = 1979-05-27 07:32:00z\n"
		"ldt = 1979-05-27T00:32:00\n"
		"ld = 2000-02-29\n"
		"lt = 23:59:60.5\n");
	assert_int_equal(get(doc, "dec", TOML_INTEGER)->u.i, 1000);
	assert_int_equal(get(doc, "neg", TOML_INTEGER)->u.i, -17);
	assert_int_equal(get(doc, "zero", TOML_INTEGER)->u.i, 0);
	assert_int_equal(get(doc, "hex", TOML_INTEGER)->u.i, 0xdeadbeef);
	assert_int_equal(get(doc, "oct", TOML_INTEGER)->u.i, 0755);
	assert_int_equal(get(doc, "bin", TOML_INTEGER)->u.i, 13);
	assert_true(get(doc, "max", TOML_INTEGER)->u.i == INT64_MAX);
	assert_true(get(doc, "min", TOML_INTEGER)->u.i == INT64_MIN);
	assert_true(get(doc, "hexmax", TOML_INTEGER)->u.i == INT64_MAX);
	assert_true(get(doc, "f1", TOML_FLOAT)->u.f == 6.626e-34);
	assert_true(get(doc, "f2", TOML_FLOAT)->u.f == -3.141592);
	assert_true(get(doc, "f3", TOML_FLOAT)->u.f == 1000.0);
	assert_true(isinf(get(doc, "pinf", TOML_FLOAT)->u.f) && get(doc, "pinf", TOML_FLOAT)->u.f > 0);
	assert_true(isinf(get(doc, "ninf", TOML_FLOAT)->u.f) && get(doc, "ninf", TOML_FLOAT)->u.f < 0);
	assert_true(isnan(get(doc, "qnan", TOML_FLOAT)->u.f));
	assert_int_equal(get(doc, "yes", TOML_BOOL)->u.b, 1);
	assert_int_equal(get(doc, "no", TOML_BOOL)->u.b, 0);
	assert_string_equal(get(doc, "odt", TOML_DATETIME)->u.str.ptr, "1979-05-27T07:32:00.999999-07:00");
	assert_string_equal(get(doc, "odt2", TOML_DATETIME)->u.str.ptr, "1979-05-27 07:32:00z");
	assert_string_equal(get(doc, "ldt", TOML_DATETIME_LOCAL)->u.str.ptr, "1979-05-27T00:32:00");
	assert_string_equal(get(doc, "ld", TOML_DATE_LOCAL)->u.str.ptr, "2000-02-29");
	assert_int_equal(get(doc, "ld", TOML_DATE_LOCAL)->u.str.len, 10);
	assert_string_equal(get(doc, "lt", TOML_TIME_LOCAL)->u.str.ptr, "23:59:60.5");
	toml_free(doc);
}

static void test_toml_strings(void **state)
{
	struct toml_value *doc;
	const struct toml_value *v;

	(void)state;
	doc = parse_ok(
		"basic = \"tab\\there \\\"q\\\" \\\\ \\u00e9 \\U0001F600\"\n"
		"lit = 'C:\\no\\escapes'\n"
		"ml = \"\"\"\nfirst\r\n  second \\\n     third\"\"\"\n"
		"mlq = \"\"\"two \"\" quotes\"\"\"\"\"\n"
		"mll = '''\n'one' ''two'' '''\n"
		"empty = \"\"\n");
	assert_string_equal(get(doc, "basic", TOML_STRING)->u.str.ptr,
			    "tab\there \"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80");
	assert_string_equal(get(doc, "lit", TOML_STRING)->u.str.ptr, "C:\\no\\escapes");
	/* The first newline goes, CRLF becomes LF, a line-ending backslash eats the indent. */
	assert_string_equal(get(doc, "ml", TOML_STRING)->u.str.ptr, "first\n  second third");
	assert_string_equal(get(doc, "mlq", TOML_STRING)->u.str.ptr, "two \"\" quotes\"\"");
	assert_string_equal(get(doc, "mll", TOML_STRING)->u.str.ptr, "'one' ''two'' ");
	v = get(doc, "empty", TOML_STRING);
	assert_int_equal(v->u.str.len, 0);
	assert_string_equal(v->u.str.ptr, "");
	toml_free(doc);
}

static void test_toml_inline_tables(void **state)
{
	struct toml_value *doc;
	const struct toml_value *t, *v;

	(void)state;
	/* Newlines are fine inside values that allow them, even in { }. */
	doc = parse_ok("t = { a = [\n  1, # one\n  2,\n], s = \"\"\"x\ny\"\"\", e = {}, d.x = 1, d.y = 2 }\n");
	t = get(doc, "t", TOML_TABLE);
	assert_int_equal(t->u.tab.nr, 4);
	v = get(t, "a", TOML_ARRAY);
	assert_int_equal(v->u.arr.nr, 2);
	assert_int_equal(v->u.arr.items[1]->line, 3);
	assert_string_equal(get(t, "s", TOML_STRING)->u.str.ptr, "x\ny");
	assert_int_equal(get(t, "e", TOML_TABLE)->u.tab.nr, 0);
	assert_int_equal(get(get(t, "d", TOML_TABLE), "y", TOML_INTEGER)->u.i, 2);
	toml_free(doc);

	/* Arrays of inline tables, and inline tables nested in them. */
	doc = parse_ok("pts = [ { x = 1, y = { z = 2 } }, {} ]\n");
	v = get(doc, "pts", TOML_ARRAY);
	assert_int_equal(v->u.arr.nr, 2);
	assert_int_equal(get(get(v->u.arr.items[0], "y", TOML_TABLE), "z", TOML_INTEGER)->u.i, 2);
	toml_free(doc);

	parse_fails("t = { a = 1\n}", "1:12: expected ',' or '}' in an inline table, found end of line");
	parse_fails("t = { a.b = 1, a = 2 }", "1:16: duplicate key a (first defined at 1:7)");
	parse_fails("t = { a = { b = 1 }, a.c = 2 }", "1:22: cannot add to inline table a, written at 1:11");
}

static void test_toml_crlf_document(void **state)
{
	struct toml_value *doc;
	const struct toml_kv *kv;

	(void)state;
	doc = parse_ok("a = 1\r\n[t]\r\nb = '''\r\nl1\r\nl2'''\r\nc = [\r\n 3\r\n]\r\n");
	kv = toml_table_entry(toml_table_get(doc, "t"), "b");
	assert_int_equal(kv->line, 3);
	assert_string_equal(kv->value->u.str.ptr, "l1\nl2");
	kv = toml_table_entry(toml_table_get(doc, "t"), "c");
	assert_int_equal(kv->line, 6);
	assert_int_equal(kv->value->u.arr.items[0]->line, 7);
	assert_int_equal(kv->value->u.arr.items[0]->col, 2);
	toml_free(doc);
	/* A CR alone is not a line end, in a comment or a multi-line string. */
	parse_fails("a = 1 # x\ry\n", "1:10: a carriage return without a line feed in a comment");
	parse_fails("s = '''a\rb'''", "1:9: a carriage return without a line feed in a literal string");
}

static void test_toml_lookups(void **state)
{
	struct toml_value *doc;
	const struct toml_value *srv, *arr, *pt;
	const struct toml_kv *kv;

	(void)state;
	doc = parse_ok(
		"title = \"x\"\n"
		"[server]\n"
		"host = \"localhost\"\n"
		"ports = [ 8001, 8002 ]\n"
		"\"quoted key\".inner = 1\n"
		"[[points]]\n"
		"x = 1\n"
		"[[points]]\n"
		"x = 2\n"
		"[points.sub]\n"
		"y = 3\n");
	assert_int_equal(doc->u.tab.nr, 3);
	srv = get(doc, "server", TOML_TABLE);
	assert_string_equal(get(srv, "host", TOML_STRING)->u.str.ptr, "localhost");
	arr = get(srv, "ports", TOML_ARRAY);
	assert_int_equal(arr->u.arr.nr, 2);
	assert_int_equal(arr->u.arr.items[1]->u.i, 8002);
	assert_int_equal(get(get(srv, "quoted key", TOML_TABLE), "inner", TOML_INTEGER)->u.i, 1);
	kv = toml_table_entry(srv, "host");
	assert_non_null(kv);
	assert_string_equal(kv->key, "host");
	assert_int_equal(kv->keylen, 4);
	assert_ptr_equal(kv->value, toml_table_get(srv, "host"));

	arr = get(doc, "points", TOML_ARRAY);
	assert_int_equal(arr->u.arr.nr, 2);
	pt = arr->u.arr.items[1];
	assert_int_equal(get(pt, "x", TOML_INTEGER)->u.i, 2);
	assert_int_equal(get(get(pt, "sub", TOML_TABLE), "y", TOML_INTEGER)->u.i, 3);
	assert_null(toml_table_get(arr->u.arr.items[0], "sub"));

	/* Missing keys, non-tables and NULL are all "not found". */
	assert_null(toml_table_get(doc, "nope"));
	assert_null(toml_table_get(doc, "serve"));
	assert_null(toml_table_get(doc, ""));
	assert_null(toml_table_get(get(doc, "title", TOML_STRING), "x"));
	assert_null(toml_table_get(NULL, "x"));
	assert_null(toml_table_entry(NULL, "x"));
	toml_free(doc);
	toml_free(NULL);
}

static void test_toml_positions(void **state)
{
	struct toml_value *doc;
	const struct toml_kv *kv;
	const struct toml_value *t, *arr;

	(void)state;
	doc = parse_ok(
		"# comment\n"
		"a = 1\n"
		"\tb.c   =   \"x\"\r\n"
		"arr = [\n"
		"  10,\n"
		"      20 ]\n"
		"\n"
		"[tab . sub]\n"
		"k = { x = true }\n"
		"[[aot]]\n"
		"[[aot]]\n");
	kv = toml_table_entry(doc, "a");
	assert_int_equal(kv->line, 2);
	assert_int_equal(kv->col, 1);
	assert_int_equal(kv->value->line, 2);
	assert_int_equal(kv->value->col, 5);

	/* Columns count bytes: the tab is one. */
	kv = toml_table_entry(doc, "b");
	assert_int_equal(kv->line, 3);
	assert_int_equal(kv->col, 2);
	kv = toml_table_entry(kv->value, "c");
	assert_int_equal(kv->line, 3);
	assert_int_equal(kv->col, 4);
	assert_int_equal(kv->value->col, 12);

	arr = toml_table_get(doc, "arr");
	assert_int_equal(arr->line, 4);
	assert_int_equal(arr->col, 7);
	assert_int_equal(arr->u.arr.items[0]->line, 5);
	assert_int_equal(arr->u.arr.items[0]->col, 3);
	assert_int_equal(arr->u.arr.items[1]->line, 6);
	assert_int_equal(arr->u.arr.items[1]->col, 7);

	/* A table made by a header points at the header; its keys at themselves. */
	t = toml_table_get(toml_table_get(doc, "tab"), "sub");
	assert_int_equal(t->line, 8);
	assert_int_equal(t->col, 1);
	kv = toml_table_entry(toml_table_get(doc, "tab"), "sub");
	assert_int_equal(kv->line, 8);
	assert_int_equal(kv->col, 8);
	kv = toml_table_entry(toml_table_get(t, "k"), "x");
	assert_int_equal(kv->line, 9);
	assert_int_equal(kv->col, 7);
	assert_int_equal(kv->value->col, 11);

	arr = toml_table_get(doc, "aot");
	assert_int_equal(arr->u.arr.items[0]->line, 10);
	assert_int_equal(arr->u.arr.items[1]->line, 11);
	toml_free(doc);

	/* An implicit table takes the position of the header that defines it later. */
	doc = parse_ok("[x.y]\n[x]\n");
	assert_int_equal(toml_table_get(doc, "x")->line, 2);
	toml_free(doc);

	/* A byte order mark is skipped and does not shift columns. */
	doc = parse_ok("\xef\xbb\xbfkey = 1\n");
	kv = toml_table_entry(doc, "key");
	assert_int_equal(kv->line, 1);
	assert_int_equal(kv->col, 1);
	toml_free(doc);
}

static void test_toml_syntax_errors(void **state)
{
	(void)state;
	parse_fails("a = 1\nb = \n", "2:5: missing value");
	parse_fails("a = 1\nb = 2 c = 3\n", "2:7: expected the end of the line, found 'c'");
	parse_fails("x = [1, 2\n", "2:1: expected ',' or ']' after an array element, found end of file");
	parse_fails("x = [1,,2]", "1:8: expected a value, found ','");
	parse_fails("t = {a = 1,}", "1:12: a trailing comma is not allowed in an inline table");
	parse_fails("t = {a = 1,\n b = 2}", "1:12: expected a key, found end of line");
	parse_fails("s = \"abc\n", "1:9: end of line in a single-line string");
	parse_fails("s = \"\"\"abc", "1:5: unterminated multi-line string");
	parse_fails("s = \"a\\qb\"", "1:7: invalid escape sequence: backslash followed by 'q'");
	parse_fails("s = \"\\uD800\"", "1:6: \\uD800 is not a Unicode scalar value");
	parse_fails("s = \"\\U00110000\"", "1:6: \\U00110000 is not a Unicode scalar value");
	parse_fails("s = \"\\u12\"", "1:6: \\u needs 4 hexadecimal digits");
	parse_fails("s = 'a\x01'", "1:7: control character 0x01 in a literal string");
	parse_fails("a = 1 # bell \x07\n", "1:14: control character 0x07 in a comment");
	parse_fails("a = 1\rb = 2", "1:6: expected the end of the line, found a carriage return without a line feed");
	parse_fails("[a\nb = 1", "1:3: expected ']' to close the table header, found end of line");
	parse_fails("[[a]\n", "1:5: expected ']]' to close the table header, found end of line");
	parse_fails("= 1", "1:1: expected a key, found '='");
	parse_fails("k v = 1", "1:3: expected '=' after the key k, found 'v'");
	parse_fails("\"\"\"k\"\"\" = 1", "1:1: a multi-line string cannot be a key");
	parse_fails("b = True", "1:5: expected a value, found 'T'");
	parse_fails("s = \"\\\t\"", "1:6: invalid escape sequence: backslash followed by a tab");
	parse_fails("e = \xf0\x9f\x98\x80", "1:5: expected a value, found '\xf0\x9f\x98\x80'");
}

static void test_toml_number_and_date_errors(void **state)
{
	(void)state;
	parse_fails("i = 9223372036854775808", "1:5: integer '9223372036854775808' does not fit in 64 bits");
	parse_fails("i = -9223372036854775809", "1:5: integer '-9223372036854775809' does not fit in 64 bits");
	parse_fails("i = 0x8000000000000000", "1:5: integer '0x8000000000000000' does not fit in 64 bits");
	parse_fails("i = 012", "1:5: leading zeros are not allowed in '012'");
	parse_fails("i = 1__2", "1:5: misplaced underscore in number '1__2'");
	parse_fails("i = -0x1", "1:5: a sign is not allowed before '0x'");
	parse_fails("i = 0xg", "1:5: invalid number '0xg'");
	parse_fails("f = 1.", "1:5: a decimal point must be followed by digits in '1.'");
	parse_fails("f = 1e", "1:5: an exponent must have digits in '1e'");
	parse_fails("f = 1e400", "1:5: float '1e400' is out of range");
	parse_fails("f = Inf", "1:5: expected a value, found 'I'");
	parse_fails("d = 2001-02-29", "1:13: day 29 is out of range for 2001-02");
	parse_fails("d = 1900-02-29", "1:13: day 29 is out of range for 1900-02");
	parse_fails("d = 2024-04-31", "1:13: day 31 is out of range for 2024-04");
	parse_fails("d = 2024-13-01", "1:10: month 13 is out of range");
	parse_fails("d = 2024-01-01T24:00:00", "1:16: hour 24 is out of range");
	parse_fails("d = 2024-01-01T23:60:00", "1:19: minute 60 is out of range");
	parse_fails("t = 23:59:61", "1:11: second 61 is out of range");
	parse_fails("t = 12:00", "1:5: malformed time, expected HH:MM:SS");
	parse_fails("d = 2024-01-01T10:00:00+24:00", "1:24: time offset +24:00 is out of range");
	parse_fails("d = 2024-01-01T10:00:00+1:00", "1:24: malformed time offset, expected +HH:MM");
	parse_fails("d = 2024-1-01", "1:5: malformed date, expected YYYY-MM-DD");
	parse_fails("t = 10:00:00Z", "1:13: expected the end of the line, found 'Z'");
}

static void test_toml_redefinition_errors(void **state)
{
	(void)state;
	parse_fails("a = 1\na = 2\n", "2:1: duplicate key a (first defined at 1:1)");
	parse_fails("a = 1\n\"a\" = 2\n", "2:1: duplicate key a (first defined at 1:1)");
	parse_fails("t = {b = 1, b = 2}", "1:13: duplicate key b (first defined at 1:6)");
	parse_fails("[a]\n[a]\n", "2:1: table a is already defined at 1:1");
	parse_fails("[a]\nb = 1\n[a.b]\n", "3:1: cannot define table a.b: it is already an integer (at 2:1)");
	parse_fails("a = {}\n[a]\n", "2:1: table a is already defined as an inline table at 1:5");
	parse_fails("a = {b = 1}\na.c = 2\n", "2:1: cannot add to inline table a, written at 1:5");
	parse_fails("a = {b = {c = 1}}\n[a.b.d]\n", "2:2: cannot add to inline table a, written at 1:5");
	parse_fails("a.b = 1\n[a]\n", "2:1: table a is already defined by dotted keys at 1:1");
	parse_fails("[x]\na.b = 1\n[x.a]\n", "3:1: table x.a is already defined by dotted keys at 2:1");
	parse_fails("[a.b]\nz = 1\n[a]\nb.y = 2\n",
		    "4:1: dotted key cannot add to table b, defined by the header at 1:1");
	parse_fails("a = [1]\n[[a]]\n", "2:1: cannot append to a with [[...]]: it is an array value (at 1:1)");
	parse_fails("[a]\n[[a]]\n", "2:1: cannot make a an array of tables: it is already a table (at 1:2)");
	parse_fails("[[a]]\n[a]\n", "2:1: cannot define table a: it is already an array (at 1:3)");
	parse_fails("[[a.b]]\n[a]\nb.y = 2\n", "3:1: key b is already an array (at 1:5), not a table");
	parse_fails("a = 1\na.b = 2\n", "2:1: key a is already an integer (at 1:1), not a table");
	parse_fails("a = [{}]\n[a.b]\n", "2:2: key a is already an array (at 1:1), not a table");
	parse_fails("a = 1.5\na.b = 1\n", "2:1: key a is already a float (at 1:1), not a table");
	parse_fails("a = 10:00:00\n[a.b]\n", "2:2: key a is already a local time (at 1:1), not a table");
	parse_fails("a = 2000-01-01\n[[a]]\n",
		    "2:1: cannot make a an array of tables: it is already a local date (at 1:1)");
	parse_fails("[t]\n\"q\\\"k\" = 1\n'q\"k' = 2\n", "3:1: duplicate key \"q\\\"k\" (first defined at 2:1)");
}

static void test_toml_valid_table_rules(void **state)
{
	struct toml_value *doc;
	const struct toml_value *a;

	(void)state;
	/* A super-table may be defined after its sub-table, once. */
	doc = parse_ok("[a.b.c]\nx = 1\n[a]\ny = 2\n");
	a = get(doc, "a", TOML_TABLE);
	assert_int_equal(get(a, "y", TOML_INTEGER)->u.i, 2);
	assert_int_equal(get(get(get(a, "b", TOML_TABLE), "c", TOML_TABLE), "x", TOML_INTEGER)->u.i, 1);
	toml_free(doc);

	/* A header may add sub-tables under a table made by dotted keys. */
	doc = parse_ok("[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = true\n");
	a = get(get(doc, "fruit", TOML_TABLE), "apple", TOML_TABLE);
	assert_string_equal(get(a, "color", TOML_STRING)->u.str.ptr, "red");
	assert_true(get(get(a, "texture", TOML_TABLE), "smooth", TOML_BOOL)->u.b);
	toml_free(doc);

	/* Dotted keys in one section share their tables; mixed arrays are fine. */
	doc = parse_ok("a.b.c = 1\na.b.d = 2\na.e = [1, 'two', [3.0], {f = 4}]\n");
	a = get(doc, "a", TOML_TABLE);
	assert_int_equal(get(a, "b", TOML_TABLE)->u.tab.nr, 2);
	assert_int_equal(get(a, "e", TOML_ARRAY)->u.arr.nr, 4);
	toml_free(doc);

	/* Keys that look like numbers and quoted keys with dots. */
	doc = parse_ok("1.2 = 'x'\n\"a.b\" = 1\n'' = 2\n");
	assert_string_equal(get(get(doc, "1", TOML_TABLE), "2", TOML_STRING)->u.str.ptr, "x");
	assert_int_equal(get(doc, "a.b", TOML_INTEGER)->u.i, 1);
	assert_int_equal(get(doc, "", TOML_INTEGER)->u.i, 2);
	toml_free(doc);
}

static void test_toml_key_with_nul(void **state)
{
	const char text[] = "\"a\\u0000b\" = 1\n\"a\" = 2\n'x' = \"nul\\u0000in\"\n";
	struct toml_value *doc = parse_ok(text);
	const struct toml_kv *kv;
	const struct toml_value *v;

	(void)state;
	assert_int_equal(doc->u.tab.nr, 3);
	kv = &doc->u.tab.items[0];
	assert_int_equal(kv->keylen, 3);
	assert_memory_equal(kv->key, "a\0b", 4);
	assert_int_equal(kv->value->u.i, 1);
	/* By name, "a" is the other key: the NUL key does not shadow it. */
	assert_int_equal(get(doc, "a", TOML_INTEGER)->u.i, 2);
	v = get(doc, "x", TOML_STRING);
	assert_int_equal(v->u.str.len, 6);
	assert_memory_equal(v->u.str.ptr, "nul\0in", 7);
	toml_free(doc);

	/* Same bytes after the NUL make a duplicate; different bytes do not. */
	parse_fails("\"a\\u0000b\" = 1\n\"a\\u0000b\" = 2\n",
		    "2:1: duplicate key \"a\\u0000b\" (first defined at 1:1)");
	doc = parse_ok("\"a\\u0000b\" = 1\n\"a\\u0000c\" = 2\n");
	assert_int_equal(doc->u.tab.nr, 2);
	toml_free(doc);

	/* A raw NUL byte in the document is an error, not the end of input. */
	parse_fails_n("a = 1\0b = 2", 11, "1:6: expected the end of the line, found control character 0x00");
}

static void test_toml_utf8(void **state)
{
	struct toml_value *doc;

	(void)state;
	doc = parse_ok("\"caf\xc3\xa9\" = '\xe2\x82\xac \xf0\x9f\x98\x80' # \xc3\xa9\n");
	assert_string_equal(get(doc, "caf\xc3\xa9", TOML_STRING)->u.str.ptr, "\xe2\x82\xac \xf0\x9f\x98\x80");
	toml_free(doc);
	parse_fails("a = 1\nb = '\xc3('\n", "2:6: invalid UTF-8 (byte 0xc3)");
	parse_fails("# \xc0\xaf overlong\n", "1:3: invalid UTF-8 (byte 0xc0)");
	parse_fails("s = '\xed\xa0\x80'", "1:6: invalid UTF-8 (byte 0xed)");
	parse_fails("s = '\xf4\x90\x80\x80'", "1:6: invalid UTF-8 (byte 0xf4)");
	parse_fails("s = '\xe2\x82", "1:6: invalid UTF-8 (byte 0xe2)");
	parse_fails("a = 1\n\xef\xbb\xbf b = 2", "2:1: expected a key, found '\xef\xbb\xbf'");
}

static char *nested(const char *open, const char *mid, const char *close, int n)
{
	struct buf b = BUF_INIT;
	int i;

	buf_addstr(&b, "x = ");
	for (i = 0; i < n; i++)
		buf_addstr(&b, open);
	buf_addstr(&b, mid);
	for (i = 0; i < n; i++)
		buf_addstr(&b, close);
	buf_addch(&b, '\n');
	return buf_detach(&b, NULL);
}

static void test_toml_deep_nesting(void **state)
{
	struct toml_value *doc;
	const struct toml_value *v;
	struct buf b = BUF_INIT;
	char *text, want[128];
	int i;

	(void)state;
	/* TOML_MAX_DEPTH arrays under the root are fine... */
	text = nested("[", "1", "]", TOML_MAX_DEPTH);
	doc = parse_ok(text);
	v = toml_table_get(doc, "x");
	for (i = 1; i < TOML_MAX_DEPTH; i++)
		v = v->u.arr.items[0];
	assert_int_equal(v->u.arr.items[0]->type, TOML_INTEGER);
	toml_free(doc);
	free(text);

	/* ...one more is an error at the innermost bracket. */
	text = nested("[", "1", "]", TOML_MAX_DEPTH + 1);
	snprintf(want, sizeof(want), "1:%d: nesting deeper than %d tables and arrays",
		 5 + TOML_MAX_DEPTH, TOML_MAX_DEPTH);
	parse_fails(text, want);
	free(text);

	text = nested("{a=", "1", "}", TOML_MAX_DEPTH + 1);
	snprintf(want, sizeof(want), "1:%d: nesting deeper than %d tables and arrays",
		 5 + 3 * TOML_MAX_DEPTH, TOML_MAX_DEPTH);
	parse_fails(text, want);
	free(text);

	/* An unclosed flood of brackets stops at the limit, not the stack. */
	buf_addstr(&b, "x = ");
	for (i = 0; i < 200000; i++)
		buf_addch(&b, '[');
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	assert_non_null(strstr(err_last(), "nesting deeper than"));

	/* Headers and dotted keys count too: toml_free() recurses over them. */
	buf_reset(&b);
	buf_addch(&b, '[');
	for (i = 0; i < TOML_MAX_DEPTH + 1; i++)
		buf_addstr(&b, i ? ".k" : "k");
	buf_addstr(&b, "]\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	assert_non_null(strstr(err_last(), "nesting deeper than"));

	buf_reset(&b);
	for (i = 0; i < 100000; i++)
		buf_addstr(&b, "k.");
	buf_addstr(&b, "k = 1\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	assert_non_null(strstr(err_last(), "a key of more than"));

	/* A dotted key of TOML_MAX_DEPTH parts inside [a] goes one level too deep. */
	buf_reset(&b);
	buf_addstr(&b, "[a]\n");
	for (i = 0; i < TOML_MAX_DEPTH; i++)
		buf_addstr(&b, i ? ".k" : "k");
	buf_addstr(&b, " = []\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	assert_non_null(strstr(err_last(), "nesting deeper than"));

	/* The same with one more part: an intermediate table is too deep. */
	buf_reset(&b);
	buf_addstr(&b, "[a]\n");
	for (i = 0; i < TOML_MAX_DEPTH + 1; i++)
		buf_addstr(&b, i ? ".k" : "k");
	buf_addstr(&b, " = 1\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	snprintf(want, sizeof(want), "t.toml:2:%d: nesting deeper than %d tables and arrays",
		 2 * TOML_MAX_DEPTH - 1, TOML_MAX_DEPTH);
	assert_string_equal(err_last(), want);

	/* [[k.k...]]: the array fits, its element table does not. */
	buf_reset(&b);
	buf_addstr(&b, "[[");
	for (i = 0; i < TOML_MAX_DEPTH; i++)
		buf_addstr(&b, i ? ".k" : "k");
	buf_addstr(&b, "]]\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	assert_non_null(strstr(err_last(), "nesting deeper than"));

	/* A header through an array of tables counts the array's level. */
	buf_reset(&b);
	buf_addstr(&b, "[[a]]\n[a");
	for (i = 0; i < TOML_MAX_DEPTH; i++)
		buf_addstr(&b, ".k");
	buf_addstr(&b, "]\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "t.toml"), FX_EPARSE);
	assert_string_equal(err_last(), "t.toml:2:1: nesting deeper than 1000 tables and arrays");
	buf_release(&b);
}

static void test_toml_big_flat_table(void **state)
{
	enum { N = 200000 };
	struct buf b = BUF_INIT;
	struct toml_value *doc = NULL;
	const struct toml_kv *kv;
	int i;

	(void)state;
	for (i = 0; i < N; i++)
		buf_addf(&b, "key_%d = %d\n", i, i);
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "big.toml"), 0);
	assert_int_equal(doc->u.tab.nr, N);
	kv = toml_table_entry(doc, "key_123456");
	assert_non_null(kv);
	assert_int_equal(kv->line, 123457);
	assert_int_equal(kv->value->u.i, 123456);
	toml_free(doc);

	/* The duplicate at the very end is still found. */
	buf_addstr(&b, "key_7 = 0\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "big.toml"), FX_EPARSE);
	assert_string_equal(err_last(), "big.toml:200001:1: duplicate key key_7 (first defined at 8:1)");
	buf_release(&b);
}

static void test_toml_big_documents(void **state)
{
	enum { N = 50000 };
	struct buf b = BUF_INIT;
	struct toml_value *doc = NULL;
	const struct toml_value *arr;
	int i;

	(void)state;
	/* Many array-of-tables elements, each with a sub-table. */
	for (i = 0; i < N; i++)
		buf_addf(&b, "[[item]]\nid = %d\n[item.meta]\nname = \"n%d\"\n", i, i);
	/* One long array and one long string. */
	buf_addstr(&b, "[tail]\nnums = [");
	for (i = 0; i < N; i++)
		buf_addf(&b, "%d,%s", i, i % 10 ? " " : "\n");
	buf_addstr(&b, "]\ns = \"");
	for (i = 0; i < N; i++)
		buf_addstr(&b, "abc\\n");
	buf_addstr(&b, "\"\n");
	assert_int_equal(toml_parse(&doc, b.buf, b.len, "big.toml"), 0);
	arr = get(doc, "item", TOML_ARRAY);
	assert_int_equal(arr->u.arr.nr, N);
	assert_string_equal(get(get(arr->u.arr.items[N - 1], "meta", TOML_TABLE), "name", TOML_STRING)->u.str.ptr,
			    "n49999");
	assert_int_equal(arr->u.arr.items[N - 1]->line, 4 * (N - 1) + 1);
	assert_int_equal(get(get(doc, "tail", TOML_TABLE), "nums", TOML_ARRAY)->u.arr.nr, N);
	assert_int_equal(get(get(doc, "tail", TOML_TABLE), "s", TOML_STRING)->u.str.len, 4 * N);
	toml_free(doc);
	buf_release(&b);
}

static void test_toml_empty_and_blank(void **state)
{
	struct toml_value *doc = NULL;

	(void)state;
	assert_int_equal(toml_parse(&doc, NULL, 0, NULL), 0);
	assert_int_equal(doc->u.tab.nr, 0);
	toml_free(doc);
	doc = parse_ok("\n  \t\r\n# only a comment\n\n");
	assert_int_equal(doc->u.tab.nr, 0);
	toml_free(doc);
	doc = parse_ok("a = 1");	/* no final newline */
	assert_int_equal(get(doc, "a", TOML_INTEGER)->u.i, 1);
	toml_free(doc);
	/* A NULL name still gives a usable message. */
	assert_int_equal(toml_parse(&doc, "=", 1, NULL), FX_EPARSE);
	assert_string_equal(err_last(), "<toml>:1:1: expected a key, found '='");
	/* The size limit is checked before the data is read. */
	doc = NULL;
	assert_int_equal(toml_parse(&doc, "", (size_t)INT32_MAX + 1, "huge.toml"), FX_ELIMIT);
	assert_null(doc);
	assert_string_equal(err_last(), "huge.toml: document of 2147483648 bytes is too large");
}

static void test_toml_type_names(void **state)
{
	(void)state;
	assert_string_equal(toml_type_name(TOML_STRING), "string");
	assert_string_equal(toml_type_name(TOML_INTEGER), "integer");
	assert_string_equal(toml_type_name(TOML_FLOAT), "float");
	assert_string_equal(toml_type_name(TOML_BOOL), "boolean");
	assert_string_equal(toml_type_name(TOML_DATETIME), "offset date-time");
	assert_string_equal(toml_type_name(TOML_DATETIME_LOCAL), "local date-time");
	assert_string_equal(toml_type_name(TOML_DATE_LOCAL), "local date");
	assert_string_equal(toml_type_name(TOML_TIME_LOCAL), "local time");
	assert_string_equal(toml_type_name(TOML_ARRAY), "array");
	assert_string_equal(toml_type_name(TOML_TABLE), "table");
}

/*
 * Inputs that once crashed the parser. Each must now fail cleanly with the
 * message shown.
 */
static void test_toml_regressions(void **state)
{
	(void)state;
	/* The duplicate-key message read the key after it had been moved (NULL). */
	parse_fails("name = \"Tom\"\nname = \"Pradyun\"\n", "2:1: duplicate key name (first defined at 1:1)");
	parse_fails("a = {b.a = 1, b = 2, b.c = 3}", "1:15: duplicate key b (first defined at 1:6)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_toml_scalars),
		cmocka_unit_test(test_toml_strings),
		cmocka_unit_test(test_toml_inline_tables),
		cmocka_unit_test(test_toml_crlf_document),
		cmocka_unit_test(test_toml_lookups),
		cmocka_unit_test(test_toml_positions),
		cmocka_unit_test(test_toml_syntax_errors),
		cmocka_unit_test(test_toml_number_and_date_errors),
		cmocka_unit_test(test_toml_redefinition_errors),
		cmocka_unit_test(test_toml_valid_table_rules),
		cmocka_unit_test(test_toml_key_with_nul),
		cmocka_unit_test(test_toml_utf8),
		cmocka_unit_test(test_toml_deep_nesting),
		cmocka_unit_test(test_toml_big_flat_table),
		cmocka_unit_test(test_toml_big_documents),
		cmocka_unit_test(test_toml_empty_and_blank),
		cmocka_unit_test(test_toml_type_names),
		cmocka_unit_test(test_toml_regressions),
	};

	return cmocka_run_group_tests_name("config/toml", tests, NULL, NULL);
}

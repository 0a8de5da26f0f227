/*
 * Output nobody planned for: empty, binary, cut anywhere, enormous,
 * coloured, redrawn with carriage returns. Parsing never crashes, keeps
 * to its bounds, and falls back to the exit status with the output's tail.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "unit/verify/fixture.h"

static void parse_text(struct verify_result *r, const char *out, size_t len, int exit_code)
{
	struct verify_output o;

	memset(&o, 0, sizeof(o));
	o.out = out;
	o.out_len = len;
	o.exit_code = exit_code;
	verify_parse(r, &o);
}

/* What every result must satisfy, whatever the input. */
static void check_bounds(const struct verify_result *r)
{
	size_t i;

	assert_true(r->passed >= 0 && r->failed >= 0 && r->skipped >= 0 && r->errors >= 0);
	assert_true(r->tests_nr <= VERIFY_TESTS_MAX);
	assert_non_null(r->tail);
	assert_true(strlen(r->tail) <= VERIFY_TAIL_MAX);
	for (i = 0; i < r->tests_nr; i++) {
		const char *n = r->tests[i].name;
		size_t k;

		assert_non_null(n);
		assert_true(strlen(n) <= VERIFY_NAME_MAX);
		for (k = 0; n[k]; k++)
			assert_true((unsigned char)n[k] >= 0x20 && n[k] != 0x7f);
		if (r->tests[i].excerpt)
			assert_true(strlen(r->tests[i].excerpt) <= VERIFY_EXCERPT_MAX);
	}
	/* a named failure or a bad exit status is never a pass */
	if (verify_result_ok(r)) {
		assert_int_equal(verify_result_failing(r), 0);
		assert_int_equal(r->exit_code, 0);
	}
}

static void test_verify_empty_output_follows_exit_status(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;

	(void)state;
	parse_text(&r, "", 0, 0);
	check_bounds(&r);
	assert_true(verify_result_ok(&r));
	assert_int_equal(r.formats.nr, 0);
	assert_int_equal(r.tests_nr, 0);
	verify_result_release(&r);

	parse_text(&r, NULL, 0, 1);
	check_bounds(&r);
	assert_false(verify_result_ok(&r));
	assert_int_equal(r.errors, 1);
	assert_string_equal(r.tests[0].name, "(exit status 1)");
	verify_result_release(&r);
}

static void test_verify_unknown_output_keeps_tail(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	struct buf b = BUF_INIT;
	int i;

	(void)state;
	for (i = 0; i < 2000; i++)
		buf_addf(&b, "compiling unit %d\n", i);
	buf_addstr(&b, "linker: undefined reference to `frobnicate'\n");
	parse_text(&r, b.buf, b.len, 2);
	check_bounds(&r);
	assert_int_equal(r.formats.nr, 0);
	assert_int_equal(r.errors, 1);
	assert_int_equal(r.passed + r.failed + r.skipped, 0);
	/* the tail ends with the last line, starts on a line boundary */
	assert_non_null(strstr(r.tail, "undefined reference to `frobnicate'"));
	assert_null(strstr(r.tail, "compiling unit 1\n"));
	assert_true(!strncmp(r.tail, "compiling unit ", 15));
	assert_non_null(strstr(r.tests[0].excerpt, "frobnicate"));
	verify_result_release(&r);
	buf_release(&b);
}

static void test_verify_binary_garbage(void **state)
{
	uint32_t x = 2463534242u;
	char *junk = xmalloc(1 << 20);
	size_t i;
	int round;

	(void)state;
	for (round = 0; round < 4; round++) {
		struct verify_result r = VERIFY_RESULT_INIT;

		for (i = 0; i < 1 << 20; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* later rounds: mostly text-like bytes, with markers mixed in */
			if (round < 2)
				junk[i] = (char)x;
			else if (x % 7 == 0)
				junk[i] = '\n';
			else if (x % 5 == 0)
				junk[i] = '\x1b';
			else if (x % 3 == 0)
				junk[i] = '\r';
			else
				junk[i] = "ok #[=-_:.*1 "[x % 13];
		}
		parse_text(&r, junk, 1 << 20, 3);
		check_bounds(&r);
		assert_false(verify_result_ok(&r));
		verify_result_release(&r);
	}
	free(junk);
}

/* Every fixture cut at many places: no crash, bounds hold. */
static void test_verify_truncated_fixtures(void **state)
{
	static const char *const names[] = {
		"pytest/default", "pytest/verbose", "unittest/verbose", "go/json_fail",
		"go/verbose_fail", "cargo/fail", "node/tap_fail", "node/spec_fail",
		"jest/verbose", "vitest/fail", "ctest/fail", "cmocka/fail", "meson/fail_errorlogs",
		"tap/fail", "make/mixed", "mocha/fail", "automake/fail", "jest/jest25_fail",
		"unittest/docstrings", "node/dup_tap", "node/dup_spec", "node/size_limit",
		"vitest/dup",
	};
	size_t n, cut;

	(void)state;
	for (n = 0; n < ARRAY_SIZE(names); n++) {
		struct fixture f;
		struct buf all = BUF_INIT;

		fixture_load(&f, names[n]);
		buf_addbuf(&all, &f.out);
		buf_addbuf(&all, &f.err);
		for (cut = 0; cut <= all.len; cut += 1 + all.len / 97) {
			struct verify_result r = VERIFY_RESULT_INIT;

			parse_text(&r, all.buf, cut, f.exit_code);
			check_bounds(&r);
			/* a failed run never reads as a pass, however it was cut */
			if (f.exit_code)
				assert_false(verify_result_ok(&r));
			verify_result_release(&r);
		}
		buf_release(&all);
		fixture_release(&f);
	}
}

static void test_verify_huge_output_is_bounded(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	struct buf b = BUF_INIT;
	clock_t start = clock();
	long i;

	(void)state;
	buf_addstr(&b, "TAP version 13\n");
	for (i = 1; i <= 50000; i++)
		buf_addf(&b, "%s %ld - case %ld\n", i % 1000 ? "ok" : "not ok", i, i);
	/* one failure with an enormous YAML block */
	buf_addstr(&b, "not ok 50001 - giant\n  ---\n");
	for (i = 0; i < 100000; i++)
		buf_addstr(&b, "  line of diagnostics that goes on\n");
	buf_addstr(&b, "  ...\n1..50001\n");
	/* and a single line of 4 MiB */
	for (i = 0; i < 4 << 20; i++)
		buf_addch(&b, 'x');
	parse_text(&r, b.buf, b.len, 1);
	check_bounds(&r);
	assert_int_equal(r.passed, 49950);
	assert_int_equal(r.failed, 51);
	assert_int_equal(r.tests_nr, VERIFY_TESTS_MAX);
	assert_int_equal(r.tests_dropped, 50001 - VERIFY_TESTS_MAX);
	/* linear time: far below a second per 10 MB on any machine we use */
	assert_true((clock() - start) / CLOCKS_PER_SEC < 20);
	verify_result_release(&r);
	buf_release(&b);
}

static void test_verify_timeout_is_an_error(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	struct verify_output o;
	static const char out[] = "1..2\nok 1 - fast\n";

	(void)state;
	memset(&o, 0, sizeof(o));
	o.out = out;
	o.out_len = sizeof(out) - 1;
	o.exit_code = 137;
	o.timed_out = 1;
	o.duration_ms = 120000;
	verify_parse(&r, &o);
	assert_false(verify_result_ok(&r));
	assert_int_equal(r.passed, 1);
	assert_int_equal(r.errors, 1);
	assert_string_equal(r.tests[1].name, "(timed out after 120000 ms)");
	verify_result_release(&r);
}

static void test_verify_colour_and_redraws(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	static const char out[] =
		"\x1b[1mTAP version 13\x1b[0m\r\n"
		"running...\rrunning 50%\r\x1b[32mok 1 - green\x1b[0m\r\n"
		"\x1b]0;title\aok 2 - titled\n"
		"not ok 3 - with\x01" "control\n"
		"1..3\n";

	(void)state;
	parse_text(&r, out, sizeof(out) - 1, 1);
	check_bounds(&r);
	assert_int_equal(r.passed, 2);
	assert_int_equal(r.failed, 1);
	assert_string_equal(r.tests[0].name, "green");
	assert_string_equal(r.tests[1].name, "titled");
	assert_string_equal(r.tests[2].name, "with?control");
	verify_result_release(&r);
}

/* "ok" lines without a plan or version are not TAP, and not counted. */
static void test_verify_stray_ok_is_not_tap(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	static const char out[] = "ok   base/buf (12)\nok so far\nnot ok, said the linter\n";

	(void)state;
	parse_text(&r, out, sizeof(out) - 1, 0);
	assert_int_equal(r.formats.nr, 0);
	assert_int_equal(r.passed + r.failed, 0);
	assert_true(verify_result_ok(&r));
	verify_result_release(&r);
}

/* forgex's own runner and its kind: "N passed, N failed". */
static void test_verify_plain_summary_line(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	static const char out[] = "ok   base/buf (12)\nFAIL verify/x: 1 failed\n"
				  "unit: 40 passed, 1 failed, 2 skipped\n";

	(void)state;
	parse_text(&r, out, sizeof(out) - 1, 1);
	assert_string_equal(r.formats.v[0], "summary");
	assert_int_equal(r.passed, 40);
	assert_int_equal(r.failed, 1);
	assert_int_equal(r.skipped, 2);
	verify_result_release(&r);
}

/* A NUL inside the output neither ends the text nor the tail. */
static void test_verify_nul_bytes(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	static const char out[] = "1..1\nnot ok 1 - a\0b\n  ---\n  error: x\0y\n  ...\nlast\0line";

	(void)state;
	parse_text(&r, out, sizeof(out) - 1, 1);
	check_bounds(&r);
	assert_int_equal(r.failed, 1);
	assert_string_equal(r.tests[0].name, "a?b");
	assert_string_equal(r.tests[0].excerpt, "error: x?y");
	assert_non_null(strstr(r.tail, "last?line"));
	verify_result_release(&r);
}

/* A stream cut inside a subtest does not make the next stream's test a parent. */
static void test_verify_tap_streams_back_to_back(void **state)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	static const char out[] =
		"TAP version 13\n# Subtest: group\n    ok 1 - inner\n"
		"TAP version 13\nnot ok 1 - top\n1..1\n";

	(void)state;
	parse_text(&r, out, sizeof(out) - 1, 1);
	assert_int_equal(r.passed, 1);
	assert_int_equal(r.failed, 1);
	assert_string_equal(r.tests[0].name, "group > inner");
	assert_string_equal(r.tests[1].name, "top");
	verify_result_release(&r);
}

/*
 * Inputs the fuzz target (tests/fuzz/verify.c) once crashed on, decoded
 * as it decodes them: byte 0 exit status, byte 1 flags, bytes 2-3 where
 * standard output ends. Under `make san` each failed before its fix.
 */
static void test_verify_fuzz_regressions(void **state)
{
	struct buf dir = BUF_INIT;
	DIR *d;
	struct dirent *de;
	int n = 0;

	(void)state;
	fixture_path(&dir, "fuzz-crashes", "x");
	buf_setlen(&dir, dir.len - 2);
	d = opendir(dir.buf);
	assert_non_null(d);
	while ((de = readdir(d))) {
		struct verify_result r = VERIFY_RESULT_INIT, back = VERIFY_RESULT_INIT;
		struct verify_comparison c = VERIFY_COMPARISON_INIT;
		struct buf p = BUF_INIT, data = BUF_INIT;
		struct verify_output o;
		size_t split;
		json_t *j;

		if (de->d_name[0] == '.')
			continue;
		buf_addf(&p, "%s/%s", dir.buf, de->d_name);
		assert_int_equal(fsutil_read_file(&data, p.buf, 0), 0);
		assert_true(data.len >= 4);
		memset(&o, 0, sizeof(o));
		o.exit_code = (unsigned char)data.buf[0];
		o.timed_out = data.buf[1] & 1;
		o.truncated = (data.buf[1] >> 1) & 1;
		split = ((size_t)(unsigned char)data.buf[2] |
			 (size_t)(unsigned char)data.buf[3] << 8) % (data.len - 4 + 1);
		o.out = data.buf + 4;
		o.out_len = split;
		o.err = data.buf + 4 + split;
		o.err_len = data.len - 4 - split;
		verify_parse(&r, &o);
		check_bounds(&r);
		j = verify_result_to_json(&r);
		assert_int_equal(verify_result_from_json(&back, j), 0);
		assert_int_equal(back.tests_nr, r.tests_nr);
		json_decref(j);
		verify_compare(&c, &r, &r);
		assert_false(c.regressed);
		verify_comparison_release(&c);
		verify_result_release(&back);
		verify_result_release(&r);
		buf_release(&p);
		buf_release(&data);
		n++;
	}
	closedir(d);
	assert_true(n > 0);
	buf_release(&dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_empty_output_follows_exit_status),
		cmocka_unit_test(test_verify_unknown_output_keeps_tail),
		cmocka_unit_test(test_verify_binary_garbage),
		cmocka_unit_test(test_verify_truncated_fixtures),
		cmocka_unit_test(test_verify_huge_output_is_bounded),
		cmocka_unit_test(test_verify_timeout_is_an_error),
		cmocka_unit_test(test_verify_colour_and_redraws),
		cmocka_unit_test(test_verify_stray_ok_is_not_tap),
		cmocka_unit_test(test_verify_plain_summary_line),
		cmocka_unit_test(test_verify_nul_bytes),
		cmocka_unit_test(test_verify_tap_streams_back_to_back),
		cmocka_unit_test(test_verify_fuzz_regressions),
	};

	return cmocka_run_group_tests_name("verify/robust", tests, NULL, NULL);
}

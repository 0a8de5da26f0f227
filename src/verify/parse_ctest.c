/*
 * CTest: one line per test, "2/6 Test #2: fails ....***Failed  0.00 sec"
 * (Passed, Failed, Skipped, Not Run (Disabled), Exception: SegFault,
 * Timeout, ...), the output of a failed test right after it with
 * --output-on-failure, "40% tests passed, 3 tests failed out of 5", and
 * the lists "The following tests FAILED:" / "did not run:".
 *
 * The output quoted after a failed test belongs to ctest: a cmocka or
 * pytest run inside a ctest test is not counted again. Crashes and
 * timeouts count as failed (as ctest says), a test that could not start
 * ("Not Run" without "Disabled") as an error, skipped and disabled tests
 * as skipped.
 */
#include <string.h>

#include "verify/parse.h"

/* "2/6 Test #2: name ......***Failed    0.00 sec" */
static int test_line(struct sv v, struct sv *name, struct sv *status)
{
	long n;
	long dots;

	sv_ltrim(&v);
	if (!sv_eat_num(&v, &n) || !sv_eat(&v, "/") || !sv_eat_num(&v, &n))
		return 0;
	sv_ltrim(&v);
	if (!sv_eat(&v, "Test"))
		return 0;
	sv_ltrim(&v);
	if (!sv_eat(&v, "#") || !sv_eat_num(&v, &n) || !sv_eat(&v, ": "))
		return 0;
	dots = sv_find(v, " ..");
	if (dots <= 0)
		return 0;
	*name = sv_make(v.p, (size_t)dots);
	sv_trim(name);
	v.p += dots;
	v.n -= (size_t)dots;
	while (v.n && (v.p[0] == '.' || v.p[0] == ' '))
		v.p++, v.n--;
	sv_eat(&v, "***");
	/* the status runs to the time */
	{
		long sec = sv_rfind(v, " sec");
		size_t k;

		if (sec < 0)
			return 0;
		k = (size_t)sec;
		while (k && ((v.p[k - 1] >= '0' && v.p[k - 1] <= '9') || v.p[k - 1] == '.'))
			k--;
		v.n = k;
	}
	sv_trim(&v);
	*status = v;
	return name->n > 0 && v.n > 0;
}

static enum verify_outcome status_outcome(struct sv st)
{
	if (sv_eq(st, "Passed"))
		return VERIFY_PASS;
	if (sv_starts(st, "Skipped") || sv_find(st, "Disabled") >= 0)
		return VERIFY_SKIP;
	if (sv_starts(st, "Not Run"))
		return VERIFY_ERROR;
	return VERIFY_FAIL;
}

/* "40% tests passed, 3 tests failed out of 5" */
static int summary_line(struct sv v, long *failed, long *total)
{
	long pct;

	if (!sv_eat_num(&v, &pct) || !sv_eat(&v, "% tests passed, ") ||
	    !sv_eat_num(&v, failed) || !(sv_eat(&v, " tests failed out of ") ||
					sv_eat(&v, " test failed out of ")) ||
	    !sv_eat_num(&v, total))
		return 0;
	return 1;
}

static int ctest_marker(struct sv v)
{
	struct sv a, b;
	long x, y;

	if (test_line(v, &a, &b) || summary_line(v, &x, &y))
		return 1;
	sv_ltrim(&v);
	return sv_starts(v, "Start ") || sv_starts(v, "Total Test time") ||
	       sv_starts(v, "The following tests") || sv_starts(v, "Errors while running CTest") ||
	       sv_starts(v, "Test project ");
}

/* After a test that did not pass, up to the next ctest line. */
static void ctest_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), name, st;

		if (start != (size_t)-1 && ctest_marker(v)) {
			vs_claim(s, start, i);
			start = (size_t)-1;
		}
		if (test_line(v, &name, &st) && status_outcome(st) != VERIFY_PASS)
			start = i + 1;
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
}

/* "\t  2 - fails (Failed)" in the closing lists */
static int list_entry(struct sv v, struct sv *name, struct sv *why)
{
	long n, paren;

	sv_ltrim(&v);
	if (!sv_eat_num(&v, &n) || !sv_eat(&v, " - "))
		return 0;
	sv_rtrim(&v);
	paren = sv_rfind(v, " (");
	if (paren <= 0 || !sv_ends(v, ")"))
		return 0;
	*name = sv_make(v.p, (size_t)paren);
	*why = sv_make(v.p + paren + 2, v.n - (size_t)paren - 3);
	return 1;
}

/*
 * The excerpt of a test that did not pass: its output, headed by the
 * status when that says more than "Failed" ("Exception: SegFault",
 * "Timeout"), or the status alone when it printed nothing.
 */
static void close_block(struct vscan *s, size_t h, size_t body, size_t end, struct sv status)
{
	vs_excerpt(s, h, body, end, 0);
	if (!sv_eq(status, "Failed") && vs_has_excerpt(s, h)) {
		struct buf b = BUF_INIT;

		buf_add(&b, status.p, status.n);
		buf_addch(&b, '\n');
		buf_addstr(&b, vs_excerpt_of(s, h));
		vs_excerpt_text(s, h, b.buf, b.len, 1);
		buf_release(&b);
	}
	vs_excerpt_text(s, h, status.p, status.n, 0);
}

static void ctest_parse(struct vscan *s)
{
	size_t i, cur = (size_t)-1, body = 0;
	long sum_failed = 0, sum_total = 0, f, t, in_total_skipped = 0;
	int summaries = 0, lines = 0, list = 0;
	struct sv cur_status = sv_make(NULL, 0);

	for (i = 0; i < s->nr; i++) {
		struct sv v, name, st;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (cur != (size_t)-1 && ctest_marker(v)) {
			close_block(s, cur, body, i, cur_status);
			cur = (size_t)-1;
		}
		if (test_line(v, &name, &st)) {
			enum verify_outcome o = status_outcome(st);
			size_t h = vs_test(s, name.p, name.n, o);

			lines++;
			list = 0;
			if (o == VERIFY_FAIL || o == VERIFY_ERROR) {
				cur = h;
				body = i + 1;
				cur_status = st;
			}
			continue;
		}
		if (summary_line(v, &f, &t)) {
			sum_failed += f;
			sum_total += t;
			summaries++;
			list = 0;
			continue;
		}
		if (sv_starts(v, "The following tests FAILED:")) {
			list = 1;
			continue;
		}
		if (sv_starts(v, "The following tests did not run:")) {
			list = 2;
			continue;
		}
		if (list && list_entry(v, &name, &st)) {
			/* names when the per-test lines are missing (-Q, cut output) */
			if (vs_find(s, name.p, name.n) == (size_t)-1) {
				size_t h = vs_test(s, name.p, name.n,
						   list == 2 ? (sv_eq(st, "Skipped") ||
								sv_eq(st, "Disabled") ? VERIFY_SKIP
								: VERIFY_ERROR)
						   : VERIFY_FAIL);

				vs_excerpt_text(s, h, st.p, st.n, 0);
				if (list == 2 && sv_eq(st, "Skipped"))
					in_total_skipped++;
			}
			continue;
		}
		if (v.n)
			list = 0;
	}
	if (cur != (size_t)-1)
		close_block(s, cur, body, s->nr, cur_status);
	if (!lines && summaries) {
		/* Only the summary. Its total holds skipped tests (counted as
		 * passed in its percentage) but not disabled ones. */
		long skipped = vs_count(s, VERIFY_SKIP), passed;

		passed = sum_total - sum_failed - in_total_skipped;
		vs_counts(s, passed > 0 ? passed : 0, sum_failed, skipped, 0);
	}
}

const struct verify_parser verify_parser_ctest = { "ctest", ctest_claim, ctest_parse };

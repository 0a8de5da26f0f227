/*
 * Python unittest: "Ran N tests in Xs" followed by "OK (skipped=1)" or
 * "FAILED (failures=1, errors=1, skipped=1, expected failures=1,
 * unexpected successes=1)" or "NO TESTS RAN"; the blocks
 *
 *     ======================================================================
 *     FAIL: test_x (mod.Class.test_x)
 *     ----------------------------------------------------------------------
 *     Traceback ...
 *
 * for names and excerpts; and the -v lines "test_x (mod.Class.test_x) ... ok"
 * or, for a test with a docstring, "test_x (mod.Class.test_x)" followed
 * by "First docstring line ... ok".
 *
 * Expected failures count as skipped, unexpected successes as failed
 * (unittest itself reports FAILED for them).
 */
#include <string.h>

#include "verify/parse.h"

static int is_rule(struct sv v, char c)
{
	return sv_all(v, c, 40);
}

/* "Ran 3 tests in 0.001s" */
static int ran_line(struct sv v, long *n)
{
	return sv_eat(&v, "Ran ") && sv_eat_num(&v, n) &&
	       (sv_eat(&v, " tests in ") || sv_eat(&v, " test in "));
}

/* "FAIL: name (id)" -> outcome and the rest after ": ". */
static int block_header(struct sv v, enum verify_outcome *o, struct sv *rest)
{
	if (sv_eat(&v, "FAIL: ") || sv_eat(&v, "UNEXPECTED SUCCESS: "))
		*o = VERIFY_FAIL;
	else if (sv_eat(&v, "ERROR: "))
		*o = VERIFY_ERROR;
	else
		return 0;
	*rest = v;
	return v.n > 0;
}

/*
 * "test_x (mod.Class.test_x)" (3.11+), "test_x (mod.Class)" (older),
 * "test_x (mod.Class.test_x) (i=2)" (a subtest) to "mod.Class.test_x" /
 * "mod.Class.test_x (i=2)"; an import failure of module m shows as
 * "m (unittest.loader._FailedTest.m)" and becomes "m".
 */
static void test_name(struct buf *out, struct sv v)
{
	struct sv method, id, extra;
	long open, close;

	sv_trim(&v);
	open = sv_find(v, " (");
	if (open < 0) {
		buf_add(out, v.p, v.n);
		return;
	}
	method = sv_make(v.p, (size_t)open);
	id = sv_make(v.p + open + 2, v.n - (size_t)open - 2);
	close = sv_find(id, ")");
	if (close < 0) {
		buf_add(out, v.p, v.n);
		return;
	}
	extra = sv_make(id.p + close + 1, id.n - (size_t)close - 1);
	id.n = (size_t)close;
	if (sv_eat(&id, "unittest.loader._FailedTest.") ||
	    sv_eat(&id, "unittest.loader.ModuleImportFailure.")) {
		buf_add(out, id.p, id.n);
	} else if (sv_eq(id, "unittest.loader._FailedTest")) {
		buf_add(out, method.p, method.n);
	} else {
		buf_add(out, id.p, id.n);
		if (!(id.n > method.n && id.p[id.n - method.n - 1] == '.' &&
		      !memcmp(id.p + id.n - method.n, method.p, method.n))) {
			buf_addch(out, '.');
			buf_add(out, method.p, method.n);
		}
	}
	buf_add(out, extra.p, extra.n);
}

/* "name (id) ... ok" */
static int verbose_line(struct vscan *s, struct sv v)
{
	long at = sv_rfind(v, " ... ");
	struct sv res;
	enum verify_outcome o;
	struct buf name = BUF_INIT;

	if (at <= 0 || sv_find(v, " (") < 0)
		return 0;
	res = sv_make(v.p + at + 5, v.n - (size_t)at - 5);
	sv_trim(&res);
	if (sv_eq(res, "ok") || sv_eq(res, "unexpected success"))
		o = sv_eq(res, "ok") ? VERIFY_PASS : VERIFY_FAIL;
	else if (sv_eq(res, "FAIL"))
		o = VERIFY_FAIL;
	else if (sv_eq(res, "ERROR"))
		o = VERIFY_ERROR;
	else if (sv_starts(res, "skipped") || sv_eq(res, "expected failure"))
		o = VERIFY_SKIP;
	else
		return 0;
	test_name(&name, sv_make(v.p, (size_t)at));
	vs_test(s, name.buf, name.len, o);
	buf_release(&name);
	return 1;
}

/* "test_x (mod.Class.test_x)" alone on its line: -v before a docstring line. */
static int named_line(struct sv v)
{
	long open = sv_find(v, " (");
	size_t i;

	sv_rtrim(&v);
	if (open <= 0 || !sv_ends(v, ")") || sv_find(v, " ... ") >= 0)
		return 0;
	for (i = 0; i < (size_t)open; i++)
		if (v.p[i] == ' ' || v.p[i] == '\t')
			return 0;
	for (i = (size_t)open + 2; i + 1 < v.n; i++)
		if (v.p[i] == ' ' || v.p[i] == '(' || v.p[i] == ')')
			return 0;
	return 1;
}

/* "Docstring first line ... ok" after a named_line() `head`. */
static int docstring_line(struct vscan *s, struct sv head, struct sv v)
{
	long at = sv_rfind(v, " ... ");
	struct sv res;
	enum verify_outcome o;
	struct buf name = BUF_INIT;

	if (at < 0)
		return 0;
	res = sv_make(v.p + at + 5, v.n - (size_t)at - 5);
	sv_trim(&res);
	if (sv_eq(res, "ok"))
		o = VERIFY_PASS;
	else if (sv_eq(res, "unexpected success") || sv_eq(res, "FAIL"))
		o = VERIFY_FAIL;
	else if (sv_eq(res, "ERROR"))
		o = VERIFY_ERROR;
	else if (sv_starts(res, "skipped") || sv_eq(res, "expected failure"))
		o = VERIFY_SKIP;
	else
		return 0;
	test_name(&name, head);
	vs_test(s, name.buf, name.len, o);
	buf_release(&name);
	return 1;
}

/* The tracebacks between the first "=====" block and "Ran N tests". */
static void unittest_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1;
	enum verify_outcome o;
	struct sv rest;
	long n;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i);

		if (start == (size_t)-1 && is_rule(v, '=') && i + 1 < s->nr &&
		    block_header(vs_line(s, i + 1), &o, &rest))
			start = i;
		else if (start != (size_t)-1 && ran_line(v, &n)) {
			vs_claim(s, start, i);
			start = (size_t)-1;
		}
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
}

struct ut_counts {
	long failures, errors, skipped, xfail, xpass;
};

/* "OK", "OK (skipped=1)", "FAILED (failures=1, errors=2)", "NO TESTS RAN" */
static int status_line(struct sv v, struct ut_counts *c)
{
	memset(c, 0, sizeof(*c));
	sv_rtrim(&v);
	if (sv_eq(v, "OK") || sv_eq(v, "NO TESTS RAN"))
		return 1;
	if (!sv_eat(&v, "OK (") && !sv_eat(&v, "FAILED ("))
		return 0;
	while (v.n && v.p[0] != ')') {
		long n;
		long *slot;

		if (sv_eat(&v, "failures="))
			slot = &c->failures;
		else if (sv_eat(&v, "errors="))
			slot = &c->errors;
		else if (sv_eat(&v, "skipped="))
			slot = &c->skipped;
		else if (sv_eat(&v, "expected failures="))
			slot = &c->xfail;
		else if (sv_eat(&v, "unexpected successes="))
			slot = &c->xpass;
		else
			return 0;
		if (!sv_eat_num(&v, &n))
			return 0;
		*slot += n;
		sv_eat(&v, ", ");
	}
	return sv_eq(v, ")");
}

static void unittest_parse(struct vscan *s)
{
	size_t i, cur = (size_t)-1, body = 0, pending = (size_t)-1;
	long ran = -1, n;
	int seen = 0;

	/* "name (id) ... ok" lines mean something only next to "Ran N tests" */
	for (i = 0; i < s->nr && !seen; i++)
		seen = vs_visible(s, i) && ran_line(vs_line(s, i), &n);
	for (i = 0; i < s->nr; i++) {
		struct sv v, rest;
		enum verify_outcome o;
		struct ut_counts c;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (ran_line(v, &n)) {
			ran = n;
			if (cur != (size_t)-1) {
				/* the rule before "Ran" closes the last block */
				size_t end = i;

				while (end > body && (!s->lines[end - 1].len ||
						      is_rule(vs_line(s, end - 1), '-')))
					end--;
				vs_excerpt(s, cur, body, end, 0);
				cur = (size_t)-1;
			}
			continue;
		}
		if (ran >= 0 && status_line(v, &c)) {
			long bad = c.failures + c.errors + c.skipped + c.xfail + c.xpass;

			vs_counts(s, ran > bad ? ran - bad : 0, c.failures + c.xpass, c.skipped + c.xfail,
				  c.errors);
			ran = -1;
			continue;
		}
		if (block_header(v, &o, &rest) && i > 0 && is_rule(vs_line(s, i - 1), '=')) {
			struct buf name = BUF_INIT;

			if (cur != (size_t)-1)
				vs_excerpt(s, cur, body, i - 1, 0);
			test_name(&name, rest);
			cur = vs_test(s, name.buf, name.len, o);
			buf_release(&name);
			body = i + 1;
			/* a docstring's first line may stand between the header and the rule */
			if (body + 1 < s->nr && !is_rule(vs_line(s, body), '-') &&
			    is_rule(vs_line(s, body + 1), '-'))
				body++;
			if (body < s->nr && is_rule(vs_line(s, body), '-'))
				body++;
			continue;
		}
		if (seen && named_line(v)) {
			/* -v with a docstring: "name (id)", then "Doc ... ok" */
			pending = i;
			continue;
		}
		if (seen && pending != (size_t)-1 && pending + 1 == i &&
		    docstring_line(s, vs_line(s, pending), v))
			continue;
		if (seen && !sv_starts(v, "test "))
			verbose_line(s, v);
	}
	if (cur != (size_t)-1)
		vs_excerpt(s, cur, body, s->nr, 0);
}

const struct verify_parser verify_parser_unittest = { "unittest", unittest_claim, unittest_parse };

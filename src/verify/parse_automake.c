/*
 * automake's parallel test harness (`make check` with TESTS = ...): one
 * line per test,
 *
 *     PASS: pass.sh
 *     FAIL: fail.sh
 *     SKIP: skip.sh
 *     XFAIL: xfail.sh
 *     XPASS: xpass.sh
 *     ERROR: hard.sh
 *
 * (with the TAP driver, one per test point: "PASS: t.test 1 - adds"),
 * then per folder the block
 *
 *     Testsuite summary for calc 1.0
 *     # TOTAL: 6
 *     # PASS:  1
 *     # SKIP:  1
 *     # XFAIL: 1
 *     # FAIL:  1
 *     # XPASS: 1
 *     # ERROR: 1
 *
 * The result lines mean something only in output that has the block.
 * XFAIL (an expected failure) counts as skipped, XPASS as failed (the
 * harness fails the run for it), ERROR (exit status 99, a hard error) as
 * an error. The failures' output is in test-suite.log, which forgex does
 * not read: a failure's excerpt is its result line.
 */
#include <string.h>

#include "verify/parse.h"

struct am_sum {
	long total, pass, skip, xfail, fail, xpass, error;
	int have_total, have_pass;
};

/* "# TOTAL: 6", "# PASS:  1", ... */
static int summary_line(struct sv v, struct am_sum *c)
{
	static const char *const keys[] = { "TOTAL:", "PASS:", "SKIP:", "XFAIL:", "FAIL:",
					    "XPASS:", "ERROR:" };
	long *slots[7];
	size_t k;
	long n;

	slots[0] = &c->total;
	slots[1] = &c->pass;
	slots[2] = &c->skip;
	slots[3] = &c->xfail;
	slots[4] = &c->fail;
	slots[5] = &c->xpass;
	slots[6] = &c->error;
	if (!sv_eat(&v, "# "))
		return 0;
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		struct sv w = v;

		if (!sv_eat(&w, keys[k]))
			continue;
		sv_ltrim(&w);
		if (!sv_eat_num(&w, &n))
			return 0;
		sv_rtrim(&w);
		if (w.n)
			return 0;
		*slots[k] += n;
		if (k == 0)
			c->have_total = 1;
		else if (k == 1)
			c->have_pass = 1;
		return 1;
	}
	return 0;
}

/* "PASS: name" and its kin. */
static int result_line(struct sv v, enum verify_outcome *o, struct sv *name)
{
	if (sv_eat(&v, "PASS: "))
		*o = VERIFY_PASS;
	else if (sv_eat(&v, "FAIL: ") || sv_eat(&v, "XPASS: "))
		*o = VERIFY_FAIL;
	else if (sv_eat(&v, "SKIP: ") || sv_eat(&v, "XFAIL: "))
		*o = VERIFY_SKIP;
	else if (sv_eat(&v, "ERROR: "))
		*o = VERIFY_ERROR;
	else
		return 0;
	sv_trim(&v);
	*name = v;
	return v.n > 0;
}

static void automake_parse(struct vscan *s)
{
	struct am_sum c;
	size_t i;

	memset(&c, 0, sizeof(c));
	for (i = 0; i < s->nr; i++)
		if (vs_visible(s, i))
			summary_line(vs_line(s, i), &c);
	if (!c.have_total || !c.have_pass)
		return;
	for (i = 0; i < s->nr; i++) {
		struct sv v, name;
		enum verify_outcome o;
		size_t h;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (!result_line(v, &o, &name))
			continue;
		h = vs_test_new(s, name.p, name.n, o);
		if (h != (size_t)-1 && (o == VERIFY_FAIL || o == VERIFY_ERROR))
			vs_excerpt(s, h, i, i + 1, 0);
	}
	vs_counts(s, c.pass, c.fail + c.xpass, c.skip + c.xfail, c.error);
	vs_lists_all(s);
}

const struct verify_parser verify_parser_automake = { "automake", NULL, automake_parse };

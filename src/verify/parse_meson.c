/*
 * meson test: one line per test, "2/4 fails  FAIL  0.02s  exit status 1"
 * (OK, FAIL, SKIP, EXPECTEDFAIL, UNEXPECTEDPASS, TIMEOUT, ERROR), the
 * failed test's command (">>> ...") and, with --print-errorlogs, its
 * output between "――― ✀ ―――" rules; then "Summary of Failures:" repeating
 * the failed lines, and the closing block "Ok: 1", "Expected Fail: 1",
 * "Fail: 1", "Unexpected Pass: 0", "Skipped: 1", "Timeout: 0".
 *
 * Expected failures count as skipped, unexpected passes and timeouts as
 * failed.
 */
#include <string.h>

#include "verify/parse.h"

#define BAR "\xe2\x80\x95"	/* ― */

static int status_word(struct sv w, enum verify_outcome *o)
{
	if (sv_eq(w, "OK"))
		*o = VERIFY_PASS;
	else if (sv_eq(w, "FAIL") || sv_eq(w, "UNEXPECTEDPASS") || sv_eq(w, "TIMEOUT"))
		*o = VERIFY_FAIL;
	else if (sv_eq(w, "SKIP") || sv_eq(w, "EXPECTEDFAIL"))
		*o = VERIFY_SKIP;
	else if (sv_eq(w, "ERROR"))
		*o = VERIFY_ERROR;
	else
		return 0;
	return 1;
}

static int is_duration(struct sv w)
{
	long n;

	if (!sv_eat_num(&w, &n))
		return 0;
	if (sv_eat(&w, ".") && !sv_eat_num(&w, &n))
		return 0;
	return sv_eq(w, "s");
}

/* "2/4 name  FAIL  0.02s ..." -> name and outcome */
static int test_line(struct sv v, struct sv *name, enum verify_outcome *o)
{
	long n;
	struct sv rest, prev = sv_make(NULL, 0);
	const char *name_start;

	sv_ltrim(&v);
	if (!sv_eat_num(&v, &n) || !sv_eat(&v, "/") || !sv_eat_num(&v, &n) || !sv_eat(&v, " "))
		return 0;
	sv_ltrim(&v);
	name_start = v.p;
	rest = v;
	/* the status is the token right before the duration */
	while (rest.n) {
		struct sv w;

		sv_ltrim(&rest);
		w = sv_token(&rest);
		if (!w.n)
			break;
		if (prev.p && is_duration(w) && status_word(prev, o)) {
			*name = sv_make(name_start, (size_t)(prev.p - name_start));
			sv_trim(name);
			return name->n > 0;
		}
		prev = w;
	}
	return 0;
}

/* "Fail:   1" */
static int summary_item(struct sv v, const char *key, long *n)
{
	if (!sv_eat(&v, key))
		return 0;
	sv_ltrim(&v);
	if (!sv_eat_num(&v, n))
		return 0;
	sv_trim(&v);
	return v.n == 0;
}

static int log_rule(struct sv v)
{
	return sv_starts(v, BAR BAR BAR);
}

/* The command and error log of a failed test belong to meson. */
static void meson_claim(struct vscan *s)
{
	size_t i;
	struct sv name;
	enum verify_outcome o;

	for (i = 0; i + 1 < s->nr; i++) {
		size_t j = i + 1;

		if (!test_line(vs_line(s, i), &name, &o) || o == VERIFY_PASS || o == VERIFY_SKIP)
			continue;
		if (!sv_starts(vs_line(s, j), ">>> "))
			continue;
		j++;
		if (j < s->nr && log_rule(vs_line(s, j))) {
			for (j++; j < s->nr && !log_rule(vs_line(s, j)); j++)
				;
			if (j < s->nr)
				j++;
		}
		vs_claim(s, i + 1, j);
		i = j - 1;
	}
}

static void meson_parse(struct vscan *s)
{
	size_t i;
	long ok = 0, xfail = 0, fail = 0, xpass = 0, skipped = 0, timeout = 0, n;
	int items = 0, repeat = 0;

	for (i = 0; i < s->nr; i++) {
		struct sv v, name;
		enum verify_outcome o;

		if (!vs_visible(s, i) || s->owner[i] == s->self)
			continue;
		v = vs_line(s, i);
		if (sv_starts(v, "Summary of Failures:")) {
			repeat = 1;	/* the lines below repeat earlier ones */
			continue;
		}
		if (test_line(v, &name, &o)) {
			size_t h, j;

			if (repeat && vs_find(s, name.p, name.n) != (size_t)-1)
				continue;
			h = vs_test(s, name.p, name.n, o);
			if (o != VERIFY_FAIL && o != VERIFY_ERROR)
				continue;
			/* the log between the rules, else the command */
			for (j = i + 1; j < s->nr && s->owner[j] == s->self; j++)
				;
			if (j > i + 2 && log_rule(vs_line(s, i + 2)))
				vs_excerpt(s, h, i + 3, j - 1, 0);
			else
				vs_excerpt(s, h, i + 1, j, 0);
			continue;
		}
		if (summary_item(v, "Ok:", &n))
			ok += n, items++;
		else if (summary_item(v, "Expected Fail:", &n))
			xfail += n, items++;
		else if (summary_item(v, "Fail:", &n))
			fail += n, items++;
		else if (summary_item(v, "Unexpected Pass:", &n))
			xpass += n, items++;
		else if (summary_item(v, "Skipped:", &n))
			skipped += n, items++;
		else if (summary_item(v, "Timeout:", &n))
			timeout += n, items++;
	}
	/* the closing block has all six; "Fail:" alone proves nothing */
	if (items >= 4) {
		vs_counts(s, ok, fail + xpass + timeout, skipped + xfail, vs_count(s, VERIFY_ERROR));
	}
}

const struct verify_parser verify_parser_meson = { "meson", meson_claim, meson_parse };

/*
 * Vitest: the summary "Tests  2 failed | 3 passed | 1 skipped | 1 todo (7)"
 * and "Test Files  1 failed | 1 passed (2)", the "Failed Tests N" section
 * (" FAIL  file > suite > name" then the error, up to "⎯⎯[k/N]⎯"), the
 * "Failed Suites N" section for files that did not load, and the listing:
 * " ❯ file (6 tests | 2 failed)" with "   ✓ name 1ms", "   × name",
 * "   ↓ name" under it, or " ✓ file > name 1ms" with --reporter=verbose.
 *
 * Names are "file > suite > name" as Vitest prints them; todo counts as
 * skipped; a file that failed to load is an error named after it.
 */
#include <string.h>

#include "verify/parse.h"

#define CHECK "\xe2\x9c\x93"	/* ✓ */
#define TIMES "\xc3\x97"	/* × */
#define DOWN "\xe2\x86\x93"	/* ↓ */
#define CHEVRON "\xe2\x9d\xaf"	/* ❯ */
#define RULE "\xe2\x8e\xaf"	/* ⎯ */
#define ARROW "\xe2\x86\x92"	/* → */

/* "Tests  2 failed | 3 passed (5)" / "Test Files  ..." -> the counts part */
static int summary(struct sv v, const char *what, struct sv *rest)
{
	sv_ltrim(&v);
	if (!sv_eat(&v, what) || !sv_eat(&v, "  "))
		return 0;
	sv_trim(&v);
	if (!sv_ends(v, ")"))
		return 0;
	*rest = v;
	return 1;
}

static int counts(struct sv v, long *p, long *f, long *sk)
{
	long paren = sv_rfind(v, " (");

	*p = *f = *sk = 0;
	if (paren >= 0)
		v.n = (size_t)paren;
	while (v.n) {
		long n, bar;
		struct sv w;

		sv_ltrim(&v);
		if (!sv_eat_num(&v, &n) || !sv_eat(&v, " "))
			return 0;
		w = v;
		bar = sv_find(v, " | ");
		if (bar >= 0) {
			w.n = (size_t)bar;
			v.p += bar + 3;
			v.n -= (size_t)bar + 3;
		} else {
			v.n = 0;
		}
		sv_trim(&w);
		if (sv_eq(w, "passed"))
			*p += n;
		else if (sv_eq(w, "failed"))
			*f += n;
		else if (sv_eq(w, "skipped") || sv_eq(w, "todo"))
			*sk += n;
		else if (!sv_eq(w, "expected fail"))
			return 0;
	}
	return 1;
}

/* "⎯⎯⎯ Failed Tests 2 ⎯⎯⎯" -> 1 tests, 2 suites */
static int section_header(struct sv v)
{
	if (!sv_starts(v, RULE))
		return 0;
	if (sv_find(v, " Failed Tests ") >= 0)
		return 1;
	if (sv_find(v, " Failed Suites ") >= 0)
		return 2;
	if (sv_find(v, " Unhandled Errors ") >= 0 || sv_find(v, " Unhandled Rejection ") >= 0)
		return 3;
	return 0;
}

/* "⎯⎯⎯[1/2]⎯" -> whether it is the last one */
static int entry_end(struct sv v, int *last)
{
	long open = sv_find(v, "["), slash;
	struct sv a;
	long k, n;

	if (!sv_starts(v, RULE) || open < 0)
		return 0;
	a = sv_make(v.p + open + 1, v.n - (size_t)open - 1);
	slash = sv_find(a, "/");
	if (slash < 0 || !sv_eat_num(&a, &k) || !sv_eat(&a, "/") || !sv_eat_num(&a, &n))
		return 0;
	*last = k >= n;
	return 1;
}

/* " FAIL  file > name" -> the name */
static int fail_entry(struct sv v, struct sv *name)
{
	sv_ltrim(&v);
	if (!sv_eat(&v, "FAIL "))
		return 0;
	sv_trim(&v);
	*name = v;
	return v.n > 0;
}

static int is_vitest(const struct vscan *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), r;

		if (summary(v, "Tests", &r) || summary(v, "Test Files", &r) || section_header(v))
			return 1;
		sv_ltrim(&v);
		if (sv_starts(v, "RUN  v"))
			return 1;
	}
	return 0;
}

static void vitest_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1;
	int last;

	if (!is_vitest(s))
		return;
	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), r;

		if (section_header(v)) {
			if (start != (size_t)-1)
				vs_claim(s, start, i);
			start = i;
		} else if (start != (size_t)-1 &&
			   ((entry_end(v, &last) && last) || summary(v, "Test Files", &r))) {
			vs_claim(s, start, i + 1);
			start = (size_t)-1;
		}
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
}

/* Drop a trailing " 12ms" or " 1.2s". */
static void drop_duration(struct sv *v)
{
	size_t n = v->n;

	sv_rtrim(v);
	if (sv_ends(*v, "ms"))
		n = v->n - 2;
	else if (sv_ends(*v, "s"))
		n = v->n - 1;
	else
		return;
	{
		size_t k = n;

		while (k > 0 && ((v->p[k - 1] >= '0' && v->p[k - 1] <= '9') || v->p[k - 1] == '.'))
			k--;
		if (k < n && k > 0 && v->p[k - 1] == ' ')
			v->n = k - 1;
	}
}

/* " ❯ file (6 tests | 2 failed) 8ms" -> file */
static int file_line(struct sv t, struct sv *file)
{
	long paren = sv_find(t, " (");
	struct sv rest;
	long n;

	if (paren <= 0)
		return 0;
	rest = sv_make(t.p + paren + 2, t.n - (size_t)paren - 2);
	if (!sv_eat_num(&rest, &n) || !(sv_starts(rest, " test") || sv_starts(rest, " suite")))
		return 0;
	*file = sv_make(t.p, (size_t)paren);
	return 1;
}

static void vitest_parse(struct vscan *s)
{
	size_t i, cur = (size_t)-1, body = 0;
	struct sv file = sv_make(NULL, 0);
	long sp = 0, sf = 0, ssk = 0, errs = 0;
	int summaries = 0, section = 0, last;
	struct buf name = BUF_INIT;

	if (!is_vitest(s))
		return;
	vs_recognised(s);
	for (i = 0; i < s->nr; i++) {
		struct sv v, t, r;
		size_t indent;
		enum verify_outcome o;
		int h;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		indent = vl_indent(s->lines[i]);
		if ((h = section_header(v))) {
			if (cur != (size_t)-1)
				vs_excerpt(s, cur, body, i, 1);
			cur = (size_t)-1;
			section = h;
			continue;
		}
		if (section) {
			if (entry_end(v, &last)) {
				if (cur != (size_t)-1)
					vs_excerpt(s, cur, body, i, 1);
				cur = (size_t)-1;
				if (last)
					section = 0;
				continue;
			}
			if (section != 3 && fail_entry(v, &t) && cur == (size_t)-1) {
				if (section == 2) {
					/* "file [ file ]" */
					long br = sv_find(t, " [");

					if (br > 0)
						t.n = (size_t)br;
					cur = vs_test(s, t.p, t.n, VERIFY_ERROR);
					errs++;
				} else {
					/* the listed failure, not a pass of the same name */
					cur = vs_find(s, t.p, t.n);
					if (cur == (size_t)-1 || vs_outcome(s, cur) != VERIFY_FAIL)
						cur = vs_test(s, t.p, t.n, VERIFY_FAIL);
				}
				body = i + 1;
			}
			continue;
		}
		if (summary(v, "Tests", &r)) {
			long p, f, sk;

			if (counts(r, &p, &f, &sk)) {
				sp += p;
				sf += f;
				ssk += sk;
				summaries++;
			}
			continue;
		}
		t = v;
		sv_ltrim(&t);
		if (sv_eat(&t, CHECK " "))
			o = VERIFY_PASS;
		else if (sv_eat(&t, TIMES " "))
			o = VERIFY_FAIL;
		else if (sv_eat(&t, DOWN " "))
			o = VERIFY_SKIP;
		else if (sv_eat(&t, CHEVRON " ")) {
			if (indent <= 1 && file_line(t, &file))
				continue;
			continue;
		} else {
			continue;
		}
		if (indent <= 1 && file_line(t, &file))
			continue;
		drop_duration(&t);
		buf_reset(&name);
		if (indent > 1 && file.n) {
			buf_add(&name, file.p, file.n);
			buf_addstr(&name, " > ");
		}
		buf_add(&name, t.p, t.n);
		{
			/* two tests of the same name are two results */
			size_t th = vs_test_new(s, name.buf, name.len, o);

			/* "→ message" lines under a failed test */
			if (o == VERIFY_FAIL) {
				size_t k = i + 1;

				while (k < s->nr && vs_visible(s, k) &&
				       sv_find(vs_line(s, k), ARROW " ") >= 0 && k - i < 20)
					k++;
				if (k > i + 1)
					vs_excerpt(s, th, i + 1, k, 0);
			}
		}
	}
	buf_release(&name);
	if (summaries)
		vs_counts(s, sp, sf, ssk, errs);
}

const struct verify_parser verify_parser_vitest = { "vitest", vitest_claim, vitest_parse };

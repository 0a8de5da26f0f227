/*
 * Jest: the summary "Tests:       2 failed, 1 skipped, 1 todo, 3 passed,
 * 7 total" (and "Test Suites: ..."), the failure blocks "  ● group ›
 * name" with their details, "  ● Test suite failed to run" under the
 * file's "FAIL ./x.test.js" header, and with --verbose the per-test lines
 * "✓ name (2 ms)", "✕ name", "○ skipped name", "✎ todo name" nested under
 * describe titles by indentation.
 *
 * Todo tests count as skipped; a suite that failed to run is an error
 * named after its file.
 */
#include <string.h>

#include "verify/parse.h"

#define BULLET "\xe2\x97\x8f"	/* ● */
#define CHECK "\xe2\x9c\x93"	/* ✓ */
#define CROSS "\xe2\x9c\x95"	/* ✕ */
#define CIRCLE "\xe2\x97\x8b"	/* ○ */
#define PENCIL "\xe2\x9c\x8e"	/* ✎ */
#define SEP " \xe2\x80\xba "	/* › */

/* "PASS ./x.test.js" / "FAIL ./x.test.js" -> the path */
static int file_header(struct sv v, struct sv *path)
{
	sv_ltrim(&v);
	if (!sv_eat(&v, "PASS ") && !sv_eat(&v, "FAIL "))
		return 0;
	sv_ltrim(&v);
	*path = sv_token(&v);
	sv_trim(&v);
	/* "FAIL ./a.test.js" or "PASS ./a.test.js (5.2 s)", nothing else */
	if (v.n && !(sv_starts(v, "(") && sv_ends(v, ")")))
		return 0;
	return path->n && (memchr(path->p, '.', path->n) || memchr(path->p, '/', path->n));
}

static int bullet(struct sv v, struct sv *title)
{
	sv_ltrim(&v);
	if (!sv_eat(&v, BULLET " "))
		return 0;
	sv_trim(&v);
	*title = v;
	return v.n > 0;
}

static int tests_line(struct sv v, struct sv *rest)
{
	if (!sv_eat(&v, "Tests:"))
		return 0;
	sv_ltrim(&v);
	*rest = v;
	return 1;
}

static int suites_line(struct sv v, struct sv *rest)
{
	if (!sv_eat(&v, "Test Suites:"))
		return 0;
	sv_ltrim(&v);
	*rest = v;
	return 1;
}

/* "2 failed, 1 skipped, 1 todo, 3 passed, 7 total" */
static int counts(struct sv v, long *p, long *f, long *sk)
{
	*p = *f = *sk = 0;
	while (v.n) {
		long n;
		struct sv w;
		long comma;

		if (!sv_eat_num(&v, &n) || !sv_eat(&v, " "))
			return 0;
		w = v;
		comma = sv_find(v, ", ");
		if (comma >= 0) {
			w.n = (size_t)comma;
			v.p += comma + 2;
			v.n -= (size_t)comma + 2;
		} else {
			v.n = 0;
		}
		sv_trim(&w);
		if (sv_eq(w, "passed"))
			*p += n;
		else if (sv_eq(w, "failed"))
			*f += n;
		else if (sv_eq(w, "skipped") || sv_eq(w, "todo") || sv_eq(w, "pending"))
			*sk += n;
		else if (!sv_eq(w, "total") && !sv_starts(w, "total") && !sv_eq(w, "obsolete"))
			return 0;
	}
	return 1;
}

static int is_jest(const struct vscan *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), r;

		if (tests_line(v, &r) || suites_line(v, &r) || file_header(v, &r))
			return 1;
	}
	return 0;
}

static int block_end(struct sv v, size_t indent, size_t block_indent)
{
	struct sv t;

	return (bullet(v, &t) && indent <= block_indent) || file_header(v, &t) ||
	       tests_line(v, &t) || suites_line(v, &t);
}

static void jest_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1, ind = 0;

	if (!is_jest(s))
		return;
	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), t;

		if (start != (size_t)-1 && block_end(v, vl_indent(s->lines[i]), ind)) {
			vs_claim(s, start, i);
			start = (size_t)-1;
		}
		if (bullet(v, &t)) {
			start = i;
			ind = vl_indent(s->lines[i]);
		}
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
}

/* Drop a trailing " (12 ms)", or Jest 25's " (12ms)". */
static void drop_duration(struct sv *v)
{
	struct sv d;
	long at, n;

	sv_rtrim(v);
	if (!sv_ends(*v, "ms)") && !sv_ends(*v, "s)"))
		return;
	at = sv_rfind(*v, " (");
	if (at <= 0)
		return;
	d = sv_make(v->p + at + 2, v->n - (size_t)at - 2);
	if (!sv_eat_num(&d, &n))
		return;
	if (sv_eat(&d, "."))
		sv_eat_num(&d, &n);
	sv_eat(&d, " ");
	if (sv_eq(d, "ms)") || sv_eq(d, "s)"))
		v->n = (size_t)at;
}

struct title {
	size_t indent;
	struct sv name;
};

static void jest_parse(struct vscan *s)
{
	struct title stack[16];
	size_t depth = 0, i, cur = (size_t)-1, body = 0, ind = 0;
	struct sv file = sv_make(NULL, 0);
	long sp = 0, sf = 0, ssk = 0, serr = 0;
	int summaries = 0, listing = 0;
	long listed = 0;
	struct buf name = BUF_INIT;

	if (!is_jest(s))
		return;
	vs_recognised(s);
	for (i = 0; i <= s->nr; i++) {
		struct sv v, t, r;
		size_t indent;
		enum verify_outcome o;

		if (i < s->nr && !vs_visible(s, i))
			continue;
		v = i < s->nr ? vs_line(s, i) : sv_make("Tests:", 6);
		indent = i < s->nr ? vl_indent(s->lines[i]) : 0;
		if (cur != (size_t)-1 && block_end(v, indent, ind)) {
			vs_excerpt(s, cur, body, i, 0);
			cur = (size_t)-1;
		}
		if (i == s->nr)
			break;
		if (file_header(v, &t)) {
			file = t;
			depth = 0;
			listing = 1;
			continue;
		}
		if (tests_line(v, &r)) {
			long p, f, sk;

			if (counts(r, &p, &f, &sk)) {
				sp += p;
				sf += f;
				ssk += sk;
				summaries++;
			}
			listing = 0;
			continue;
		}
		if (suites_line(v, &r)) {
			listing = 0;
			continue;
		}
		if (bullet(v, &t)) {
			listing = 0;
			ind = indent;
			body = i + 1;
			if (sv_eq(t, "Test suite failed to run")) {
				cur = vs_test(s, file.n ? file.p : "(test suite)",
					      file.n ? file.n : 12, VERIFY_ERROR);
				serr++;
			} else {
				/* the listed failure of that name, not a pass of the same name */
				cur = vs_find(s, t.p, t.n);
				if (cur == (size_t)-1 || vs_outcome(s, cur) != VERIFY_FAIL)
					cur = vs_test(s, t.p, t.n, VERIFY_FAIL);
			}
			continue;
		}
		if (!listing || !v.n)
			continue;
		/* --verbose listing */
		t = v;
		sv_ltrim(&t);
		if (sv_eat(&t, CHECK " "))
			o = VERIFY_PASS;
		else if (sv_eat(&t, CROSS " "))
			o = VERIFY_FAIL;
		else if (sv_eat(&t, CIRCLE " "))
			o = VERIFY_SKIP, sv_eat(&t, "skipped ");
		else if (sv_eat(&t, PENCIL " "))
			o = VERIFY_SKIP, sv_eat(&t, "todo ");
		else {
			/* a describe title */
			while (depth && stack[depth - 1].indent >= indent)
				depth--;
			if (depth < ARRAY_SIZE(stack)) {
				stack[depth].indent = indent;
				sv_trim(&t);
				stack[depth].name = t;
				depth++;
			}
			continue;
		}
		while (depth && stack[depth - 1].indent >= indent)
			depth--;
		drop_duration(&t);
		buf_reset(&name);
		{
			size_t k;

			for (k = 0; k < depth; k++) {
				buf_add(&name, stack[k].name.p, stack[k].name.n);
				buf_addstr(&name, SEP);
			}
		}
		buf_add(&name, t.p, t.n);
		vs_test_new(s, name.buf, name.len, o);
		listed++;
	}
	buf_release(&name);
	if (summaries)
		vs_counts(s, sp, sf, ssk, serr);
	if (summaries && listed)
		vs_lists_all(s);
}

const struct verify_parser verify_parser_jest = { "jest", jest_claim, jest_parse };

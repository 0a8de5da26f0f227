/*
 * Mocha's spec reporter (the default):
 *
 *       calc
 *         ✔ adds
 *         1) adds wrong
 *         - skipped one
 *         ✔ slow one (75ms)
 *
 *       3 passing (6ms)
 *       1 pending
 *       2 failing
 *
 *       1) calc
 *            adds wrong:
 *          AssertionError ...
 *
 * Suites are the indented plain lines above their tests; a test is "✔"
 * (or "✓", older mocha) passing, "N)" failing, "- " pending. The failure
 * blocks after "N failing" give the excerpts, matched by number. Only
 * output with the "N passing (Xms)" line is mocha's. Names are "suite >
 * name"; pending counts as skipped; a failing hook ("before each" hook
 * for "x") is a failure, as mocha counts it.
 */
#include <string.h>

#include "verify/parse.h"

#define OK_HEAVY "\xe2\x9c\x94 "	/* ✔ */
#define OK_LIGHT "\xe2\x9c\x93 "	/* ✓ */

/* "3 passing (6ms)", "1 pending", "2 failing" */
static int summary_line(struct sv v, const char *word, long *n)
{
	sv_trim(&v);
	if (!sv_eat_num(&v, n) || !sv_eat(&v, " ") || !sv_eat(&v, word))
		return 0;
	if (!strcmp(word, "passing"))
		return sv_eat(&v, " (") && sv_ends(v, "s)");
	return v.n == 0;
}

/* "1) name" -> 1 and the rest. */
static int numbered(struct sv v, long *n, struct sv *rest)
{
	sv_ltrim(&v);
	if (!sv_eat_num(&v, n) || !sv_eat(&v, ") "))
		return 0;
	*rest = v;
	return 1;
}

static long passing_line(const struct vscan *s, size_t from)
{
	size_t i;
	long n;

	for (i = from; i < s->nr; i++)
		if (vs_visible(s, i) && summary_line(vs_line(s, i), "passing", &n))
			return (long)i;
	return -1;
}

/*
 * The failure blocks: from "N failing" to two blank lines in a row (the
 * blocks are apart by one, and an assertion's diff may start a line
 * unindented), or the end.
 */
static size_t blocks_end(const struct vscan *s, size_t i)
{
	size_t j, last = i;

	for (j = i + 1; j < s->nr; j++) {
		if (!s->lines[j].len) {
			if (j + 1 < s->nr && !s->lines[j + 1].len && last > i + 1)
				break;
			continue;
		}
		last = j;
	}
	return last + 1;
}

static void mocha_claim(struct vscan *s)
{
	size_t i;
	long n;

	if (passing_line(s, 0) < 0)
		return;
	for (i = 0; i < s->nr; i++) {
		if (summary_line(vs_line(s, i), "failing", &n)) {
			size_t end = blocks_end(s, i);

			if (end > i + 1)
				vs_claim(s, i + 1, end);
			i = end - 1;
		}
	}
}

struct frame {
	size_t indent;
	struct sv name;
};

/* The excerpts: "  1) calc\n       adds wrong:\n\n      Error..." */
static void read_blocks(struct vscan *s, size_t i, size_t end, const size_t *byno, size_t nno)
{
	size_t cur = (size_t)-1, body = 0;

	for (; i < end; i++) {
		struct sv rest;
		long n;

		if (vl_indent(s->lines[i]) <= 2 && numbered(vs_line(s, i), &n, &rest)) {
			if (cur != (size_t)-1)
				vs_excerpt(s, cur, body, i, 0);
			cur = n > 0 && (size_t)n <= nno ? byno[n - 1] : (size_t)-1;
			/* the title runs on to the line ending in ':' */
			for (body = i + 1; body < end; body++)
				if (sv_ends(vs_line(s, body - 1), ":"))
					break;
		}
	}
	if (cur != (size_t)-1)
		vs_excerpt(s, cur, body, end, 0);
}

static void mocha_parse(struct vscan *s)
{
	struct frame stack[32];
	struct buf name = BUF_INIT;
	size_t *byno = NULL, nno = 0, alloc = 0, i, from = 0;
	long at;

	while ((at = passing_line(s, from)) >= 0) {
		long passing = 0, pending = 0, failing = 0, n;
		size_t depth = 0, sum = (size_t)at, j;

		for (i = from; i < sum; i++) {
			struct sv v, t, rest;
			enum verify_outcome o;
			size_t indent, k, h;

			if (!vs_visible(s, i) || !s->lines[i].len)
				continue;
			v = vs_line(s, i);
			indent = vl_indent(s->lines[i]);
			if (!indent)
				continue;	/* what the tests print */
			t = v;
			sv_trim(&t);
			n = 0;
			if (sv_eat(&t, OK_HEAVY) || sv_eat(&t, OK_LIGHT)) {
				o = VERIFY_PASS;
				/* a slow test: " (75ms)" */
				if (sv_ends(t, "ms)")) {
					long p = sv_rfind(t, " (");

					if (p > 0)
						t.n = (size_t)p;
				}
			} else if (numbered(t, &n, &rest)) {
				o = VERIFY_FAIL;
				t = rest;
			} else if (sv_eat(&t, "- ")) {
				o = VERIFY_SKIP;
			} else {
				while (depth && stack[depth - 1].indent >= indent)
					depth--;
				if (depth < ARRAY_SIZE(stack)) {
					stack[depth].indent = indent;
					stack[depth].name = t;
					depth++;
				}
				continue;
			}
			while (depth && stack[depth - 1].indent >= indent)
				depth--;
			buf_reset(&name);
			for (k = 0; k < depth; k++) {
				buf_add(&name, stack[k].name.p, stack[k].name.n);
				buf_addstr(&name, " > ");
			}
			buf_add(&name, t.p, t.n);
			h = vs_test_new(s, name.buf, name.len, o);
			if (o == VERIFY_FAIL && n > 0 && (size_t)n <= 100000) {
				while (nno < (size_t)n) {
					ALLOC_GROW(byno, nno + 1, alloc);
					byno[nno++] = (size_t)-1;
				}
				byno[n - 1] = h;
			}
		}
		summary_line(vs_line(s, sum), "passing", &passing);
		for (j = sum + 1; j < s->nr && j <= sum + 2; j++) {
			if (summary_line(vs_line(s, j), "pending", &n))
				pending = n;
			else if (summary_line(vs_line(s, j), "failing", &n))
				failing = n;
		}
		vs_counts(s, passing, failing, pending, 0);
		vs_lists_all(s);
		for (j = sum + 1; j < s->nr && j <= sum + 2; j++) {
			if (summary_line(vs_line(s, j), "failing", &n)) {
				size_t end = blocks_end(s, j);

				read_blocks(s, j + 1, end, byno, nno);
				j = end;
				break;
			}
		}
		from = j > sum + 1 ? j : sum + 1;
		nno = 0;
	}
	free(byno);
	buf_release(&name);
}

const struct verify_parser verify_parser_mocha = { "mocha", mocha_claim, mocha_parse };

/*
 * node's test runner, spec reporter (`node --test` on a terminal, or
 * --test-reporter=spec): the summary "ℹ tests 7", "ℹ pass 3", "ℹ fail 2",
 * "ℹ cancelled 0", "ℹ skipped 1", "ℹ todo 1"; per-test lines "✔ name
 * (0.9ms)", "✖ name (1.0ms)" followed by the error indented, "﹣ name #
 * reason" for skips; suites open with "▶ name" and close with a ✔/✖ line
 * of the same name and indentation. The "✖ failing tests:" section at the
 * end repeats the failures and is skipped.
 *
 * (`node --test` writes TAP when not on a terminal: parse_tap.c reads it.)
 *
 * Only output with the "ℹ tests" and "ℹ pass" lines is node's, and a
 * test line carries its time ("(0.9ms)"): a "✔ text" line of a spinner
 * or of mocha is not a node test. Names are "suite > name"; two tests of
 * the same name are two results; cancelled tests count as errors, todo
 * as skipped. Node counts leaves (a suite is not a test); the summary is
 * cross-checked against the test lines.
 */
#include <string.h>

#include "verify/parse.h"

#define INFO "\xe2\x84\xb9 "	/* ℹ */
#define PASS "\xe2\x9c\x94 "	/* ✔ */
#define FAIL "\xe2\x9c\x96 "	/* ✖ */
#define SKIP "\xef\xb9\xa3 "	/* ﹣ */
#define SUITE "\xe2\x96\xb6 "	/* ▶ */

static int info_line(struct sv v, struct sv *key, long *n)
{
	if (!sv_eat(&v, INFO))
		return 0;
	*key = sv_token(&v);
	return sv_eat(&v, " ") && sv_eat_num(&v, n);
}

static int failing_header(struct sv v)
{
	sv_trim(&v);
	return sv_eq(v, FAIL "failing tests:");
}

static void node_claim(struct vscan *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++) {
		size_t j;

		if (!failing_header(vs_line(s, i)))
			continue;
		/* "test at file:line:col", "✖ name", indented details, blanks */
		for (j = i + 1; j < s->nr; j++) {
			struct sv v = vs_line(s, j);

			if (v.n && !vl_indent(s->lines[j]) && !sv_starts(v, "test at ") &&
			    !sv_starts(v, FAIL))
				break;
		}
		vs_claim(s, i, j);
		i = j - 1;
	}
}

/* Drop " (1.2ms)" and " # reason" at the end of a test line. */
static void clean_title(struct sv *t)
{
	long hash = sv_rfind(*t, " # ");
	long paren;

	if (hash > 0)
		t->n = (size_t)hash;
	sv_rtrim(t);
	if (sv_ends(*t, "ms)")) {
		paren = sv_rfind(*t, " (");
		if (paren > 0)
			t->n = (size_t)paren;
	}
}

struct frame {
	size_t indent;
	struct sv name;
};

static void node_parse(struct vscan *s)
{
	struct frame stack[32];
	size_t depth = 0, i;
	long tests = -1, pass = 0, fail = 0, cancelled = 0, skipped = 0, todo = 0;
	int infos = 0;
	struct buf name = BUF_INIT;

	/*
	 * Only output with node's summary is node's: a "✔ text" line elsewhere
	 * (a spinner's, mocha's) is not a node test.
	 */
	for (i = 0; i < s->nr && infos < 2; i++) {
		struct sv key;
		long n;

		if (vs_visible(s, i) && info_line(vs_line(s, i), &key, &n) &&
		    (sv_eq(key, "tests") || sv_eq(key, "pass")))
			infos++;
	}
	if (infos < 2)
		return;
	infos = 0;
	for (i = 0; i < s->nr; i++) {
		struct sv v, t, key;
		size_t indent, k;
		enum verify_outcome o;
		long n;
		int is_todo;

		if (!vs_visible(s, i) || s->owner[i] == s->self)
			continue;
		v = vs_line(s, i);
		if (info_line(v, &key, &n)) {
			if (sv_eq(key, "tests"))
				tests = n, infos++;
			else if (sv_eq(key, "pass"))
				pass += n, infos++;
			else if (sv_eq(key, "fail"))
				fail += n;
			else if (sv_eq(key, "cancelled"))
				cancelled += n;
			else if (sv_eq(key, "skipped"))
				skipped += n;
			else if (sv_eq(key, "todo"))
				todo += n;
			continue;
		}
		indent = vl_indent(s->lines[i]);
		t = v;
		sv_ltrim(&t);
		if (sv_eat(&t, SUITE)) {
			while (depth && stack[depth - 1].indent >= indent)
				depth--;
			if (depth < ARRAY_SIZE(stack)) {
				sv_trim(&t);
				stack[depth].indent = indent;
				stack[depth].name = t;
				depth++;
			}
			continue;
		}
		if (sv_eat(&t, PASS))
			o = VERIFY_PASS;
		else if (sv_eat(&t, FAIL))
			o = VERIFY_FAIL;
		else if (sv_eat(&t, SKIP))
			o = VERIFY_SKIP;
		else
			continue;
		is_todo = sv_ends(t, "# TODO") || sv_find(t, " # TODO ") >= 0;
		/* node times every test and suite: "✔ adds (0.9ms)" */
		if (sv_find(t, "ms)") < 0)
			continue;
		clean_title(&t);
		/* the line that closes a suite */
		while (depth && stack[depth - 1].indent > indent)
			depth--;
		if (depth && stack[depth - 1].indent == indent &&
		    stack[depth - 1].name.n == t.n && !memcmp(stack[depth - 1].name.p, t.p, t.n)) {
			depth--;
			continue;
		}
		if (is_todo)
			o = VERIFY_SKIP;
		buf_reset(&name);
		for (k = 0; k < depth; k++) {
			buf_add(&name, stack[k].name.p, stack[k].name.n);
			buf_addstr(&name, " > ");
		}
		buf_add(&name, t.p, t.n);
		{
			size_t h = vs_test_new(s, name.buf, name.len, o), j;

			if (o != VERIFY_FAIL)
				continue;
			/* the error, indented under the line */
			for (j = i + 1; j < s->nr; j++) {
				if (!vs_visible(s, j))
					break;
				if (s->lines[j].len && vl_indent(s->lines[j]) <= indent)
					break;
			}
			vs_excerpt(s, h, i + 1, j, 0);
		}
	}
	buf_release(&name);
	if (infos >= 2 && tests >= 0) {
		vs_counts(s, pass, fail, skipped + todo, cancelled);
		vs_lists_all(s);
	}
}

const struct verify_parser verify_parser_node = { "node", node_claim, node_parse };

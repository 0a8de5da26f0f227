/*
 * TAP (the Test Anything Protocol), from any producer: `node --test`
 * when not on a terminal, cmocka with CMOCKA_MESSAGE_OUTPUT=TAP, Perl's
 * Test::More, tap.py, bats, ...
 *
 * "ok 1 - name", "not ok 2 - name", with "# SKIP reason" / "# TODO
 * reason" directives; subtests indented below a "# Subtest: name" line,
 * their parent's own line coming after them; YAML blocks ("  ---" to
 * "  ...") and "# " comments after a failure for its excerpt; "Bail out!".
 *
 * Output is TAP only when it has a plan ("1..N") or a "TAP version" line:
 * a stray "ok" elsewhere is not a test. Only leaves count (a test with
 * subtests is counted through them); names of subtests are "parent >
 * name"; two test points of the same name are two results. SKIP and
 * TODO count as skipped. node --test closes with "# tests 7", "# pass
 * 3", "# fail 2", "# cancelled 0", "# skipped 1", "# todo 1" (leaves
 * too): those are the counts, cross-checked against the test points.
 */
#include <string.h>

#include "verify/parse.h"

static int is_plan(struct sv v)
{
	long n;

	sv_ltrim(&v);
	return sv_eat_num(&v, &n) && sv_eat(&v, "..") && sv_eat_num(&v, &n);
}

static int is_version(struct sv v)
{
	return sv_starts(v, "TAP version ");
}

/*
 * "not ok 2 - name # TODO why" -> ok, number, name (may be empty) and the
 * directive ('S', 'T' or 0).
 */
static int test_point(struct sv v, int *ok, struct sv *name, char *directive, long *num)
{
	long hash;
	struct sv dir;

	sv_ltrim(&v);
	if (sv_eat(&v, "not ok"))
		*ok = 0;
	else if (sv_eat(&v, "ok"))
		*ok = 1;
	else
		return 0;
	if (v.n && v.p[0] != ' ' && v.p[0] != '\t')
		return 0;	/* "okay", "ok:" */
	sv_ltrim(&v);
	*num = -1;
	sv_eat_num(&v, num);
	sv_ltrim(&v);
	sv_eat(&v, "- ");
	*directive = 0;
	/* the directive: the last " # " (or a leading "# "); "\\#" is not one */
	hash = sv_rfind(v, "# ");
	if (hash >= 0 && (hash == 0 || v.p[hash - 1] == ' ')) {
		dir = sv_make(v.p + hash + 2, v.n - (size_t)hash - 2);
		if (dir.n >= 4 && !strncasecmp(dir.p, "skip", 4))
			*directive = 'S';
		else if (dir.n >= 4 && !strncasecmp(dir.p, "todo", 4))
			*directive = 'T';
		if (*directive) {
			v.n = (size_t)hash;
			/* cmocka: "not ok 3 # SKIP test_skipped": the reason names it */
			if (!v.n || sv_all(v, ' ', 1)) {
				dir.p += 4;
				dir.n -= 4;
				sv_trim(&dir);
				v = dir;
				*name = v;
				return 1;
			}
		}
	}
	sv_trim(&v);
	*name = v;
	return 1;
}

static int is_tap(const struct vscan *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (vs_visible(s, i) && (is_plan(vs_line(s, i)) || is_version(vs_line(s, i))))
			return 1;
	return 0;
}

/* The YAML block after a test point: "---" to "..." deeper indented. */
static size_t yaml_end(const struct vscan *s, size_t i, size_t indent)
{
	size_t j;
	struct sv v;

	if (i >= s->nr || vl_indent(s->lines[i]) <= indent)
		return i;
	v = vs_line(s, i);
	sv_trim(&v);
	if (!sv_eq(v, "---"))
		return i;
	for (j = i + 1; j < s->nr; j++) {
		struct sv w = vs_line(s, j);

		sv_trim(&w);
		if (sv_eq(w, "..."))
			return j + 1;
		if (s->lines[j].len && vl_indent(s->lines[j]) <= indent)
			return j;
	}
	return j;
}

static void tap_claim(struct vscan *s)
{
	size_t i;

	if (!is_tap(s))
		return;
	for (i = 0; i < s->nr; i++) {
		int ok;
		struct sv name;
		char d;
		long num;
		size_t end;

		if (!test_point(vs_line(s, i), &ok, &name, &d, &num))
			continue;
		end = yaml_end(s, i + 1, vl_indent(s->lines[i]));
		if (end > i + 1) {
			vs_claim(s, i + 1, end);
			i = end - 1;
		}
	}
}

/* node --test's closing comments: "# tests 7", "# pass 3", ... */
struct node_sum {
	long tests, pass, fail, cancelled, skipped, todo;
};

static int node_summary(struct sv v, struct node_sum *sum)
{
	static const char *const keys[] = { "tests", "pass", "fail", "cancelled", "skipped", "todo" };
	long *slots[6];
	size_t k;
	long n;

	slots[0] = &sum->tests;
	slots[1] = &sum->pass;
	slots[2] = &sum->fail;
	slots[3] = &sum->cancelled;
	slots[4] = &sum->skipped;
	slots[5] = &sum->todo;
	if (!sv_eat(&v, "# "))
		return 0;
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		struct sv w = v;

		if (sv_eat(&w, keys[k]) && sv_eat(&w, " ") && sv_eat_num(&w, &n)) {
			sv_rtrim(&w);
			if (w.n)
				return 0;
			if (*slots[k] < 0)
				*slots[k] = 0;
			*slots[k] += n;
			return 1;
		}
	}
	return 0;
}

struct subtest {
	size_t indent;
	struct sv name;
};

static void tap_parse(struct vscan *s)
{
	struct subtest stack[32];
	size_t depth = 0, i, prev_indent = 0;
	int have_prev = 0;
	struct buf name = BUF_INIT;
	struct node_sum sum = { -1, -1, 0, 0, 0, 0 };

	if (!is_tap(s))
		return;
	vs_recognised(s);
	for (i = 0; i < s->nr; i++) {
		struct sv v, t;
		size_t indent, k, h, end;
		int ok, leaf;
		char d;
		long num;
		enum verify_outcome o;

		if (!vs_visible(s, i) || s->owner[i] == s->self)
			continue;
		v = vs_line(s, i);
		indent = vl_indent(s->lines[i]);
		t = v;
		sv_ltrim(&t);
		if (sv_eat(&t, "# Subtest: ") || sv_eat(&t, "# Subtest ")) {
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
		if (is_version(t)) {
			/* a new stream: nothing before it is its parent */
			have_prev = 0;
			depth = 0;
			continue;
		}
		if (!indent && node_summary(t, &sum)) {
			/* node's "# pass 3" and its kin after the plan */
			continue;
		}
		if (sv_starts(t, "Bail out!")) {
			sv_rtrim(&t);
			vs_test(s, t.p, t.n, VERIFY_ERROR);
			continue;
		}
		if (!test_point(v, &ok, &t, &d, &num))
			continue;
		/* children come before their parent, deeper indented */
		leaf = !(have_prev && prev_indent > indent);
		prev_indent = indent;
		have_prev = 1;
		while (depth && stack[depth - 1].indent > indent)
			depth--;
		/* node announces every test with "# Subtest: name" at its own level */
		if (depth && stack[depth - 1].indent == indent &&
		    stack[depth - 1].name.n == t.n && !memcmp(stack[depth - 1].name.p, t.p, t.n))
			depth--;
		if (!leaf)
			continue;
		if (d)
			o = VERIFY_SKIP;
		else
			o = ok ? VERIFY_PASS : VERIFY_FAIL;
		buf_reset(&name);
		for (k = 0; k < depth; k++) {
			if (stack[k].indent >= indent)
				break;
			buf_add(&name, stack[k].name.p, stack[k].name.n);
			buf_addstr(&name, " > ");
		}
		if (t.n)
			buf_add(&name, t.p, t.n);
		else
			buf_addf(&name, "#%ld", num);
		/* every test point is a test: same-named ones are not merged */
		h = vs_test_new(s, name.buf, name.len, o);
		if (o != VERIFY_FAIL)
			continue;
		/* the YAML block, else the "# " comments that follow */
		end = yaml_end(s, i + 1, indent);
		if (end > i + 1) {
			size_t first = i + 2;
			struct sv y = first < s->nr ? vs_line(s, first) : sv_make("", 0);

			/* node opens every block with its timing: not worth a line */
			sv_ltrim(&y);
			if (sv_starts(y, "duration_ms:"))
				first++;
			vs_excerpt(s, h, first, end - 1, 0);
			continue;
		}
		for (end = i + 1; end < s->nr && vs_visible(s, end); end++) {
			struct sv c = vs_line(s, end);

			sv_ltrim(&c);
			if (!sv_starts(c, "#") || sv_starts(c, "# Subtest"))
				break;
		}
		vs_excerpt(s, h, i + 1, end, 0);
	}
	buf_release(&name);
	if (sum.tests >= 0 && sum.pass >= 0) {
		vs_counts(s, sum.pass, sum.fail, sum.skipped + sum.todo, sum.cancelled);
		vs_lists_all(s);
	}
}

const struct verify_parser verify_parser_tap = { "tap", tap_claim, tap_parse };

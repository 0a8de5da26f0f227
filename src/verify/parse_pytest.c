/*
 * pytest: the final summary line ("=== 3 failed, 4 passed, 1 skipped in
 * 0.04s ===", or bare with -q), the short test summary ("FAILED id - msg",
 * "ERROR id", and with -rA "PASSED id"), verbose result lines
 * ("id PASSED [ 10%]"), and the FAILURES / ERRORS sections for excerpts.
 *
 * Counts come from the summary lines (one per session, added up); names
 * from the per-test lines. xfailed counts as skipped, xpassed as passed.
 */
#include <string.h>

#include "verify/parse.h"

/* "=== title ===": the title, or an empty view. */
static struct sv section_title(struct sv v)
{
	struct sv t;
	size_t i = 0, j;

	while (i < v.n && v.p[i] == '=')
		i++;
	if (i < 3 || i >= v.n || v.p[i] != ' ')
		return sv_make(NULL, 0);
	j = v.n;
	while (j > i && v.p[j - 1] == '=')
		j--;
	if (v.n - j < 3 || j <= i + 1 || v.p[j - 1] != ' ')
		return sv_make(NULL, 0);
	t = sv_make(v.p + i + 1, j - i - 2);
	return t;
}

struct pytest_counts {
	long passed, failed, skipped, errors;
};

/*
 * "3 failed, 4 passed, 1 skipped, 1 xfailed, 1 error in 0.04s" (possibly
 * followed by " (0:01:02)"), or "no tests ran in 0.01s". Returns 1 when
 * `v` is such a line.
 */
static int summary_counts(struct sv v, struct pytest_counts *c)
{
	long at = sv_rfind(v, " in ");
	struct sv time, body;
	long n;

	memset(c, 0, sizeof(*c));
	if (at < 0)
		return 0;
	time = sv_make(v.p + at + 4, v.n - (size_t)at - 4);
	body = sv_make(v.p, (size_t)at);
	/* the time: digits, '.', 's', then optionally " (h:mm:ss)" */
	if (!sv_eat_num(&time, &n))
		return 0;
	if (sv_eat(&time, ".") && !sv_eat_num(&time, &n))
		return 0;
	if (!sv_eat(&time, "s"))
		return 0;
	if (time.n && !(sv_starts(time, " (") && sv_ends(time, ")")))
		return 0;
	if (sv_eq(body, "no tests ran"))
		return 1;
	while (body.n) {
		struct sv word;

		if (!sv_eat_num(&body, &n) || !sv_eat(&body, " "))
			return 0;
		word = body;
		{
			long comma = sv_find(body, ", ");

			if (comma >= 0) {
				word.n = (size_t)comma;
				body.p += comma + 2;
				body.n -= (size_t)comma + 2;
			} else {
				body.n = 0;
			}
		}
		if (sv_eq(word, "passed") || sv_eq(word, "xpassed"))
			c->passed += n;
		else if (sv_eq(word, "failed"))
			c->failed += n;
		else if (sv_eq(word, "skipped") || sv_eq(word, "xfailed"))
			c->skipped += n;
		else if (sv_eq(word, "error") || sv_eq(word, "errors"))
			c->errors += n;
		else if (!sv_eq(word, "deselected") && !sv_eq(word, "warning") &&
			 !sv_eq(word, "warnings") && !sv_eq(word, "rerun") &&
			 !sv_eq(word, "reruns"))
			return 0;
	}
	return 1;
}

/* A final summary line, with or without the "=" frame. */
static int is_summary(struct sv v, struct pytest_counts *c)
{
	struct sv t = section_title(v);

	if (t.p)
		return summary_counts(t, c);
	return summary_counts(v, c);
}

static int outcome_word(struct sv w, enum verify_outcome *o)
{
	if (sv_eq(w, "PASSED") || sv_eq(w, "XPASS"))
		*o = VERIFY_PASS;
	else if (sv_eq(w, "FAILED"))
		*o = VERIFY_FAIL;
	else if (sv_eq(w, "ERROR"))
		*o = VERIFY_ERROR;
	else if (sv_eq(w, "SKIPPED") || sv_eq(w, "XFAIL"))
		*o = VERIFY_SKIP;
	else
		return 0;
	return 1;
}

static int is_session_start(struct sv v)
{
	struct sv t = section_title(v);

	return t.p && sv_eq(t, "test session starts");
}

static void pytest_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1, sect = (size_t)-1;
	struct pytest_counts c;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), t;

		if (is_session_start(v)) {
			if (start != (size_t)-1)
				vs_claim(s, start, i);
			start = i;
			sect = (size_t)-1;
			continue;
		}
		if (is_summary(v, &c)) {
			if (start != (size_t)-1)
				vs_claim(s, start, i + 1);
			else if (sect != (size_t)-1)
				vs_claim(s, sect, i + 1);
			start = sect = (size_t)-1;
			continue;
		}
		/* -q has no session header: claim from the first section on */
		t = section_title(v);
		if (t.p && start == (size_t)-1 && sect == (size_t)-1 &&
		    (sv_eq(t, "FAILURES") || sv_eq(t, "ERRORS") || sv_eq(t, "PASSES")))
			sect = i;
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
	else if (sect != (size_t)-1)
		vs_claim(s, sect, s->nr);
}

/* "FAILED id - message", "ERROR id", "PASSED id", "XFAIL id - reason". */
static int short_summary_line(struct vscan *s, struct sv v)
{
	struct sv w = sv_token(&v), id;
	enum verify_outcome o;
	long dash;

	if (!outcome_word(w, &o) || !sv_eat(&v, " ") || !v.n)
		return 0;
	if (sv_eq(w, "SKIPPED"))	/* "SKIPPED [1] file:line: reason": no id */
		return 1;
	id = v;
	dash = sv_find(id, " - ");
	if (dash >= 0)
		id.n = (size_t)dash;
	else if (sv_eq(w, "XPASS") && sv_find(id, " ") >= 0)	/* "XPASS id reason" */
		id.n = (size_t)sv_find(id, " ");
	sv_trim(&id);
	if (!id.n)
		return 0;
	vs_test(s, id.p, id.n, o);
	return 1;
}

/* "path::name OUTCOME ... [ 10%]" from -v. */
static int verbose_line(struct vscan *s, struct sv v)
{
	struct sv id = sv_token(&v), w;
	enum verify_outcome o;

	if (sv_find(id, "::") < 0 || !sv_eat(&v, " "))
		return 0;
	w = sv_token(&v);
	if (!outcome_word(w, &o))
		return 0;
	vs_test(s, id.p, id.n, o);
	return 1;
}

/*
 * A section header title ("test_add_wrong", "TestGroup.test_inside_fails",
 * "ERROR at setup of test_x", "ERROR collecting path.py") to the key used
 * to find its test: the part of the id after the file, "::"-separated.
 */
static void title_key(struct buf *out, struct sv t, int *collecting)
{
	size_t i, depth = 0;

	*collecting = 0;
	if (sv_eat(&t, "ERROR at setup of ") || sv_eat(&t, "ERROR at teardown of ")) {
		/* fall through with the test's name */
	} else if (sv_eat(&t, "ERROR collecting ")) {
		*collecting = 1;
		buf_add(out, t.p, t.n);
		return;
	}
	for (i = 0; i < t.n; i++) {
		if (t.p[i] == '[')
			depth++;
		else if (t.p[i] == ']' && depth)
			depth--;
		if (t.p[i] == '.' && !depth)
			buf_addstr(out, "::");
		else
			buf_addch(out, t.p[i]);
	}
}

/* "___ title ___": the title, or an empty view. */
static struct sv test_header(struct sv v)
{
	size_t i = 0, j;

	while (i < v.n && v.p[i] == '_')
		i++;
	if (i < 3 || i >= v.n || v.p[i] != ' ')
		return sv_make(NULL, 0);
	j = v.n;
	while (j > i && v.p[j - 1] == '_')
		j--;
	if (v.n - j < 3 || j <= i + 1 || v.p[j - 1] != ' ')
		return sv_make(NULL, 0);
	return sv_make(v.p + i + 1, j - i - 2);
}

/* The id after its file part: "a.py::T::t" -> "T::t". */
static struct sv id_key(const char *name)
{
	struct sv v = sv_make(name, strlen(name));
	long at = sv_find(v, "::");

	if (at < 0)
		return v;
	return sv_make(v.p + at + 2, v.n - (size_t)at - 2);
}

/* Attach FAILURES / ERRORS bodies to the tests named earlier. */
static void excerpts(struct vscan *s, size_t nr_before)
{
	struct vmap keys = VMAP_INIT;
	size_t i, cur = (size_t)-1, body = 0;
	int in_section = 0;
	enum verify_outcome sect_outcome = VERIFY_FAIL;

	/* index failing tests by the key their section header uses */
	for (i = nr_before; i < vs_nr(s); i++) {
		const char *name = vs_name(s, i);
		struct sv k;

		if (vs_outcome(s, i) != VERIFY_FAIL && vs_outcome(s, i) != VERIFY_ERROR)
			continue;
		k = id_key(name);
		if (vmap_get(&keys, k.p, k.n) == (size_t)-1)
			vmap_put(&keys, k.p, k.n, i);
		if (vmap_get(&keys, name, strlen(name)) == (size_t)-1)
			vmap_put(&keys, name, strlen(name), i);
	}
	for (i = 0; i <= s->nr; i++) {
		struct sv v, t, h;

		if (i < s->nr && !vs_visible(s, i))
			continue;
		v = i < s->nr ? vs_line(s, i) : sv_make("=== end ===", 11);
		t = section_title(v);
		h = in_section ? test_header(v) : sv_make(NULL, 0);
		if ((t.p || h.p) && cur != (size_t)-1) {
			vs_excerpt(s, cur, body, i, 0);
			cur = (size_t)-1;
		}
		if (t.p) {
			in_section = sv_eq(t, "FAILURES") || sv_eq(t, "ERRORS");
			sect_outcome = sv_eq(t, "ERRORS") ? VERIFY_ERROR : VERIFY_FAIL;
			continue;
		}
		if (h.p) {
			struct buf key = BUF_INIT;
			int collecting;

			title_key(&key, h, &collecting);
			cur = vmap_get(&keys, key.buf, key.len);
			if (cur == (size_t)-1 && key.len) {
				/* no short summary (older pytest, -rN, cut output) */
				cur = vs_test(s, key.buf, key.len, sect_outcome);
				vmap_put(&keys, key.buf, key.len, cur);
			}
			body = i + 1;
			buf_release(&key);
		}
	}
	vmap_release(&keys);
}

static void pytest_parse(struct vscan *s)
{
	struct pytest_counts c, sum = { 0 };
	size_t i, nr_before = vs_nr(s);
	int summaries = 0, in_short = 0, seen = 0;

	/* per-test lines mean something only in pytest's output */
	for (i = 0; i < s->nr && !seen; i++)
		if (vs_visible(s, i) &&
		    (is_session_start(vs_line(s, i)) || is_summary(vs_line(s, i), &c)))
			seen = 1;
	if (!seen)
		return;
	for (i = 0; i < s->nr; i++) {
		struct sv v, t;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (is_summary(v, &c)) {
			sum.passed += c.passed;
			sum.failed += c.failed;
			sum.skipped += c.skipped;
			sum.errors += c.errors;
			summaries++;
			in_short = 0;
			continue;
		}
		t = section_title(v);
		if (t.p) {
			in_short = sv_eq(t, "short test summary info");
			continue;
		}
		if (in_short && short_summary_line(s, v))
			continue;
		/* without the header (-q), "FAILED x::y" lines still count */
		if (!in_short && (sv_starts(v, "FAILED ") || sv_starts(v, "ERROR ")) &&
		    sv_find(v, "::") >= 0) {
			short_summary_line(s, v);
			continue;
		}
		verbose_line(s, v);
	}
	if (summaries)
		vs_counts(s, sum.passed, sum.failed, sum.skipped, sum.errors);
	vs_recognised(s);
	excerpts(s, nr_before);
}

const struct verify_parser verify_parser_pytest = { "pytest", pytest_claim, pytest_parse };

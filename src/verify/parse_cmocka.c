/*
 * cmocka's standard output: "[ RUN      ] name" then "[       OK ] name",
 * "[  FAILED  ] name", "[  SKIPPED ] name" or "[  ERROR   ] name" (setup
 * or teardown failed), with "[  ERROR   ] --- message" and
 * "[   LINE   ] --- file:line: error" details; then the summary
 * "[  PASSED  ] 1 test(s).", "[  FAILED  ] 1 test(s), listed below:" and
 * the names again.
 *
 * cmocka 1.1 prints the results on standard output and the details and
 * summary on standard error, so the two arrive apart: details that arrive
 * outside a running test are given, in order, to the failed tests. A test
 * that started and never finished (the suite crashed) is an error.
 * (CMOCKA_MESSAGE_OUTPUT=TAP output is read by parse_tap.c.)
 */
#include <string.h>

#include "verify/parse.h"

/* "[  FAILED  ] rest" -> tag "FAILED" and rest */
static int marker(struct sv v, struct sv *tag, struct sv *rest)
{
	if (v.n < 12 || v.p[0] != '[' || v.p[11] != ']')
		return 0;
	*tag = sv_make(v.p + 1, 10);
	sv_trim(tag);
	*rest = sv_make(v.p + 12, v.n - 12);
	sv_trim(rest);
	return tag->n > 0;
}

static int is_list_header(struct sv rest)
{
	return sv_ends(rest, "test(s), listed below:") || sv_ends(rest, "test(s).") ||
	       sv_ends(rest, "test(s) run.");
}

/* The output of a running test, up to the next cmocka line. */
static void cmocka_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1;

	for (i = 0; i < s->nr; i++) {
		struct sv tag, rest;

		if (!marker(vs_line(s, i), &tag, &rest))
			continue;
		if (start != (size_t)-1)
			vs_claim(s, start, i);
		start = sv_eq(tag, "RUN") ? i + 1 : (size_t)-1;
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
}

struct run {
	struct sv name;
	size_t line;		/* the RUN line */
	size_t handle;
	int done;
	struct buf text;	/* what it printed, then details */
};

static void cmocka_parse(struct vscan *s)
{
	struct run *r = NULL;
	size_t nr = 0, alloc = 0, i, cur = (size_t)-1;
	struct vmap running = VMAP_INIT;	/* name -> run index, (size_t)-1 when done */
	struct buf orphans = BUF_INIT;
	size_t *groups = NULL, groups_nr = 0, groups_alloc = 0;	/* offsets in orphans */
	int list = 0, in_group = 0, seen = 0;

	for (i = 0; i < s->nr; i++) {
		struct sv v, tag, rest;
		size_t k;
		enum verify_outcome o;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (!marker(v, &tag, &rest)) {
			if (cur != (size_t)-1 && r[cur].text.len < VERIFY_EXCERPT_MAX * 2) {
				buf_add(&r[cur].text, v.p, v.n);
				buf_addch(&r[cur].text, '\n');
			}
			in_group = 0;
			continue;
		}
		if (sv_eq(tag, "==========")) {
			seen = 1;
			cur = (size_t)-1;
			list = 0;
			in_group = 0;
			continue;
		}
		if (sv_eq(tag, "RUN")) {
			seen = 1;
			ALLOC_GROW(r, nr + 1, alloc);
			r[nr].name = rest;
			r[nr].line = i;
			r[nr].handle = (size_t)-1;
			r[nr].done = 0;
			buf_init(&r[nr].text, 0);
			vmap_put(&running, rest.p, rest.n, nr);
			cur = nr++;
			list = 0;
			in_group = 0;
			continue;
		}
		if ((sv_eq(tag, "ERROR") || sv_eq(tag, "LINE")) && sv_starts(rest, "---")) {
			/* details of a failure */
			struct buf *to = cur != (size_t)-1 ? &r[cur].text : &orphans;

			if (cur == (size_t)-1 && !in_group) {
				ALLOC_GROW(groups, groups_nr + 1, groups_alloc);
				groups[groups_nr++] = orphans.len;
				in_group = 1;
			}
			if (to->len < VERIFY_EXCERPT_MAX * 2) {
				buf_add(to, v.p, v.n);
				buf_addch(to, '\n');
			}
			continue;
		}
		in_group = 0;
		if (sv_eq(tag, "OK"))
			o = VERIFY_PASS;
		else if (sv_eq(tag, "FAILED"))
			o = VERIFY_FAIL;
		else if (sv_eq(tag, "SKIPPED"))
			o = VERIFY_SKIP;
		else if (sv_eq(tag, "ERROR"))
			o = VERIFY_ERROR;
		else
			continue;	/* PASSED and anything newer */
		if (is_list_header(rest)) {
			seen = 1;
			list = 1;
			cur = (size_t)-1;
			continue;
		}
		k = vmap_get(&running, rest.p, rest.n);
		if (k != (size_t)-1 && !r[k].done) {
			r[k].done = 1;
			r[k].handle = vs_test(s, rest.p, rest.n, o);
			vmap_put(&running, rest.p, rest.n, (size_t)-1);
			if (cur == k)
				cur = (size_t)-1;
		} else if (!list || vs_find(s, rest.p, rest.n) == (size_t)-1) {
			/* a result without its RUN line (only the summary survived) */
			if (seen)
				vs_test(s, rest.p, rest.n, o);
		}
	}
	/* hand stray details to the failed tests, in order */
	{
		size_t g = 0;

		for (i = 0; i < nr && g < groups_nr; i++) {
			size_t end;

			if (!r[i].done || vs_outcome(s, r[i].handle) != VERIFY_FAIL)
				continue;
			end = g + 1 < groups_nr ? groups[g + 1] : orphans.len;
			buf_add(&r[i].text, orphans.buf + groups[g], end - groups[g]);
			g++;
		}
	}
	for (i = 0; i < nr; i++) {
		if (!r[i].done) {
			/* started, never finished: the suite died here */
			r[i].handle = vs_test(s, r[i].name.p, r[i].name.n, VERIFY_ERROR);
			buf_addstr(&r[i].text, "(the test started but did not finish)\n");
		}
		if (r[i].handle != (size_t)-1 && vs_outcome(s, r[i].handle) != VERIFY_PASS &&
		    vs_outcome(s, r[i].handle) != VERIFY_SKIP)
			vs_excerpt_text(s, r[i].handle, r[i].text.buf, r[i].text.len, 0);
		buf_release(&r[i].text);
	}
	if (seen)
		vs_recognised(s);
	free(r);
	free(groups);
	buf_release(&orphans);
	vmap_release(&running);
}

const struct verify_parser verify_parser_cmocka = { "cmocka", cmocka_claim, cmocka_parse };

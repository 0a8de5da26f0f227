/*
 * cargo test (libtest): after "running N tests", "test NAME ...
 * ok|FAILED|ignored" lines and one
 * "test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0
 * filtered out; finished in 0.07s" per test binary (added up), and the
 * "---- NAME stdout ----" blocks that hold each failure's output.
 * A build that fails ("error: could not compile `x`") before any test ran
 * is an error carrying the first compiler message.
 */
#include <string.h>

#include "verify/parse.h"

/* "---- NAME stdout ----" -> NAME */
static int block_header(struct sv v, struct sv *name)
{
	if (!sv_eat(&v, "---- ") || !sv_ends(v, " ----"))
		return 0;
	v.n -= 5;
	if (sv_ends(v, " stdout"))
		v.n -= 7;
	else if (sv_ends(v, " stderr"))
		v.n -= 7;
	else
		return 0;
	*name = v;
	return v.n > 0;
}

static int is_result_line(struct sv v)
{
	return sv_starts(v, "test result: ");
}

/* The blocks run to the next block, the "failures:" list or the result. */
static int block_end(struct sv v)
{
	struct sv n;

	return block_header(v, &n) || sv_eq(v, "failures:") || is_result_line(v);
}

static void cargo_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), name;

		if (start != (size_t)-1 && block_end(v)) {
			vs_claim(s, start, i);
			start = (size_t)-1;
		}
		if (block_header(v, &name))
			start = i;
	}
	if (start != (size_t)-1)
		vs_claim(s, start, s->nr);
}

/* "test NAME ... ok" */
static int test_line(struct sv v, struct sv *name, enum verify_outcome *o)
{
	long at;
	struct sv res;

	if (!sv_eat(&v, "test ") || is_result_line(v))
		return 0;
	at = sv_rfind(v, " ... ");
	if (at <= 0)
		return 0;
	res = sv_make(v.p + at + 5, v.n - (size_t)at - 5);
	sv_trim(&res);
	if (sv_eq(res, "ok"))
		*o = VERIFY_PASS;
	else if (sv_eq(res, "FAILED"))
		*o = VERIFY_FAIL;
	else if (sv_starts(res, "ignored"))
		*o = VERIFY_SKIP;
	else
		return 0;
	*name = sv_make(v.p, (size_t)at);
	/* "tests::panics - should panic" */
	if (sv_ends(*name, " - should panic"))
		name->n -= 15;
	return name->n > 0;
}

/*
 * "running 3 tests": libtest's test lines come between this and the
 * "test result:" line, never elsewhere (a unittest docstring "test that
 * ... ok" is not a cargo test).
 */
static int running_line(struct sv v)
{
	long n;

	return sv_eat(&v, "running ") && sv_eat_num(&v, &n) &&
	       (sv_eq(v, " tests") || sv_eq(v, " test"));
}

/* "test result: ok. 2 passed; 1 failed; 1 ignored; 0 measured; ..." */
static int result_counts(struct sv v, long *p, long *f, long *ig)
{
	if (!sv_eat(&v, "test result: "))
		return 0;
	if (!sv_eat(&v, "ok. ") && !sv_eat(&v, "FAILED. "))
		return 0;
	*p = *f = *ig = 0;
	while (v.n) {
		long n;
		struct sv w;

		if (!sv_eat_num(&v, &n) || !sv_eat(&v, " "))
			break;	/* "finished in 0.07s" */
		w = v;
		{
			long semi = sv_find(v, "; ");

			if (semi >= 0) {
				w.n = (size_t)semi;
				v.p += semi + 2;
				v.n -= (size_t)semi + 2;
			} else {
				v.n = 0;
			}
		}
		if (sv_eq(w, "passed"))
			*p = n;
		else if (sv_eq(w, "failed"))
			*f = n;
		else if (sv_eq(w, "ignored"))
			*ig = n;
	}
	return 1;
}

/* A compiler message, not one of cargo's own closing lines. */
static int compiler_error(struct sv v)
{
	if (sv_starts(v, "error["))
		return 1;
	return sv_eat(&v, "error: ") && !sv_starts(v, "test failed") &&
	       !sv_starts(v, "could not compile") && sv_find(v, " targets failed") < 0 &&
	       sv_find(v, " target failed") < 0;
}

static void cargo_parse(struct vscan *s)
{
	size_t i, cur = (size_t)-1, body = 0, compile_err = (size_t)-1;
	long sp = 0, sf = 0, si = 0;
	int results = 0, running = 0;

	for (i = 0; i < s->nr; i++) {
		struct sv v, name;
		enum verify_outcome o;
		long p, f, ig;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (cur != (size_t)-1 && block_end(v)) {
			vs_excerpt(s, cur, body, i, 0);
			cur = (size_t)-1;
		}
		if (result_counts(v, &p, &f, &ig)) {
			sp += p;
			sf += f;
			si += ig;
			results++;
			running = 0;
		} else if (running_line(v)) {
			running = 1;
		} else if (running && test_line(v, &name, &o)) {
			vs_test(s, name.p, name.n, o);
		} else if (block_header(v, &name)) {
			cur = vs_find(s, name.p, name.n);
			if (cur == (size_t)-1)
				cur = vs_test(s, name.p, name.n, VERIFY_FAIL);
			body = i + 1;
		} else if (compile_err == (size_t)-1 && compiler_error(v)) {
			compile_err = i;
		} else if (sv_starts(v, "error: could not compile `") && !results) {
			struct sv what = v;
			long due;
			size_t h, end;

			sv_eat(&what, "error: ");
			due = sv_find(what, " due to");
			if (due > 0)
				what.n = (size_t)due;
			h = vs_test(s, what.p, what.n, VERIFY_ERROR);
			/* the first compiler message, up to its blank line */
			if (compile_err != (size_t)-1) {
				for (end = compile_err; end < s->nr && s->lines[end].len &&
				     end - compile_err < 60; end++)
					;
				vs_excerpt(s, h, compile_err, end, 0);
			}
		}
	}
	if (cur != (size_t)-1)
		vs_excerpt(s, cur, body, s->nr, 0);
	if (results) {
		/* names listed by the runs are already in; counts from the
		 * result lines, plus any compile error */
		vs_counts(s, sp, sf, si, vs_count(s, VERIFY_ERROR));
	}
}

const struct verify_parser verify_parser_cargo = { "cargo", cargo_claim, cargo_parse };

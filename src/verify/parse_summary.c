/*
 * The plain closing line "N passed, N failed" (", N skipped" may follow;
 * one word and a colon may stand before it: "unit: 3 passed, 0 failed"),
 * alone on a line. forgex's own tests/run.sh ends with it, and so do many
 * hand-written runners. It gives counts only.
 */
#include "verify/parse.h"

static int summary_line(struct sv v, long *p, long *f, long *sk)
{
	sv_trim(&v);
	/* an optional "word: " */
	{
		size_t i = 0;

		while (i < v.n && v.p[i] != ' ' && v.p[i] != ':')
			i++;
		if (i > 0 && i + 1 < v.n && v.p[i] == ':' && v.p[i + 1] == ' ') {
			v.p += i + 2;
			v.n -= i + 2;
		}
	}
	*sk = 0;
	if (!sv_eat_num(&v, p) || !sv_eat(&v, " passed, ") || !sv_eat_num(&v, f) ||
	    !sv_eat(&v, " failed"))
		return 0;
	if (sv_eat(&v, ", ") && (!sv_eat_num(&v, sk) || !sv_eat(&v, " skipped")))
		return 0;
	return v.n == 0;
}

static void summary_parse(struct vscan *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++) {
		long p, f, sk;

		if (vs_visible(s, i) && summary_line(vs_line(s, i), &p, &f, &sk))
			vs_counts(s, p, f, sk, 0);
	}
}

const struct verify_parser verify_parser_summary = { "summary", NULL, summary_parse };

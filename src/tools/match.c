/*
 * The matching engine (see match.h): the passes that find `old`, the
 * explanations of a miss, and match_apply(). Placing the new lines where
 * a match was found (unchanged lines and indentation) is match_place.c;
 * what the two share is in match_internal.h.
 *
 * The matchers that find a passage only approximately (near miss, no
 * whitespace) are match_near.c; every exact and normalising pass, the
 * line-number stripping and the placeholder check stay here with the line
 * tables and normal forms they share (match_internal.h), so that the
 * chain's order can be checked in one place (match_apply_at()).
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "tools/fs.h"
#include "tools/match.h"
#include "tools/match_internal.h"

#define SHOW_LINE_BYTES 300	/* a line shown in an explanation is cut here */
#define SHOW_LINES 20		/* lines shown per passage */
#define SCORE_BUDGET 4000000	/* line comparisons spent on finding similar passages */

void match_split_lines(struct lines *out, const char *s, size_t len)
{
	size_t pos = 0;

	out->v = NULL;
	out->nr = out->alloc = 0;
	while (pos < len) {
		const char *nl = memchr(s + pos, '\n', len - pos);
		struct line *l;

		ALLOC_GROW(out->v, out->nr + 1, out->alloc);
		l = &out->v[out->nr++];
		l->start = pos;
		if (nl) {
			l->end = (size_t)(nl - s);
			l->next = l->end + 1;
			if (l->end > pos && s[l->end - 1] == '\r')
				l->end--;
		} else {
			l->end = l->next = len;
		}
		pos = l->next;
	}
}

int match_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* The content of a line without leading and trailing blanks. */
void match_trimmed(const char *s, const struct line *l, size_t *a, size_t *b)
{
	size_t x = l->start, y = l->end;

	while (x < y && match_is_blank(s[x]))
		x++;
	while (y > x && match_is_blank(s[y - 1]))
		y--;
	*a = x;
	*b = y;
}

static int same_trimmed(const char *s, const struct line *l, const char *t, const struct line *m)
{
	size_t a, b, c, d;

	match_trimmed(s, l, &a, &b);
	match_trimmed(t, m, &c, &d);
	return b - a == d - c && !memcmp(s + a, t + c, b - a);
}

/* 1-based line of byte `off`. */
size_t match_line_of(const char *s, size_t off)
{
	size_t n = 1;
	const char *p = s, *end = s + off;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		n++;
		p++;
	}
	return n;
}

/* Show lines [from, to) of `text` (0-based indexes into `ls`) numbered. */
void match_show_passage(struct buf *why, const char *text, const struct lines *ls, size_t from,
		       size_t to)
{
	size_t i;

	for (i = from; i < to && i < ls->nr; i++) {
		const struct line *l = &ls->v[i];
		size_t n = l->end - l->start;

		if (i - from == SHOW_LINES) {
			buf_addf(why, "      \t[... %zu more lines]\n", to - i);
			break;
		}
		fs_add_lineno(why, i + 1);
		if (n > SHOW_LINE_BYTES) {
			buf_add(why, text + l->start, utf8_cut(text + l->start, n, SHOW_LINE_BYTES));
			buf_addf(why, " [... %zu more bytes]\n", n - SHOW_LINE_BYTES);
		} else {
			buf_add(why, text + l->start, n);
			buf_addch(why, '\n');
		}
	}
}

/* ---- similarity, for "did you mean" ---- */

/* Sorted byte pairs of the trimmed line. */
struct bigrams {
	uint16_t *v;
	size_t nr;
};

static int cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

static void make_bigrams(struct bigrams *bg, const char *s, const struct line *l)
{
	size_t a, b, i;

	match_trimmed(s, l, &a, &b);
	bg->nr = b - a > 1 ? b - a - 1 : 0;
	bg->v = bg->nr ? xmalloc(bg->nr * sizeof(*bg->v)) : NULL;
	for (i = 0; i < bg->nr; i++)
		bg->v[i] = (uint16_t)(((unsigned char)s[a + i] << 8) | (unsigned char)s[a + i + 1]);
	if (bg->nr)
		qsort(bg->v, bg->nr, sizeof(*bg->v), cmp_u16);
}

/* Dice coefficient of two lines' byte pairs, 0..1. */
static double dice(const struct bigrams *x, const struct bigrams *y, const char *s,
		   const struct line *l, const char *t, const struct line *m)
{
	size_t i = 0, j = 0, common = 0;

	if (!x->nr || !y->nr)
		return same_trimmed(s, l, t, m) ? 1.0 : 0.0;
	while (i < x->nr && j < y->nr) {
		if (x->v[i] == y->v[j]) {
			common++;
			i++;
			j++;
		} else if (x->v[i] < y->v[j]) {
			i++;
		} else {
			j++;
		}
	}
	return 2.0 * (double)common / (double)(x->nr + y->nr);
}

/* Levenshtein distance of two byte strings (each cut at MATCH_LEV_MAX). */
size_t match_levenshtein(const char *a, size_t n, const char *b, size_t m)
{
	size_t row[MATCH_LEV_MAX + 1], i, j;

	if (n > MATCH_LEV_MAX)
		n = MATCH_LEV_MAX;
	if (m > MATCH_LEV_MAX)
		m = MATCH_LEV_MAX;
	for (j = 0; j <= m; j++)
		row[j] = j;
	for (i = 1; i <= n; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= m; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[m];
}

/* Line-wise edit-distance similarity of old's lines and the file's lines from `s`. */
static double lev_similarity(const char *text, const struct lines *fl, size_t s, const char *old,
			     const struct lines *ol)
{
	size_t i, dist = 0, size = 0;

	for (i = 0; i < ol->nr; i++) {
		size_t a, b, c = 0, d = 0, n, m;

		match_trimmed(old, &ol->v[i], &a, &b);
		if (s + i < fl->nr)
			match_trimmed(text, &fl->v[s + i], &c, &d);
		n = b - a < MATCH_LEV_MAX ? b - a : MATCH_LEV_MAX;
		m = d - c < MATCH_LEV_MAX ? d - c : MATCH_LEV_MAX;
		dist += match_levenshtein(old + a, n, text + c, m);
		size += n > m ? n : m;
	}
	return size ? 1.0 - (double)dist / (double)size : 1.0;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct match_cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The (at most `max`) windows of as many lines as `old` that are most like
 * it by the Dice coefficient of their lines' byte pairs and do not overlap,
 * best first, into `top`; their count.
 */
size_t match_rank_windows(struct match_cand *top, size_t max, const char *text,
			   const struct lines *fl, const char *old, const struct lines *ol)
{
	struct bigrams *fb, *ob;
	struct match_cand *c;
	size_t windows, k = ol->nr, i, s, ntop = 0, step = 1, used;

	if (!fl->nr)
		return 0;
	windows = fl->nr >= k ? fl->nr - k + 1 : 1;
	/* Compare every old line only when the budget allows; else every step-th. */
	while (windows * ((k + step - 1) / step) > SCORE_BUDGET && step < k)
		step++;
	fb = xcalloc(fl->nr, sizeof(*fb));
	ob = xcalloc(k + 1, sizeof(*ob));
	for (i = 0; i < fl->nr; i++)
		make_bigrams(&fb[i], text, &fl->v[i]);
	for (i = 0; i < k; i++)
		make_bigrams(&ob[i], old, &ol->v[i]);
	c = xmalloc(windows * sizeof(*c));
	for (s = 0; s < windows; s++) {
		double sum = 0;

		used = 0;
		for (i = 0; i < k; i += step, used++)
			if (s + i < fl->nr)
				sum += dice(&ob[i], &fb[s + i], old, &ol->v[i], text, &fl->v[s + i]);
		c[s].start = s;
		c[s].score = used ? sum / (double)used : 0;
	}
	qsort(c, windows, sizeof(*c), cmp_cand);
	for (s = 0; s < windows && ntop < max; s++) {
		size_t j;
		int overlaps = 0;

		for (j = 0; j < ntop; j++) {
			size_t a = top[j].start, b = c[s].start;

			if ((a > b ? a - b : b - a) < (k ? k : 1))
				overlaps = 1;
		}
		if (!overlaps)
			top[ntop++] = c[s];
	}
	for (i = 0; i < fl->nr; i++)
		free(fb[i].v);
	for (i = 0; i < k; i++)
		free(ob[i].v);
	free(fb);
	free(ob);
	free(c);
	return ntop;
}

/* Append the three passages most like `old`, best first. */
static void closest(struct buf *why, const char *text, const struct lines *fl, const char *old,
		    const struct lines *ol, size_t *best)
{
	struct match_cand top[10];
	size_t k = ol->nr, i, ntop, shown = 0;

	if (!fl->nr) {
		buf_addstr(why, "The file is empty.\n");
		return;
	}
	/* The ten best that do not overlap, ranked again by edit distance. */
	ntop = match_rank_windows(top, ARRAY_SIZE(top), text, fl, old, ol);
	for (i = 0; i < ntop; i++)
		top[i].score = lev_similarity(text, fl, top[i].start, old, ol);
	qsort(top, ntop, sizeof(*top), cmp_cand);
	for (i = 0; i < ntop && shown < 3; i++) {
		size_t from = top[i].start, to = from + k < fl->nr ? from + k : fl->nr;

		if (top[i].score <= 0.0)
			break;
		if (!shown) {
			buf_addstr(why, "The most similar passages (line number, tab, text):\n");
			*best = from;
		}
		buf_addf(why, "--- lines %zu-%zu (%d%% similar):\n", from + 1, to,
			 (int)(top[i].score * 100.0 + 0.5));
		match_show_passage(why, text, fl, from, to);
		shown++;
	}
	if (!shown)
		buf_addstr(why, "No passage of the file resembles it.\n");
}

/* ---- line ends ---- */

const char *match_eol_of(const char *text, size_t len)
{
	size_t crlf = 0, lf = 0, i;

	for (i = 0; i < len; i++) {
		if (text[i] != '\n')
			continue;
		if (i && text[i - 1] == '\r')
			crlf++;
		else
			lf++;
	}
	return crlf > lf ? "\r\n" : "\n";
}

/* Append `s` with every line end (LF or CRLF) written as `eol`. */
void match_add_with_eol(struct buf *out, const char *s, size_t n, const char *eol)
{
	size_t i = 0;

	while (i < n) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t e;

		if (!nl) {
			buf_add(out, s + i, n - i);
			break;
		}
		e = (size_t)(nl - s);
		buf_add(out, s + i, (e > i && s[e - 1] == '\r' ? e - 1 : e) - i);
		buf_addstr(out, eol);
		i = e + 1;
	}
}

/* Give `t` the final-newline state of the original text (`orig`, `len` bytes). */
static void keep_final_newline(struct buf *t, const char *orig, size_t len, const char *eol)
{
	int had = len && orig[len - 1] == '\n';

	if (!len || !t->len)
		return;
	if (had && t->buf[t->len - 1] != '\n') {
		buf_addstr(t, eol);
		return;
	}
	while (!had && t->len && t->buf[t->len - 1] == '\n') {
		buf_setlen(t, t->len - 1);
		if (t->len && t->buf[t->len - 1] == '\r')
			buf_setlen(t, t->len - 1);
	}
}

/* ---- normal forms of lines ---- */

const char *match_pass_name(enum match_pass pass)
{
	switch (pass) {
	case MATCH_EXACT: return "exactly";
	case MATCH_TRAILING: return "ignoring trailing whitespace";
	case MATCH_INDENT: return "ignoring indentation and trailing whitespace";
	case MATCH_SPACES: return "ignoring indentation and runs of spaces inside lines";
	case MATCH_UNICODE: return "ignoring whitespace and folding typographic punctuation "
				  "(curly quotes, dashes, no-break spaces) to ASCII";
	case MATCH_ESCAPES: return "after undoing doubled escapes (\\n, \\\", \\', ...)";
	case MATCH_TABS: return "after writing the tabs inside its lines as \\t, as the file has them";
	case MATCH_LINENO: return "after removing the line numbers copied from a read "
				  "(\"N<tab>\" or \"N | \")";
	case MATCH_NEAR: return "approximately";
	case MATCH_CASE: return "ignoring letter case (new_string was written as sent)";
	case MATCH_NOSPACE: return "with all whitespace and line breaks left out (new_string "
				   "was written as sent, in place of the matched text)";
	}
	return "?";
}

/* The ASCII that the typographic character at `s` folds to (its length in *used), or NULL. */
static const char *fold_char(const unsigned char *s, size_t n, size_t *used)
{
	*used = n >= 3 ? 3 : 2;
	if (n >= 2 && s[0] == 0xc2 && s[1] == 0xa0) {
		*used = 2;
		return " ";				/* U+00A0 no-break space */
	}
	if (n < 3)
		return NULL;
	if (s[0] == 0xe2 && s[1] == 0x80) {
		unsigned c = s[2];

		if (c >= 0x90 && c <= 0x95)
			return "-";			/* U+2010-2015 hyphens and dashes */
		if (c >= 0x98 && c <= 0x9b)
			return "'";			/* U+2018-201B single quotes */
		if (c >= 0x9c && c <= 0x9f)
			return "\"";			/* U+201C-201F double quotes */
		if (c >= 0x80 && c <= 0x8a)
			return " ";			/* U+2000-200A spaces */
		if (c == 0xaf)
			return " ";			/* U+202F narrow no-break space */
		if (c == 0xa6)
			return "...";			/* U+2026 ellipsis */
	}
	if (s[0] == 0xe2 && s[1] == 0x88 && s[2] == 0x92)
		return "-";				/* U+2212 minus */
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] == 0x9f)
		return " ";				/* U+205F medium mathematical space */
	if (s[0] == 0xe3 && s[1] == 0x80 && s[2] == 0x80)
		return " ";				/* U+3000 ideographic space */
	return NULL;
}

void match_norm_line(struct buf *out, const char *s, size_t n, enum match_pass level)
{
	struct buf tmp = BUF_INIT;
	size_t a = 0, b, i, start = out->len;

	if (level >= MATCH_UNICODE) {
		struct buf nfd = BUF_INIT;

		/* canonically equivalent text first made one (é and e + U+0301) */
		match_nfd(&nfd, s, n);
		s = nfd.buf;
		n = nfd.len;
		for (i = 0; i < n;) {
			size_t used;
			const char *f = (unsigned char)s[i] >= 0xc2
				? fold_char((const unsigned char *)s + i, n - i, &used) : NULL;

			if (f) {
				buf_addstr(&tmp, f);
				i += used;
			} else {
				buf_addch(&tmp, s[i++]);
			}
		}
		buf_release(&nfd);
		s = tmp.buf;
		n = tmp.len;
	}
	b = n;
	if (level >= MATCH_TRAILING)
		while (b > a && match_is_blank(s[b - 1]))
			b--;
	if (level >= MATCH_INDENT)
		while (a < b && match_is_blank(s[a]))
			a++;
	if (level >= MATCH_SPACES) {
		for (i = a; i < b;) {
			if (match_is_blank(s[i])) {
				buf_addch(out, ' ');
				while (i < b && match_is_blank(s[i]))
					i++;
			} else {
				buf_addch(out, s[i++]);
			}
		}
	} else {
		buf_add(out, s + a, b - a);
	}
	if (level == MATCH_CASE) {
		buf_reset(&tmp);
		match_fold(&tmp, NULL, out->buf + start, out->len - start);
		buf_setlen(out, start);
		buf_addbuf(out, &tmp);
	}
	buf_release(&tmp);
}

/* The lines of a text in the normal form of one pass. */
struct normed {
	struct buf b;
	size_t *off;		/* line i is b.buf[off[i] .. off[i + 1]) */
	uint64_t *h;
	size_t nr;
	int all_empty;
};

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ull;
	}
	return h;
}

static void norm_lines(struct normed *o, const char *s, const struct lines *ls,
		       enum match_pass level)
{
	size_t i;

	buf_init(&o->b, 0);
	o->nr = ls->nr;
	o->off = xmalloc((ls->nr + 1) * sizeof(*o->off));
	o->h = xmalloc((ls->nr + 1) * sizeof(*o->h));
	o->all_empty = 1;
	for (i = 0; i < ls->nr; i++) {
		o->off[i] = o->b.len;
		match_norm_line(&o->b, s + ls->v[i].start, ls->v[i].end - ls->v[i].start, level);
		o->h[i] = fnv(o->b.buf + o->off[i], o->b.len - o->off[i]);
		if (o->b.len > o->off[i])
			o->all_empty = 0;
	}
	o->off[ls->nr] = o->b.len;
}

static void normed_release(struct normed *o)
{
	buf_release(&o->b);
	free(o->off);
	free(o->h);
}

static int normed_eq(const struct normed *f, size_t i, const struct normed *o, size_t j)
{
	size_t n = f->off[i + 1] - f->off[i];

	return f->h[i] == o->h[j] && n == o->off[j + 1] - o->off[j] &&
	       !memcmp(f->b.buf + f->off[i], o->b.buf + o->off[j], n);
}

/*
 * Where the lines of `o` match runs of lines of `f`: the count, every place
 * in *places (to free). With `apart`, places do not overlap (replace_all).
 */
static size_t find_lines(const struct normed *f, const struct normed *o, size_t **places,
			 int apart)
{
	size_t s, i, found = 0, alloc = 0;

	*places = NULL;
	if (!o->nr || o->nr > f->nr || o->all_empty)
		return 0;
	for (s = 0; s + o->nr <= f->nr; s++) {
		for (i = 0; i < o->nr; i++)
			if (!normed_eq(f, s + i, o, i))
				break;
		if (i == o->nr) {
			ALLOC_GROW(*places, found + 1, alloc);
			(*places)[found++] = s;
			if (apart)
				s += o->nr - 1;
		}
	}
	return found;
}

/* Slices of the lines `ls` of `s` (without line ends). */
static struct match_slice *slices_of(const char *s, const struct lines *ls)
{
	struct match_slice *v = xmalloc((ls->nr + 1) * sizeof(*v));
	size_t i;

	for (i = 0; i < ls->nr; i++) {
		v[i].s = s + ls->v[i].start;
		v[i].n = ls->v[i].end - ls->v[i].start;
	}
	return v;
}

/* ---- what differs, when nothing matched ---- */

static void describe_char(struct buf *out, const char *s, size_t n)
{
	unsigned char c;

	if (!n) {
		buf_addstr(out, "the end of the line");
		return;
	}
	c = (unsigned char)s[0];
	if (c == ' ')
		buf_addstr(out, "a space");
	else if (c == '\t')
		buf_addstr(out, "a tab");
	else if (c == '\r')
		buf_addstr(out, "a carriage return");
	else if (c < 0x20 || c == 0x7f)
		buf_addf(out, "the control character 0x%02x", c);
	else if (c < 0x80)
		buf_addf(out, "'%c'", c);
	else {
		size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2, i;
		unsigned cp = c & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);

		if (len > n)
			len = n;
		for (i = 1; i < len; i++)
			cp = (cp << 6) | ((unsigned char)s[i] & 0x3f);
		buf_addf(out, "U+%04X '", cp);
		buf_add(out, s, len);
		buf_addch(out, '\'');
	}
}

static void diff_line(struct buf *why, char mark, const struct match_slice *l)
{
	buf_addch(why, mark);
	if (l->n > SHOW_LINE_BYTES) {
		buf_add(why, l->s, utf8_cut(l->s, l->n, SHOW_LINE_BYTES));
		buf_addf(why, " [... %zu more bytes]\n", l->n - SHOW_LINE_BYTES);
	} else {
		buf_add(why, l->s, l->n);
		buf_addch(why, '\n');
	}
}

#define DIFF_LINES 40

/* A line diff of old's lines (-) against the file's lines [from, to) (+). */
static void show_diff(struct buf *why, const char *old, const struct lines *ol, const char *text,
		      const struct lines *fl, size_t from, size_t to)
{
	struct match_slice *o = slices_of(old, ol), *f = slices_of(text, fl) + from;
	size_t k = ol->nr, m = to - from, i = 0, j = 0, shown = 0;
	long *map = xmalloc((m + 1) * sizeof(*map));

	match_lcs_map(map, o, k, f, m);
	buf_addf(why, "What differs between old_string (-) and lines %zu-%zu of the file (+), "
		 "' ' for lines that agree:\n", from + 1, to);
	while ((i < k || j < m) && shown < DIFF_LINES) {
		size_t i1 = i, j1 = j, t;

		if (j < m && map[j] >= 0 && (size_t)map[j] == i) {
			diff_line(why, ' ', &f[j]);
			i++;
			j++;
			shown++;
			continue;
		}
		while (j1 < m && map[j1] < 0)
			j1++;
		i1 = j1 < m ? (size_t)map[j1] : k;
		for (t = i; t < i1 && shown < DIFF_LINES; t++, shown++)
			diff_line(why, '-', &o[t]);
		for (t = j; t < j1 && shown < DIFF_LINES; t++, shown++)
			diff_line(why, '+', &f[t]);
		for (t = 0; t < i1 - i && t < j1 - j && t < 3; t++) {
			const struct match_slice *a = &o[i + t], *b = &f[j + t];
			size_t c = 0;

			while (c < a->n && c < b->n && a->s[c] == b->s[c])
				c++;
			buf_addf(why, "  (pair %zu: from column %zu old_string has ", t + 1, c + 1);
			describe_char(why, a->s + c, a->n - c);
			buf_addstr(why, ", the file has ");
			describe_char(why, b->s + c, b->n - c);
			buf_addstr(why, ")\n");
		}
		i = i1;
		j = j1;
	}
	if (i < k || j < m)
		buf_addstr(why, "[... the rest of the diff left out]\n");
	free(o);
	free(f - from);
	free(map);
}

static void explain_missing(struct buf *why, const char *text, const struct lines *fl,
			    const char *old, const struct lines *ol)
{
	size_t best = SIZE_MAX;

	closest(why, text, fl, old, ol, &best);
	if (best != SIZE_MAX && ol->nr)
		show_diff(why, old, ol, text, fl, best, best + ol->nr < fl->nr ? best + ol->nr : fl->nr);
}

void match_explain_missing(struct buf *why, const char *text, size_t len, const char *old,
			  size_t old_len)
{
	struct lines fl, ol;

	match_split_lines(&fl, text, len);
	match_split_lines(&ol, old, old_len);
	explain_missing(why, text, &fl, old, &ol);
	free(fl.v);
	free(ol.v);
}

/* ---- the edit ---- */

void match_result_release(struct match_result *res)
{
	buf_release(&res->text);
	res->count = 0;
	res->pass = MATCH_EXACT;
	res->span = 0;
	res->blank_edges = 0;
	res->level = MATCH_EXACT;
	res->similar = 0;
	res->differ = 0;
	res->by_line = 0;
	res->laid_out = 0;
	free(res->respelt);
	res->respelt = NULL;
	memset(res->lines, 0, sizeof(res->lines));
}

static void note_line(struct match_result *out, size_t line)
{
	if (out->count < MATCH_MAX_LINES_NOTED)
		out->lines[out->count] = line;
	out->count++;
}

static size_t find_exact(size_t **hits, size_t *ahits, const char *text, size_t len,
			 const char *old, size_t old_len)
{
	size_t n = 0, pos = 0;

	while (pos + old_len <= len) {
		const char *p = memmem(text + pos, len - pos, old, old_len);

		if (!p)
			break;
		ALLOC_GROW(*hits, n + 1, *ahits);
		(*hits)[n++] = (size_t)(p - text);
		pos = (size_t)(p - text) + old_len;
	}
	return n;
}

/* What a refusal for several matches adds about start_line. */
static void hint_start_line(struct buf *why, size_t start_line)
{
	if (start_line)
		buf_addf(why, "start_line %zu is not within exactly one of them. ", start_line);
	else
		buf_addstr(why, "Or give start_line, the line where the one you mean starts. ");
}

static void explain_exact_ambiguity(struct buf *why, const char *text, const struct lines *fl,
				    const size_t *hits, size_t nhits, size_t old_len,
				    size_t start_line, const char *name)
{
	size_t i;

	buf_addf(why, "old_string occurs %zu times in %s, at lines", nhits, name);
	for (i = 0; i < nhits && i < 10; i++)
		buf_addf(why, "%s %zu", i ? "," : "", match_line_of(text, hits[i]));
	buf_addf(why, "%s. Include more of the surrounding lines to make it unique, or set "
		 "replace_all to change every occurrence. ", nhits > 10 ? ", ..." : "");
	hint_start_line(why, start_line);
	buf_addch(why, '\n');
	for (i = 0; i < nhits && i < 3; i++) {
		size_t a = match_line_of(text, hits[i]) - 1;
		size_t b = match_line_of(text, hits[i] + old_len - 1);

		if (a + 1 == b)
			buf_addf(why, "--- occurrence %zu (line %zu, with one line around it):\n",
				 i + 1, b);
		else
			buf_addf(why, "--- occurrence %zu (lines %zu-%zu, with one line around "
				 "it):\n", i + 1, a + 1, b);
		match_show_passage(why, text, fl, a ? a - 1 : 0, b + 1);
	}
}

/*
 * Of `n` places (0-based first lines, `span` lines each), the one that
 * holds line `sl` (1-based): the one starting there, else the only one
 * that covers it. -1 when there is no hint, or none or several cover it.
 */
long match_pick_by_line(const size_t *first, size_t n, size_t span, size_t sl)
{
	size_t i, covering = 0;
	long hit = -1;

	if (!sl)
		return -1;
	for (i = 0; i < n; i++)
		if (first[i] + 1 == sl)
			return (long)i;
	for (i = 0; i < n; i++)
		if (first[i] + 1 < sl && sl < first[i] + 1 + (span ? span : 1)) {
			hit = (long)i;
			covering++;
		}
	return covering == 1 ? hit : -1;
}

/* Replace every hit (old_len bytes each) with `rep`. */
static void replace_hits(struct match_result *out, const char *text, size_t len, const size_t *hits,
			 size_t nhits, size_t old_len, const char *rep, size_t rep_len)
{
	size_t done = 0, line = 1, nl_new = 0, i;

	for (i = 0; i < rep_len; i++)
		nl_new += rep[i] == '\n';
	for (i = 0; i < nhits; i++) {
		const char *p = text + done, *end = text + hits[i];

		/* Lines before this hit in the new text: old lines, shifted by earlier edits. */
		while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
			line++;
			p++;
		}
		note_line(out, line);
		buf_add(&out->text, text + done, hits[i] - done);
		buf_add(&out->text, rep, rep_len);
		line += nl_new;
		done = hits[i] + old_len;	/* the newlines of old are gone */
	}
	buf_add(&out->text, text + done, len - done);
	out->span = nl_new + (rep_len && rep[rep_len - 1] != '\n');
}

/* 1-based line of the end of out->text, where the next line placed starts. */
static size_t next_line(const struct match_result *out)
{
	return match_line_of(out->text.buf ? out->text.buf : "", out->text.len);
}

/*
 * Replace the matches at `places` (`n` of them, first lines of the file,
 * `ol.nr` lines each) with the lines of `new_text`, placed by
 * match_place_lines().
 */
int match_place_all(struct match_result *out, const char *text, size_t len,
		     const struct lines *fl, const size_t *places, size_t n, const char *old,
		     const struct lines *ol, const char *new_text, const struct lines *nl,
		     const char *eol, const char *name, struct buf *why)
{
	struct match_slice *fs = slices_of(text, fl), *os = slices_of(old, ol);
	struct match_slice *ns = slices_of(new_text, nl);
	size_t done = 0, i, k = ol->nr;
	int ret = 0;

	for (i = 0; i < n; i++) {
		size_t s = places[i];

		buf_add(&out->text, text + done, fl->v[s].start - done);
		note_line(out, next_line(out));
		ret = match_place_lines(&out->text, fs + s, os, k, ns, nl->nr, eol, name, s + 1, why);
		if (ret < 0)
			break;
		out->laid_out += (size_t)ret;
		ret = 0;
		done = fl->v[s + k - 1].next;
	}
	if (!ret)
		buf_add(&out->text, text + done, len - done);
	out->span = nl->nr;
	free(fs);
	free(os);
	free(ns);
	return ret;
}

/*
 * Passes 1-5 for `old` -> `new`. FX_ENOTFOUND when no pass found anything
 * (nothing appended to `why`); FX_EINVAL with the reason otherwise. `wrap`
 * is the matcher that prepared `old` (MATCH_ESCAPES, MATCH_LINENO), or
 * MATCH_EXACT.
 */
static int try_passes(struct match_result *out, const char *text, size_t len,
		      const struct lines *fl, const char *old, size_t old_len,
		      const char *new_text, size_t new_len, int replace_all, size_t start_line,
		      enum match_pass wrap, const char *name, struct buf *why)
{
	const char *eol = match_eol_of(text, len);
	struct buf conv_old = BUF_INIT, conv_new = BUF_INIT;
	struct lines ol = { NULL, 0, 0 }, nl = { NULL, 0, 0 };
	size_t *hits = NULL, ahits = 0, nhits, mlen = old_len, *places = NULL;
	enum match_pass level;
	int ret = FX_ENOTFOUND;
	long pick = -1;

	if (!old_len)
		return FX_ENOTFOUND;	/* what a matcher left of old: nothing to find */
	match_add_with_eol(&conv_new, new_text, new_len, eol);
	if (wrap == MATCH_CASE)
		goto lines;	/* the exact forms were tried already */
	nhits = find_exact(&hits, &ahits, text, len, old, old_len);
	if (!nhits) {
		match_add_with_eol(&conv_old, old, old_len, eol);
		if (conv_old.len != old_len || memcmp(conv_old.buf, old, old_len)) {
			nhits = find_exact(&hits, &ahits, text, len, conv_old.buf, conv_old.len);
			mlen = conv_old.len;
		}
	}
	if (nhits > 1 && !replace_all && start_line) {
		size_t *first = xmalloc(nhits * sizeof(*first)), i, span = 1;

		for (i = 0; i < nhits; i++)
			first[i] = match_line_of(text, hits[i]) - 1;
		for (i = 0; i + 1 < mlen; i++)
			span += (conv_old.len ? conv_old.buf : old)[i] == '\n';
		pick = match_pick_by_line(first, nhits, span, start_line);
		free(first);
		if (pick >= 0) {
			hits[0] = hits[pick];
			nhits = 1;
			out->by_line = start_line;
		}
	}
	if (nhits == 1 && memchr(text + hits[0], '\n', mlen) &&
	    strcmp(match_eol_of(text + hits[0], mlen), eol)) {
		/* a file of mixed line ends: new_string takes those of the text it replaces */
		buf_reset(&conv_new);
		match_add_with_eol(&conv_new, new_text, new_len, match_eol_of(text + hits[0], mlen));
	}
	if (nhits == 1 || (nhits && replace_all)) {
		replace_hits(out, text, len, hits, nhits, mlen, conv_new.buf, conv_new.len);
		out->pass = wrap;
		out->level = MATCH_EXACT;
		ret = 0;
		goto out;
	}
	if (nhits > 1) {
		explain_exact_ambiguity(why, text, fl, hits, nhits, mlen, start_line, name);
		ret = FX_EINVAL;
		goto out;
	}
lines:
	match_split_lines(&ol, old, old_len);
	match_split_lines(&nl, new_text, new_len);
	for (level = wrap == MATCH_CASE ? MATCH_CASE : MATCH_TRAILING;
	     level <= (wrap == MATCH_CASE ? MATCH_CASE : MATCH_UNICODE); level++) {
		struct normed fn, on;
		size_t found, i;

		norm_lines(&on, old, &ol, level);
		if (on.all_empty || on.nr > fl->nr) {
			normed_release(&on);
			continue;
		}
		norm_lines(&fn, text, fl, level);
		found = find_lines(&fn, &on, &places, replace_all);
		normed_release(&fn);
		normed_release(&on);
		if (found > 1 && !replace_all) {
			pick = match_pick_by_line(places, found, ol.nr, start_line);
			if (pick >= 0) {
				places[0] = places[pick];
				found = 1;
				out->by_line = start_line;
			}
		}
		if (found == 1 || (found && replace_all)) {
			ret = match_place_all(out, text, len, fl, places, found, old, &ol, new_text, &nl, eol,
					name, why);
			out->pass = wrap ? wrap : level;
			out->level = level;
			goto out;
		}
		if (found > 1) {
			buf_addf(why, "old_string does not occur exactly in %s, and %s it matches %zu "
				 "places, at lines", name, match_pass_name(level), found);
			for (i = 0; i < found && i < 10; i++)
				buf_addf(why, "%s %zu", i ? "," : "", places[i] + 1);
			buf_addf(why, "%s. Include more of the surrounding lines to make it unique. ",
				 found > 10 ? ", ..." : "");
			hint_start_line(why, start_line);
			buf_addch(why, '\n');
			for (i = 0; i < found && i < 3; i++) {
				buf_addf(why, "--- place %zu (lines %zu-%zu):\n", i + 1, places[i] + 1,
					 places[i] + ol.nr);
				match_show_passage(why, text, fl, places[i], places[i] + ol.nr);
			}
			ret = FX_EINVAL;
			goto out;
		}
		free(places);
		places = NULL;
	}
out:
	free(hits);
	free(places);
	free(ol.v);
	free(nl.v);
	buf_release(&conv_old);
	buf_release(&conv_new);
	return ret;
}

/*
 * The part of `s` without its leading blank lines and its trailing blank
 * lines (a last line end stays): [*a, *b). 0 when there are none, or
 * nothing but blank lines.
 */
static int blank_edges(const char *s, size_t n, size_t *a, size_t *b)
{
	size_t x = 0, y = n, i;

	*a = 0;
	*b = n;
	for (i = 0; i < n; i++) {
		if (s[i] == '\n')
			x = i + 1;
		else if (!match_is_blank(s[i]))
			break;
	}
	if (i == n)
		return 0;
	/* trailing: keep the end of the last line that has text */
	for (i = n; i > x; i--) {
		if (s[i - 1] == '\n')
			y = i;
		else if (!match_is_blank(s[i - 1]))
			break;
	}
	*a = x;
	*b = y;
	return x > 0 || y < n;
}

/* ---- the chain ---- */

int match_apply(struct match_result *out, const char *text, size_t len, const char *old,
	       size_t old_len, const char *new_text, size_t new_len, int replace_all,
	       const char *name, struct buf *why)
{
	return match_apply_at(out, text, len, old, old_len, new_text, new_len, replace_all, 0,
			      name, why);
}

int match_apply_at(struct match_result *out, const char *text, size_t len, const char *old,
		  size_t old_len, const char *new_text, size_t new_len, int replace_all,
		  size_t start_line, const char *name, struct buf *why)
{
	struct lines fl = { NULL, 0, 0 }, ol = { NULL, 0, 0 };
	struct buf uo = BUF_INIT, un = BUF_INIT, near_why = BUF_INIT;
	int ret;

	if (!old_len)
		return err_set(FX_EINVAL, "old_string is empty");
	if (old_len == new_len && !memcmp(old, new_text, old_len)) {
		buf_addstr(why, "old_string and new_string are the same; there is nothing to change\n");
		return FX_EINVAL;
	}
	if (replace_all)
		start_line = 0;
	match_split_lines(&fl, text, len);
	ret = try_passes(out, text, len, &fl, old, old_len, new_text, new_len, replace_all,
			 start_line, MATCH_EXACT, name, why);
	if (ret == FX_ENOTFOUND) {
		size_t oa = 0, ob = old_len, na = 0, nb = new_len;

		/* Blank lines at the edges of old that the file does not have. */
		if (blank_edges(old, old_len, &oa, &ob)) {
			blank_edges(new_text, new_len, &na, &nb);
			if (na > oa)
				na = oa;
			if (new_len - nb > old_len - ob)
				nb = new_len - (old_len - ob);
			ret = try_passes(out, text, len, &fl, old + oa, ob - oa, new_text + na, nb - na,
					 replace_all, start_line, MATCH_EXACT, name, why);
			if (!ret)
				out->blank_edges = 1;
		}
		/*
		 * What is left a piece of one line, with blanks around it that the
		 * file does not have: without them.
		 */
		while (oa < ob && (match_is_blank(old[oa]) || old[oa] == '\n'))
			oa++;
		while (ob > oa && (match_is_blank(old[ob - 1]) || old[ob - 1] == '\n'))
			ob--;
		if (ret == FX_ENOTFOUND && !memchr(old + oa, '\n', ob - oa)) {
			while (na < oa && na < nb && (match_is_blank(new_text[na]) || new_text[na] == '\n'))
				na++;
			while ((new_len - nb) < (old_len - ob) && nb > na &&
			       (match_is_blank(new_text[nb - 1]) || new_text[nb - 1] == '\n'))
				nb--;
			if (ob > oa && (oa || ob < old_len)) {
				ret = try_passes(out, text, len, &fl, old + oa, ob - oa, new_text + na,
						 nb - na, replace_all, start_line, MATCH_EXACT, name,
						 why);
				if (!ret)
					out->blank_edges = 2;
			}
		}
	}
	if (ret == FX_ENOTFOUND && memchr(old, '\\', old_len) && match_unescape(&uo, old, old_len)) {
		match_unescape(&un, new_text, new_len);
		ret = try_passes(out, text, len, &fl, uo.buf, uo.len, un.buf, un.len, replace_all,
				 start_line, MATCH_ESCAPES, name, why);
	}
	if (ret == FX_ENOTFOUND && memchr(old, '\t', old_len) && memmem(text, len, "\\t", 2)) {
		buf_reset(&uo);
		buf_reset(&un);
		if (match_escape_tabs(&uo, old, old_len)) {
			match_escape_tabs(&un, new_text, new_len);
			ret = try_passes(out, text, len, &fl, uo.buf, uo.len, un.buf, un.len,
					 replace_all, start_line, MATCH_TABS, name, why);
		}
	}
	if (ret == FX_ENOTFOUND) {
		enum match_lineno_style st = LN_NONE, nst;
		unsigned long first = 0, nfirst;
		size_t sl;

		buf_reset(&uo);
		buf_reset(&un);
		if (match_strip_linenos(&uo, old, old_len, &st, 1, &first) && !match_only_blanks(uo.buf, uo.len)) {
			/* new_string with its numbers removed too, or as it is when it has none */
			nst = st;
			sl = start_line ? start_line : first;
			if (new_len && !match_strip_linenos(&un, new_text, new_len, &nst, 0, &nfirst)) {
				buf_reset(&un);
				if (match_any_lineno(new_text, new_len))
					ret = FX_EINVAL;
				else
					buf_add(&un, new_text, new_len);
			}
			if (ret == FX_EINVAL)
				buf_addstr(why, "every line of old_string starts with a line number (as "
					   "a read shows them), but only some lines of new_string do, "
					   "so which of its numbers are text cannot be told. Nothing "
					   "was written. Send both without the line numbers.\n");
			else
				ret = try_passes(out, text, len, &fl, uo.buf, uo.len,
						 un.buf ? un.buf : "", un.len, replace_all, sl,
						 MATCH_LINENO, name, why);
		}
	}
	if (ret == FX_ENOTFOUND) {
		ret = match_try_near(out, text, len, &fl, old, old_len, new_text, new_len,
				     replace_all, start_line, name, &near_why);
		if (ret == FX_EINVAL)
			buf_addbuf(why, &near_why);	/* found, but several or not placeable */
	}
	if (ret == FX_ENOTFOUND && !replace_all)
		ret = try_passes(out, text, len, &fl, old, old_len, new_text, new_len, 0, start_line,
				 MATCH_CASE, name, why);
	if (ret == FX_ENOTFOUND && !replace_all)
		ret = match_try_case_piece(out, text, len, old, old_len, new_text, new_len);
	if (ret == FX_ENOTFOUND && !replace_all)
		ret = match_try_nospace(out, text, len, old, old_len, new_text, new_len, &near_why);
	if (!ret) {
		keep_final_newline(&out->text, text, len, match_eol_of(text, len));
		if (out->text.len == len && !memcmp(out->text.buf, text, len)) {
			buf_addf(why, "the edit leaves %s as it is: new_string differs from old_string "
				 "only in line ends or the final newline, which follow the file\n",
				 name);
			ret = FX_EINVAL;
		}
		goto out;
	}
	if (ret != FX_ENOTFOUND)
		goto out;
	/* nothing: say what is closest, and what differs */
	match_split_lines(&ol, old, old_len);
	buf_addf(why, "old_string was not found in %s%s.\n", name,
		 replace_all ? " (replace_all matches exactly, with whitespace and typographic "
			       "punctuation ignored, or approximately, never ignoring letter case)"
			     : ", not even ignoring whitespace, letter case, typographic "
			       "punctuation and doubled escapes, nor approximately");
	buf_addbuf(why, &near_why);
	explain_missing(why, text, &fl, old, &ol);
	buf_addstr(why, "Copy the text exactly as the file has it (without the line numbers and "
		   "the tab after them) and try again.\n");
out:
	if (ret < 0)
		match_result_release(out);
	buf_release(&uo);
	buf_release(&un);
	buf_release(&near_why);
	free(fl.v);
	free(ol.v);
	return ret;
}

void match_show_lines(struct buf *out, const char *text, size_t len, size_t from, size_t to)
{
	struct lines ls = { NULL, 0, 0 };

	match_split_lines(&ls, text, len);
	match_show_passage(out, text, &ls, from, to);
	free(ls.v);
}

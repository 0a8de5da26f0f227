/*
 * The matchers that find a passage only approximately, tried after every
 * exact and normalising pass of match.c found nothing (see match.h, 9-11):
 * the near-miss matcher (the passage clearly most like `old`, differing by
 * slips), and the one that compares the text with all whitespace left out.
 * The letter-case pass is a normal form of match.c's line passes.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "tools/match.h"
#include "tools/match_internal.h"

/* The line in the form the near-miss matcher compares: punctuation folded, no blanks at all. */
static void squeezed(struct buf *out, const char *s, size_t n)
{
	struct buf t = BUF_INIT;
	size_t i;

	match_norm_line(&t, s, n, MATCH_UNICODE);
	for (i = 0; i < t.len; i++)
		if (!match_is_blank(t.buf[i]))
			buf_addch(out, t.buf[i]);
	buf_release(&t);
}

struct near {
	double score;		/* 1 - edit distance / size, over the squeezed lines */
	size_t differ;		/* lines that differ beyond whitespace */
	double worst;		/* the similarity of the least similar of them */
	int typos;		/* they differ only in commas and semicolons */
	int misspelt;		/* one line, differing by a misspelling only (letter_slip) */
	size_t nspelt;		/* lines misspelt, each one word: */
	char spelt[4][2][MATCH_WORD_MAX];	/* the word as sent, as the file has it */
};

static int wordy(char c)
{
	return isalnum((unsigned char)c) || c == '_' || (unsigned char)c >= 0x80;
}

/*
 * The line with its punctuation folded, and blanks only where they keep
 * two words apart, as one space: `f ( a,b )` and `f(a, b)` are alike,
 * `return x` and `returnx` are not.
 */
static void spaced(struct buf *out, const char *s, size_t n)
{
	struct buf t = BUF_INIT;
	size_t i;

	match_norm_line(&t, s, n, MATCH_UNICODE);
	for (i = 0; i < t.len; i++) {
		if (!match_is_blank(t.buf[i]))
			buf_addch(out, t.buf[i]);
		else if (out->len && wordy(out->buf[out->len - 1]) && i + 1 < t.len &&
			 wordy(t.buf[i + 1]))
			buf_addch(out, ' ');
	}
	buf_release(&t);
}

/* The word of `b` (its bytes [*l, *r)) that holds the bytes [p, p + d). */
static void word_at(const struct buf *b, size_t p, size_t d, size_t *l, size_t *r)
{
	*l = p;
	*r = p + d;
	while (*l && wordy(b->buf[*l - 1]))
		(*l)--;
	while (*r < b->len && wordy(b->buf[*r]))
		(*r)++;
}

/* Whether `w` (`n` bytes) is a whole word somewhere in `text`. */
static int word_in(const char *text, size_t len, const char *w, size_t n)
{
	const char *p = text, *end = text + len;

	while ((size_t)(end - p) >= n && (p = memmem(p, (size_t)(end - p), w, n))) {
		if ((p == text || !wordy(p[-1])) && (p + n == end || !wordy(p[n])))
			return 1;
		p++;
	}
	return 0;
}

/*
 * Whether the model's line `o` is the file's line `f` misspelt (both in
 * spaced() form): one letter more or less, or two letters next to each
 * other swapped, inside a word of the file of four letters or more (`getUserNaem` for
 * `getUserName`, `mesage` for `message`, `nfo` for `info`), and the word
 * as the model spelt it is nowhere in the file. A letter changed into
 * another is no misspelling here (`getA` for `getB` names something
 * else), nor anything but a letter (`count -= 10` for `count += 10`), nor
 * a spelling that the file has: then it may well be another name.
 */
static int letter_slip(const struct buf *o, const struct buf *f, const char *text, size_t len,
		       char *as_sent, char *as_file)
{
	size_t p = 0, s = 0, n = o->len < f->len ? o->len : f->len, dofs, df, lo, ro, lf, rf;

	while (p < n && o->buf[p] == f->buf[p])
		p++;
	while (s < n - p && o->buf[o->len - 1 - s] == f->buf[f->len - 1 - s])
		s++;
	dofs = o->len - p - s;
	df = f->len - p - s;
	if (dofs + df == 1) {
		if (!isalpha((unsigned char)(dofs ? o->buf[p] : f->buf[p])))
			return 0;
	} else if (dofs == 2 && df == 2) {
		if (o->buf[p] != f->buf[p + 1] || o->buf[p + 1] != f->buf[p] ||
		    !isalpha((unsigned char)o->buf[p]) || !isalpha((unsigned char)o->buf[p + 1]))
			return 0;
	} else {
		return 0;
	}
	word_at(o, p, dofs, &lo, &ro);
	word_at(f, p, df, &lf, &rf);
	/* the file's word four letters or more: `cart` for `cat` is another word */
	if (rf - lf < 4 || ro - lo < 3 || ro - lo >= MATCH_WORD_MAX || rf - lf >= MATCH_WORD_MAX)
		return 0;
	if (word_in(text, len, o->buf + lo, ro - lo))
		return 0;
	memcpy(as_sent, o->buf + lo, ro - lo);
	as_sent[ro - lo] = '\0';
	memcpy(as_file, f->buf + lf, rf - lf);
	as_file[rf - lf] = '\0';
	return 1;
}

/*
 * `s` with each whole word `from` written `to`: new_string spelt as the
 * model spelt old_string's word is meant in the file's spelling
 * (`const mesage = 'Hi, all';` for the file's `message`), else the edit
 * would rename what it replaces. Returns how many it changed.
 */
static size_t respell(struct buf *out, const char *s, size_t n, const char *from, const char *to)
{
	size_t fl = strlen(from), i = 0, k = 0;

	while (i < n) {
		if (i + fl <= n && !memcmp(s + i, from, fl) && (!i || !wordy(s[i - 1])) &&
		    (i + fl == n || !wordy(s[i + fl]))) {
			buf_addstr(out, to);
			i += fl;
			k++;
			continue;
		}
		buf_addch(out, s[i++]);
	}
	return k;
}

static int is_quote(char c)
{
	return c == '\'' || c == '"' || c == '`';
}

/*
 * Whether two squeezed lines are the same but for slips: a comma or
 * semicolon missing or added, or one kind of quote written for another
 * ('hello' for "hello").
 */
static int same_but_typos(const struct buf *a, const struct buf *b)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < a->len && (a->buf[i] == ',' || a->buf[i] == ';'))
			i++;
		while (j < b->len && (b->buf[j] == ',' || b->buf[j] == ';'))
			j++;
		if (i == a->len || j == b->len)
			return i == a->len && j == b->len;
		if (a->buf[i] != b->buf[j] && !(is_quote(a->buf[i]) && is_quote(b->buf[j])))
			return 0;
		i++;
		j++;
	}
}

/*
 * Whether the model's squeezed line `o` is the file's `f` with text added
 * at one end, `f` holding half of it at least (` * note.diff` for the
 * file's ` * note`): nothing of the file's line goes unnamed. Taken
 * for a line inside the passage only.
 */
static int extended(const struct buf *o, const struct buf *f)
{
	if (!f->len || o->len <= f->len || 2 * f->len < o->len)
		return 0;
	return !memcmp(o->buf, f->buf, f->len) || !memcmp(o->buf + o->len - f->len, f->buf, f->len);
}

static void near_score(struct near *nr, const char *text, size_t len, const struct lines *fl,
		       size_t s, const char *old, const struct lines *ol)
{
	struct buf a = BUF_INIT, b = BUF_INIT, sa = BUF_INIT, sb = BUF_INIT;
	size_t i, dist = 0, size = 0;

	nr->differ = 0;
	nr->worst = 1.0;
	nr->typos = 1;
	nr->misspelt = 0;
	nr->nspelt = 0;
	for (i = 0; i < ol->nr && s + i < fl->nr; i++) {
		const struct line *o = &ol->v[i], *f = &fl->v[s + i];
		size_t d, big;

		buf_reset(&a);
		buf_reset(&b);
		squeezed(&a, old + o->start, o->end - o->start);
		squeezed(&b, text + f->start, f->end - f->start);
		big = a.len > b.len ? a.len : b.len;
		if (big > MATCH_LEV_MAX) {
			/* past what the distance looks at: the same, or wholly different */
			big = MATCH_LEV_MAX;
			d = a.len == b.len && !memcmp(a.buf, b.buf, a.len) ? 0 : big;
		} else {
			d = match_levenshtein(a.buf ? a.buf : "", a.len, b.buf ? b.buf : "", b.len);
		}
		if (d && !same_but_typos(&a, &b)) {
			nr->typos = 0;
			if (d < big && nr->nspelt < ARRAY_SIZE(nr->spelt)) {
				buf_reset(&sa);
				buf_reset(&sb);
				spaced(&sa, old + o->start, o->end - o->start);
				spaced(&sb, text + f->start, f->end - f->start);
				if (letter_slip(&sa, &sb, text, len, nr->spelt[nr->nspelt][0],
						nr->spelt[nr->nspelt][1])) {
					nr->nspelt++;
					/* one line: one slip, two letters swapped counting once */
					if (ol->nr == 1) {
						nr->misspelt = 1;
						d = 1;
					}
				}
			}
		}
		dist += d;
		size += big;
		if (d) {
			nr->differ++;
			/* an inner line only: at an edge, the text added may be the next line's */
			if (1.0 - (double)d / (double)big < nr->worst &&
			    !(i && i + 1 < ol->nr && extended(&a, &b)))
				nr->worst = 1.0 - (double)d / (double)big;
		}
	}
	if (i < ol->nr) {
		nr->differ += ol->nr - i;
		nr->worst = 0;
	}
	nr->score = size ? 1.0 - (double)dist / (double)size : 0;
	buf_release(&a);
	buf_release(&b);
	buf_release(&sa);
	buf_release(&sb);
}

/* Lines of `ls` in `s` that hold something else than blanks. */
static size_t nonblank_lines(const char *s, const struct lines *ls)
{
	size_t i, n = 0, a, b;

	for (i = 0; i < ls->nr; i++) {
		match_trimmed(s, &ls->v[i], &a, &b);
		n += b > a;
	}
	return n;
}


/* Whether the differences of a passage scored `nr` are slips only (see match_try_near). */
static int only_slips(const struct near *nr, const char *old, size_t old_len, size_t nb)
{
	struct buf sq = BUF_INIT;
	int ok;

	if (!nr->differ)
		return nr->score >= MATCH_NEAR_MIN;
	/*
	 * Below MATCH_NEAR_MIN over the whole passage only when one line alone
	 * differs and is still MATCH_NEAR_LINE_SHORT alike: a short passage
	 * with one slip of a name or type (`-> u32` for `-> usize`), which
	 * weighs more in a short passage than in a long one.
	 */
	if (nr->score < MATCH_NEAR_MIN &&
	    (nb < 2 || nr->differ != 1 || nr->worst < MATCH_NEAR_LINE_SHORT))
		return 0;
	if (nb == 1) {
		/*
		 * One line: only slips, and only in a line long enough to be told
		 * apart; or a misspelt word in a line of 12 characters or more.
		 */
		squeezed(&sq, old, old_len);
		ok = (nr->typos && sq.len >= 24) || (nr->misspelt && sq.len >= 12);
		buf_release(&sq);
		return ok;
	}
	/* at least one line the same, at most half of them differing beyond whitespace */
	if (nr->differ >= nb || (nb >= 4 && nr->differ > nb / 2))
		return 0;
	return nr->typos || nr->worst >= (nb < 4 ? MATCH_NEAR_LINE_SHORT : MATCH_NEAR_LINE);
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The near-miss matcher: the passage most like `old`, when it is within
 * MATCH_NEAR_MIN (or has one differing line only, see only_slips()) and
 * its differences are few: whitespace anywhere; beyond
 * whitespace at most half of the lines (and never all: one line at least
 * is the same), each still MATCH_NEAR_LINE alike (MATCH_NEAR_LINE_SHORT
 * under four lines, as Zed's matcher asks of every line), unless they
 * differ only by slips (a missing or added comma or semicolon, one quote
 * for another). A single line may differ only by slips, and only when it
 * has 24 characters or more: `count -= 10` for `count += 10` is another
 * text; or, in a line of 12 characters or more, by a misspelt word (see
 * letter_slip()).
 *
 * Which passage: the one that qualifies and is clearly closer
 * (MATCH_NEAR_MARGIN) than any other. Several that qualify and are as
 * close (the same block twice, with the same slip) are several readings:
 * replace_all replaces each, start_line chooses the one holding it, and
 * otherwise the refusal lists them.
 */
int match_try_near(struct match_result *out, const char *text, size_t len,
		   const struct lines *fl, const char *old, size_t old_len,
		   const char *new_text, size_t new_len, int replace_all, size_t start_line,
		   const char *name, struct buf *why)
{
	struct lines ol = { NULL, 0, 0 }, nl = { NULL, 0, 0 };
	struct buf respelt = BUF_INIT;
	struct match_cand top[10];
	struct near nr[10], *best = NULL;
	size_t ntop, i, nb, at = SIZE_MAX, start = why->len, places[10], nq = 0;
	double second_score = -1;
	int ret = FX_ENOTFOUND;
	long pick;

	match_split_lines(&ol, old, old_len);
	nb = nonblank_lines(old, &ol);
	if (!nb || ol.nr > fl->nr)
		goto out;
	ntop = match_rank_windows(top, ARRAY_SIZE(top), text, fl, old, &ol);
	for (i = 0; i < ntop; i++) {
		near_score(&nr[i], text, len, fl, top[i].start, old, &ol);
		if (!best || nr[i].score > best->score) {
			if (best)
				second_score = best->score;
			best = &nr[i];
			at = top[i].start;
		} else if (nr[i].score > second_score) {
			second_score = nr[i].score;
		}
	}
	if (!best || !only_slips(best, old, old_len, nb))
		goto out;
	/* the passages as close as the best that qualify too */
	for (i = 0; i < ntop; i++)
		if (nr[i].score >= best->score - 1e-9 && only_slips(&nr[i], old, old_len, nb))
			places[nq++] = top[i].start;
	if (nq == 1 && second_score > best->score - MATCH_NEAR_MARGIN) {
		buf_addf(why, "Lines %zu-%zu (%d%% alike) are the closest to old_string, but another "
			 "passage (%d%%) is about as close, so which one it means cannot be told.\n",
			 at + 1, at + ol.nr, (int)(best->score * 100), (int)(second_score * 100));
		goto out;
	}
	qsort(places, nq, sizeof(*places), cmp_size);
	if (nq > 1 && !replace_all) {
		pick = match_pick_by_line(places, nq, ol.nr, start_line);
		if (pick < 0) {
			buf_addf(why, "old_string is not in %s as written, and %zu passages are "
				 "equally close to it (%d%% alike), at lines", name, nq,
				 (int)(best->score * 100));
			for (i = 0; i < nq; i++)
				buf_addf(why, "%s %zu", i ? "," : "", places[i] + 1);
			buf_addstr(why, ". Include more of the surrounding lines to make it unique, "
				   "or set replace_all to change each of them. ");
			if (start_line)
				buf_addf(why, "start_line %zu is not within exactly one of them. ",
					 start_line);
			else
				buf_addstr(why, "Or give start_line, the line where the one you mean "
					   "starts. ");
			buf_addch(why, '\n');
			for (i = 0; i < nq && i < 3; i++) {
				buf_addf(why, "--- place %zu (lines %zu-%zu):\n", i + 1, places[i] + 1,
					 places[i] + ol.nr);
				match_show_passage(why, text, fl, places[i], places[i] + ol.nr);
			}
			ret = FX_EINVAL;
			goto out;
		}
		places[0] = places[pick];
		nq = 1;
		out->by_line = start_line;
	}
	/* new_string spelt as old_string's misspelt words is meant in the file's spelling */
	for (i = 0; i < best->nspelt; i++) {
		struct buf t = BUF_INIT;

		if (!respell(&t, new_text, new_len, best->spelt[i][0], best->spelt[i][1])) {
			buf_release(&t);
			continue;
		}
		buf_release(&respelt);
		respelt = t;
		new_text = respelt.buf;
		new_len = respelt.len;
		if (!out->respelt)
			out->respelt = xstrfmt("%s\n%s", best->spelt[i][0], best->spelt[i][1]);
	}
	match_split_lines(&nl, new_text, new_len);
	buf_addf(why, "old_string is not in %s as written; lines %zu-%zu, %d%% alike, are the only "
		 "close passage, but: ", name, places[0] + 1, places[0] + ol.nr,
		 (int)(best->score * 100));
	ret = match_place_all(out, text, len, fl, places, nq, old, &ol, new_text, &nl,
			      match_eol_of(text, len), name, why);
	if (!ret)
		buf_setlen(why, start);
	out->pass = MATCH_NEAR;
	out->level = MATCH_UNICODE;
	out->similar = (int)(best->score * 100);
	out->differ = best->differ;
out:
	free(ol.v);
	free(nl.v);
	buf_release(&respelt);
	return ret;
}

/* ---- whitespace left out altogether ---- */

/* The text with its bytes [a, b) replaced by `new` as sent: one replacement. */
static void put_piece(struct match_result *out, const char *text, size_t len, size_t a, size_t b,
		      const char *new_text, size_t new_len)
{
	size_t i, nl = 0;

	buf_add(&out->text, text, a);
	match_add_with_eol(&out->text, new_text, new_len, match_eol_of(text, len));
	buf_add(&out->text, text + b, len - b);
	out->count = 1;
	out->lines[0] = match_line_of(text, a);
	for (i = 0; i < new_len; i++)
		nl += new_text[i] == '\n';
	out->span = nl + (new_len && new_text[new_len - 1] != '\n');
}

/* The length of the Unicode space (U+00A0, U+2000-200A, U+202F, U+205F, U+3000) at `s`, or 0. */
static size_t uspace(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;

	if (n >= 2 && u[0] == 0xc2 && u[1] == 0xa0)
		return 2;
	if (n >= 3 && u[0] == 0xe2 && ((u[1] == 0x80 && (u[2] <= 0x8a || u[2] == 0xaf)) ||
				       (u[1] == 0x81 && u[2] == 0x9f)))
		return 3;
	if (n >= 3 && u[0] == 0xe3 && u[1] == 0x80 && u[2] == 0x80)
		return 3;
	return 0;
}

/*
 * `s` without whitespace (line breaks and Unicode spaces too); unless
 * `glue`, a space is kept between two word characters that had whitespace
 * between them. `at[i]` is the byte of `s` that out[i] came from.
 */
static void squeeze_all(struct buf *out, size_t **at, const char *s, size_t n, int glue)
{
	size_t i, alloc = 0, nr = 0, u;
	int gap = 0;

	*at = NULL;
	for (i = 0; i < n; i++) {
		if (match_is_blank(s[i]) || s[i] == '\n') {
			gap = 1;
			continue;
		}
		if ((u = uspace(s + i, n - i))) {
			gap = 1;
			i += u - 1;
			continue;
		}
		if (!glue && gap && out->len && wordy(out->buf[out->len - 1]) && wordy(s[i])) {
			ALLOC_GROW(*at, nr + 1, alloc);
			(*at)[nr++] = i;
			buf_addch(out, ' ');
		}
		gap = 0;
		ALLOC_GROW(*at, nr + 1, alloc);
		(*at)[nr++] = i;
		buf_addch(out, s[i]);
	}
}

/* Whether only blanks are left of the line at byte `at` of `s` (`n` bytes). */
static int at_eol(const char *s, size_t n, size_t at)
{
	while (at < n && match_is_blank(s[at]) && s[at] != '\r')
		at++;
	return at == n || s[at] == '\n' || s[at] == '\r';
}

/*
 * The occurrences of `so` in `sf` (squeezed text, `fat` its bytes in
 * `text`) that cut no word in two and, when `to_eol`, end where a line of
 * the text does; the first in *first.
 */
static size_t nospace_find(const struct buf *sf, const size_t *fat, const struct buf *so,
			   const char *text, size_t len, int to_eol, size_t *first)
{
	size_t found = 0, pos = 0;
	const char *p;

	while (pos + so->len <= sf->len &&
	       (p = memmem(sf->buf + pos, sf->len - pos, so->buf, so->len))) {
		size_t at = (size_t)(p - sf->buf), a = fat[at], b = fat[at + so->len - 1] + 1;

		/* a match must not cut a word of the text in two */
		if ((a && wordy(text[a - 1]) && wordy(so->buf[0])) ||
		    (b < len && wordy(text[b]) && wordy(so->buf[so->len - 1])) ||
		    (to_eol && !at_eol(text, len, b))) {
			pos = at + 1;
			continue;
		}
		if (!found++)
			*first = at;
		pos = at + so->len;
	}
	return found;
}

int match_try_nospace(struct match_result *out, const char *text, size_t len,
		      const char *old, size_t old_len, const char *new_text, size_t new_len,
		      struct buf *why)
{
	struct buf sf = BUF_INIT, so = BUF_INIT;
	size_t *fat = NULL, *oat = NULL, found = 0, first = 0, a, b, i;
	int ret = FX_ENOTFOUND, to_eol, glue;

	for (i = old_len; i > 0 && match_is_blank(old[i - 1]); i--)
		;
	/* old_string ending with its line's end: so must the match (no piece of a line left) */
	to_eol = i > 0 && old[i - 1] == '\n';
	/*
	 * Words kept apart (`returnx` is not `return x`), unless old_string
	 * holds no whitespace at all: a model that wrote the passage without
	 * any glued its words too, so the file's are glued as well (Continue's
	 * `if(typeofa==='number')`).
	 */
	for (i = 0; i < old_len && !match_is_blank(old[i]) && old[i] != '\n'; i++)
		;
	for (glue = 0; glue < 1 + (i == old_len) && !found; glue++) {
		free(fat);
		free(oat);
		buf_reset(&sf);
		buf_reset(&so);
		squeeze_all(&sf, &fat, text, len, glue);
		squeeze_all(&so, &oat, old, old_len, glue);
		/*
		 * A text this short without its spaces could be anywhere: 12
		 * characters at least, or 8 of two words or more kept apart
		 * (`alpha beta` for old_string's `alpha\nbeta`), which can match
		 * only where the file's words break the same way.
		 */
		if (so.len < (glue || !memchr(so.buf, ' ', so.len) ? 12u : 8u) || !sf.len)
			goto out;
		found = nospace_find(&sf, fat, &so, text, len, to_eol, &first);
	}
	if (found != 1) {
		if (found > 1)
			buf_addf(why, "With all whitespace left out, old_string occurs %zu times, so "
				 "that does not tell which is meant either.\n", found);
		goto out;
	}
	a = fat[first];
	b = fat[first + so.len - 1] + 1;
	put_piece(out, text, len, a, b, new_text, new_len);
	out->pass = MATCH_NOSPACE;
	out->level = MATCH_NOSPACE;
	ret = 0;
out:
	free(fat);
	free(oat);
	buf_release(&sf);
	buf_release(&so);
	return ret;
}

/* ---- a piece of a line, letters of either case ---- */

/*
 * The one place where `old`, a piece of one line, is in the text with
 * letters of either case (folded as match_fold() does, so its length in
 * the text may differ: `İ` for `i̇`), cutting no word; several are no
 * reading (the line-wise pass has listed them).
 */
int match_try_case_piece(struct match_result *out, const char *text, size_t len,
			 const char *old, size_t old_len, const char *new_text, size_t new_len)
{
	struct buf ft = BUF_INIT, fo = BUF_INIT;
	size_t *at = NULL, pos = 0, found = 0, a = 0, b = 0;
	const char *p;
	int ret = FX_ENOTFOUND;

	if (!old_len || memchr(old, '\n', old_len))
		return FX_ENOTFOUND;
	match_fold(&ft, &at, text, len);
	match_fold(&fo, NULL, old, old_len);
	while (fo.len && pos + fo.len <= ft.len &&
	       (p = memmem(ft.buf + pos, ft.len - pos, fo.buf, fo.len))) {
		size_t k = (size_t)(p - ft.buf), s = at[k], e = at[k + fo.len];

		pos = k + 1;
		/* whole characters of the text, on one line */
		if ((k && at[k - 1] == s) || at[k + fo.len - 1] == e || memchr(text + s, '\n', e - s))
			continue;
		/* a piece of a word is another word */
		if ((s && wordy(text[s - 1]) && wordy(old[0])) ||
		    (e < len && wordy(text[e]) && wordy(old[old_len - 1])))
			continue;
		if (found++)
			goto out;
		a = s;
		b = e;
	}
	if (!found)
		goto out;
	put_piece(out, text, len, a, b, new_text, new_len);
	out->pass = MATCH_CASE;
	out->level = MATCH_EXACT;	/* a piece of a line: nothing re-indented */
	ret = 0;
out:
	free(at);
	buf_release(&ft);
	buf_release(&fo);
	return ret;
}

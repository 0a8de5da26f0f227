/*
 * Placing the new lines where the engine found `old` (see match.h,
 * match_place_lines()): lines the model kept are written as the file has
 * them, the others re-indented by the shift between `old` and the file,
 * or refused when that shift is not certain.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tools/match.h"
#include "tools/match_internal.h"

#define LCS_CELLS (1u << 20)	/* above this, only common first and last lines are paired */

static int slice_eq(const struct match_slice *a, const struct match_slice *b)
{
	return a->n == b->n && !memcmp(a->s, b->s, a->n);
}

/*
 * map[j]: the index of the line of `a` paired with b[j] in a longest common
 * subsequence of equal lines, or -1.
 */
void match_lcs_map(long *map, const struct match_slice *a, size_t k, const struct match_slice *b,
		   size_t m)
{
	size_t pre = 0, suf = 0, i, j, rk, rm;
	uint32_t *t;

	for (j = 0; j < m; j++)
		map[j] = -1;
	while (pre < k && pre < m && slice_eq(&a[pre], &b[pre])) {
		map[pre] = (long)pre;
		pre++;
	}
	while (suf < k - pre && suf < m - pre && slice_eq(&a[k - 1 - suf], &b[m - 1 - suf])) {
		map[m - 1 - suf] = (long)(k - 1 - suf);
		suf++;
	}
	rk = k - pre - suf;
	rm = m - pre - suf;
	if (!rk || !rm || (rk + 1) * (rm + 1) > LCS_CELLS)
		return;
	/* t[i][j]: LCS length of a[pre + i ..] and b[pre + j ..] */
	t = xcalloc((rk + 1) * (rm + 1), sizeof(*t));
	for (i = rk; i-- > 0;)
		for (j = rm; j-- > 0;)
			t[i * (rm + 1) + j] = slice_eq(&a[pre + i], &b[pre + j])
				? t[(i + 1) * (rm + 1) + j + 1] + 1
				: (t[(i + 1) * (rm + 1) + j] > t[i * (rm + 1) + j + 1]
				   ? t[(i + 1) * (rm + 1) + j] : t[i * (rm + 1) + j + 1]);
	i = j = 0;
	while (i < rk && j < rm) {
		if (slice_eq(&a[pre + i], &b[pre + j])) {
			map[pre + j] = (long)(pre + i);
			i++;
			j++;
		} else if (t[(i + 1) * (rm + 1) + j] >= t[i * (rm + 1) + j + 1]) {
			i++;
		} else {
			j++;
		}
	}
	free(t);
}

static size_t lead(const struct match_slice *l)
{
	size_t i = 0;

	while (i < l->n && (l->s[i] == ' ' || l->s[i] == '\t'))
		i++;
	return i;
}

static int blank_slice(const struct match_slice *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!match_is_blank(l->s[i]))
			return 0;
	return 1;
}

/* How the file's indentation differs from the model's on one line. */
struct shift {
	int known;		/* 0: a blank line, it says nothing */
	int ok;			/* the two indentations are made of the same characters */
	int sign;		/* +1: the file has `p` more; -1: the model has `p` more */
	const char *p;
	size_t n;
	struct match_slice o, f;	/* the model's and the file's indentation */
};

static void line_shift(struct shift *sh, const struct match_slice *f, const struct match_slice *o)
{
	size_t fi = lead(f), oi = lead(o);

	memset(sh, 0, sizeof(*sh));
	if (blank_slice(f) || blank_slice(o))
		return;
	sh->known = 1;
	sh->o.s = o->s;
	sh->o.n = oi;
	sh->f.s = f->s;
	sh->f.n = fi;
	if (fi >= oi && !memcmp(f->s + fi - oi, o->s, oi)) {
		sh->ok = 1;
		sh->sign = 1;
		sh->p = f->s;
		sh->n = fi - oi;
	} else if (oi > fi && !memcmp(o->s + oi - fi, f->s, fi)) {
		sh->ok = 1;
		sh->sign = -1;
		sh->p = o->s;
		sh->n = oi - fi;
	}
}

static int same_shift(const struct shift *a, const struct shift *b)
{
	return a->ok && b->ok && a->n == b->n &&
	       (!a->n || (a->sign == b->sign && !memcmp(a->p, b->p, a->n)));
}

static void describe_ws(struct buf *out, const char *p, size_t n)
{
	size_t i, sp = 0, tab = 0;

	for (i = 0; i < n; i++) {
		sp += p[i] == ' ';
		tab += p[i] == '\t';
	}
	if (sp)
		buf_addf(out, "%zu space%s", sp, sp == 1 ? "" : "s");
	if (sp && tab)
		buf_addstr(out, " and ");
	if (tab)
		buf_addf(out, "%zu tab%s", tab, tab == 1 ? "" : "s");
	if (!sp && !tab)
		buf_addstr(out, "no indentation");
}

static void explain_shifts(struct buf *why, const struct shift *sh, size_t k, size_t first_line)
{
	size_t i, said = 0;

	for (i = 0; i < k && said < 4; i++) {
		if (!sh[i].known)
			continue;
		buf_addf(why, "%sline %zu: the file has ", said ? "; " : "", first_line + i);
		describe_ws(why, sh[i].f.s, sh[i].f.n);
		buf_addstr(why, ", old_string ");
		describe_ws(why, sh[i].o.s, sh[i].o.n);
		said++;
	}
}

/* Write `l` shifted by `sh`; -1 when the line has less indentation than the shift takes away. */
static int put_shifted(struct buf *out, const struct match_slice *l, const struct shift *sh)
{
	if (!sh || !sh->n || sh->sign > 0) {
		if (sh && sh->n)
			buf_add(out, sh->p, sh->n);
		buf_add(out, l->s, l->n);
		return 0;
	}
	if (lead(l) < sh->n || memcmp(l->s, sh->p, sh->n))
		return -1;
	buf_add(out, l->s + sh->n, l->n - sh->n);
	return 0;
}

static int ws_eq(const struct match_slice *a, const struct match_slice *b)
{
	return slice_eq(a, b);
}

/*
 * Whether the model's indentations map to the file's one to one, keeping
 * their order (2-space against 4-space, spaces against tabs).
 */
#define MAPPING_LINES 2000	/* above this, indentation is only shifted, not mapped */

static int mapping_ok(const struct shift *sh, size_t k)
{
	size_t i, j;

	if (k > MAPPING_LINES)
		return 0;

	for (i = 0; i < k; i++) {
		if (!sh[i].known)
			continue;
		for (j = i + 1; j < k; j++) {
			if (!sh[j].known)
				continue;
			if (ws_eq(&sh[i].o, &sh[j].o) != ws_eq(&sh[i].f, &sh[j].f))
				return 0;
			if ((sh[i].o.n < sh[j].o.n && sh[i].f.n >= sh[j].f.n) ||
			    (sh[i].o.n > sh[j].o.n && sh[i].f.n <= sh[j].f.n))
				return 0;
		}
	}
	return 1;
}

/* Whether `w` is `n` of one character (any when n is 0); the character in *c. */
static int uniform_ws(const struct match_slice *w, char *c)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		if (!*c)
			*c = w->s[i];
		if (w->s[i] != *c)
			return 0;
	}
	return 1;
}

/*
 * A mapping of levels that is linear (file = a + b * model, counted in one
 * character each, as 2-space against 4-space indentation): the file's
 * indentation for a new line of the model's indentation `ni`, into `out`.
 * 0 when there is no such rule or it gives nothing whole.
 */
struct linear {
	int ok;
	char oc, fc;
	long a, b;
};

static void linear_of(struct linear *L, const struct shift *sh, size_t k)
{
	size_t i, j;
	long o1 = -1, f1 = -1;

	memset(L, 0, sizeof(*L));
	for (i = 0; i < k; i++) {
		if (!sh[i].known)
			continue;
		if (!uniform_ws(&sh[i].o, &L->oc) || !uniform_ws(&sh[i].f, &L->fc))
			return;
		if (o1 < 0) {
			o1 = (long)sh[i].o.n;
			f1 = (long)sh[i].f.n;
		} else if ((long)sh[i].o.n != o1 && !L->b) {
			long dof = (long)sh[i].o.n - o1, dff = (long)sh[i].f.n - f1;

			if (dff % dof || dff / dof < 1)
				return;
			L->b = dff / dof;
			L->a = f1 - L->b * o1;
		}
	}
	if (!L->b || L->a < 0)
		return;
	for (j = 0; j < k; j++)
		if (sh[j].known && (long)sh[j].f.n != L->a + L->b * (long)sh[j].o.n)
			return;
	L->ok = 1;
}

static int linear_put(struct buf *out, const struct linear *L, const struct match_slice *ni)
{
	char c = L->oc;
	long i, n;

	if (!L->ok || !uniform_ws(ni, &c) || c != (L->oc ? L->oc : c))
		return 0;
	n = L->a + L->b * (long)ni->n;
	for (i = 0; i < n; i++)
		buf_addch(out, L->fc ? L->fc : ' ');
	return 1;
}

/*
 * For the changed new lines nw[j0..j1), which replace old[i0..i1), when
 * the match is not shifted alike and the indentations do not map one to
 * one: src[t] is the old line whose file indentation line j0 + t takes
 * (its own indentation being that old line's). -1 when it cannot be told.
 */
static int hunk_sources(long *src, const struct shift *sh, size_t k, size_t i0, size_t i1,
			const struct match_slice *nw, size_t j0, size_t j1)
{
	size_t t, c[2], nc = 0;
	long b = -1;

	/* One for one, each line keeping its indentation: each takes its line's. */
	if (i1 - i0 == j1 - j0) {
		int ok = 1;

		for (t = 0; t < j1 - j0 && ok; t++) {
			struct match_slice ni = { nw[j0 + t].s, lead(&nw[j0 + t]) };

			src[t] = -1;
			if (blank_slice(&nw[j0 + t]))
				continue;
			if (!sh[i0 + t].known || !ws_eq(&ni, &sh[i0 + t].o))
				ok = 0;
			else
				src[t] = (long)(i0 + t);
		}
		if (ok)
			return 0;
	}
	/*
	 * One line for several, indented as the first it replaces, which no
	 * other is left of in the file: the replacement starts where the
	 * passage starts (`if x:` and its body become one line at the if's
	 * depth; deeper, the line would be inside what it replaces).
	 */
	if (j1 - j0 == 1 && i1 - i0 > 1 && sh[i0].known && !blank_slice(&nw[j0])) {
		struct match_slice ni = { nw[j0].s, lead(&nw[j0]) };
		int ok = ws_eq(&ni, &sh[i0].o);

		for (t = i0 + 1; t < i1 && ok; t++)
			if (sh[t].known && (sh[t].f.n < sh[i0].f.n ||
					    memcmp(sh[t].f.s, sh[i0].f.s, sh[i0].f.n)))
				ok = 0;
		if (ok) {
			src[0] = (long)i0;
			return 0;
		}
	}
	/* A block of lines of one indentation in the model's text and one in the file's. */
	for (t = i0; t < i1; t++) {
		if (!sh[t].known)
			continue;
		if (b < 0)
			b = (long)t;
		else if (!ws_eq(&sh[t].o, &sh[b].o) || !ws_eq(&sh[t].f, &sh[b].f))
			return -1;
	}
	if (b < 0) {
		/* Pure insertion (or only blank lines replaced): the known lines around it. */
		for (t = i0; t-- > 0;)
			if (sh[t].known) {
				c[nc++] = t;
				break;
			}
		for (t = i1; t < k; t++)
			if (sh[t].known) {
				c[nc++] = t;
				break;
			}
		for (t = 0; t < nc; t++) {
			if (b < 0)
				b = (long)c[t];
			else if (!ws_eq(&sh[c[t]].o, &sh[b].o) || !ws_eq(&sh[c[t]].f, &sh[b].f))
				return -1;
		}
		if (b < 0)
			return -1;
	}
	for (t = j0; t < j1; t++) {
		struct match_slice ni = { nw[t].s, lead(&nw[t]) };

		if (!blank_slice(&nw[t]) && !ws_eq(&ni, &sh[b].o))
			return -1;
		src[t - j0] = b;
	}
	return 0;
}

/*
 * Files whose meaning does not depend on indentation: languages of
 * braces and semicolons, by the name's extension. Anything else (Python,
 * YAML, Makefiles, Markdown, a name without one) counts as significant.
 */
static int indent_cosmetic(const char *name)
{
	static const char *const ext[] = {
		"c", "h", "cc", "cpp", "cxx", "c++", "hh", "hpp", "hxx", "h++", "m", "mm",
		"java", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "cs", "go",
		"rs", "php", "swift", "kt", "kts", "scala", "dart", "css", "scss", "less",
		"zig", "sol", "groovy", "gradle", "json", "jsonc", "proto", "glsl", "hlsl",
	};
	const char *dot, *base;
	size_t i;

	if (!name)
		return 0;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return 0;
	for (i = 0; i < ARRAY_SIZE(ext); i++)
		if (!strcmp(dot + 1, ext[i]))
			return 1;
	return 0;
}

/*
 * Whether `l` may open, close or be inside text whose whitespace is kept:
 * a raw or multi-line string (a backquote, a triple quote, a C++, C# or
 * Rust raw string, a heredoc), a double-quoted string left open (an odd
 * number of unescaped '"'), or a line continued by a backslash.
 */
static int holds_long_string(const struct match_slice *l)
{
	static const char *const marks[] = {
		"`", "\"\"\"", "'''", "R\"", "r\"", "r#\"", "@\"", "<<<", "<<-", "<<~",
	};
	size_t i, quotes = 0, n = l->n;

	for (i = 0; i < ARRAY_SIZE(marks); i++)
		if (memmem(l->s, l->n, marks[i], strlen(marks[i])))
			return 1;
	for (i = 0; i < l->n; i++) {
		if (l->s[i] == '\\')
			i++;
		else if (l->s[i] == '"')
			quotes++;
	}
	while (n && match_is_blank(l->s[n - 1]))
		n--;
	return (quotes & 1) || (n && l->s[n - 1] == '\\');
}

/* Whether `l` ends, but for trailing blanks, in `{`, `(` or `[`. */
static int opens_block(const struct match_slice *l)
{
	size_t n = l->n;

	while (n && match_is_blank(l->s[n - 1]))
		n--;
	return n && (l->s[n - 1] == '{' || l->s[n - 1] == '(' || l->s[n - 1] == '[');
}

/*
 * hunk_sources() for a file whose indentation does not change its
 * meaning (indent_cosmetic()), where that one could not tell: each new
 * line takes the file's indentation of an old line the model indented
 * alike. When those old lines have different depths in the file (the
 * model wrote a line of an if's body at the if's depth, "    if (x) {\n
 * init();"), the depth is a matter of layout only: the line takes the
 * depth of the nearest such line before it, or after it when the line
 * above it in new_string opens a block. *chosen counts the lines so
 * placed, *first the first of them (1-based in new_string). -1 when a
 * line's indentation is nowhere in old_string, or the passage may hold a
 * string whose whitespace counts.
 */
static int cosmetic_sources(long *src, const struct shift *sh, const struct match_slice *file,
			    size_t k, size_t i0, size_t i1, const struct match_slice *nw, size_t j0,
			    size_t j1, size_t *chosen, size_t *first)
{
	size_t t, i;

	for (i = 0; i < k; i++)
		if (holds_long_string(&file[i]))
			return -1;
	for (t = j0; t < j1; t++)
		if (holds_long_string(&nw[t]))
			return -1;
	for (t = j0; t < j1; t++) {
		struct match_slice ni = { nw[t].s, lead(&nw[t]) };
		size_t at = i0 + (t - j0) < i1 ? i0 + (t - j0) : i1, p;
		long any = -1, before = -1, after = -1;
		int differ = 0;

		src[t - j0] = -1;
		if (blank_slice(&nw[t]))
			continue;
		for (i = 0; i < k; i++) {
			if (!sh[i].known || !ws_eq(&sh[i].o, &ni))
				continue;
			if (any < 0)
				any = (long)i;
			else if (!ws_eq(&sh[i].f, &sh[any].f))
				differ = 1;
			if (i < at)
				before = (long)i;
			else if (after < 0)
				after = (long)i;
		}
		if (any < 0)
			return -1;
		if (!differ) {
			src[t - j0] = any;
			continue;
		}
		for (p = t; p > 0 && blank_slice(&nw[p - 1]); p--)
			;
		if (p > 0 && opens_block(&nw[p - 1]) && after >= 0)
			src[t - j0] = after;
		else
			src[t - j0] = before >= 0 ? before : after;
		if (!*chosen)
			*first = t + 1;
		(*chosen)++;
	}
	return 0;
}

/*
 * old_string's first line copied without its indentation, the others as
 * the file has them (the model selected from the first character of
 * text): the new lines after the first may be meant as they are, or as a
 * block indented like the first line. Each reading is tried; the one under
 * which every changed new line gets an indentation the passage already
 * has is written. 0 when written, -1 when this is not the case or both
 * readings (or neither) fit with different results.
 */
static int first_line_reading(struct buf *out, const struct match_slice *file, size_t k,
			      const struct shift *sh, const struct match_slice *nw, size_t m,
			      const long *map, const char *eol)
{
	struct buf r[2] = { BUF_INIT, BUF_INIT };
	int fits[2] = { 1, 1 }, x, ret = -1;
	size_t i, j;

	if (k < 2 || !sh[0].known || sh[0].o.n || !sh[0].f.n)
		return -1;
	for (i = 1; i < k; i++)
		if (sh[i].known && (!sh[i].ok || sh[i].n))
			return -1;
	for (x = 0; x < 2; x++) {
		for (j = 0; j < m; j++) {
			size_t a = r[x].len;

			if (map[j] >= 0) {
				buf_add(&r[x], file[map[j]].s, file[map[j]].n);
			} else if (!blank_slice(&nw[j])) {
				struct match_slice ind;
				int known = 0;

				if (j == 0 || x == 1)
					buf_add(&r[x], sh[0].f.s, sh[0].f.n);
				buf_add(&r[x], nw[j].s, nw[j].n);
				ind.s = r[x].buf + a;
				ind.n = lead(&(struct match_slice){ r[x].buf + a, r[x].len - a });
				for (i = 0; i < k && !known; i++)
					known = sh[i].known && ws_eq(&ind, &sh[i].f);
				if (!known)
					fits[x] = 0;
			}
			buf_addstr(&r[x], eol);
		}
	}
	if (fits[0] != fits[1] || (fits[0] && r[0].len == r[1].len &&
				   !memcmp(r[0].buf, r[1].buf, r[0].len))) {
		x = fits[0] ? 0 : 1;
		buf_add(out, r[x].buf, r[x].len);
		ret = 0;
	}
	buf_release(&r[0]);
	buf_release(&r[1]);
	return ret;
}

/* Non-blank lines of `b` that a longest common subsequence pairs with lines of `a`. */
static size_t paired(const struct match_slice *a, size_t k, const struct match_slice *b, size_t m)
{
	long *map = xmalloc((m + 1) * sizeof(*map));
	size_t j, n = 0;

	match_lcs_map(map, a, k, b, m);
	for (j = 0; j < m; j++)
		n += map[j] >= 0 && !blank_slice(&b[j]);
	free(map);
	return n;
}

/*
 * Whether `nw` was written against the file rather than against `old`:
 * more of its lines are the file's, byte for byte, than old's.
 */
static int already_placed(const struct match_slice *file, const struct match_slice *old, size_t k,
			  const struct match_slice *nw, size_t m, const long *map)
{
	size_t pf, j, i0, told = 0;

	if ((k + 1) * (m + 1) > LCS_CELLS)
		return 0;
	pf = paired(file, k, nw, m);
	if (pf)
		return pf > paired(old, k, nw, m);
	/*
	 * Nothing kept: the lines replaced one for one each take, in new, the
	 * file's indentation of the line they replace, where old had another.
	 */
	for (j = 0, i0 = 0; j < m;) {
		size_t j1 = j, i1, t;

		if (map[j] >= 0) {
			i0 = (size_t)map[j] + 1;
			j++;
			continue;
		}
		while (j1 < m && map[j1] < 0)
			j1++;
		i1 = j1 < m ? (size_t)map[j1] : k;
		if (i1 - i0 != j1 - j)
			return 0;
		for (t = 0; t < j1 - j; t++) {
			const struct match_slice *f = &file[i0 + t], *o = &old[i0 + t], *n = &nw[j + t];
			struct match_slice fi = { f->s, lead(f) }, oi = { o->s, lead(o) }, ni = { n->s, lead(n) };

			if (blank_slice(n) || blank_slice(f))
				continue;
			if (!ws_eq(&ni, &fi))
				return 0;
			told += !ws_eq(&oi, &fi);
		}
		j = j1;
	}
	return told > 0;
}

/*
 * A line of new equal to a line of old is the model keeping that line,
 * written as the file has it, only when the file's line is the model's
 * but for whitespace and typographic punctuation. Where an approximate
 * match found a line that differs beyond that (`foo(a, b)` in the file,
 * `foo(a, c)` in old and kept in new), the model's line is what it
 * means: writing the file's would mix the two versions (`foo(a, b)` above
 * a body using `c`). Such a line is placed as a changed line instead, as
 * every peer writes it.
 */
static void unkeep_differing(long *map, size_t m, const struct match_slice *file,
			     const struct match_slice *old)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	size_t j;

	for (j = 0; j < m; j++) {
		if (map[j] < 0)
			continue;
		buf_reset(&a);
		buf_reset(&b);
		match_norm_line(&a, file[map[j]].s, file[map[j]].n, MATCH_UNICODE);
		match_norm_line(&b, old[map[j]].s, old[map[j]].n, MATCH_UNICODE);
		if (a.len != b.len || memcmp(a.buf, b.buf, a.len))
			map[j] = -1;
	}
	buf_release(&a);
	buf_release(&b);
}

int match_place_lines(struct buf *out, const struct match_slice *file, const struct match_slice *old,
		     size_t k, const struct match_slice *nw, size_t m, const char *eol,
		     const char *name, size_t first_line, struct buf *why)
{
	struct shift *sh = xcalloc(k + 1, sizeof(*sh));
	long *src = xmalloc((m + 1) * sizeof(*src)), *map = xmalloc((m + 1) * sizeof(*map));
	const struct shift *global = NULL;
	size_t i, j, start = out->len;
	int uniform = 1, mapped, ret = 0, cosmetic = indent_cosmetic(name);
	size_t chosen = 0, chosen_first = 0;
	struct linear lin;
	struct buf tmp = BUF_INIT;

	for (i = 0; i < k; i++) {
		line_shift(&sh[i], &file[i], &old[i]);
		if (!sh[i].known)
			continue;
		if (!global)
			global = &sh[i];
		else if (!same_shift(global, &sh[i]))
			uniform = 0;
		if (!sh[i].ok)
			uniform = 0;
	}
	/*
	 * new_string written in the file's indentation while old_string was
	 * not (the model copied old loosely but wrote new against the file):
	 * it goes in as it is, never shifted a second time.
	 */
	match_lcs_map(map, old, k, nw, m);
	unkeep_differing(map, m, file, old);
	if (global && (!uniform || global->n) && already_placed(file, old, k, nw, m, map)) {
		for (j = 0; j < m; j++) {
			if (map[j] >= 0)
				buf_add(out, file[map[j]].s, file[map[j]].n);
			else if (!blank_slice(&nw[j]))
				buf_add(out, nw[j].s, nw[j].n);
			buf_addstr(out, eol);
		}
		goto out;
	}
	if (!uniform && first_line_reading(out, file, k, sh, nw, m, map, eol) == 0)
		goto out;
	mapped = !uniform && mapping_ok(sh, k);
	if (mapped)
		linear_of(&lin, sh, k);
	else
		memset(&lin, 0, sizeof(lin));
	for (j = 0; j < m; j++)
		src[j] = -1;
	for (j = 0; j < m;) {
		size_t j1 = j, i0, i1, t;
		long prev = -1;
		int need = 0;

		if (map[j] >= 0) {
			j++;
			continue;
		}
		while (j1 < m && map[j1] < 0)
			j1++;
		for (i = j; i-- > 0;)
			if (map[i] >= 0) {
				prev = map[i];
				break;
			}
		i0 = (size_t)(prev + 1);
		i1 = j1 < m ? (size_t)map[j1] : k;
		if (!uniform) {
			/* Lines whose indentation the mapping knows need nothing more. */
			for (t = j; t < j1; t++) {
				struct match_slice ni = { nw[t].s, lead(&nw[t]) };

				if (blank_slice(&nw[t]))
					continue;
				if (mapped)
					for (i = 0; i < k && src[t] < 0; i++)
						if (sh[i].known && ws_eq(&ni, &sh[i].o))
							src[t] = (long)i;
				buf_reset(&tmp);
				if (src[t] < 0 && !linear_put(&tmp, &lin, &ni))
					need = 1;
			}
			if (need && hunk_sources(src + j, sh, k, i0, i1, nw, j, j1) < 0 &&
			    (!cosmetic || cosmetic_sources(src + j, sh, file, k, i0, i1, nw, j, j1,
							   &chosen, &chosen_first) < 0)) {
				buf_addf(why, "old_string matches lines %zu-%zu of %s only when "
					 "indentation is ignored, and its indentation does not "
					 "correspond to the file's in one consistent way (", first_line,
					 first_line + k - 1, name);
				explain_shifts(why, sh, k, first_line);
				buf_addf(why, "), so where line %zu of new_string belongs cannot be "
					 "told. Nothing was written. Copy old_string with the file's "
					 "indentation, exactly as read_file shows it, and write "
					 "new_string with the same indentation.\n", j + 1);
				ret = FX_EINVAL;
				goto out;
			}
		}
		j = j1;
	}
	for (j = 0; j < m; j++) {
		if (map[j] >= 0) {
			const struct match_slice *f = &file[map[j]];

			buf_add(out, f->s, f->n);
		} else if (blank_slice(&nw[j])) {
			;	/* a blank line stays empty */
		} else if (!uniform && src[j] >= 0) {
			const struct shift *s = &sh[src[j]];

			buf_add(out, s->f.s, s->f.n);
			buf_add(out, nw[j].s + s->o.n, nw[j].n - s->o.n);
		} else if (!uniform) {
			struct match_slice ni = { nw[j].s, lead(&nw[j]) };

			if (!linear_put(out, &lin, &ni))
				BUG("a new line without a place");
			buf_add(out, nw[j].s + ni.n, nw[j].n - ni.n);
		} else if (put_shifted(out, &nw[j], global) < 0) {
			buf_addf(why, "line %zu of new_string has less indentation than the ", j + 1);
			describe_ws(why, global->p, global->n);
			buf_addf(why, " that old_string has more than lines %zu-%zu of %s, so it cannot "
				 "be re-indented. Nothing was written. Copy the indentation exactly "
				 "as read_file shows it.\n", first_line, first_line + k - 1, name);
			ret = FX_EINVAL;
			goto out;
		}
		buf_addstr(out, eol);
	}
out:
	if (ret < 0)
		buf_setlen(out, start);
	else
		ret = chosen > INT_MAX ? INT_MAX : (int)chosen;
	buf_release(&tmp);
	free(sh);
	free(src);
	free(map);
	return ret;
}

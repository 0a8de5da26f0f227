#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox/permissions.h"
#include "tools/edit.h"
#include "tools/fs.h"
#include "tools/registry.h"

#define SHOW_LINE_BYTES 300	/* a line shown in an explanation is cut here */
#define SHOW_LINES 20		/* lines shown per passage */
#define SCORE_BUDGET 4000000	/* line comparisons spent on finding similar passages */
#define LEV_MAX 256		/* bytes of a line the edit distance looks at */

struct line {
	size_t start;		/* first byte */
	size_t end;		/* end of the content: before "\n" or "\r\n" */
	size_t next;		/* start of the next line (len at the end) */
};

struct lines {
	struct line *v;
	size_t nr, alloc;
};

static void split_lines(struct lines *out, const char *s, size_t len)
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

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* The content of a line without leading and trailing blanks. */
static void trimmed(const char *s, const struct line *l, size_t *a, size_t *b)
{
	size_t x = l->start, y = l->end;

	while (x < y && is_blank(s[x]))
		x++;
	while (y > x && is_blank(s[y - 1]))
		y--;
	*a = x;
	*b = y;
}

static size_t indent_len(const char *s, const struct line *l)
{
	size_t x = l->start;

	while (x < l->end && (s[x] == ' ' || s[x] == '\t'))
		x++;
	return x - l->start;
}

static uint64_t hash_trimmed(const char *s, const struct line *l)
{
	uint64_t h = 1469598103934665603ull;
	size_t a, b;

	trimmed(s, l, &a, &b);
	for (; a < b; a++) {
		h ^= (unsigned char)s[a];
		h *= 1099511628211ull;
	}
	return h;
}

static int same_trimmed(const char *s, const struct line *l, const char *t, const struct line *m)
{
	size_t a, b, c, d;

	trimmed(s, l, &a, &b);
	trimmed(t, m, &c, &d);
	return b - a == d - c && !memcmp(s + a, t + c, b - a);
}

/* 1-based line of byte `off`. */
static size_t line_of(const char *s, size_t off)
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
static void show_lines(struct buf *why, const char *text, const struct lines *ls, size_t from,
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
			buf_add(why, text + l->start, fs_utf8_cut(text + l->start, n, SHOW_LINE_BYTES));
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

	trimmed(s, l, &a, &b);
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

/* Levenshtein distance of two byte strings (each cut at LEV_MAX). */
static size_t levenshtein(const char *a, size_t n, const char *b, size_t m)
{
	size_t row[LEV_MAX + 1], i, j;

	if (n > LEV_MAX)
		n = LEV_MAX;
	if (m > LEV_MAX)
		m = LEV_MAX;
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

		trimmed(old, &ol->v[i], &a, &b);
		if (s + i < fl->nr)
			trimmed(text, &fl->v[s + i], &c, &d);
		n = b - a < LEV_MAX ? b - a : LEV_MAX;
		m = d - c < LEV_MAX ? d - c : LEV_MAX;
		dist += levenshtein(old + a, n, text + c, m);
		size += n > m ? n : m;
	}
	return size ? 1.0 - (double)dist / (double)size : 1.0;
}

struct cand {
	size_t start;
	double score;
};

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* Append the three passages most like `old`, best first. */
static void closest(struct buf *why, const char *text, const struct lines *fl, const char *old,
		    const struct lines *ol)
{
	struct bigrams *fb, *ob;
	struct cand *c, top[10];
	size_t windows, k = ol->nr, i, s, ntop = 0, shown = 0, step = 1, used;

	if (!fl->nr) {
		buf_addstr(why, "The file is empty.\n");
		return;
	}
	windows = fl->nr >= k ? fl->nr - k + 1 : 1;
	/* Compare every old line only when the budget allows; else every step-th. */
	while (windows * ((k + step - 1) / step) > SCORE_BUDGET && step < k)
		step++;
	fb = xcalloc(fl->nr, sizeof(*fb));
	ob = xcalloc(k, sizeof(*ob));
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
	/* The ten best that do not overlap, ranked again by edit distance. */
	for (s = 0; s < windows && ntop < ARRAY_SIZE(top); s++) {
		size_t j;
		int overlaps = 0;

		for (j = 0; j < ntop; j++) {
			size_t a = top[j].start, b = c[s].start;

			if ((a > b ? a - b : b - a) < (k ? k : 1))
				overlaps = 1;
		}
		if (overlaps)
			continue;
		top[ntop].start = c[s].start;
		top[ntop].score = lev_similarity(text, fl, c[s].start, old, ol);
		ntop++;
	}
	qsort(top, ntop, sizeof(*top), cmp_cand);
	for (i = 0; i < ntop && shown < 3; i++) {
		size_t from = top[i].start, to = from + k < fl->nr ? from + k : fl->nr;

		if (top[i].score <= 0.0)
			break;
		if (!shown)
			buf_addstr(why, "The most similar passages (line number, tab, text):\n");
		buf_addf(why, "--- lines %zu-%zu (%d%% similar):\n", from + 1, to,
			 (int)(top[i].score * 100.0 + 0.5));
		show_lines(why, text, fl, from, to);
		shown++;
	}
	if (!shown)
		buf_addstr(why, "No passage of the file resembles it.\n");
	for (i = 0; i < fl->nr; i++)
		free(fb[i].v);
	for (i = 0; i < k; i++)
		free(ob[i].v);
	free(fb);
	free(ob);
	free(c);
}

/* ---- the edit ---- */

void edit_result_release(struct edit_result *res)
{
	buf_release(&res->text);
	res->count = 0;
	res->fuzzy = 0;
	res->span = 0;
	memset(res->lines, 0, sizeof(res->lines));
}

/* Append `piece` re-indented from old's indentation to the file's (see edit.h). */
static void reindent_line(struct buf *out, const char *p, size_t n, const char *text,
			  const struct lines *fl, size_t s, const char *old, const struct lines *ol,
			  size_t first)
{
	size_t ind = 0, i, bo, bf;
	const char *bo_s, *bf_s;

	while (ind < n && (p[ind] == ' ' || p[ind] == '\t'))
		ind++;
	if (ind == n)
		return;		/* a blank line stays empty */
	for (i = 0; i < ol->nr; i++) {
		const struct line *o = &ol->v[i], *f = &fl->v[s + i];
		size_t oi = indent_len(old, o);

		if (oi == o->end - o->start)
			continue;	/* blank */
		if (oi == ind && !memcmp(old + o->start, p, ind)) {
			buf_add(out, text + f->start, indent_len(text, f));
			buf_add(out, p + ind, n - ind);
			return;
		}
	}
	bo_s = old + ol->v[first].start;
	bo = indent_len(old, &ol->v[first]);
	bf_s = text + fl->v[s + first].start;
	bf = indent_len(text, &fl->v[s + first]);
	if (ind >= bo && !memcmp(p, bo_s, bo)) {
		buf_add(out, bf_s, bf);
		buf_add(out, p + bo, n - bo);
	} else if (ind < bo && !memcmp(p, bo_s, ind) && bf >= bo - ind) {
		buf_add(out, bf_s, bf - (bo - ind));
		buf_add(out, p + ind, n - ind);
	} else {
		buf_add(out, p, n);
	}
}

static void note_line(struct edit_result *out, size_t line)
{
	if (out->count < EDIT_MAX_LINES_NOTED)
		out->lines[out->count] = line;
	out->count++;
}

static int apply_fuzzy(struct edit_result *out, const char *text, size_t len,
		       const struct lines *fl, size_t s, const char *old, size_t old_len,
		       const struct lines *ol, const char *new_text, size_t new_len)
{
	int old_eol = old[old_len - 1] == '\n';
	const struct line *last = &fl->v[s + ol->nr - 1];
	const char *eol = fl->v[s].end < fl->v[s].next && text[fl->v[s].end] == '\r' ? "\r\n" : "\n";
	size_t region_end = old_eol ? last->next : last->end, first = 0, pos = 0, nl_count = 0;

	while (first < ol->nr && indent_len(old, &ol->v[first]) == ol->v[first].end - ol->v[first].start)
		first++;
	buf_add(&out->text, text, fl->v[s].start);
	while (pos < new_len) {
		const char *nl = memchr(new_text + pos, '\n', new_len - pos);
		size_t n = nl ? (size_t)(nl - (new_text + pos)) : new_len - pos;

		if (n && new_text[pos + n - 1] == '\r')
			n--;
		reindent_line(&out->text, new_text + pos, n, text, fl, s, old, ol, first);
		if (nl) {
			buf_addstr(&out->text, eol);
			nl_count++;
		}
		pos += (nl ? (size_t)(nl - (new_text + pos)) + 1 : new_len - pos);
	}
	buf_add(&out->text, text + region_end, len - region_end);
	out->fuzzy = 1;
	note_line(out, s + 1);
	out->span = nl_count + (new_len && new_text[new_len - 1] != '\n');
	return 0;
}

int edit_apply(struct edit_result *out, const char *text, size_t len, const char *old,
	       size_t old_len, const char *new_text, size_t new_len, int replace_all,
	       const char *name, struct buf *why)
{
	struct lines fl = { NULL, 0, 0 }, ol = { NULL, 0, 0 };
	size_t *hits = NULL, nhits = 0, ahits = 0, pos = 0, i;
	int ret = 0;

	if (!old_len)
		return err_set(FX_EINVAL, "old_string is empty");
	if (old_len == new_len && !memcmp(old, new_text, old_len)) {
		buf_addstr(why, "old_string and new_string are the same; there is nothing to change\n");
		return FX_EINVAL;
	}
	/* 1. exact */
	while (pos + old_len <= len) {
		const char *p = memmem(text + pos, len - pos, old, old_len);

		if (!p)
			break;
		ALLOC_GROW(hits, nhits + 1, ahits);
		hits[nhits++] = (size_t)(p - text);
		pos = (size_t)(p - text) + old_len;
	}
	if (nhits == 1 || (nhits && replace_all)) {
		size_t done = 0, line = 1, nl_new = 0;

		for (i = 0; i < new_len; i++)
			nl_new += new_text[i] == '\n';
		for (i = 0; i < nhits; i++) {
			const char *p = text + done, *end = text + hits[i];

			/* Lines before this hit in the new text: old lines, shifted by earlier edits. */
			while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
				line++;
				p++;
			}
			note_line(out, line);
			buf_add(&out->text, text + done, hits[i] - done);
			buf_add(&out->text, new_text, new_len);
			line += nl_new;
			done = hits[i] + old_len;	/* the newlines of old are gone */
		}
		buf_add(&out->text, text + done, len - done);
		out->span = nl_new + (new_len && new_text[new_len - 1] != '\n');
		goto out;
	}
	split_lines(&fl, text, len);
	split_lines(&ol, old, old_len);
	if (nhits > 1) {
		buf_addf(why, "old_string occurs %zu times in %s, at lines", nhits, name);
		for (i = 0; i < nhits && i < 10; i++)
			buf_addf(why, "%s %zu", i ? "," : "", line_of(text, hits[i]));
		buf_addf(why, "%s. Include more of the surrounding lines to make it unique, or set "
			 "replace_all to change every occurrence.\n", nhits > 10 ? ", ..." : "");
		for (i = 0; i < nhits && i < 3; i++) {
			size_t a = line_of(text, hits[i]) - 1;
			size_t b = line_of(text, hits[i] + old_len - 1);

			if (a + 1 == b)
				buf_addf(why, "--- occurrence %zu (line %zu, with one line around it):\n",
					 i + 1, b);
			else
				buf_addf(why, "--- occurrence %zu (lines %zu-%zu, with one line around "
					 "it):\n", i + 1, a + 1, b);
			show_lines(why, text, &fl, a ? a - 1 : 0, b + 1);
		}
		ret = FX_EINVAL;
		goto out;
	}
	/* 2. whitespace-tolerant, not for replace_all */
	if (!replace_all && ol.nr && ol.nr <= fl.nr) {
		uint64_t *fh = xmalloc(fl.nr * sizeof(*fh)), *oh = xmalloc(ol.nr * sizeof(*oh));
		size_t s, found = 0, where = 0, blank = 0;
		size_t places[10];

		for (i = 0; i < fl.nr; i++)
			fh[i] = hash_trimmed(text, &fl.v[i]);
		for (i = 0; i < ol.nr; i++) {
			size_t a, b;

			oh[i] = hash_trimmed(old, &ol.v[i]);
			trimmed(old, &ol.v[i], &a, &b);
			blank += a == b;
		}
		for (s = 0; blank < ol.nr && s + ol.nr <= fl.nr; s++) {
			for (i = 0; i < ol.nr; i++)
				if (fh[s + i] != oh[i] || !same_trimmed(text, &fl.v[s + i], old, &ol.v[i]))
					break;
			if (i == ol.nr) {
				if (found < ARRAY_SIZE(places))
					places[found] = s;
				if (!found)
					where = s;
				found++;
			}
		}
		free(fh);
		free(oh);
		if (found == 1) {
			ret = apply_fuzzy(out, text, len, &fl, where, old, old_len, &ol, new_text, new_len);
			goto out;
		}
		if (found > 1) {
			buf_addf(why, "old_string does not occur exactly in %s, and ignoring indentation "
				 "and trailing spaces it matches %zu places, at lines", name, found);
			for (i = 0; i < found && i < ARRAY_SIZE(places); i++)
				buf_addf(why, "%s %zu", i ? "," : "", places[i] + 1);
			buf_addstr(why, ". Include more of the surrounding lines to make it unique.\n");
			for (i = 0; i < found && i < 3; i++) {
				buf_addf(why, "--- place %zu (lines %zu-%zu):\n", i + 1, places[i] + 1,
					 places[i] + ol.nr);
				show_lines(why, text, &fl, places[i], places[i] + ol.nr);
			}
			ret = FX_EINVAL;
			goto out;
		}
	}
	/* 3. nothing: say what is closest */
	buf_addf(why, "old_string was not found in %s%s.\n", name,
		 replace_all ? " (replace_all needs exact occurrences)"
			     : ", not even ignoring indentation, trailing spaces and line ends");
	closest(why, text, &fl, old, &ol);
	buf_addstr(why, "Copy the text exactly as the file has it (without the line numbers and "
		   "the tab after them) and try again.\n");
	ret = FX_ENOTFOUND;
out:
	if (ret < 0)
		edit_result_release(out);
	free(hits);
	free(fl.v);
	free(ol.v);
	return ret;
}

/* ---- the tool ---- */

static int tool_edit_file(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *path = tool_arg_str(args, "path");
	const json_t *jold = json_object_get(args, "old_string");
	const json_t *jnew = json_object_get(args, "new_string");
	const char *old = json_string_value(jold), *new_text = json_string_value(jnew);
	size_t old_len = json_string_length(jold), new_len = json_string_length(jnew);
	int replace_all = tool_arg_bool(args, "replace_all", 0);
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct edit_result res = EDIT_RESULT_INIT;
	struct buf data = BUF_INIT, why = BUF_INIT;
	struct lines nl = { NULL, 0, 0 };
	size_t i;
	int ret;

	if (!old_len) {
		/* Creating: only where there is no file yet, or an empty one. */
		ret = wspath_locate(&loc, &ctx->root, path, WSPATH_FOLLOW | WSPATH_MKDIRS | WSPATH_CHANGE);
		if (ret < 0)
			goto out;
		if (loc.type && loc.type != S_IFREG) {
			ret = err_set(FX_EINVAL, "'%s' exists and is not a regular file", path);
			goto out;
		}
		if (loc.type) {
			wspath_loc_release(&loc);
			ret = fs_load_text(&data, &loc, ctx, path, ctx->limits.file_bytes, WSPATH_CHANGE);
			if (ret < 0)
				goto out;
			if (data.len) {
				ret = err_set(FX_EEXISTS, "'%s' exists and is not empty; an empty "
					      "old_string only creates new files. Give the text to "
					      "replace, or use write_file to replace everything", path);
				goto out;
			}
		}
		ret = fs_write_loc(ctx, &loc, new_text, new_len);
		if (ret < 0)
			goto out;
		buf_addf(result, "created %s: %zu bytes, %zu lines\n", loc.rel, new_len,
			 fs_count_lines(new_text, new_len));
		goto out;
	}
	ret = fs_load_text(&data, &loc, ctx, path, ctx->limits.file_bytes, WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (fs_is_binary(data.buf, data.len, 1, &why)) {
		ret = err_set(FX_EINVAL, "'%s' looks like a binary file (%s); edit_file edits text",
			      path, why.buf);
		goto out;
	}
	ret = edit_apply(&res, data.buf, data.len, old, old_len, new_text, new_len, replace_all,
			 loc.rel, result);
	if (ret < 0)
		goto out;
	ret = fs_check_placeholder(data.buf, data.len, res.text.buf, res.text.len, path);
	if (ret < 0)
		goto out;
	ret = fs_write_loc(ctx, &loc, res.text.buf, res.text.len);
	if (ret < 0)
		goto out;
	buf_addf(result, "edited %s: %zu replacement%s, at line", loc.rel, res.count,
		 res.count == 1 ? "" : "s");
	for (i = 0; i < res.count && i < EDIT_MAX_LINES_NOTED; i++)
		buf_addf(result, "%s %zu", i ? "," : "", res.lines[i]);
	buf_addf(result, "%s%s\n", res.count > EDIT_MAX_LINES_NOTED ? ", ..." : "",
		 res.fuzzy ? " (old_string matched ignoring indentation and trailing spaces; "
			     "new_string was re-indented to the file)" : "");
	if (res.count == 1) {
		size_t from = res.lines[0] > 3 ? res.lines[0] - 3 : 0;
		size_t to = res.lines[0] - 1 + res.span + 2;

		split_lines(&nl, res.text.buf, res.text.len);
		buf_addstr(result, "The lines around the change now read:\n");
		show_lines(result, res.text.buf, &nl, from, to);
	}
out:
	wspath_loc_release(&loc);
	edit_result_release(&res);
	buf_release(&data);
	buf_release(&why);
	free(nl.v);
	return ret;
}

int tools_register_edit(struct tool_registry *reg)
{
	static const struct tool_def def = {
		"edit_file",
		"Replace text in a file. old_string must match the file exactly once (copy it "
		"from read_file without the line numbers); include enough surrounding lines to "
		"make it unique, or set replace_all to change every occurrence. When there is no "
		"exact match, a unique match that differs only in indentation, trailing spaces or "
		"line ends is accepted and new_string is re-indented to the file. An empty "
		"old_string creates a file that does not exist yet (or is empty). Nothing is "
		"written unless the edit applies.",
		"{\"type\":\"object\",\"properties\":{"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"File path, relative to the workspace\"},"
		"\"old_string\":{\"type\":\"string\",\"description\":\"The exact text to replace\"},"
		"\"new_string\":{\"type\":\"string\",\"description\":\"The text to put in its place\"},"
		"\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence (default false)\"}"
		"},\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false}",
		PERM_WRITE, 0, tool_edit_file, NULL,
	};

	return registry_add(reg, &def);
}

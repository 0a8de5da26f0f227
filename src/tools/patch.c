/*
 * apply_patch (see patch.h): the parser, the matching of chunks, and the
 * all-or-nothing writing of a patch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "sandbox/permissions.h"
#include "tools/match.h"
#include "tools/fs.h"
#include "tools/patch.h"

#define BEGIN "*** Begin Patch"
#define END "*** End Patch"
#define ADD "*** Add File:"
#define DELETE "*** Delete File:"
#define UPDATE "*** Update File:"
#define MOVE "*** Move to:"
#define EOFM "*** End of File"

/* ---- parsing ---- */

struct pline {
	const char *s;
	size_t n;
};

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static struct pline trim(struct pline l)
{
	while (l.n && blank(*l.s)) {
		l.s++;
		l.n--;
	}
	while (l.n && blank(l.s[l.n - 1]))
		l.n--;
	return l;
}

static int is(struct pline l, const char *lit)
{
	l = trim(l);
	return l.n == strlen(lit) && !memcmp(l.s, lit, l.n);
}

/* The rest after `prefix` (trimmed), when the trimmed line starts with it. */
static int after(struct pline l, const char *prefix, struct pline *rest)
{
	size_t n = strlen(prefix);

	l = trim(l);
	if (l.n < n || memcmp(l.s, prefix, n))
		return 0;
	rest->s = l.s + n;
	rest->n = l.n - n;
	*rest = trim(*rest);
	return 1;
}

static char *dup_line(struct pline l)
{
	return xstrndup(l.s, l.n);
}

static void push_line(struct strvec *v, const char *s, size_t n)
{
	char *c = xstrndup(s, n);

	strvec_push(v, c);
	free(c);
}

void patch_release(struct patch *p)
{
	size_t i, j;

	for (i = 0; i < p->nr; i++) {
		struct patch_hunk *h = &p->hunks[i];

		free(h->path);
		free(h->move_to);
		buf_release(&h->content);
		for (j = 0; j < h->chunks_nr; j++) {
			strvec_clear(&h->chunks[j].anchors);
			strvec_clear(&h->chunks[j].old_lines);
			strvec_clear(&h->chunks[j].new_lines);
		}
		free(h->chunks);
	}
	free(p->hunks);
	p->hunks = NULL;
	p->nr = p->alloc = 0;
}

/* "@@ -12,7 +12,8 @@ text": the text after a unified diff's ranges, else the whole. */
static struct pline anchor_text(struct pline a)
{
	const char *p = a.s, *e = a.s + a.n;

	if (p < e && *p == '-') {
		p++;
		while (p < e && ((*p >= '0' && *p <= '9') || *p == ','))
			p++;
		if (p < e && *p == ' ')
			p++;
		if (p < e && *p == '+') {
			p++;
			while (p < e && ((*p >= '0' && *p <= '9') || *p == ','))
				p++;
			while (p < e && *p == ' ')
				p++;
			if (e - p >= 2 && p[0] == '@' && p[1] == '@') {
				struct pline r = { p + 2, (size_t)(e - p - 2) };

				return trim(r);
			}
		}
	}
	return a;
}

static int starts_at(struct pline l, const char *lit)
{
	size_t n = strlen(lit);

	return l.n >= n && !memcmp(l.s, lit, n);
}

/* Parse the chunks of an Update hunk from lines[*i] on. */
static int parse_chunks(struct patch_hunk *h, const struct pline *lines, size_t *i, size_t end,
			struct buf *why)
{
	while (*i < end) {
		struct patch_chunk *c;
		struct pline l = lines[*i];
		size_t body = 0;

		if (!trim(l).n) {
			(*i)++;	/* blank lines between chunks */
			continue;
		}
		if (l.n && l.s[0] == '*' && !is(l, EOFM))
			break;	/* the next hunk */
		if (!starts_at(l, "@@") && h->chunks_nr) {
			buf_addf(why, "line %zu: expected an @@ line to start the next chunk of '%s', "
				 "got '%.*s'", *i + 1, h->path, (int)(l.n > 80 ? 80 : l.n), l.s);
			return FX_EPARSE;
		}
		ALLOC_GROW(h->chunks, h->chunks_nr + 1, h->chunks_alloc);
		c = &h->chunks[h->chunks_nr++];
		memset(c, 0, sizeof(*c));
		strvec_init(&c->anchors);
		strvec_init(&c->old_lines);
		strvec_init(&c->new_lines);
		c->line = *i + 1;
		while (*i < end && starts_at(lines[*i], "@@")) {
			struct pline a = { lines[*i].s + 2, lines[*i].n - 2 };

			/* Codex drops "@@ " and keeps the indentation of what follows */
			if (a.n && a.s[0] == ' ') {
				a.s++;
				a.n--;
			}
			while (a.n && blank(a.s[a.n - 1]))
				a.n--;
			a = anchor_text(a);
			if (a.n)
				push_line(&c->anchors, a.s, a.n);
			(*i)++;
		}
		while (*i < end) {
			l = lines[*i];
			if (is(l, EOFM)) {
				if (!body) {
					buf_addf(why, "line %zu: *** End of File ends a chunk of '%s' "
						 "that has no lines", *i + 1, h->path);
					return FX_EPARSE;
				}
				c->eof = 1;
				(*i)++;
				break;
			}
			if (!l.n) {
				strvec_push(&c->old_lines, "");
				strvec_push(&c->new_lines, "");
			} else if (l.s[0] == ' ') {
				push_line(&c->old_lines, l.s + 1, l.n - 1);
				push_line(&c->new_lines, l.s + 1, l.n - 1);
			} else if (l.s[0] == '-') {
				push_line(&c->old_lines, l.s + 1, l.n - 1);
			} else if (l.s[0] == '+') {
				push_line(&c->new_lines, l.s + 1, l.n - 1);
			} else if (!body && !starts_at(l, "@@") && l.s[0] != '*') {
				buf_addf(why, "line %zu: unexpected line in a chunk of '%s': '%.*s'. "
					 "Every line of a chunk starts with ' ' (context), '-' "
					 "(removed) or '+' (added)", *i + 1, h->path,
					 (int)(l.n > 80 ? 80 : l.n), l.s);
				return FX_EPARSE;
			} else {
				break;	/* the next chunk or hunk */
			}
			body++;
			(*i)++;
		}
		if (!body) {
			buf_addf(why, "line %zu: a chunk of '%s' has no lines", c->line, h->path);
			return FX_EPARSE;
		}
	}
	if (!h->chunks_nr) {
		buf_addf(why, "line %zu: the Update File hunk for '%s' is empty; give at least one "
			 "chunk of ' ', '-' and '+' lines", h->line, h->path);
		return FX_EPARSE;
	}
	return 0;
}

/*
 * The delimiter of a heredoc line "<<EOF", "<<'EOF'", "<<\"PATCH\"" (with
 * "<<-" too), after an optional command word (apply_patch, applypatch,
 * cat: OpenCode's tests send "cat <<'EOF'"); 0 when `f` is not one. The
 * quotes must pair, as in a shell: Codex refuses <<"EOF'.
 */
static int heredoc_word(struct pline f, struct pline *word)
{
	static const char *const cmds[] = { "apply_patch", "applypatch", "cat" };
	size_t i, n;
	char q;

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		n = strlen(cmds[i]);
		if (f.n > n && !memcmp(f.s, cmds[i], n) && blank(f.s[n])) {
			f.s += n;
			f.n -= n;
			f = trim(f);
			break;
		}
	}
	if (f.n < 3 || f.s[0] != '<' || f.s[1] != '<')
		return 0;
	f.s += 2;
	f.n -= 2;
	if (f.n && f.s[0] == '-') {
		f.s++;
		f.n--;
	}
	if (f.n && (f.s[0] == '\'' || f.s[0] == '"')) {
		q = f.s[0];
		if (f.n < 3 || f.s[f.n - 1] != q)
			return 0;
		f.s++;
		f.n -= 2;
	}
	for (i = 0; i < f.n; i++)
		if (!(f.s[i] == '_' || (f.s[i] >= '0' && f.s[i] <= '9') ||
		      ((f.s[i] | 0x20) >= 'a' && (f.s[i] | 0x20) <= 'z')))
			return 0;
	*word = f;
	return f.n > 0;
}

/* Unwrap a heredoc or a Markdown fence around the patch; returns the lines to parse. */
static int unwrap(const struct pline *v, size_t nr, size_t *first, size_t *last)
{
	struct pline f, l, w;

	*first = 0;
	*last = nr ? nr - 1 : 0;
	if (nr < 4)
		return 0;
	f = trim(v[0]);
	l = trim(v[nr - 1]);
	/* as Codex's lenient mode: the last line ends with the delimiter */
	if (heredoc_word(f, &w) && l.n >= w.n && !memcmp(l.s + l.n - w.n, w.s, w.n)) {
		*first = 1;
		*last = nr - 2;
		return 1;
	}
	if (starts_at(f, "```") && is(l, "```")) {
		*first = 1;
		*last = nr - 2;
		return 1;
	}
	return 0;
}

int patch_parse(struct patch *out, const char *text, size_t len, struct buf *why)
{
	struct pline *lines = NULL, t = { text, len };
	size_t nr = 0, alloc = 0, pos, i, first, last;
	int ret = 0;

	out->hunks = NULL;
	out->nr = out->alloc = 0;
	/* Codex trims the whole text; lines end at "\n" (a CR before it is dropped). */
	while (t.n && (blank(*t.s) || *t.s == '\n')) {
		t.s++;
		t.n--;
	}
	while (t.n && (blank(t.s[t.n - 1]) || t.s[t.n - 1] == '\n'))
		t.n--;
	for (pos = 0; pos < t.n;) {
		const char *nl = memchr(t.s + pos, '\n', t.n - pos);
		size_t e = nl ? (size_t)(nl - t.s) : t.n;

		ALLOC_GROW(lines, nr + 1, alloc);
		lines[nr].s = t.s + pos;
		lines[nr].n = e - pos - (e > pos && t.s[e - 1] == '\r');
		nr++;
		pos = e + 1;
	}
	if (!nr || !is(lines[0], BEGIN) || !is(lines[nr - 1], END)) {
		if (!unwrap(lines, nr, &first, &last) || !is(lines[first], BEGIN) ||
		    !is(lines[last], END)) {
			if (nr == 1 && memmem(t.s, t.n, "\\n", 2))
				buf_addstr(why, "the patch is one line with \\n in it: its line breaks "
					   "were sent as escapes; send real line breaks");
			else if (!nr || !is(lines[0], BEGIN))
				buf_addf(why, "the first line of the patch must be '" BEGIN "' (it is "
					 "'%.*s')", nr ? (int)(lines[0].n > 80 ? 80 : lines[0].n) : 0,
					 nr ? lines[0].s : "");
			else
				buf_addstr(why, "the last line of the patch must be '" END "'");
			ret = FX_EPARSE;
			goto out;
		}
	} else {
		first = 0;
		last = nr - 1;
	}
	for (i = first + 1; i < last;) {
		struct pline l = lines[i], rest;
		struct patch_hunk *h;

		if (!trim(l).n) {
			i++;
			continue;
		}
		ALLOC_GROW(out->hunks, out->nr + 1, out->alloc);
		h = &out->hunks[out->nr++];
		memset(h, 0, sizeof(*h));
		buf_init(&h->content, 0);
		h->line = i + 1;
		if (after(l, ADD, &rest)) {
			h->op = PATCH_ADD;
			h->path = dup_line(rest);
			for (i++; i < last && lines[i].n && lines[i].s[0] == '+'; i++) {
				buf_add(&h->content, lines[i].s + 1, lines[i].n - 1);
				buf_addch(&h->content, '\n');
			}
		} else if (after(l, DELETE, &rest)) {
			h->op = PATCH_DELETE;
			h->path = dup_line(rest);
			i++;
		} else if (after(l, UPDATE, &rest)) {
			h->op = PATCH_UPDATE;
			h->path = dup_line(rest);
			i++;
			if (i < last && after(lines[i], MOVE, &rest)) {
				h->move_to = dup_line(rest);
				if (!*h->move_to) {
					buf_addf(why, "line %zu: *** Move to: needs a path", i + 1);
					ret = FX_EPARSE;
					goto out;
				}
				i++;
			}
			if (*h->path && (ret = parse_chunks(h, lines, &i, last, why)) < 0)
				goto out;
		} else {
			buf_addf(why, "line %zu: '%.*s' is not a valid hunk header; the headers are "
				 "'" ADD " path', '" DELETE " path' and '" UPDATE " path'%s", i + 1,
				 (int)(l.n > 80 ? 80 : l.n), l.s,
				 l.n && (l.s[0] == '+' || l.s[0] == '-' || l.s[0] == ' ')
				 ? " (a line that is not '+...' ends an Add File, and a chunk ends at a "
				   "line that is not ' ', '-' or '+': write an empty line of a new file "
				   "as '+', an empty context line as ' ')" : "");
			ret = FX_EPARSE;
			goto out;
		}
		if (!*h->path) {
			buf_addf(why, "line %zu: the hunk names no path", h->line);
			ret = FX_EPARSE;
			goto out;
		}
	}
	if (!out->nr) {
		buf_addstr(why, "the patch has no hunks: nothing to do");
		ret = FX_EPARSE;
	}
out:
	if (ret < 0)
		patch_release(out);
	free(lines);
	return ret;
}

/* ---- applying the chunks of one file ---- */

struct fline {
	size_t start, end, next;
};

static void file_lines(struct fline **v, size_t *nr, const char *s, size_t len)
{
	size_t pos = 0, alloc = 0;

	*v = NULL;
	*nr = 0;
	while (pos < len) {
		const char *nl = memchr(s + pos, '\n', len - pos);
		struct fline *l;

		ALLOC_GROW(*v, *nr + 1, alloc);
		l = &(*v)[(*nr)++];
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

/* The lines of the file in the normal form of `level`, built when first needed. */
struct seek {
	const char *text;
	const struct fline *fl;
	size_t nr;
	struct strvec norm[MATCH_UNICODE + 1];
};

static const char *norm_of(struct seek *sk, int level, size_t i)
{
	struct strvec *v = &sk->norm[level];

	if (!v->nr) {
		struct buf b = BUF_INIT;
		size_t j;

		for (j = 0; j < sk->nr; j++) {
			buf_reset(&b);
			match_norm_line(&b, sk->text + sk->fl[j].start, sk->fl[j].end - sk->fl[j].start,
				       (enum match_pass)level);
			strvec_push(v, b.buf);
		}
		buf_release(&b);
	}
	return v->v[i];
}

static const int levels[] = { MATCH_EXACT, MATCH_TRAILING, MATCH_INDENT, MATCH_UNICODE };

static int match_at(struct seek *sk, int level, size_t s, char **pat, size_t k,
		    const struct strvec *pn)
{
	size_t i;

	for (i = 0; i < k; i++) {
		if (level == MATCH_EXACT) {
			const struct fline *l = &sk->fl[s + i];
			size_t n = strlen(pat[i]);

			if (n != l->end - l->start || memcmp(sk->text + l->start, pat[i], n))
				return 0;
		} else if (strcmp(norm_of(sk, level, s + i), pn->v[i])) {
			return 0;
		}
	}
	return 1;
}

/* The `k` lines `pat` in the normal form of `level`, in `pn` (not for MATCH_EXACT). */
static void norm_pattern(struct strvec *pn, int level, char **pat, size_t k)
{
	struct buf b = BUF_INIT;
	size_t i;

	if (level != MATCH_EXACT)
		for (i = 0; i < k; i++) {
			buf_reset(&b);
			match_norm_line(&b, pat[i], strlen(pat[i]), (enum match_pass)level);
			strvec_push(pn, b.buf);
		}
	buf_release(&b);
}

/*
 * Codex's seek_sequence: the first place at or after `from` where the `k`
 * lines `pat` match, trying each level over the whole range before the
 * next. With `eof` the end of the file is tried first, at every level:
 * a chunk the model ends with "*** End of File" whose last lines differ
 * from the file's in blanks is still the end, not an exact copy of them
 * higher up (as Codex's seek_sequence does now). The end is a candidate
 * only at or after `from`, else the chunk would overlap the previous one.
 * -1 when none.
 */
static long seek(struct seek *sk, char **pat, size_t k, size_t from, int eof, int *level_used)
{
	size_t li, s;
	int pass;

	if (!k)
		return (long)from;
	if (k > sk->nr)
		return -1;
	for (pass = eof && sk->nr - k >= from ? 0 : 1; pass < 2; pass++) {
		for (li = 0; li < ARRAY_SIZE(levels); li++) {
			int level = levels[li];
			struct strvec pn = STRVEC_INIT;
			long found = -1;

			norm_pattern(&pn, level, pat, k);
			if (pass == 0 && match_at(sk, level, sk->nr - k, pat, k, &pn))
				found = (long)(sk->nr - k);
			for (s = from; pass == 1 && found < 0 && s + k <= sk->nr; s++)
				if (match_at(sk, level, s, pat, k, &pn))
					found = (long)s;
			strvec_clear(&pn);
			if (found >= 0) {
				*level_used = level;
				return found;
			}
		}
	}
	return -1;
}

struct repl {
	size_t at, k;		/* file lines [at, at + k) are replaced */
	const struct patch_chunk *c;
	size_t new_n;		/* how many of c->new_lines (a last empty one may be dropped) */
	int level;
};

/* Whether the `k` lines `pat` match at `level` somewhere at or after `from`. */
static int more_at(struct seek *sk, char **pat, size_t k, size_t from, int level)
{
	struct strvec pn = STRVEC_INIT;
	size_t s;
	int found = 0;

	norm_pattern(&pn, level, pat, k);
	for (s = from; !found && s + k <= sk->nr; s++)
		found = match_at(sk, level, s, pat, k, &pn);
	strvec_clear(&pn);
	return found;
}

/* Refuse a chunk whose @@ line is not in the file (`twice`: its lines are at two places). */
static void lost_anchor(struct buf *why, const char *name, const char *a,
			const struct patch_chunk *c, size_t i, size_t cursor, int twice)
{
	buf_addf(why, "%s: the @@ line '%s' (chunk %zu, line %zu of the patch) is not in the "
		 "file%s, %s. Nothing was written.\n", name, a, i + 1, c->line,
		 cursor ? " after the previous chunk" : "",
		 twice ? "and the chunk's lines are at more than one place: the @@ line was what "
		 "told them apart" : "and the chunk has no ' ' or '-' line to find its place by");
	buf_addstr(why, "Copy the context lines exactly as the file has them, the @@ lines too "
		   "(an @@ line is a line of the file, such as a class or function header).\n");
}

/*
 * In file order, chunks at the same place in patch order: only an addition
 * at the end of the file comes after a chunk that the patch puts later.
 */
static void sort_repl(struct repl *r, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++) {
		struct repl x = r[i];

		for (j = i; j > 0 && r[j - 1].at > x.at; j--)
			r[j] = r[j - 1];
		r[j] = x;
	}
}

static void join_lines(struct buf *out, char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		buf_addstr(out, v[i]);
		buf_addch(out, '\n');
	}
}

int patch_apply_update(struct buf *out, const char *text, size_t len, const struct patch_hunk *h,
		       const char *name, int *worst, struct buf *notes, struct buf *why)
{
	struct fline *fl;
	struct seek sk;
	struct repl *r;
	size_t nr, i, j, cursor = 0, start = out->len, done = 0, noted = notes->len;
	const char *eol = match_eol_of(text, len);
	int ret = 0;

	*worst = MATCH_EXACT;
	file_lines(&fl, &nr, text, len);
	memset(&sk, 0, sizeof(sk));
	sk.text = text;
	sk.fl = fl;
	sk.nr = nr;
	r = xcalloc(h->chunks_nr + 1, sizeof(*r));
	for (i = 0; i < h->chunks_nr; i++) {
		const struct patch_chunk *c = &h->chunks[i];
		size_t k = c->old_lines.nr;
		long at;
		int level = MATCH_EXACT;

		const char *lost = NULL;	/* an @@ line the file does not have */

		for (j = 0; j < c->anchors.nr && !lost; j++) {
			char *a = (char *)c->anchors.v[j];

			at = seek(&sk, &a, 1, cursor, 0, &level);
			if (at < 0) {
				lost = a;
				break;
			}
			if (level > *worst)
				*worst = level;
			cursor = (size_t)at + 1;
		}
		r[i].c = c;
		r[i].new_n = c->new_lines.nr;
		if (lost && !k) {
			lost_anchor(why, name, lost, c, i, cursor, 0);
			ret = FX_ENOTFOUND;
			goto out;
		}
		if (!k) {
			/*
			 * Only additions: after the anchors, else at the end of the
			 * file. The end does not move the cursor: as in Codex, a chunk
			 * of additions without context may come first in the patch and
			 * the chunks after it still change the lines before the end
			 * (its test_pure_addition_chunk_followed_by_removal).
			 */
			r[i].at = c->anchors.nr && !c->eof ? cursor : nr;
			r[i].k = 0;
			if (r[i].at < nr)
				cursor = r[i].at;
			continue;
		}
		at = seek(&sk, (char **)c->old_lines.v, k, cursor, c->eof, &level);
		if (at < 0 && !*c->old_lines.v[k - 1]) {
			/* A last empty line stands for the file's final newline. */
			k--;
			if (r[i].new_n && !*c->new_lines.v[r[i].new_n - 1])
				r[i].new_n--;
			at = k ? seek(&sk, (char **)c->old_lines.v, k, cursor, c->eof, &level) : -1;
		}
		if (at < 0) {
			struct buf want = BUF_INIT;

			join_lines(&want, (char **)c->old_lines.v, c->old_lines.nr);
			buf_addf(why, "%s: the lines of chunk %zu (line %zu of the patch), its ' ' and "
				 "'-' lines, are not in the file%s, not even ignoring whitespace and "
				 "typographic punctuation. Nothing was written.\n", name, i + 1, c->line,
				 cursor ? " after the previous chunk" : "");
			match_explain_missing(why, text, len, want.buf, want.len);
			buf_addstr(why, "Copy the context lines exactly as the file has them.\n");
			buf_release(&want);
			ret = FX_ENOTFOUND;
			goto out;
		}
		/*
		 * An @@ line the file does not have only narrowed the search
		 * (the OpenAI Agents SDK's apply_diff keeps them advisory): the
		 * chunk's own lines, found once at or after the previous chunk,
		 * are where it goes. Found twice, the @@ line was what told the
		 * places apart, and the chunk is refused.
		 */
		if (lost && more_at(&sk, (char **)c->old_lines.v, k, (size_t)at + 1, level)) {
			lost_anchor(why, name, lost, c, i, cursor, 1);
			ret = FX_ENOTFOUND;
			goto out;
		}
		if (lost)
			buf_addf(notes, "%s: the @@ line '%s' (chunk %zu) is not in the file; the "
				 "chunk's lines are, once, and were changed there\n", name, lost,
				 i + 1);
		if (level > *worst)
			*worst = level;
		r[i].at = (size_t)at;
		r[i].k = k;
		r[i].level = level;
		cursor = (size_t)at + k;
	}
	sort_repl(r, h->chunks_nr);
	/* Write: untouched lines as they were, each chunk placed by edit_file's rules. */
	for (i = 0; i <= h->chunks_nr; i++) {
		size_t upto = i < h->chunks_nr ? r[i].at : nr;
		struct match_slice *fs, *os, *ns;

		for (; done < upto; done++) {
			buf_add(out, text + fl[done].start, fl[done].next - fl[done].start);
			if (fl[done].next == fl[done].end && (done + 1 < nr || i < h->chunks_nr))
				buf_addstr(out, eol);	/* the last line had no line end */
		}
		if (i == h->chunks_nr)
			break;
		fs = xcalloc(r[i].k + 1, sizeof(*fs));
		os = xcalloc(r[i].k + 1, sizeof(*os));
		ns = xcalloc(r[i].new_n + 1, sizeof(*ns));
		for (j = 0; j < r[i].k; j++) {
			fs[j].s = text + fl[r[i].at + j].start;
			fs[j].n = fl[r[i].at + j].end - fl[r[i].at + j].start;
			os[j].s = r[i].c->old_lines.v[j];
			os[j].n = strlen(os[j].s);
		}
		for (j = 0; j < r[i].new_n; j++) {
			ns[j].s = r[i].c->new_lines.v[j];
			ns[j].n = strlen(ns[j].s);
		}
		ret = match_place_lines(out, fs, os, r[i].k, ns, r[i].new_n, eol, name, r[i].at + 1,
				       why);
		if (ret > 0)
			ret = 0;	/* lines laid out in a brace language: the diff shows them */
		free(fs);
		free(os);
		free(ns);
		if (ret < 0)
			goto out;
		done = r[i].at + r[i].k;
	}
	/* As Codex: an updated file ends with a line end, whether it had one or not. */
	if (out->len > start && out->buf[out->len - 1] != '\n')
		buf_addstr(out, eol);
out:
	if (ret < 0) {
		buf_setlen(out, start);
		buf_setlen(notes, noted);
	}
	for (i = 0; i < ARRAY_SIZE(sk.norm); i++)
		strvec_clear(&sk.norm[i]);
	free(r);
	free(fl);
	return ret;
}

/* ---- the tool: check everything, then write everything or nothing ---- */

/* A file as the patch leaves it, before anything is written. */
struct vfile {
	char *rel;		/* canonical, relative to the workspace */
	int existed;		/* before the patch */
	int exists;		/* after it */
	int loaded;		/* `orig` holds the file (else it is replaced unread) */
	mode_t type;		/* before: S_IFREG, or S_IFLNK for a link that is deleted */
	int follow;		/* located following links (0: a Delete, as delete_file) */
	size_t missing;		/* folders to create for it */
	struct buf orig, now;
};

struct plan {
	struct vfile *v;
	size_t nr, alloc;
};

static struct vfile *plan_find(struct plan *p, const char *rel)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		if (!strcmp(p->v[i].rel, rel))
			return &p->v[i];
	return NULL;
}

static struct vfile *plan_add(struct plan *p, const char *rel)
{
	struct vfile *f;

	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	f = &p->v[p->nr++];
	memset(f, 0, sizeof(*f));
	f->rel = xstrdup(rel);
	buf_init(&f->orig, 0);
	buf_init(&f->now, 0);
	return f;
}

static void plan_release(struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++) {
		free(p->v[i].rel);
		buf_release(&p->v[i].orig);
		buf_release(&p->v[i].now);
	}
	free(p->v);
}

static const char *kind_name(mode_t t)
{
	return t == S_IFDIR ? "a folder" : t == S_IFLNK ? "a symbolic link" : "not a regular file";
}

/* The file an Update reads (following links), as the patch has left it so far. */
static int plan_existing(struct tool_ctx *ctx, struct plan *p, const char *path, struct vfile **out)
{
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct buf data = BUF_INIT, why = BUF_INIT;
	struct vfile *f;
	int ret;

	ret = wspath_locate(&loc, &ctx->root, path, WSPATH_FOLLOW | WSPATH_CHANGE | WSPATH_MISSING_OK);
	if (ret < 0)
		goto out;
	f = plan_find(p, loc.rel);
	if (f) {
		if (!f->exists)
			ret = err_set(FX_ENOTFOUND, "'%s' is deleted (or moved away) earlier in this "
				      "patch", path);
		*out = f;	/* added or changed earlier in the patch: its content is `now` */
		goto out;
	}
	if (!loc.type) {
		ret = err_set(FX_ENOTFOUND, "'%s' does not exist; to create it use '*** Add File: "
			      "%s'", path, path);
		goto out;
	}
	wspath_loc_release(&loc);
	ret = fs_load_text(&data, &loc, ctx, path, ctx->limits.file_bytes, WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (fs_is_binary(data.buf, data.len, 1, &why)) {
		ret = err_set(FX_EINVAL, "'%s' looks like a binary file (%s); apply_patch edits text",
			      path, why.buf);
		goto out;
	}
	f = plan_add(p, loc.rel);
	f->existed = f->exists = f->loaded = f->follow = 1;
	f->type = S_IFREG;
	buf_addbuf(&f->orig, &data);
	buf_addbuf(&f->now, &data);
	*out = f;
out:
	wspath_loc_release(&loc);
	buf_release(&data);
	buf_release(&why);
	return ret;
}

/* The file an Add or a Move to writes. */
static int plan_target(struct tool_ctx *ctx, struct plan *p, const char *path, struct vfile **out)
{
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct vfile *f;
	int ret;

	ret = wspath_locate(&loc, &ctx->root, path,
			    WSPATH_FOLLOW | WSPATH_MKDIRS | WSPATH_CHECK | WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (!*loc.name || (loc.type && loc.type != S_IFREG)) {
		ret = err_set(FX_EINVAL, "'%s' is %s; apply_patch writes regular files only", path,
			      *loc.name ? kind_name(loc.type) : "the workspace folder");
		goto out;
	}
	f = plan_find(p, loc.rel);
	if (!f) {
		f = plan_add(p, loc.rel);
		f->existed = loc.type == S_IFREG;
		f->type = loc.type;
		f->follow = 1;
		f->missing = loc.missing;
	}
	f->exists = 1;
	*out = f;
out:
	wspath_loc_release(&loc);
	return ret;
}

/* A Delete: the entry itself, as delete_file takes it (a link, not what it points to). */
static int plan_delete(struct tool_ctx *ctx, struct plan *p, const char *path)
{
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct vfile *f;
	int ret;

	ret = wspath_locate(&loc, &ctx->root, path, WSPATH_CHANGE | WSPATH_MISSING_OK);
	if (ret < 0)
		goto out;
	f = plan_find(p, loc.rel);
	if (f) {
		if (!f->exists)
			ret = err_set(FX_ENOTFOUND, "'%s' is already deleted earlier in this patch",
				      path);
		f->exists = 0;
		goto out;
	}
	if (!loc.type) {
		ret = err_set(FX_ENOTFOUND, "'%s' does not exist, so it cannot be deleted", path);
		goto out;
	}
	if (!*loc.name || (loc.type != S_IFREG && loc.type != S_IFLNK)) {
		ret = err_set(FX_EINVAL, "'%s' is %s; '*** Delete File:' deletes files (use "
			      "delete_file for an empty folder)", path,
			      *loc.name ? kind_name(loc.type) : "the workspace folder");
		goto out;
	}
	f = plan_add(p, loc.rel);
	f->existed = 1;
	f->exists = 0;
	f->type = loc.type;
out:
	wspath_loc_release(&loc);
	return ret;
}

static const char *level_name(int level)
{
	return match_pass_name((enum match_pass)level);
}

/* Check the whole patch against the files; nothing is written. */
static int plan_patch(struct tool_ctx *ctx, const struct patch *pt, struct plan *p,
		      struct buf *summary, struct buf *why)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < pt->nr && !ret; i++) {
		const struct patch_hunk *h = &pt->hunks[i];
		struct vfile *f = NULL, *dst = NULL;
		struct buf next = BUF_INIT, notes = BUF_INIT;
		int worst = MATCH_EXACT;

		switch (h->op) {
		case PATCH_ADD:
			ret = plan_target(ctx, p, h->path, &f);
			if (ret < 0)
				break;
			buf_reset(&f->now);
			buf_addbuf(&f->now, &h->content);
			buf_addf(summary, "A %s\n", f->rel);
			break;
		case PATCH_DELETE:
			ret = plan_delete(ctx, p, h->path);
			if (!ret)
				buf_addf(summary, "D %s\n", h->path);
			break;
		case PATCH_UPDATE:
			ret = plan_existing(ctx, p, h->path, &f);
			if (ret < 0)
				break;
			ret = patch_apply_update(&next, f->now.buf, f->now.len, h, f->rel, &worst,
						 &notes, why);
			if (ret < 0) {
				buf_release(&next);
				buf_release(&notes);
				return ret;	/* the explanation is in `why` */
			}
			if (h->move_to) {
				char *from = xstrdup(f->rel);

				ret = plan_target(ctx, p, h->move_to, &dst);
				if (ret < 0) {
					free(from);
					buf_release(&next);
					buf_release(&notes);
					break;
				}
				f = plan_find(p, from);	/* plan_target may have moved the array */
				free(from);
				if (dst != f)
					f->exists = 0;
				buf_reset(&dst->now);
				buf_addbuf(&dst->now, &next);
				buf_addf(summary, "M %s -> %s", f->rel, dst->rel);
			} else {
				buf_reset(&f->now);
				buf_addbuf(&f->now, &next);
				buf_addf(summary, "M %s", f->rel);
			}
			if (worst != MATCH_EXACT)
				buf_addf(summary, " (context matched %s)", level_name(worst));
			buf_addch(summary, '\n');
			buf_addbuf(summary, &notes);
			buf_release(&next);
			buf_release(&notes);
			break;
		}
		if (ret < 0)
			buf_addf(why, "hunk %zu (line %zu of the patch): %s. Nothing was written.\n",
				 i + 1, h->line, err_last());
	}
	return ret;
}

/* What was done to one file, to undo it. */
struct done {
	struct wspath_loc loc;
	char *keep;		/* the hard link to the file as it was, or NULL */
	struct buf saved;	/* without a link: its bytes */
	int saved_ok;
	int created;		/* it did not exist */
	size_t missing;		/* folders created for it */
};

/*
 * Keep the entry at `loc` under a new hard link beside it (named to the
 * journal first, as every temporary file: a kill leaves a known name);
 * NULL when the file system cannot.
 */
static char *keep_link(struct tool_ctx *ctx, const struct wspath_loc *loc)
{
	const struct fsutil_tmp_hook hook = fs_tmp_hook(ctx, loc->rel);
	char name[FSUTIL_TMP_NAME_MAX];

	if (fsutil_tmp_hardlink(name, loc->dirfd, loc->name, &hook) < 0) {
		err_clear();
		return NULL;
	}
	return xstrdup(name);
}

/* Its bytes in memory, at most `max` (a command may have made it of any size). */
static int save_bytes(struct done *d, size_t max)
{
	int fd = openat(d->loc.dirfd, d->loc.name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	int ret;

	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot keep a copy of '%s' to undo the patch with",
				     d->loc.rel);
	if (fstat(fd, &st) == 0 && (size_t)st.st_size > max) {
		close(fd);
		return err_set(FX_ELIMIT, "'%s' is %lld bytes: it cannot be linked to keep a copy "
			       "to undo the patch with, and a copy in memory is limited to the %zu "
			       "bytes the tools load", d->loc.rel,
			       (long long)st.st_size, max);
	}
	ret = fsutil_read_fd(&d->saved, fd, max);
	close(fd);
	if (ret < 0)
		return err_prefix(ret, "cannot keep a copy of '%s' to undo the patch with",
				  d->loc.rel);
	return 0;
}

/* Remove the `n` innermost folders of `rel`'s parents, when empty. */
static void remove_created(struct tool_ctx *ctx, const char *rel, size_t n)
{
	char *dir = xstrdup(rel);

	while (n--) {
		struct wspath_loc loc = WSPATH_LOC_INIT;
		char *slash = strrchr(dir, '/');

		if (!slash)
			break;
		*slash = '\0';
		if (!wspath_locate(&loc, &ctx->root, dir, WSPATH_CHANGE) && loc.type == S_IFDIR &&
		    *loc.name)
			unlinkat(loc.dirfd, loc.name, AT_REMOVEDIR);
		wspath_loc_release(&loc);
	}
	free(dir);
	err_clear();
}

static void rollback(struct tool_ctx *ctx, struct done *d, size_t nr, struct buf *why)
{
	size_t i;

	for (i = nr; i-- > 0;) {
		struct done *x = &d[i];
		int ok = 1;

		if (x->keep)
			ok = !renameat(x->loc.dirfd, x->keep, x->loc.dirfd, x->loc.name);
		else if (x->saved_ok) {
			const struct fsutil_tmp_hook hook = fs_tmp_hook(ctx, x->loc.rel);

			ok = fsutil_write_atomic_hooked(x->loc.dirfd, x->loc.name, x->saved.buf,
							x->saved.len, 0644, &hook) >= 0;
		}
		else if (x->created)
			ok = !unlinkat(x->loc.dirfd, x->loc.name, 0) || errno == ENOENT;
		if (!ok)
			buf_addf(why, "could not put back '%s' as it was: %s\n", x->loc.rel,
				 strerror(errno));
		else if (x->keep)
			FREE_AND_NULL(x->keep);
		if (x->missing)
			remove_created(ctx, x->loc.rel, x->missing);
	}
}

static void done_release(struct done *d, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		if (d[i].keep) {
			unlinkat(d[i].loc.dirfd, d[i].keep, 0);
			free(d[i].keep);
		}
		wspath_loc_release(&d[i].loc);
		buf_release(&d[i].saved);
	}
	free(d);
}

/* Keep what `x` names before it is replaced or deleted. */
static int keep_old(struct tool_ctx *ctx, struct done *x)
{
	x->keep = keep_link(ctx, &x->loc);
	if (x->keep)
		return 0;
	if (x->loc.type != S_IFREG)
		return err_set_errno(FX_EOS, "cannot keep a copy of '%s' to undo the patch with",
				     x->loc.rel);
	if (save_bytes(x, ctx->limits.file_bytes) < 0)
		return err_last_code();
	x->saved_ok = 1;
	return 0;
}

static int changed(const struct vfile *f)
{
	if (f->existed != f->exists)
		return 1;
	if (!f->exists)
		return 0;
	return !f->loaded || f->orig.len != f->now.len || memcmp(f->orig.buf, f->now.buf,
								 f->now.len);
}

/* Write the plan: every new content first, then the deletions; undo all on a failure. */
static int commit(struct tool_ctx *ctx, struct plan *p, struct buf *why)
{
	struct done *d = xcalloc(p->nr + 1, sizeof(*d));
	size_t nd = 0, i, pass;
	int ret = 0;

	for (pass = 0; pass < 2 && !ret; pass++) {
		for (i = 0; i < p->nr && !ret; i++) {
			struct vfile *f = &p->v[i];
			struct done *x = &d[nd];

			if (!changed(f) || (pass == 0) != (f->exists != 0))
				continue;
			buf_init(&x->saved, 0);
			x->loc = (struct wspath_loc)WSPATH_LOC_INIT;
			ret = wspath_locate(&x->loc, &ctx->root, f->rel,
					    pass == 1 ? WSPATH_CHANGE
					    : f->type == S_IFLNK ? WSPATH_MKDIRS | WSPATH_CHANGE
					    : WSPATH_FOLLOW | WSPATH_MKDIRS | WSPATH_CHANGE);
			if (ret < 0) {
				wspath_loc_release(&x->loc);
				break;
			}
			nd++;
			x->created = !x->loc.type;
			x->missing = f->missing;
			if (x->loc.type && (ret = keep_old(ctx, x)) < 0)
				break;
			if (pass == 0)
				ret = fs_write_loc(ctx, &x->loc, f->now.buf, f->now.len);
			else
				ret = fs_delete_loc(ctx, &x->loc, f->rel);
		}
	}
	if (ret < 0) {
		buf_addf(why, "%s; the patch was undone, no file was changed.\n", err_last());
		rollback(ctx, d, nd, why);
	}
	done_release(d, nd);
	return ret;
}

static int tool_apply_patch(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const json_t *in = json_object_get(args, "input");
	const json_t *alt = json_object_get(args, "patchText");
	struct patch pt = PATCH_INIT;
	struct plan p = { NULL, 0, 0 };
	struct buf why = BUF_INIT, summary = BUF_INIT;
	int ret;

	if (!in == !alt) {
		buf_addstr(result, in ? "give the patch once, as input" : "input (the patch text) "
			   "is missing");
		return FX_EINVAL;
	}
	if (!in)
		in = alt;
	ret = patch_parse(&pt, json_string_value(in), json_string_length(in), &why);
	if (ret < 0) {
		buf_addf(result, "invalid patch: %s. Nothing was written. The format:\n"
			 BEGIN "\n" ADD " path/new.txt\n+line\n" UPDATE " path/old.txt\n@@ def f():\n"
			 " context\n-removed\n+added\n" DELETE " path/gone.txt\n" END "\n", why.buf);
		goto out;
	}
	ret = plan_patch(ctx, &pt, &p, &summary, &why);
	if (ret >= 0)
		ret = commit(ctx, &p, &why);
	if (ret < 0) {
		buf_addbuf(result, &why);
		goto out;
	}
	buf_addf(result, "applied the patch: %zu hunk%s\n%s", pt.nr, pt.nr == 1 ? "" : "s",
		 summary.buf);
out:
	patch_release(&pt);
	plan_release(&p);
	buf_release(&why);
	buf_release(&summary);
	return ret;
}

int tools_register_patch(struct tool_registry *reg)
{
	static const struct tool_def def = {
		"apply_patch",
		"Change files with a patch: add, delete, update and move files in one call. "
		"Either the whole patch applies or nothing changes. Example:\n"
		BEGIN "\n"
		ADD " src/new.py\n+def hello():\n+    return 1\n"
		UPDATE " src/app.py\n@@ class App:\n@@     def run(self):\n         x = load()\n"
		"-        return x\n+        return x + 1\n"
		UPDATE " src/old_name.py\n" MOVE " src/new_name.py\n@@\n-import os\n+import sys\n"
		DELETE " src/unused.py\n" END "\n"
		"Every line of an added file starts with '+'. In an update, ' ' starts a context "
		"line (copied as the file has it), '-' a removed line, '+' an added line; give "
		"about three lines of context around each change. '@@ text' lines are optional "
		"anchors: lines of the file (a class, a function) sought in order, the change "
		"coming after the last. '" MOVE " path' right after '" UPDATE " path' renames the "
		"file. A chunk that ends the file may end with '" EOFM "'. Paths are relative to "
		"the workspace.",
		"{\"type\":\"object\",\"properties\":{"
		"\"input\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The whole patch, from *** Begin Patch to *** End Patch\"},"
		"\"patchText\":{\"type\":\"string\",\"minLength\":1,\"description\":\"The same as input (for models that name it so)\"}"
		"},\"additionalProperties\":false}",
		PERM_WRITE | PERM_DELETE, 0, tool_apply_patch, NULL,
	};

	return registry_add(reg, &def);
}

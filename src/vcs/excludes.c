/* git's ignore rules; see excludes.h. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "vcs/excludes.h"

enum {
	PAT_NEGATIVE = 1 << 0,	/* "!pattern" */
	PAT_MUSTBEDIR = 1 << 1,	/* "pattern/" */
	PAT_NODIR = 1 << 2,	/* no "/": matches the last component */
};

#define MATCH_BUDGET 100000

/* "[...]" at *pp against `c`: 1 match, 0 no match, -1 malformed. *pp ends on the ']'. */
static int match_class(const char **pp, unsigned char c)
{
	const char *p = *pp + 1;
	int negate = 0, found = 0;

	if (*p == '!' || *p == '^') {
		negate = 1;
		p++;
	}
	if (*p == ']') {
		found |= c == ']';
		p++;
	}
	for (; *p && *p != ']'; p++) {
		unsigned char lo = (unsigned char)*p, hi;

		if (*p == '[' && p[1] == ':') {
			static const struct { const char *name; int (*fn)(int); } classes[] = {
				{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
				{ "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
				{ "lower", islower }, { "print", isprint }, { "punct", ispunct },
				{ "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
			};
			const char *end = strstr(p + 2, ":]");
			size_t k, n;

			if (!end)
				return -1;
			n = (size_t)(end - (p + 2));
			for (k = 0; k < sizeof(classes) / sizeof(classes[0]); k++)
				if (strlen(classes[k].name) == n && !strncmp(classes[k].name, p + 2, n))
					break;
			if (k == sizeof(classes) / sizeof(classes[0]))
				return -1;
			found |= classes[k].fn(c) != 0;
			p = end + 1;
			continue;
		}
		if (*p == '\\') {
			if (!*++p)
				return -1;
			lo = (unsigned char)*p;
		}
		if (p[1] == '-' && p[2] && p[2] != ']') {
			p += 2;
			if (*p == '\\' && !*++p)
				return -1;
			hi = (unsigned char)*p;
			found |= c >= lo && c <= hi;
		} else {
			found |= c == lo;
		}
	}
	if (*p != ']')
		return -1;
	*pp = p;
	return found != negate;
}

static int wm(const char *p, const char *t, const char *pstart, int *budget)
{
	for (; *p; p++, t++) {
		if (--*budget < 0)
			return 0;
		switch (*p) {
		case '\\':
			if (!*++p || *t != *p)
				return 0;
			break;
		case '?':
			if (!*t || *t == '/')
				return 0;
			break;
		case '[': {
			int r;

			if (!*t || *t == '/')
				return 0;
			r = match_class(&p, (unsigned char)*t);
			if (r <= 0)
				return 0;
			break;
		}
		case '*': {
			const char *q = p;

			while (*q == '*')
				q++;
			if (q - p >= 2 && (p == pstart || p[-1] == '/') && (!*q || *q == '/')) {
				/* "**": everything below, or "**" + "/": zero or more folders */
				if (!*q)
					return 1;
				q++;
				for (;;) {
					if (wm(q, t, pstart, budget))
						return 1;
					if (*budget < 0 || !(t = strchr(t, '/')))
						return 0;
					t++;
				}
			}
			if (!*q)
				return !strchr(t, '/');
			for (;;) {
				if (wm(q, t, pstart, budget))
					return 1;
				if (*budget < 0 || !*t || *t == '/')
					return 0;
				t++;
			}
		}
		default:
			if (*t != *p)
				return 0;
		}
	}
	return !*t;
}

int vcs_wildmatch(const char *pattern, const char *text)
{
	int budget = MATCH_BUDGET;

	return wm(pattern, text, pattern, &budget);
}

/* git's trim_trailing_spaces(): unescaped trailing blanks go. */
static size_t trim_trailing(const char *s, size_t n)
{
	size_t keep = n, i;

	for (i = 0; i < n; i++) {
		if (s[i] == ' ') {
			if (keep == n)
				keep = i;
			continue;
		}
		if (s[i] == '\\' && i + 1 < n)
			i++;
		keep = n;
	}
	return keep < n ? keep : n;
}

void excludes_push(struct excludes *s, const char *base, int global, const char *text,
		 size_t len)
{
	struct excludes_list *l;
	const char *p = text, *end = text + len;

	ALLOC_GROW(s->lists, s->nr + 1, s->alloc);
	l = &s->lists[s->nr++];
	memset(l, 0, sizeof(*l));
	l->base = xstrdup(base);
	l->global = global;
	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		p += 3;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *line = p;
		unsigned flags = 0;
		char *pat;

		p += n + (nl ? 1 : 0);
		if (nl && n && line[n - 1] == '\r')
			n--;	/* as git: a CR before the LF goes */
		if (!n || line[0] == '#')
			continue;
		n = trim_trailing(line, n);
		if (n && line[0] == '!') {
			flags |= PAT_NEGATIVE;
			line++;
			n--;
		}
		if (!n)
			continue;
		if (line[n - 1] == '/') {
			flags |= PAT_MUSTBEDIR;
			n--;
		}
		if (!n)
			continue;
		if (!memchr(line, '/', n))
			flags |= PAT_NODIR;
		else if (line[0] == '/') {
			line++;
			n--;
		}
		if (memchr(line, '\0', n))
			continue;
		pat = xstrndup(line, n);
		ALLOC_GROW(l->v, l->nr + 1, l->alloc);
		l->v[l->nr].pat = pat;
		l->v[l->nr].flags = flags;
		l->nr++;
	}
}

static void list_release(struct excludes_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i].pat);
	free(l->v);
	free(l->base);
}

void excludes_pop(struct excludes *s)
{
	if (s->nr)
		list_release(&s->lists[--s->nr]);
}

void excludes_release(struct excludes *s)
{
	while (s->nr)
		excludes_pop(s);
	FREE_AND_NULL(s->lists);
	s->alloc = 0;
}

/* 1: ignored, 0: re-included, -1: no pattern of `l` matches. */
static int list_match(const struct excludes_list *l, const char *path, int is_dir)
{
	const char *slash = strrchr(path, '/'), *basename = slash ? slash + 1 : path;
	size_t baselen = strlen(l->base), i;

	if (strncmp(path, l->base, baselen))
		return -1;
	for (i = l->nr; i-- > 0;) {
		const struct excludes_pattern *pt = &l->v[i];
		int hit;

		if ((pt->flags & PAT_MUSTBEDIR) && !is_dir)
			continue;
		if (pt->flags & PAT_NODIR)
			hit = vcs_wildmatch(pt->pat, basename);
		else
			hit = vcs_wildmatch(pt->pat, path + baselen);
		if (hit)
			return !(pt->flags & PAT_NEGATIVE);
	}
	return -1;
}

int excludes_match(const struct excludes *s, const char *path, int is_dir)
{
	struct buf full = BUF_INIT;
	size_t i;
	int r = -1;

	for (i = s->nr; i-- > 0 && r < 0;) {
		const struct excludes_list *l = &s->lists[i];

		if (l->global && s->prefix && *s->prefix) {
			if (!full.len) {
				buf_addstr(&full, s->prefix);
				buf_addstr(&full, path);
			}
			r = list_match(l, full.buf, is_dir);
		} else {
			r = list_match(l, path, is_dir);
		}
	}
	buf_release(&full);
	return r > 0;
}

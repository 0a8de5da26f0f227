/*
 * Lazy placeholders (match.h, match_find_placeholder()): a line of
 * new_string that stands for code left out ("// ... rest of methods ...",
 * "(rest of code unchanged)") is refused before anything is matched, since
 * writing it would delete the code it stands for. Apart from the matchers:
 * it reads new_string alone, word by word.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tools/match.h"
#include "tools/match_internal.h"

/* Words a placeholder is made of; the first group names what was left out. */
static const char *const ph_trigger[] = {
	"rest", "remaining", "existing", "unchanged", "omitted", "previous", "other",
};
static const char *const ph_words[] = {
	"of", "the", "code", "method", "methods", "function", "functions", "file", "class",
	"classes", "implementation", "here", "same", "as", "before", "keep", "kept", "line",
	"lines", "content", "contents", "remains", "remain", "stays", "stay", "is", "are", "for",
	"brevity", "and", "imports", "tests", "properties", "fields", "cases", "logic", "body",
	"etc", "from", "exactly", "unchanged", "omitted", "component", "components", "file's",
	"props", "styles", "config", "configuration", "definitions", "helpers", "handlers",
	"routes", "code's", "members", "elements", "items", "entries", "sections", "section",
};

static int in_list(const char *w, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(w, list[i]))
			return 1;
	return 0;
}

/*
 * The normal form of a placeholder line (lower case words, into `out`),
 * or 0 when the line is none: after a comment leader or inside
 * parentheses or brackets, only words of the lists above, naming what was
 * left out, with an ellipsis or a word saying it is unchanged.
 */
static int placeholder_form(struct buf *out, const char *s, size_t n)
{
	size_t a = 0, b = n, i;
	int framed = 0, dots = 0, trigger = 0, says = 0, words = 0;
	char w[32];
	size_t wl = 0;

	while (a < b && match_is_blank(s[a]))
		a++;
	while (b > a && match_is_blank(s[b - 1]))
		b--;
	if (b - a >= 4 && !memcmp(s + a, "<!--", 4)) {
		a += 4;
		framed = 1;
		if (b - a >= 3 && !memcmp(s + b - 3, "-->", 3))
			b -= 3;
	} else if (b - a >= 2 && (!memcmp(s + a, "//", 2) || !memcmp(s + a, "--", 2) ||
				  !memcmp(s + a, "/*", 2))) {
		a += 2;
		framed = 1;
		if (b - a >= 2 && !memcmp(s + b - 2, "*/", 2))
			b -= 2;
	} else if (b > a && (s[a] == '#' || s[a] == ';' || s[a] == '%')) {
		a++;
		framed = 1;
	}
	while (a < b && (match_is_blank(s[a]) || s[a] == '(' || s[a] == '[' || s[a] == '{'))
		framed |= s[a++] != ' ' && s[a - 1] != '\t';
	while (b > a && (match_is_blank(s[b - 1]) || s[b - 1] == ')' || s[b - 1] == ']' ||
			 s[b - 1] == '}'))
		b--;
	if (a < b && (s[a] == '.' || !memcmp(s + a, "\xe2\x80\xa6", b - a >= 3 ? 3 : 0)))
		framed = 1;
	if (!framed || a >= b)
		return 0;
	buf_reset(out);
	for (i = a; i <= b; i++) {
		unsigned char c = i < b ? (unsigned char)s[i] : ' ';

		if (i + 3 <= b && !memcmp(s + i, "\xe2\x80\xa6", 3)) {
			dots = 1;
			i += 2;
			c = ' ';
		} else if (c == '.' && i + 2 < b && s[i + 1] == '.' && s[i + 2] == '.') {
			dots = 1;
		}
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '\'' || c == '_' || c == '-') {
			if (wl + 1 < sizeof(w))
				w[wl++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
			else
				return 0;
			continue;
		}
		if (c != '.' && c != ' ' && c != '\t' && c != ',' && c != ':')
			return 0;
		if (!wl)
			continue;
		w[wl] = 0;
		wl = 0;
		words++;
		if (in_list(w, ph_trigger, ARRAY_SIZE(ph_trigger)))
			trigger = 1;
		else if (!in_list(w, ph_words, ARRAY_SIZE(ph_words)) && !(w[0] >= '0' && w[0] <= '9'))
			return 0;
		if (!strcmp(w, "unchanged") || !strcmp(w, "omitted") || !strcmp(w, "same") ||
		    !strcmp(w, "remains") || !strcmp(w, "remain"))
			says = 1;
		buf_addstr(out, w);
		buf_addch(out, ' ');
	}
	return trigger && (dots || says) && words <= 10;
}

size_t match_find_placeholder(const char *old, size_t old_len, const char *new_text,
			      size_t new_len, struct buf *what)
{
	struct lines ol, nl;
	struct buf f = BUF_INIT, g = BUF_INIT;
	size_t i, j, found = 0;

	match_split_lines(&ol, old, old_len);
	match_split_lines(&nl, new_text, new_len);
	for (i = 0; i < nl.nr && !found; i++) {
		const struct line *l = &nl.v[i];
		size_t a, b;

		if (!placeholder_form(&f, new_text + l->start, l->end - l->start))
			continue;
		for (j = 0; j < ol.nr; j++)
			if (placeholder_form(&g, old + ol.v[j].start, ol.v[j].end - ol.v[j].start) &&
			    f.len == g.len && !memcmp(f.buf, g.buf, f.len))
				break;
		if (j < ol.nr)
			continue;
		match_trimmed(new_text, l, &a, &b);
		buf_add(what, new_text + a, b - a);
		found = i + 1;
	}
	buf_release(&f);
	buf_release(&g);
	free(ol.v);
	free(nl.v);
	return found;
}


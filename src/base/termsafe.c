#include <string.h>

#include "base/termsafe.h"

/* Length of the valid UTF-8 sequence at s (1-4), its code point in *cp; 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t len, unsigned *cp)
{
	unsigned c = s[0], min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2; *cp = c & 0x1f; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3; *cp = c & 0x0f; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4; *cp = c & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return n;
}

/* Code points that are controls or change how the text around them is shown. */
static int unsafe_cp(unsigned cp)
{
	return (cp >= 0x80 && cp <= 0x9f) ||		/* C1 controls */
	       cp == 0x061c ||				/* ARABIC LETTER MARK */
	       (cp >= 0x200b && cp <= 0x200f) ||	/* zero-width, LRM, RLM */
	       (cp >= 0x2028 && cp <= 0x202e) ||	/* separators, bidi embeddings/overrides */
	       (cp >= 0x2060 && cp <= 0x2069) ||	/* word joiner ... bidi isolates */
	       cp == 0xfeff ||				/* BOM, zero-width no-break space */
	       (cp >= 0xfff9 && cp <= 0xfffb);		/* interlinear annotation */
}

static int scan(struct buf *out, const char *str, size_t len, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0, n;
	int changed = 0;
	unsigned cp;

	while (i < len) {
		unsigned char c = s[i];

		if (c >= 0x20 && c < 0x7f) {
			i++;
			continue;
		}
		if ((c == '\n' || c == '\t') && (flags & TERMSAFE_MULTILINE)) {
			i++;
			continue;
		}
		n = utf8_seq(s + i, len - i, &cp);
		if (n > 1 && !unsafe_cp(cp)) {
			i += n;
			continue;
		}
		changed = 1;
		if (!out)
			return 1;
		buf_add(out, str + run, i - run);
		if (c == 0x1b)
			buf_addstr(out, "\\e");
		else if (c == '\n')
			buf_addstr(out, "\\n");
		else if (c == '\t')
			buf_addstr(out, "\\t");
		else if (c == '\r')
			buf_addstr(out, "\\r");
		else if (n > 1)
			buf_addf(out, "\\u{%04X}", cp);
		else
			buf_addf(out, "\\x%02X", c);
		i += n ? n : 1;
		run = i;
	}
	if (out)
		buf_add(out, str + run, len - run);
	return changed;
}

size_t termsafe_partial_tail(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t k, need;

	for (k = 1; k <= 3 && k <= len; k++) {
		unsigned char c = u[len - k];

		if ((c & 0xc0) == 0x80)
			continue;	/* a continuation byte: look further back */
		need = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c <= 0xef ? 3 :
		       c >= 0xc2 && c <= 0xdf ? 2 : 1;
		return need > k ? k : 0;
	}
	return 0;
}

void buf_add_termsafe(struct buf *out, const char *s, size_t len, unsigned flags)
{
	scan(out, s, len, flags);
}

int termsafe_needed(const char *s, size_t len, unsigned flags)
{
	return scan(NULL, s, len, flags);
}

char *termsafe_dup(const char *s, unsigned flags)
{
	struct buf b = BUF_INIT;

	buf_add_termsafe(&b, s ? s : "", s ? strlen(s) : 0, flags);
	return buf_detach(&b, NULL);
}

void fputs_termsafe(const char *s, FILE *f, unsigned flags)
{
	size_t len = strlen(s);
	struct buf b = BUF_INIT;

	if (!termsafe_needed(s, len, flags)) {
		fputs(s, f);
		return;
	}
	buf_add_termsafe(&b, s, len, flags);
	fwrite(b.buf, 1, b.len, f);
	buf_release(&b);
}

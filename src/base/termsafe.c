#include <string.h>

#include "base/termsafe.h"
#include "base/utf8.h"

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
		n = utf8_decode(str + i, len - i, &cp);
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

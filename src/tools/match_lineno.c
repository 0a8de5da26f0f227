/*
 * Line numbers copied from a read into old_string (match.h, 8): the
 * prefixes read_file ("%6d<TAB>"), Roo and Cline ("N | ") and other agents
 * ("N→") put before each line, recognised only when every line has one,
 * numbered one after the other, so that text that merely starts with a
 * number or a bar is never taken for one.
 */
#include <string.h>

#include "tools/match.h"
#include "tools/match_internal.h"

/*
 * The line-number prefix at the start of `s` (`n` bytes): read_file's and
 * cat -n's "   12<tab>", Roo's and Cline's "12 | ", the "12→" of other
 * agents' reads. Its length (0 for none), its style and number.
 */
static size_t lineno_prefix(const char *s, size_t n, enum match_lineno_style *style,
			    unsigned long *num)
{
	size_t i = 0, d, j;

	while (i < n && s[i] == ' ')
		i++;
	d = i;
	*num = 0;
	while (i < n && s[i] >= '0' && s[i] <= '9' && i - d < 9)
		*num = *num * 10 + (unsigned long)(s[i++] - '0');
	if (i == d || (i < n && s[i] >= '0' && s[i] <= '9'))
		return 0;
	if (i < n && s[i] == '\t') {
		*style = LN_TAB;
		return i + 1;
	}
	if (n - i >= 3 && !memcmp(s + i, "\xe2\x86\x92", 3)) {
		*style = LN_ARROW;
		return i + 3;
	}
	for (j = i; j < n && s[j] == ' '; j++)
		;
	if (j < n && s[j] == '|' && !(j + 1 < n && s[j + 1] == '|')) {
		*style = LN_BAR;
		return j + 1 + (j + 1 < n && s[j + 1] == ' ');
	}
	return 0;
}

/*
 * `s` without the line-number prefixes of its lines, into `out`, when
 * every line has one of one style (`*style` set by the first, or given),
 * numbered one after the other when `consecutive`. Returns the number of
 * lines holding one (0: not every line does), the first number in *first.
 */
size_t match_strip_linenos(struct buf *out, const char *s, size_t n,
			   enum match_lineno_style *style, int consecutive, unsigned long *first)
{
	size_t pos = 0, lines = 0;
	unsigned long prev = 0;

	while (pos < n) {
		const char *nl = memchr(s + pos, '\n', n - pos);
		size_t end = nl ? (size_t)(nl - s) + 1 : n, p;
		enum match_lineno_style st = LN_NONE;
		unsigned long num;

		p = lineno_prefix(s + pos, end - pos, &st, &num);
		if (!p || (*style != LN_NONE && st != *style) ||
		    (consecutive && lines && num != prev + 1))
			return 0;
		*style = st;
		if (!lines)
			*first = num;
		prev = num;
		buf_add(out, s + pos + p, end - pos - p);
		lines++;
		pos = end;
	}
	return lines;
}

/* Whether `s` holds nothing but blanks and line ends (or nothing). */
int match_only_blanks(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!match_is_blank(s[i]) && s[i] != '\n')
			return 0;
	return 1;
}

/* Whether some line of `s` starts with a line-number prefix. */
int match_any_lineno(const char *s, size_t n)
{
	size_t pos = 0;

	while (pos < n) {
		const char *nl = memchr(s + pos, '\n', n - pos);
		size_t end = nl ? (size_t)(nl - s) + 1 : n;
		enum match_lineno_style st = LN_NONE;
		unsigned long num;

		if (lineno_prefix(s + pos, end - pos, &st, &num))
			return 1;
		pos = end;
	}
	return 0;
}


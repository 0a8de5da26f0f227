/*
 * Escapes the model got wrong (match.h, 7): doubled ones ("\\n" sent where
 * the file has a line break) and missing ones (a tab sent where the file
 * has the two characters \t, as a string literal in code spells it).
 */
#include <string.h>

#include "tools/match.h"
#include "tools/match_internal.h"

int match_unescape(struct buf *out, const char *s, size_t n)
{
	size_t i;
	int changed = 0;

	for (i = 0; i < n; i++) {
		char c = i + 1 < n ? s[i + 1] : 0, r = 0;

		if (s[i] == '\\') {
			switch (c) {
			case 'n': r = '\n'; break;
			case 't': r = '\t'; break;
			case '\'': case '"': case '`': case '$': case '\\': r = c; break;
			default: break;
			}
		}
		if (r) {
			buf_addch(out, r);
			i++;
			changed = 1;
		} else {
			buf_addch(out, s[i]);
		}
	}
	return changed;
}

int match_escape_tabs(struct buf *out, const char *s, size_t n)
{
	size_t i;
	int text = 0, changed = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '\n') {
			text = 0;
		} else if (s[i] == '\t' && text) {
			/* indentation stays; only a tab after the line's first character is text */
			buf_addstr(out, "\\t");
			changed = 1;
			continue;
		} else if (!match_is_blank(s[i])) {
			text = 1;
		}
		buf_addch(out, s[i]);
	}
	return changed;
}

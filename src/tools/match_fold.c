/*
 * Letter case folded, for the letter-case matchers (match.h, 10): every
 * letter Unicode gives a lower case (Ä, Σ, Д as well as A), so that
 * `ÄNDERUNG` finds `Änderung` as `MYVARIABLE` finds `myVariable`.
 *
 * The lower case of a character comes from the C library's tables for
 * UTF-8 (the C.UTF-8 locale, asked for by name, so that the user's
 * locale does not change what matches); where that locale is missing,
 * ASCII letters only are folded. Three characters fold further, as
 * Unicode's case folding has them: the dotted capital İ to i and a
 * combining dot (what JavaScript's toLowerCase() makes of it), the final
 * sigma ς to σ, and the capital sharp s ẞ to ß. Bytes that are not valid
 * UTF-8 are kept as they are.
 */
#include <ctype.h>
#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <wctype.h>

#include "base/err.h"
#include "base/utf8.h"
#include "tools/match_internal.h"

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void open_utf8_locale(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Append the folded form of `cp`. */
static void fold_cp(struct buf *out, uint32_t cp)
{
	switch (cp) {
	case 0x130:			/* İ: i and U+0307 */
		buf_addch(out, 'i');
		utf8_encode(out, 0x307);
		return;
	case 0x3c2:			/* ς */
		utf8_encode(out, 0x3c3);
		return;
	case 0x1e9e:			/* ẞ */
		utf8_encode(out, 0xdf);
		return;
	}
	if (utf8_locale)
		cp = (uint32_t)towlower_l((wint_t)cp, utf8_locale);
	utf8_encode(out, cp);
}

void match_fold(struct buf *out, size_t **at, const char *s, size_t n)
{
	size_t i = 0, k, alloc = 0, nr = 0, from;
	uint32_t cp;

	pthread_once(&utf8_once, open_utf8_locale);
	if (at)
		*at = NULL;
	while (i < n) {
		from = out->len;
		if ((unsigned char)s[i] < 0x80) {
			buf_addch(out, (char)tolower((unsigned char)s[i]));
			k = 1;
		} else if ((k = utf8_decode(s + i, n - i, &cp))) {
			fold_cp(out, cp);
		} else {
			buf_addch(out, s[i]);
			k = 1;
		}
		if (at)
			for (; from < out->len; from++) {
				ALLOC_GROW(*at, nr + 1, alloc);
				(*at)[nr++] = i;
			}
		i += k;
	}
	/* one past the end, so that a match's end maps too */
	if (at) {
		ALLOC_GROW(*at, nr + 1, alloc);
		(*at)[nr] = n;
	}
}

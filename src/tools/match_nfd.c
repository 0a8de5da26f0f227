/*
 * Canonical decomposition (Unicode's NFD), for the normalising matchers
 * (match.h, 5 on): "é" written as one character and as "e" with a
 * combining acute accent are the same text, and a file saved by one
 * editor in one form is matched by a model that writes the other
 * (OpenCode's patch tests: a file in NFD, the patch in NFC). Comparing
 * the decomposed forms is comparing canonically: each character becomes
 * its full canonical decomposition, and each run of combining marks is
 * put in the order of their combining classes. Compatibility forms (the
 * ligature "ﬁ" for "fi") stay apart: they are other text.
 *
 * The tables come from the Unicode Character Database
 * (match_nfd_table.h, written by scripts/gen-nfd.py); Hangul syllables
 * are decomposed by their arithmetic. Bytes that are not valid UTF-8 are
 * kept as they are.
 */
#include <stdint.h>
#include <stdlib.h>

#include "base/utf8.h"
#include "tools/match_internal.h"
#include "tools/match_nfd_table.h"

#define INVALID 0x80000000u	/* marks a byte that is not valid UTF-8 */

struct cps {
	uint32_t *v;
	size_t nr, alloc;
};

static void push(struct cps *c, uint32_t cp)
{
	ALLOC_GROW(c->v, c->nr + 1, c->alloc);
	c->v[c->nr++] = cp;
}

static int cmp_decomp(const void *key, const void *el)
{
	uint32_t k = *(const uint32_t *)key, cp = ((const uint32_t *)el)[0];

	return k < cp ? -1 : k > cp;
}

static int ccc_of(uint32_t cp)
{
	size_t lo = 0, hi = ARRAY_SIZE(nfd_ccc);

	if (cp < 0x300 || (cp & INVALID))
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < nfd_ccc[mid][0])
			hi = mid;
		else if (cp > nfd_ccc[mid][1])
			lo = mid + 1;
		else
			return (int)nfd_ccc[mid][2];
	}
	return 0;
}

static void decompose(struct cps *c, uint32_t cp)
{
	const uint32_t *d;
	size_t i;

	if (cp >= 0xac00 && cp <= 0xd7a3) {
		uint32_t s = cp - 0xac00;

		push(c, 0x1100 + s / 588);
		push(c, 0x1161 + (s % 588) / 28);
		if (s % 28)
			push(c, 0x11a7 + s % 28);
		return;
	}
	d = cp < 0xc0 ? NULL : bsearch(&cp, nfd_decomp, ARRAY_SIZE(nfd_decomp),
				       sizeof(nfd_decomp[0]), cmp_decomp);
	if (!d) {
		push(c, cp);
		return;
	}
	for (i = 1; i < 5 && d[i]; i++)
		push(c, d[i]);
}

void match_nfd(struct buf *out, const char *s, size_t n)
{
	struct cps c = { NULL, 0, 0 };
	size_t i, j;

	for (i = 0; i < n && !(s[i] & 0x80); i++)
		;
	if (i == n) {
		buf_add(out, s, n);	/* ASCII is its own decomposition */
		return;
	}
	for (i = 0; i < n;) {
		uint32_t cp;
		size_t used = (unsigned char)s[i] < 0x80 ? 1 : utf8_decode(s + i, n - i, &cp);

		if (used == 1 && (unsigned char)s[i] < 0x80)
			push(&c, (unsigned char)s[i]);
		else if (!used)
			push(&c, INVALID | (unsigned char)s[i]);
		else
			decompose(&c, cp);
		i += used ? used : 1;
	}
	/* the canonical order: a mark moves before marks of a higher class (a stable sort) */
	for (i = 1; i < c.nr; i++) {
		uint32_t x = c.v[i];
		int k = ccc_of(x);

		if (!k)
			continue;
		for (j = i; j > 0 && ccc_of(c.v[j - 1]) > k; j--)
			c.v[j] = c.v[j - 1];
		c.v[j] = x;
	}
	for (i = 0; i < c.nr; i++) {
		if (c.v[i] & INVALID)
			buf_addch(out, (char)(c.v[i] & 0xff));
		else
			utf8_encode(out, c.v[i]);
	}
	free(c.v);
}

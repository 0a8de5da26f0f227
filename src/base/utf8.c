#include <string.h>

#include "base/utf8.h"

static int is_continuation(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t utf8_decode(const char *s, size_t len, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = u[0], min;
	size_t n, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if (!is_continuation(u[i]))
			return 0;
		c = c << 6 | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

void utf8_encode(struct buf *out, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_add(out, u, n);
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
	size_t n = max < len ? max : len, stop = n > 3 ? n - 3 : 0;

	/* a sequence has at most 3 continuation bytes: past them the input is broken */
	while (n > stop && n < len && is_continuation((unsigned char)s[n]))
		n--;
	return n;
}

int utf8_incomplete(const char *s, size_t len)
{
	/* second bytes that every lead byte accepts between them (E0 and F0 need >= A0 and >= 90) */
	static const unsigned char second[] = { 0x80, 0xa0 };
	char u[4];
	uint32_t cp;
	size_t i, k;

	if (len == 0 || len >= 4)
		return 0;
	for (k = 0; k < sizeof(second); k++) {
		memcpy(u, s, len);
		for (i = len; i < 4; i++)
			u[i] = (char)(i == 1 ? second[k] : 0x80);
		if (utf8_decode(u, 4, &cp) > len)
			return 1;
	}
	return 0;
}

size_t utf8_start(const char *s, size_t len, size_t pos)
{
	while (pos < len && is_continuation((unsigned char)s[pos]))
		pos++;
	return pos;
}

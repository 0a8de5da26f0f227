#include "base/utf8.h"

static int is_continuation(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
	size_t n = max < len ? max : len;

	while (n > 0 && n < len && is_continuation((unsigned char)s[n]))
		n--;
	return n;
}

size_t utf8_start(const char *s, size_t len, size_t pos)
{
	while (pos < len && is_continuation((unsigned char)s[pos]))
		pos++;
	return pos;
}

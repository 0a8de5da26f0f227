/*
 * The identifier scan and the hash of the repository map (see tokenize.h).
 */
#include <string.h>

#include "context/tokenize.h"

enum { C_OTHER = 0, C_START = 1, C_DIGIT = 2 };

/* C_START: may start and continue an identifier; C_DIGIT: may only continue one. */
static const unsigned char cls[256] = {
	['0'] = C_DIGIT, ['1'] = C_DIGIT, ['2'] = C_DIGIT, ['3'] = C_DIGIT, ['4'] = C_DIGIT,
	['5'] = C_DIGIT, ['6'] = C_DIGIT, ['7'] = C_DIGIT, ['8'] = C_DIGIT, ['9'] = C_DIGIT,
	['_'] = C_START, ['$'] = C_START,
	['A'] = C_START, ['B'] = C_START, ['C'] = C_START, ['D'] = C_START, ['E'] = C_START,
	['F'] = C_START, ['G'] = C_START, ['H'] = C_START, ['I'] = C_START, ['J'] = C_START,
	['K'] = C_START, ['L'] = C_START, ['M'] = C_START, ['N'] = C_START, ['O'] = C_START,
	['P'] = C_START, ['Q'] = C_START, ['R'] = C_START, ['S'] = C_START, ['T'] = C_START,
	['U'] = C_START, ['V'] = C_START, ['W'] = C_START, ['X'] = C_START, ['Y'] = C_START,
	['Z'] = C_START,
	['a'] = C_START, ['b'] = C_START, ['c'] = C_START, ['d'] = C_START, ['e'] = C_START,
	['f'] = C_START, ['g'] = C_START, ['h'] = C_START, ['i'] = C_START, ['j'] = C_START,
	['k'] = C_START, ['l'] = C_START, ['m'] = C_START, ['n'] = C_START, ['o'] = C_START,
	['p'] = C_START, ['q'] = C_START, ['r'] = C_START, ['s'] = C_START, ['t'] = C_START,
	['u'] = C_START, ['v'] = C_START, ['w'] = C_START, ['x'] = C_START, ['y'] = C_START,
	['z'] = C_START,
#define HI8(n) [n] = C_START, [n + 1] = C_START, [n + 2] = C_START, [n + 3] = C_START, \
	[n + 4] = C_START, [n + 5] = C_START, [n + 6] = C_START, [n + 7] = C_START
	HI8(0x80), HI8(0x88), HI8(0x90), HI8(0x98), HI8(0xa0), HI8(0xa8), HI8(0xb0), HI8(0xb8),
	HI8(0xc0), HI8(0xc8), HI8(0xd0), HI8(0xd8), HI8(0xe0), HI8(0xe8), HI8(0xf0), HI8(0xf8),
#undef HI8
};

int ctx_ident_char(unsigned char c)
{
	return cls[c] != C_OTHER;
}

size_t ctx_tokenize(const char *text, size_t len, ctx_ident_fn fn, void *data)
{
	const unsigned char *p = (const unsigned char *)text, *end = p + len;
	size_t n = 0;

	while (p < end) {
		const unsigned char *s;
		unsigned char c = cls[*p];
		uint64_t h;

		if (c == C_OTHER) {
			p++;
			continue;
		}
		if (c == C_DIGIT) {
			/* a number, with its suffix or hex digits */
			while (++p < end && cls[*p])
				;
			continue;
		}
		s = p;
		h = 0xcbf29ce484222325ull;	/* ctx_ident_hash(), as it goes */
		do
			h = (h ^ *p) * 0x100000001b3ull;
		while (++p < end && cls[*p]);
		if ((size_t)(p - s) < CTX_IDENT_MIN || (size_t)(p - s) > CTX_IDENT_MAX)
			continue;
		n++;
		if (fn(data, (const char *)s, (size_t)(p - s), h))
			break;
	}
	return n;
}

/*
 * A multiply-xorshift hash over 8-byte words (in the spirit of wyhash and
 * FNV): fast on large files, and the same on every machine (little-endian
 * reads are assembled byte by byte where the order matters).
 */
static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	return h;
}

static inline uint64_t __attribute__((unused)) load64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
	       (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

uint64_t ctx_hash(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (len * 0xff51afd7ed558ccdull);
	uint64_t t = 0;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		memcpy(&w, p + i, 8);
#else
		w = load64(p + i);
#endif
		h = (h ^ (w * 0x9fb21c651e98df25ull)) * 0xc2b2ae3d27d4eb4full;
		h ^= h >> 29;
	}
	for (; i < len; i++)
		t = t << 8 | p[i];
	h ^= t * 0x165667b19e3779f9ull;
	return mix(h);
}

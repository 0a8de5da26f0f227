#ifndef FX_UTF8_H
#define FX_UTF8_H

/*
 * Cutting UTF-8 text at character boundaries: a cut never splits a
 * multi-byte sequence. Only the lead/continuation pattern of the bytes is
 * looked at (a continuation byte is 10xxxxxx); the text is not validated,
 * so invalid bytes pass through as they are.
 */

#include <stddef.h>

/**
 * The length of the longest prefix of `s` (`len` bytes) that is at most
 * `max` bytes and does not end inside a sequence: `len` when it fits,
 * else `max` stepped back over continuation bytes.
 */
size_t utf8_cut(const char *s, size_t len, size_t max);

/**
 * The first position at or after `pos` that does not hold a continuation
 * byte (`len` when there is none): where a tail of `s` taken from `pos`
 * can start without a broken sequence.
 */
size_t utf8_start(const char *s, size_t len, size_t pos);

#endif

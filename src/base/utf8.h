#ifndef FX_UTF8_H
#define FX_UTF8_H

/*
 * UTF-8: decoding and encoding one code point, and cutting text at
 * character boundaries.
 *
 * utf8_decode() is strict (RFC 3629): no overlong forms, no surrogates
 * (U+D800-U+DFFF), nothing above U+10FFFF. The cuts only look at the
 * lead/continuation pattern of the bytes (a continuation byte is
 * 10xxxxxx) and do not validate, so invalid bytes pass through as they
 * are.
 */

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/**
 * The length (1-4) of the valid UTF-8 sequence at `s` (`len` > 0 bytes
 * there), with its code point in `*cp`; 0 when the bytes there are not a
 * whole valid sequence (then `*cp` is unspecified).
 */
size_t utf8_decode(const char *s, size_t len, uint32_t *cp);

/** Append code point `cp` (at most U+10FFFF) to `out` in UTF-8. */
void utf8_encode(struct buf *out, uint32_t cp);

/**
 * The length of the longest prefix of `s` (`len` bytes) that is at most
 * `max` bytes and does not end inside a sequence: `len` when it fits,
 * else `max` stepped back over continuation bytes (at most 3: on broken
 * input, where more follow, the cut stays near `max`).
 */
size_t utf8_cut(const char *s, size_t len, size_t max);

/**
 * 1 when the `len` bytes at `s` are the valid start of a longer sequence
 * (the rest is cut off), else 0 (a whole sequence, or invalid).
 */
int utf8_incomplete(const char *s, size_t len);

/**
 * The first position at or after `pos` that does not hold a continuation
 * byte (`len` when there is none): where a tail of `s` taken from `pos`
 * can start without a broken sequence.
 */
size_t utf8_start(const char *s, size_t len, size_t pos);

#endif

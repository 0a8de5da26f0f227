#ifndef FX_TERMSAFE_H
#define FX_TERMSAFE_H

/*
 * Text for a terminal from someone forgex does not trust (a model, a
 * command, a file name, a project file): what could make the terminal do
 * something is shown as an escape instead of being sent to it.
 *
 * Escaped: C0 controls (ESC starts CSI and OSC sequences: clears, cursor
 * moves, OSC 52 clipboard writes, window titles; BEL; BS and CR, which
 * overwrite what was shown), DEL, C1 controls (U+0080-U+009F, including
 * the 8-bit CSI and OSC), invisible and reordering format characters
 * (bidi overrides and isolates, zero-width characters, BOM), and bytes
 * that are not valid UTF-8. Forms: "\e" for ESC, "\xHH" for other bytes,
 * "\u{HHHH}" for code points. Valid printable UTF-8 is kept; newline and
 * tab are kept only with TERMSAFE_MULTILINE (else "\n", "\t").
 * A backslash is kept as it is: the result is for reading, not parsing.
 */

#include <stddef.h>
#include <stdio.h>

#include "base/buf.h"

#define TERMSAFE_MULTILINE 1

void buf_add_termsafe(struct buf *out, const char *s, size_t len, unsigned flags);

/** Whether `len` bytes of `s` would be changed by buf_add_termsafe(). */
int termsafe_needed(const char *s, size_t len, unsigned flags);

/**
 * How many bytes at the end of s[0..len) begin a UTF-8 sequence that is
 * not complete yet (0-3): text that arrives in pieces keeps them for the
 * next piece instead of escaping half a character.
 */
size_t termsafe_partial_tail(const char *s, size_t len);

/** fputs() for untrusted text: `s` made safe, then written to `f`. */
void fputs_termsafe(const char *s, FILE *f, unsigned flags);

/** A new string: `s` made safe (caller frees). */
char *termsafe_dup(const char *s, unsigned flags);

#endif

#ifndef FORGEX_CLI_TEXTWRAP_H
#define FORGEX_CLI_TEXTWRAP_H

/*
 * forgex's own messages (warnings, hints, notes) wrapped at word
 * boundaries to the terminal's width, so a long warning fills rows that
 * end between words instead of breaking them mid-way. The model's text
 * is not wrapped here (see markdown.h).
 */

#include <stdio.h>

#include "base/buf.h"

/*
 * The width of the terminal on `fd` (TIOCGWINSZ), or 0 when `fd` is not a
 * terminal. Asked each time: a resize (SIGWINCH) is seen at the next
 * message with no handler of its own (libedit has its own).
 */
unsigned textwrap_width(int fd);

/*
 * `text` (`len` bytes) into `out`, each line cut into rows of at most
 * `width` code points at spaces (a word longer than a row is cut within
 * it); the rows a line continues on begin with `indent` spaces. Width 0
 * (or too narrow for the indentation): the text as it is.
 */
void textwrap(struct buf *out, const char *text, size_t len, unsigned width, unsigned indent);

/*
 * cli_printf() (control characters escaped) wrapped to the width of `f`'s
 * terminal, continuation rows indented by 2; off a terminal as it is.
 */
void textwrap_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

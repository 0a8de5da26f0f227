#ifndef FORGEX_CLI_MARKDOWN_H
#define FORGEX_CLI_MARKDOWN_H

/*
 * The model's Markdown for a terminal with colour, parsed by md4c
 * (CommonMark with tables and strikethrough; raw HTML is shown as text):
 * headings bold (level 1 underlined too, the #s dropped), **bold**,
 * *italic*, ~~struck~~, `code` in cyan, fenced code between dimmed fence
 * lines naming the language, lists with bullets and numbers (nested ones
 * indented), quotes behind a dimmed bar, rules, tables with their columns
 * aligned (by code points; the header bold), links as "text (url)". Every
 * piece of the text goes through base/termsafe: an escape sequence in a
 * code block is shown, never sent.
 *
 * Only for a terminal with colour: under NO_COLOR or off a terminal the
 * session prints the model's text as it came (see docs/internals/chat.md).
 *
 * Streaming (markdown_stream_*): the text arrives in pieces; a block is
 * rendered once it is complete, so streaming stays visible:
 *   - a line of a paragraph, list, heading or quote is rendered when its
 *     newline comes; a line that starts as plain text is shown word by
 *     word before that (up to the last space before anything Markdown
 *     could mark), and the rest when the line ends;
 *   - a fenced code block is held until its closing fence;
 *   - a table (lines starting with '|' whose second line is the
 *     delimiter row) until its first line that is not a row;
 *   - a line indented 4 columns or more is shown as it is.
 * Each line is parsed alone (so emphasis does not span lines, and a
 * setext underline is shown as text); the model's line breaks and blank
 * lines are kept.
 */

#include <stddef.h>

#include "base/buf.h"

/** Render the whole Markdown document `text` (`len` bytes) for a terminal into `out`. */
void markdown_render(struct buf *out, const char *text, size_t len);

struct markdown_stream;

/** A stream of one message's text (free with markdown_stream_free()). */
struct markdown_stream *markdown_stream_new(void);

/** The next `len` bytes of the text; what is ready is appended to `out`. */
void markdown_stream_feed(struct markdown_stream *m, const char *text, size_t len,
			  struct buf *out);

/**
 * The text is complete: everything held is rendered into `out` (a fence
 * left open ends here). Returns 1 when `out` ends within a line (the
 * text did not end with a newline), else 0. The stream can start again.
 */
int markdown_stream_finish(struct markdown_stream *m, struct buf *out);

void markdown_stream_free(struct markdown_stream *m);

#endif

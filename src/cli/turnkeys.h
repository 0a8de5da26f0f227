#ifndef FX_CLI_TURNKEYS_H
#define FX_CLI_TURNKEYS_H

/*
 * The terminal while a session's turn runs (cmd_chat.c). Between prompts
 * the line editor is not reading, and a terminal in its normal mode would
 * echo whatever is typed into the model's answer and leave the Esc key to
 * print "^[". So for the turn the terminal is put in a mode without
 * echo and without line editing (ISIG stays on: Ctrl-C and Ctrl-Z are
 * still signals), and a thread reads it:
 *   - the Esc key (an ESC nothing follows within 50 ms) sets *cancel, as
 *     Ctrl-C's handler does: the turn stops;
 *   - key sequences (arrows, function keys) and other control keys are
 *     dropped; Backspace and Ctrl-U edit what was typed; Enter is a
 *     newline;
 *   - text is kept (up to 64 KiB) for the next prompt (lineedit_prefill():
 *     a line ended with Enter is the next message, the rest is left in
 *     the line to edit).
 * Whoever else reads the terminal during the turn (an approval question)
 * pauses the reader first and resumes it after.
 *
 *   turnkeys_start() before the turn; turnkeys_stop() after it, which
 *   puts the terminal back as it was and hands over what was typed.
 */

#include <signal.h>

#include "base/buf.h"

struct turnkeys;

/**
 * Start reading terminal `fd` for a turn; `*cancel` is set on Esc. When
 * `fd` is not a terminal, or the thread cannot start, `*out` is NULL and
 * nothing is read (every function takes NULL).
 */
void turnkeys_start(struct turnkeys **out, int fd, volatile sig_atomic_t *cancel);

/** Stop reading until turnkeys_resume(); once it returns, the reader is off the terminal. */
void turnkeys_pause(struct turnkeys *tk);
void turnkeys_resume(struct turnkeys *tk);

/**
 * Stop, put the terminal back in its mode from before, and append the text
 * typed during the turn (each Enter a '\n') to `typed` (may be
 * NULL). Returns whether Esc stopped the turn. Frees `tk`.
 */
int turnkeys_stop(struct turnkeys *tk, struct buf *typed);

#endif

#ifndef FX_CLI_PROGRESS_H
#define FX_CLI_PROGRESS_H

/*
 * A one-line spinner on a terminal: what forgex is waiting for (the stage,
 * the role and turn, the model or the command) and for how long, redrawn
 * in place ten times a second by a thread of its own.
 *
 * The spinner owns the line it draws on: every other line written to the
 * same terminal goes between progress_hold() and progress_release(), which
 * erase the spinner first and draw it again afterwards, so progress lines,
 * approval questions and the result are never mixed with it.
 *
 * The caller (cli_pipeline()):
 *   1. progress_start() with the stream; it does nothing unless that is a
 *      terminal (and TERM is not "dumb");
 *   2. for each line it prints: progress_hold(), print and flush,
 *      progress_release() with what is being waited for now (NULL: as
 *      before);
 *   3. progress_stop() before printing the result: erases the line and
 *      joins the thread.
 * Only one spinner exists at a time. Signals are blocked in its thread.
 */

#include <stdio.h>

/**
 * Start the spinner on `f` when `f` is a terminal whose TERM is not
 * "dumb". Returns 1 when it runs, 0 when it does not (not a terminal, or
 * the thread could not start).
 */
int progress_start(FILE *f);

/** Whether the spinner runs (progress_start() returned 1 and no stop since). */
int progress_active(void);

/**
 * Take the terminal: erase the spinner's line and keep it from drawing
 * until progress_release(). Blocks while the spinner draws. Nests: only
 * the outermost pair erases and redraws. A no-op when it does not run.
 */
void progress_hold(void);

/**
 * Give the terminal back. With a non-NULL `label` the spinner now shows
 * it (copied; control characters are replaced) and counts the time from
 * now.
 */
void progress_release(const char *label);

/** Stop the spinner: erase its line and join its thread. Safe to call twice. */
void progress_stop(void);

/**
 * Format the line the spinner draws into `out` (at most `size` bytes,
 * NUL-terminated): "FRAME LABEL  SECONDSs" cut to `width` columns,
 * counting a UTF-8 sequence as one column. For tests.
 */
void progress_format(char *out, size_t size, unsigned frame, const char *label,
		     double seconds, unsigned width);

#endif

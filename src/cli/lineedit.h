#ifndef FX_LINEEDIT_H
#define FX_LINEEDIT_H

/*
 * The line editor of an interactive session, on libedit (editline(3)):
 * emacs keys, arrows, Home/End, Ctrl-R incremental search, history kept
 * in a file of the project, Tab completion of slash commands and of
 * paths inside the workspace, multi-line entries (a trailing unescaped
 * `\`, or Alt-Enter), bracketed paste (a long paste is shown folded to
 * one line, "[Pasted text #1 +2000 lines]", and returned whole), the Esc
 * key (alone it does nothing; twice at an empty line it puts back the
 * text of lineedit_set_recall()), and a line prefilled with
 * lineedit_prefill(). When the input is not a terminal (a pipe, a file)
 * it reads plain lines instead, with the same trailing-`\` continuation.
 *
 * The caller:
 *   1. lineedit_open() with the terminal's descriptors and the options;
 *   2. per entry: clear its own cancel flag, fflush() what it printed to
 *      out_fd with stdio, lineedit_read(); on LINEEDIT_LINE use the text
 *      and lineedit_history_add() it;
 *   3. lineedit_close() (also on every error path; NULL is fine).
 *
 * Signals while lineedit_read() waits on a terminal: the terminal's
 * ISIG is off while a line is edited, so Ctrl-C, Ctrl-Z and Ctrl-\ are
 * keys, not signals (Ctrl-C returns LINEEDIT_INTERRUPT at once, Ctrl-Z
 * suspends the process with the terminal restored first). Between reads
 * the terminal is in its normal (cooked) mode and Ctrl-C raises SIGINT
 * as usual, so the caller's SIGINT handler (which sets a cancel flag
 * during a turn) can stay installed all the time. While reading:
 *   - SIGWINCH and SIGCONT get handlers of lineedit's own (resize, redraw);
 *     the caller's are put back when lineedit_read() returns;
 *   - SIGINT, SIGTERM, SIGHUP and SIGQUIT left at SIG_DFL get a handler
 *     that puts the terminal back and dies of the signal again; when the
 *     caller has a handler for one of them, that handler runs, and if it
 *     sets *opts.cancel, lineedit_read() returns LINEEDIT_INTERRUPT with
 *     the terminal restored. SIGKILL cannot restore anything.
 * Not thread-safe; one lineedit reads at a time in a process.
 *
 * History: one entry per line in history_path, "\n" and "\\" escaped, so
 * multi-line entries come back whole; the newest `history_max` are kept.
 * A history file under `.forgex/` is opened beneath its workspace without
 * following any link (rundir_forgex_open()); a link, FIFO, device, a
 * file of another user or with other hard links is refused: the session
 * says why once (on stderr) and keeps history in memory only. Entries are
 * stored as typed: secrets pasted into a session end up in the file.
 */

#include <signal.h>
#include <stddef.h>

#include "base/buf.h"

struct lineedit;

struct lineedit_opts {
	int in_fd, out_fd;		/* the terminal (usually 0 and 1 or 2); not a tty: plain line reading */
	const char *history_path;	/* NULL: no history; else a file (under .forgex/) */
	size_t history_max;		/* 0: 1000 entries */
	const char *const *commands;	/* NULL-terminated slash commands ("/run", "/plan", ...) to complete */
	const char *workspace;		/* the root paths are completed under (relative to the cwd) */
	/*
	 * NULL, or a flag the caller's signal handlers set: when a signal
	 * interrupts the wait and *cancel is non-zero (also when it already
	 * is at the start), lineedit_read() returns LINEEDIT_INTERRUPT.
	 * lineedit never clears it.
	 */
	volatile sig_atomic_t *cancel;
};
#define LINEEDIT_OPTS_INIT { 0, 1, NULL, 0, NULL, NULL, NULL }

enum { LINEEDIT_LINE = 0, LINEEDIT_EOF = 1, LINEEDIT_INTERRUPT = 2 };

/** Longest entry lineedit_read() returns (bytes); longer input is an error. */
#define LINEEDIT_MAX_ENTRY (1024 * 1024)

/**
 * Make a line editor for `opts` (copied; the strings too). The editor
 * (libedit) is used when both in_fd and out_fd are terminals and TERM is
 * set and not "dumb"; else plain line reading (on a terminal: its own
 * line editing, the prompt shown, Ctrl-C a SIGINT for the caller's
 * handler, which must set *cancel to end the read). The history file is read here (at most 1 MiB of its end).
 * Returns 0 or FX_E* with err_set(); a refused history file is not an
 * error (see the overview).
 */
int lineedit_open(struct lineedit **out, const struct lineedit_opts *opts);

/**
 * Read one (possibly multi-line) entry with `prompt` (continuation lines
 * after a trailing `\` get "... "); a prompt may wrap terminal escapes
 * (colour) in '\1' ... '\1' so they take no width. Returns:
 *   LINEEDIT_LINE       the text in `line` (reset first), no trailing
 *                       newline, lines joined with '\n', with no control
 *                       characters but '\n' and '\t' (so no escape
 *                       sequence of a key ever reaches the caller);
 *   LINEEDIT_EOF        Ctrl-D at an empty line, or the end of the input
 *                       (a pending continuation is returned as a line
 *                       first);
 *   LINEEDIT_INTERRUPT  Ctrl-C (the line is dropped; lineedit_dropped()
 *                       says whether there was any), or *cancel set (in
 *                       plain reading, bytes already read of the next
 *                       line are kept for the next read);
 *   < 0                 FX_E* with err_set() (a read error, an entry
 *                       over LINEEDIT_MAX_ENTRY).
 * Blocks until one of those. The terminal is back in its mode from
 * before on return.
 */
int lineedit_read(struct lineedit *le, const char *prompt, struct buf *line);

/**
 * Add `entry` to the history and append it to the history file at once;
 * empty or same-as-last is ignored. The file is compacted to the newest
 * history_max entries when it has grown past twice that.
 */
void lineedit_history_add(struct lineedit *le, const char *entry);

/**
 * Why the history file is not used ("" when it is, or there is none):
 * the message said once on stderr. Borrowed.
 */
const char *lineedit_history_problem(const struct lineedit *le);

/**
 * After LINEEDIT_INTERRUPT: whether text was dropped (1), or the prompt
 * was empty (0), so "a second Ctrl-C at an empty prompt leaves" can be
 * told from "Ctrl-C clears what I typed".
 */
int lineedit_dropped(const struct lineedit *le);

/**
 * Give the next lineedit_read()s `text` as if typed at their prompts,
 * e.g. what was typed while a turn ran: each line that ended with Enter
 * ('\n') is entered (one read each), and the rest is left in the line to
 * edit. Each line goes in as a paste (a tab is text, a long line is
 * folded); ESC bytes are dropped. Only with the editor
 * (lineedit_is_tty()); otherwise nothing.
 */
void lineedit_prefill(struct lineedit *le, const char *text);

/**
 * What Esc Esc at an empty line puts in it (copied; NULL or "": nothing),
 * e.g. the last message sent, to edit and send again.
 */
void lineedit_set_recall(struct lineedit *le, const char *text);

/** Whether `le` edits with libedit (1) or reads plain lines (0). */
int lineedit_is_tty(const struct lineedit *le);

/** Free `le`; the terminal is left in its mode from before. NULL is fine. */
void lineedit_close(struct lineedit *le);

#endif

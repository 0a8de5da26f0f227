/*
 * The line editor's own parts, shared by lineedit.c (reading, keys,
 * pastes), lineedit_history.c (the history file) and lineedit_complete.c
 * (Tab). Not for other callers: lineedit.h is the interface.
 */
#ifndef FORGEX_CLI_LINEEDIT_INT_H
#define FORGEX_CLI_LINEEDIT_INT_H

#include <histedit.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <termios.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "cli/lineedit.h"

#define CONT_PROMPT "... "
#define PASTE_ON "\033[?2004h"		/* xterm's bracketed paste */
#define PASTE_OFF "\033[?2004l"
#define HIST_DEFAULT 1000
#define HIST_MAX_ENTRIES 100000
#define HIST_READ_MAX (1024 * 1024)	/* bytes of a history file's end read */
#define HIST_ENTRY_MAX (64 * 1024)	/* longer entries are not stored */
#define COMPLETE_SCAN_MAX 20000		/* directory entries looked at per Tab */
#define COMPLETE_LIST_MAX 200		/* candidates shown on a double Tab */
#define ESC_ALONE_MS 50			/* an ESC with nothing after it this long is the Esc key */
#define ESC_TWICE "\033[fx-esc2~"	/* what two Esc keys are given to libedit as (bound) */
#define PASTE_START "\033[200~"
#define PASTE_END "\033[201~"
#define PASTE_FOLD_LINES 8		/* a paste of more lines than this is shown folded */
#define PASTE_FOLD_CHARS 1000		/* ... or of more characters */

struct lineedit {
	int in_fd, out_fd;
	int tty;
	int paste_mode;			/* bracketed paste asked of the terminal */
	EditLine *el;
	History *hist;
	FILE *fin, *fout;
	locale_t loc;

	const char *prompt;		/* of the physical line being read */
	int key_interrupt;		/* Ctrl-C was typed */
	size_t key_dropped;		/* ... with this many bytes in the line */
	int dropped;			/* the last interrupt dropped text */
	int searching;			/* in a Ctrl-R search (as far as keys tell) */
	int pasting;			/* inside a bracketed paste */
	int sig_interrupt;		/* *cancel was seen */
	int esc_alone;			/* the last key was the Esc key alone */
	int from_inject;		/* the byte just read came from `inject` */
	volatile sig_atomic_t *cancel;
	struct termios raw;		/* the mode libedit edits in */
	int have_raw;

	/* plain reading */
	struct buf in;			/* bytes read, not yet returned */

	/* keys given to libedit before the terminal's (a prefilled line, two Esc) */
	struct buf inject;
	size_t inject_off;
	char *recall;			/* what Esc Esc at an empty line puts in it */
	struct strvec pastes;		/* the text of each folded paste of the entry */

	/* history */
	char *hist_path;		/* NULL: none */
	char *hist_ws, *hist_rel;	/* beneath a workspace's .forgex/, or NULL */
	int hist_off;			/* refused: memory only */
	struct buf hist_problem;
	size_t hist_max;
	size_t file_entries;		/* as far as we know */
	struct strvec entries;		/* the newest hist_max, oldest first */

	/* completion */
	struct strvec commands;
	char *ws_real;			/* NULL: no path completion */
	char *tab_line;			/* the line at the last unfruitful Tab */
	size_t tab_cursor;
};

/* The lineedit of a libedit handle (its client data). */
struct lineedit *le_of(EditLine *el);
/*
 * Drop control characters but '\n' and '\t' (C0, DEL, and C1 as UTF-8
 * U+0080-U+009F) from `b`.
 */
void le_sanitize(struct buf *b);
/* Read the history file into libedit's history and `entries` (a problem is kept, not returned). */
void le_hist_load(struct lineedit *le);
/* libedit function of Tab: complete the word before the cursor. */
unsigned char le_key_complete(EditLine *el, int ch);

#endif

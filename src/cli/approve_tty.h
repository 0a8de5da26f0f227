#ifndef FX_CLI_APPROVE_TTY_H
#define FX_CLI_APPROVE_TTY_H

/*
 * The approval question on a terminal: the front's approval_ask_fn
 * (sandbox/approval.h). It shows what would run and why it needs
 * approval, and takes
 *
 *   y, yes     run it, this once;
 *   a, always  run it, and every later command of the same shape (`git
 *              push`, approval_command_shape(); an MCP tool: the same
 *              tool) without asking for the rest of the
 *              session (the approver remembers);
 *   n, no      do not run it (an empty answer is no);
 *   e          do not run it, and tell the model why: the person types a
 *              line, which comes back in the answer's `reason`.
 *
 * Ctrl-C at the question is no, at once (the terminal is read with ISIG
 * off and ^C as an end of line, and put back as it was on every path), and
 * so are Ctrl-D, no terminal, end of input, an unreadable answer (after
 * three tries), the cancel flag, or any error. The answer is read from
 * the terminal, never from standard input, so a command's input or a
 * model cannot answer it; what was typed before the question appeared is
 * discarded. The spinner (progress.h) leaves the line to the question.
 *
 * The caller:
 *   1. struct approve_tty t = APPROVE_TTY_INIT; (t.label for the spinner)
 *   2. approver_init(&ap, approve_tty_ask, &t, &cancel_flag);
 *   3. hands &ap down; approver_release(&ap) at the end.
 */

#include <signal.h>

#include "sandbox/approval.h"

/** Where and how to ask (the approver's data). */
struct approve_tty {
	const char *tty;	/* the terminal device; NULL: "/dev/tty", the controlling one */
	/*
	 * What the spinner shows once the question is answered (copied, see
	 * progress_release()); NULL: what it showed before.
	 */
	const char *label;
};

#define APPROVE_TTY_INIT { NULL, NULL }

/**
 * An approval_ask_fn: ask about `rq` on the terminal of `data` (a struct
 * approve_tty; NULL: /dev/tty), opened O_RDWR | O_CLOEXEC | O_NOCTTY, with
 * the spinner held. Fills `*out` and returns its verdict; remembers
 * nothing. No terminal: APPROVE_NO, err_last() saying "no terminal to ask
 * for approval on (PATH)".
 */
int approve_tty_ask(void *data, struct approval_answer *out, const struct approval_request *rq,
		    const volatile sig_atomic_t *cancel);

/**
 * The same, writing the question to `out_fd` and reading the answer from
 * `in` (usually both one terminal; borrowed, not closed), without the
 * spinner. `*cancel` (may be NULL) is checked every 100 ms and when a
 * signal interrupts the read.
 */
int approve_tty_ask_fd(struct approval_answer *out, int in, int out_fd,
		       const struct approval_request *rq, const volatile sig_atomic_t *cancel);

#endif

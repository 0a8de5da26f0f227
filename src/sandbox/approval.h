#ifndef FX_APPROVAL_H
#define FX_APPROVAL_H

/*
 * Approval of a command the policy answered POLICY_APPROVAL for (the
 * seed's resolve_approval()): mode safe never approves, auto always does,
 * ask asks a person on the controlling terminal, showing the exact command
 * and the policy's reason, and takes y/yes or n/no for an answer. No
 * terminal, end of input, an unreadable answer or any error means no:
 * approval fails closed.
 *
 * The caller:
 *   1. d = policy_check(&policy, argv, argc, &reason);
 *   2. if d == POLICY_APPROVAL:
 *        approved = approval_resolve(policy.mode, argv, argc, reason.buf);
 *
 * Asking blocks until the person answers. Only one question is on the
 * terminal at a time: concurrent callers wait for each other. The answer is
 * read from the terminal, never from standard input, so a command's input
 * or a model cannot answer it; what was typed before the question appeared
 * is discarded.
 */

#include <stddef.h>

#include "base/buf.h"
#include "sandbox/policy.h"

/**
 * Decide whether the command may run: 1 approved, 0 not. In mode ask this
 * opens /dev/tty (O_RDWR | O_CLOEXEC | O_NOCTTY) and blocks for the answer;
 * when it returns 0 without a "no" from the person, err_last() says why.
 */
int approval_resolve(enum approval_mode mode, const char *const *argv, size_t argc,
		     const char *reason);

/**
 * Ask on the terminal device `tty` (NULL: "/dev/tty", the controlling
 * terminal). 1 approved, 0 not (as approval_resolve()).
 */
int approval_ask_tty(const char *tty, const char *const *argv, size_t argc, const char *reason);

/**
 * Ask by writing the question to `out` and reading the answer from `in`
 * (usually both one terminal; borrowed, not closed). Pending input on a
 * terminal `in` is discarded first. Up to three unreadable answers are
 * asked again; an empty answer is no. 1 approved, 0 not.
 */
int approval_ask_fd(int in, int out, const char *const *argv, size_t argc, const char *reason);

/** Answers of approval_ask_what(): 0 is no. */
enum {
	APPROVE_ONCE = 1,	/* y: this call */
	APPROVE_ALWAYS = 2,	/* a: this and every later call of the same thing, this session */
};

/**
 * Ask on the terminal device `tty` (NULL: "/dev/tty") whether `what`
 * ("the MCP tool docs__search") may run, showing `shown` (its arguments)
 * and `reason`; every string is shown with control characters escaped.
 * Takes y/yes, a/always, n/no. Returns 0 (no, or no terminal: err_last()
 * says why), APPROVE_ONCE or APPROVE_ALWAYS.
 */
int approval_ask_what(const char *tty, const char *what, const char *shown, const char *reason);
/** The same, on the descriptors `in` and `out` (borrowed). */
int approval_ask_what_fd(int in, int out, const char *what, const char *shown,
			 const char *reason);

/**
 * Call `fn(data, 1)` just before every question is written to the terminal
 * and `fn(data, 0)` once it is answered (or given up), with the question's
 * lock held, e.g. so that the front can erase a spinner drawn on the same
 * terminal. NULL removes it. Set by src/cli/ before any question can be
 * asked.
 */
void approval_set_hook(void (*fn)(void *data, int asking), void *data);

/**
 * Append `argv` as a person should see it: arguments separated by spaces,
 * each quoted for a POSIX shell when needed (buf_add_shell_quoted()); an
 * argument holding control characters, bytes that are not UTF-8, or
 * invisible or reordering Unicode formatting characters is written as
 * bash's $'...' with escapes, so that what is shown is exactly what runs
 * and cannot redraw the terminal.
 */
void approval_format_argv(struct buf *out, const char *const *argv, size_t argc);

/** Append `s` with the characters approval_format_argv() escapes shown as \xHH or \uHHHH. */
void approval_add_visible(struct buf *out, const char *s);

#endif

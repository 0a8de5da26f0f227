#ifndef FX_APPROVAL_H
#define FX_APPROVAL_H

/*
 * Approval of a command the policy answered POLICY_APPROVAL for (the
 * seed's resolve_approval()): mode safe never approves, auto always does,
 * ask asks a person on the controlling terminal, showing the exact argv,
 * the folder it runs in and the policy's reason, and takes
 *
 *   y, yes     run it, this once;
 *   a, always  run it, and every later command of the same name (the base
 *              name of argv[0], see policy_base_name()) that needs
 *              approval, without asking, for the rest of this process (a
 *              run or a session: approval_always_reset() forgets);
 *   n, no      do not run it (an empty answer is no);
 *   e          do not run it, and tell the model why: the person types a
 *              line, which comes back in the answer's `reason`.
 *
 * Ctrl-C at the question is no, at once (the terminal is read with ISIG
 * off and ^C as an end of line, and put back as it was on every path), and
 * so are Ctrl-D, no terminal, end of input, an unreadable answer, or any
 * error: approval fails closed. Nothing is ever remembered on disk.
 *
 * The caller:
 *   1. d = policy_check(&v, &policy, argv, argc);
 *   2. if d == POLICY_APPROVAL:
 *        struct approval_request rq = { argv, argc, cwd, v.reason.buf, v.network };
 *        struct approval_answer a = APPROVAL_ANSWER_INIT;
 *        if (approval_decide(&a, policy.mode, &rq) == APPROVE_NO)
 *              ... refuse, telling the model a.reason when there is one;
 *        approval_answer_release(&a);
 *
 * Asking blocks until the person answers. Only one question is on the
 * terminal at a time: concurrent callers wait for each other. The answer is
 * read from the terminal, never from standard input, so a command's input
 * or a model cannot answer it; what was typed before the question appeared
 * is discarded.
 */

#include <signal.h>
#include <stddef.h>

#include "base/buf.h"
#include "sandbox/policy.h"

/** Answers: 0 is no. */
enum approval_verdict {
	APPROVE_NO = 0,
	APPROVE_ONCE = 1,	/* y: this call */
	APPROVE_ALWAYS = 2,	/* a: this and every later call of the same thing, this session */
};

/** What the person answered (or what the mode decided). */
struct approval_answer {
	int verdict;		/* enum approval_verdict */
	char *reason;		/* e: what the person said, escaped and capped; else NULL. Owned */
	int interrupted;	/* no because of Ctrl-C (or a cancel) at the question */
	int remembered;		/* yes without asking: the name was approved with a before */
};

#define APPROVAL_ANSWER_INIT { APPROVE_NO, NULL, 0, 0 }

/** Free `a->reason`; `a` is left as APPROVAL_ANSWER_INIT. */
void approval_answer_release(struct approval_answer *a);

/** Longest reason kept from an `e` answer, in bytes (before escaping). */
#define APPROVAL_REASON_MAX 400

/** A command to ask about (every pointer borrowed). */
struct approval_request {
	const char *const *argv;
	size_t argc;
	const char *cwd;	/* the folder it runs in, as shown (e.g. "src", "."); NULL: not shown */
	const char *reason;	/* the policy's reason; may be NULL */
	int network;		/* approving it lets it use the network: say so */
};

/**
 * Decide whether the command may run, by `mode`: safe -> APPROVE_NO;
 * auto -> APPROVE_ONCE; ask -> APPROVE_ONCE at once (with `remembered`)
 * when its name was answered `a` before in this process, else the person
 * is asked on /dev/tty (approval_ask_command()), and an `a` answer is
 * remembered (approval_always_add()). Fills `*out` (release it) and
 * returns its verdict. When the verdict is no without a "no" from the
 * person, err_last() says why.
 */
int approval_decide(struct approval_answer *out, enum approval_mode mode,
		    const struct approval_request *rq);

/**
 * Ask about `rq` on the terminal device `tty` (NULL: "/dev/tty", the
 * controlling terminal; opened O_RDWR | O_CLOEXEC | O_NOCTTY). Fills
 * `*out` and returns its verdict; remembers nothing.
 */
int approval_ask_command(struct approval_answer *out, const char *tty,
			 const struct approval_request *rq);

/**
 * The same, writing the question to `out_fd` and reading the answer from
 * `in` (usually both one terminal; borrowed, not closed). Pending input on
 * a terminal `in` is discarded first. Up to three unreadable answers are
 * asked again.
 */
int approval_ask_command_fd(struct approval_answer *out, int in, int out_fd,
			    const struct approval_request *rq);

/** Whether the name of `argv0` was answered `a` in this process. */
int approval_always_has(const char *argv0);
/** Remember the name of `argv0` as answered `a` (approval_decide() does this). */
void approval_always_add(const char *argv0);
/** Forget every `a` answer (a new session starts). */
void approval_always_reset(void);

/**
 * While asking, stop waiting and answer no (with `interrupted`) once
 * `*flag` is non-zero (checked every 100 ms and when a signal interrupts
 * the read), e.g. the flag a SIGTERM handler sets. NULL: none.
 */
void approval_set_cancel(const volatile sig_atomic_t *flag);

/**
 * Append the sentence the model is told when a command was not approved:
 * "Command not approved: ARGV" (approval_format_argv()), plus
 * ' — the person said: "REASON"' when `a` (may be NULL) holds a reason.
 */
void approval_add_refusal(struct buf *out, const char *const *argv, size_t argc,
			  const struct approval_answer *a);

/**
 * Decide whether the command may run: 1 approved, 0 not, as
 * approval_decide() without a working folder; the reason of an `e` answer
 * is dropped.
 */
int approval_resolve(enum approval_mode mode, const char *const *argv, size_t argc,
		     const char *reason);

/**
 * Ask on the terminal device `tty` (NULL: "/dev/tty", the controlling
 * terminal). 1 approved (y or a), 0 not; remembers nothing.
 */
int approval_ask_tty(const char *tty, const char *const *argv, size_t argc, const char *reason);

/** The same on the descriptors `in` and `out` (borrowed). 1 approved, 0 not. */
int approval_ask_fd(int in, int out, const char *const *argv, size_t argc, const char *reason);

/**
 * Ask on the terminal device `tty` (NULL: "/dev/tty") whether `what`
 * ("the MCP tool docs__search") may run, showing `shown` (its arguments)
 * and `reason`; every string is shown with control characters escaped.
 * Takes y/yes, a/always, n/no and e (no, with a reason typed for the
 * model, in `out->reason`); Ctrl-C is no. Fills `*out` and returns its
 * verdict (no terminal: APPROVE_NO, err_last() says why).
 */
int approval_ask_what_answer(struct approval_answer *out, const char *tty, const char *what,
			     const char *shown, const char *reason);
/** The same, on the descriptors `in` and `out_fd` (borrowed). */
int approval_ask_what_answer_fd(struct approval_answer *out, int in, int out_fd,
				const char *what, const char *shown, const char *reason);

/** approval_ask_what_answer() without the reason: 0, APPROVE_ONCE or APPROVE_ALWAYS. */
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

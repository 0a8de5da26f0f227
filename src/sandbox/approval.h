#ifndef FX_APPROVAL_H
#define FX_APPROVAL_H

/*
 * Approval: whether a command the policy answered POLICY_APPROVAL for, or
 * a call of an MCP tool, may run (the seed's resolve_approval()). One
 * approver, made by the front for a run or a session, decides for every
 * command, hook and MCP tool call of it, by `[permissions] mode`: safe
 * never approves, auto always does, ask asks a person.
 *
 * Asking is the front's: the approver calls the function it was made with
 * (as libgit2 leaves the credential prompt to its caller), and that draws
 * the question and reads the answer (src/cli/approve_tty.c asks on the
 * controlling terminal, never on standard input, and takes y, a, n, e).
 * A service never asks by itself: without an approver, or without a
 * function in it, mode ask answers no.
 *
 * The approver keeps the `a` (always) answers of its run or session: a
 * command of the same shape (its program and subcommand, `git push`,
 * approval_command_shape()) or the same MCP tool (its registry name) that
 * needs approval is approved without asking until approver_forget() or
 * approver_release().
 * Nothing is ever remembered on disk. Approval fails closed: no answer, an
 * unreadable one, a cancel or any error is no.
 *
 * The caller (the front):
 *   1. approver_init(&ap, ask, data, &cancel_flag);
 *   2. hands &ap down (borrowed): executor->approver, mcp_set->approver,
 *      or the run's and the session's options, which do the same;
 *   3. the services call approver_decide() for what needs a yes;
 *   4. approver_forget() when a new session starts (chat_open() does);
 *      approver_release() at the end.
 *
 * approver_decide() may be called from several threads: one question is
 * asked at a time (the others wait for it), and it blocks until the person
 * answers.
 */

#include <pthread.h>
#include <signal.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"
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
	int remembered;		/* yes without asking: it was answered `a` before */
};

#define APPROVAL_ANSWER_INIT { APPROVE_NO, NULL, 0, 0 }

/** Free `a->reason`; `a` is left as APPROVAL_ANSWER_INIT. */
void approval_answer_release(struct approval_answer *a);

/** Longest reason kept from an `e` answer, in bytes (before escaping). */
#define APPROVAL_REASON_MAX 400

/** What is asked about. */
enum approval_kind {
	APPROVAL_COMMAND,	/* a command: argv, cwd, network */
	APPROVAL_MCP_TOOL,	/* a call of an MCP tool: tool, what, shown */
	APPROVAL_NETWORK_DOMAIN, /* a connection through the egress proxy: tool (the
				    domain, what `a` remembers), what, shown (sandbox/proxy.h) */
};

/** One thing to decide about (every pointer borrowed). */
struct approval_request {
	enum approval_kind kind;
	const char *reason;	/* why it needs approval (the policy's reason); may be NULL */
	/* APPROVAL_COMMAND */
	const char *const *argv;
	size_t argc;
	const char *cwd;	/* the folder it runs in, as shown (e.g. "src", "."); NULL: not shown */
	int network;		/* approving it lets it use the network: say so */
	/* APPROVAL_MCP_TOOL */
	const char *tool;	/* its registry name ("docs__search"): what `a` remembers */
	const char *what;	/* as shown: "the MCP tool search (server docs)" */
	const char *shown;	/* its arguments as shown */
};

/**
 * The front's question: ask a person about `rq`, fill `*out` (its
 * verdict, and `reason`, `interrupted`) and return its verdict. Give up
 * as no, with `interrupted`, once `*cancel` (may be NULL) is non-zero.
 * A no the person did not give leaves err_last() saying why. Called with
 * the approver's question lock held; `data` is the approver's.
 */
typedef int (*approval_ask_fn)(void *data, struct approval_answer *out,
			       const struct approval_request *rq,
			       const volatile sig_atomic_t *cancel);

/** Who decides, for one run or session (see the overview). */
struct approver {
	approval_ask_fn ask;	/* NULL: nobody to ask (mode ask answers no) */
	void *data;		/* for ask (borrowed) */
	/*
	 * Non-zero: a question being asked gives up as no, e.g. the flag a
	 * SIGTERM handler sets (borrowed; NULL: none). The front may point it
	 * elsewhere between runs, never while a question is asked.
	 */
	const volatile sig_atomic_t *cancel;
	pthread_mutex_t ask_lock;	/* one question at a time */
	pthread_mutex_t always_lock;
	struct strvec always_commands;	/* command shapes answered `a` */
	struct strvec always_tools;	/* MCP tools answered `a` */
	struct strvec always_domains;	/* proxy domains answered `a` */
};

/** Make `ap` ask with `ask(data, ...)` (may be NULL), giving up when `*cancel` (may be NULL). */
void approver_init(struct approver *ap, approval_ask_fn ask, void *data,
		   const volatile sig_atomic_t *cancel);

/** Forget every `a` answer (a new session starts). */
void approver_forget(struct approver *ap);

/** Free what `ap` remembers; `ap` cannot decide again before approver_init(). */
void approver_release(struct approver *ap);

/**
 * Decide whether `rq` may run, by `mode`: safe -> APPROVE_NO (err_last()
 * says the mode); auto -> APPROVE_ONCE; ask -> APPROVE_ONCE at once (with
 * `remembered`) when the same command shape or MCP tool was answered `a`
 * before, else the front's function asks (one question at a time), and an
 * `a` answer is remembered. `ap` may be NULL: nobody to ask. Fills `*out`
 * (release it) and returns its verdict; a no without a "no" from the
 * person leaves err_last() saying why.
 */
int approver_decide(struct approver *ap, struct approval_answer *out, enum approval_mode mode,
		    const struct approval_request *rq);

/**
 * Append the sentence the model is told when a command was not approved:
 * "Command not approved: ARGV" (approval_format_argv()), plus
 * ' — the person said: "REASON"' when `a` (may be NULL) holds a reason.
 */
void approval_add_refusal(struct buf *out, const char *const *argv, size_t argc,
			  const struct approval_answer *a);

/**
 * Append `argv` as a person should see it: arguments separated by spaces,
 * each quoted for a POSIX shell when needed (buf_add_shell_quoted()); an
 * argument holding control characters, bytes that are not UTF-8, or
 * invisible or reordering Unicode formatting characters is written as
 * bash's $'...' with escapes, so that what is shown is exactly what runs
 * and cannot redraw the terminal.
 */
void approval_format_argv(struct buf *out, const char *const *argv, size_t argc);

/**
 * Append the shape of a command, what an `a` answer remembers and the
 * question shows: the base name of argv[0] (policy_base_name()) and, for a
 * program with subcommands (git, npm, cargo, pip, docker, make, ...), the
 * options before the subcommand and the subcommand ("git push", "git -C
 * sub status", "npm install"); for an interpreter its script or "-m
 * MODULE" ("python3 -m pytest"); for a program that runs another one named
 * in its arguments (env, sudo, timeout, xargs, busybox, ...) or code given
 * inline (python3 -c), the whole command; for any other program its name.
 * Shown as approval_format_argv() shows arguments. Nothing for an empty
 * argv or name.
 */
void approval_command_shape(struct buf *out, const char *const *argv, size_t argc);

/** Append `s` with the characters approval_format_argv() escapes shown as \xHH or \uHHHH. */
void approval_add_visible(struct buf *out, const char *s);

#endif

#ifndef FX_BASE_PROC_H
#define FX_BASE_PROC_H

/*
 * Children that run outside the sandbox: quiet helpers (`docker version`,
 * `docker kill`), doctor's probes of git and ctags, the MCP stdio servers,
 * a batch's git commands and its `forgex run` per task.
 * A command a model asked for never comes here: it goes through the
 * sandbox executor (src/sandbox/executor.h).
 *
 * After git's run-command.h. The caller:
 *   1. proc_init(), then fills in the struct: argv, and as needed env,
 *      dir, the three standard streams, captures, timeout_ms, flags;
 *   2. proc_start(): the argument vector, the environment and the PATH
 *      look-up are prepared before fork(); the child only calls
 *      async-signal-safe functions, and an exec that fails is reported
 *      back over a close-on-exec pipe, so that a program that cannot run
 *      is an error of proc_start(), never a child exiting 127;
 *   3. talks to the child through the PROC_IO_PIPE / PROC_IO_SOCKET ends
 *      it was given (in_fd, out_fd, err_fd), if any;
 *   4. proc_finish(): reads what is captured until the child closes its
 *      output, waits for it, kills it when timeout_ms passes; or
 *      proc_wait() to look (or block) without reading, and proc_kill()
 *      (a caller that polls many children, as the batch's scheduler does,
 *      calls proc_wait(p, 0) and then proc_finish() for the status);
 *   5. proc_release() always: it closes the ends still open and kills
 *      and reaps a child that is still running.
 * proc_run() is proc_start() then proc_finish().
 *
 * The environment builder (proc_env_build()) is the one the sandbox gives
 * its commands, and the MCP stdio servers get: the few safe variables of
 * forgex's environment, never its secrets.
 *
 * Nothing here prints. Errors are err_set() messages naming the program.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/strvec.h"

/** Where one of the child's standard streams goes. */
enum proc_io {
	PROC_IO_NULL = 0,	/* /dev/null (the default) */
	PROC_IO_INHERIT,	/* forgex's own stream */
	PROC_IO_PIPE,		/* a pipe; the parent's end is in_fd / out_fd / err_fd */
	PROC_IO_CAPTURE,	/* out, err: read by proc_finish() into out_buf / err_buf */
	PROC_IO_SOCKET,		/* in only: stdin and stdout are one end of a socket
				   pair (`out` is ignored); the parent's end, for both
				   ways, is in_fd. Writing to a child that died is then
				   EPIPE from send(MSG_NOSIGNAL), never SIGPIPE. */
	PROC_IO_FILE,		/* out, err: the file out_path / err_path, created or
				   truncated (0644 less the umask) by proc_start()
				   before fork(), so that a file that cannot be opened
				   is an error of start */
};

enum proc_flag {
	PROC_NEW_GROUP = 1 << 0,	/* the child leads its own process group;
					   proc_kill() signals the whole group */
	PROC_DIE_WITH_PARENT = 1 << 1,	/* SIGKILL when forgex dies (PR_SET_PDEATHSIG) */
};

/** Most bytes kept of a captured stream when capture_max is 0. */
#define PROC_CAPTURE_MAX (1024 * 1024)
/** capture_max for a stream kept whole, whatever its size (a patch). */
#define PROC_CAPTURE_ALL SIZE_MAX

struct proc {
	/* filled in by the caller */
	struct strvec argv;		/* argv[0]: a path (relative to `dir`), or a name
					   looked up on the PATH of `env` */
	const char *const *env;		/* the whole environment ("NAME=value", NULL-
					   terminated; borrowed); NULL: forgex's */
	const char *dir;		/* the child's working folder; NULL: forgex's */
	enum proc_io in, out, err;
	struct buf *out_buf, *err_buf;	/* PROC_IO_CAPTURE: where it goes (borrowed) */
	const char *out_path, *err_path;	/* PROC_IO_FILE: the file (borrowed) */
	size_t capture_max;		/* most bytes kept per captured stream (0:
					   PROC_CAPTURE_MAX; PROC_CAPTURE_ALL: no limit);
					   the rest is read and dropped */
	int timeout_ms;			/* proc_finish() kills the child this long after
					   proc_start(); <= 0: no limit */
	unsigned flags;			/* enum proc_flag bits */

	/* set by proc_start() */
	pid_t pid;			/* 0: not started */
	int in_fd, out_fd, err_fd;	/* the parent's ends (close-on-exec), or -1; the
					   caller may take one and set the field to -1 */
	char *path;			/* the program executed */

	/* set when the child has been reaped */
	int exited;
	int status;			/* the wait status */
	int timed_out;			/* proc_finish() killed it at timeout_ms */
	size_t out_dropped, err_dropped;	/* captured bytes over capture_max */

	long long deadline_ms;		/* private */
};

void proc_init(struct proc *p);

/**
 * Start the child `p` describes. Returns 0, FX_ENOTFOUND when the program
 * is not found or cannot be executed (the message says which and why),
 * FX_EOS when a pipe, a PROC_IO_FILE or fork failed. On failure nothing
 * is left running; proc_release() is still called. With PROC_NEW_GROUP
 * the group exists when this returns (the child makes it before its
 * exec, which this waits for): proc_kill() reaches it at once.
 */
int proc_start(struct proc *p);

/**
 * Reap the child if it has exited (`block`: wait until it has). Returns
 * 1 when it has exited (p->status holds the wait status), 0 when it is
 * still running (only without `block`). Never fails: a child that cannot
 * be waited for (ECHILD: reaped behind our back) counts as exited with
 * status 255.
 */
int proc_wait(struct proc *p, int block);

/** Send `sig` to the child (its whole group with PROC_NEW_GROUP), unless reaped. */
void proc_kill(struct proc *p, int sig);

/**
 * Read the captured streams until the child closes them (PROC_IO_PIPE
 * ends are the caller's, and not read), then wait for it; blocks for at
 * most timeout_ms from proc_start(), then kills it with SIGKILL and reaps
 * it. Returns its exit status (0-255), 128 + N when signal N killed it,
 * FX_ETIMEOUT when it was killed at timeout_ms. For a child proc_wait()
 * has reaped, with nothing captured left to read, it returns at once.
 */
int proc_finish(struct proc *p);

/** proc_start() then proc_finish(); the first error of either. */
int proc_run(struct proc *p);

/**
 * Close the parent's ends still open, kill a child that is still running
 * (SIGKILL, its group with PROC_NEW_GROUP: with that flag the group is
 * killed even after its leader exited, so that nothing it left behind
 * goes on) and reap it, free argv and path; `p` is proc_init() again
 * (with the caller's settings gone).
 */
void proc_release(struct proc *p);

/**
 * The environment of a child that must not see forgex's secrets: the
 * safe variables of forgex's own environment (PATH, HOME, LANG, LC_ALL,
 * LC_CTYPE, TERM, USERPROFILE, SYSTEMROOT, SYSTEMDRIVE, COMSPEC, PATHEXT,
 * TEMP, TMP), then `overrides` ("NAME=value", NULL-terminated, may be
 * NULL; entries without '=' or with an empty name are skipped) on top.
 * Appends to `env`.
 */
void proc_env_build(struct strvec *env, const char *const *overrides);

/** Set "NAME=value" in `env`, replacing an earlier NAME. */
void proc_env_set(struct strvec *env, const char *kv);

/** The value of NAME in `env`, or NULL. Borrowed. */
const char *proc_env_get(const struct strvec *env, const char *name);

#endif

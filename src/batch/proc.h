#ifndef FX_BATCH_PROC_H
#define FX_BATCH_PROC_H

/*
 * The programs a batch starts: git on its own mirrors and worktrees, and
 * forgex itself, one `forgex run` per task. Both are forgex's own doing,
 * not a model's, so they start through base/proc (src/base/proc.h) and
 * not through the sandbox's executor (which confines what a model asks
 * for). This is only the batch's choice of settings for it.
 *
 * Every child gets stdin from /dev/null, a process group of its own (so a
 * task is stopped whole: proc_kill() signals the group), PROC_DIE_WITH_PARENT
 * (a batch killed with SIGKILL takes its tasks with it) and forgex's
 * environment with GIT_TERMINAL_PROMPT=0: a batch runs unattended, and no
 * git, its own or a task's, may wait for a password on a terminal.
 */

#include "base/buf.h"
#include "base/proc.h"

/**
 * Start `argv` (argv[0] a path, or a name looked up in PATH) with stdout
 * to the file `out_path` and stderr to `err_path` (created or truncated).
 * `p` is proc_init()ed here; the caller polls it (proc_wait(p, 0), then
 * proc_finish() for the status), signals it (proc_kill()) and always
 * proc_release()s it, which kills what is left of its group.
 */
int batch_spawn(struct proc *p, const char *const *argv, const char *out_path,
		const char *err_path);

/**
 * Run `argv` to its end with stdout in `out` (kept whole; NULL: dropped)
 * and stderr kept for the error. 0 when it exited 0; FX_ERROR with the
 * command, its status and the last line of its stderr otherwise; the
 * error of proc_start() when it could not start.
 */
int batch_command(struct buf *out, const char *const *argv);

#endif

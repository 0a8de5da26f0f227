#ifndef FX_BATCH_PROC_H
#define FX_BATCH_PROC_H

/*
 * The programs a batch starts: git on its own mirrors and worktrees, and
 * forgex itself, one `forgex run` per task. Both are forgex's own doing,
 * not a model's, so they start here and not through the sandbox's
 * executor (which confines what a model asks for).
 *
 * Every child gets stdin from /dev/null, a process group of its own (so a
 * task is stopped whole: kill(-pid, sig)) and PR_SET_PDEATHSIG SIGKILL, so
 * a batch killed with SIGKILL takes its tasks with it.
 */

#include <sys/types.h>

#include "base/buf.h"

/**
 * Start `argv` (argv[0] a path, or a name looked up in PATH) in `cwd`
 * (NULL: here) with stdout to the file `out_path` and stderr to
 * `err_path` (created or truncated; NULL: /dev/null). The pid in `*out`.
 */
int batch_spawn(pid_t *out, const char *const *argv, const char *cwd, const char *out_path,
		const char *err_path);

/**
 * Run `argv` to its end with stdout in `out` (may be NULL) and stderr
 * kept for the error. 0 when it exited 0; FX_ERROR with the command, its
 * status and the last line of its stderr otherwise.
 */
int batch_command(struct buf *out, const char *const *argv, const char *cwd);

/** The exit status of a waitpid() status: the code, or 128 + the signal. */
int batch_exit_status(int wstatus);

#endif

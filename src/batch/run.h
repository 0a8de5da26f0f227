#ifndef FX_BATCH_RUN_H
#define FX_BATCH_RUN_H

/*
 * Running a task set: each task a full `forgex run` in a detached
 * worktree of its repository's mirror, at most `jobs` at once.
 *
 * A task's run is a child process (the forgex program, re-executed), in a
 * process group of its own: its own run folder, workspace lock,
 * checkpoints, sandbox and cgroups, exactly as `forgex -C WORKTREE run
 * --json REQUEST` would have them. Its events go to OUT/logs/KEY.jsonl,
 * its stderr to OUT/logs/KEY.stderr; when it ends, its run folder moves
 * to OUT/runs/KEY (with --keep it stays in the worktree, and so does the
 * worktree), its line is appended to OUT/results.jsonl, and the worktree
 * is removed.
 *
 * Resuming is running again: tasks with a line in results.jsonl are
 * skipped, worktrees a killed batch left in the work folder are removed
 * first, and every other task starts from a fresh worktree.
 *
 * Status of a task: PASS (exit 0), FAIL (1: the change did not pass and
 * was undone, or a budget ran out), TIMEOUT (still running at its wall
 * time: SIGTERM to its group, which restores the tree, then SIGKILL after
 * the grace period), ERROR (anything else: a provider that went away, a
 * refused sandbox, a repository that could not be cloned), SKIPPED (not
 * started: the batch's max_cost was spent).
 *
 * Nothing here prints: progress goes to `on_event` as JSON objects
 *   {"type": "batch_start", "tasks", "todo", "done", "jobs", "shard"?}
 *   {"type": "task_start", "id", "running", "attempt"}
 *   {"type": "task_end", "result": LINE, "running", "done", "left"}
 *   {"type": "warning", "message"}
 *   {"type": "batch_end", "summary", "interrupted"}
 */

#include <jansson.h>
#include <signal.h>

#include "base/strvec.h"
#include "batch/task.h"

struct batch_opts {
	const struct batch_tasks *tasks;
	const char *out_dir;
	const char *work_dir;		/* NULL: OUT/work */
	const char *cache;		/* the mirrors' folder; NULL: the user's cache */
	const char *forgex;		/* the program each task runs */
	const struct strvec *flags;	/* "key=value" given to every task as -c */
	const struct strvec *retry;	/* statuses whose tasks run again (e.g. "ERROR") */
	unsigned jobs;
	unsigned shard_k, shard_n;	/* shard_n 0: every task */
	int keep;			/* keep worktrees (and run folders in them) */
	long wall_seconds;		/* per task; 0: none */
	long grace_seconds;		/* after SIGTERM at the wall time */
	long max_tokens;		/* per task; 0: none */
	double max_cost;		/* per task; 0: none */
	double max_cost_total;		/* the whole batch; 0: none */
	const char *memory_limit;	/* sandbox.memory_limit in effect, shared out over jobs */
	volatile sig_atomic_t *stop;	/* set: start no more tasks */
	volatile sig_atomic_t *abort;	/* set: interrupt the running ones too */
	void (*on_event)(void *data, const json_t *ev);
	void *data;
};

struct batch_report {
	json_t *results;		/* every line of results.jsonl of this shard's tasks */
	json_t *summary;		/* as written to summary.json */
	size_t total, ran, left;
	int interrupted;
};

#define BATCH_REPORT_INIT { NULL, NULL, 0, 0, 0, 0 }

/** Run the tasks of `o`; what happened in `out` (released with batch_report_release()). */
int batch_run(struct batch_report *out, const struct batch_opts *o);

void batch_report_release(struct batch_report *r);

/**
 * `limit` ("4g", "512m", bytes) divided by `jobs`, as a value for
 * sandbox.memory_limit ("1073741824"); NULL for none or an unreadable limit.
 */
char *batch_memory_share(const char *limit, unsigned jobs);

#endif

#ifndef FX_PIPELINE_LOCK_H
#define FX_PIPELINE_LOCK_H

/*
 * One writer at a time per workspace: `forgex run`, `resume`, `replay`,
 * `undo`, `checkpoint restore` and a chat session's writing turns each
 * hold `<workspace>/.forgex/runs/.lock` while they change the tree.
 *
 * The lock is flock(2) on that file (opened without following links, see
 * rundir_forgex_open()), so the kernel drops it when its holder dies,
 * however it dies: a lock left by a killed forgex is simply free. The file
 * also says who holds it: one line "pid START_TICKS SINCE WHAT", START_TICKS
 * being field 22 of /proc/PID/stat (so a reused pid is told apart) and
 * SINCE the Unix time it was taken. The line is informative: the flock
 * decides.
 *
 * The caller:
 *   1. ws_lock_acquire() (waits, or fails at once with `no_wait`);
 *   2. ws_lock_describe() to rename what it does (e.g. once the run id is known);
 *   3. ws_lock_release().
 * Nothing here prints; `on_wait` is told once when it has to wait.
 */

#include <signal.h>

#include "base/buf.h"

struct ws_lock {
	int fd;		/* -1: not held */
};

#define WS_LOCK_INIT { -1 }

/** Called once before waiting, with who holds the lock ("pid 123 (run X) since ..."). */
typedef void (*ws_lock_wait_fn)(void *data, const char *holder);

/**
 * Take the lock of `workspace` for `what` ("run", "undo of run X", ...).
 * When another process holds it: with `no_wait`, FX_EEXISTS naming the
 * holder; else calls `on_wait` (may be NULL) and waits until it is free
 * or `cancel` (may be NULL) is set (FX_EINTR). A link or FIFO at
 * .forgex/runs/.lock is FX_EDENIED naming it.
 */
int ws_lock_acquire(struct ws_lock *l, const char *workspace, const char *what, int no_wait,
		    ws_lock_wait_fn on_wait, void *data, const volatile sig_atomic_t *cancel);

/** Say what the holder does now (the holder line's WHAT). */
void ws_lock_describe(struct ws_lock *l, const char *what);

/** Drop the lock (a lock not held is fine). */
void ws_lock_release(struct ws_lock *l);

/**
 * Append who holds the lock of `workspace` ("pid 123 (run X), since
 * 2026-12-01 08:00:00 UTC") to `out`: 1 when held, 0 when free.
 */
int ws_lock_holder(struct buf *out, const char *workspace);

/** Field 22 of /proc/PID/stat (start time in clock ticks), or 0 when unknown. */
unsigned long long ws_lock_start_ticks(long pid);

#endif

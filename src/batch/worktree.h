#ifndef FX_BATCH_WORKTREE_H
#define FX_BATCH_WORKTREE_H

/*
 * Where a task's tree comes from: one mirror clone per repository, shared
 * by every task and every batch of the user (under $XDG_CACHE_HOME/forgex/
 * mirrors, else ~/.cache/forgex/mirrors), and a detached `git worktree`
 * of it per task, at the task's commit.
 *
 * git runs as the `git` program. Every change to a mirror (clone, fetch,
 * worktree add, remove, prune) holds an flock() on the mirror's folder,
 * so batches and shards on one machine may share it; the lock goes with
 * the process that held it, so a killed batch leaves none behind.
 */

#include "base/buf.h"
#include "base/strvec.h"

/**
 * The mirror of `url` (a URL or an absolute path), cloned when missing and
 * fetched when it lacks `commit` (NULL: not looked at); its path in `*out`
 * (caller frees). `cache` is the mirrors' folder (NULL: the user's cache).
 * FX_ENOTFOUND when the commit is not there even after the fetch.
 */
int batch_mirror(char **out, const char *cache, const char *url, const char *commit);

/** A detached worktree of `mirror` at `commit` in `path` (a leftover there is removed first). */
int batch_worktree_add(const char *mirror, const char *path, const char *commit);

/** Remove the worktree at `path`: its files and the mirror's record of it. */
int batch_worktree_remove(const char *mirror, const char *path);

/**
 * Remove every worktree left in the folder `dir` by a batch that was
 * killed (each names its mirror in its .git file), but those named in
 * `keep` (finished tasks' trees kept with --keep); the count in `*removed`.
 * Anything in `dir` that is not a worktree is left alone.
 */
int batch_worktree_sweep(const char *dir, const struct strvec *keep, size_t *removed);

/**
 * The change of the tree at `path` against `commit` as `git diff` shows
 * it, new files included and forgex's own .forgex/ left out, into `out`.
 */
int batch_worktree_diff(struct buf *out, const char *path, const char *commit);

#endif

#ifndef FX_VCS_INTERNAL_H
#define FX_VCS_INTERNAL_H

/*
 * What the files of src/vcs/ share; not for use outside it. The modules
 * and their contracts: shadow.h, statcache.h, snapshot.h, perms.h,
 * restore.h.
 */

#include <git2.h>

#include "base/err.h"
#include "vcs/checkpoint.h"

/**
 * Record the libgit2 error `gerr` (with git_error_last()'s message) after
 * "`fmt`: ". Returns FX_ENOTFOUND for GIT_ENOTFOUND, else FX_ERROR.
 */
int vcs_git_error(int gerr, const char *fmt, ...) FX_PRINTF(2, 3);

/** The shadow repository (work tree = the workspace); borrowed. */
git_repository *checkpoint__repo(struct checkpoints *cps);

/** Take and drop the exclusive lock on the shadow (nested calls count). */
int checkpoint__lock(struct checkpoints *cps);
void checkpoint__unlock(struct checkpoints *cps);

/**
 * Record the working tree as a tree object in the shadow (no commit), with
 * the rules of checkpoint_create(), and save the index cache. The caller
 * holds the lock. `files` may be NULL.
 */
int checkpoint__capture_tree(git_oid *out, size_t *files, struct checkpoints *cps);

/**
 * The commit of checkpoint `id` (a prefix), or of the newest checkpoint
 * when `id` is NULL (FX_ENOTFOUND when there is none). `*out` is the
 * caller's (git_commit_free).
 */
int checkpoint__lookup(git_commit **out, struct checkpoints *cps, const char *id);

/**
 * The tree of checkpoint commit `c` as forgex compares it: without a
 * top-level `.forgex` (older versions recorded tracked files there).
 */
int checkpoint__commit_tree(git_tree **out, struct checkpoints *cps, const git_commit *c);

struct snapshot;

/**
 * Write the commit of a checkpoint of `tree_id` (captured as `snap` from
 * index `idx`: its permission bits and empty folders go in headers),
 * inside a batch: it is made durable by shadow_batch_end();
 * checkpoint__advance_chain() then makes it the newest.
 */
int checkpoint__write_commit(git_oid *out, struct checkpoints *cps, const git_oid *tree_id,
			     const char *message, const struct snapshot *snap, git_index *idx);

/**
 * Make commit `oid` (durable) the newest checkpoint: the ref moves only if
 * it still names the commit's parent. Fills `out` (may be NULL).
 */
int checkpoint__advance_chain(struct checkpoint_info *out, struct checkpoints *cps,
			      const git_oid *oid, size_t files);

/** Load libgit2 once per process (with forgex's options). */
int vcs_init(void);

#endif

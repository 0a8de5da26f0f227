#ifndef FX_VCS_SHADOW_H
#define FX_VCS_SHADOW_H

/*
 * The shadow repository and its lock; not for use outside src/vcs/.
 *
 * `<workspace>/.forgex/checkpoints/` is a bare git repository that only
 * forgex writes. checkpoint_open() (shadow.c) creates it on first use,
 * checks that its folder chain is made of real folders, writes its config,
 * opens it with libgit2, sets its work tree (in memory) to the workspace
 * and borrows the user's objects read-only. After open:
 *
 *  - every operation that changes the shadow or the tree runs between
 *    checkpoint__lock() and checkpoint__unlock() (flock(2) on forgex.lock;
 *    nested calls count; a lock of a dead process is released by the
 *    kernel);
 *  - objects are written between shadow_batch_begin() and
 *    shadow_batch_end(): one syncfs(2) makes the batch durable, and a
 *    marker file lets the next open find and drop what an interrupted
 *    batch left half-written.
 *
 * The user's `.git` is only ever read.
 */

#include <git2.h>

#include "vcs/checkpoint.h"

#define CHECKPOINT_REF "refs/forgex/checkpoints"
#define SHADOW_DIR ".forgex/checkpoints"
#define BATCH_MARKER "forgex-writing"
#define IGNORE_STAMP "forgex-ignore-stamp"

struct checkpoints {
	char *workspace;	/* resolved, absolute, no trailing slash */
	char *shadow;		/* <workspace>/.forgex/checkpoints */
	git_repository *repo;	/* the shadow; work tree = workspace (in memory) */
	git_repository *user;	/* the user's repository, or NULL */
	char *user_prefix;	/* the workspace inside the user's work tree: "" or "a/b/" */
	char *excludes_file;	/* the core.excludesFile in effect, or NULL */
	int lock_fd;
	int lock_depth;
};

/** Start a batch of object writes (no fsync each); the caller holds the lock. */
int shadow_batch_begin(struct checkpoints *cps);

/** End it: one syncfs(2), then the marker goes. Fails when the flush does. */
int shadow_batch_end(struct checkpoints *cps);

#endif

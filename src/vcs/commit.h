#ifndef FX_VCS_COMMIT_H
#define FX_VCS_COMMIT_H

/*
 * Commit what changed since a checkpoint on the user's current branch
 * (forgex run with [pipeline] commit = true).
 *
 * The set of paths is exactly what differs between the checkpoint and the
 * working tree as the checkpoints see it (vcs_changed_paths()): added,
 * modified, deleted, and both sides of a rename; never ignored files, never
 * .git or .forgex. Nothing else is touched: the new commit's tree is HEAD's
 * tree with those paths updated (whatever else the user had staged stays
 * staged and is not committed), only HEAD's branch moves, and the index
 * entries of those paths are set to what was committed. No hooks run.
 *
 * The caller:
 *   1. vcs_changed_paths() with the open checkpoints and the pre-run id;
 *   2. vcs_commit_paths() with the workspace, the paths and a message.
 * Nothing here prints.
 */

#include "base/strvec.h"
#include "vcs/checkpoint.h"

/**
 * Append to `out` every path (relative to the workspace, sorted, each
 * once) that differs between checkpoint `id` (a prefix; NULL: the newest)
 * and the working tree now. FX_ENOTFOUND when there is no such checkpoint.
 */
int vcs_changed_paths(struct strvec *out, struct checkpoints *cps, const char *id);

/**
 * Commit `paths` (relative to `workspace`) as they are in the working tree
 * on the current branch of the repository holding `workspace`, with
 * `message` and the identity git would use ($GIT_AUTHOR_NAME and friends,
 * else user.name and user.email). A path missing from the
 * tree is removed from the commit. Returns 1 when it committed, with the
 * new commit's id in hex in `out` (41 bytes; may be NULL), or 0 when the
 * result would equal HEAD (no empty commit is made). FX_ENOTFOUND when `workspace` is in no git
 * repository, FX_EINVAL when `paths` is empty or a path leaves the
 * workspace, FX_ERROR when git refuses (no identity configured, a locked
 * index or branch).
 */
int vcs_commit_paths(char *out, const char *workspace, const struct strvec *paths,
		     const char *message);

#endif

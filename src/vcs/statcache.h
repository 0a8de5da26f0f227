#ifndef FX_VCS_STATCACHE_H
#define FX_VCS_STATCACHE_H

/*
 * The stat cache; not for use outside src/vcs/.
 *
 * The shadow's index (`.forgex/checkpoints/index`) is a cache of the
 * working tree: one entry per recorded file or link with its object id
 * and the stat data (mtime, ctime, size, inode, mode) it had when that id
 * was computed. A capture reads a file again only when its stat data
 * differs from the entry (or is racy: not older than the index file, git's
 * rule). The cache is never the only copy of anything: a damaged index is
 * dropped and rebuilt from the tree.
 *
 * The first capture of a repository seeds the cache from the user's index
 * (stat data git itself trusts), so it reads only what git would.
 */

#include <git2.h>

#include "base/buf.h"
#include "vcs/shadow.h"

/** The shadow's index; a damaged one is dropped and rebuilt. */
int statcache_open(git_index **out, struct checkpoints *cps);

/**
 * Copy the user's entries below `prefix` that `idx` lacks, with their stat
 * data when git would trust it (not racy, not assume-unchanged,
 * skip-worktree or intent-to-add).
 */
int statcache_seed(git_index *idx, git_index *uidx, const char *prefix);

/** The user's index entry for workspace path `rel`, if the user tracks it. */
const git_index_entry *statcache_user_entry(git_index *uidx, const char *prefix, const char *rel,
					    struct buf *scratch);

/**
 * Everything that decides whether a recorded path is ignored, as bytes to
 * compare with the stamp saved by the last capture.
 */
void statcache_ignore_fingerprint(struct buf *fp, struct checkpoints *cps, git_index *idx,
				  git_index *uidx);

/** Save `stamp` (nothing when empty), once the index it describes is durable. */
int statcache_save_stamp(struct checkpoints *cps, const struct buf *stamp);

#endif

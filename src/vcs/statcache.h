#ifndef FX_VCS_STATCACHE_H
#define FX_VCS_STATCACHE_H

/*
 * The stat cache; not for use outside src/vcs/.
 *
 * The shadow's index (`.forgex/checkpoints/index`) is a cache of the
 * working tree: one entry per recorded file or link with its object id
 * and the stat data (mtime, ctime, size, inode, mode) it had when that id
 * was computed. A capture reads a file again only when its stat data
 * differs from the entry; an entry whose file changed while it was read
 * carries no stat data (statcache_fill()). The cache is never the only
 * copy of anything: a damaged index is dropped and rebuilt from the tree.
 *
 * The first capture of a repository seeds the cache from the user's index
 * (stat data git itself trusts), so it reads only what git would.
 */

#include <sys/stat.h>
#include <time.h>

#include <git2.h>

#include "base/buf.h"
#include "vcs/shadow.h"

/** The shadow's index; a damaged one is dropped and rebuilt. */
int statcache_open(git_index **out, struct checkpoints *cps);

/**
 * Copy the user's entries below `prefix` that `idx` lacks, with their stat
 * data when git would trust it (not racy, not assume-unchanged,
 * skip-worktree or intent-to-add). Returns how many were copied.
 */
int statcache_seed(git_index *idx, git_index *uidx, const char *prefix);

/** The user's index entry for workspace path `rel`, if the user tracks it. */
const git_index_entry *statcache_user_entry(git_index *uidx, const char *prefix, const char *rel,
					    struct buf *scratch);

/** Whether workspace path `rel` is forgex's own (`.forgex` at the top): never recorded. */
int statcache_never(const char *rel);

/**
 * Whether entry `e` still describes the file whose lstat() is `st` (mtime,
 * ctime, inode, owner, size; an entry without stat data never does).
 */
int statcache_fresh(const git_index_entry *e, const struct stat *st);

/**
 * Put `st` into `e` as the stat data of content just read. When the file
 * changed at or after `start` (the coarse clock when the capture began)
 * the data is left out instead: a change after the read could carry the
 * same stamp (git's "racy clean" problem), so the next capture reads it
 * again. Hence the cache is refreshed whenever content proves unchanged
 * (after `touch`, `cp -a`, a branch switch) and is never trusted for a
 * file that changed during a capture.
 */
void statcache_fill(git_index_entry *e, const struct stat *st, const struct timespec *start);

#endif

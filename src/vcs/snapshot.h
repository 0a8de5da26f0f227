#ifndef FX_VCS_SNAPSHOT_H
#define FX_VCS_SNAPSHOT_H

/*
 * Taking a snapshot; not for use outside src/vcs/.
 *
 * snapshot_capture() brings the stat cache (statcache.h) up to the working
 * tree with the rules of checkpoint_create() — the files the user tracks,
 * every other file or link not ignored, never `.git` or `.forgex`, nested
 * repositories left alone — writes the blobs of what changed and the tree
 * object, and saves the index. The caller holds the lock and brackets the
 * call with shadow_batch_begin() / shadow_batch_end(), then saves `stamp`
 * with statcache_save_stamp(). With `perms`, the permission bits of every
 * recorded file and folder are read into it (a full map).
 */

#include <git2.h>

#include "base/buf.h"
#include "vcs/perms.h"
#include "vcs/shadow.h"

int snapshot_capture(git_oid *out, size_t *files, struct perm_map *perms, struct buf *stamp,
		     struct checkpoints *cps, git_index *idx);

struct snapshot_add_ctx {
	struct checkpoints *cps;
	git_index *idx;
};

/** git_index_add_all() callback (payload: struct snapshot_add_ctx): nested repositories are skipped. */
int snapshot_skip_dirs_cb(const char *path, const char *matched, void *payload);

#endif

#ifndef FX_VCS_PATHS_H
#define FX_VCS_PATHS_H

/*
 * Path by path: what a run needs to know and undo its own changes without
 * touching anyone else's (pipeline/journal.h).
 *
 * Built on the checkpoints' shadow repository (checkpoint.h): a snapshot
 * is a tree object of the working tree as a checkpoint would record it
 * (no commit, no ref), so its blobs are kept in the shadow; the functions
 * compare snapshots and checkpoints, hash single paths as git does, copy
 * a blob out, and put single paths back from a snapshot or checkpoint.
 *
 * Ids are 40 hex digits: a snapshot's tree, or a checkpoint (commit) id;
 * either is accepted wherever a "tree" is asked for. A blob id of ""
 * means "absent"; "dir" is a folder.
 *
 * Writes into the workspace never follow a symbolic link: every folder on
 * the way is opened O_NOFOLLOW from the workspace, a file is written to a
 * temporary name and renamed into place.
 * Nothing here prints.
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "vcs/checkpoint.h"

#define VCS_OID_HEX 41

/** Record the working tree as a tree object in the shadow; its id into `out`. */
int vcs_snapshot(char out[VCS_OID_HEX], struct checkpoints *cps);

/**
 * Append to `out` the paths (sorted, each once) whose entry differs
 * between the trees `a` and `b` (snapshot or checkpoint ids).
 */
int vcs_tree_changes(struct strvec *out, struct checkpoints *cps, const char *a, const char *b);

/**
 * The blob of `path` in tree `tree`: 1 with its id in `oid` and its git
 * mode in `*mode` (may be NULL), 0 when the tree does not hold it ("" in
 * `oid`).
 */
int vcs_tree_entry(char oid[VCS_OID_HEX], unsigned *mode, struct checkpoints *cps,
		   const char *tree, const char *path);

/**
 * What `rel` (relative to the workspace) is now, as git would hash it:
 * the blob id of a regular file's content or of a link's target, "" when
 * nothing is there, "dir" for a folder. With `store` the blob is also
 * written into the shadow (so vcs_blob_save() can copy it out later).
 * Never follows a link. `*mode` (may be NULL) receives the st_mode. A
 * file is read 64 KiB at a time, never held whole: FX_ELIMIT over 1 GiB,
 * and with `store` over [checkpoints] max_file_bytes (no blob larger
 * than that is ever stored, so what reads one whole stays bounded).
 */
int vcs_hash_path(char oid[VCS_OID_HEX], unsigned *mode, struct checkpoints *cps,
		  const char *rel, int store);

/** Append the content of blob `oid` of the shadow to `out`. */
int vcs_blob_read(struct buf *out, struct checkpoints *cps, const char *oid);

/**
 * Make each of `paths` what it is in `tree`: written back (file or link)
 * when the tree holds it, removed (with the folders that leaves empty)
 * when it does not. Every blob needed is read before the first write.
 * A path that cannot be put back is appended to `failed` as "PATH: why"
 * and the others are still done; returns the number failed, or a
 * negative code when nothing could be done.
 */
int vcs_restore_paths(struct checkpoints *cps, const char *tree, const struct strvec *paths,
		      struct strvec *failed);

/**
 * Make `rel` hold `data` as a file (`gitmode` 0100644 or 0100755; with
 * `perm` non-zero, exactly those permission bits) or a link (0120000,
 * `data` is the target), or remove it with the folders that leaves empty
 * (`gitmode` 0). A folder that is not empty is never removed or replaced.
 */
int vcs_put_path(struct checkpoints *cps, const char *rel, const void *data, size_t len,
		 unsigned gitmode, unsigned perm);

/**
 * Remove the empty folders (not ignored) that the tree has now and
 * checkpoint `since` did not have — neither as a folder of its files nor
 * as one of its empty folders — and each parent that leaves empty and
 * `since` did not have either: what a command left behind with mkdir.
 * Appends "DIR/" to `removed` (may be NULL) for each. A folder that holds
 * anything is never touched; links are never followed.
 */
int vcs_remove_new_empty_dirs(struct checkpoints *cps, const char *since, struct strvec *removed);

/** The blob id git gives `data`. */
int vcs_hash_buffer(char oid[VCS_OID_HEX], const void *data, size_t len);

/**
 * The blob id git gives the content of the regular file open as `fd`
 * (read from its start in 64 KiB pieces: memory does not grow with it).
 */
int vcs_hash_fd(char oid[VCS_OID_HEX], int fd);

/**
 * The unified diff (or, with VCS_DIFF_STAT of vcs/diff.h, the diffstat)
 * from tree `a` to tree `b`, restricted to `paths` when not NULL.
 * `*changed` (may be NULL) gets the number of paths that differ.
 */
int vcs_diff_trees(struct buf *out, size_t *changed, struct checkpoints *cps, const char *a,
		   const char *b, const struct strvec *paths, unsigned flags);

/**
 * The commit HEAD of the repository holding `workspace` points at, in
 * hex. FX_ENOTFOUND when there is no repository or no commit yet.
 */
int vcs_head(char out[VCS_OID_HEX], const char *workspace);

#endif

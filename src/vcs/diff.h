#ifndef FX_VCS_DIFF_H
#define FX_VCS_DIFF_H

/*
 * What changed since a checkpoint: a unified diff (or a diffstat) from a
 * checkpoint to the working tree as it is now.
 *
 * The working tree is read with the rules of checkpoint_create() (files
 * the user tracks plus untracked files not ignored; .git and .forgex never),
 * so the diff shows exactly what a restore of that checkpoint would undo:
 * new files as added, deleted ones as removed, changed modes as "old
 * mode / new mode", links by their targets, and binary files as "Binary
 * files ... differ". A file larger than [checkpoints] max_file_bytes is
 * in no tree the capture makes: it is not compared at all (neither shown
 * deleted nor with content an older capture held) but named, with its
 * size and the bound, on a line "not compared: 'PATH' is N bytes, larger
 * than [checkpoints] max_file_bytes (M)" before the patch (where
 * `git apply` passes over text). Reading the tree refreshes the checkpoint index and
 * may store the contents of changed files in the shadow repository; it
 * never touches the tree or the user's repository.
 *
 * The caller opens the checkpoints (checkpoint_open()) and appends the
 * text to a buffer it prints; nothing here prints.
 */

#include "base/buf.h"
#include "vcs/checkpoint.h"

enum vcs_diff_flags {
	VCS_DIFF_COLOR = 1 << 0,	/* ANSI colours, as git diff --color */
	VCS_DIFF_STAT = 1 << 1,		/* a diffstat instead of the patch */
	VCS_DIFF_TERMSAFE = 1 << 2,	/* escape control characters of names and content (a terminal) */
};

/**
 * Append to `out` the unified diff from checkpoint `id` (a prefix as for
 * checkpoint_resolve(); NULL: the newest checkpoint) to the working tree,
 * coloured when `color` is non-zero. Nothing is appended when nothing
 * changed. FX_ENOTFOUND when there is no such checkpoint (or none at all).
 */
int vcs_diff(struct buf *out, struct checkpoints *cps, const char *id, int color);

/**
 * As vcs_diff() with `flags` from enum vcs_diff_flags; with VCS_DIFF_STAT
 * appends "path | N +++--" lines and a summary line instead of the patch.
 * `*changed` (may be NULL) is set to the number of paths that differ.
 */
int vcs_diff_ext(struct buf *out, size_t *changed, struct checkpoints *cps, const char *id,
		 unsigned flags);

/**
 * Append the "not compared" line of each file the last capture without a
 * checkpoint found too large (checkpoint_too_large()), names escaped.
 */
void vcs_diff_note_too_large(struct buf *out, const struct checkpoints *cps);

/**
 * Append the unified diff of two versions of `path` (NULL: absent, a new
 * or removed file), as `git diff` shows a file's change, with `flags` as
 * above (VCS_DIFF_STAT aside). Nothing is appended when they are the same.
 */
int vcs_diff_buffers(struct buf *out, const char *path, const char *old, size_t old_len,
		     const char *now, size_t now_len, unsigned flags);

#endif

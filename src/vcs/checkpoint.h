#ifndef FX_CHECKPOINT_H
#define FX_CHECKPOINT_H

/*
 * Checkpoints: snapshots of a whole working tree that can be put back
 * byte for byte, kept in a shadow repository so the user's own git state
 * (HEAD, index, refs, stash, config, reflogs) is never read for writing.
 *
 * A checkpoint records every file git would show in `git status` as
 * tracked or untracked: the files tracked by the user's repository (when
 * the workspace is one) and every other file not ignored by .gitignore
 * files, .git/info/exclude or core.excludesFile (git's rules; a link is
 * never a folder for them). It records content, permission bits, symbolic
 * links (as links) and empty folders. `.git` and `.forgex` are never
 * recorded or restored, even when the user's repository tracks files
 * there; nested repositories and submodules are left alone. No depth or
 * path length the file system allows makes a checkpoint fail.
 *
 * Layout: `<workspace>/.forgex/checkpoints/` is a bare git repository
 * whose work tree is set, in memory, to the workspace. When the workspace
 * is a git repository, the shadow borrows the user's objects (read-only,
 * in memory), so a checkpoint of a large repository writes only what git
 * does not already hold. Checkpoints are a chain of commits
 * on refs/forgex/checkpoints, newest first. The shadow's index caches stat
 * data, so unchanged files are not hashed again.
 *
 * The caller:
 *   1. checkpoint_open() for a workspace (creates the shadow on first use);
 *   2. checkpoint_create(), checkpoint_list(), checkpoint_resolve(),
 *      checkpoint_restore() and vcs_diff() (diff.h), in any order;
 *   3. checkpoint_close().
 *
 * Operations that change the shadow or the tree take an exclusive lock on
 * the shadow, so two forgex processes on one workspace do not interleave;
 * lock files a killed process left are cleared when it is taken. forgex's
 * files under .forgex/checkpoints are never reached through a link: a
 * planted one is an error naming it (FX_EDENIED). A damaged object (cut
 * short by a crash) is detected, treated as missing and named; no
 * operation loops on one.
 * Nothing here prints; failures return FX_E* codes with err_set() messages.
 */

#include <stddef.h>
#include <stdint.h>

#include "base/strvec.h"

/** An open shadow repository for one workspace (opaque). */
struct checkpoints;

/** One checkpoint. */
struct checkpoint_info {
	char id[41];		/* full commit id, hex */
	char short_id[41];	/* an unambiguous prefix among this workspace's checkpoints */
	char *message;		/* owned; without a trailing newline */
	int64_t time;		/* seconds since the epoch */
	size_t files;		/* files and links recorded (0 when not computed) */
};

/** Free the contents of `info` (the struct itself is the caller's). */
void checkpoint_info_release(struct checkpoint_info *info);

/** Checkpoints, newest first. */
struct checkpoint_list {
	struct checkpoint_info *items;
	size_t nr, alloc;
};

#define CHECKPOINT_LIST_INIT { NULL, 0, 0 }

void checkpoint_list_release(struct checkpoint_list *list);

/** What checkpoint_restore() did. */
struct checkpoint_restore_result {
	struct checkpoint_info backup;	/* the automatic checkpoint taken before */
	size_t written;		/* files, links and empty folders created or rewritten */
	size_t removed;		/* files, links and empty folders removed */
	size_t chmodded;	/* files whose executable bit alone changed */
	struct strvec too_large;	/* "SIZE PATH": files the checkpoint could not hold, left as they are */
};

void checkpoint_restore_result_release(struct checkpoint_restore_result *res);

/**
 * Open the checkpoints of `workspace` (an existing folder), creating the
 * shadow repository under `<workspace>/.forgex/checkpoints/` on first use.
 * Also refreshes what the shadow mirrors from the user's repository (the
 * alternates path, info/exclude, core.excludesFile). `*out` is the
 * caller's; free it with checkpoint_close().
 */
int checkpoint_open(struct checkpoints **out, const char *workspace);

/** Close and free (NULL is fine). */
void checkpoint_close(struct checkpoints *cps);

/** The default of [checkpoints] max_file_bytes. */
#define CHECKPOINT_MAX_FILE_BYTES ((uint64_t)256 << 20)

/**
 * Files larger than `max` bytes are not stored: a checkpoint lists them
 * (path and size) as too large, and a restore of it leaves them as they
 * are and says so (checkpoint_restore_result.too_large). Every file up to
 * `max` is hashed and stored as it is read, in bounded memory.
 */
void checkpoint_set_max_file_bytes(struct checkpoints *cps, uint64_t max);

/** That bound (CHECKPOINT_MAX_FILE_BYTES unless set). */
uint64_t checkpoint_max_file_bytes(const struct checkpoints *cps);

/**
 * The files over that bound ("SIZE PATH") the last look at the tree that
 * made no checkpoint found (vcs_snapshot(), vcs_diff_ext()): they are in
 * no tree it made, and a diff shows them only as such, never with the
 * content an older checkpoint held.
 */
const struct strvec *checkpoint_too_large(const struct checkpoints *cps);

/**
 * Tell `before_create` (NULL: no one) the name of each temporary file
 * vcs_put_path() and vcs_restore_paths() create in the workspace, before
 * it exists, with the target's path relative to the workspace
 * (base/fsutil.h: a journal names it, so a kill's leftover is found).
 */
void checkpoint_set_tmp_hook(struct checkpoints *cps,
			     int (*before_create)(void *data, const char *rel, const char *tmp),
			     void *data);

/**
 * Remove the temporary files a killed checkpoint_restore() left in the
 * workspace: each restore names its own in .forgex/checkpoints/restore-tmps
 * before it makes them (it has no journal). Only files (or links) named
 * there, reached beneath the workspace following no link, go. Takes the
 * checkpoints' lock (so no restore is under way); checkpoint_restore()
 * runs it first, and a run's start (journal_sweep()).
 */
void checkpoint_sweep_tmps(struct checkpoints *cps);

/** The workspace (absolute, resolved); borrowed. */
const char *checkpoint_workspace(const struct checkpoints *cps);

/**
 * How many files and links the last capture of `cps` (create, restore,
 * diff) read because the stat cache could not vouch for them (for tests
 * and benchmarks).
 */
size_t checkpoint_files_read(const struct checkpoints *cps);

/**
 * Record the working tree as a new checkpoint with `message` (NULL or ""
 * gives "checkpoint"). `out` (may be NULL) receives its description.
 * Fails without recording anything when a file cannot be read.
 */
int checkpoint_create(struct checkpoint_info *out, struct checkpoints *cps, const char *message);

/** All checkpoints, newest first (an empty list when there are none). */
int checkpoint_list(struct checkpoint_list *out, struct checkpoints *cps);

/**
 * The full id of the checkpoint whose id starts with `id` (at least four
 * hex digits, any case). FX_ENOTFOUND when none does, FX_EINVAL when `id`
 * is not hex or matches more than one. `*out` is the caller's.
 */
int checkpoint_resolve(char **out, struct checkpoints *cps, const char *id);

/**
 * Make the working tree what it was when checkpoint `id` (any prefix
 * checkpoint_resolve() accepts) was taken.
 *
 * 1. Records the current tree and plans every change.
 * 2. Reads every object the changes need, whole, and checks it; refuses
 *    with FX_ENOTFOUND, changing nothing and recording nothing, when one is
 *    missing or damaged. Refuses with FX_EDENIED, likewise, when the
 *    restore would have to destroy an ignored file (one no checkpoint
 *    holds), e.g. an ignored file inside a folder that must become a file
 *    again.
 * 3. Commits the current tree as checkpoint "before restore of ID", so the
 *    restore can itself be undone.
 * 4. Removes the files and links recorded now but not in the checkpoint
 *    (ignored files stay) and the folders that leaves empty, then writes
 *    back every file and link that differs, each through a temporary file
 *    renamed into place, never following a symbolic link (a link where a
 *    folder belongs is replaced by the folder); flushes to disk.
 * 5. Reads the tree back and fails with FX_ERROR if it does not match.
 *
 * When step 4 or 5 fails the message names the backup checkpoint.
 * `out` (may be NULL) receives the backup checkpoint and counts.
 */
int checkpoint_restore(struct checkpoint_restore_result *out, struct checkpoints *cps,
		       const char *id);

#endif

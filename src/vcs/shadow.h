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
 * forgex writes its own files in the shadow (HEAD, config, the ref, the
 * objects, info/attributes, markers) itself, through descriptors, never
 * following a link; libgit2 writes only the index. The user's `.git` is
 * only ever read.
 */

#include <stdint.h>

#include <git2.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "vcs/checkpoint.h"

#define CHECKPOINT_REF "refs/forgex/checkpoints"
#define SHADOW_DIR ".forgex/checkpoints"
#define BATCH_MARKER "forgex-writing"
#define IGNORE_STAMP "forgex-ignore-stamp"	/* left by older versions; removed */

struct checkpoints {
	char *workspace;	/* resolved, absolute, no trailing slash */
	char *shadow;		/* <workspace>/.forgex/checkpoints */
	git_repository *repo;	/* the shadow; work tree = workspace (in memory) */
	git_repository *user;	/* the user's repository, or NULL */
	char *user_prefix;	/* the workspace inside the user's work tree: "" or "a/b/" */
	char *excludes_file;	/* the core.excludesFile in effect, or NULL */
	int root_fd;		/* the workspace */
	int shadow_fd;		/* .forgex/checkpoints, reached without following links */
	git_odb_backend *loose;	/* the shadow's own objects (odb.h); owned by the odb */
	int lock_fd;
	int lock_depth;
	size_t files_read;	/* files and links whose content the last capture read */
	size_t dirs_listed;	/* folders whose entries the last capture listed (0: the short way) */
	git_oid chain_base;	/* the damaged newest checkpoint a new chain replaces */
	int chain_base_set;
	int index_written;	/* the stat cache was saved in this batch (it needs a flush) */
	uint64_t max_file_bytes;	/* a bigger file is not stored ([checkpoints] max_file_bytes) */
	struct strvec too_large;	/* "SIZE PATH": over it in the last capture without a snapshot */
	struct fsutil_tmp_hook tmp_hook;	/* told of vcs_put_path()'s temporary files */
};

/**
 * Check that the shadow is still the folder opened at checkpoint_open()
 * and that no file or folder libgit2 opens by name in it is a link (or
 * anything but a file / folder). FX_EDENIED naming the first that is.
 * checkpoint__lock() runs it (after clearing the `.lock` files a killed
 * process left), so every libgit2 use that writes follows a check.
 *
 * Residual race: libgit2 opens these files by path; a process that swaps
 * one for a link between the check and libgit2's open wins. Commands run
 * by forgex cannot write `.forgex` at all when the sandbox has a mount
 * namespace; forgex's own writes (objects, ref, config, markers) never
 * follow links regardless.
 */
int shadow_check(struct checkpoints *cps);

/** The newest checkpoint (refs/forgex/checkpoints); FX_ENOTFOUND (no message) when none. */
int shadow_read_ref(struct checkpoints *cps, git_oid *out);

/**
 * Point refs/forgex/checkpoints at `oid` (durably: temporary file, fsync,
 * rename) if it still names `expect` (NULL: it does not exist yet).
 */
int shadow_write_ref(struct checkpoints *cps, const git_oid *oid, const git_oid *expect);

/**
 * Open `rel` (slashes allowed) beneath `dirfd` with `flags`, never
 * following a link on the way or at the end (base/beneath.h). A link is
 * FX_EDENIED, a missing path FX_ENOTFOUND, each message naming
 * `shown`/`rel` (and which part is the link).
 */
int vcs_openat_beneath(int *out, int dirfd, const char *rel, int flags, const char *shown);

/** Read the regular file `rel` beneath `dirfd` (as above; FIFOs refused) into `out`. */
int vcs_read_beneath(struct buf *out, int dirfd, const char *rel, size_t max, const char *shown);

/** Start a batch of object writes (no fsync each); the caller holds the lock. */
int shadow_batch_begin(struct checkpoints *cps);

/** End it: one syncfs(2), then the marker goes. Fails when the flush does. */
int shadow_batch_end(struct checkpoints *cps);

#endif

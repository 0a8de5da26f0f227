#ifndef FX_WS_WSPATH_H
#define FX_WS_WSPATH_H

/*
 * Paths a model names, confined to the workspace.
 *
 * Every file tool reaches the disk through here, relative to a directory
 * descriptor of the workspace, so no path a model sends and no symbolic
 * link in the tree can make a tool touch anything outside it, even when a
 * component is swapped for a symlink while the call runs.
 *
 * How a path is resolved:
 *   1. wspath_normalize(): "." and ".." are folded as text. An absolute
 *      path is accepted only when it lies inside the workspace (as given or
 *      as resolved); "../x" and "/etc/passwd" are refused (FX_EDENIED).
 *   2. wspath_locate(): the components are walked one by one from the
 *      workspace descriptor with openat(O_PATH | O_NOFOLLOW). A symbolic
 *      link is read and its target spliced into the walk: a relative
 *      target is followed from the link's folder, an absolute one only
 *      when it names a place inside the workspace, and a ".." that would
 *      climb above the workspace is refused. The result is the canonical
 *      relative path (no symlinks left in it) and a descriptor of the
 *      folder that holds the final component.
 *   3. The folder (and, for reading, the file) is then opened again from
 *      the workspace descriptor with beneath_open() (base/beneath.h:
 *      openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), so the kernel checks
 *      that the canonical path is still beneath the workspace and has not
 *      grown a symlink since step 2. Where openat2 is missing (ENOSYS, or a
 *      seccomp filter says EPERM) the descriptors of the walk are used
 *      instead and the final open is openat(O_NOFOLLOW): every step of the
 *      walk went through a descriptor with O_NOFOLLOW, so it is just as
 *      confined.
 *
 * Messages are written for the model: they name the path as it was sent.
 */

#include <sys/types.h>

#include "base/buf.h"

/** The workspace: an open folder and its path. */
struct wspath_root {
	int fd;			/* O_PATH | O_DIRECTORY descriptor of the workspace */
	char *path;		/* as given, made absolute, "." and ".." folded */
	char *real;		/* realpath() of the workspace */
};

#define WSPATH_ROOT_INIT { -1, NULL, NULL }

/** Open the workspace folder `dir`. FX_ENOTFOUND when it is not a folder. */
int wspath_root_open(struct wspath_root *out, const char *dir);

/** Close the descriptor and free the paths; leaves WSPATH_ROOT_INIT. */
void wspath_root_release(struct wspath_root *root);

/**
 * Fold `path` (relative to the workspace, or absolute inside it) into a
 * clean relative path without "." or ".." components, appended to `out`;
 * "" is the workspace itself. FX_EDENIED when it leaves the workspace,
 * FX_EINVAL when it is empty.
 */
int wspath_normalize(struct buf *out, const struct wspath_root *root, const char *path);

enum wspath_flags {
	WSPATH_FOLLOW = 1 << 0,		/* follow a final symlink (it must stay inside) */
	WSPATH_MISSING_OK = 1 << 1,	/* the final component may not exist */
	WSPATH_MKDIRS = 1 << 2,		/* create missing parent folders (implies MISSING_OK) */
	WSPATH_CHANGE = 1 << 3,		/* the caller will change the entry (see below) */
	WSPATH_CHECK = 1 << 4,		/* with MKDIRS: check the path but create nothing; when
					 * folders are missing, dirfd is -1 and `missing` counts them */
};

/** Where a path lies. */
struct wspath_loc {
	int dirfd;		/* the folder holding `name`, opened O_RDONLY | O_DIRECTORY */
	char *name;		/* the final component; "" when the path is the workspace */
	char *rel;		/* canonical path relative to the workspace ("" for itself) */
	mode_t type;		/* S_IFREG, S_IFDIR, S_IFLNK, ...; 0 when it does not exist */
	size_t missing;		/* WSPATH_CHECK: folders of the path that do not exist yet */
};

#define WSPATH_LOC_INIT { -1, NULL, NULL, 0, 0 }

/**
 * Resolve `path` as the overview says. No tool goes into a folder named
 * ".git" (the repository's hooks and config), and none changes anything
 * in ".forgex" at the top of the workspace (WSPATH_CHANGE): both are
 * checked on the real path, after symlinks, and before WSPATH_MKDIRS
 * creates anything. On success `out` holds an open
 * folder descriptor and the final name (which is not a symlink when
 * WSPATH_FOLLOW was given). Errors: FX_EDENIED (outside, or changed under
 * us), FX_ENOTFOUND, FX_EINVAL (a component is not a folder), FX_ELIMIT
 * (symlink loop), FX_EOS.
 */
int wspath_locate(struct wspath_loc *out, const struct wspath_root *root, const char *path,
		  unsigned flags);

/** Close and free; leaves WSPATH_LOC_INIT. */
void wspath_loc_release(struct wspath_loc *loc);

/**
 * Open the entry of a located path with `oflags` (O_CLOEXEC and
 * O_NOFOLLOW are added), going through openat2 from the workspace when
 * the kernel has it. Returns the descriptor (>= 0) or an FX_E* code.
 */
int wspath_open_loc(const struct wspath_root *root, const struct wspath_loc *loc, int oflags);

/**
 * Open the folder `rel` (canonical, relative, "" for the workspace)
 * O_RDONLY | O_DIRECTORY, refusing any symlink on the way. For walkers
 * that already know the path is canonical (search, list_dir).
 */
int wspath_open_dir(const struct wspath_root *root, const char *rel);

#endif

#ifndef FX_FSUTIL_H
#define FX_FSUTIL_H

/*
 * File system helpers that either complete or leave things as they were.
 */

#include <sys/types.h>

#include <sys/stat.h>

#include "base/buf.h"

/**
 * Replace `path` with `len` bytes of `data` atomically: write a temporary
 * file in the same folder, fsync it, rename it over `path`, fsync the
 * folder. `mode` applies to a new file; an existing file keeps its mode.
 * A replaced file's successor gets a later whole-second mtime
 * (fsutil_later_mtime()). On failure the old file is untouched and no
 * temporary file remains.
 */
int fsutil_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

/**
 * Give the file open as `fd`, about to replace a file whose stat is `old`,
 * a modification time in a later second than old's when the clock has not
 * passed old's second (the successor of a file of second S gets S + 1):
 * caches keyed on whole-second mtime and size (Python's .pyc, make) would
 * otherwise take a same-size rewrite made within that second for the old
 * file. So successive versions always have increasing whole-second
 * mtimes. 0, or -1 with errno.
 */
int fsutil_later_mtime(int fd, const struct stat *old);

/** Same, relative to the directory descriptor `dirfd` (`name` has no slash). */
int fsutil_write_atomic_at(int dirfd, const char *name, const void *data, size_t len,
			   mode_t mode);

/*
 * Temporary files beside their target. Every file forgex writes into a
 * tree is first written as ".NAME.fx-XXXXXXXX.tmp" (eight hex digits;
 * NAME cut to 200 bytes) in the folder of NAME, then renamed over it. A
 * hook is told each name before the entry is created, so a journal can
 * name it first and the leftover of a write killed before its rename is
 * found and removed later (pipeline/journal.h), and nothing else is.
 */
#define FSUTIL_TMP_NAME_MAX 256

struct fsutil_tmp_hook {
	/* told `tmp` (a name in the folder of `rel`) first; < 0 refuses: nothing is created */
	int (*before_create)(void *data, const char *rel, const char *tmp);
	void *data;
	const char *rel;	/* the target, as the hook knows it (e.g. relative to the workspace) */
};

/**
 * Create a new temporary entry for `name` in `dirfd`, its name in `tmp`:
 * with `link_target` NULL a regular file (mode 0600, O_EXCL, no link
 * followed), returned open for writing; else a symbolic link to
 * `link_target` (returns 0). `hook` (may be NULL) is told each name
 * before it is tried. A negative code when none could be made.
 */
int fsutil_tmp_create(char tmp[FSUTIL_TMP_NAME_MAX], int dirfd, const char *name,
		      const char *link_target, const struct fsutil_tmp_hook *hook);

/**
 * The same name for a second (hard) link to the file `name` itself (a
 * copy kept to undo with); 0, or a negative code (also when the file
 * system has no hard links).
 */
int fsutil_tmp_hardlink(char tmp[FSUTIL_TMP_NAME_MAX], int dirfd, const char *name,
			const struct fsutil_tmp_hook *hook);

/** Whether `tmp` is a name fsutil_tmp_create() makes for `name`. */
int fsutil_tmp_is_for(const char *tmp, const char *name);

/** fsutil_write_atomic_at() with its temporary file made by fsutil_tmp_create(`hook`). */
int fsutil_write_atomic_hooked(int dirfd, const char *name, const void *data, size_t len,
			       mode_t mode, const struct fsutil_tmp_hook *hook);

/**
 * Append the contents of `path` to `out`. Fails with FX_ELIMIT when the
 * file is larger than `max` bytes (0: no limit), FX_ENOTFOUND when it
 * does not exist.
 */
int fsutil_read_file(struct buf *out, const char *path, size_t max);

/** Read all of `fd` into `out` (up to `max`, 0: no limit); does not close. */
int fsutil_read_fd(struct buf *out, int fd, size_t max);

/** Create `path` and missing parents with `mode`; an existing folder is fine. */
int fsutil_mkdir_p(const char *path, mode_t mode);

/** Whether `path` exists (any type, without following a final symlink). */
int fsutil_exists(const char *path);

/** Whether `path` is a directory (following symlinks). */
int fsutil_is_dir(const char *path);

/** Remove `path` and everything beneath it; a missing path is fine. */
int fsutil_remove_tree(const char *path);

/**
 * fsutil_remove_tree() of `name` in the folder `dirfd`: a link is removed,
 * never followed, there and beneath it.
 */
int fsutil_remove_tree_at(int dirfd, const char *name);

/**
 * Open `rel` beneath the folder `dirfd` for reading, following no symbolic
 * link on the way: beneath_open() (base/beneath.h) with O_RDONLY |
 * O_NONBLOCK, so a FIFO is not waited on: check the type. -1 with errno
 * (ELOOP for a link, EXDEV for a way out).
 */
int fsutil_open_beneath(int dirfd, const char *rel);

/**
 * Append up to `max` bytes (0: all) of `dir`/`rel` to `out`, opened with
 * fsutil_open_beneath(); `*cut` (may be NULL) says whether more was left.
 * Errors name `rel`: FX_ENOTFOUND, FX_EDENIED for a link, a way out of
 * `dir` or anything but a regular file.
 */
int fsutil_read_beneath(struct buf *out, const char *dir, const char *rel, size_t max, int *cut);

/** Write all of `len` bytes, retrying on EINTR and short writes. */
int fsutil_write_all(int fd, const void *data, size_t len);

#endif

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

#ifndef FX_TOOLS_FS_H
#define FX_TOOLS_FS_H

/*
 * Helpers the file tools share (fs.c, edit.c): refusing git's and
 * forgex's own folders, loading a text file, writing one atomically, and
 * the text checks.
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "tools/registry.h"
#include "ws/wspath.h"

/** How many leading bytes decide whether a file is text. */
#define FS_SNIFF_BYTES 8192

/**
 * Why the first FS_SNIFF_BYTES of `data` (`len` bytes; `whole` when that
 * is the entire file) are not text: a NUL byte or invalid UTF-8. Appends
 * the reason ("NUL byte at offset 12") to `why` and returns 1; 0 for text.
 * An incomplete UTF-8 sequence cut by the sniff window is not held against it.
 */
int fs_is_binary(const char *data, size_t len, int whole, struct buf *why);

/**
 * The rule wspath_locate() applies, for paths that are only text (the git
 * tools name paths that may no longer exist): refuse any component ".git",
 * and for changes (`modify`) anything under ".forgex". `rel` is
 * normalized; `shown` is the path the model sent. FX_EDENIED, else 0.
 */
int fs_check_allowed(const char *rel, const char *shown, int modify);

/**
 * Locate `path` for reading a regular file (following symlinks that stay
 * inside) and load it whole into `out`, at most `max` bytes (FX_ELIMIT
 * beyond, naming the size). `flags` adds wspath flags (WSPATH_CHANGE when
 * the file is to be changed). `loc` is filled even on some failures and
 * must always be released by the caller.
 */
int fs_load_text(struct buf *out, struct wspath_loc *loc, struct tool_ctx *ctx, const char *path,
		 size_t max, unsigned flags);

/**
 * Refuse new content that holds more "[REDACTED]" than the old: the model
 * saw the file redacted (base/redact.h), and writing what it saw would put
 * the placeholder where the user's secret was.
 */
int fs_check_placeholder(const char *old, size_t old_len, const char *new_text, size_t new_len,
			 const char *shown);

/**
 * Replace the file at `loc` with `len` bytes atomically (temporary file in
 * the same folder, fsync, rename) and record the change in `ctx`. The
 * temporary file is named to `ctx`'s hooks (the run's journal) before it
 * is created (fs_tmp_hook()).
 */
int fs_write_loc(struct tool_ctx *ctx, const struct wspath_loc *loc, const void *data, size_t len);

/**
 * The hook that tells `ctx`'s hooks (tool_ctx_before_tmp()) of each
 * temporary file made beside `rel` (borrowed), for fsutil_tmp_create()
 * and the writers built on it: every file a tool puts into the tree.
 */
struct fsutil_tmp_hook fs_tmp_hook(struct tool_ctx *ctx, const char *rel);

/**
 * Delete the entry at `loc` (a file, or a symbolic link itself; not a
 * folder) and record the change in `ctx`: what delete_file does. `shown`
 * names it in messages.
 */
int fs_delete_loc(struct tool_ctx *ctx, const struct wspath_loc *loc, const char *shown);

/** Append `n` as the line-number column of read_file ("%6zu\t", like cat -n). */
void fs_add_lineno(struct buf *out, size_t n);

/** Count the lines of `data` (a last line without "\n" counts). */
size_t fs_count_lines(const char *data, size_t len);


#endif

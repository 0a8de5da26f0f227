#ifndef FX_PATH_H
#define FX_PATH_H

/*
 * Path helpers. Everything here works on strings and the file system as
 * it is now; code that must be safe against a concurrent swap of a path
 * component opens files relative to a directory descriptor instead
 * (base/beneath.h; ws/wspath.h for paths a model names).
 */

#include "base/buf.h"

/**
 * Resolve `path` against `workspace` the way the seed's
 * resolve_in_workspace() does: join (an absolute `path` replaces the
 * workspace), then resolve "." and ".." and every symbolic link of the
 * components that exist (Python's non-strict Path.resolve()). The result
 * must be the resolved workspace or lie under it.
 *
 * On success `*out` is the resolved absolute path (caller frees).
 * Returns FX_EDENIED when the result escapes the workspace, FX_ENOTFOUND
 * when the workspace itself does not exist, FX_ELIMIT on a symlink loop.
 */
int path_resolve_in_workspace(char **out, const char *workspace, const char *path);

/**
 * Resolve like realpath(3) but tolerate missing components (they are
 * kept as written, with "." and ".." folded). `path` must be absolute.
 */
int path_resolve_lenient(char **out, const char *path);

/** Whether `path` equals `dir` or lies under it (both normalised, absolute). */
int path_is_within(const char *path, const char *dir);

/** Append `a` / `b` to `out` with exactly one slash between them. */
void path_join(struct buf *out, const char *a, const char *b);

/** Last component, trailing slashes ignored ("a/b//" -> "b"); "" for "/" or "". */
void path_basename(struct buf *out, const char *path);

/** Everything before the last component ("a/b" -> "a", "b" -> "."). */
void path_dirname(struct buf *out, const char *path);

/** Make `path` relative to `base` when under it, else copy it. */
void path_relative(struct buf *out, const char *path, const char *base);

#endif

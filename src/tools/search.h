#ifndef FX_TOOLS_SEARCH_H
#define FX_TOOLS_SEARCH_H

/*
 * Regular-expression search over the workspace, behind the `search` tool
 * and the search benchmark.
 *
 * What is searched: regular files under `path` (the workspace when
 * absent), hidden ones included, walking folders without following
 * symbolic links; never a `.git` folder, nor anything the repository's
 * ignore rules exclude (ws/ignore.h: nested .gitignore files and
 * .git/info/exclude). A file whose first 64 KiB hold a NUL byte is binary
 * and skipped; a later NUL ends the search of that file where ripgrep's
 * 64 KiB reads would end it, so the lines before it are still searched,
 * as `rg` does. Invalid UTF-8 does not make a file binary.
 *
 * How: PCRE2 in UTF mode with PCRE2_MATCH_INVALID_UTF (so files with
 * broken UTF-8 are searched too), Unicode classes (\w, \d as in ripgrep),
 * "^" and "$" at line boundaries, JIT-compiled when the library has a JIT.
 * A match never spans lines: each line is reported once, as
 * "path:line:text" with the path relative to the workspace, sorted by
 * path (bytewise) and then line number. Folders are walked by several
 * threads; the result does not depend on their number.
 *
 * The glob is one gitignore-style pattern matched against file paths
 * relative to the workspace: "*.c" matches in any folder, a pattern with
 * a slash is anchored ("src", "**" and "*.h" joined by slashes matches
 * headers anywhere under src), "*.{c,h}" gives alternatives, "!*_test.go"
 * excludes. Folders are always entered unless a "!" glob matches them.
 *
 * For literal patterns this finds exactly what
 * `rg -n --hidden --no-ignore-global -g '!.git' PATTERN` finds from the
 * workspace (ripgrep also reads .ignore, .rgignore and the global git
 * excludes, which this does not).
 */

#include <stddef.h>

#include "base/buf.h"
#include "ws/wspath.h"

struct search_opts {
	const char *pattern;	/* PCRE2 syntax */
	const char *path;	/* file or folder to search; NULL: the workspace */
	const char *glob;	/* gitignore-style filter on file paths; NULL: every file */
	size_t max_results;	/* lines shown; 0: 200 */
	size_t max_line;	/* bytes of a line shown; 0: 300; SIZE_MAX: whole lines */
	unsigned threads;	/* 0: one per CPU, at most 8 */
};

struct search_stats {
	size_t files;		/* files searched */
	size_t files_matched;	/* files with at least one matching line */
	size_t hits;		/* matching lines in all */
	size_t shown;		/* lines appended to the output */
	size_t binary;		/* files skipped as binary */
	size_t unreadable;	/* files that could not be opened or read */
	size_t too_large;	/* files skipped for size */
};

/**
 * Search as the overview says and append the matching lines to `out`,
 * one "path:line:text\n" per line (a line longer than max_line is cut at
 * a character boundary and marked " [... N more bytes]"). `stats` may be
 * NULL. Errors: FX_EINVAL for a bad pattern or glob (the message says
 * where), and those of wspath_locate() for `path`.
 */
int search_run(struct buf *out, const struct wspath_root *root, const struct search_opts *opts,
	       struct search_stats *stats);

#endif

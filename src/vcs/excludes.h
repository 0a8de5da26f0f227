#ifndef FX_VCS_EXCLUDES_H
#define FX_VCS_EXCLUDES_H

/*
 * Which paths are ignored, with git's rules (gitignore(5), git's dir.c);
 * not for use outside src/vcs/. (src/tools/ignore.c has the same rules for
 * the tools; the layers keep them apart: a service does not call a tool.)
 *
 * A stack of pattern lists, lowest precedence first: core.excludesFile,
 * then info/exclude (both matched against the path from the top of the
 * user's work tree), then the `.gitignore` of each folder from the
 * workspace down to the folder being read (matched relative to that
 * folder). The last matching pattern of the highest list decides; `!`
 * re-includes. A pattern ending in "/" matches folders only — and a
 * symbolic link is never a folder here, whatever it points to (git's
 * rule: it lstat()s). A pattern without "/" matches the last component
 * at any depth; any other is anchored to its list's folder. "*", "?",
 * "[...]" never match "/"; "**" matches across folders as git's wildmatch
 * does. Matching is bounded (a pathological pattern matches nothing after
 * a fixed budget rather than taking exponential time).
 *
 * The caller (snapshot.c) never asks about a path inside an ignored
 * folder: as in git, a file cannot be re-included when a folder above it
 * is excluded.
 */

#include <stddef.h>

struct excludes_pattern {
	char *pat;
	unsigned flags;
};

struct excludes_list {
	char *base;		/* the list's folder: "" or "a/b/" */
	int global;		/* matched against prefix + path (excludes file, info/exclude) */
	struct excludes_pattern *v;
	size_t nr, alloc;
};

struct excludes {
	struct excludes_list *lists;
	size_t nr, alloc;
	const char *prefix;	/* the workspace below the work tree's top: "" or "a/b/" */
};

/** Push a list for folder `base` parsed from `text` (a .gitignore's bytes). */
void excludes_push(struct excludes *s, const char *base, int global, const char *text,
		 size_t len);

/** Drop the top list. */
void excludes_pop(struct excludes *s);

void excludes_release(struct excludes *s);

/** Whether `path` (relative to the workspace; a folder when `is_dir`) is ignored. */
int excludes_match(const struct excludes *s, const char *path, int is_dir);

/** git's wildmatch(3) with WM_PATHNAME (exposed for tests). */
int vcs_wildmatch(const char *pattern, const char *text);

#endif

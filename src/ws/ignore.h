#ifndef FX_WS_IGNORE_H
#define FX_WS_IGNORE_H

/*
 * gitignore rules, as git reads them (gitignore(5), git's dir.c and
 * wildmatch.c): the one engine of forgex, for search, list_dir, the
 * repository map and checkpoints.
 *
 * A file of rules belongs to a folder (its `base`, relative to the
 * workspace: "" for the top, "src/lib" for src/lib/.gitignore). Within one
 * file the last matching pattern decides; a deeper file overrides a
 * shallower one, .git/info/exclude comes below every .gitignore and
 * core.excludesFile below that. A path inside an excluded folder is
 * excluded whatever later patterns say (git never looks inside such a
 * folder); a walker that does not descend into excluded folders gets this
 * for free, ignore_tree_excluded() checks the parents itself.
 *
 * info/exclude and core.excludesFile are files for the whole work tree:
 * when the workspace is a folder below the work tree's top, their patterns
 * are matched against the path from the top (ignore_rules_parse_top()),
 * so "/sub/x" there names the workspace's "x" when it is "sub".
 *
 * Patterns: blank lines and lines starting with "#" are skipped; trailing
 * spaces are dropped unless escaped with "\"; a trailing CR is dropped
 * (on the last line too); a NUL ends the line's pattern; "!" negates; a
 * trailing "/" matches folders only (the caller says what a folder is: a
 * symbolic link never is one, as git lstat()s); a pattern with a "/" at
 * its start or middle is anchored to its file's folder, others match the
 * last component at any depth; "*", "?", "[...]" (with "!" or "^", ranges
 * and [:class:]; a "[:" without ":]" is an ordinary "[") never match "/";
 * "**" as a whole component matches any number of folders; "\" escapes
 * the next character. Matching takes polynomial time whatever the pattern
 * (results are remembered once a match backtracks much), so no pattern is
 * given up on.
 *
 * Not read: the global ~/.config/git/ignore unless the caller loads it
 * (ignore_rules_load_top(); checkpoints do, search does not, as
 * `rg --no-ignore-global`), and .gitignore files of folders above the
 * workspace.
 *
 * For walkers (search):
 *   1. the chain starts with ignore_load_exclude() of the workspace;
 *   2. entering a folder, ignore_rules_load_at() its .gitignore and put it
 *      in front of the parent's chain (struct ignore_chain is immutable, so
 *      threads may share it);
 *   3. ignore_chain_excluded() for each entry; skip excluded folders.
 * For one-off questions (checkpoints): ignore_tree_init(),
 * ignore_tree_excluded() any number of times, ignore_tree_release().
 */

#include <stddef.h>

#include "ws/wspath.h"

/** The patterns of one file. */
struct ignore_rules;

enum ignore_match {
	IGNORE_NONE = 0,	/* no pattern matched */
	IGNORE_EXCLUDED = 1,	/* the last matching pattern excludes */
	IGNORE_INCLUDED = 2,	/* the last matching pattern is a negation ("!x") */
};

/**
 * Parse gitignore text whose patterns are relative to the folder `base`
 * ("" or "a/b", no trailing slash). Never fails: a line that cannot match
 * anything is kept and never matches. Caller frees with ignore_rules_free().
 */
struct ignore_rules *ignore_rules_parse(const char *base, const char *text, size_t len);

/**
 * Parse the text of a file for the whole work tree (info/exclude,
 * core.excludesFile) seen from a workspace `prefix` below the work tree's
 * top ("" or NULL for the top itself, else "a/b" or "a/b/"): the rules
 * match workspace paths as if `prefix` stood in front of them.
 */
struct ignore_rules *ignore_rules_parse_top(const char *prefix, const char *text, size_t len);

/** Free (accepts NULL). */
void ignore_rules_free(struct ignore_rules *rules);

/** Number of patterns kept. */
size_t ignore_rules_count(const struct ignore_rules *rules);

/**
 * Match `path` (relative to the workspace, `len` bytes, no trailing slash;
 * `is_dir` when it is a folder) against the patterns of one file. The
 * path must lie beneath the rules' base.
 */
enum ignore_match ignore_rules_match(const struct ignore_rules *rules, const char *path,
				     size_t len, int is_dir);

/**
 * Read `name` in the folder `dirfd` (not following a symlink) as rules
 * for `base`. `*out` is NULL when the file does not exist or holds no
 * pattern. FX_EOS on a read error.
 */
int ignore_rules_load_at(struct ignore_rules **out, int dirfd, const char *name, const char *base);

/**
 * Read the file `path` (relative to `dirfd`, or absolute; links followed:
 * the user's own configuration names it, core.excludesFile) as rules for
 * the whole work tree, as ignore_rules_parse_top() with `prefix`. `*out`
 * is NULL when it does not exist, is not a regular file or holds no
 * pattern. FX_EOS on a read error.
 */
int ignore_rules_load_top(struct ignore_rules **out, int dirfd, const char *path,
			  const char *prefix);

/**
 * Load the workspace repository's info/exclude (following a `.git` file
 * to a worktree's or submodule's git folder). `*out` is NULL when there
 * is none.
 */
int ignore_load_exclude(struct ignore_rules **out, const struct wspath_root *root);

/** Rules of a folder and of its parents, deepest first. */
struct ignore_chain {
	const struct ignore_rules *rules;
	const struct ignore_chain *next;
};

/** Whether the deepest file with a matching pattern excludes `path`. */
int ignore_chain_excluded(const struct ignore_chain *chain, const char *path, size_t len,
			  int is_dir);

/**
 * git's wildmatch with WM_PATHNAME: whether `pattern` matches all of
 * `text` (`len` bytes). Exposed for tests and the fuzzer.
 */
int ignore_wildmatch(const char *pattern, const char *text, size_t len);

/** Cached rules of a workspace for questions about any path. */
struct ignore_tree {
	const struct wspath_root *root;
	struct ignore_rules *exclude;
	struct ignore_tree_slot *slots;	/* open addressing: folder -> rules */
	size_t nr, alloc;
};

/** Prepare for `root` (borrowed; must outlive the tree). Reads info/exclude. */
int ignore_tree_init(struct ignore_tree *tree, const struct wspath_root *root);

/**
 * Whether `rel` (canonical relative path; `is_dir` for a folder) is
 * ignored, by its own rules or because a parent folder is. Reads each
 * folder's .gitignore once. Returns 1, 0, or a negative FX_E* code.
 */
int ignore_tree_excluded(struct ignore_tree *tree, const char *rel, int is_dir);

/** Free the cached rules (the root stays with its owner). */
void ignore_tree_release(struct ignore_tree *tree);

#endif

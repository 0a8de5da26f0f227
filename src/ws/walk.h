#ifndef FX_WS_WALK_H
#define FX_WS_WALK_H

/*
 * The one tree walker: search, the repository map's index and checkpoint
 * snapshots all read the workspace through it.
 *
 * A walk starts at a folder beneath a top descriptor (opened with
 * beneath_open(), so no link on the way to it is followed) and reads
 * each folder once: its entries are read whole (readdir on the folder's
 * descriptor), the folder's `.gitignore` is loaded (WS_WALK_IGNORES), and
 * each entry is handed to the visitor with its type, its path relative to
 * the top and whether the ignore rules exclude it. A folder is entered
 * only when the visitor says so, opened from its parent's descriptor with
 * O_NOFOLLOW: no symbolic link is ever followed, so nothing outside the
 * top is reached. `.git` (the repository's objects, hooks and config) is
 * never reported nor entered.
 *
 * System calls: one open, one readdir pass and one close per folder; per
 * entry nothing, unless the file system gives no d_type (one lstat) or
 * the caller asks for WS_WALK_STAT (one lstat, which it needs anyway).
 *
 * Depth: a walk in this thread keeps the descriptors of the folders above
 * the one being read; below WS_WALK_FD_DEPTH a folder's descriptor is
 * closed while its children are read and opened again through "..",
 * checked to be the same folder, so no depth the file system allows makes
 * it run out of descriptors.
 *
 * Threads: with `threads` > 1 the folders are read by that many threads
 * (each folder a job, opened beneath the top by its path); the visitor is
 * then called from all of them at once (`worker` says which), in no
 * particular order, and `leave` is not available.
 *
 * The caller:
 *   1. fills a struct ws_walk (WS_WALK_INIT, then flags, visit, arg, and
 *      `chain`: the rules that apply above the first folder, e.g. the
 *      repository's info/exclude);
 *   2. ws_walk_run() with the top descriptor and the first folder;
 *   3. reads `unreadable`.
 */

#include <stddef.h>
#include <sys/stat.h>

#include "ws/ignore.h"

/** Below this depth a walk does not keep a folder's descriptor open while it reads its children. */
#define WS_WALK_FD_DEPTH 64

enum ws_walk_flags {
	/* Read each folder's .gitignore; an excluded entry is not reported (see REPORT_IGNORED). */
	WS_WALK_IGNORES = 1 << 0,
	/*
	 * With IGNORES: report excluded entries too, with `ignored` set; the
	 * visitor may still enter an excluded folder, whose .gitignore is then
	 * not read and whose entries are all `ignored` (git cannot re-include
	 * anything below an excluded folder).
	 */
	WS_WALK_REPORT_IGNORED = 1 << 1,
	WS_WALK_LINKS = 1 << 2,		/* report symbolic links (never followed); else only folders and files */
	WS_WALK_STAT = 1 << 3,		/* lstat every entry: `st` is set */
	WS_WALK_SORTED = 1 << 4,	/* entries in path order (a folder as "name/"): paths come bytewise sorted */
	WS_WALK_GIT_ANYCASE = 1 << 5,	/* leave out ".GIT" and the like too (case-insensitive file systems) */
	WS_WALK_SKIP_FORGEX = 1 << 6,	/* leave out ".forgex" directly beneath the top */
	WS_WALK_NO_NESTED = 1 << 7,	/* do not enter a folder holding ".git" (a nested repository) */
	/*
	 * A folder that cannot be opened or read, or an entry that cannot be
	 * looked at, ends the walk with FX_EOS; without it, it is skipped and
	 * counted in `unreadable`. Entries that vanish while the walk runs
	 * are skipped either way.
	 */
	WS_WALK_STRICT = 1 << 8,
};

/** An entry as the visitor sees it; valid during the call only. */
struct ws_entry {
	int dirfd;		/* the folder holding it, open for reading */
	const char *name;	/* its name in that folder */
	const char *path;	/* relative to the top: "a/b/name" */
	size_t len;		/* of `path` */
	unsigned char type;	/* DT_REG, DT_DIR or DT_LNK */
	int ignored;		/* the ignore rules exclude it (or a folder above it) */
	unsigned depth;		/* 0 for the entries of the first folder */
	unsigned worker;	/* the thread calling: 0 .. threads - 1 */
	const struct stat *st;	/* WS_WALK_STAT: what lstat said; else NULL */
};

/** What a visitor returns (or a negative FX_E* code, which ends the walk). */
enum {
	WS_WALK_CONTINUE = 0,	/* go on; a folder is not entered */
	WS_WALK_ENTER = 1,	/* a folder: read it (its entries come next, before its siblings') */
};

typedef int ws_walk_fn(void *arg, const struct ws_entry *e);

struct ws_walk {
	unsigned flags;			/* enum ws_walk_flags */
	ws_walk_fn *visit;		/* every entry */
	ws_walk_fn *leave;		/* may be NULL: a folder entered, after its entries */
	void *arg;			/* handed to both */
	const struct ignore_chain *chain; /* borrowed, may be NULL: the rules above the first folder */
	unsigned threads;		/* 0 or 1: this thread only */
	size_t unreadable;		/* out: folders and entries skipped (without STRICT) */
};

#define WS_WALK_INIT { 0, NULL, NULL, NULL, NULL, 0, 0 }

/**
 * Walk the folder `rel` ("" for the top itself; canonical, no "..")
 * beneath `topfd`, as the overview says. Returns 0, the first negative
 * code a visitor returned, FX_ENOTFOUND when `rel` is not a folder,
 * FX_EDENIED when it is (or passes through) a symbolic link, or FX_EOS
 * (with STRICT, or when `rel` cannot be opened at all).
 */
int ws_walk_run(struct ws_walk *w, int topfd, const char *rel);

#endif

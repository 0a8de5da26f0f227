#ifndef FX_VCS_STATCACHE_H
#define FX_VCS_STATCACHE_H

/*
 * The stat cache; not for use outside src/vcs/.
 *
 * The shadow's index (`.forgex/checkpoints/index`) is a cache of the
 * working tree: one entry per recorded file or link with its object id
 * and the stat data (mtime, ctime, size, inode, mode) it had when that id
 * was computed. A capture reads a file again only when its stat data
 * differs from the entry; an entry whose file changed while it was read
 * carries no stat data (statcache_fill()). The cache is never the only
 * copy of anything: a damaged index is dropped and rebuilt from the tree.
 *
 * The first capture of a repository seeds the cache from the user's index
 * (stat data git itself trusts), so it reads only what git would.
 */

#include <sys/stat.h>
#include <stdint.h>
#include <time.h>

#include <git2.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "vcs/shadow.h"

/** The shadow's index; a damaged one is dropped and rebuilt. */
int statcache_open(git_index **out, struct checkpoints *cps);

/**
 * Copy the user's entries below `prefix` that `idx` lacks, with their stat
 * data when git would trust it (not racy, not assume-unchanged,
 * skip-worktree or intent-to-add). Returns how many were copied.
 */
int statcache_seed(git_index *idx, git_index *uidx, const char *prefix);

/** The user's index entry for workspace path `rel`, if the user tracks it. */
const git_index_entry *statcache_user_entry(git_index *uidx, const char *prefix, const char *rel,
					    struct buf *scratch);

/** Whether workspace path `rel` is forgex's own (`.forgex` at the top): never recorded. */
int statcache_never(const char *rel);

/**
 * Whether entry `e` still describes the file whose lstat() is `st` (mtime,
 * ctime, inode, owner, size; an entry without stat data never does).
 */
int statcache_fresh(const git_index_entry *e, const struct stat *st);

/**
 * Put `st` into `e` as the stat data of content just read. When the file
 * changed at or after `start` (the coarse clock when the capture began)
 * the data is left out instead: a change after the read could carry the
 * same stamp (git's "racy clean" problem), so the next capture reads it
 * again. Hence the cache is refreshed whenever content proves unchanged
 * (after `touch`, `cp -a`, a branch switch) and is never trusted for a
 * file that changed during a capture.
 */
void statcache_fill(git_index_entry *e, const struct stat *st, const struct timespec *start);

/* ------------------------------------------------ the record of a capture */

/*
 * forgex's own stat cache (`.forgex/checkpoints/forgex-statcache`): what
 * the last capture saw, so the next one can be taken without libgit2's
 * index and without reading a folder whose entries cannot have changed
 * (git's untracked cache, done the same way: a folder's stat data changes
 * whenever an entry is added, removed or renamed in it).
 *
 * It holds the tree of the last capture and its commit headers (the
 * permission bits, the empty folders, the too-large files), a stamp of
 * every input the capture's rules depend on (the user's index,
 * info/exclude, core.excludesFile, each folder's .gitignore, a key naming
 * the user's prefix, those files' paths and max_file_bytes), and, by
 * folder, every folder that was read (its stamp) and every file and link
 * recorded in it (stamp, git mode, object id). A folder holding a nested
 * repository has its stamp only.
 *
 * Stamps follow the racy rule of statcache_fill(): one taken of something
 * that changed at or after the start of the capture is kept untrusted and
 * never matches, so a change in the same clock tick is never missed.
 *
 * On disk: a base (header, folders, files, names, strings, crc32), written
 * whole through a temporary file, then records appended (a file's new
 * stamp and id; a group ends with the new tree and its crc). A group cut
 * short is ignored; a base with many records behind it is written whole
 * again. Everything is written inside a batch (shadow.h): a batch cut
 * short drops the file, and shadow_batch_end() flushes it.
 */

#define STATCACHE_FILE "forgex-statcache"

/* What lstat said of a file, link or folder (all zero: absent). */
struct sc_stamp {
	int64_t mtime_sec, ctime_sec;
	uint64_t ino, dev, size;
	uint32_t mtime_nsec, ctime_nsec, mode, uid, gid, trusted;
};

struct sc_file {
	struct sc_stamp st;
	uint32_t gitmode;		/* 0: larger than max_file_bytes, not stored */
	uint32_t name;			/* offset in names */
	unsigned char oid[GIT_OID_RAWSZ];
	uint32_t name_len;
};

#define SC_DIR_NESTED 1u		/* a nested repository: its stamp only, never read */

struct sc_dir {
	struct sc_stamp st;		/* the folder, before it was read */
	struct sc_stamp ign;		/* its .gitignore (absent: all zero, trusted) */
	uint32_t path;			/* offset in names ("" for the top) */
	uint32_t path_len;
	uint32_t first, nfiles;		/* its files: files[first .. first + nfiles) */
	uint32_t flags;			/* SC_DIR_* */
	unsigned char names[GIT_OID_RAWSZ];	/* statcache_names() of its entries */
};

struct statcache {
	unsigned char root[GIT_OID_RAWSZ];	/* the tree */
	struct sc_stamp inputs[3];	/* the user's index, info/exclude, core.excludesFile */
	unsigned char tracked[GIT_OID_RAWSZ];	/* what the user's index tracks (statcache_tracked()) */
	char *key;			/* the rest the rules depend on (statcache_key()) */
	char *perms;			/* the permission bits header's value */
	struct strvec empty_dirs, too_large;	/* as struct snapshot has them */
	size_t recorded;		/* files and links in the tree */
	struct sc_dir *dirs;		/* sorted by path (a folder before what it holds) */
	size_t ndirs, adirs;
	struct sc_file *files;
	size_t nfiles, afiles;
	struct buf names;		/* while it is built; read: `names` points into `raw` */
	const char *namep;		/* the names, either way */
	size_t records;			/* appended after the base on disk; SIZE_MAX: a bad tail */
	void *raw;			/* the file as read (dirs and files point into it) */
};

#define STATCACHE_INIT { { 0 }, { { 0 } }, { 0 }, NULL, NULL, STRVEC_INIT, STRVEC_INIT, 0, NULL, 0, 0, \
			 NULL, 0, 0, BUF_INIT, NULL, 0, NULL }

void statcache_release(struct statcache *sc);

/** The stamp of `st` (NULL: absent), untrusted when it changed at or after `start`. */
void sc_stamp_fill(struct sc_stamp *s, const struct stat *st, const struct timespec *start);

/** Whether stamp `cached` (trusted) still describes `now`. */
int sc_stamp_same(const struct sc_stamp *cached, const struct sc_stamp *now);

/** The stamp of `name` in `dirfd` (lstat, or stat with `follow`); absent when missing. */
void sc_stamp_at(struct sc_stamp *s, int dirfd, const char *name, int follow,
		 const struct timespec *start);

/**
 * The digest of what the user's index `uidx` tracks below `prefix` (path,
 * mode and stage of each entry; not its stat data, which `git status`
 * rewrites): when the index file's stamp changed but this did not, what a
 * capture records did not either.
 */
void statcache_tracked(unsigned char out[GIT_OID_RAWSZ], git_index *uidx, const char *prefix);

/**
 * The digest of a folder's entries, `list` holding one "T NAME\0" per
 * entry (T: f, d or l) in any order: a folder whose stamp changed (a file
 * in it replaced by a rename, one made and removed) but whose entries are
 * these same ones is not read any further.
 */
void statcache_names(unsigned char out[GIT_OID_RAWSZ], const char *list, size_t len);

/** The key of what else a capture of `cps` depends on (caller frees). */
char *statcache_key(struct checkpoints *cps, const char *uindex, const char *exclude);

/**
 * Read the record. FX_ENOTFOUND when there is none; FX_EPARSE (no
 * message) when it is damaged or of another version: either way the
 * capture takes the long way and writes it again.
 */
int statcache_load(struct statcache *sc, int shadow_fd);

/** Write `sc` whole (a temporary file renamed over the old one). */
int statcache_save(struct statcache *sc, int shadow_fd);

/**
 * Append the files `idx[0 .. n)` of `sc` (their new stamps and ids), the
 * folders `dirs[0 .. ndirs)` (their new stamps), the inputs' stamps and
 * the tree `sc->root` as one group; with too many records behind the
 * base already, write it whole instead.
 */
int statcache_append(struct statcache *sc, int shadow_fd, const uint32_t *idx, size_t n,
		     const uint32_t *dirs, size_t ndirs);

#endif

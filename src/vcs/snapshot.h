#ifndef FX_VCS_SNAPSHOT_H
#define FX_VCS_SNAPSHOT_H

/*
 * Taking a snapshot; not for use outside src/vcs/.
 *
 * snapshot_capture() reads the working tree itself (git's dir.c and
 * read-cache.c refresh, not libgit2's iterator, which stops at 100 nested
 * folders and needs whole paths under PATH_MAX): one walk from a
 * descriptor of the workspace, each folder opened with O_NOFOLLOW from its
 * parent's descriptor, so no depth or path length the file system allows
 * makes it fail (descriptors are bounded: below a fixed depth a folder's
 * descriptor is closed while its children are read and reopened via "..",
 * checked to be the same folder).
 *
 * What it records: every file and link the user's index tracks (even if
 * ignored), every other file, link and empty folder not ignored (ws/ignore.h:
 * .gitignore files, info/exclude, core.excludesFile), never `.git` at any
 * depth or `.forgex` at the top, no special files, no nested repository
 * (a folder holding `.git`, or a gitlink of the user's index).
 *
 * The stat cache (statcache.h) decides which files are read: a file whose
 * stat data matches its entry is not; a file that is read and proves
 * unchanged gets its entry's stat data refreshed. Changed contents are
 * written as blobs (odb.h; a file over 1 MiB is streamed: hashed and
 * stored as it is read, holes never read), then the tree object; the
 * index is saved when an entry changed. A file larger than
 * cps->max_file_bytes is not stored but listed in `snap->too_large`.
 *
 * The caller holds the lock and brackets the call with shadow_batch_begin()
 * / shadow_batch_end(). `out` receives the tree, `snap` (may be NULL) the
 * permission bits of every recorded file and folder (a full map) and the
 * empty folders.
 */

#include <git2.h>

#include "base/strvec.h"
#include "vcs/perms.h"
#include "vcs/shadow.h"
#include "vcs/statcache.h"

struct snapshot {
	struct perm_map perms;	/* full: every recorded file, every folder holding one, empty folders */
	struct strvec empty_dirs;	/* sorted, "a/b" (no trailing slash) */
	struct strvec too_large;	/* "SIZE PATH": files over cps->max_file_bytes, not stored */
	size_t files;		/* files and links recorded */
	char *perms_header;	/* the permission bits header's value, when known (else from perms) */
};

#define SNAPSHOT_INIT { PERM_MAP_INIT, STRVEC_INIT, STRVEC_INIT, 0, NULL }

void snapshot_release(struct snapshot *s);

int snapshot_capture(git_oid *out, struct snapshot *snap, struct checkpoints *cps, git_index *idx);

/**
 * A snapshot as snapshot_capture() takes it, the short way when the
 * record of the last capture (statcache.h) says no folder's entries and
 * no ignore rule can have changed: no index is read, no folder listed;
 * each recorded file is lstat'ed and only those whose stamp changed are
 * read, their trees rebuilt (git_tree_create_updated()) and their records
 * appended. `snap->perms` stays empty (`snap->perms_header` holds the
 * header) and `*idx` NULL. Otherwise (or when the short way fails in any
 * way) the stat cache is opened into `*idx` (the caller frees it) and
 * snapshot_capture() runs, writing the record afresh.
 */
int snapshot_take(git_oid *out, struct snapshot *snap, struct checkpoints *cps, git_index **idx);

/*
 * For snapshot_fast.c: store the file or link `name` of `dfd` (`rel`, as
 * `*st` says; `*st` becomes what was read) as a blob in `odb`, not
 * written again when its id is `known` (may be NULL). FX_ENOTFOUND: it is
 * no longer a file or link.
 */
int snapshot_store(git_oid *oid, struct checkpoints *cps, git_odb *odb, struct stat *st, int dfd,
		   const char *name, const char *rel, const git_oid *known);

/* What a capture the long way collects for the record (snapshot_fast.c). */
struct sc_build {
	struct sc_bdir {
		char *path;
		struct sc_stamp st, ign;
		struct buf names;	/* its entries, "T NAME\0" each (statcache_names()) */
		int entered;
	} *dirs;
	size_t ndirs, adirs;
	struct sc_bfile {
		char *path;
		uint32_t dir;		/* its folder (in dirs) */
		uint32_t name;		/* where its name starts in path */
		struct stat st;
		int too_large;
	} *files;
	size_t nfiles, afiles;
	size_t *at_depth;		/* the folder being read at each depth */
	size_t adepth;
	struct sc_stamp inputs[3];
	unsigned char tracked[GIT_OID_RAWSZ];	/* statcache_tracked() of the user's index */
	char *key;
};

/** Start collecting: the inputs' stamps (before they are read) and the top folder. */
void sc_build_begin(struct sc_build *b, struct checkpoints *cps, const struct timespec *start);
/** A folder about to be read (entered from `dirfd` as `name`), `depth` its entries' depth. */
void sc_build_dir(struct sc_build *b, int dirfd, const char *name, const char *path,
		  const struct stat *st, unsigned depth, const struct timespec *start);
/** An entry the walk showed (any kind, ignored or not) at `depth`: `type` DT_REG, DT_DIR or DT_LNK. */
void sc_build_entry(struct sc_build *b, unsigned depth, const char *name, unsigned char type);
/** The folder whose entries were at `depth` was read. */
void sc_build_left(struct sc_build *b, unsigned depth);
/** A file or link recorded at `depth` (`too_large`: listed, not stored), `st` as read. */
void sc_build_file(struct sc_build *b, unsigned depth, const char *path, const struct stat *st,
		   int too_large);
/**
 * Write the record of a capture that gave `tree` from `idx` and `snap`
 * (whose perms_header is set). A failure only removes the record.
 */
void sc_build_finish(struct sc_build *b, struct checkpoints *cps, git_index *idx,
		     const struct snapshot *snap, const git_oid *tree, const struct timespec *start);
void sc_build_release(struct sc_build *b);

/**
 * Record the one file or link `path` (an ignored one the restore is about
 * to overwrite) in `idx` and `snap`, as a capture would.
 */
int snapshot_add_path(struct snapshot *snap, struct checkpoints *cps, git_index *idx,
		      const char *path);

/** The commit header that lists a checkpoint's empty folders. */
#define EMPTY_DIRS_HEADER "forgex-empty-dirs"

/**
 * The commit header that lists the files a checkpoint did not store because
 * they were larger than [checkpoints] max_file_bytes: "SIZE PATH" lines.
 */
#define TOO_LARGE_HEADER "forgex-too-large"

/**
 * Format `dirs` (or the too-large list) as that header's value ("" when
 * there are none; caller frees).
 */
char *snapshot_format_dirs(const struct strvec *dirs);

/** Read commit `c`'s empty folders into `out` (none when it has no header). */
int snapshot_load_dirs(struct strvec *out, const git_commit *c);

/** Read commit `c`'s too-large files ("SIZE PATH") into `out` (none when it has no header). */
int snapshot_load_too_large(struct strvec *out, const git_commit *c);

#endif

#ifndef FX_VCS_RESTORE_H
#define FX_VCS_RESTORE_H

/*
 * Planning a restore; not for use outside src/vcs/.
 *
 * restore_plan.c decides, changing nothing: the checkpoint's files as a
 * sorted list (restore_tree_load(); `.forgex` and gitlinks left out), the
 * changes from the tree now to it (restore_make_plan()), that every blob
 * they write is readable (restore_check_objects()), and that none of them
 * destroys a file no checkpoint holds (restore_check_write()). restore.c (checkpoint_restore())
 * takes the backup, then applies the plan beneath a descriptor of the
 * workspace without following links, and reads the tree back.
 */

#include <stdint.h>

#include <git2.h>

#include "base/strvec.h"
#include "vcs/perms.h"
#include "vcs/shadow.h"

enum change_kind {
	CHANGE_DELETE,		/* in the tree now, not in the checkpoint */
	CHANGE_WRITE,		/* missing or different: write the checkpoint's version */
	CHANGE_CHMOD,		/* same bytes, only the permission bits differ */
	CHANGE_MKDIR,		/* an empty folder of the checkpoint that is missing */
	CHANGE_RMDIR,		/* an empty folder now that the checkpoint does not have */
};

struct change {
	enum change_kind kind;
	char *path;
	git_oid oid;		/* the checkpoint's blob (WRITE, CHMOD) */
	uint32_t mode;		/* the checkpoint's mode (WRITE, CHMOD) */
	int perms;		/* the checkpoint's permission bits of a file; -1: not recorded */
};

struct plan {
	struct change *items;
	size_t nr, alloc;
};

/* The checkpoint's files, sorted by path as an index is (bytewise). */
struct tree_entry {
	char *path;
	git_oid oid;
	uint32_t mode;
};

struct tree_list {
	struct tree_entry *v;
	size_t nr, alloc;
};

void restore_tree_release(struct tree_list *l);
int restore_tree_load(struct tree_list *out, git_tree *tree);
void restore_tree_dirs(struct strvec *out, const struct tree_list *want);

/** Whether the checkpoint has anything under folder `dir` ("a/b", no slash). */
int restore_tree_has_dir(const struct tree_list *want, const char *dir);

/**
 * Whether folder `dir` ("a/b") must stay: the checkpoint has something
 * below it, or it is (or holds) one of its empty folders.
 */
int restore_keeps_dir(const struct tree_list *want, const struct strvec *want_dirs,
		      const char *dir);

/** Whether sorted `v` holds `s`. */
int strvec_has_sorted(const struct strvec *v, const char *s);

/**
 * Every blob the plan writes is read whole and hashed again (a damaged
 * loose object reads as missing, see odb.h): FX_ENOTFOUND naming the
 * first that is not readable, before anything is changed.
 */
int restore_check_objects(struct checkpoints *cps, const struct plan *plan, const char *id);

void restore_plan_release(struct plan *p);

struct snapshot;

/**
 * Compare the current tree (`now`, captured as `now_snap`) with the
 * checkpoint's (`want`, `want_perms`, its empty folders `want_dirs`).
 */
int restore_make_plan(struct plan *plan, git_index *now, const struct snapshot *now_snap,
		      const struct tree_list *want, const struct perm_map *want_perms,
		      const struct strvec *want_dirs);

/**
 * Whether WRITE `c` can be done without destroying a file no checkpoint
 * holds (FX_EDENIED naming it). An ignored file or link at the very path
 * goes to `overwrite`, so the backup keeps it.
 */
int restore_check_write(struct strvec *overwrite, int rootfd, const struct change *c,
			git_index *now, const struct tree_list *want);

#endif

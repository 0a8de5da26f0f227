#ifndef FX_VCS_PERMS_H
#define FX_VCS_PERMS_H

/*
 * Permission bits of a checkpoint; not for use outside src/vcs/.
 *
 * Git records only whether a file is executable. A checkpoint also
 * records the permission bits (0777) of every file and of every folder
 * holding one, in a "forgex-perms" header of its commit: a first line
 * "1 F X D" with the bits most files (F), executable files (X) and folders
 * (D) have, then "BITS PATH" for each exception, folders with a trailing
 * "/"; bits in octal, "\" and newlines in paths written "\\" and "\n".
 *
 * A map is either full (made by a capture, snapshot.h: every path has
 * its entry) or
 * loaded from a header (only the exceptions; the rest take `def`).
 */

#include <stdint.h>

#include <git2.h>

#include "base/strvec.h"

#define PERMS_HEADER "forgex-perms"

enum { PERM_FILE, PERM_EXEC, PERM_DIR };

struct perm_entry {
	char *path;		/* a folder ends with "/" */
	unsigned perms;
};

struct perm_map {
	struct perm_entry *v;
	size_t nr, alloc;
	unsigned def[3];	/* by PERM_FILE, PERM_EXEC, PERM_DIR */
	int known;		/* 0: no record (the defaults are a guess) */
};

#define PERM_MAP_INIT { NULL, 0, 0, { 0644, 0755, 0755 }, 0 }

/** qsort() comparison of `char *` strings. */
int vcs_strcmp_ptr(const void *a, const void *b);

/** Whether a git mode is a regular file (executable or not). */
int vcs_is_file_mode(uint32_t mode);

void perm_map_release(struct perm_map *m);
void perm_map_add(struct perm_map *m, const char *path, unsigned perms);
void perm_map_sort(struct perm_map *m);

/** The bits recorded for `path` (a folder: "a/b/"), whose git mode is `mode`. */
unsigned perm_map_get(const struct perm_map *m, const char *path, uint32_t mode);

/*
 * Folders above paths, as "a/", "a/b/": vcs_add_parent_dirs() for each
 * path in sorted order, then vcs_finish_dirs() sorts and drops duplicates.
 */
void vcs_add_parent_dirs(struct strvec *all, const char *path, const char **prev);
void vcs_finish_dirs(struct strvec *out, struct strvec *all);

/** Format the full map `m` of index `idx` as the header value (caller frees). */
char *perm_map_format(const struct perm_map *m, git_index *idx);

/** Read the header of commit `c`; a commit without one leaves out->known 0. */
int perm_map_load(struct perm_map *out, const git_commit *c);

#endif

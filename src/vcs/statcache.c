/* The stat cache; see statcache.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/strvec.h"
#include "vcs/perms.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

const git_index_entry *statcache_user_entry(git_index *uidx, const char *prefix, const char *rel,
					 struct buf *scratch)
{
	const git_index_entry *e;
	int stage;

	if (!uidx)
		return NULL;
	buf_reset(scratch);
	buf_addstr(scratch, prefix);
	buf_addstr(scratch, rel);
	for (stage = 0; stage <= 3; stage++)
		if ((e = git_index_get_bypath(uidx, scratch->buf, stage)))
			return e;
	return NULL;
}

/*
 * Copy the user's entries the shadow does not have yet, with their stat
 * data: then add_all reads only the files that changed since git last
 * looked, and the first checkpoint of a large repository costs about what
 * `git status` does. Stat data git itself would not trust is dropped (the
 * file is read again): racy entries (not older than the index file, git's
 * rule), assume-unchanged, skip-worktree and intent-to-add entries.
 */
int statcache_seed(git_index *idx, git_index *uidx, const char *prefix)
{
	const char *ipath = git_index_path(uidx);
	size_t i, n = git_index_entrycount(uidx), plen = strlen(prefix);
	struct stat ist;
	int have_stamp = ipath && !stat(ipath, &ist);

	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(uidx, i);
		git_index_entry ne;
		int trust, gerr;

		if (GIT_INDEX_ENTRY_STAGE(e) != 0 || e->mode == GIT_FILEMODE_COMMIT ||
		    strncmp(e->path, prefix, plen) || git_index_get_bypath(idx, e->path + plen, 0))
			continue;
		memset(&ne, 0, sizeof(ne));
		ne.path = e->path + plen;
		ne.mode = e->mode;
		git_oid_cpy(&ne.id, &e->id);
		trust = have_stamp && !(e->flags & GIT_INDEX_ENTRY_VALID) &&
			!(e->flags_extended & (GIT_INDEX_ENTRY_SKIP_WORKTREE |
					       GIT_INDEX_ENTRY_INTENT_TO_ADD)) &&
			((int64_t)e->mtime.seconds < (int64_t)ist.st_mtim.tv_sec ||
			 ((int64_t)e->mtime.seconds == (int64_t)ist.st_mtim.tv_sec &&
			  (long)e->mtime.nanoseconds < ist.st_mtim.tv_nsec));
		if (trust) {
			ne.ctime = e->ctime;
			ne.mtime = e->mtime;
			ne.dev = e->dev;
			ne.ino = e->ino;
			ne.uid = e->uid;
			ne.gid = e->gid;
			ne.file_size = e->file_size;
		}
		gerr = git_index_add(idx, &ne);
		if (gerr < 0)
			return vcs_git_error(gerr, "cannot record %s", ne.path);
	}
	return 0;
}

/* Append `path`'s bytes (or "-" when it cannot be read) to `fp`. */
static void fingerprint_file(struct buf *fp, const char *path)
{
	struct buf c = BUF_INIT;

	buf_addf(fp, "%s\n", path);
	if (fsutil_read_file(&c, path, 16 << 20) < 0)
		buf_addstr(fp, "-\n");
	else
		buf_addf(fp, "%zu\n%s\n", c.len, c.buf);
	err_clear();
	buf_release(&c);
}

/*
 * Everything that decides whether a recorded path is ignored: the
 * .gitignore of every folder holding recorded files (their bytes, so an
 * edit within the same clock tick counts), info/exclude, the excludes file
 * and which files the user tracks (the index checksum).
 */
void statcache_ignore_fingerprint(struct buf *fp, struct checkpoints *cps, git_index *idx,
			       git_index *uidx)
{
	struct strvec dirs = STRVEC_INIT;
	struct buf p = BUF_INIT;
	size_t i;

	buf_addf(fp, "forgex ignore fingerprint 1\nprefix %s\n",
		 cps->user_prefix ? cps->user_prefix : "(none)");
	if (uidx) {
		const git_oid *sum = git_index_checksum(uidx);

		buf_addf(fp, "user index %s\n", sum ? git_oid_tostr_s(sum) : "-");
	}
	strvec_push(&dirs, "");
	vcs_index_dirs(&dirs, idx);
	for (i = 0; i < dirs.nr; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s/%s.gitignore", cps->workspace, dirs.v[i]);
		fingerprint_file(fp, p.buf);
	}
	buf_reset(&p);
	path_join(&p, cps->shadow, "info/exclude");
	fingerprint_file(fp, p.buf);
	if (cps->excludes_file)
		fingerprint_file(fp, cps->excludes_file);
	strvec_clear(&dirs);
	buf_release(&p);
}


/*
 * The ignore fingerprint goes to disk only once the index it describes is
 * durable (after shadow_batch_end()): a stamp must never claim a prune the index
 * lacks.
 */
int statcache_save_stamp(struct checkpoints *cps, const struct buf *stamp)
{
	struct buf p = BUF_INIT;
	int ret;

	if (!stamp->len)
		return 0;
	path_join(&p, cps->shadow, IGNORE_STAMP);
	ret = fsutil_write_atomic(p.buf, stamp->buf, stamp->len, 0644);
	buf_release(&p);
	return ret;
}

/* The shadow's index; a damaged one (a cache) is dropped and rebuilt. */
int statcache_open(git_index **out, struct checkpoints *cps)
{
	int gerr = git_repository_index(out, cps->repo);

	if (gerr < 0) {
		struct buf p = BUF_INIT;

		path_join(&p, cps->shadow, "index");
		unlink(p.buf);
		buf_release(&p);
		git_error_clear();
		gerr = git_repository_index(out, cps->repo);
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint index");
	return 0;
}


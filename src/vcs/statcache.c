/* The stat cache; see statcache.h. */
#include <fcntl.h>
#include <stddef.h>
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
 * data: then the capture reads only the files that changed since git last
 * looked, and the first checkpoint of a large repository costs about what
 * `git status` does. Stat data git itself would not trust is dropped (the
 * file is read again): racy entries (not older than the index file, git's
 * rule), assume-unchanged, skip-worktree and intent-to-add entries.
 */
int statcache_seed(git_index *idx, git_index *uidx, const char *prefix)
{
	int added = 0;

	const char *ipath = git_index_path(uidx);
	size_t i, n = git_index_entrycount(uidx), plen = strlen(prefix);
	struct stat ist;
	int have_stamp = ipath && !stat(ipath, &ist);

	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(uidx, i);
		git_index_entry ne;
		int trust, gerr;

		if (GIT_INDEX_ENTRY_STAGE(e) != 0 || e->mode == GIT_FILEMODE_COMMIT ||
		    strncmp(e->path, prefix, plen) || statcache_never(e->path + plen) ||
		    git_index_get_bypath(idx, e->path + plen, 0))
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
		added++;
	}
	return added;
}

/* The shadow's index; a damaged one (a cache) is dropped and rebuilt. */
int statcache_open(git_index **out, struct checkpoints *cps)
{
	int gerr = git_repository_index(out, cps->repo);

	if (gerr < 0) {
		unlinkat(cps->shadow_fd, "index", 0);
		git_error_clear();
		gerr = git_repository_index(out, cps->repo);
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint index");
	return 0;
}


void statcache_tracked(unsigned char out[GIT_OID_RAWSZ], git_index *uidx, const char *prefix)
{
	struct buf b = BUF_INIT;
	size_t i, n = git_index_entrycount(uidx), plen = strlen(prefix);
	git_oid oid;

	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(uidx, i);

		if (strncmp(e->path, prefix, plen))
			continue;
		buf_addf(&b, "%o %d ", (unsigned)e->mode, GIT_INDEX_ENTRY_STAGE(e));
		buf_add(&b, e->path + plen, strlen(e->path + plen) + 1);
	}
	memset(out, 0, GIT_OID_RAWSZ);
	if (!git_odb_hash(&oid, b.buf ? b.buf : "", b.len, GIT_OBJECT_BLOB))
		memcpy(out, oid.id, GIT_OID_RAWSZ);
	buf_release(&b);
}

void statcache_names(unsigned char out[GIT_OID_RAWSZ], const char *list, size_t len)
{
	const char **v = NULL;
	struct buf b = BUF_INIT;
	size_t n = 0, alloc = 0, i;
	const char *p;
	git_oid oid;

	for (p = list; p < list + len; p += strlen(p) + 1) {
		ALLOC_GROW(v, n + 1, alloc);
		v[n++] = p;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), vcs_strcmp_ptr);
	for (i = 0; i < n; i++)
		buf_add(&b, v[i], strlen(v[i]) + 1);
	memset(out, 0, GIT_OID_RAWSZ);
	if (!git_odb_hash(&oid, b.buf ? b.buf : "", b.len, GIT_OBJECT_BLOB))
		memcpy(out, oid.id, GIT_OID_RAWSZ);
	free(v);
	buf_release(&b);
}

int statcache_never(const char *rel)
{
	return !strcmp(rel, ".forgex") || !strncmp(rel, ".forgex/", 8);
}

/*
 * (sec, nsec) >= start; a time stamp without nanoseconds (a file system
 * with one-second stamps) is compared by the second.
 */
static int not_before(int64_t sec, long nsec, const struct timespec *start)
{
	if (!nsec)
		return sec >= (int64_t)start->tv_sec;
	return sec > (int64_t)start->tv_sec ||
	       (sec == (int64_t)start->tv_sec && nsec >= start->tv_nsec);
}

int statcache_fresh(const git_index_entry *e, const struct stat *st)
{
	return e->mtime.seconds == (int32_t)st->st_mtim.tv_sec &&
	       e->mtime.nanoseconds == (uint32_t)st->st_mtim.tv_nsec &&
	       e->ctime.seconds == (int32_t)st->st_ctim.tv_sec &&
	       e->ctime.nanoseconds == (uint32_t)st->st_ctim.tv_nsec &&
	       e->ino == (uint32_t)st->st_ino && e->uid == (uint32_t)st->st_uid &&
	       e->gid == (uint32_t)st->st_gid && e->file_size == (uint32_t)st->st_size &&
	       (e->mtime.seconds || e->mtime.nanoseconds);
}

void statcache_fill(git_index_entry *e, const struct stat *st, const struct timespec *start)
{
	e->ctime.seconds = (int32_t)st->st_ctim.tv_sec;
	e->ctime.nanoseconds = (uint32_t)st->st_ctim.tv_nsec;
	e->mtime.seconds = (int32_t)st->st_mtim.tv_sec;
	e->mtime.nanoseconds = (uint32_t)st->st_mtim.tv_nsec;
	e->dev = (uint32_t)st->st_dev;
	e->ino = (uint32_t)st->st_ino;
	e->uid = (uint32_t)st->st_uid;
	e->gid = (uint32_t)st->st_gid;
	e->file_size = (uint32_t)st->st_size;
	/*
	 * Racy: changed at or after the moment the capture began, so a
	 * change after the read could carry the same stamp. Keep no stat
	 * data (the next capture reads the file again).
	 */
	if (not_before((int64_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, start) ||
	    not_before((int64_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, start)) {
		e->mtime.seconds = e->mtime.nanoseconds = 0;
		e->ctime.seconds = e->ctime.nanoseconds = 0;
	}
}

/* ------------------------------------------------------------ stamps */

void sc_stamp_fill(struct sc_stamp *s, const struct stat *st, const struct timespec *start)
{
	memset(s, 0, sizeof(*s));
	s->trusted = 1;
	if (!st)
		return;
	s->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	s->ctime_sec = (int64_t)st->st_ctim.tv_sec;
	s->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	s->ctime_nsec = (uint32_t)st->st_ctim.tv_nsec;
	s->ino = (uint64_t)st->st_ino;
	s->dev = (uint64_t)st->st_dev;
	s->size = (uint64_t)st->st_size;
	s->mode = (uint32_t)st->st_mode;
	s->uid = (uint32_t)st->st_uid;
	s->gid = (uint32_t)st->st_gid;
	/* the racy rule of statcache_fill(): a change in this clock tick could follow the look */
	s->trusted = !not_before((int64_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, start) &&
		     !not_before((int64_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, start);
}

int sc_stamp_same(const struct sc_stamp *cached, const struct sc_stamp *now)
{
	return cached->trusted && !memcmp(cached, now, offsetof(struct sc_stamp, trusted));
}

void sc_stamp_at(struct sc_stamp *s, int dirfd, const char *name, int follow,
		 const struct timespec *start)
{
	struct stat st;

	sc_stamp_fill(s, fstatat(dirfd, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) < 0 ? NULL :
		      &st, start);
}

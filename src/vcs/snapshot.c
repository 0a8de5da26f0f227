/* Taking a snapshot of the working tree; see snapshot.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/strvec.h"
#include "vcs/odb.h"
#include "vcs/perms.h"
#include "vcs/snapshot.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"
#include "ws/ignore.h"
#include "ws/walk.h"

#define GITIGNORE_MAX ((size_t)16 << 20)

struct walk {
	struct checkpoints *cps;
	git_index *idx, *uidx;
	const char *uprefix;
	git_odb *odb;
	const struct ignore_chain *ign;	/* the rules above the workspace's own .gitignore files */
	struct ignore_chain top[2];	/* core.excludesFile, info/exclude */
	size_t *counts;			/* per depth: files, links and folders recorded below */
	size_t acounts;
	struct snapshot *snap;
	struct strvec *too_large;	/* where a file over max_file_bytes is listed (NULL: nowhere) */
	unsigned char *seen;	/* by position in idx when the walk began */
	size_t nold;
	git_index_entry *adds;	/* new or changed entries; paths owned */
	size_t adds_nr, adds_alloc;
	struct timespec start;
	struct buf scratch;
	size_t files_read;
	size_t dirs_entered;
	struct sc_build *build;	/* the record being made (snapshot_fast.c), or NULL */
};

void snapshot_release(struct snapshot *s)
{
	perm_map_release(&s->perms);
	strvec_clear(&s->empty_dirs);
	strvec_clear(&s->too_large);
	free(s->perms_header);
	s->perms_header = NULL;
	s->files = 0;
}

/* The user's index entry for workspace path `rel`, if the user tracks it. */
static const git_index_entry *tracked(struct walk *w, const char *rel)
{
	return statcache_user_entry(w->uidx, w->uprefix, rel, &w->scratch);
}

/* Whether the user tracks anything below folder `rel` ("a/b"). */
static int tracks_below(struct walk *w, const char *rel)
{
	size_t pos;

	if (!w->uidx)
		return 0;
	buf_reset(&w->scratch);
	buf_addf(&w->scratch, "%s%s/", w->uprefix, rel);
	return !git_index_find_prefix(&pos, w->uidx, w->scratch.buf);
}

/* Read the content of `name` in `dfd` (a file or link as `st` says) into `out`. */
static int read_content(struct buf *out, struct stat *st, int dfd, const char *name,
			const char *rel)
{
	int tries;

	for (tries = 0; tries < 3; tries++) {
		struct stat fst;
		int fd, ret;

		if (S_ISLNK(st->st_mode)) {
			size_t size = (size_t)st->st_size + 1 < 256 ? 256 : (size_t)st->st_size + 1;

			for (;;) {
				ssize_t n;

				buf_reset(out);
				buf_grow(out, size);
				n = readlinkat(dfd, name, out->buf, size);
				if (n < 0)
					break;
				if ((size_t)n < size) {
					buf_setlen(out, (size_t)n);
					return 0;
				}
				size *= 2;
			}
			if (errno != EINVAL && errno != ENOENT)
				return err_set_errno(FX_EOS, "cannot read link '%s'", rel);
		} else {
			fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd < 0 && errno != ELOOP && errno != ENOENT)
				return err_set_errno(FX_EOS, "cannot read '%s'", rel);
			if (fd >= 0) {
				if (fstat(fd, &fst) < 0) {
					close(fd);
					return err_set_errno(FX_EOS, "cannot read '%s'", rel);
				}
				if (S_ISREG(fst.st_mode) && fst.st_ino == st->st_ino) {
					buf_reset(out);
					ret = fsutil_read_fd(out, fd, 0);
					close(fd);
					if (ret < 0)
						return err_prefix(ret, "cannot read '%s'", rel);
					*st = fst;
					return 0;
				}
				close(fd);
			}
		}
		/* it changed type between lstat and open: look again */
		if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) < 0)
			return FX_ENOTFOUND;
		if (!S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode))
			return FX_ENOTFOUND;
	}
	return err_set(FX_ERROR, "'%s' kept changing while it was recorded", rel);
}

/* A file above this is hashed and stored as it is read, never held whole. */
#define STREAM_AT ((off_t)1 << 20)
#define CHUNK ((size_t)64 << 10)

/*
 * Stream the `st->st_size` bytes of the file open as `fd` into a new blob
 * (odb.c's streamed write; libgit2 hashes what passes): holes, found with
 * SEEK_DATA/SEEK_HOLE, are fed as zeros from a static buffer and never
 * read, so neither memory nor time grows with them. 1: the file changed
 * while it was read (the caller reads it again).
 */
static int stream_blob(git_oid *oid, struct walk *w, int fd, const struct stat *st,
		       const char *rel)
{
	static const char zeros[CHUNK];
	char *chunk = xmalloc(CHUNK);
	git_odb_stream *s = NULL;
	off_t off = 0, size = st->st_size, data, hole;
	int ret = 0, gerr;

	if (!w->cps->loose) {
		free(chunk);
		return err_set(FX_ERROR, "cannot store '%s': no object store", rel);
	}
	vcs_loose_allow_stream(w->cps->loose, 1);
	gerr = git_odb_open_wstream(&s, w->odb, (git_object_size_t)size, GIT_OBJECT_BLOB);
	vcs_loose_allow_stream(w->cps->loose, 0);

	while (!gerr && !ret && off < size) {
		data = lseek(fd, off, SEEK_DATA);
		if (data < 0)
			data = errno == ENXIO ? size : off;	/* a hole to the end; or no SEEK_DATA */
		if (data > size)
			data = size;
		while (!gerr && off < data) {
			size_t n = (size_t)(data - off) < CHUNK ? (size_t)(data - off) : CHUNK;

			gerr = git_odb_stream_write(s, zeros, n);
			off += (off_t)n;
		}
		hole = off < size ? lseek(fd, off, SEEK_HOLE) : size;
		if (hole <= off || hole > size)
			hole = size;
		while (!gerr && !ret && off < hole) {
			size_t want = (size_t)(hole - off) < CHUNK ? (size_t)(hole - off) : CHUNK;
			ssize_t n = pread(fd, chunk, want, off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				ret = err_set_errno(FX_EOS, "cannot read '%s'", rel);
			else if (n == 0)
				ret = 1;	/* shorter than it was */
			else if (!(gerr = git_odb_stream_write(s, chunk, (size_t)n)))
				off += n;
		}
	}
	if (!gerr && !ret)
		gerr = git_odb_stream_finalize_write(oid, s);
	if (gerr < 0 && !ret)
		ret = vcs_git_error(gerr, "cannot store '%s'", rel);
	git_odb_stream_free(s);
	free(chunk);
	return ret;
}

/*
 * Store the regular file `name` (`rel`) of `dfd` as a blob without holding
 * it in memory; `*st` becomes its stat data. FX_ENOTFOUND: it is no longer
 * a file (the caller looks again).
 */
static int store_streamed(git_oid *oid, struct walk *w, struct stat *st, int dfd, const char *name,
			  const char *rel)
{
	int tries;

	for (tries = 0; tries < 3; tries++) {
		struct stat a, b;
		int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), ret;

		if (fd < 0 && errno != ELOOP && errno != ENOENT)
			return err_set_errno(FX_EOS, "cannot read '%s'", rel);
		if (fd < 0)
			return FX_ENOTFOUND;
		if (fstat(fd, &a) < 0) {
			close(fd);
			return err_set_errno(FX_EOS, "cannot read '%s'", rel);
		}
		if (!S_ISREG(a.st_mode) || a.st_ino != st->st_ino) {
			close(fd);
			return FX_ENOTFOUND;
		}
		ret = stream_blob(oid, w, fd, &a, rel);
		if (!ret && fstat(fd, &b) < 0)
			ret = err_set_errno(FX_EOS, "cannot read '%s'", rel);
		close(fd);
		if (ret < 0)
			return ret;
		/* the same size and stamps after the read as before: what was read is the file */
		if (!ret && b.st_size == a.st_size && b.st_mtim.tv_sec == a.st_mtim.tv_sec &&
		    b.st_mtim.tv_nsec == a.st_mtim.tv_nsec && b.st_ctim.tv_sec == a.st_ctim.tv_sec &&
		    b.st_ctim.tv_nsec == a.st_ctim.tv_nsec) {
			*st = b;
			return 0;
		}
		*st = b;
	}
	return err_set(FX_ERROR, "'%s' kept changing while it was recorded", rel);
}

int snapshot_store(git_oid *oid, struct checkpoints *cps, git_odb *odb, struct stat *st, int dfd,
		   const char *name, const char *rel, const git_oid *known)
{
	struct buf content = BUF_INIT;
	struct walk w;
	int ret, gerr;

	memset(&w, 0, sizeof(w));
	w.cps = cps;
	w.odb = odb;
	if (S_ISREG(st->st_mode) && st->st_size > STREAM_AT)
		return store_streamed(oid, &w, st, dfd, name, rel);
	if ((ret = read_content(&content, st, dfd, name, rel)) < 0) {
		buf_release(&content);
		return ret;
	}
	gerr = git_odb_hash(oid, content.buf, content.len, GIT_OBJECT_BLOB);
	if (!gerr && !(known && git_oid_equal(known, oid)))
		gerr = git_odb_write(oid, odb, content.buf, content.len, GIT_OBJECT_BLOB);
	buf_release(&content);
	return gerr < 0 ? vcs_git_error(gerr, "cannot store '%s'", rel) : 0;
}

static void add_perms(struct walk *w, const char *key, const struct stat *st)
{
	if (w->snap)
		perm_map_add(&w->snap->perms, key, (unsigned)(st->st_mode & 0777));
}

/*
 * Record file or link `name` (`rel`) of folder `dfd`. FX_ENOTFOUND: it
 * vanished; 1: it is larger than max_file_bytes (listed, not stored).
 */
static int record_file(struct walk *w, int dfd, const char *name, const char *rel, struct stat *st)
{
	struct buf content = BUF_INIT;
	const git_index_entry *e = NULL;
	git_index_entry ne;
	git_oid oid;
	uint32_t mode;
	size_t pos;
	int ret, gerr;

	/*
	 * Too large before it is marked seen: an entry of the cache from when
	 * it was smaller leaves the tree, so no stale content stands for it.
	 */
	if (S_ISREG(st->st_mode) && (uint64_t)st->st_size > w->cps->max_file_bytes) {
		if (w->too_large)
			strvec_pushf(w->too_large, "%llu %s", (unsigned long long)st->st_size, rel);
		return 1;
	}
	if (!git_index_find(&pos, w->idx, rel)) {
		e = git_index_get_byindex(w->idx, pos);
		if (pos < w->nold)
			w->seen[pos] = 1;
	}
	mode = S_ISLNK(st->st_mode) ? GIT_FILEMODE_LINK :
	       (st->st_mode & 0100) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
	if (e && e->mode == mode && statcache_fresh(e, st)) {
		/* trusted: libgit2 need not look at it again when it writes the index */
		((git_index_entry *)e)->flags_extended |= GIT_INDEX_ENTRY_UPTODATE;
		if (mode != GIT_FILEMODE_LINK)
			add_perms(w, rel, st);
		return 0;
	}
	if (S_ISREG(st->st_mode) && st->st_size > STREAM_AT) {
		if ((ret = store_streamed(&oid, w, st, dfd, name, rel)) < 0)
			goto out;
		if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size > w->cps->max_file_bytes)
			return FX_ENOTFOUND;	/* it changed on the way: not recorded this time */
		gerr = 0;
	} else {
		if ((ret = read_content(&content, st, dfd, name, rel)) < 0)
			goto out;
		gerr = git_odb_hash(&oid, content.buf, content.len, GIT_OBJECT_BLOB);
		/* git_odb_write() itself asks every backend whether the object exists */
		if (!gerr && !(e && git_oid_equal(&e->id, &oid)))
			gerr = git_odb_write(&oid, w->odb, content.buf, content.len,
					     GIT_OBJECT_BLOB);
	}
	mode = S_ISLNK(st->st_mode) ? GIT_FILEMODE_LINK :
	       (st->st_mode & 0100) ? GIT_FILEMODE_BLOB_EXECUTABLE : GIT_FILEMODE_BLOB;
	w->files_read++;
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot store '%s'", rel);
		goto out;
	}
	memset(&ne, 0, sizeof(ne));
	ne.mode = mode;
	git_oid_cpy(&ne.id, &oid);
	statcache_fill(&ne, st, &w->start);
	ne.flags_extended = GIT_INDEX_ENTRY_UPTODATE;
	ne.path = xstrdup(rel);
	ALLOC_GROW(w->adds, w->adds_nr + 1, w->adds_alloc);
	w->adds[w->adds_nr++] = ne;
	if (mode != GIT_FILEMODE_LINK)
		add_perms(w, rel, st);
out:
	buf_release(&content);
	return ret;
}

/*
 * An entry of the walk (ws/walk.h). What the user tracks is recorded even
 * when ignored; an ignored folder is entered only when the user tracks
 * something below it (its entries then come `ignored`: only tracked ones
 * count). A submodule (a gitlink of the user's index) is left alone, and
 * so is a nested repository (the walk does not enter a folder holding
 * .git).
 */
static int snapshot_visit(void *arg, const struct ws_entry *e)
{
	struct walk *w = arg;
	const git_index_entry *u = tracked(w, e->path);
	struct stat st;
	int ret;

	if (w->build)
		sc_build_entry(w->build, e->depth, e->name, e->type);
	if (u && u->mode == GIT_FILEMODE_COMMIT)
		return WS_WALK_CONTINUE;
	if (e->type == DT_DIR) {
		if (e->ignored && !tracks_below(w, e->path))
			return WS_WALK_CONTINUE;
		ALLOC_GROW(w->counts, e->depth + 2, w->acounts);
		w->counts[e->depth + 1] = 0;
		if (w->build)
			sc_build_dir(w->build, e->dirfd, e->name, e->path, e->st, e->depth + 1,
				     &w->start);
		return WS_WALK_ENTER;
	}
	if (!u && e->ignored)
		return WS_WALK_CONTINUE;
	st = *e->st;
	ret = record_file(w, e->dirfd, e->name, e->path, &st);
	if (ret >= 0 && w->build)
		sc_build_file(w->build, e->depth, e->path, &st, ret > 0);
	if (ret > 0)
		ret = 0;	/* too large: listed, and its folder is not empty */
	if (ret == FX_ENOTFOUND) {
		err_clear();	/* vanished while read */
		return WS_WALK_CONTINUE;
	}
	if (ret < 0)
		return ret;
	ALLOC_GROW(w->counts, e->depth + 1, w->acounts);
	w->counts[e->depth]++;
	return WS_WALK_CONTINUE;
}

/* A folder read: its permission bits when it holds anything recorded; else an empty folder. */
static int snapshot_leave(void *arg, const struct ws_entry *e)
{
	struct walk *w = arg;
	size_t c = w->counts[e->depth + 1];

	w->dirs_entered++;
	if (w->build)
		sc_build_left(w->build, e->depth + 1);
	if (c) {
		char *key = xstrfmt("%s/", e->path);

		add_perms(w, key, e->st);
		free(key);
	} else if (!e->ignored && w->snap) {
		char *key = xstrfmt("%s/", e->path);

		strvec_push(&w->snap->empty_dirs, e->path);
		add_perms(w, key, e->st);
		free(key);
		c = 1;
	}
	w->counts[e->depth] += c;
	return WS_WALK_CONTINUE;
}

/* Put the rules of a file for the whole work tree below the chain (the lowest first). */
static void push_top(struct walk *w, struct ignore_rules *rules)
{
	struct ignore_chain *node = &w->top[w->top[0].rules ? 1 : 0];

	if (!rules)
		return;
	node->rules = rules;
	node->next = w->ign;
	w->ign = node;
}

/* core.excludesFile and info/exclude, the lowest rules of the chain. */
static int push_global_lists(struct walk *w)
{
	struct checkpoints *cps = w->cps;
	struct ignore_rules *rules = NULL;
	struct buf text = BUF_INIT;
	const char *common;
	size_t wlen = strlen(cps->workspace);
	int ret = 0;

	if (!cps->user)
		return 0;
	if (cps->excludes_file) {
		/* the user's own config names it: it may be anywhere, but must be a file */
		if (ignore_rules_load_top(&rules, AT_FDCWD, cps->excludes_file, w->uprefix) < 0)
			err_clear();
		push_top(w, rules);
	}
	common = git_repository_commondir(cps->user);
	if (!strncmp(common, cps->workspace, wlen) && common[wlen] == '/') {
		/* inside the workspace: beneath it, no link followed */
		char *rel = xstrfmt("%sinfo/exclude", common + wlen + 1);

		ret = vcs_read_beneath(&text, cps->root_fd, rel, GITIGNORE_MAX, cps->workspace);
		free(rel);
	} else {
		int cfd = open(common, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		char *shown = xstrndup(common, strlen(common) - (strlen(common) &&
								 common[strlen(common) - 1] == '/'));

		if (cfd < 0) {
			ret = FX_ENOTFOUND;
		} else {
			ret = vcs_read_beneath(&text, cfd, "info/exclude", GITIGNORE_MAX, shown);
			close(cfd);
		}
		free(shown);
	}
	if (ret == FX_ENOTFOUND) {
		err_clear();
		ret = 0;
	} else if (!ret) {
		push_top(w, ignore_rules_parse_top(w->uprefix, text.buf, text.len));
	}
	buf_release(&text);
	return ret;
}

/*
 * Save the cache. libgit2 writes an index entry through an 8 KiB buffer,
 * so an entry whose path is longer cannot be saved: such entries (folders
 * nested beyond any sane depth) stay in memory for this operation and are
 * simply read again by the next capture.
 */
#define INDEX_PATH_MAX 8000

static int save_index(git_index *idx)
{
	git_index_entry *longs = NULL;
	size_t nr = 0, alloc = 0, i, n = git_index_entrycount(idx);
	int gerr = 0, ret = 0;

	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);

		if (strlen(e->path) > INDEX_PATH_MAX) {
			ALLOC_GROW(longs, nr + 1, alloc);
			longs[nr] = *e;
			longs[nr].path = xstrdup(e->path);
			nr++;
		}
	}
	for (i = 0; i < nr && !gerr; i++)
		gerr = git_index_remove(idx, longs[i].path, 0);
	if (!gerr)
		gerr = git_index_write(idx);
	if (gerr < 0)
		ret = vcs_git_error(gerr, "cannot save the checkpoint index");
	for (i = 0; i < nr; i++) {
		if (!ret && (gerr = git_index_add(idx, &longs[i])) < 0)
			ret = vcs_git_error(gerr, "cannot record '%.100s...'", longs[i].path);
		free((char *)longs[i].path);
	}
	free(longs);
	return ret;
}

/*
 * Every blob a capture puts in the index was hashed by it or by an earlier
 * one whose batch completed (a batch cut short drops the index), and every
 * entry seeded from the user's index names an object of the user's: with
 * libgit2's strict checks on, each git_index_add() and each tree entry
 * reads its object back (git_odb_read_header(), a whole inflate in
 * odb.c) — most of a first checkpoint outside a repository, and a pack
 * lookup per file when seeding. The checks are off while a capture runs.
 */
static void strict_checks(int on)
{
	git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, on);
}

static int index_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const git_index_entry *)a)->path, ((const git_index_entry *)b)->path);
}

int snapshot_capture(git_oid *out, struct snapshot *snap, struct checkpoints *cps, git_index *idx)
{
	struct walk w;
	struct sc_build build;
	struct strvec gone = STRVEC_INIT;
	struct ws_walk walk = WS_WALK_INIT;
	size_t i;
	int ret = 0, gerr, dirty = 0;

	memset(&w, 0, sizeof(w));
	buf_init(&w.scratch, 0);
	w.cps = cps;
	w.idx = idx;
	w.snap = snap;
	w.too_large = snap ? &snap->too_large : &cps->too_large;
	if (!snap)
		strvec_clear(&cps->too_large);
	w.uprefix = cps->user_prefix ? cps->user_prefix : "";
	clock_gettime(CLOCK_REALTIME_COARSE, &w.start);
	memset(&build, 0, sizeof(build));
	if (snap) {
		/* the stamps of what the rules are read from, before they are read */
		sc_build_begin(&build, cps, &w.start);
		w.build = &build;
	}
	strict_checks(0);
	if (git_index_read(idx, 0) < 0) {
		/* a damaged cache: start again from nothing */
		git_error_clear();
		if ((gerr = git_index_clear(idx)) < 0) {
			ret = vcs_git_error(gerr, "cannot reset the checkpoint index");
			goto out;
		}
		dirty = 1;
	}
	if ((gerr = git_repository_odb(&w.odb, cps->repo)) < 0) {
		ret = vcs_git_error(gerr, "cannot open the checkpoint objects");
		goto out;
	}
	if (cps->user) {
		/* a FIFO or device planted as the user's index would block the read */
		char *ipath = xstrfmt("%sindex", git_repository_path(cps->user));
		struct stat ist;
		int bad = !stat(ipath, &ist) && !S_ISREG(ist.st_mode);

		if (bad)
			ret = err_set(FX_EDENIED, "%s is not a regular file; not reading it", ipath);
		free(ipath);
		if (bad)
			goto out;
		gerr = git_repository_index(&w.uidx, cps->user);
		if (!gerr)
			gerr = git_index_read(w.uidx, 0);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read the git index of %s", cps->workspace);
			goto out;
		}
		if (w.build)
			statcache_tracked(build.tracked, w.uidx, w.uprefix);
		if ((ret = statcache_seed(idx, w.uidx, w.uprefix)) < 0)
			goto out;
		dirty |= ret > 0;
		ret = 0;
	}
	if ((ret = push_global_lists(&w)) < 0)
		goto out;
	w.nold = git_index_entrycount(idx);
	w.seen = xcalloc(w.nold ? w.nold : 1, 1);
	/*
	 * Every type but special files, each lstat'ed (the stat cache needs it),
	 * ignored entries too (tracked ones are recorded), never .git nor
	 * .forgex at the top; anything that cannot be read fails the capture.
	 */
	walk.flags = WS_WALK_IGNORES | WS_WALK_REPORT_IGNORED | WS_WALK_LINKS | WS_WALK_STAT |
		     WS_WALK_SKIP_FORGEX | WS_WALK_NO_NESTED | WS_WALK_STRICT;
	walk.visit = snapshot_visit;
	walk.leave = snapshot_leave;
	walk.arg = &w;
	walk.chain = w.ign;
	ALLOC_GROW(w.counts, 1, w.acounts);
	w.counts[0] = 0;
	if ((ret = ws_walk_run(&walk, cps->root_fd, "")) < 0) {
		err_prefix(ret, "cannot record the working tree of %s", cps->workspace);
		goto out;
	}
	/* what is gone (or no longer recorded) leaves the cache ... */
	for (i = 0; i < w.nold; i++)
		if (!w.seen[i])
			strvec_push(&gone, git_index_get_byindex(idx, i)->path);
	for (i = 0; i < gone.nr; i++)
		if ((gerr = git_index_remove(idx, gone.v[i], 0)) < 0) {
			ret = vcs_git_error(gerr, "cannot update the checkpoint index");
			goto out;
		}
	/* ... what is new or changed goes in, in order (appends, not inserts) */
	if (w.adds_nr)
		qsort(w.adds, w.adds_nr, sizeof(*w.adds), index_entry_cmp);
	for (i = 0; i < w.adds_nr; i++)
		if ((gerr = git_index_add(idx, &w.adds[i])) < 0) {
			ret = vcs_git_error(gerr, "cannot record '%s'", w.adds[i].path);
			goto out;
		}
	/*
	 * libgit2 reuses the trees of folders nothing changed in (the index's
	 * tree cache), so only the trees on a changed path are built.
	 */
	if ((gerr = git_index_write_tree(out, idx)) < 0) {
		ret = vcs_git_error(gerr, "cannot write the checkpoint tree");
		goto out;
	}
	/* nothing new, changed or gone: the cache on disk is already this one */
	dirty |= w.adds_nr || gone.nr;
	if (dirty && (ret = save_index(idx)) < 0)
		goto out;
	cps->index_written |= dirty;
	cps->files_read = w.files_read;
	cps->dirs_listed = w.dirs_entered + 1;
	if (snap) {
		snap->files = git_index_entrycount(idx);
		perm_map_sort(&snap->perms);
		snap->perms.known = 1;
		if (snap->empty_dirs.nr)
			qsort(snap->empty_dirs.v, snap->empty_dirs.nr, sizeof(char *),
			      vcs_strcmp_ptr);
		free(snap->perms_header);
		snap->perms_header = perm_map_format(&snap->perms, idx);
		sc_build_finish(&build, cps, idx, snap, out, &w.start);
	}
out:
	sc_build_release(&build);
	free(w.counts);
	for (i = 0; i < w.adds_nr; i++)
		free((char *)w.adds[i].path);
	free(w.adds);
	free(w.seen);
	strvec_clear(&gone);
	ignore_rules_free((struct ignore_rules *)w.top[0].rules);
	ignore_rules_free((struct ignore_rules *)w.top[1].rules);
	buf_release(&w.scratch);
	git_index_free(w.uidx);
	git_odb_free(w.odb);
	strict_checks(1);
	return ret;
}

int snapshot_add_path(struct snapshot *snap, struct checkpoints *cps, git_index *idx,
		      const char *path)
{
	struct walk w;
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	struct stat st;
	int dfd = -1, ret, gerr;

	memset(&w, 0, sizeof(w));
	buf_init(&w.scratch, 0);
	w.cps = cps;
	w.idx = idx;
	w.snap = snap;
	w.too_large = snap ? &snap->too_large : NULL;
	clock_gettime(CLOCK_REALTIME_COARSE, &w.start);
	if ((gerr = git_repository_odb(&w.odb, cps->repo)) < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint objects");
	if (slash) {
		char *dir = xstrndup(path, (size_t)(slash - path));

		ret = vcs_openat_beneath(&dfd, cps->root_fd, dir, O_RDONLY | O_DIRECTORY,
					 cps->workspace);
		free(dir);
	} else {
		dfd = dup(cps->root_fd);
		ret = dfd < 0 ? err_set_errno(FX_EOS, "dup") : 0;
	}
	if (ret < 0)
		goto out;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))) {
		ret = err_set(FX_ENOTFOUND, "'%s' is not a file any more", path);
		goto out;
	}
	if ((ret = record_file(&w, dfd, base, path, &st)) < 0)
		goto out;
	if (ret > 0) {
		/* the restore would overwrite bytes no checkpoint holds */
		ret = err_set(FX_ELIMIT, "'%s' (%llu bytes) is larger than [checkpoints] "
			      "max_file_bytes (%llu) and cannot be kept in the backup; not "
			      "restoring over it", path, (unsigned long long)st.st_size,
			      (unsigned long long)cps->max_file_bytes);
		goto out;
	}
	strict_checks(0);
	if (w.adds_nr && (gerr = git_index_add(idx, &w.adds[0])) < 0)
		ret = vcs_git_error(gerr, "cannot record '%s'", path);
	strict_checks(1);
	if (snap) {
		perm_map_sort(&snap->perms);
		free(snap->perms_header);	/* the map has a new entry */
		snap->perms_header = NULL;
	}
out:
	if (dfd >= 0)
		close(dfd);
	if (w.adds_nr)
		free((char *)w.adds[0].path);
	free(w.adds);
	buf_release(&w.scratch);
	git_odb_free(w.odb);
	return ret;
}

int checkpoint__capture_tree(git_oid *out, size_t *files, struct checkpoints *cps)
{
	struct snapshot snap = SNAPSHOT_INIT;
	git_index *idx = NULL;
	size_t i;
	int ret;

	if ((ret = shadow_batch_begin(cps)) < 0)
		return ret;
	ret = snapshot_take(out, &snap, cps, &idx);
	if (shadow_batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	if (!ret && files)
		*files = snap.files;
	/* what was left out for its size, for checkpoint_too_large() (forgex diff names them) */
	strvec_clear(&cps->too_large);
	for (i = 0; !ret && i < snap.too_large.nr; i++)
		strvec_push(&cps->too_large, snap.too_large.v[i]);
	snapshot_release(&snap);
	git_index_free(idx);
	return ret;
}

/* ------------------------------------------------------- empty folders */

static int load_list(struct strvec *out, const git_commit *c, const char *name, const char *what);

char *snapshot_format_dirs(const struct strvec *dirs)
{
	struct buf b = BUF_INIT;
	size_t i;

	if (!dirs->nr)
		return xstrdup("");
	buf_addstr(&b, "1");
	for (i = 0; i < dirs->nr; i++) {
		const char *p;

		buf_addch(&b, '\n');
		for (p = dirs->v[i]; *p; p++) {
			if (*p == '\\')
				buf_addstr(&b, "\\\\");
			else if (*p == '\n')
				buf_addstr(&b, "\\n");
			else
				buf_addch(&b, *p);
		}
	}
	return buf_detach(&b, NULL);
}

int snapshot_load_dirs(struct strvec *out, const git_commit *c)
{
	return load_list(out, c, EMPTY_DIRS_HEADER, "folders");
}

int snapshot_load_too_large(struct strvec *out, const git_commit *c)
{
	return load_list(out, c, TOO_LARGE_HEADER, "too large files");
}

/* Header `name` of `c` in snapshot_format_dirs()'s format; `what` names it in messages. */
static int load_list(struct strvec *out, const git_commit *c, const char *name, const char *what)
{
	git_buf hv = GIT_BUF_INIT;
	const char *p, *end;
	int gerr = git_commit_header_field(&hv, c, name);

	if (gerr == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the %s of checkpoint %s", what,
				     git_oid_tostr_s(git_commit_id(c)));
	p = hv.ptr;
	end = hv.ptr + hv.size;
	if (hv.size < 1 || p[0] != '1' || (hv.size > 1 && p[1] != '\n')) {
		git_buf_dispose(&hv);
		return err_set(FX_EPARSE, "checkpoint %s has a damaged %s header",
			       git_oid_tostr_s(git_commit_id(c)), name);
	}
	p++;
	while (p < end && *p == '\n') {
		struct buf path = BUF_INIT;

		for (p++; p < end && *p != '\n'; p++) {
			if (*p == '\\' && p + 1 < end && (p[1] == '\\' || p[1] == 'n')) {
				buf_addch(&path, p[1] == 'n' ? '\n' : '\\');
				p++;
			} else {
				buf_addch(&path, *p);
			}
		}
		if (path.len)
			strvec_push(out, path.buf);
		buf_release(&path);
	}
	git_buf_dispose(&hv);
	return 0;
}

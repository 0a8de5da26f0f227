/*
 * Snapshots the short way, from the record of the last capture (the stat
 * cache of statcache.h), and that record's making; see snapshot.h.
 *
 * Why the short way is the same snapshot as the long one: what a capture
 * records depends on the entries of each folder it reads, the ignore rules
 * (each folder's .gitignore, info/exclude, core.excludesFile), the user's
 * index (what is tracked) and the bytes of each recorded file. A folder's
 * stamp (mtime, ctime, inode, size, mode) changes whenever an entry is
 * added to it, removed or renamed in it, or replaced (a file by a folder or
 * a link): when every folder read last time has its stamp, the entries are
 * the ones recorded. The rules' files and the user's index have stamps of
 * their own; each file's stamp says whether its bytes can have changed.
 * A stamp taken of something that changed at or after the start of the
 * capture is never trusted (git's racy rule), so nothing that changes in
 * the clock tick of a look hides behind an equal stamp. Anything else the
 * short way cannot vouch for (a folder, rule, mode or type changed, a file
 * grown too large, a tree deeper than FAST_DEPTH) sends the capture the
 * long way, which then writes the record afresh.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/strvec.h"
#include "vcs/snapshot.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

/* Folders deeper than this are always taken the long way (it keeps every descriptor above). */
#define FAST_DEPTH 64

/* --------------------------------------------------------------- inputs */

/*
 * The stamps of the inputs every rule depends on (the user's index,
 * info/exclude, core.excludesFile; stat(), as they are read) and the key
 * of the rest.
 */
static void stamp_inputs(struct sc_stamp out[3], char **key, struct checkpoints *cps,
			 const struct timespec *start)
{
	char *uindex = NULL, *exclude = NULL;

	if (cps->user) {
		uindex = xstrfmt("%sindex", git_repository_path(cps->user));
		exclude = xstrfmt("%sinfo/exclude", git_repository_commondir(cps->user));
	}
	sc_stamp_fill(&out[0], NULL, start);
	sc_stamp_fill(&out[1], NULL, start);
	sc_stamp_fill(&out[2], NULL, start);
	if (uindex)
		sc_stamp_at(&out[0], AT_FDCWD, uindex, 1, start);
	if (exclude)
		sc_stamp_at(&out[1], AT_FDCWD, exclude, 1, start);
	if (cps->user && cps->excludes_file)
		sc_stamp_at(&out[2], AT_FDCWD, cps->excludes_file, 1, start);
	*key = statcache_key(cps, uindex, exclude);
	free(uindex);
	free(exclude);
}

/* ------------------------------------------------------ the short way */

struct fast {
	struct checkpoints *cps;
	struct statcache sc;
	struct timespec start;
	uint32_t *changed;	/* files whose stamp changed, in folder order */
	uint32_t *changed_dir;
	size_t nchanged, achanged, adir;
	uint32_t *relisted;	/* folders listed again: a new stamp, the same entries */
	size_t nrelisted, arelisted;
	int fd[FAST_DEPTH + 1];
	size_t dir[FAST_DEPTH + 1];
	size_t top;
};

static const char *dir_path(const struct statcache *sc, const struct sc_dir *d)
{
	return sc->namep + d->path;
}

static const char *file_name(const struct statcache *sc, const struct sc_file *f)
{
	return sc->namep + f->name;
}

static void pop_to(struct fast *f, size_t level)
{
	while (f->top > level) {
		f->top--;
		if (f->fd[f->top] != f->cps->root_fd)
			close(f->fd[f->top]);
	}
}

/*
 * Whether the entries of folder `fd` (the top when `top`) are those of
 * `d`: listed as the long way's walk sees them (no ".", "..", ".git" nor
 * ".forgex" at the top; files, folders and links only). A ".git" below the
 * top makes it a nested repository: not the same.
 */
static int same_entries(int fd, const struct sc_dir *d, int top)
{
	struct buf list = BUF_INIT;
	unsigned char now[GIT_OID_RAWSZ];
	struct dirent *de;
	DIR *dir;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), same = 1;

	if (dfd < 0)
		return 0;
	if (!(dir = fdopendir(dfd))) {
		close(dfd);
		return 0;
	}
	while ((de = readdir(dir))) {
		const char *n = de->d_name;
		unsigned char t = de->d_type;
		struct stat st;

		if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])))
			continue;
		if (!strcmp(n, ".git")) {
			if (top)
				continue;
			same = 0;
			break;
		}
		if (top && !strcmp(n, ".forgex"))
			continue;
		if (t == DT_UNKNOWN) {
			if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
			    S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
		}
		if (t != DT_REG && t != DT_DIR && t != DT_LNK)
			continue;
		buf_addch(&list, t == DT_REG ? 'f' : t == DT_DIR ? 'd' : 'l');
		buf_addch(&list, ' ');
		buf_add(&list, n, strlen(n) + 1);
	}
	closedir(dir);
	if (same) {
		statcache_names(now, list.buf ? list.buf : "", list.len);
		same = !memcmp(now, d->names, sizeof(now));
	}
	buf_release(&list);
	return same;
}

/*
 * Check folder `i`: in the first pass that it holds what was recorded (its
 * stamp, or else the same entries, and its .gitignore's stamp), in the
 * second which of its files changed (noted). 0 when it is as recorded, 1
 * when only the long way can tell.
 */
static int check_dir(struct fast *f, size_t i, int pass)
{
	struct sc_dir *d = &f->sc.dirs[i];
	const char *path = dir_path(&f->sc, d), *slash = strrchr(path, '/'), *base;
	size_t plen = slash ? (size_t)(slash - path) : 0, k;
	struct sc_stamp now;
	struct stat st;
	int fd, pfd;

	if (!d->path_len) {
		if (i || f->top)
			return 1;
		if (fstat(f->cps->root_fd, &st) < 0)
			return 1;
		f->fd[0] = f->cps->root_fd;
		f->dir[0] = 0;
		f->top = 1;
		fd = f->cps->root_fd;
	} else {
		/* its parent is on the stack (a folder sorts before what it holds) */
		while (f->top) {
			const struct sc_dir *p = &f->sc.dirs[f->dir[f->top - 1]];

			if (p->path_len == plen && !memcmp(dir_path(&f->sc, p), path, plen))
				break;
			pop_to(f, f->top - 1);
		}
		if (!f->top || f->top > FAST_DEPTH)
			return 1;
		pfd = f->fd[f->top - 1];
		base = slash ? slash + 1 : path;
		if (d->flags & SC_DIR_NESTED) {
			/* a nested repository: left alone while it stays one (its .git shows in its stamp) */
			if (pass == 2)
				return 0;
			sc_stamp_at(&now, pfd, base, 0, &f->start);
			return !sc_stamp_same(&d->st, &now);
		}
		fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return 1;
		f->fd[f->top] = fd;
		f->dir[f->top] = i;
		f->top++;
		if (pass == 1 && fstat(fd, &st) < 0)
			return 1;
	}
	if (pass == 1) {
		sc_stamp_fill(&now, &st, &f->start);
		if (!sc_stamp_same(&d->st, &now)) {
			/*
			 * Something was added, removed or renamed in it since: when
			 * its entries are still the same ones (a file replaced by a
			 * rename, as editors and forgex write; one made and removed)
			 * nothing else needs reading. Its new stamp, taken before the
			 * listing, is kept.
			 */
			if (!same_entries(fd, d, !d->path_len))
				return 1;
			d->st = now;
			ALLOC_GROW(f->relisted, f->nrelisted + 1, f->arelisted);
			f->relisted[f->nrelisted++] = (uint32_t)i;
			f->cps->dirs_listed++;
		}
		if (d->ign.mode) {
			/* a .gitignore that was there: its rules are those read (a new one changes the entries) */
			sc_stamp_at(&now, fd, ".gitignore", 0, &f->start);
			if (!sc_stamp_same(&d->ign, &now))
				return 1;
		}
		return 0;
	}
	for (k = d->first; k < (size_t)d->first + d->nfiles; k++) {
		const struct sc_file *sf = &f->sc.files[k];

		if (fstatat(fd, file_name(&f->sc, sf), &st, AT_SYMLINK_NOFOLLOW) < 0)
			return 1;
		sc_stamp_fill(&now, &st, &f->start);
		if (sc_stamp_same(&sf->st, &now))
			continue;
		/* changed bytes only: a new type, mode or a file grown too large is the long way's */
		if (!sf->gitmode || now.mode != sf->st.mode ||
		    (S_ISREG(st.st_mode) && (uint64_t)st.st_size > f->cps->max_file_bytes))
			return 1;
		ALLOC_GROW(f->changed, f->nchanged + 1, f->achanged);
		ALLOC_GROW(f->changed_dir, f->nchanged + 1, f->adir);
		f->changed[f->nchanged] = (uint32_t)k;
		f->changed_dir[f->nchanged] = (uint32_t)i;
		f->nchanged++;
	}
	return 0;
}

/* Read the changed files, store their blobs, note the tree updates. 1: the long way. */
static int read_changed(struct fast *f, git_odb *odb, git_tree_update **ups, size_t *nups)
{
	struct buf rel = BUF_INIT;
	size_t i, aups = 0;
	uint32_t open_dir = UINT32_MAX;
	int dfd = -1, ret = 0;

	for (i = 0; i < f->nchanged && !ret; i++) {
		struct sc_file *sf = &f->sc.files[f->changed[i]];
		const struct sc_dir *d = &f->sc.dirs[f->changed_dir[i]];
		const char *name = file_name(&f->sc, sf);
		struct stat st;
		git_oid oid, old;

		if (f->changed_dir[i] != open_dir) {
			if (dfd >= 0 && dfd != f->cps->root_fd)
				close(dfd);
			dfd = -1;
			if (!d->path_len)
				dfd = f->cps->root_fd;
			else if (vcs_openat_beneath(&dfd, f->cps->root_fd, dir_path(&f->sc, d),
						      O_RDONLY | O_DIRECTORY, f->cps->workspace) < 0)
				ret = 1;
			open_dir = f->changed_dir[i];
			if (ret)
				break;
		}
		buf_reset(&rel);
		if (d->path_len) {
			buf_add(&rel, dir_path(&f->sc, d), d->path_len);
			buf_addch(&rel, '/');
		}
		buf_addstr(&rel, name);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = 1;
			break;
		}
		git_oid_fromraw(&old, sf->oid);
		if (snapshot_store(&oid, f->cps, odb, &st, dfd, name, rel.buf, &old) < 0 ||
		    (uint32_t)st.st_mode != sf->st.mode ||
		    (S_ISREG(st.st_mode) && (uint64_t)st.st_size > f->cps->max_file_bytes)) {
			ret = 1;
			break;
		}
		f->cps->files_read++;
		sc_stamp_fill(&sf->st, &st, &f->start);
		if (git_oid_equal(&oid, &old))
			continue;
		memcpy(sf->oid, oid.id, GIT_OID_RAWSZ);
		ALLOC_GROW(*ups, *nups + 1, aups);
		memset(&(*ups)[*nups], 0, sizeof(**ups));
		(*ups)[*nups].action = GIT_TREE_UPDATE_UPSERT;
		git_oid_cpy(&(*ups)[*nups].id, &oid);
		(*ups)[*nups].filemode = (git_filemode_t)sf->gitmode;
		(*ups)[*nups].path = xstrdup(rel.buf);
		(*nups)++;
	}
	if (dfd >= 0 && dfd != f->cps->root_fd)
		close(dfd);
	buf_release(&rel);
	return ret;
}

/*
 * Whether the user's index (whose stamp is now `st`) tracks what it did
 * when `sc` was made. Read as snapshot_capture() reads it: never a FIFO
 * or device.
 */
static int tracks_the_same(const struct statcache *sc, struct checkpoints *cps,
			   const struct sc_stamp *st)
{
	unsigned char now[GIT_OID_RAWSZ];
	git_index *uidx = NULL;
	int same;

	if (!cps->user || !S_ISREG(st->mode) || git_repository_index(&uidx, cps->user) < 0)
		return 0;
	/* the repository keeps the index it read first: read it again if the file changed */
	if (git_index_read(uidx, 0) < 0) {
		git_index_free(uidx);
		return 0;
	}
	statcache_tracked(now, uidx, cps->user_prefix ? cps->user_prefix : "");
	same = !memcmp(now, sc->tracked, sizeof(now));
	git_index_free(uidx);
	return same;
}

/* 0: `out` and `snap` are the snapshot; 1: only the long way can take it. */
static int capture_fast(git_oid *out, struct snapshot *snap, struct checkpoints *cps)
{
	struct fast f;
	struct sc_stamp inputs[3];
	git_tree_update *ups = NULL;
	git_odb *odb = NULL;
	git_tree *base = NULL;
	git_oid root;
	char *key = NULL;
	size_t i, nups = 0;
	int ret = 1, inputs_changed = 0;

	memset(&f, 0, sizeof(f));
	buf_init(&f.sc.names, 0);
	f.cps = cps;
	clock_gettime(CLOCK_REALTIME_COARSE, &f.start);
	cps->files_read = 0;
	if (statcache_load(&f.sc, cps->shadow_fd) < 0)
		goto out;
	stamp_inputs(inputs, &key, cps, &f.start);
	if (!f.sc.key || strcmp(key, f.sc.key) || !f.sc.ndirs)
		goto out;
	for (i = 1; i < 3; i++)
		if (!sc_stamp_same(&f.sc.inputs[i], &inputs[i]))
			goto out;
	if (!sc_stamp_same(&f.sc.inputs[0], &inputs[0])) {
		/* the user's index was written (`git status` does): does it track the same paths? */
		if (!tracks_the_same(&f.sc, cps, &inputs[0]))
			goto out;
		f.sc.inputs[0] = inputs[0];
		inputs_changed = 1;
	}
	/* every folder first (a changed one sends all the long way before any file is looked at) */
	cps->dirs_listed = 0;
	for (i = 0; i < f.sc.ndirs; i++)
		if (check_dir(&f, i, 1))
			goto out;
	pop_to(&f, 0);
	for (i = 0; i < f.sc.ndirs; i++)
		if (check_dir(&f, i, 2))
			goto out;
	pop_to(&f, 0);
	git_oid_fromraw(&root, f.sc.root);
	if (git_repository_odb(&odb, cps->repo) < 0)
		goto out;
	if (f.nchanged && read_changed(&f, odb, &ups, &nups))
		goto out;
	if (nups) {
		if (git_tree_lookup(&base, cps->repo, &root) < 0 ||
		    git_tree_create_updated(&root, cps->repo, base, nups, ups) < 0)
			goto out;
		memcpy(f.sc.root, root.id, GIT_OID_RAWSZ);
	} else if (!git_odb_exists(odb, &root)) {
		goto out;
	}
	if (f.nchanged || f.nrelisted || inputs_changed) {
		/* only what changed is written: its records and the new tree, appended */
		if (statcache_append(&f.sc, cps->shadow_fd, f.changed, f.nchanged, f.relisted,
				     f.nrelisted) < 0) {
			unlinkat(cps->shadow_fd, STATCACHE_FILE, 0);
			err_clear();
		}
		cps->index_written = 1;
	}
	git_oid_cpy(out, &root);
	if (snap) {
		snap->perms_header = xstrdup(f.sc.perms ? f.sc.perms : "");
		for (i = 0; i < f.sc.empty_dirs.nr; i++)
			strvec_push(&snap->empty_dirs, f.sc.empty_dirs.v[i]);
		for (i = 0; i < f.sc.too_large.nr; i++)
			strvec_push(&snap->too_large, f.sc.too_large.v[i]);
		snap->files = f.sc.recorded;
	}
	ret = 0;
out:
	pop_to(&f, 0);
	if (ret) {
		git_error_clear();
		err_clear();
	}
	for (i = 0; i < nups; i++)
		free((char *)ups[i].path);
	free(ups);
	free(f.changed);
	free(f.changed_dir);
	free(f.relisted);
	free(key);
	git_tree_free(base);
	git_odb_free(odb);
	statcache_release(&f.sc);
	return ret;
}

int snapshot_take(git_oid *out, struct snapshot *snap, struct checkpoints *cps, git_index **idx)
{
	int ret;

	*idx = NULL;
	if (!capture_fast(out, snap, cps))
		return 0;
	if ((ret = statcache_open(idx, cps)) < 0)
		return ret;
	return snapshot_capture(out, snap, cps, *idx);
}

/* ------------------------------------------------ making the record */

void sc_build_begin(struct sc_build *b, struct checkpoints *cps, const struct timespec *start)
{
	struct stat st;

	memset(b, 0, sizeof(*b));
	stamp_inputs(b->inputs, &b->key, cps, start);
	if (fstat(cps->root_fd, &st) < 0) {
		free(b->key);
		b->key = NULL;	/* nothing is recorded */
		return;
	}
	sc_build_dir(b, cps->root_fd, ".", "", &st, 0, start);
	b->dirs[0].entered = 1;
}

void sc_build_dir(struct sc_build *b, int dirfd, const char *name, const char *path,
		  const struct stat *st, unsigned depth, const struct timespec *start)
{
	struct sc_bdir *d;
	char *ign = xstrfmt("%s/.gitignore", name);

	if (!b->key)
		return;
	ALLOC_GROW(b->dirs, b->ndirs + 1, b->adirs);
	d = &b->dirs[b->ndirs];
	d->path = xstrdup(path);
	buf_init(&d->names, 0);
	d->entered = 0;
	sc_stamp_fill(&d->st, st, start);
	sc_stamp_at(&d->ign, dirfd, ign, 0, start);
	if (!S_ISREG(d->ign.mode))
		sc_stamp_fill(&d->ign, NULL, start);	/* not read as rules: as good as none */
	free(ign);
	ALLOC_GROW(b->at_depth, depth + 1, b->adepth);
	b->at_depth[depth] = b->ndirs++;
}

void sc_build_entry(struct sc_build *b, unsigned depth, const char *name, unsigned char type)
{
	struct buf *names;

	if (!b->key || depth >= b->adepth)
		return;
	names = &b->dirs[b->at_depth[depth]].names;
	buf_addch(names, type == DT_REG ? 'f' : type == DT_DIR ? 'd' : 'l');
	buf_addch(names, ' ');
	buf_add(names, name, strlen(name) + 1);
}

void sc_build_left(struct sc_build *b, unsigned depth)
{
	if (b->key && depth < b->adepth)
		b->dirs[b->at_depth[depth]].entered = 1;
}

void sc_build_file(struct sc_build *b, unsigned depth, const char *path, const struct stat *st,
		   int too_large)
{
	struct sc_bfile *f;
	const char *slash = strrchr(path, '/');

	if (!b->key || depth >= b->adepth)
		return;
	ALLOC_GROW(b->files, b->nfiles + 1, b->afiles);
	f = &b->files[b->nfiles++];
	f->path = xstrdup(path);
	f->dir = (uint32_t)b->at_depth[depth];
	f->name = slash ? (uint32_t)(slash + 1 - path) : 0;
	f->st = *st;
	f->too_large = too_large;
}

void sc_build_release(struct sc_build *b)
{
	size_t i;

	for (i = 0; i < b->ndirs; i++) {
		free(b->dirs[i].path);
		buf_release(&b->dirs[i].names);
	}
	for (i = 0; i < b->nfiles; i++)
		free(b->files[i].path);
	free(b->dirs);
	free(b->files);
	free(b->at_depth);
	free(b->key);
	memset(b, 0, sizeof(*b));
}

static int bdir_cmp(const void *a, const void *b)
{
	return strcmp((*(struct sc_bdir *const *)a)->path, (*(struct sc_bdir *const *)b)->path);
}

/* Files by folder (in path order: `rank`), then name. */
static int bfile_cmp(const void *a, const void *b, void *rank)
{
	const struct sc_bfile *p = a, *q = b;
	const size_t *r = rank;

	if (r[p->dir] != r[q->dir])
		return r[p->dir] < r[q->dir] ? -1 : 1;
	return strcmp(p->path + p->name, q->path + q->name);
}

static uint32_t add_name(struct statcache *sc, const char *s, size_t n)
{
	uint32_t off = (uint32_t)sc->names.len;

	buf_add(&sc->names, s, n);
	buf_addch(&sc->names, '\0');
	return off;
}

void sc_build_finish(struct sc_build *b, struct checkpoints *cps, git_index *idx,
		     const struct snapshot *snap, const git_oid *tree, const struct timespec *start)
{
	struct statcache sc = STATCACHE_INIT;
	size_t i, j = 0, k;
	int ok = b->key && snap->perms_header && b->ndirs;

	for (i = 0; ok && i < b->ndirs; i++) {
		const char *p;

		for (k = 0, p = b->dirs[i].path; *p; p++)
			k += *p == '/';
		ok = k < FAST_DEPTH - 1;
	}
	if (ok) {
		/* folders in path order (a folder before what it holds), each one's files together */
		struct sc_bdir **order = xcalloc(b->ndirs, sizeof(*order)), *sorted;
		size_t *rank = xcalloc(b->ndirs, sizeof(*rank));

		for (i = 0; i < b->ndirs; i++)
			order[i] = &b->dirs[i];
		qsort(order, b->ndirs, sizeof(*order), bdir_cmp);
		sorted = xcalloc(b->ndirs, sizeof(*sorted));
		for (i = 0; i < b->ndirs; i++) {
			rank[order[i] - b->dirs] = i;
			sorted[i] = *order[i];
		}
		if (b->nfiles)
			qsort_r(b->files, b->nfiles, sizeof(*b->files), bfile_cmp, rank);
		for (i = 0; i < b->nfiles; i++)
			b->files[i].dir = (uint32_t)rank[b->files[i].dir];
		free(b->dirs);
		b->dirs = sorted;
		free(order);
		free(rank);
		sc.dirs = xcalloc(b->ndirs, sizeof(*sc.dirs));
		sc.adirs = sc.ndirs = b->ndirs;
		sc.files = xcalloc(b->nfiles ? b->nfiles : 1, sizeof(*sc.files));
		sc.afiles = b->nfiles ? b->nfiles : 1;
	}
	for (i = 0; ok && i < b->ndirs; i++) {
		struct sc_dir *d = &sc.dirs[i];
		const char *path = b->dirs[i].path;
		size_t plen = strlen(path);

		d->st = b->dirs[i].st;
		d->ign = b->dirs[i].ign;
		d->flags = b->dirs[i].entered ? 0 : SC_DIR_NESTED;
		statcache_names(d->names, b->dirs[i].names.buf ? b->dirs[i].names.buf : "",
				b->dirs[i].names.len);
		d->path = add_name(&sc, path, plen);
		d->path_len = (uint32_t)plen;
		d->first = (uint32_t)j;
		for (; j < b->nfiles && b->files[j].dir == i; j++) {
			const struct sc_bfile *bf = &b->files[j];
			const char *name = bf->path + bf->name;
			struct sc_file *f = &sc.files[j];
			const git_index_entry *e;

			sc_stamp_fill(&f->st, &bf->st, start);
			f->name = add_name(&sc, name, strlen(name));
			f->name_len = (uint32_t)strlen(name);
			if (bf->too_large)
				continue;	/* gitmode 0: its stamp only */
			if (!(e = git_index_get_bypath(idx, bf->path, 0))) {
				ok = 0;
				break;
			}
			f->gitmode = e->mode;
			memcpy(f->oid, e->id.id, GIT_OID_RAWSZ);
		}
		d->nfiles = (uint32_t)(j - d->first);
		/* a nested repository holds nothing recorded */
		if (d->nfiles && !b->dirs[i].entered)
			ok = 0;
	}
	/* every file lies in a folder read */
	if (ok && j == b->nfiles) {
		sc.nfiles = b->nfiles;
		sc.namep = sc.names.buf;
		memcpy(sc.root, tree->id, GIT_OID_RAWSZ);
		memcpy(sc.inputs, b->inputs, sizeof(sc.inputs));
		memcpy(sc.tracked, b->tracked, sizeof(sc.tracked));
		sc.key = b->key;
		b->key = NULL;
		sc.perms = xstrdup(snap->perms_header);
		for (i = 0; i < snap->empty_dirs.nr; i++)
			strvec_push(&sc.empty_dirs, snap->empty_dirs.v[i]);
		for (i = 0; i < snap->too_large.nr; i++)
			strvec_push(&sc.too_large, snap->too_large.v[i]);
		sc.recorded = snap->files;
		if (statcache_save(&sc, cps->shadow_fd) < 0)
			ok = 0;
		else
			cps->index_written = 1;
	} else {
		ok = 0;
	}
	if (!ok) {
		/* no record is better than a wrong one: the next capture takes the long way */
		unlinkat(cps->shadow_fd, STATCACHE_FILE, 0);
		err_clear();
	}
	statcache_release(&sc);
}

/*
 * Applying a restore beneath a descriptor of the workspace; see
 * checkpoint.h (checkpoint_restore()) and restore.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/strvec.h"
#include "vcs/perms.h"
#include "vcs/restore.h"
#include "vcs/shadow.h"
#include "vcs/snapshot.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

/*
 * Open the folder holding `path` below `rootfd` without following links.
 * With `create`, missing folders are made and a link in the way is
 * replaced by a folder (one component at a time: each may need making);
 * without, a missing folder or a link gives FX_ENOTFOUND (nothing to do
 * there). `*base` points into `path`.
 */
static int open_parent(int *out, int rootfd, const char *path, int create, const char **base)
{
	const char *p = path, *slash;
	int fd;

	if (!create) {
		/* only looking: the one beneath-open (a link on the way is nothing to do) */
		const char *last = strrchr(path, '/');
		char *dir = xstrndup(path, last ? (size_t)(last - path) : 0);
		int e;

		fd = beneath_open(rootfd, dir, O_RDONLY | O_DIRECTORY, 0);
		e = errno;
		free(dir);
		if (fd < 0) {
			if (e == ENOENT || e == ELOOP || e == ENOTDIR || e == EXDEV)
				return FX_ENOTFOUND;
			errno = e;
			return err_set_errno(FX_EOS, "cannot open folder '%.*s'",
					     (int)(last - path), path);
		}
		*base = last ? last + 1 : path;
		*out = fd;
		return 0;
	}
	fd = dup(rootfd);
	if (fd < 0)
		return err_set_errno(FX_EOS, "dup");
	while ((slash = strchr(p, '/'))) {
		char *comp = xstrndup(p, (size_t)(slash - p));
		int next, tries;

		for (tries = 0; tries < 3; tries++) {
			struct stat st;

			next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next >= 0 || !create)
				break;
			if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno != ENOENT)
					break;
			} else if (S_ISLNK(st.st_mode)) {
				/* a link planted where a folder belongs: replace, never follow */
				if (unlinkat(fd, comp, 0) < 0)
					break;
			} else if (!S_ISDIR(st.st_mode)) {
				errno = ENOTDIR;
				break;
			}
			if (mkdirat(fd, comp, 0777) < 0 && errno != EEXIST)
				break;
		}
		if (next < 0) {
			int e = errno, ret;

			if (!create && (e == ENOENT || e == ELOOP || e == ENOTDIR)) {
				ret = FX_ENOTFOUND;
			} else {
				errno = e;
				ret = err_set_errno(FX_EOS, "cannot open folder '%.*s'",
						    (int)(slash - path), path);
			}
			free(comp);
			close(fd);
			return ret;
		}
		free(comp);
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*base = p;
	*out = fd;
	return 0;
}

/* Remove folder `name` in `dirfd` if it holds nothing but empty folders. */
static int remove_empty_tree(int parent, const char *name, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd, ret = 0;

	if (depth > 256)
		return -1;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ret = remove_empty_tree(dirfd(d), de->d_name, depth + 1);
	}
	closedir(d);
	if (ret)
		return ret;
	return unlinkat(parent, name, AT_REMOVEDIR);
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

/* The permission bits for a file the restore writes or chmods. */
static mode_t file_perms(const struct stat *old, int exec, mode_t um)
{
	mode_t m;

	if (!old || !S_ISREG(old->st_mode))
		return (exec ? 0777 : 0666) & ~um;
	/* keep what the user chose (0600 stays private); only the x bits follow git */
	m = old->st_mode & 0777;
	if (exec)
		m |= (m & 0444) >> 2;
	else
		m &= ~(mode_t)0111;
	return m;
}

/* Create a fresh temporary name in `dirfd` with `make` (O_EXCL semantics). */
static int make_tmp(char tmp[FSUTIL_TMP_NAME_MAX], int dirfd, const char *target,
		    const git_blob *blob, mode_t perms, int is_link, const struct stat *old,
		    const struct fsutil_tmp_hook *hook)
{
	const char *data = git_blob_rawcontent(blob);
	size_t len = (size_t)git_blob_rawsize(blob);
	const char *slash = strrchr(target, '/');
	char *link = is_link ? xstrndup(data, len) : NULL;
	int fd;

	/* the name every writer of forgex uses beside its target (base/fsutil.h) */
	fd = fsutil_tmp_create(tmp, dirfd, slash ? slash + 1 : target, link, hook);
	free(link);
	if (fd < 0)
		return err_prefix(fd, "'%s'", target);
	if (is_link)
		return 0;
	/* a later mtime second than the file replaced: .pyc and make see the change */
	if (fsutil_write_all(fd, data, len) < 0 || fchmod(fd, perms) < 0 ||
	    (old && S_ISREG(old->st_mode) && fsutil_later_mtime(fd, old) < 0)) {
		int ret = err_set_errno(FX_EOS, "cannot write '%s'", target);

		close(fd);
		unlinkat(dirfd, tmp, 0);
		return ret;
	}
	if (close(fd) < 0) {
		unlinkat(dirfd, tmp, 0);
		return err_set_errno(FX_EOS, "cannot write '%s'", target);
	}
	return 0;
}

/* Write the checkpoint's version of `c->path`, replacing whatever is there. */
static int write_entry(git_repository *repo, int rootfd, const struct change *c, mode_t um,
		       const struct fsutil_tmp_hook *log)
{
	struct fsutil_tmp_hook hook = { NULL, NULL, c->path };
	git_blob *blob = NULL;
	const char *base;
	struct stat st, *old = NULL;
	char tmp[FSUTIL_TMP_NAME_MAX];
	int fd = -1, ret, gerr, is_link = c->mode == GIT_FILEMODE_LINK;

	gerr = git_blob_lookup(&blob, repo, &c->oid);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the checkpoint's '%s'", c->path);
	if ((ret = open_parent(&fd, rootfd, c->path, 1, &base)) < 0)
		goto out;
	if (!fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		old = &st;
		if (S_ISDIR(st.st_mode) && remove_empty_tree(fd, base, 0) < 0) {
			ret = err_set_errno(FX_EOS, "cannot replace folder '%s' with a file",
					    c->path);
			goto out;
		}
	}
	if (log) {
		hook.before_create = log->before_create;
		hook.data = log->data;
	}
	ret = make_tmp(tmp, fd, c->path, blob,
		       c->perms >= 0 ? (mode_t)c->perms :
		       file_perms(old, c->mode == GIT_FILEMODE_BLOB_EXECUTABLE, um), is_link, old,
		       &hook);
	if (ret < 0)
		goto out;
	if (renameat(fd, tmp, fd, base) < 0) {
		ret = err_set_errno(FX_EOS, "cannot put '%s' in place", c->path);
		unlinkat(fd, tmp, 0);
	}
out:
	if (fd >= 0)
		close(fd);
	git_blob_free(blob);
	return ret;
}

/* Flip the executable bit of a file whose bytes are already right. */
static int chmod_entry(git_repository *repo, int rootfd, const struct change *c, mode_t um,
		       const struct fsutil_tmp_hook *log)
{
	const char *base;
	struct stat st;
	int dfd = -1, fd = -1, ret;

	if ((ret = open_parent(&dfd, rootfd, c->path, 1, &base)) < 0)
		return ret;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		/* not the file we recorded a moment ago: write it whole */
		if (fd >= 0)
			close(fd);
		close(dfd);
		return write_entry(repo, rootfd, c, um, log);
	}
	if (fchmod(fd, c->perms >= 0 ? (mode_t)c->perms :
		   file_perms(&st, c->mode == GIT_FILEMODE_BLOB_EXECUTABLE, um)) < 0)
		ret = err_set_errno(FX_EOS, "cannot change the mode of '%s'", c->path);
	close(fd);
	close(dfd);
	return ret;
}

/* Remove `path`, then the folders above it that this left empty. */
static int delete_entry(int rootfd, const char *path, const struct tree_list *want,
			const struct strvec *want_dirs, int is_dir)
{
	const char *base;
	char *dir, *slash;
	int fd, ret;

	ret = open_parent(&fd, rootfd, path, 0, &base);
	if (ret == FX_ENOTFOUND)
		return 0;	/* gone already, or behind a link we do not follow */
	if (ret < 0)
		return ret;
	if (unlinkat(fd, base, is_dir ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT) {
		/* an "empty" folder that is not empty any more: leave it */
		if (is_dir && (errno == ENOTEMPTY || errno == EEXIST)) {
			close(fd);
			return 0;
		}
		ret = err_set_errno(FX_EOS, "cannot remove '%s'", path);
		close(fd);
		return ret;
	}
	close(fd);
	dir = xstrdup(path);
	while ((slash = strrchr(dir, '/'))) {
		*slash = '\0';
		if (restore_keeps_dir(want, want_dirs, dir))
			break;
		if (open_parent(&fd, rootfd, dir, 0, &base) < 0)
			break;
		ret = unlinkat(fd, base, AT_REMOVEDIR);
		close(fd);
		if (ret < 0)
			break;
	}
	err_clear();
	free(dir);
	return 0;
}

/* Make the empty folder `path` of the checkpoint (and those above it). */
static int mkdir_entry(int rootfd, const char *path)
{
	const char *base;
	struct stat st;
	int fd, ret;

	if ((ret = open_parent(&fd, rootfd, path, 1, &base)) < 0)
		return ret;
	if (!fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW) && !S_ISDIR(st.st_mode) &&
	    unlinkat(fd, base, 0) < 0) {
		ret = err_set_errno(FX_EOS, "cannot replace '%s' with a folder", path);
		close(fd);
		return ret;
	}
	if (mkdirat(fd, base, 0777) < 0 && errno != EEXIST)
		ret = err_set_errno(FX_EOS, "cannot create folder '%s'", path);
	close(fd);
	return ret;
}

/*
 * Give every folder of the checkpoint its recorded bits, deepest first
 * (last, so that a read-only folder is filled before it is closed). With
 * `check`, only compare and fail on the first difference.
 */
static int fix_dir_perms(size_t *changed, int rootfd, const struct tree_list *want,
			 const struct strvec *want_dirs, const struct perm_map *want_perms,
			 int check)
{
	struct strvec dirs = STRVEC_INIT, all = STRVEC_INIT;
	size_t i;
	int ret = 0;

	if (!want_perms->known)
		return 0;
	restore_tree_dirs(&all, want);
	for (i = 0; i < want_dirs->nr; i++) {
		const char *prev = NULL;
		char *key = xstrfmt("%s/", want_dirs->v[i]);

		strvec_push(&all, key);
		vcs_add_parent_dirs(&all, want_dirs->v[i], &prev);
		free(key);
	}
	vcs_finish_dirs(&dirs, &all);
	for (i = dirs.nr; i-- > 0 && !ret;) {
		char *dir = xstrndup(dirs.v[i], strlen(dirs.v[i]) - 1);
		unsigned perms = perm_map_get(want_perms, dirs.v[i], 0);
		const char *base;
		struct stat st;
		int pfd;

		if ((ret = open_parent(&pfd, rootfd, dir, 0, &base)) < 0) {
			ret = err_set(FX_ERROR, "after the restore folder '%s' is missing", dir);
		} else {
			if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
				ret = err_set(FX_ERROR, "after the restore '%s' is not a folder", dir);
			else if ((st.st_mode & 0777) == perms)
				;
			else if (check)
				ret = err_set(FX_ERROR, "after the restore folder '%s' has mode %o, not %o",
					      dir, (unsigned)(st.st_mode & 0777), perms);
			else if (fchmodat(pfd, base, perms, 0) < 0)
				ret = err_set_errno(FX_EOS, "cannot change the mode of folder '%s'", dir);
			else if (changed)
				(*changed)++;
			close(pfd);
		}
		free(dir);
	}
	strvec_clear(&dirs);
	return ret;
}

/*
 * Read the tree back with a full capture (files the restore wrote have
 * new stat data and are hashed again) and compare it, entry by entry,
 * with the checkpoint: files and links, their modes and permission bits,
 * the empty folders, and the bits of every folder.
 */
static int verify_restore(struct checkpoints *cps, int rootfd, git_index *idx,
			  const struct tree_list *want, const struct strvec *want_dirs,
			  const struct perm_map *want_perms, const char *id)
{
	struct snapshot got = SNAPSHOT_INIT;
	git_oid tree;
	size_t i = 0, j = 0, n, k;
	int ret;

	if ((ret = snapshot_capture(&tree, &got, cps, idx)) < 0) {
		err_prefix(ret, "cannot read back the tree after the restore");
		goto out;
	}
	/*
	 * A file of the checkpoint that is ignored now (it was not when it
	 * was recorded) is not picked up by the capture: read it by name.
	 */
	for (k = 0; k < want->nr; k++) {
		size_t pos;

		if (!git_index_find(&pos, idx, want->v[k].path))
			continue;
		git_error_clear();
		ret = snapshot_add_path(&got, cps, idx, want->v[k].path);
		if (ret == FX_ENOTFOUND) {
			err_clear();
			ret = 0;
		}
		if (ret < 0)
			goto out;
	}
	n = git_index_entrycount(idx);
	while (i < n || j < want->nr) {
		const git_index_entry *a = i < n ? git_index_get_byindex(idx, i) : NULL;
		const struct tree_entry *b = j < want->nr ? &want->v[j] : NULL;
		int cmp = !a ? 1 : !b ? -1 : strcmp(a->path, b->path);

		if (cmp || !git_oid_equal(&a->id, &b->oid) || a->mode != b->mode) {
			ret = err_set(FX_ERROR,
				      "after restoring checkpoint %.12s the tree still differs from it "
				      "at '%s'", id, cmp > 0 ? b->path : a->path);
			goto out;
		}
		if (want_perms->known && vcs_is_file_mode(a->mode)) {
			unsigned bits = perm_map_get(want_perms, a->path, a->mode),
				 have = perm_map_get(&got.perms, a->path, a->mode);

			if (bits != have) {
				ret = err_set(FX_ERROR,
					      "after restoring checkpoint %.12s '%s' has mode %o, not %o",
					      id, a->path, have, bits);
				goto out;
			}
		}
		i++;
		j++;
	}
	for (k = 0; k < want_dirs->nr || k < got.empty_dirs.nr; k++) {
		const char *a = k < got.empty_dirs.nr ? got.empty_dirs.v[k] : NULL;
		const char *b = k < want_dirs->nr ? want_dirs->v[k] : NULL;

		if (!a || !b || strcmp(a, b)) {
			ret = err_set(FX_ERROR,
				      "after restoring checkpoint %.12s folder '%s' %s", id,
				      b && (!a || strcmp(a, b) > 0) ? b : a,
				      b && (!a || strcmp(a, b) > 0) ? "is missing or not empty" :
				      "is there and empty, but the checkpoint has no such folder");
			goto out;
		}
	}
	ret = fix_dir_perms(NULL, rootfd, want, want_dirs, want_perms, 1);
out:
	snapshot_release(&got);
	return ret;
}

/*
 * The temporary files of a restore. A restore has no journal of its own,
 * so it names each temporary file in RESTORE_TMPS, in the shadow, before
 * the file exists (fsutil_tmp_create()'s hook): a restore killed between
 * making one and renaming it into place leaves a file that the next
 * restore, or the next run's start (checkpoint_sweep_tmps()), removes.
 * Every restore that returns has renamed or removed each of its own, and
 * removes the list.
 */
#define RESTORE_TMPS "restore-tmps"

static int log_tmp(void *data, const char *rel, const char *tmp)
{
	const int *fd = data;
	const char *slash = strrchr(rel, '/');
	char *line = slash ? xstrfmt("%.*s/%s\n", (int)(slash - rel), rel, tmp) :
			     xstrfmt("%s\n", tmp);
	int ret = fsutil_write_all(*fd, line, strlen(line));

	free(line);
	if (ret < 0)
		return err_prefix(ret, "cannot name the temporary file of '%s' in %s/" RESTORE_TMPS
				  " first; not written", rel, ".forgex/checkpoints");
	return 0;
}

/* Whether `rel` is a clean relative path outside .git and .forgex, ending in a temporary file's name. */
static int tmp_path_ok(const char *rel)
{
	const char *p = rel, *name = strrchr(rel, '/');
	size_t n;
	char *target;
	int ok;

	if (!*rel || *rel == '/')
		return 0;
	for (;;) {
		n = strcspn(p, "/");
		if (!n || (n == 1 && *p == '.') || (n == 2 && !strncmp(p, "..", 2)) ||
		    (n == 4 && !strncasecmp(p, ".git", 4)) || (n == 7 && !strncasecmp(p, ".forgex", 7)))
			return 0;
		if (!p[n])
			break;
		p += n + 1;
	}
	name = name ? name + 1 : rel;
	n = strlen(name);
	/* ".NAME.fx-XXXXXXXX.tmp": NAME is what is between */
	if (n < 18)
		return 0;
	target = xstrndup(name + 1, n - 17);
	ok = fsutil_tmp_is_for(name, target);
	free(target);
	return ok;
}

void checkpoint_sweep_tmps(struct checkpoints *cps)
{
	struct buf list = BUF_INIT;
	const char *p;
	int fd;

	if (checkpoint__lock(cps) < 0) {
		err_clear();
		return;
	}
	fd = openat(cps->shadow_fd, RESTORE_TMPS, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		goto out;
	if (fsutil_read_fd(&list, fd, 16u << 20) < 0)
		err_clear();
	close(fd);
	for (p = list.buf ? list.buf : ""; *p;) {
		size_t n = strcspn(p, "\n");
		char *rel = xstrndup(p, n);
		const char *slash = strrchr(rel, '/');
		char *dir = xstrndup(rel, slash ? (size_t)(slash - rel) : 0);
		/* beneath the workspace, following no link: only the file it names goes */
		int dfd = tmp_path_ok(rel) ? beneath_open(cps->root_fd, dir, O_RDONLY | O_DIRECTORY, 0)
					   : -1;
		struct stat st;

		if (dfd >= 0) {
			const char *name = slash ? slash + 1 : rel;

			if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
			    (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
				unlinkat(dfd, name, 0);
			close(dfd);
		}
		free(dir);
		free(rel);
		p += n + (p[n] == '\n');
	}
	unlinkat(cps->shadow_fd, RESTORE_TMPS, 0);
out:
	buf_release(&list);
	checkpoint__unlock(cps);
}

int checkpoint_restore(struct checkpoint_restore_result *out, struct checkpoints *cps,
		       const char *id)
{
	int log_fd = -1;
	const struct fsutil_tmp_hook log = { log_tmp, &log_fd, NULL };
	struct checkpoint_restore_result res;
	struct plan plan = { NULL, 0, 0 };
	struct tree_list want = { NULL, 0, 0 };
	struct perm_map want_perms = PERM_MAP_INIT;
	struct snapshot now = SNAPSHOT_INIT;
	struct strvec overwrite = STRVEC_INIT, want_dirs = STRVEC_INIT;
	git_index *idx = NULL;
	git_commit *target = NULL;
	git_tree *tree = NULL;
	git_oid now_tree, backup;
	char full[41], *msg = NULL;
	size_t i;
	mode_t um = current_umask();
	int ret, gerr, rootfd = -1, applying = 0, in_batch = 0;

	memset(&res, 0, sizeof(res));
	if ((ret = checkpoint__lock(cps)) < 0)
		return ret;
	/* what a killed restore left first */
	checkpoint_sweep_tmps(cps);
	if ((ret = checkpoint__lookup(&target, cps, id)) < 0)
		goto out;
	git_oid_tostr(full, sizeof(full), git_commit_id(target));
	gerr = git_commit_tree(&tree, target);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot read checkpoint %.12s", full);
		goto out;
	}
	if ((ret = statcache_open(&idx, cps)) < 0)
		goto out;
	if ((ret = restore_tree_load(&want, tree)) < 0 ||
	    (ret = perm_map_load(&want_perms, target)) < 0 ||
	    (ret = snapshot_load_dirs(&want_dirs, target)) < 0 ||
	    (ret = snapshot_load_too_large(&res.too_large, target)) < 0)
		goto out;
	{
		/* drop what forgex never restores (.forgex), keep the order */
		struct strvec keep = STRVEC_INIT;

		for (i = 0; i < want_dirs.nr; i++)
			if (!statcache_never(want_dirs.v[i]))
				strvec_push(&keep, want_dirs.v[i]);
		strvec_clear(&want_dirs);
		want_dirs = keep;
	}

	/* 1. Record what is there now (committed below, once the plan holds). */
	if ((ret = shadow_batch_begin(cps)) < 0)
		goto out;
	in_batch = 1;
	if ((ret = snapshot_capture(&now_tree, &now, cps, idx)) < 0) {
		err_prefix(ret, "cannot record the tree before restoring (nothing was changed)");
		goto out;
	}

	/*
	 * A file over max_file_bytes now is in no backup: the checkpoint's
	 * version is not written over it; it is left as it is, and said so.
	 */
	for (i = 0; i < now.too_large.nr; i++) {
		const char *path = strchr(now.too_large.v[i], ' ') + 1;
		size_t k;

		for (k = 0; k < want.nr && strcmp(want.v[k].path, path); k++)
			;
		if (k == want.nr)
			continue;
		free(want.v[k].path);
		memmove(&want.v[k], &want.v[k + 1], (want.nr - k - 1) * sizeof(*want.v));
		want.nr--;
		strvec_push(&res.too_large, now.too_large.v[i]);
	}

	/* 2. Plan every change and refuse before touching anything. */
	if ((ret = restore_make_plan(&plan, idx, &now, &want, &want_perms, &want_dirs)) < 0 ||
	    (ret = restore_check_objects(cps, &plan, full)) < 0)
		goto out;
	rootfd = dup(cps->root_fd);
	if (rootfd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open %s", cps->workspace);
		goto out;
	}
	for (i = 0; i < plan.nr; i++)
		if ((plan.items[i].kind == CHANGE_WRITE || plan.items[i].kind == CHANGE_MKDIR) &&
		    (ret = restore_check_write(&overwrite, rootfd, &plan.items[i], idx, &want)) < 0)
			goto out;
	if (overwrite.nr) {
		/*
		 * Ignored files the checkpoint has a version of (it recorded
		 * them before they were ignored) are overwritten: put them in
		 * the backup first, so that the restore can still be undone.
		 */
		for (i = 0; i < overwrite.nr; i++)
			if ((ret = snapshot_add_path(&now, cps, idx, overwrite.v[i])) < 0)
				goto out;
		if ((gerr = git_index_write_tree(&now_tree, idx)) < 0) {
			ret = vcs_git_error(gerr, "cannot write the checkpoint tree");
			goto out;
		}
		restore_plan_release(&plan);
		if ((ret = restore_make_plan(&plan, idx, &now, &want, &want_perms, &want_dirs)) < 0)
			goto out;
	}
	msg = xstrfmt("before restore of %.12s", full);
	if ((ret = checkpoint__write_commit(&backup, cps, &now_tree, msg, &now, idx)) < 0)
		goto out;
	in_batch = 0;
	if ((ret = shadow_batch_end(cps)) < 0 ||
	    (ret = checkpoint__advance_chain(&res.backup, cps, &backup, git_index_entrycount(idx))) < 0)
		goto out;

	/* 3. Deletions first (they make room), then folders, modes, contents. */
	log_fd = openat(cps->shadow_fd, RESTORE_TMPS,
			O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		ret = err_set_errno(FX_EOS, "cannot create .forgex/checkpoints/" RESTORE_TMPS
				    " (nothing was changed)");
		goto out;
	}
	applying = 1;
	for (i = 0; i < plan.nr; i++) {
		if (plan.items[i].kind != CHANGE_DELETE)
			continue;
		if ((ret = delete_entry(rootfd, plan.items[i].path, &want, &want_dirs, 0)) < 0)
			goto out;
		res.removed++;
	}
	for (i = plan.nr; i-- > 0;) {
		if (plan.items[i].kind != CHANGE_RMDIR)
			continue;
		if ((ret = delete_entry(rootfd, plan.items[i].path, &want, &want_dirs, 1)) < 0)
			goto out;
		res.removed++;
	}
	for (i = 0; i < plan.nr; i++) {
		const struct change *c = &plan.items[i];

		if (c->kind == CHANGE_MKDIR) {
			if ((ret = mkdir_entry(rootfd, c->path)) < 0)
				goto out;
			res.written++;
		} else if (c->kind == CHANGE_CHMOD) {
			if ((ret = chmod_entry(cps->repo, rootfd, c, um, &log)) < 0)
				goto out;
			res.chmodded++;
		} else if (c->kind == CHANGE_WRITE) {
			if ((ret = write_entry(cps->repo, rootfd, c, um, &log)) < 0)
				goto out;
			res.written++;
		}
	}
	if ((ret = fix_dir_perms(&res.chmodded, rootfd, &want, &want_dirs, &want_perms, 0)) < 0)
		goto out;
	if (syncfs(rootfd) < 0) {
		ret = err_set_errno(FX_EOS, "cannot flush the restored files to disk");
		goto out;
	}
	applying = 0;

	/* 4. Check the result against the checkpoint. */
	if ((ret = shadow_batch_begin(cps)) < 0)
		goto out;
	in_batch = 1;
	ret = verify_restore(cps, rootfd, idx, &want, &want_dirs, &want_perms, full);
	if (ret < 0)
		err_prefix(ret, "the tree before the restore is checkpoint %s",
			   res.backup.short_id);
out:
	if (ret < 0 && applying)
		err_prefix(ret, "restore stopped part-way; the tree before it is checkpoint %s",
			   res.backup.short_id);
	if (in_batch && shadow_batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	if (log_fd >= 0) {
		/* each temporary file is renamed into place or removed by now */
		close(log_fd);
		unlinkat(cps->shadow_fd, RESTORE_TMPS, 0);
	}
	strvec_clear(&overwrite);
	strvec_clear(&want_dirs);
	if (rootfd >= 0)
		close(rootfd);
	restore_plan_release(&plan);
	snapshot_release(&now);
	perm_map_release(&want_perms);
	free(msg);
	restore_tree_release(&want);
	git_index_free(idx);
	git_tree_free(tree);
	git_commit_free(target);
	checkpoint__unlock(cps);
	if (ret < 0 || !out)
		checkpoint_restore_result_release(&res);
	else
		*out = res;
	return ret;
}

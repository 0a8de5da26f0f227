/*
 * Mirrors and worktrees with the git program (see worktree.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "batch/proc.h"
#include "batch/worktree.h"

/* Hold an exclusive flock() on the folder `dir` (the fd to close, or < 0). */
static int lock_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return err_set_errno(FX_EOS, "open %s", dir);
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			close(fd);
			return err_set_errno(FX_EOS, "lock %s", dir);
		}
	return fd;
}

static void unlock_dir(int fd)
{
	if (fd >= 0)
		close(fd);
}

static char *default_cache(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");

	if (x && *x == '/')
		return xstrfmt("%s/forgex/mirrors", x);
	if (h && *h == '/')
		return xstrfmt("%s/.cache/forgex/mirrors", h);
	return NULL;
}

/* "name-1a2b3c4d.git": the URL's last part, readable, and its hash, unique. */
static char *mirror_name(const char *url)
{
	struct buf b = BUF_INIT, base = BUF_INIT;
	uint64_t h = 1469598103934665603ULL;
	const char *p;
	size_t i;

	for (p = url; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ULL;
	}
	path_basename(&base, url);
	if (base.len > 4 && !strcmp(base.buf + base.len - 4, ".git"))
		buf_setlen(&base, base.len - 4);
	for (i = 0; i < base.len && i < 60; i++) {
		char c = base.buf[i];

		buf_addch(&b, (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '-' || c == '_' ? c : '_');
	}
	buf_addf(&b, "-%016llx.git", (unsigned long long)h);
	buf_release(&base);
	return buf_detach(&b, NULL);
}

static int has_commit(const char *mirror, const char *commit)
{
	char *spec = xstrfmt("%s^{commit}", commit);
	const char *argv[] = { "git", "-C", mirror, "cat-file", "-e", spec, NULL };
	int ret = batch_command(NULL, argv);

	free(spec);
	err_clear();
	return ret == 0;
}

int batch_mirror(char **out, const char *cache, const char *url, const char *commit)
{
	char *own = cache ? NULL : default_cache(), *name, *path, *tmp;
	int lock, ret = 0;

	if (!cache && !own)
		return err_set(FX_EINVAL, "no cache folder: set XDG_CACHE_HOME or HOME");
	cache = cache ? cache : own;
	if (fsutil_mkdir_p(cache, 0755) < 0) {
		free(own);
		return err_prefix(FX_EOS, "mirrors folder");
	}
	name = mirror_name(url);
	path = xstrfmt("%s/%s", cache, name);
	tmp = xstrfmt("%s/.%s.tmp", cache, name);
	lock = lock_dir(cache);
	if (lock < 0) {
		ret = lock;
		goto out;
	}
	if (!fsutil_is_dir(path)) {
		const char *argv[] = { "git", "clone", "--quiet", "--mirror", "--", url, tmp, NULL };

		/* a clone a killed batch left half done */
		fsutil_remove_tree(tmp);
		ret = batch_command(NULL, argv);
		if (!ret && rename(tmp, path) < 0)
			ret = err_set_errno(FX_EOS, "rename %s", tmp);
		if (ret < 0) {
			fsutil_remove_tree(tmp);
			err_prefix(ret, "cloning %s", url);
		}
	}
	unlock_dir(lock);
	if (!ret && commit && !has_commit(path, commit)) {
		const char *argv[] = { "git", "-C", path, "fetch", "--quiet", "origin", NULL };

		lock = lock_dir(path);
		if (lock < 0) {
			ret = lock;
			goto out;
		}
		if (!has_commit(path, commit)) {
			ret = batch_command(NULL, argv);
			if (!ret && !has_commit(path, commit))
				ret = err_set(FX_ENOTFOUND, "%s has no commit %s", url, commit);
			else if (ret < 0)
				err_prefix(ret, "fetching %s", url);
		}
		unlock_dir(lock);
	}
out:
	if (!ret) {
		*out = path;
		path = NULL;
	}
	free(path);
	free(tmp);
	free(name);
	free(own);
	return ret;
}

/* The folder of `mirror` that records the worktree at `wt` (from its .git file), or NULL. */
static char *admin_dir(const char *mirror, const char *wt)
{
	struct buf b = BUF_INIT;
	char *p = xstrfmt("%s/.git", wt), *prefix = xstrfmt("gitdir: %s/worktrees/", mirror);
	char *dir = NULL;

	if (fsutil_read_file(&b, p, 8192) == 0) {
		buf_rtrim(&b);
		if (!strncmp(b.buf, prefix, strlen(prefix)) && !strstr(b.buf, "/../") &&
		    !strchr(b.buf + strlen(prefix), '/'))
			dir = xstrdup(b.buf + 8);
	}
	err_clear();
	buf_release(&b);
	free(prefix);
	free(p);
	return dir;
}

/*
 * What `git worktree remove --force` does, without starting git: the
 * folder goes, then the mirror's record of it (the lock is held, so no
 * git of ours looks at either meanwhile). A worktree whose record cannot
 * be told from its .git file is left to `git worktree prune`.
 */
static int remove_locked(const char *mirror, const char *path)
{
	const char *prune[] = { "git", "-C", mirror, "worktree", "prune", NULL };
	char *admin = admin_dir(mirror, path);
	int ret = 0;

	if (fsutil_exists(path) && fsutil_remove_tree(path) < 0)
		ret = err_prefix(FX_EOS, "removing %s", path);
	else if (admin && fsutil_remove_tree(admin) < 0)
		ret = err_prefix(FX_EOS, "removing %s", admin);
	else if (!admin)
		ret = batch_command(NULL, prune);
	free(admin);
	return ret;
}

int batch_worktree_add(const char *mirror, const char *path, const char *commit)
{
	/* --force: a record of a worktree of that name whose folder is gone is replaced */
	const char *argv[] = { "git", "-C", mirror, "worktree", "add", "--quiet", "--force",
			       "--detach", path, commit, NULL };
	int lock = lock_dir(mirror), ret = 0;

	if (lock < 0)
		return lock;
	if (fsutil_exists(path))
		ret = remove_locked(mirror, path);
	if (!ret)
		ret = batch_command(NULL, argv);
	unlock_dir(lock);
	return ret < 0 ? err_prefix(ret, "worktree of %s at %s", mirror, commit) : 0;
}

int batch_worktree_remove(const char *mirror, const char *path)
{
	int lock = lock_dir(mirror), ret;

	if (lock < 0)
		return lock;
	ret = remove_locked(mirror, path);
	unlock_dir(lock);
	return ret;
}

/* The mirror a worktree belongs to, from its .git file ("gitdir: M/worktrees/NAME"). */
static char *mirror_of(const char *wt)
{
	struct buf b = BUF_INIT;
	char *p = xstrfmt("%s/.git", wt), *mirror = NULL, *w;

	if (fsutil_read_file(&b, p, 8192) == 0 && !strncmp(b.buf, "gitdir: ", 8)) {
		buf_rtrim(&b);
		w = strstr(b.buf, "/worktrees/");
		if (w)
			mirror = xstrndup(b.buf + 8, (size_t)(w - b.buf - 8));
	}
	buf_release(&b);
	free(p);
	return mirror;
}

int batch_worktree_sweep(const char *dir, const struct strvec *keep, size_t *removed)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int ret = 0;

	*removed = 0;
	if (!d)
		return errno == ENOENT ? 0 : err_set_errno(FX_EOS, "open %s", dir);
	while ((e = readdir(d))) {
		char *wt, *mirror;

		if (e->d_name[0] == '.' || (keep && strvec_find(keep, e->d_name) >= 0))
			continue;
		wt = xstrfmt("%s/%s", dir, e->d_name);
		mirror = mirror_of(wt);
		/* only worktrees: whatever else is in the folder is not the batch's to remove */
		if (!mirror) {
			free(wt);
			continue;
		}
		if (fsutil_is_dir(mirror) && batch_worktree_remove(mirror, wt) == 0)
			(*removed)++;
		else if (fsutil_remove_tree(wt) == 0)
			(*removed)++;
		else
			ret = err_prefix(FX_EOS, "removing the leftover %s", wt);
		if (!ret)
			err_clear();
		free(mirror);
		free(wt);
	}
	closedir(d);
	return ret;
}

int batch_worktree_diff(struct buf *out, const char *path, const char *commit)
{
	const char *add[] = { "git", "-C", path, "add", "--all", "--intent-to-add", "--", ".",
			      ":(exclude).forgex", NULL };
	const char *diff[] = { "git", "-C", path, "-c", "core.quotePath=false", "diff", "--binary",
			       "--no-color", "--no-ext-diff", commit, "--", ".", ":(exclude).forgex",
			       NULL };
	int ret = batch_command(NULL, add);

	return ret ? ret : batch_command(out, diff);
}

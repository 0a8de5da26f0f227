#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/strvec.h"
#include "ws/wspath.h"

#define MAX_LINKS 40

/* beneath the workspace, refusing every symlink */
static int open_beneath(const struct wspath_root *root, const char *rel, int flags)
{
	return beneath_open(root->fd, rel, flags, 0);
}

/*
 * Append the components of `path` to `out` as "a/b/c", folding "." and "..".
 * A ".." above the start is an error naming `shown`, unless `clamp` (for
 * absolute paths, where "/.." is "/").
 */
static int fold(struct buf *out, const char *path, const char *shown, int clamp)
{
	size_t pos = 0, len = strlen(path);

	while (pos < len) {
		size_t start, n;

		while (pos < len && path[pos] == '/')
			pos++;
		start = pos;
		while (pos < len && path[pos] != '/')
			pos++;
		n = pos - start;
		if (!n || (n == 1 && path[start] == '.'))
			continue;
		if (n == 2 && path[start] == '.' && path[start + 1] == '.') {
			char *slash;

			if (!out->len) {
				if (clamp)
					continue;
				return err_set(FX_EDENIED, "'%s' is outside the workspace", shown);
			}
			slash = memrchr(out->buf, '/', out->len);
			buf_setlen(out, slash ? (size_t)(slash - out->buf) : 0);
			continue;
		}
		if (out->len)
			buf_addch(out, '/');
		buf_add(out, path + start, n);
	}
	return 0;
}

/* The absolute path `path` with "." and ".." folded, as "/a/b" or "/". */
static void fold_abs(struct buf *out, const char *path)
{
	struct buf tmp = BUF_INIT;

	fold(&tmp, path, path, 1);
	buf_addch(out, '/');
	buf_addbuf(out, &tmp);
	buf_release(&tmp);
}

int wspath_root_open(struct wspath_root *out, const char *dir)
{
	struct buf abs = BUF_INIT, norm = BUF_INIT;
	char *real = NULL, cwd[PATH_MAX];
	int fd, ret;

	if (dir[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			return err_set_errno(FX_EOS, "cannot find the current folder");
		buf_addstr(&abs, cwd);
		buf_addch(&abs, '/');
	}
	buf_addstr(&abs, dir);
	fold_abs(&norm, abs.buf);
	buf_release(&abs);

	fd = open(norm.buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = err_set_errno(errno == ENOENT || errno == ENOTDIR ? FX_ENOTFOUND : FX_EOS,
				    "cannot open the workspace '%s'", norm.buf);
		buf_release(&norm);
		return ret;
	}
	real = realpath(norm.buf, NULL);
	if (!real) {
		ret = err_set_errno(FX_EOS, "cannot resolve the workspace '%s'", norm.buf);
		close(fd);
		buf_release(&norm);
		return ret;
	}
	out->fd = fd;
	out->path = buf_detach(&norm, NULL);
	out->real = real;
	return 0;
}

void wspath_root_release(struct wspath_root *root)
{
	if (root->fd >= 0)
		close(root->fd);
	root->fd = -1;
	FREE_AND_NULL(root->path);
	FREE_AND_NULL(root->real);
}

/* If absolute `path` lies inside `dir`, the rest after it ("" or "x/y"); else NULL. */
static const char *strip_prefix(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path + 1;
	if (strncmp(path, dir, n) || (path[n] && path[n] != '/'))
		return NULL;
	return path + n + (path[n] == '/');
}

int wspath_normalize(struct buf *out, const struct wspath_root *root, const char *path)
{
	struct buf tmp = BUF_INIT;
	const char *rest;
	int ret = 0;

	if (!*path)
		return err_set(FX_EINVAL, "the path is empty");
	if (path[0] != '/') {
		ret = fold(&tmp, path, path, 0);
		if (!ret)
			buf_addbuf(out, &tmp);
		buf_release(&tmp);
		return ret;
	}
	/* Absolute: fold it first, so "/ws/a/../b" is judged as "/ws/b". */
	fold_abs(&tmp, path);
	rest = strip_prefix(tmp.buf, root->path);
	if (!rest)
		rest = strip_prefix(tmp.buf, root->real);
	if (rest)
		buf_addstr(out, rest);
	else
		ret = err_set(FX_EDENIED, "'%s' is outside the workspace (%s)", path, root->path);
	buf_release(&tmp);
	return ret;
}

void wspath_loc_release(struct wspath_loc *loc)
{
	if (loc->dirfd >= 0)
		close(loc->dirfd);
	loc->dirfd = -1;
	FREE_AND_NULL(loc->name);
	FREE_AND_NULL(loc->rel);
	loc->type = 0;
	loc->missing = 0;
}

/* The folders walked so far: descriptors and names, the workspace at the bottom. */
struct walk {
	int *fds;
	char **names;
	size_t nr, alloc;
};

static void walk_push(struct walk *w, int fd, const char *name)
{
	size_t alloc2 = w->alloc;

	ALLOC_GROW(w->fds, w->nr + 1, w->alloc);
	ALLOC_GROW(w->names, w->nr + 1, alloc2);
	w->fds[w->nr] = fd;
	w->names[w->nr] = xstrdup(name);
	w->nr++;
}

static void walk_pop(struct walk *w)
{
	w->nr--;
	close(w->fds[w->nr]);
	free(w->names[w->nr]);
}

static void walk_release(struct walk *w)
{
	while (w->nr)
		walk_pop(w);
	free(w->fds);
	free(w->names);
}

/* The canonical relative path of the folders on the walk, plus `name` if non-NULL. */
static void walk_path(struct buf *out, const struct walk *w, const char *name)
{
	size_t i;

	for (i = 1; i < w->nr; i++) {
		if (out->len)
			buf_addch(out, '/');
		buf_addstr(out, w->names[i]);
	}
	if (name && *name) {
		if (out->len)
			buf_addch(out, '/');
		buf_addstr(out, name);
	}
}

/* Push the components of `path` so that the first is popped first. */
static void push_components(struct strvec *todo, const char *path)
{
	struct strvec tmp = STRVEC_INIT;
	const char *p = path;
	size_t i;

	while (*p) {
		const char *e = strchrnul(p, '/');

		if (e > p) {
			char *c = xstrndup(p, (size_t)(e - p));

			strvec_push(&tmp, c);
			free(c);
		}
		p = *e ? e + 1 : e;
	}
	for (i = tmp.nr; i > 0; i--)
		strvec_push(todo, tmp.v[i - 1]);
	strvec_clear(&tmp);
}

static char *read_link(int fd)
{
	size_t size = 256;

	for (;;) {
		char *b = xmalloc(size);
		ssize_t n = readlinkat(fd, "", b, size);

		if (n < 0) {
			free(b);
			return NULL;
		}
		if ((size_t)n < size) {
			b[n] = '\0';
			return b;
		}
		free(b);
		if (size >= 65536) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		size *= 2;
	}
}

/*
 * The folders no tool enters: ".git" anywhere (the repository's objects,
 * hooks and config), and for changes ".forgex" anywhere (runs,
 * checkpoints, and the project file whose settings need trust; one below
 * the top is never read, but no tool makes one either). Both in any letter
 * case: ".GIT" is the same folder on a case-insensitive file system (a
 * mounted one, or git's core.ignoreCase checkout), and refusing it costs
 * nothing. `depth` is the number of folders above `comp`.
 */
static int protected_name(const char *comp, size_t depth, unsigned flags, const char *path)
{
	(void)depth;
	if (!strcasecmp(comp, ".git"))
		return err_set(FX_EDENIED, "'%s' is inside a .git folder, which the tools do not "
			       "touch; use git_status and git_diff", path);
	if ((flags & WSPATH_CHANGE) && !strcasecmp(comp, ".forgex"))
		return err_set(FX_EDENIED, "'%s' is inside .forgex, forgex's own folder (its "
			       "configuration, runs and checkpoints); the tools do not change it", path);
	return 0;
}

int wspath_locate(struct wspath_loc *out, const struct wspath_root *root, const char *path,
		  unsigned flags)
{
	struct buf rel = BUF_INIT, canon = BUF_INIT;
	struct strvec todo = STRVEC_INIT, create = STRVEC_INIT;
	struct walk w = { NULL, NULL, 0, 0 };
	char *final = NULL;
	mode_t type = 0;
	int ret, fd, links = 0;
	size_t i;

	if (flags & WSPATH_MKDIRS)
		flags |= WSPATH_MISSING_OK;
	ret = wspath_normalize(&rel, root, path);
	if (ret < 0)
		goto out;
	fd = openat(root->fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open the workspace");
		goto out;
	}
	walk_push(&w, fd, "");
	push_components(&todo, rel.buf);

	while (todo.nr) {
		char *comp = xstrdup(todo.v[todo.nr - 1]);
		int last = todo.nr == 1;
		struct stat st;
		char *target;

		strvec_pop(&todo);
		if (!strcmp(comp, ".")) {
			free(comp);
			continue;
		}
		if (!strcmp(comp, "..")) {
			free(comp);
			if (create.nr) {
				strvec_pop(&create);
				continue;
			}
			if (w.nr == 1) {
				ret = err_set(FX_EDENIED, "'%s' leads outside the workspace "
					      "through a symbolic link", path);
				goto out;
			}
			walk_pop(&w);
			continue;
		}
		ret = protected_name(comp, w.nr - 1 + create.nr, flags, path);
		if (ret < 0) {
			free(comp);
			goto out;
		}
		if (create.nr) {
			/* Below a folder still to be created nothing exists: no links to follow. */
			if (last) {
				final = comp;
			} else {
				strvec_push(&create, comp);
				free(comp);
			}
			continue;
		}
		fd = openat(w.fds[w.nr - 1], comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;

			if (e == ENOENT && last && (flags & WSPATH_MISSING_OK)) {
				final = comp;
				type = 0;
				break;
			}
			if (e == ENOENT && (flags & WSPATH_MKDIRS)) {
				strvec_push(&create, comp);
				free(comp);
				continue;
			}
			buf_reset(&canon);
			walk_path(&canon, &w, comp);
			if (e == ENOENT)
				ret = err_set(FX_ENOTFOUND, "'%s' does not exist", path);
			else if (e == ENOTDIR)
				ret = err_set(FX_EINVAL, "'%s': a component of the path is not a folder", path);
			else
				ret = err_set_errno(FX_EOS, "cannot open '%s'", canon.buf);
			free(comp);
			goto out;
		}
		if (fstat(fd, &st) < 0) {
			ret = err_set_errno(FX_EOS, "cannot stat '%s'", comp);
			close(fd);
			free(comp);
			goto out;
		}
		if (S_ISLNK(st.st_mode) && (!last || (flags & WSPATH_FOLLOW))) {
			const char *inside;

			if (++links > MAX_LINKS) {
				ret = err_set(FX_ELIMIT, "too many symbolic links in '%s'", path);
				close(fd);
				free(comp);
				goto out;
			}
			target = read_link(fd);
			close(fd);
			if (!target) {
				ret = err_set_errno(FX_EOS, "cannot read the symbolic link '%s'", comp);
				free(comp);
				goto out;
			}
			if (target[0] == '/') {
				struct buf folded = BUF_INIT;

				/* An absolute target counts only when it names a place inside. */
				fold_abs(&folded, target);
				inside = strip_prefix(folded.buf, root->real);
				if (!inside)
					inside = strip_prefix(folded.buf, root->path);
				if (!inside) {
					ret = err_set(FX_EDENIED, "'%s' leads outside the workspace: "
						      "'%s' is a symbolic link to '%s'", path, comp, target);
					buf_release(&folded);
					free(target);
					free(comp);
					goto out;
				}
				while (w.nr > 1)
					walk_pop(&w);
				push_components(&todo, inside);
				buf_release(&folded);
			} else {
				push_components(&todo, target);
			}
			free(target);
			free(comp);
			continue;
		}
		if (last) {
			close(fd);
			final = comp;
			type = st.st_mode & S_IFMT;
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			free(comp);
			ret = err_set(FX_EINVAL, "'%s': a component of the path is not a folder", path);
			goto out;
		}
		walk_push(&w, fd, comp);
		free(comp);
	}

	if ((flags & WSPATH_CHECK) && create.nr) {
		/* Checked, and nothing is created: name the path and stop. */
		buf_reset(&canon);
		walk_path(&canon, &w, NULL);
		for (i = 0; i < create.nr; i++) {
			if (canon.len)
				buf_addch(&canon, '/');
			buf_addstr(&canon, create.v[i]);
		}
		if (final && *final) {
			buf_addch(&canon, '/');
			buf_addstr(&canon, final);
		}
		out->dirfd = -1;
		out->name = final ? final : xstrdup(create.v[create.nr - 1]);
		out->rel = buf_detach(&canon, NULL);
		out->type = 0;
		out->missing = create.nr;
		final = NULL;
		ret = 0;
		goto out;
	}
	/* Only now, with the whole path checked, create the missing folders. */
	for (i = 0; i < create.nr; i++) {
		struct stat st;

		if (mkdirat(w.fds[w.nr - 1], create.v[i], 0777) < 0 && errno != EEXIST) {
			ret = err_set_errno(FX_EOS, "cannot create folder '%s'", create.v[i]);
			goto out;
		}
		fd = openat(w.fds[w.nr - 1], create.v[i], O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			ret = err_set(FX_EDENIED, "'%s' changed while it was being created; try again",
				      path);
			if (fd >= 0)
				close(fd);
			goto out;
		}
		walk_push(&w, fd, create.v[i]);
	}
	if (create.nr && !final) {
		/* The path ended in ".." within folders to create: it names the last one made. */
		final = xstrdup(w.names[w.nr - 1]);
		walk_pop(&w);
		type = S_IFDIR;
	}

	if (!final) {
		/* The path is a folder reached through the walk (or the workspace). */
		if (w.nr == 1) {
			final = xstrdup("");
			type = S_IFDIR;
		} else {
			final = xstrdup(w.names[w.nr - 1]);
			type = S_IFDIR;
			walk_pop(&w);
		}
	}

	buf_reset(&canon);
	walk_path(&canon, &w, NULL);
	if (beneath_have_openat2()) {
		fd = open_beneath(root, canon.buf, O_RDONLY | O_DIRECTORY);
		if (fd < 0) {
			ret = errno == ELOOP || errno == EXDEV || errno == ENOENT || errno == ENOTDIR
				? err_set(FX_EDENIED, "'%s' changed while it was being opened; try again", path)
				: err_set_errno(FX_EOS, "cannot open the folder of '%s'", path);
			goto out;
		}
	} else {
		fd = openat(w.fds[w.nr - 1], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			ret = err_set_errno(FX_EOS, "cannot open the folder of '%s'", path);
			goto out;
		}
	}
	buf_reset(&canon);
	walk_path(&canon, &w, final);
	out->dirfd = fd;
	out->name = final;
	out->rel = buf_detach(&canon, NULL);
	out->type = type;
	out->missing = 0;
	final = NULL;
	ret = 0;
out:
	free(final);
	walk_release(&w);
	strvec_clear(&todo);
	strvec_clear(&create);
	buf_release(&rel);
	buf_release(&canon);
	return ret;
}

int wspath_open_loc(const struct wspath_root *root, const struct wspath_loc *loc, int oflags)
{
	int fd;

	if (!*loc->name)
		fd = openat(loc->dirfd, ".", oflags | O_CLOEXEC);
	else if (beneath_have_openat2())
		fd = open_beneath(root, loc->rel, oflags);
	else
		fd = openat(loc->dirfd, loc->name, oflags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == EXDEV)
			return err_set(FX_EDENIED, "'%s' changed while it was being opened; try again",
				       loc->rel);
		if (errno == ENOENT)
			return err_set(FX_ENOTFOUND, "'%s' does not exist", loc->rel);
		return err_set_errno(FX_EOS, "cannot open '%s'", loc->rel);
	}
	return fd;
}

int wspath_open_dir(const struct wspath_root *root, const char *rel)
{
	int fd = open_beneath(root, rel, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return err_set_errno(errno == ENOENT ? FX_ENOTFOUND : FX_EDENIED,
				     "cannot open folder '%s'", rel);
	return fd;
}

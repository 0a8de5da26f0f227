/* Planning a restore, changing nothing; see restore.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/strvec.h"
#include "vcs/perms.h"
#include "vcs/odb.h"
#include "vcs/restore.h"
#include "vcs/snapshot.h"
#include "vcs/vcs_internal.h"

/* --------------------------------------------------------------- restore */

void restore_tree_release(struct tree_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i].path);
	FREE_AND_NULL(l->v);
	l->nr = l->alloc = 0;
}

static int tree_walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
	struct tree_list *l = payload;
	struct tree_entry *t;

	/* forgex's own folder is never restored (old checkpoints may hold it) */
	if (!*root && !strcmp(git_tree_entry_name(e), ".forgex"))
		return 1;
	if (git_tree_entry_type(e) == GIT_OBJECT_TREE)
		return 0;
	/* nor is a nested repository */
	if (git_tree_entry_filemode(e) == GIT_FILEMODE_COMMIT)
		return 0;
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	t = &l->v[l->nr++];
	t->path = xstrfmt("%s%s", root, git_tree_entry_name(e));
	git_oid_cpy(&t->oid, git_tree_entry_id(e));
	t->mode = (uint32_t)git_tree_entry_filemode(e);
	return 0;
}

static int tree_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tree_entry *)a)->path, ((const struct tree_entry *)b)->path);
}

/*
 * Not git_index_read_tree(): an index without a repository applies
 * libgit2's default path rules (core.protectNTFS), which reject names
 * like "git~1" that a Linux tree may hold and the shadow recorded.
 */
int restore_tree_load(struct tree_list *out, git_tree *tree)
{
	int gerr = git_tree_walk(tree, GIT_TREEWALK_PRE, tree_walk_cb, out);

	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the checkpoint's tree");
	if (out->nr)
		qsort(out->v, out->nr, sizeof(*out->v), tree_entry_cmp);
	return 0;
}

/* Index of the first entry whose path is >= `path`. */
static size_t tree_list_lower(const struct tree_list *l, const char *path)
{
	size_t lo = 0, hi = l->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(l->v[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct tree_entry *tree_list_find(const struct tree_list *l, const char *path)
{
	size_t i = tree_list_lower(l, path);

	return i < l->nr && !strcmp(l->v[i].path, path) ? &l->v[i] : NULL;
}

void restore_plan_release(struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		free(p->items[i].path);
	FREE_AND_NULL(p->items);
	p->nr = p->alloc = 0;
}

static void plan_add(struct plan *p, enum change_kind kind, const char *path,
		     const struct tree_entry *want, int perms)
{
	struct change *c;

	ALLOC_GROW(p->items, p->nr + 1, p->alloc);
	c = &p->items[p->nr++];
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->path = xstrdup(path);
	c->perms = perms;
	if (want) {
		git_oid_cpy(&c->oid, &want->oid);
		c->mode = want->mode;
	}
}

/*
 * A path from a checkpoint must stay inside the workspace and out of the
 * user's repository: no empty, ".", ".." or ".git" component (`.forgex`
 * at the top is skipped when the tree is loaded). Trees we wrote never
 * hold such paths; a damaged or planted shadow might.
 */
static int check_safe_path(const char *path)
{
	const char *p = path;

	if (!*path || *path == '/')
		goto bad;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (!n || (n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2)) ||
		    (n == 4 && !strncasecmp(p, ".git", 4)))
			goto bad;
		if (!p[n])
			return 0;
		p += n + 1;
	}
bad:
	return err_set(FX_EINVAL, "the checkpoint holds an unsafe path '%s'; refusing to restore",
		       path);
}

/*
 * Compare the current tree (`now`, with the permission bits of its files
 * in `now_perms`) with the checkpoint's (`want`, `want_perms`).
 */
int restore_make_plan(struct plan *plan, git_index *now, const struct snapshot *now_snap,
		      const struct tree_list *want, const struct perm_map *want_perms,
		      const struct strvec *want_dirs)
{
	const struct perm_map *now_perms = &now_snap->perms;
	size_t i = 0, j = 0, n = git_index_entrycount(now), m = want->nr;
	int ret;

	/* empty folders: made when missing, removed when the checkpoint has none there */
	for (i = 0; i < want_dirs->nr; i++) {
		if ((ret = check_safe_path(want_dirs->v[i])) < 0)
			return ret;
		if (!strvec_has_sorted(&now_snap->empty_dirs, want_dirs->v[i]))
			plan_add(plan, CHANGE_MKDIR, want_dirs->v[i], NULL, -1);
	}
	for (i = 0; i < now_snap->empty_dirs.nr; i++)
		if (!restore_keeps_dir(want, want_dirs, now_snap->empty_dirs.v[i]))
			plan_add(plan, CHANGE_RMDIR, now_snap->empty_dirs.v[i], NULL, -1);
	i = 0;

	while (i < n || j < m) {
		const git_index_entry *a = i < n ? git_index_get_byindex(now, i) : NULL;
		const struct tree_entry *b = j < m ? &want->v[j] : NULL;
		int cmp, perms = -1;

		/* nested repositories are never touched */
		if (a && a->mode == GIT_FILEMODE_COMMIT) {
			i++;
			continue;
		}
		if (b && b->mode == GIT_FILEMODE_COMMIT) {
			j++;
			continue;
		}
		cmp = !a ? 1 : !b ? -1 : strcmp(a->path, b->path);
		if (cmp < 0) {
			plan_add(plan, CHANGE_DELETE, a->path, NULL, -1);
			i++;
			continue;
		}
		if ((ret = check_safe_path(b->path)) < 0)
			return ret;
		if (vcs_is_file_mode(b->mode) && want_perms->known)
			perms = (int)perm_map_get(want_perms, b->path, b->mode);
		if (cmp > 0)
			plan_add(plan, CHANGE_WRITE, b->path, b, perms);
		else if (!git_oid_equal(&a->id, &b->oid) || (a->mode == GIT_FILEMODE_LINK) !=
			 (b->mode == GIT_FILEMODE_LINK))
			plan_add(plan, CHANGE_WRITE, b->path, b, perms);
		else if (a->mode != b->mode ||
			 (perms >= 0 && perm_map_get(now_perms, a->path, a->mode) != (unsigned)perms))
			plan_add(plan, CHANGE_CHMOD, b->path, b, perms);
		if (cmp == 0)
			i++;
		j++;
	}
	return 0;
}

/* Whether `path` is recorded now but not in the checkpoint: the restore deletes it. */
static int will_delete(git_index *now, const struct tree_list *want, const char *path)
{
	return git_index_get_bypath(now, path, 0) && !tree_list_find(want, path);
}

/* Whether the checkpoint has anything under folder `dir` ("a/b", no slash). */
int restore_tree_has_dir(const struct tree_list *want, const char *dir)
{
	char *prefix = xstrfmt("%s/", dir);
	size_t i = tree_list_lower(want, prefix);
	int found = i < want->nr && !strncmp(want->v[i].path, prefix, strlen(prefix));

	free(prefix);
	return found;
}

int strvec_has_sorted(const struct strvec *v, const char *s)
{
	size_t lo = 0, hi = v->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(v->v[mid], s);

		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int restore_keeps_dir(const struct tree_list *want, const struct strvec *want_dirs,
		      const char *dir)
{
	size_t i, n = strlen(dir);

	if (restore_tree_has_dir(want, dir))
		return 1;
	for (i = 0; i < want_dirs->nr; i++)
		if (!strncmp(want_dirs->v[i], dir, n) &&
		    (!want_dirs->v[i][n] || want_dirs->v[i][n] == '/'))
			return 1;
	return 0;
}

/*
 * Check that everything inside folder `dirfd` (at `rel`) is recorded now
 * and so deleted by the restore: anything else is an ignored file the
 * restore would destroy.
 */
static int check_dir_deletable(int dirfd, const char *rel, git_index *now,
			       const struct tree_list *want, int depth)
{
	DIR *d;
	struct dirent *de;
	int ret = 0, fd;

	if (depth > 256)
		return err_set(FX_ELIMIT, "folders nested too deep under '%s'", rel);
	fd = dup(dirfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_set_errno(FX_EOS, "cannot read folder '%s'", rel);
	}
	rewinddir(d);
	while (!ret && (de = readdir(d))) {
		struct stat st;
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = xstrfmt("%s/%s", rel, de->d_name);
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = err_set_errno(FX_EOS, "cannot inspect '%s'", sub);
		} else if (S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sfd < 0) {
				ret = err_set_errno(FX_EOS, "cannot open folder '%s'", sub);
			} else {
				ret = check_dir_deletable(sfd, sub, now, want, depth + 1);
				close(sfd);
			}
		} else if (!will_delete(now, want, sub)) {
			ret = err_set(FX_EDENIED,
				      "restoring would delete '%s', which no checkpoint holds "
				      "(it is ignored); move it away and try again", sub);
		}
		free(sub);
	}
	closedir(d);
	return ret;
}

/*
 * Before changing anything: every file the restore writes must be
 * reachable without destroying an ignored file. A link on the way is fine
 * (it is replaced, never followed); a file or folder recorded now is
 * deleted first; anything else is refused. An ignored file or link at the
 * very path is overwritten: it goes to `overwrite`, so the backup keeps it.
 */
int restore_check_write(struct strvec *overwrite, int rootfd, const struct change *c,
		       git_index *now, const struct tree_list *want)
{
	struct buf so_far = BUF_INIT;
	const char *p = c->path;
	int fd = dup(rootfd), ret = 0;

	if (fd < 0)
		return err_set_errno(FX_EOS, "dup");
	for (;;) {
		size_t n = strcspn(p, "/");
		int last = !p[n];
		char *comp = xstrndup(p, n);
		struct stat st;

		if (so_far.len)
			buf_addch(&so_far, '/');
		buf_add(&so_far, p, n);
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && errno != ENOTDIR)
				ret = err_set_errno(FX_EOS, "cannot inspect '%s'", so_far.buf);
			free(comp);
			break;
		}
		if (last && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
		    !git_index_get_bypath(now, so_far.buf, 0))
			strvec_push(overwrite, so_far.buf);
		if (S_ISLNK(st.st_mode)) {
			free(comp);
			break;
		}
		if (last) {
			if (S_ISDIR(st.st_mode) && c->kind != CHANGE_MKDIR) {
				int dfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);

				if (dfd < 0) {
					ret = err_set_errno(FX_EOS, "cannot open folder '%s'",
							    so_far.buf);
				} else {
					ret = check_dir_deletable(dfd, so_far.buf, now, want, 0);
					close(dfd);
				}
			}
			free(comp);
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (!will_delete(now, want, so_far.buf))
				ret = err_set(FX_EDENIED,
					      "restoring '%s' would delete '%s', which no checkpoint "
					      "holds (it is ignored); move it away and try again",
					      c->path, so_far.buf);
			free(comp);
			break;
		}
		{
			int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			free(comp);
			if (next < 0) {
				ret = err_set_errno(FX_EOS, "cannot open folder '%s'", so_far.buf);
				break;
			}
			close(fd);
			fd = next;
		}
		p += n + 1;
	}
	close(fd);
	buf_release(&so_far);
	return ret;
}

void restore_tree_dirs(struct strvec *out, const struct tree_list *want)
{
	struct strvec all = STRVEC_INIT;
	const char *prev = NULL;
	size_t i;

	for (i = 0; i < want->nr; i++)
		vcs_add_parent_dirs(&all, want->v[i].path, &prev);
	vcs_finish_dirs(out, &all);
}

/* Every object the checkpoint needs must be readable before anything changes. */
int restore_check_objects(struct checkpoints *cps, const struct plan *plan, const char *id)
{
	git_odb *odb = NULL;
	size_t i;
	int gerr, ret = 0;

	gerr = git_repository_odb(&odb, cps->repo);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint objects");
	for (i = 0; i < plan->nr && !ret; i++) {
		const struct change *c = &plan->items[i];
		git_odb_object *obj = NULL;
		git_oid got;

		if (c->kind != CHANGE_WRITE && c->kind != CHANGE_CHMOD)
			continue;
		/* read whole and hashed again: "exists" is not enough */
		gerr = git_odb_read(&obj, odb, &c->oid);
		if (!gerr && (git_odb_object_type(obj) != GIT_OBJECT_BLOB ||
			      git_odb_hash(&got, git_odb_object_data(obj), git_odb_object_size(obj),
					   GIT_OBJECT_BLOB) < 0 || !git_oid_equal(&got, &c->oid)))
			gerr = GIT_EMISMATCH;
		git_odb_object_free(obj);
		if (!gerr)
			continue;
		git_error_clear();
		if (cps->loose && vcs_loose_was_damaged(cps->loose, &c->oid))
			ret = err_set(FX_ENOTFOUND,
				      "checkpoint %.12s is damaged: the content of '%s' (%s) is cut "
				      "short or corrupt (in %s/objects, or in the git repository it "
				      "borrows from); nothing was changed",
				      id, c->path, git_oid_tostr_s(&c->oid), cps->shadow);
		else
			ret = err_set(FX_ENOTFOUND,
				      "checkpoint %.12s is damaged: the content of '%s' (%s) is missing "
				      "(was it pruned from the git repository it borrows from?); "
				      "nothing was changed", id, c->path, git_oid_tostr_s(&c->oid));
	}
	git_odb_free(odb);
	return ret;
}


/* Path by path: snapshots, single-path hashes and restores; see paths.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "vcs/diff.h"
#include "vcs/odb.h"
#include "vcs/paths.h"
#include "vcs/shadow.h"
#include "vcs/snapshot.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

#define MAX_HASH_BYTES ((size_t)1 << 30)	/* a file larger than this is not hashed */

static int tree_of(git_tree **out, struct checkpoints *cps, const char *id)
{
	git_oid oid;
	git_object *obj = NULL;
	int gerr;

	if (!id || strlen(id) != 40 || git_oid_fromstr(&oid, id) < 0)
		return err_set(FX_EINVAL, "'%s' is not a tree or checkpoint id", id ? id : "");
	gerr = git_object_lookup(&obj, checkpoint__repo(cps), &oid, GIT_OBJECT_ANY);
	if (!gerr)
		gerr = git_object_peel((git_object **)out, obj, GIT_OBJECT_TREE);
	git_object_free(obj);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read tree %.12s", id);
	return 0;
}

int vcs_snapshot(char out[VCS_OID_HEX], struct checkpoints *cps)
{
	git_oid oid;
	int ret = checkpoint__lock(cps);

	if (ret < 0)
		return ret;
	ret = checkpoint__capture_tree(&oid, NULL, cps);
	checkpoint__unlock(cps);
	if (ret < 0)
		return err_prefix(ret, "cannot take a snapshot of the tree");
	git_oid_tostr(out, VCS_OID_HEX, &oid);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int make_diff(git_diff **out, struct checkpoints *cps, const char *a, const char *b,
		     const struct strvec *paths, int context)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_tree *ta = NULL, *tb = NULL;
	int ret, gerr;

	ret = tree_of(&ta, cps, a);
	if (!ret)
		ret = tree_of(&tb, cps, b);
	if (ret < 0)
		goto out;
	opts.flags = GIT_DIFF_NORMAL;
	opts.context_lines = (uint32_t)context;
	if (paths) {
		opts.flags |= GIT_DIFF_DISABLE_PATHSPEC_MATCH;
		opts.pathspec.strings = (char **)paths->v;
		opts.pathspec.count = paths->nr;
	}
	gerr = git_diff_tree_to_tree(out, checkpoint__repo(cps), ta, tb, &opts);
	if (gerr < 0)
		ret = vcs_git_error(gerr, "cannot compare %.12s with %.12s", a, b);
out:
	git_tree_free(ta);
	git_tree_free(tb);
	return ret;
}

int vcs_tree_changes(struct strvec *out, struct checkpoints *cps, const char *a, const char *b)
{
	struct strvec found = STRVEC_INIT;
	git_diff *diff = NULL;
	size_t i, n;
	int ret = make_diff(&diff, cps, a, b, NULL, 0);

	if (ret < 0)
		return ret;
	n = git_diff_num_deltas(diff);
	for (i = 0; i < n; i++) {
		const git_diff_delta *d = git_diff_get_delta(diff, i);

		strvec_push(&found, d->old_file.path);
		if (strcmp(d->old_file.path, d->new_file.path))
			strvec_push(&found, d->new_file.path);
	}
	if (found.nr)
		qsort(found.v, found.nr, sizeof(*found.v), cmp_str);
	for (i = 0; i < found.nr; i++)
		if (!i || strcmp(found.v[i], found.v[i - 1]))
			strvec_push(out, found.v[i]);
	strvec_clear(&found);
	git_diff_free(diff);
	return 0;
}

int vcs_tree_entry(char oid[VCS_OID_HEX], unsigned *mode, struct checkpoints *cps,
		   const char *tree, const char *path)
{
	git_tree *t = NULL;
	git_tree_entry *e = NULL;
	int ret = tree_of(&t, cps, tree), gerr;

	oid[0] = '\0';
	if (mode)
		*mode = 0;
	if (ret < 0)
		return ret;
	gerr = git_tree_entry_bypath(&e, t, path);
	if (gerr == GIT_ENOTFOUND) {
		git_error_clear();
		ret = 0;
	} else if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot look up '%s' in %.12s", path, tree);
	} else if (git_tree_entry_type(e) == GIT_OBJECT_TREE) {
		snprintf(oid, VCS_OID_HEX, "dir");
		if (mode)
			*mode = GIT_FILEMODE_TREE;
		ret = 1;
	} else {
		git_oid_tostr(oid, VCS_OID_HEX, git_tree_entry_id(e));
		if (mode)
			*mode = (unsigned)git_tree_entry_filemode(e);
		ret = 1;
	}
	git_tree_entry_free(e);
	git_tree_free(t);
	return ret;
}

/*
 * Open the folder holding `rel` below the workspace `root`, never following
 * a link; with `create`, missing folders are made. `*base` points into
 * `rel` at the last component.
 */
static int open_parent(int *out, const char *root, const char *rel, int create,
		       const char **base)
{
	const char *p = rel, *slash;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot open %s", root);
	while ((slash = strchr(p, '/'))) {
		char name[NAME_MAX + 1];
		size_t n = (size_t)(slash - p);
		int next;

		if (!n || n > NAME_MAX || (n == 2 && !memcmp(p, "..", 2)) ||
		    (n == 1 && *p == '.')) {
			close(fd);
			return err_set(FX_EINVAL, "'%s' is not a path inside the workspace", rel);
		}
		memcpy(name, p, n);
		name[n] = '\0';
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat(fd, name, 0777) < 0 && errno != EEXIST) {
				int e = errno;

				close(fd);
				errno = e;
				return err_set_errno(FX_EOS, "cannot make the folder of '%s'", rel);
			}
			next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (next < 0) {
			int e = errno;

			close(fd);
			errno = e;
			if (e == ENOENT)
				return FX_ENOTFOUND;
			return err_set_errno(FX_EOS, "cannot open the folder of '%s'%s", rel,
					     e == ELOOP || e == ENOTDIR ? " (a link or file is on the way)"
									 : "");
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*base = p;
	*out = fd;
	return 0;
}

#define HASH_CHUNK ((size_t)64 << 10)

/*
 * The blob id of the regular file open as `fd` (`size` bytes), read
 * HASH_CHUNK at a time: with `store` written into the shadow as it is read
 * (a streamed write of its own object store, as a snapshot's), else only
 * hashed. Memory does not grow with the file (a command controls its size).
 */
static int hash_streamed(git_oid *id, struct checkpoints *cps, int fd, off_t size, int store,
			 const char *rel)
{
	git_odb *odb = NULL;
	git_odb_stream *s = NULL;
	char *chunk, name[40];
	off_t off = 0;
	int gerr, ret = 0;

	if (!store) {
		snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
		gerr = git_odb_hashfile(id, name, GIT_OBJECT_BLOB);
		return gerr < 0 ? vcs_git_error(gerr, "cannot hash '%s'", rel) : 0;
	}
	if (!cps->loose)
		return err_set(FX_ERROR, "cannot store '%s': no object store", rel);
	if ((gerr = git_repository_odb(&odb, checkpoint__repo(cps))) < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint objects");
	vcs_loose_allow_stream(cps->loose, 1);
	gerr = git_odb_open_wstream(&s, odb, (git_object_size_t)size, GIT_OBJECT_BLOB);
	vcs_loose_allow_stream(cps->loose, 0);
	chunk = xmalloc(HASH_CHUNK);
	while (!gerr && !ret && off < size) {
		size_t want = (size_t)(size - off) < HASH_CHUNK ? (size_t)(size - off) : HASH_CHUNK;
		ssize_t n = pread(fd, chunk, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ret = n ? err_set_errno(FX_EOS, "cannot read '%s'", rel)
				: err_set(FX_EOS, "'%s' changed while it was read", rel);
		else if (!(gerr = git_odb_stream_write(s, chunk, (size_t)n)))
			off += n;
	}
	if (!gerr && !ret)
		gerr = git_odb_stream_finalize_write(id, s);
	if (gerr < 0 && !ret)
		ret = vcs_git_error(gerr, "cannot store '%s'", rel);
	git_odb_stream_free(s);
	git_odb_free(odb);
	free(chunk);
	return ret;
}

int vcs_hash_path(char oid[VCS_OID_HEX], unsigned *mode, struct checkpoints *cps,
		  const char *rel, int store)
{
	const char *base;
	struct stat st;
	struct buf data = BUF_INIT;
	git_oid id;
	int dfd, ret, gerr;

	oid[0] = '\0';
	if (mode)
		*mode = 0;
	ret = open_parent(&dfd, checkpoint_workspace(cps), rel, 0, &base);
	if (ret == FX_ENOTFOUND)
		return 0;
	if (ret < 0)
		return ret;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = errno == ENOENT || errno == ENOTDIR ? 0
			: err_set_errno(FX_EOS, "cannot look at '%s'", rel);
		goto out;
	}
	if (mode)
		*mode = st.st_mode;
	if (S_ISDIR(st.st_mode)) {
		snprintf(oid, VCS_OID_HEX, "dir");
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dfd, base, target, sizeof(target));

		if (n < 0 || (size_t)n >= sizeof(target)) {
			ret = err_set_errno(FX_EOS, "cannot read the link '%s'", rel);
			goto out;
		}
		buf_add(&data, target, (size_t)n);
	} else if (S_ISREG(st.st_mode)) {
		int fd;

		if ((size_t)st.st_size > MAX_HASH_BYTES) {
			ret = err_set(FX_ELIMIT, "'%s' is larger than %zu bytes", rel, MAX_HASH_BYTES);
			goto out;
		}
		fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			ret = err_set_errno(FX_EOS, "cannot open '%s'", rel);
			goto out;
		}
		if (fstat(fd, &st) < 0)
			ret = err_set_errno(FX_EOS, "cannot look at '%s'", rel);
		else if (!S_ISREG(st.st_mode) || (size_t)st.st_size > MAX_HASH_BYTES)
			ret = err_set(FX_ELIMIT, "'%s' changed while it was looked at", rel);
		else if (store && (uint64_t)st.st_size > cps->max_file_bytes)
			/* what no checkpoint may hold (a restore reads a blob whole) */
			ret = err_set(FX_ELIMIT, "'%s' is %lld bytes, larger than [checkpoints] "
				      "max_file_bytes (%llu): not stored", rel, (long long)st.st_size,
				      (unsigned long long)cps->max_file_bytes);
		else
			ret = hash_streamed(&id, cps, fd, st.st_size, store, rel);
		close(fd);
		if (ret < 0)
			goto out;
		git_oid_tostr(oid, VCS_OID_HEX, &id);
		ret = 1;
		goto out;
	} else {
		snprintf(oid, VCS_OID_HEX, "special");
		goto out;
	}
	if (store)
		gerr = git_blob_create_from_buffer(&id, checkpoint__repo(cps), data.buf, data.len);
	else
		gerr = git_odb_hash(&id, data.buf, data.len, GIT_OBJECT_BLOB);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot %s '%s'", store ? "store" : "hash", rel);
		goto out;
	}
	git_oid_tostr(oid, VCS_OID_HEX, &id);
	ret = 1;
out:
	buf_release(&data);
	close(dfd);
	return ret;
}

int vcs_blob_read(struct buf *out, struct checkpoints *cps, const char *oid)
{
	git_oid id;
	git_blob *blob = NULL;
	int gerr;

	if (git_oid_fromstr(&id, oid) < 0)
		return err_set(FX_EINVAL, "'%s' is not a blob id", oid);
	gerr = git_blob_lookup(&blob, checkpoint__repo(cps), &id);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read blob %.12s", oid);
	buf_add(out, git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
	git_blob_free(blob);
	return 0;
}

static mode_t file_mode(int exec, const struct stat *old)
{
	mode_t um = umask(0), m;

	umask(um);
	m = old ? (old->st_mode & 0777) : (0666 & ~um);
	if (exec)
		m |= (m & 0444) >> 2;
	else
		m &= ~(mode_t)0111;
	return m;
}

/* Remove the folders above `rel` that are empty now, deepest first. */
static void remove_empty_parents(const char *root, const char *rel)
{
	char *p = xstrdup(rel), *slash;
	char *full;

	while ((slash = strrchr(p, '/'))) {
		*slash = '\0';
		full = xstrfmt("%s/%s", root, p);
		/* open_parent already refused links on the way; rmdir does not follow one */
		if (rmdir(full) < 0) {
			free(full);
			break;
		}
		free(full);
	}
	free(p);
}

int vcs_put_path(struct checkpoints *cps, const char *rel, const void *data, size_t len,
		 unsigned gitmode, unsigned perm)
{
	const char *root = checkpoint_workspace(cps), *base;
	char tmp[FSUTIL_TMP_NAME_MAX];
	struct stat st;
	int dfd, ret, have, fd = -1;

	ret = open_parent(&dfd, root, rel, gitmode != 0, &base);
	if (ret == FX_ENOTFOUND && !gitmode)
		return 0;	/* nothing there: nothing to remove */
	if (ret < 0)
		return ret == FX_ENOTFOUND ? err_set(FX_ENOTFOUND, "its folder is gone") : ret;
	have = !fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW);
	if (!gitmode) {
		if (have && S_ISDIR(st.st_mode)) {
			if (unlinkat(dfd, base, AT_REMOVEDIR) < 0)
				ret = err_set_errno(FX_EOS, "it is a folder now and cannot be removed");
		} else if (have && unlinkat(dfd, base, 0) < 0) {
			ret = err_set_errno(FX_EOS, "cannot remove it");
		}
		close(dfd);
		if (!ret)
			remove_empty_parents(root, rel);
		return ret;
	}
	if (have && S_ISDIR(st.st_mode)) {
		/* an empty folder is in the way: take it away, anything else is refused */
		if (unlinkat(dfd, base, AT_REMOVEDIR) < 0) {
			close(dfd);
			return err_set(FX_EEXISTS, "a folder that is not empty is there now");
		}
		have = 0;
	}
	{
		/* the journal (when one is open) names the temporary file before it exists */
		struct fsutil_tmp_hook hook = cps->tmp_hook;
		char *target = gitmode == GIT_FILEMODE_LINK ? xstrndup(data, len) : NULL;

		hook.rel = rel;
		fd = fsutil_tmp_create(tmp, dfd, base, target, &hook);
		free(target);
		if (fd < 0) {
			close(dfd);
			return fd;
		}
	}
	ret = 0;
	if (gitmode != GIT_FILEMODE_LINK) {
		ret = fsutil_write_all(fd, data, len);
		if (!ret && fchmod(fd, perm ? (mode_t)(perm & 07777) :
				   file_mode(gitmode == GIT_FILEMODE_BLOB_EXECUTABLE,
					     have && S_ISREG(st.st_mode) ? &st : NULL)) < 0)
			ret = err_set_errno(FX_EOS, "cannot set its mode");
		if (!ret && fsync(fd) < 0)
			ret = err_set_errno(FX_EOS, "cannot flush it to disk");
		if (close(fd) < 0 && !ret)
			ret = err_set_errno(FX_EOS, "cannot close it");
	}
	if (!ret && renameat(dfd, tmp, dfd, base) < 0)
		ret = err_set_errno(FX_EOS, "cannot rename it into place");
	if (ret < 0)
		unlinkat(dfd, tmp, 0);
	else if (fsync(dfd) < 0 && errno != EINVAL && errno != EROFS)
		ret = err_set_errno(FX_EOS, "cannot flush its folder");
	close(dfd);
	return ret;
}

int vcs_restore_paths(struct checkpoints *cps, const char *tree, const struct strvec *paths,
		      struct strvec *failed)
{
	git_tree *t = NULL;
	git_tree_entry **entries;
	git_blob **blobs;
	size_t i;
	int ret, nfailed = 0;

	ret = tree_of(&t, cps, tree);
	if (ret < 0)
		return ret;
	entries = xcalloc(paths->nr + 1, sizeof(*entries));
	blobs = xcalloc(paths->nr + 1, sizeof(*blobs));
	/* every object first: a damaged store changes nothing */
	for (i = 0; i < paths->nr; i++) {
		int gerr = git_tree_entry_bypath(&entries[i], t, paths->v[i]);

		if (gerr == GIT_ENOTFOUND) {
			git_error_clear();
			entries[i] = NULL;
			continue;
		}
		if (!gerr && git_tree_entry_type(entries[i]) != GIT_OBJECT_BLOB) {
			ret = err_set(FX_EINVAL, "'%s' is a folder in %.12s", paths->v[i], tree);
			goto out;
		}
		if (!gerr)
			gerr = git_blob_lookup(&blobs[i], checkpoint__repo(cps),
					       git_tree_entry_id(entries[i]));
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read '%s' of %.12s (nothing was changed)",
					    paths->v[i], tree);
			goto out;
		}
	}
	for (i = 0; i < paths->nr; i++) {
		const void *data = blobs[i] ? git_blob_rawcontent(blobs[i]) : NULL;
		size_t len = blobs[i] ? (size_t)git_blob_rawsize(blobs[i]) : 0;
		unsigned gm = entries[i] ? (unsigned)git_tree_entry_filemode(entries[i]) : 0;

		if (vcs_put_path(cps, paths->v[i], data, len, gm, 0) < 0) {
			strvec_pushf(failed, "%s: %s", paths->v[i], err_last());
			err_clear();
			nfailed++;
		}
	}
	ret = nfailed;
out:
	for (i = 0; i < paths->nr; i++) {
		git_blob_free(blobs[i]);
		git_tree_entry_free(entries[i]);
	}
	free(entries);
	free(blobs);
	git_tree_free(t);
	return ret;
}

#define COLOR_RESET "\033[m"

static int print_cb(const git_diff_delta *delta, const git_diff_hunk *hunk,
		    const git_diff_line *line, void *payload)
{
	struct buf *out = ((struct buf **)payload)[0];
	int color = ((struct buf **)payload)[1] != NULL;
	const char *c = NULL;
	char origin = 0;

	(void)delta;
	(void)hunk;
	switch (line->origin) {
	case GIT_DIFF_LINE_ADDITION: c = "\033[32m"; origin = '+'; break;
	case GIT_DIFF_LINE_DELETION: c = "\033[31m"; origin = '-'; break;
	case GIT_DIFF_LINE_CONTEXT: origin = ' '; break;
	case GIT_DIFF_LINE_FILE_HDR: c = "\033[1m"; break;
	case GIT_DIFF_LINE_HUNK_HDR: c = "\033[36m"; break;
	default: break;
	}
	if (color && c)
		buf_addstr(out, c);
	if (origin)
		buf_addch(out, origin);
	if (color && c && line->content_len && line->content[line->content_len - 1] == '\n') {
		buf_add(out, line->content, line->content_len - 1);
		buf_addstr(out, COLOR_RESET "\n");
	} else {
		buf_add(out, line->content, line->content_len);
		if (color && c)
			buf_addstr(out, COLOR_RESET);
	}
	return 0;
}

int vcs_diff_trees(struct buf *out, size_t *changed, struct checkpoints *cps, const char *a,
		   const char *b, const struct strvec *paths, unsigned flags)
{
	git_diff *diff = NULL;
	git_diff_stats *stats = NULL;
	git_buf sbuf = GIT_BUF_INIT;
	int ret, gerr = 0;

	if (paths && !paths->nr) {
		if (changed)
			*changed = 0;
		return 0;
	}
	ret = make_diff(&diff, cps, a, b, paths, 3);
	if (ret < 0)
		return ret;
	if (changed)
		*changed = git_diff_num_deltas(diff);
	if (!git_diff_num_deltas(diff))
		goto out;
	if (flags & VCS_DIFF_STAT) {
		gerr = git_diff_get_stats(&stats, diff);
		if (!gerr)
			gerr = git_diff_stats_to_buf(&sbuf, stats, GIT_DIFF_STATS_FULL |
						     GIT_DIFF_STATS_INCLUDE_SUMMARY, 80);
		if (!gerr)
			buf_add(out, sbuf.ptr, sbuf.size);
	} else {
		struct buf *pl[2] = { out, (flags & VCS_DIFF_COLOR) ? out : NULL };

		gerr = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, print_cb, pl);
	}
	if (gerr < 0)
		ret = vcs_git_error(gerr, "cannot format the diff");
out:
	git_buf_dispose(&sbuf);
	git_diff_stats_free(stats);
	git_diff_free(diff);
	return ret;
}

int vcs_hash_buffer(char oid[VCS_OID_HEX], const void *data, size_t len)
{
	git_oid id;
	int gerr = git_odb_hash(&id, data, len, GIT_OBJECT_BLOB);

	if (gerr < 0)
		return vcs_git_error(gerr, "cannot hash");
	git_oid_tostr(oid, VCS_OID_HEX, &id);
	return 0;
}

int vcs_hash_fd(char oid[VCS_OID_HEX], int fd)
{
	/* libgit2 hashes a file as it reads it only by name: this very file's */
	char name[40];
	git_oid id;
	int gerr;

	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	gerr = git_odb_hashfile(&id, name, GIT_OBJECT_BLOB);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot hash");
	git_oid_tostr(oid, VCS_OID_HEX, &id);
	return 0;
}

int vcs_head(char out[VCS_OID_HEX], const char *workspace)
{
	git_repository *repo = NULL;
	git_oid id;
	int gerr;

	out[0] = '\0';
	gerr = git_repository_open_ext(&repo, workspace, 0, NULL);
	if (!gerr)
		gerr = git_reference_name_to_id(&id, repo, "HEAD");
	git_repository_free(repo);
	if (gerr < 0)
		return vcs_git_error(gerr, "no commit at HEAD in %s", workspace);
	git_oid_tostr(out, VCS_OID_HEX, &id);
	return 0;
}

/* ---- empty folders a run made ---- */

struct dir_walk {
	struct strvec *dirs;
};

static int push_tree_dirs(const char *root, const git_tree_entry *e, void *payload)
{
	struct dir_walk *w = payload;
	char *p;

	if (git_tree_entry_type(e) != GIT_OBJECT_TREE)
		return 0;
	p = xstrfmt("%s%s", root, git_tree_entry_name(e));
	strvec_push(w->dirs, p);
	free(p);
	return 0;
}

static int in_sorted(const struct strvec *v, const char *s)
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

/* Remove the empty folder `rel` (never through a link); 0 when removed. */
static int rmdir_rel(const char *root, const char *rel)
{
	const char *base;
	int dfd, ret = open_parent(&dfd, root, rel, 0, &base);

	if (ret < 0) {
		err_clear();
		return -1;
	}
	ret = unlinkat(dfd, base, AT_REMOVEDIR);
	close(dfd);
	return ret;
}

int vcs_remove_new_empty_dirs(struct checkpoints *cps, const char *since, struct strvec *removed)
{
	const char *root = checkpoint_workspace(cps);
	struct snapshot now = SNAPSHOT_INIT;
	struct strvec keep = STRVEC_INIT;
	struct dir_walk w = { &keep };
	git_commit *c = NULL;
	git_tree *t = NULL;
	git_index *idx = NULL;
	git_oid oid;
	size_t i;
	int ret, gerr, batch = 0;

	ret = checkpoint__lock(cps);
	if (ret < 0)
		return ret;
	if ((ret = checkpoint__lookup(&c, cps, since)) < 0 ||
	    (ret = snapshot_load_dirs(&keep, c)) < 0 ||
	    (ret = checkpoint__commit_tree(&t, cps, c)) < 0)
		goto out;
	gerr = git_tree_walk(t, GIT_TREEWALK_PRE, push_tree_dirs, &w);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot read the folders of checkpoint %s", since);
		goto out;
	}
	if (keep.nr)
		qsort(keep.v, keep.nr, sizeof(*keep.v), cmp_str);
	if ((ret = statcache_open(&idx, cps)) < 0 || (ret = shadow_batch_begin(cps)) < 0)
		goto out;
	batch = 1;
	ret = snapshot_capture(&oid, &now, cps, idx);
	if (ret < 0)
		goto out;
	/* deepest first, then each parent that is empty now and was not there */
	for (i = now.empty_dirs.nr; i-- > 0;) {
		char *p = xstrdup(now.empty_dirs.v[i]), *slash;

		while (!in_sorted(&keep, p) && !rmdir_rel(root, p)) {
			if (removed)
				strvec_pushf(removed, "%s/", p);
			slash = strrchr(p, '/');
			if (!slash)
				break;
			*slash = '\0';
		}
		free(p);
	}
out:
	if (batch && shadow_batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	git_index_free(idx);
	git_tree_free(t);
	git_commit_free(c);
	snapshot_release(&now);
	strvec_clear(&keep);
	checkpoint__unlock(cps);
	return ret;
}

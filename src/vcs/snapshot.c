/* Taking a snapshot of the working tree; see snapshot.h. */
#include <fcntl.h>
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
#include "vcs/snapshot.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

/* --------------------------------------------------------------- capture */

static int lstat_rel(const struct checkpoints *cps, const char *rel, struct stat *st)
{
	struct buf p = BUF_INIT;
	int r;

	path_join(&p, cps->workspace, rel);
	r = lstat(p.buf, st);
	buf_release(&p);
	return r;
}

/*
 * add_all callback: a folder reaching it is a nested repository (or a
 * submodule): leave it alone. When it replaced a recorded file, drop that
 * file, which add_all would otherwise keep.
 */
int snapshot_skip_dirs_cb(const char *path, const char *matched, void *payload)
{
	struct snapshot_add_ctx *ctx = payload;
	struct stat st;

	(void)matched;
	if (lstat_rel(ctx->cps, path, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (git_index_get_bypath(ctx->idx, path, 0) && git_index_remove_bypath(ctx->idx, path) < 0)
		return -1;
	return 1;
}

/* The user's index entry for workspace path `rel`, if the user tracks it. */
static void buf_swap_into(struct buf *dst, struct buf *src)
{
	buf_reset(dst);
	buf_addbuf(dst, src);
	buf_reset(src);
}

/*
 * Bring the shadow index up to the working tree:
 *  1. entries the user's repository tracks (with their stat data), so
 *     files tracked although ignored are recorded too;
 *  2. add_all: new files not ignored, changed and deleted ones (stat data
 *     decides which files are read again);
 *  3. drop entries that are now ignored and not tracked by the user, and
 *     any gitlink. A path's "ignored" can only change when an ignore file
 *     or the user's index does, so this step runs only when their
 *     fingerprint differs from the one saved with the last capture
 *     (`*stamp` receives the new one to save, or stays empty).
 */
static int update_index(struct buf *stamp, struct checkpoints *cps, git_index *idx)
{
	struct snapshot_add_ctx ctx = { cps, idx };
	git_index *uidx = NULL;
	struct strvec drop = STRVEC_INIT;
	struct buf scratch = BUF_INIT, fp = BUF_INIT, old = BUF_INIT;
	const char *prefix = cps->user_prefix ? cps->user_prefix : "";
	size_t i, n;
	int gerr, ret = 0;

	if (git_index_read(idx, 0) < 0) {
		/* a damaged cache: start again from nothing */
		git_error_clear();
		if ((gerr = git_index_clear(idx)) < 0)
			return vcs_git_error(gerr, "cannot reset the checkpoint index");
	}
	if (cps->user) {
		gerr = git_repository_index(&uidx, cps->user);
		if (!gerr)
			gerr = git_index_read(uidx, 0);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read the git index of %s", cps->workspace);
			goto out;
		}
		if ((ret = statcache_seed(idx, uidx, prefix)) < 0)
			goto out;
	}
	gerr = git_index_add_all(idx, NULL, GIT_INDEX_ADD_DEFAULT, snapshot_skip_dirs_cb, &ctx);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot record the working tree of %s", cps->workspace);
		goto out;
	}
	statcache_ignore_fingerprint(&fp, cps, idx, uidx);
	buf_addf(&scratch, "%s/" IGNORE_STAMP, cps->shadow);
	if (!fsutil_read_file(&old, scratch.buf, 0) && old.len == fp.len &&
	    !memcmp(old.buf, fp.buf, fp.len))
		goto out;
	err_clear();
	buf_swap_into(stamp, &fp);
	n = git_index_entrycount(idx);
	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);
		int ignored = 0;

		if (!e)
			continue;
		if (e->mode != GIT_FILEMODE_COMMIT) {
			if (statcache_user_entry(uidx, prefix, e->path, &scratch))
				continue;
			gerr = git_ignore_path_is_ignored(&ignored, cps->repo, e->path);
			if (gerr < 0) {
				ret = vcs_git_error(gerr, "cannot check whether %s is ignored",
						    e->path);
				goto out;
			}
			if (!ignored)
				continue;
		}
		strvec_push(&drop, e->path);
	}
	for (i = 0; i < drop.nr; i++) {
		gerr = git_index_remove_bypath(idx, drop.v[i]);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot update the checkpoint index");
			goto out;
		}
	}
out:
	git_index_free(uidx);
	strvec_clear(&drop);
	buf_release(&scratch);
	buf_release(&fp);
	buf_release(&old);
	return ret;
}

/*
 * Bring the index up to the tree, write its tree object and save the
 * index. The caller brackets this with shadow_batch_begin() / shadow_batch_end(), then
 * saves `stamp` with statcache_save_stamp(). With `perms`, also read every file's
 * permission bits into it (a full map).
 */
int snapshot_capture(git_oid *out, size_t *files, struct perm_map *perms, struct buf *stamp,
			struct checkpoints *cps, git_index *idx)
{
	int gerr, ret;

	if ((ret = update_index(stamp, cps, idx)) < 0)
		return ret;
	if ((gerr = git_index_write_tree(out, idx)) < 0)
		return vcs_git_error(gerr, "cannot write the checkpoint tree");
	if ((gerr = git_index_write(idx)) < 0)
		return vcs_git_error(gerr, "cannot save the checkpoint index");
	if (perms) {
		int rootfd = open(cps->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (rootfd < 0)
			return err_set_errno(FX_EOS, "cannot open %s", cps->workspace);
		ret = perm_map_read(perms, rootfd, idx);
		close(rootfd);
		if (ret < 0)
			return ret;
	}
	if (files)
		*files = git_index_entrycount(idx);
	return 0;
}

int checkpoint__capture_tree(git_oid *out, size_t *files, struct checkpoints *cps)
{
	struct buf stamp = BUF_INIT;
	git_index *idx = NULL;
	int ret;

	if ((ret = statcache_open(&idx, cps)) < 0)
		return ret;
	if ((ret = shadow_batch_begin(cps)) < 0)
		goto out;
	ret = snapshot_capture(out, files, NULL, &stamp, cps, idx);
	if (shadow_batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	if (!ret)
		ret = statcache_save_stamp(cps, &stamp);
out:
	buf_release(&stamp);
	git_index_free(idx);
	return ret;
}



/* Commit what changed since a checkpoint on the user's branch; see commit.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/path.h"
#include "vcs/commit.h"
#include "vcs/vcs_internal.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int vcs_changed_paths(struct strvec *out, struct checkpoints *cps, const char *id)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_repository *repo = checkpoint__repo(cps);
	git_commit *from = NULL;
	git_tree *old_tree = NULL, *new_tree = NULL;
	git_diff *diff = NULL;
	struct strvec found = STRVEC_INIT;
	git_oid now;
	size_t i, n;
	int ret, gerr;

	if ((ret = checkpoint__lock(cps)) < 0)
		return ret;
	ret = checkpoint__lookup(&from, cps, id);
	if (!ret)
		ret = checkpoint__capture_tree(&now, NULL, cps);
	checkpoint__unlock(cps);
	if (ret < 0)
		goto out;
	if ((ret = checkpoint__commit_tree(&old_tree, cps, from)) < 0)
		goto out;
	gerr = git_tree_lookup(&new_tree, repo, &now);
	if (!gerr) {
		/* no rename detection: a rename is its old path deleted and its new path added */
		opts.flags = GIT_DIFF_NORMAL;
		gerr = git_diff_tree_to_tree(&diff, repo, old_tree, new_tree, &opts);
	}
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot compare the tree with the checkpoint");
		goto out;
	}
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
out:
	strvec_clear(&found);
	git_diff_free(diff);
	git_tree_free(old_tree);
	git_tree_free(new_tree);
	git_commit_free(from);
	return ret;
}

/* `rel` (relative to the workspace) made relative to the repository's work tree. */
static int repo_path(struct buf *out, const char *prefix, const char *rel)
{
	if (!*rel || rel[0] == '/' || !strcmp(rel, "..") || !strncmp(rel, "../", 3) ||
	    strstr(rel, "/../") || (strlen(rel) >= 3 && !strcmp(rel + strlen(rel) - 3, "/..")))
		return err_set(FX_EINVAL, "path '%s' is not inside the workspace", rel);
	if (!strcmp(rel, ".git") || !strncmp(rel, ".git/", 5) || !strcmp(rel, ".forgex") ||
	    !strncmp(rel, ".forgex/", 8))
		return err_set(FX_EINVAL, "path '%s' is never committed", rel);
	buf_reset(out);
	if (*prefix) {
		buf_addstr(out, prefix);
		buf_addch(out, '/');
	}
	buf_addstr(out, rel);
	return 0;
}

/*
 * The identity git itself would use for `who` ("AUTHOR" or "COMMITTER"):
 * $GIT_<who>_NAME and $GIT_<who>_EMAIL, else user.name and user.email,
 * else $EMAIL for the address; the time is now.
 */
static int identity(git_signature **out, git_repository *repo, const char *who)
{
	git_config *cfg = NULL;
	git_buf name = GIT_BUF_INIT, email = GIT_BUF_INIT;
	char var[32];
	const char *n, *e;
	int ret = 0, gerr;

	if (git_repository_config_snapshot(&cfg, repo) < 0)
		cfg = NULL;
	git_error_clear();
	snprintf(var, sizeof(var), "GIT_%s_NAME", who);
	n = getenv(var);
	if ((!n || !*n) && cfg && !git_config_get_string_buf(&name, cfg, "user.name"))
		n = name.ptr;
	snprintf(var, sizeof(var), "GIT_%s_EMAIL", who);
	e = getenv(var);
	if ((!e || !*e) && cfg && !git_config_get_string_buf(&email, cfg, "user.email"))
		e = email.ptr;
	if (!e || !*e)
		e = getenv("EMAIL");
	git_error_clear();
	if (!n || !*n || !e || !*e) {
		ret = err_set(FX_ERROR, "no git identity: set user.name and user.email "
			      "(git config user.name NAME; git config user.email ADDRESS)");
		goto out;
	}
	gerr = git_signature_now(out, n, e);
	if (gerr < 0)
		ret = vcs_git_error(gerr, "bad git identity '%s <%s>'", n, e);
out:
	git_buf_dispose(&name);
	git_buf_dispose(&email);
	git_config_free(cfg);
	return ret;
}

int vcs_commit_paths(char *out, const char *workspace, const struct strvec *paths,
		     const char *message)
{
	git_repository *repo = NULL;
	git_reference *head = NULL;
	git_commit *parent = NULL;
	git_tree *base = NULL, *tree = NULL;
	git_index *index = NULL;
	git_signature *sig = NULL, *author = NULL;
	git_tree_update *ups = NULL;
	char **upaths = NULL;
	int *present = NULL;
	struct buf prefix = BUF_INIT, rp = BUF_INIT, full = BUF_INIT;
	char *ws_real = NULL, *wd_real = NULL;
	git_oid tree_id, commit_id;
	size_t i, nups = 0;
	int ret = 0, gerr, unborn;

	if (!paths->nr)
		return err_set(FX_EINVAL, "nothing to commit");
	git_libgit2_init();
	gerr = git_repository_open_ext(&repo, workspace, 0, NULL);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot open the git repository of %s", workspace);
		goto out;
	}
	if (git_repository_is_bare(repo)) {
		ret = err_set(FX_EINVAL, "%s: the repository has no work tree", workspace);
		goto out;
	}
	ws_real = realpath(workspace, NULL);
	wd_real = realpath(git_repository_workdir(repo), NULL);
	if (!ws_real || !wd_real) {
		ret = err_set_errno(FX_EOS, "cannot resolve %s", workspace);
		goto out;
	}
	if (strcmp(ws_real, wd_real))
		path_relative(&prefix, ws_real, wd_real);

	unborn = git_repository_head_unborn(repo);
	if (unborn < 0) {
		ret = vcs_git_error(unborn, "cannot read HEAD");
		goto out;
	}
	if (!unborn) {
		gerr = git_repository_head(&head, repo);
		if (!gerr)
			gerr = git_reference_peel((git_object **)&parent, head, GIT_OBJECT_COMMIT);
		if (!gerr)
			gerr = git_commit_tree(&base, parent);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read HEAD");
			goto out;
		}
	} else {
		git_treebuilder *tb = NULL;
		git_oid empty;

		gerr = git_treebuilder_new(&tb, repo, NULL);
		if (!gerr)
			gerr = git_treebuilder_write(&empty, tb);
		git_treebuilder_free(tb);
		if (!gerr)
			gerr = git_tree_lookup(&base, repo, &empty);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot write an empty tree");
			goto out;
		}
	}

	ups = xcalloc(paths->nr, sizeof(*ups));
	upaths = xcalloc(paths->nr, sizeof(*upaths));
	present = xcalloc(paths->nr, sizeof(*present));
	for (i = 0; i < paths->nr; i++) {
		git_tree_entry *te = NULL;
		struct stat st;
		int in_base, ignored = 0;

		if ((ret = repo_path(&rp, prefix.buf, paths->v[i])) < 0)
			goto out;
		in_base = !git_tree_entry_bypath(&te, base, rp.buf);
		git_tree_entry_free(te);
		if (!in_base) {
			git_error_clear();
			/* never commit what the user's git ignores, unless git already tracks it */
			if (git_ignore_path_is_ignored(&ignored, repo, rp.buf) < 0)
				ignored = 0;
			if (ignored)
				continue;
		}
		buf_reset(&full);
		path_join(&full, wd_real, rp.buf);
		if (!lstat(full.buf, &st) && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
			gerr = git_blob_create_from_workdir(&ups[nups].id, repo, rp.buf);
			if (gerr < 0) {
				ret = vcs_git_error(gerr, "cannot store %s", rp.buf);
				goto out;
			}
			ups[nups].action = GIT_TREE_UPDATE_UPSERT;
			ups[nups].filemode = S_ISLNK(st.st_mode) ? GIT_FILEMODE_LINK :
					     (st.st_mode & 0111) ? GIT_FILEMODE_BLOB_EXECUTABLE :
								   GIT_FILEMODE_BLOB;
			present[nups] = 1;
		} else if (in_base) {
			ups[nups].action = GIT_TREE_UPDATE_REMOVE;
		} else {
			continue;	/* neither in HEAD nor in the tree: nothing to record */
		}
		upaths[nups] = buf_detach(&rp, NULL);
		ups[nups].path = upaths[nups];
		nups++;
	}
	if (!nups)
		goto out;
	gerr = git_tree_create_updated(&tree_id, repo, base, nups, ups);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot build the tree to commit");
		goto out;
	}
	if (git_oid_equal(&tree_id, git_tree_id(base)))
		goto out;	/* the same as HEAD: no empty commit */
	gerr = git_tree_lookup(&tree, repo, &tree_id);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot read the tree to commit");
		goto out;
	}
	if ((ret = identity(&author, repo, "AUTHOR")) < 0 ||
	    (ret = identity(&sig, repo, "COMMITTER")) < 0)
		goto out;
	/* moves the branch HEAD points at, and only if it still points at `parent` */
	gerr = git_commit_create(&commit_id, repo, "HEAD", author, sig, NULL, message, tree,
				 parent ? 1 : 0, (const git_commit **)&parent);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot commit");
		goto out;
	}
	/* the index entries of the committed paths now match the commit */
	gerr = git_repository_index(&index, repo);
	for (i = 0; !gerr && i < nups; i++)
		gerr = present[i] ? git_index_add_bypath(index, upaths[i]) :
				    git_index_remove_bypath(index, upaths[i]);
	if (!gerr)
		gerr = git_index_write(index);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "committed, but cannot update the index");
		goto out;
	}
	if (out)
		git_oid_tostr(out, GIT_OID_HEXSZ + 1, &commit_id);
	ret = 1;
out:
	for (i = 0; upaths && i < nups; i++)
		free(upaths[i]);
	free(upaths);
	free(ups);
	free(present);
	free(ws_real);
	free(wd_real);
	buf_release(&prefix);
	buf_release(&rp);
	buf_release(&full);
	git_signature_free(sig);
	git_signature_free(author);
	git_index_free(index);
	git_tree_free(tree);
	git_tree_free(base);
	git_commit_free(parent);
	git_reference_free(head);
	git_repository_free(repo);
	git_libgit2_shutdown();
	return ret;
}

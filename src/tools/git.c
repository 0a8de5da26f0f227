#include <git2.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/permissions.h"
#include "tools/fs.h"
#include "tools/registry.h"

/*
 * git_status and git_diff read the repository with libgit2: no git
 * process is started and nothing is written, not even the index's stat
 * cache (no GIT_STATUS_OPT_UPDATE_INDEX, no GIT_DIFF_UPDATE_INDEX).
 * Paths are limited to the workspace, which may be a sub-folder of the
 * repository.
 */

struct repo {
	git_repository *repo;
	char *prefix;		/* the workspace relative to the work tree: "" or "sub/dir/" */
	char *spec;		/* the pathspec: prefix + path, or NULL for everything */
};

static int git_fail(const char *what)
{
	const git_error *e = git_error_last();

	return err_set(FX_ERROR, "%s: %s", what, e && e->message ? e->message : "libgit2 failed");
}

static void repo_close(struct repo *r)
{
	git_repository_free(r->repo);
	free(r->prefix);
	free(r->spec);
	git_libgit2_shutdown();
}

static int repo_open(struct repo *r, struct tool_ctx *ctx, const char *path)
{
	struct buf rel = BUF_INIT, spec = BUF_INIT;
	const char *workdir;
	size_t n;
	int ret;

	memset(r, 0, sizeof(*r));
	git_libgit2_init();
	if (path) {
		/* Text only: the file may be gone (a deletion is a change to show). */
		ret = wspath_normalize(&rel, &ctx->root, path);
		if (!ret)
			ret = fs_check_allowed(rel.buf, path, 0);
		if (ret < 0)
			goto fail;
	}
	if (git_repository_open_ext(&r->repo, ctx->root.real, 0, NULL) < 0) {
		ret = err_set(FX_ENOTFOUND, "the workspace is not inside a git repository");
		goto fail;
	}
	workdir = git_repository_workdir(r->repo);
	if (!workdir) {
		ret = err_set(FX_EINVAL, "the repository has no work tree (it is bare)");
		goto fail;
	}
	n = strlen(workdir);
	if (n && workdir[n - 1] == '/')
		n--;
	if (strncmp(ctx->root.real, workdir, n) || (ctx->root.real[n] && ctx->root.real[n] != '/')) {
		ret = err_set(FX_EINVAL, "the workspace is not inside the repository's work tree");
		goto fail;
	}
	r->prefix = ctx->root.real[n] ? xstrfmt("%s/", ctx->root.real + n + 1) : xstrdup("");
	if (*r->prefix || rel.len) {
		buf_addstr(&spec, r->prefix);
		buf_addbuf(&spec, &rel);
		if (spec.len && spec.buf[spec.len - 1] == '/')
			buf_setlen(&spec, spec.len - 1);
		r->spec = buf_detach(&spec, NULL);
	}
	buf_release(&rel);
	return 0;
fail:
	buf_release(&rel);
	buf_release(&spec);
	repo_close(r);
	return ret;
}

/* A path of the work tree as the workspace sees it. */
static const char *shown(const struct repo *r, const char *path)
{
	size_t n = strlen(r->prefix);

	return !strncmp(path, r->prefix, n) ? path + n : path;
}

/* Append, unless `out` already holds `max` bytes since `start`; count what is dropped. */
static void add_capped(struct buf *out, size_t start, size_t max, size_t *dropped,
		       const char *s, size_t n)
{
	size_t used = out->len - start;

	if (*dropped || used + n > max) {
		*dropped += n;
		return;
	}
	buf_add(out, s, n);
}

/* ---- git_status ---- */

static char index_code(unsigned s)
{
	if (s & GIT_STATUS_INDEX_NEW) return 'A';
	if (s & GIT_STATUS_INDEX_MODIFIED) return 'M';
	if (s & GIT_STATUS_INDEX_DELETED) return 'D';
	if (s & GIT_STATUS_INDEX_RENAMED) return 'R';
	if (s & GIT_STATUS_INDEX_TYPECHANGE) return 'T';
	return ' ';
}

static char worktree_code(unsigned s)
{
	if (s & GIT_STATUS_WT_MODIFIED) return 'M';
	if (s & GIT_STATUS_WT_DELETED) return 'D';
	if (s & GIT_STATUS_WT_RENAMED) return 'R';
	if (s & GIT_STATUS_WT_TYPECHANGE) return 'T';
	return ' ';
}

static void add_branch(struct buf *out, git_repository *repo)
{
	git_reference *head = NULL;
	int rc = git_repository_head(&head, repo);

	if (rc == GIT_EUNBORNBRANCH) {
		git_reference *sym = NULL;

		if (!git_reference_lookup(&sym, repo, "HEAD") &&
		    git_reference_type(sym) == GIT_REFERENCE_SYMBOLIC)
			buf_addf(out, "## no commits yet on %s\n",
				 git_reference_symbolic_target(sym) +
				 (strncmp(git_reference_symbolic_target(sym), "refs/heads/", 11) ? 0 : 11));
		else
			buf_addstr(out, "## no commits yet\n");
		git_reference_free(sym);
		return;
	}
	if (rc < 0) {
		buf_addstr(out, "## HEAD cannot be read\n");
		return;
	}
	if (git_repository_head_detached(repo)) {
		char id[GIT_OID_HEXSZ + 1];

		git_oid_tostr(id, sizeof(id), git_reference_target(head));
		buf_addf(out, "## HEAD detached at %.12s\n", id);
	} else {
		buf_addf(out, "## %s\n", git_reference_shorthand(head));
	}
	git_reference_free(head);
}

static int tool_git_status(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	git_status_options opts = GIT_STATUS_OPTIONS_INIT;
	git_status_list *list = NULL;
	struct repo r;
	char *specs[1];
	size_t i, n, start = result->len, dropped = 0, lines = 0;
	struct buf line = BUF_INIT;
	int ret;

	ret = repo_open(&r, ctx, tool_arg_str(args, "path"));
	if (ret < 0)
		return ret;
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = GIT_STATUS_OPT_INCLUDE_UNTRACKED | GIT_STATUS_OPT_RECURSE_UNTRACKED_DIRS |
		     GIT_STATUS_OPT_RENAMES_HEAD_TO_INDEX | GIT_STATUS_OPT_SORT_CASE_SENSITIVELY |
		     GIT_STATUS_OPT_EXCLUDE_SUBMODULES;
	if (r.spec) {
		specs[0] = r.spec;
		opts.pathspec.strings = specs;
		opts.pathspec.count = 1;
	}
	if (git_status_list_new(&list, r.repo, &opts) < 0) {
		ret = git_fail("cannot read the status");
		goto out;
	}
	add_branch(result, r.repo);
	n = git_status_list_entrycount(list);
	for (i = 0; i < n; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		const git_diff_delta *d = e->head_to_index ? e->head_to_index : e->index_to_workdir;
		unsigned s = e->status;

		if (s == GIT_STATUS_CURRENT || (s & GIT_STATUS_IGNORED) || !d)
			continue;
		buf_reset(&line);
		if (s & GIT_STATUS_CONFLICTED)
			buf_addstr(&line, "UU");
		else if (s == GIT_STATUS_WT_NEW)
			buf_addstr(&line, "??");
		else {
			buf_addch(&line, index_code(s));
			buf_addch(&line, worktree_code(s));
		}
		buf_addch(&line, ' ');
		if ((s & GIT_STATUS_INDEX_RENAMED) && e->head_to_index)
			buf_addf(&line, "%s -> %s", shown(&r, e->head_to_index->old_file.path),
				 shown(&r, e->head_to_index->new_file.path));
		else
			buf_addstr(&line, shown(&r, d->new_file.path ? d->new_file.path
								      : d->old_file.path));
		buf_addch(&line, '\n');
		add_capped(result, start, ctx->limits.output_bytes, &dropped, line.buf, line.len);
		lines++;
	}
	if (!lines)
		buf_addf(result, "nothing changed%s%s (no staged, unstaged or untracked files)\n",
			 r.spec ? " under " : "", r.spec ? shown(&r, r.spec) : "");
	if (dropped)
		buf_addf(result, "[forgex: status cut at %zu bytes, %zu more bytes not shown; "
			 "pass a path]\n", ctx->limits.output_bytes, dropped);
out:
	git_status_list_free(list);
	buf_release(&line);
	repo_close(&r);
	return ret;
}

/* ---- git_diff ---- */

struct diff_out {
	struct buf *out;
	size_t start, max, dropped;
};

static int print_line(const git_diff_delta *delta, const git_diff_hunk *hunk,
		      const git_diff_line *l, void *payload)
{
	struct diff_out *d = payload;
	char origin = l->origin;

	(void)delta;
	(void)hunk;
	if (origin == GIT_DIFF_LINE_CONTEXT || origin == GIT_DIFF_LINE_ADDITION ||
	    origin == GIT_DIFF_LINE_DELETION)
		add_capped(d->out, d->start, d->max, &d->dropped, &origin, 1);
	/* Headers, and "\ No newline at end of file", come whole in the content. */
	add_capped(d->out, d->start, d->max, &d->dropped, l->content, l->content_len);
	return 0;
}

static int tool_git_diff(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_object *head = NULL;
	git_tree *tree = NULL;
	git_diff *diff = NULL;
	struct diff_out d;
	struct repo r;
	char *specs[1];
	int ret, rc;

	ret = repo_open(&r, ctx, tool_arg_str(args, "path"));
	if (ret < 0)
		return ret;
	rc = git_revparse_single(&head, r.repo, "HEAD^{tree}");
	if (rc == 0)
		tree = (git_tree *)head;
	else if (rc != GIT_ENOTFOUND && rc != GIT_EUNBORNBRANCH) {
		ret = git_fail("cannot read HEAD");
		goto out;
	}
	opts.flags = GIT_DIFF_INCLUDE_UNTRACKED | GIT_DIFF_RECURSE_UNTRACKED_DIRS |
		     GIT_DIFF_SHOW_UNTRACKED_CONTENT | GIT_DIFF_INCLUDE_TYPECHANGE;
	opts.ignore_submodules = GIT_SUBMODULE_IGNORE_ALL;
	opts.context_lines = 3;
	if (r.spec) {
		specs[0] = r.spec;
		opts.pathspec.strings = specs;
		opts.pathspec.count = 1;
	}
	/* Against HEAD (an empty tree before the first commit), through the index. */
	if (git_diff_tree_to_workdir_with_index(&diff, r.repo, tree, &opts) < 0) {
		ret = git_fail("cannot compute the diff");
		goto out;
	}
	d.out = result;
	d.start = result->len;
	d.max = ctx->limits.output_bytes;
	d.dropped = 0;
	if (git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, print_line, &d) < 0) {
		ret = git_fail("cannot print the diff");
		goto out;
	}
	if (result->len == d.start)
		buf_addf(result, "no changes against %s%s%s\n", tree ? "HEAD" : "an empty repository",
			 r.spec ? " under " : "", r.spec ? shown(&r, r.spec) : "");
	if (d.dropped)
		buf_addf(result, "[forgex: diff cut at %zu bytes, %zu more bytes not shown; "
			 "pass a path to see one file]\n", d.max, d.dropped);
out:
	git_diff_free(diff);
	git_object_free(head);
	repo_close(&r);
	return ret;
}

int tools_register_git(struct tool_registry *reg)
{
	static const struct tool_def defs[] = {
		{
			"git_status",
			"Show the branch and the changed files of the workspace's git repository, "
			"one per line as in `git status --porcelain`: two status letters (staged, "
			"unstaged: M modified, A added, D deleted, R renamed; ?? untracked), then "
			"the path.",
			"{\"type\":\"object\",\"properties\":{"
			"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Only this file or folder\"}"
			"},\"additionalProperties\":false}",
			PERM_GIT, 0, tool_git_status, NULL,
		},
		{
			"git_diff",
			"Show the changes of the working tree against HEAD (staged and unstaged, and "
			"the content of untracked files) as a unified diff.",
			"{\"type\":\"object\",\"properties\":{"
			"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Only this file or folder\"}"
			"},\"additionalProperties\":false}",
			PERM_GIT, 0, tool_git_diff, NULL,
		},
	};
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(defs); i++)
		if ((ret = registry_add(reg, &defs[i])) < 0)
			return ret;
	return 0;
}

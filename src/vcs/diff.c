/* Diffs from a checkpoint to the working tree; see diff.h. */
#include <string.h>

#include "base/err.h"
#include "base/termsafe.h"
#include "vcs/diff.h"
#include "vcs/vcs_internal.h"

#define COLOR_RESET "\033[m"
#define COLOR_BOLD "\033[1m"
#define COLOR_RED "\033[31m"
#define COLOR_GREEN "\033[32m"
#define COLOR_CYAN "\033[36m"

struct print_ctx {
	struct buf *out;
	int color;
	int termsafe;
};

/* Append `len` bytes of `text` line by line, each line wrapped in `color`. */
static void add_colored(struct buf *out, const char *color, char origin, const char *text,
			size_t len, int termsafe)
{
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;

		if (color)
			buf_addstr(out, color);
		if (origin)
			buf_addch(out, origin);
		if (termsafe)
			buf_add_termsafe(out, text, n, TERMSAFE_MULTILINE);
		else
			buf_add(out, text, n);
		if (color)
			buf_addstr(out, COLOR_RESET);
		if (nl) {
			buf_addch(out, '\n');
			n++;
		}
		text += n;
		len -= n;
		origin = 0;
	}
}

static int print_cb(const git_diff_delta *delta, const git_diff_hunk *hunk,
		    const git_diff_line *line, void *payload)
{
	struct print_ctx *ctx = payload;
	const char *color = NULL;
	char origin = 0;

	(void)delta;
	(void)hunk;
	switch (line->origin) {
	case GIT_DIFF_LINE_ADDITION:
		color = COLOR_GREEN;
		origin = '+';
		break;
	case GIT_DIFF_LINE_DELETION:
		color = COLOR_RED;
		origin = '-';
		break;
	case GIT_DIFF_LINE_CONTEXT:
		origin = ' ';
		break;
	case GIT_DIFF_LINE_FILE_HDR:
		color = COLOR_BOLD;
		break;
	case GIT_DIFF_LINE_HUNK_HDR:
		color = COLOR_CYAN;
		break;
	default:	/* binary notes, "\ No newline at end of file" */
		break;
	}
	if (!ctx->color)
		color = NULL;
	if (!line->content_len && origin) {
		buf_addch(ctx->out, origin);
		return 0;
	}
	add_colored(ctx->out, color, origin, line->content, line->content_len, ctx->termsafe);
	return 0;
}

/* The path of a "SIZE PATH" line of a too-large list. */
static const char *too_large_path(const char *line)
{
	const char *sp = strchr(line, ' ');

	return sp ? sp + 1 : line;
}

/* git_diff_options.notify_cb: a file over max_file_bytes now is not compared (> 0 skips it). */
static int skip_too_large(const git_diff *diff, const git_diff_delta *delta,
			  const char *matched_pathspec, void *payload)
{
	const struct strvec *large = payload;
	size_t i;

	(void)diff;
	(void)matched_pathspec;
	for (i = 0; i < large->nr; i++)
		if (!strcmp(delta->old_file.path, too_large_path(large->v[i])) ||
		    !strcmp(delta->new_file.path, too_large_path(large->v[i])))
			return 1;
	return 0;
}

void vcs_diff_note_too_large(struct buf *out, const struct checkpoints *cps)
{
	const struct strvec *large = checkpoint_too_large(cps);
	size_t i;

	for (i = 0; i < large->nr; i++) {
		const char *path = too_large_path(large->v[i]);

		buf_addstr(out, "not compared: '");
		buf_add_termsafe(out, path, strlen(path), 0);
		buf_addf(out, "' is %.*s bytes, larger than [checkpoints] max_file_bytes (%llu)\n",
			 (int)(path - 1 - large->v[i]), large->v[i],
			 (unsigned long long)checkpoint_max_file_bytes(cps));
	}
}

int vcs_diff_ext(struct buf *out, size_t *changed, struct checkpoints *cps, const char *id,
		 unsigned flags)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_repository *repo = checkpoint__repo(cps);
	git_commit *from = NULL;
	git_tree *old_tree = NULL, *new_tree = NULL;
	git_diff *diff = NULL;
	git_diff_stats *stats = NULL;
	git_buf sbuf = GIT_BUF_INIT;
	git_oid now;
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
		/* a file that became a link (or back) shows as removed and added */
		opts.flags = GIT_DIFF_NORMAL;
		opts.context_lines = 3;
		opts.notify_cb = skip_too_large;
		opts.payload = (void *)checkpoint_too_large(cps);
		gerr = git_diff_tree_to_tree(&diff, repo, old_tree, new_tree, &opts);
	}
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot compare the tree with the checkpoint");
		goto out;
	}
	/* before the patch, where `git apply` passes over text */
	vcs_diff_note_too_large(out, cps);
	if (changed)
		*changed = git_diff_num_deltas(diff);
	if (!git_diff_num_deltas(diff))
		goto out;
	if (flags & VCS_DIFF_STAT) {
		gerr = git_diff_get_stats(&stats, diff);
		if (!gerr)
			gerr = git_diff_stats_to_buf(&sbuf, stats,
						     GIT_DIFF_STATS_FULL |
						     GIT_DIFF_STATS_INCLUDE_SUMMARY, 80);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot count the changes");
			goto out;
		}
		if (flags & VCS_DIFF_TERMSAFE)
			buf_add_termsafe(out, sbuf.ptr, sbuf.size, TERMSAFE_MULTILINE);
		else
			buf_add(out, sbuf.ptr, sbuf.size);
	} else {
		struct print_ctx ctx = { out, (flags & VCS_DIFF_COLOR) != 0,
					 (flags & VCS_DIFF_TERMSAFE) != 0 };

		gerr = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, print_cb, &ctx);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot format the diff");
			goto out;
		}
	}
out:
	git_buf_dispose(&sbuf);
	git_diff_stats_free(stats);
	git_diff_free(diff);
	git_tree_free(old_tree);
	git_tree_free(new_tree);
	git_commit_free(from);
	return ret;
}

int vcs_diff(struct buf *out, struct checkpoints *cps, const char *id, int color)
{
	return vcs_diff_ext(out, NULL, cps, id, color ? VCS_DIFF_COLOR : 0);
}

int vcs_diff_buffers(struct buf *out, const char *path, const char *old, size_t old_len,
		     const char *now, size_t now_len, unsigned flags)
{
	git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
	git_patch *patch = NULL;
	struct print_ctx ctx = { out, (flags & VCS_DIFF_COLOR) != 0,
				 (flags & VCS_DIFF_TERMSAFE) != 0 };
	int gerr, ret;

	if ((ret = vcs_init()) < 0)
		return ret;
	opts.context_lines = 3;
	gerr = git_patch_from_buffers(&patch, old, old ? old_len : 0, path, now,
				      now ? now_len : 0, path, &opts);
	if (!gerr && git_patch_num_hunks(patch))
		gerr = git_patch_print(patch, print_cb, &ctx);
	git_patch_free(patch);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot compare the two versions of %s", path);
	return 0;
}

/*
 * Checkpoints: the chain of checkpoint commits (create, list, resolve);
 * see checkpoint.h and docs/internals/checkpoint.md. The shadow repository
 * is in shadow.c, the capture in snapshot.c and statcache.c, restore in
 * restore_plan.c and restore.c.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/err.h"
#include "vcs/checkpoint.h"
#include "vcs/odb.h"
#include "vcs/perms.h"
#include "vcs/shadow.h"
#include "vcs/snapshot.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

#define SHORT_ID_MIN 12

/* ------------------------------------------------------------------ info */

void checkpoint_info_release(struct checkpoint_info *info)
{
	if (!info)
		return;
	FREE_AND_NULL(info->message);
}

void checkpoint_list_release(struct checkpoint_list *list)
{
	size_t i;

	for (i = 0; i < list->nr; i++)
		checkpoint_info_release(&list->items[i]);
	FREE_AND_NULL(list->items);
	list->nr = list->alloc = 0;
}

void checkpoint_restore_result_release(struct checkpoint_restore_result *res)
{
	if (!res)
		return;
	checkpoint_info_release(&res->backup);
	strvec_clear(&res->too_large);
}

void checkpoint_set_max_file_bytes(struct checkpoints *cps, uint64_t max)
{
	cps->max_file_bytes = max;
}

uint64_t checkpoint_max_file_bytes(const struct checkpoints *cps)
{
	return cps->max_file_bytes;
}

const struct strvec *checkpoint_too_large(const struct checkpoints *cps)
{
	return &cps->too_large;
}

void checkpoint_set_tmp_hook(struct checkpoints *cps,
			     int (*before_create)(void *data, const char *rel, const char *tmp),
			     void *data)
{
	cps->tmp_hook.before_create = before_create;
	cps->tmp_hook.data = data;
}

static void fill_info(struct checkpoint_info *out, const git_commit *c, size_t short_len)
{
	const char *msg = git_commit_message(c);
	size_t n = strlen(msg);

	memset(out, 0, sizeof(*out));
	git_oid_tostr(out->id, sizeof(out->id), git_commit_id(c));
	if (short_len > 40)
		short_len = 40;
	memcpy(out->short_id, out->id, short_len);
	out->short_id[short_len] = '\0';
	while (n && msg[n - 1] == '\n')
		n--;
	out->message = xstrndup(msg, n);
	out->time = (int64_t)git_commit_time(c);
}


/* ----------------------------------------------------------------- chain */

/* The newest checkpoint commit id; FX_ENOTFOUND (no message) when none. */
static int chain_head(git_oid *out, struct checkpoints *cps)
{
	return shadow_read_ref(cps, out);
}

/* Every checkpoint commit id, newest first. */
static int chain_ids(git_oid **out, size_t *nr, struct checkpoints *cps)
{
	git_oid cur, *ids = NULL;
	size_t n = 0, alloc = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	ret = chain_head(&cur, cps);
	if (ret == FX_ENOTFOUND)
		return 0;
	if (ret < 0)
		return ret;
	for (;;) {
		git_commit *c = NULL;
		int gerr = git_commit_lookup(&c, cps->repo, &cur);

		if (gerr < 0 && n) {
			/* an older checkpoint is damaged (odb.h): the chain ends there */
			git_error_clear();
			break;
		}
		if (gerr < 0) {
			free(ids);
			git_error_clear();
			return err_set(FX_ERROR,
				       "the newest checkpoint %s is damaged (cut short or corrupt) "
				       "or missing; the next checkpoint taken starts a new chain",
				       git_oid_tostr_s(&cur));
		}
		ALLOC_GROW(ids, n + 1, alloc);
		git_oid_cpy(&ids[n++], &cur);
		if (!git_commit_parentcount(c)) {
			git_commit_free(c);
			break;
		}
		git_oid_cpy(&cur, git_commit_parent_id(c, 0));
		git_commit_free(c);
	}
	*out = ids;
	*nr = n;
	return 0;
}

static int oid_cmp_qsort(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

/* The shortest prefix length (>= SHORT_ID_MIN) that tells all `ids` apart. */
static size_t short_len(const git_oid *ids, size_t nr)
{
	git_oid *sorted;
	size_t i, len = SHORT_ID_MIN;

	if (nr < 2)
		return len;
	sorted = xmalloc(nr * sizeof(*sorted));
	memcpy(sorted, ids, nr * sizeof(*sorted));
	qsort(sorted, nr, sizeof(*sorted), oid_cmp_qsort);
	for (i = 1; i < nr; i++) {
		char a[41], b[41];
		size_t k = 0;

		git_oid_tostr(a, sizeof(a), &sorted[i - 1]);
		git_oid_tostr(b, sizeof(b), &sorted[i]);
		while (k < 40 && a[k] == b[k])
			k++;
		if (k + 1 > len)
			len = k + 1;
	}
	free(sorted);
	return len;
}

int checkpoint_list(struct checkpoint_list *out, struct checkpoints *cps)
{
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	git_oid *ids = NULL;
	size_t nr, i, slen;
	int ret;

	if ((ret = chain_ids(&ids, &nr, cps)) < 0)
		return ret;
	slen = short_len(ids, nr);
	for (i = 0; i < nr; i++) {
		git_commit *c = NULL;
		int gerr = git_commit_lookup(&c, cps->repo, &ids[i]);

		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read checkpoint %s",
					    git_oid_tostr_s(&ids[i]));
			checkpoint_list_release(&list);
			goto out;
		}
		ALLOC_GROW(list.items, list.nr + 1, list.alloc);
		fill_info(&list.items[list.nr++], c, slen);
		git_commit_free(c);
	}
	*out = list;
out:
	free(ids);
	return ret;
}

int checkpoint_resolve(char **out, struct checkpoints *cps, const char *id)
{
	git_oid *ids = NULL;
	size_t nr, i, len = id ? strlen(id) : 0, found = (size_t)-1;
	int ret;

	if (len < 4 || len > 40 || strspn(id, "0123456789abcdefABCDEF") != len)
		return err_set(FX_EINVAL, "'%s' is not a checkpoint id (4 to 40 hex digits)",
			       id ? id : "");
	if ((ret = chain_ids(&ids, &nr, cps)) < 0)
		return ret;
	for (i = 0; i < nr; i++) {
		char hex[41];

		git_oid_tostr(hex, sizeof(hex), &ids[i]);
		if (strncasecmp(hex, id, len))
			continue;
		if (found != (size_t)-1) {
			ret = err_set(FX_EINVAL, "checkpoint id '%s' is ambiguous; give more digits",
				      id);
			goto out;
		}
		found = i;
	}
	if (found == (size_t)-1) {
		ret = err_set(FX_ENOTFOUND, "no checkpoint '%s' in %s (see 'forgex checkpoint list')",
			      id, cps->workspace);
		goto out;
	}
	*out = xstrdup(git_oid_tostr_s(&ids[found]));
out:
	free(ids);
	return ret;
}

int checkpoint__lookup(git_commit **out, struct checkpoints *cps, const char *id)
{
	git_oid oid;
	int ret, gerr;

	if (id) {
		char *full = NULL;

		if ((ret = checkpoint_resolve(&full, cps, id)) < 0)
			return ret;
		git_oid_fromstr(&oid, full);
		free(full);
	} else {
		ret = chain_head(&oid, cps);
		if (ret == FX_ENOTFOUND)
			return err_set(FX_ENOTFOUND, "no checkpoints yet in %s", cps->workspace);
		if (ret < 0)
			return ret;
	}
	gerr = git_commit_lookup(out, cps->repo, &oid);
	if (gerr < 0 && cps->loose && vcs_loose_was_damaged(cps->loose, &oid)) {
		git_error_clear();
		return err_set(FX_ERROR, "checkpoint %s is damaged (cut short or corrupt)",
			       git_oid_tostr_s(&oid));
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read checkpoint %s", git_oid_tostr_s(&oid));
	return 0;
}

int checkpoint__commit_tree(git_tree **out, struct checkpoints *cps, const git_commit *c)
{
	git_tree *tree = NULL;
	git_treebuilder *tb = NULL;
	git_oid id;
	int gerr = git_commit_tree(&tree, c);

	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read checkpoint %s",
				     git_oid_tostr_s(git_commit_id(c)));
	if (!git_tree_entry_byname(tree, ".forgex")) {
		*out = tree;
		return 0;
	}
	/* recorded by an older forgex: compare without it, as restore does */
	gerr = git_treebuilder_new(&tb, cps->repo, tree);
	if (!gerr)
		gerr = git_treebuilder_remove(tb, ".forgex");
	if (!gerr)
		gerr = git_treebuilder_write(&id, tb);
	git_treebuilder_free(tb);
	git_tree_free(tree);
	if (!gerr)
		gerr = git_tree_lookup(out, cps->repo, &id);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read checkpoint %s",
				     git_oid_tostr_s(git_commit_id(c)));
	return 0;
}

/* Header `name` with the value `v` (continuation lines start with a space); none when empty. */
static void add_header(struct buf *out, const char *name, const char *v)
{
	const char *p;

	if (!*v)
		return;
	buf_addf(out, "%s ", name);
	for (p = v; *p; p++) {
		buf_addch(out, *p);
		if (*p == '\n')
			buf_addch(out, ' ');
	}
	buf_addch(out, '\n');
}

/*
 * Write the commit of a checkpoint of `tree_id` (inside a batch: it is made
 * durable by shadow_batch_end()); checkpoint__advance_chain() then makes it the newest.
 */
int checkpoint__write_commit(git_oid *out, struct checkpoints *cps, const git_oid *tree_id,
			     const char *message, const struct snapshot *snap, git_index *idx)
{
	git_buf content = GIT_BUF_INIT;
	struct buf full = BUF_INIT;
	char *perms = snap->perms_header ? xstrdup(snap->perms_header) :
		      perm_map_format(&snap->perms, idx);
	char *dirs = snapshot_format_dirs(&snap->empty_dirs);
	char *large = snapshot_format_dirs(&snap->too_large);
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_oid parent_id;
	struct buf msg = BUF_INIT;
	int ret, gerr, has_parent;

	ret = chain_head(&parent_id, cps);
	if (ret < 0 && ret != FX_ENOTFOUND)
		return ret;
	has_parent = ret == 0;
	ret = 0;
	gerr = git_signature_now(&sig, "forgex", "forgex@localhost");
	if (!gerr)
		gerr = git_tree_lookup(&tree, cps->repo, tree_id);
	cps->chain_base_set = 0;
	if (!gerr && has_parent && git_commit_lookup(&parent, cps->repo, &parent_id) < 0) {
		/*
		 * The newest checkpoint is damaged or gone (odb.h treats a
		 * damaged object as missing): start a new chain, moving the
		 * ref only if it still names the damaged one.
		 */
		git_error_clear();
		has_parent = 0;
		git_oid_cpy(&cps->chain_base, &parent_id);
		cps->chain_base_set = 1;
	}
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot prepare the checkpoint");
		goto out;
	}
	buf_addstr(&msg, message && *message ? message : "checkpoint");
	buf_rtrim(&msg);
	buf_addch(&msg, '\n');
	gerr = git_commit_create_buffer(&content, cps->repo, sig, sig, NULL, msg.buf, tree,
					has_parent ? 1 : 0, (const git_commit **)&parent);
	if (!gerr) {
		/*
		 * The empty folders go in a header of their own, before the
		 * blank line that ends the headers (continuation lines start
		 * with a space, as git writes multi-line headers).
		 */
		const char *eoh = strstr(content.ptr, "\n\n");

		buf_add(&full, content.ptr, eoh ? (size_t)(eoh - content.ptr) + 1 : content.size);
		if (eoh) {
			add_header(&full, EMPTY_DIRS_HEADER, dirs);
			add_header(&full, TOO_LARGE_HEADER, large);
		}
		if (eoh)
			buf_addstr(&full, eoh + 1);
		gerr = git_commit_create_with_signature(out, cps->repo, full.buf, perms,
							PERMS_HEADER);
	}
	if (gerr < 0)
		ret = vcs_git_error(gerr, "cannot write the checkpoint");
out:
	free(perms);
	free(dirs);
	free(large);
	buf_release(&full);
	git_buf_dispose(&content);
	buf_release(&msg);
	git_commit_free(parent);
	git_tree_free(tree);
	git_signature_free(sig);
	return ret;
}

/*
 * Make commit `oid` (written by checkpoint__write_commit(), now durable) the newest
 * checkpoint: the ref moves only if it still names the commit's parent.
 * Fills `out` (may be NULL).
 */
int checkpoint__advance_chain(struct checkpoint_info *out, struct checkpoints *cps,
			      const git_oid *oid, size_t files)
{
	git_commit *c = NULL;
	git_oid *ids = NULL;
	size_t nr;
	int ret = 0, gerr;

	gerr = git_commit_lookup(&c, cps->repo, oid);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the new checkpoint");
	ret = shadow_write_ref(cps, oid, git_commit_parentcount(c) ? git_commit_parent_id(c, 0) :
			       cps->chain_base_set ? &cps->chain_base : NULL);
	cps->chain_base_set = 0;
	if (ret < 0)
		goto out;
	if (out) {
		if ((ret = chain_ids(&ids, &nr, cps)) < 0)
			goto out;
		fill_info(out, c, short_len(ids, nr));
		out->files = files;
	}
out:
	free(ids);
	git_commit_free(c);
	return ret;
}

int checkpoint_create(struct checkpoint_info *out, struct checkpoints *cps, const char *message)
{
	struct snapshot snap = SNAPSHOT_INIT;
	git_index *idx = NULL;
	git_oid tree, commit;
	int ret;

	if ((ret = checkpoint__lock(cps)) < 0)
		return ret;
	if ((ret = shadow_batch_begin(cps)) < 0)
		goto out;
	ret = snapshot_take(&tree, &snap, cps, &idx);
	if (!ret)
		ret = checkpoint__write_commit(&commit, cps, &tree, message, &snap, idx);
	/* everything the ref will point at reaches the disk first */
	if (shadow_batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	if (!ret)
		ret = checkpoint__advance_chain(out, cps, &commit, snap.files);
out:
	snapshot_release(&snap);
	git_index_free(idx);
	checkpoint__unlock(cps);
	return ret;
}


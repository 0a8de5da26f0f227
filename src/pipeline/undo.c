/*
 * Putting back a run's own changes (see pipeline_int.h and pipeline.h):
 * the rollback of a failed or interrupted run, and forgex undo of one that
 * ended.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "pipeline/pipeline_int.h"
#include "vcs/commit.h"
#include "vcs/paths.h"

/*
 * Whether a folder below `fd` (its .git and .forgex aside at the top) is
 * empty: 1 at the first one found (or too deep, or unreadable), else 0.
 * Reads only: for when the sweep of empty folders cannot take its
 * snapshot (a full disk).
 */
static int any_empty_dir(int fd, int top, int depth)
{
	DIR *d = fdopendir(dup(fd));
	struct dirent *e;
	int entries = 0, found = 0;

	if (!d || depth > 256) {
		if (d)
			closedir(d);
		return 1;
	}
	while (!found && (e = readdir(d))) {
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		entries++;
		if (top && (!strcmp(e->d_name, ".git") || !strcmp(e->d_name, ".forgex")))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		found = sub < 0 || any_empty_dir(sub, 0, depth + 1);
		if (sub >= 0)
			close(sub);
	}
	closedir(d);
	return found || (!top && !entries);
}

/* Whether the tree holds no empty folder at all (so none of a command's is left). */
static int no_empty_dirs(const char *workspace)
{
	int fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC), none;

	if (fd < 0)
		return 0;
	none = !any_empty_dir(fd, 1, 0);
	close(fd);
	return none;
}

int pl_roll_back(struct pl *pl, struct journal_outcome *o, const char *why)
{
	/* the tree first: nothing is written before it (a full disk, a read-only folder) */
	int failed = journal_revert(&pl->jr, 0, o);

	if (failed < 0) {
		strvec_pushf(&o->failed, "(all): %s", err_last());
		err_clear();
		failed = 1;
	}
	/* the empty folders the run's commands made (mkdir -p) go too */
	if (pl->cps && pl->pre_checkpoint &&
	    vcs_remove_new_empty_dirs(pl->cps, pl->pre_checkpoint, &o->reverted) < 0) {
		/*
		 * Its snapshot needs space. Without, a tree with no empty folder
		 * at all has none of a command's left; else it is never claimed.
		 */
		if (!no_empty_dirs(pl->cfg->workspace)) {
			strvec_pushf(&o->failed, "(empty folders the run's commands made): not looked "
				     "for: %s; what it was before the run: the folders of checkpoint "
				     "%.12s", err_last(), pl->pre_checkpoint);
			failed++;
		}
		err_clear();
	}
	pl_emit(pl, "rollback", json_pack("{s:s, s:o, s:o, s:o}", "why", why,
				       "reverted", jsonx_from_strvec(&o->reverted),
				       "kept", jsonx_from_strvec(&o->kept),
				       "failed", jsonx_from_strvec(&o->failed)));
	return failed;
}

#define RESTORE_FILE "restore.json"

/* Whether this forgex kept the run's journal (an older one did not). */
static int journal_recorded(const char *dir)
{
	int fd = rundir_file_open(dir, "changes.jsonl", O_RDONLY, 0);

	if (fd < 0) {
		err_clear();
		return 0;
	}
	close(fd);
	return 1;
}

void pl_note_restore(const char *dir, const char *id, const struct strvec *failed)
{
	if (failed && failed->nr) {
		json_t *j = json_pack("{s:b, s:o, s:s}", "finished", 0, "failed",
				      jsonx_from_strvec(failed), "finish_with", "forgex undo");
		struct rundir s;

		/* a bare struct for the write: only its folder is used */
		memset(&s, 0, sizeof(s));
		s.dir = (char *)dir;
		s.id = (char *)id;
		if (rundir_write_json(&s, RESTORE_FILE, j) < 0)
			err_clear();	/* the read-only folder: forgex log works it out again */
		json_decref(j);
	} else {
		int dfd = rundir_file_open(dir, NULL, O_RDONLY | O_DIRECTORY, 0);

		if (dfd >= 0) {
			unlinkat(dfd, RESTORE_FILE, 0);
			close(dfd);
		}
		err_clear();
	}
}

int pipeline_restore_pending(struct strvec *left, const char *workspace, const char *id)
{
	struct checkpoints *cps = NULL;
	struct journal jr = JOURNAL_INIT;
	struct strvec paths = STRVEC_INIT;
	char *dir = rundir_dir(workspace, id);
	json_t *note = NULL, *sum = NULL;
	const char *why = NULL;
	size_t i;
	int ret;

	if (rundir_read_json(&note, dir, RESTORE_FILE) < 0)
		err_clear();
	if (rundir_read_json(&sum, dir, "summary.json") < 0)
		err_clear();
	if (note && !jsonx_bool(note, "finished", 1))
		why = "not put back";
	else if (!sum)
		why = "the run did not end (killed, or its records could not be written)";
	ret = 0;
	if (!why)
		goto out;
	ret = checkpoint_open(&cps, workspace);
	if (!ret)
		ret = journal_open(&jr, cps, dir, 0);
	if (ret < 0)
		goto out;
	ret = journal_unrestored(&jr, &paths);
	for (i = 0; ret >= 0 && i < paths.nr; i++) {
		const char *said = NULL;
		size_t k, n = strlen(paths.v[i]);
		json_t *v;

		/* the reason the rollback or undo gave, when it could write it down */
		json_array_foreach(json_object_get(note, "failed"), k, v)
			if (json_is_string(v) && !strncmp(json_string_value(v), paths.v[i], n) &&
			    json_string_value(v)[n] == ':')
				said = json_string_value(v);
		if (said)
			strvec_push(left, said);
		else
			strvec_pushf(left, "%s: %s", paths.v[i], why);
	}
out:
	journal_release(&jr);
	strvec_clear(&paths);
	checkpoint_close(cps);
	json_decref(note);
	json_decref(sum);
	free(dir);
	return ret < 0 ? ret : (int)left->nr;
}

void pipeline_undo_result_init(struct pipeline_undo_result *r)
{
	memset(r, 0, sizeof(*r));
	strvec_init(&r->conflicts);
	strvec_init(&r->reverted);
	strvec_init(&r->kept);
	strvec_init(&r->overwritten);
	strvec_init(&r->failed);
}

void pipeline_undo_result_release(struct pipeline_undo_result *r)
{
	strvec_clear(&r->conflicts);
	strvec_clear(&r->reverted);
	strvec_clear(&r->kept);
	strvec_clear(&r->overwritten);
	strvec_clear(&r->failed);
	free(r->commit_note);
	memset(r, 0, sizeof(*r));
}

/* After the tree is reverted: revert the run's commit with a new one, or say why not. */
static void undo_commit(struct pipeline_undo_result *out, const char *workspace, const char *id,
			const json_t *sum)
{
	const char *commit = jsonx_str(sum, "commit");
	const json_t *files = json_object_get(sum, "commit_files");
	struct strvec paths = STRVEC_INIT;
	char head[VCS_OID_HEX];
	char *msg;
	int ret;

	if (!commit)
		return;
	if (vcs_head(head, workspace) < 0) {
		out->commit_note = xstrfmt("the run's commit %.12s was not reverted: %s", commit,
					   err_last());
		err_clear();
		return;
	}
	if (strcmp(head, commit)) {
		out->commit_note = xstrfmt("the run's commit %.12s is no longer HEAD (HEAD is %.12s), "
					   "so no revert commit was made; the files are reverted in "
					   "the working tree; to record it: git revert %.12s",
					   commit, head, commit);
		return;
	}
	if (jsonx_to_strvec(&paths, files) < 0 || !paths.nr) {
		err_clear();
		out->commit_note = xstrfmt("the run's commit %.12s lists no files; not reverted",
					   commit);
		goto out;
	}
	{
		const char *req = jsonx_str(sum, "request");
		size_t n = req ? strcspn(req, "\n") : 0;

		msg = xstrfmt("Revert \"%.*s\"\n\nThis reverts commit %s,\nmade by forgex run %s "
			      "(forgex undo %s).", (int)(n > 60 ? 60 : n), req ? req : "", commit,
			      id, id);
	}
	ret = vcs_commit_paths(out->revert_commit, workspace, &paths, msg);
	free(msg);
	if (ret < 0) {
		out->commit_note = xstrfmt("the run's commit %.12s could not be reverted by a new "
					   "commit: %s; the files are reverted in the working tree",
					   commit, err_last());
		err_clear();
		out->revert_commit[0] = '\0';
	} else if (ret == 0) {
		out->revert_commit[0] = '\0';
	}
out:
	strvec_clear(&paths);
}

int pipeline_undo(struct pipeline_undo_result *out, const char *workspace,
		  uint64_t max_file_bytes, const char *id, int force, int no_wait,
		  void (*on_wait)(void *data, const char *holder), void *data,
		  const volatile sig_atomic_t *cancel)
{
	struct ws_lock lock = WS_LOCK_INIT;
	struct checkpoints *cps = NULL;
	struct journal jr = JOURNAL_INIT;
	struct journal_outcome jo;
	struct checkpoint_info info;
	struct strvec paths = STRVEC_INIT;
	char *dir = rundir_dir(workspace, id), *what;
	json_t *st = NULL, *sum = NULL;
	int ret;

	journal_outcome_init(&jo);
	memset(&info, 0, sizeof(info));
	what = xstrfmt("undo of run %s", id);
	ret = ws_lock_acquire(&lock, workspace, what, no_wait, on_wait, data, cancel);
	free(what);
	if (ret < 0)
		goto out;
	/* a run killed before its state.json was written is swept too */
	journal_sweep_rundir(dir);
	ret = rundir_read_json(&st, dir, "state.json");
	if (ret == FX_ENOTFOUND) {
		/* killed before it wrote its state: its journal says what it changed */
		err_clear();
		st = json_object();
		ret = 0;
	}
	if (ret < 0)
		goto out;
	if (rundir_read_json(&sum, dir, "summary.json") < 0)
		err_clear();
	ret = checkpoint_open(&cps, workspace);
	if (ret < 0)
		goto out;
	checkpoint_set_max_file_bytes(cps, max_file_bytes);
	/* appending, so what the undo put back is noted; read-only when the folder is */
	ret = journal_open(&jr, cps, dir, 1);
	if (ret < 0) {
		journal_release(&jr);
		err_clear();
		ret = journal_open(&jr, cps, dir, 0);
	}
	if (ret < 0)
		goto out;
	journal_paths(&jr, &paths);
	if (!paths.nr) {
		/* a run from before the journal: its pre-run checkpoint, whole */
		struct checkpoint_restore_result res;
		const char *pre = jsonx_str(st, "pre_checkpoint");

		if (!pre) {
			ret = err_set(FX_ENOTFOUND, "run %s changed nothing", id);
			goto out;
		}
		if (json_object_get(st, "interrupted") || journal_recorded(dir)) {
			/* this forgex recorded the run: it changed no file */
			ret = err_set(FX_ENOTFOUND, "run %s changed no file: nothing to undo", id);
			goto out;
		}
		if (!force) {
			ret = err_set(FX_EDENIED, "run %s is from an older forgex that did not record "
				      "which files it changed; undoing it restores the whole tree "
				      "to before the run, losing every change made since; "
				      "'forgex undo %s --force' does it", id, id);
			goto out;
		}
		memset(&res, 0, sizeof(res));
		ret = checkpoint_restore(&res, cps, pre);
		if (!ret)
			snprintf(out->backup, sizeof(out->backup), "%s", res.backup.id);
		checkpoint_restore_result_release(&res);
		out->legacy = 1;
		goto out;
	}
	{
		/* a rollback (or an undo) put everything back already: nothing to do */
		struct strvec left = STRVEC_INIT;

		ret = journal_unrestored(&jr, &left);
		if (!ret && !left.nr && !jsonx_str(sum, "commit")) {
			const char *pre = jsonx_str(st, "pre_checkpoint");
			struct strvec dirs = STRVEC_INIT;

			/* a folder the rollback could not sweep (a full disk then) goes now */
			if (pre && *pre && vcs_remove_new_empty_dirs(cps, pre, &dirs) < 0)
				err_clear();
			strvec_copy(&out->reverted, dirs.nr ? &dirs : &paths);
			out->already = !dirs.nr;
			strvec_clear(&dirs);
			pl_note_restore(dir, id, NULL);
			out->backup[0] = '\0';
			strvec_clear(&left);
			goto out;
		}
		strvec_clear(&left);
		if (ret < 0)
			goto out;
	}
	ret = journal_conflicts(&jr, &out->conflicts);
	if (ret < 0)
		goto out;
	if (out->conflicts.nr && !force) {
		ret = err_set(FX_EDENIED, "%zu file%s of run %s changed since the run ended; undoing "
			      "it would lose %s", out->conflicts.nr,
			      out->conflicts.nr == 1 ? "" : "s", id,
			      out->conflicts.nr == 1 ? "that change" : "those changes");
		goto out;
	}
	/* the tree just before, so the undo can itself be undone */
	what = xstrfmt("before undo of run %s", id);
	ret = checkpoint_create(&info, cps, what);
	free(what);
	if (ret < 0)
		goto out;
	snprintf(out->backup, sizeof(out->backup), "%s", info.id);
	ret = journal_revert(&jr, force, &jo);
	if (ret < 0)
		goto out;
	{
		const char *pre = jsonx_str(st, "pre_checkpoint");

		if (pre && *pre && vcs_remove_new_empty_dirs(cps, pre, &jo.reverted) < 0)
			err_clear();	/* only empty folders: nothing is lost */
	}
	strvec_copy(&out->reverted, &jo.reverted);
	strvec_copy(&out->kept, &jo.kept);
	strvec_copy(&out->overwritten, &jo.overwritten);
	strvec_copy(&out->failed, &jo.failed);
	/* what is left for a later undo, in the run folder when it can be written */
	pl_note_restore(dir, id, &jo.failed);
	if (ret > 0) {
		ret = err_set(FX_ERROR, "%d file%s of run %s could not be put back", ret,
			      ret == 1 ? "" : "s", id);
		goto out;
	}
	undo_commit(out, workspace, id, sum);
	{
		struct rundir s;

		if (!rundir_open(&s, workspace, id)) {
			rundir_event(&s, "undo", json_pack("{s:s, s:b, s:o, s:s?}", "backup",
							    out->backup, "force", force,
							    "reverted", jsonx_from_strvec(&out->reverted),
							    "revert_commit", *out->revert_commit ?
							    out->revert_commit : NULL));
			rundir_release(&s);
		}
		err_clear();
	}
	ret = 0;
out:
	journal_release(&jr);	/* also a half-opened one (JOURNAL_INIT otherwise) */
	journal_outcome_release(&jo);
	checkpoint_info_release(&info);
	strvec_clear(&paths);
	checkpoint_close(cps);
	ws_lock_release(&lock);
	json_decref(st);
	json_decref(sum);
	free(dir);
	return ret;
}

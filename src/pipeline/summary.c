/*
 * The ending of a run (see pipeline_int.h): the outcome, the rollback or
 * the kept attempt, the commit, the diffstat of the agents' own paths,
 * summary.json and the "run_end" event.
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/jsonx.h"
#include "pipeline/hooks.h"
#include "pipeline/pipeline_int.h"
#include "vcs/commit.h"
#include "vcs/diff.h"
#include "vcs/paths.h"

/*
 * Commit the change on the current branch: exactly the paths that differ
 * from the pre-run checkpoint (see vcs/commit.h).
 */
static int commit_change(struct pl *pl, const char *message, char *id, struct strvec *out)
{
	struct strvec paths = STRVEC_INIT;
	int ret;

	/* the run's own paths only: what the user changed meanwhile is not the run's */
	{
		struct strvec both = STRVEC_INIT;
		size_t i;

		if (journal_conflicts(&pl->jr, &both) < 0)
			err_clear();
		for (i = 0; i < both.nr; i++)
			strvec_pushf(&pl->out->kept_paths, "%s (changed by you too during the run: "
				     "not committed)", both.v[i]);
		strvec_clear(&both);
	}
	ret = journal_own_changes(&pl->jr, &paths);
	if (ret < 0)
		goto out;
	if (pl->agent_paths_known) {
		/* not what only forgex's test runs built (the checkpoint precedes them) */
		struct strvec mine = STRVEC_INIT;
		size_t i;

		if (!pl->tested_since_checkpoint)
			pl_note_agent_paths(pl);
		for (i = 0; i < paths.nr; i++)
			if (strvec_find(&pl->agent_paths, paths.v[i]) >= 0)
				strvec_push(&mine, paths.v[i]);
		strvec_clear(&paths);
		paths = mine;
	}
	if (!paths.nr)
		goto out;
	ret = vcs_commit_paths(id, pl->cfg->workspace, &paths, message);
	if (ret <= 0)
		goto out;
	ret = 0;
	pl->out->committed = 1;
	pl_emit(pl, "commit", json_pack("{s:s, s:s, s:i, s:o}", "message", message, "id", id,
				     "paths", (int)paths.nr, "files", jsonx_from_strvec(&paths)));
	strvec_copy(out, &paths);
out:
	strvec_clear(&paths);
	return ret;
}

static json_t *tests_json(const struct verify_result *r, int have)
{
	if (!have)
		return json_null();
	return json_pack("{s:I, s:I, s:I, s:I, s:b}", "passed", (json_int_t)r->passed,
			 "failed", (json_int_t)r->failed, "errors", (json_int_t)r->errors,
			 "skipped", (json_int_t)r->skipped, "ok", verify_result_ok(r));
}

void pl_note_agent_paths(struct pl *pl)
{
	struct strvec p = STRVEC_INIT;
	size_t i;

	if (!pl->agent_paths_known || !pl->tree_checkpoint)
		return;
	if (vcs_changed_paths(&p, pl->cps, pl->tree_checkpoint) < 0) {
		err_clear();
		pl->agent_paths_known = 0;	/* unknown: show every change */
		return;
	}
	for (i = 0; i < p.nr; i++)
		if (strvec_find(&pl->agent_paths, p.v[i]) < 0)
			strvec_push(&pl->agent_paths, p.v[i]);
	strvec_clear(&p);
}

/*
 * The diffstat with the files only forgex's test runs changed (a binary
 * `make test` built, a Cargo.lock) left out, and named in `products`.
 * libgit2 prints " PATH<pad> | N +-" per file, the total, then " create
 * mode M PATH" lines; a line whose path is not the agents' is dropped and
 * the total says how many files are shown.
 */
static char *agents_diffstat(struct pl *pl, const char *stat, json_t *products)
{
	struct buf out = BUF_INIT, total = BUF_INIT, tail = BUF_INIT, path = BUF_INIT;
	const char *p = stat;
	size_t shown = 0, dropped = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
		const char *bar = memmem(p, n, " | ", 3);

		buf_reset(&path);
		if (bar && *p == ' ' && !memmem(p, n, " => ", 4)) {
			buf_add(&path, p + 1, (size_t)(bar - p - 1));
			buf_rtrim(&path);
			if (strvec_find(&pl->agent_paths, path.buf) < 0) {
				dropped++;
				json_array_append_new(products, jsonx_stringn_lossy(path.buf, path.len));
			} else {
				shown++;
				buf_add(&out, p, n);
			}
		} else if (bar) {
			shown++;
			buf_add(&out, p, n);	/* a rename: both sides are shown */
		} else if (!strncmp(p, " create mode ", 13) || !strncmp(p, " delete mode ", 13) ||
			   !strncmp(p, " mode change ", 13)) {
			const char *sp = p + n;

			while (sp > p && (sp[-1] == '\n' || sp[-1] == ' '))
				sp--;
			while (sp > p && sp[-1] != ' ')
				sp--;
			buf_add(&path, sp, (size_t)(p + n - sp));
			buf_rtrim(&path);
			if (strvec_find(&pl->agent_paths, path.buf) >= 0)
				buf_add(&tail, p, n);
		} else {
			buf_add(&total, p, n);	/* " 2 files changed, ..." */
		}
		p += n;
	}
	if (dropped)
		buf_addf(&out, " %zu file%s changed by the run\n", shown, shown == 1 ? "" : "s");
	else
		buf_addbuf(&out, &total);
	buf_addbuf(&out, &tail);
	buf_release(&total);
	buf_release(&tail);
	buf_release(&path);
	return buf_detach(&out, NULL);
}

/*
 * The tests of the run against the baseline, for summary.json: the names
 * still failing from before, newly failing (and new tests that fail), and
 * fixed; how many ran; what the harness could not vouch for.
 */
static json_t *tests_change_json(const struct pl *pl)
{
	json_t *j = json_object(), *still = json_array(), *newly = json_array();
	json_t *fixed = json_array();
	const struct verify_comparison *c = &pl->cmp;
	size_t i;

	for (i = 0; pl->last_ran && i < c->entries_nr; i++) {
		const struct verify_change_entry *e = &c->entries[i];
		json_t *name = jsonx_stringn_lossy(e->name, strlen(e->name));
		json_t *to = NULL;

		if (e->change == VERIFY_STILL_FAILING)
			to = still;
		else if (e->change == VERIFY_FIXED)
			to = fixed;
		else if ((e->change == VERIFY_NEWLY_FAILING || e->change == VERIFY_NEW) &&
			 (e->after == VERIFY_FAIL || e->after == VERIFY_ERROR))
			to = newly;
		if (!to || json_array_append_new(to, name))
			json_decref(name);
	}
	jsonx_set(j, "still_failing", still);
	jsonx_set(j, "newly_failing", newly);
	jsonx_set(j, "fixed", fixed);
	if (pl->last_ran) {
		jsonx_set(j, "ran_before", pl->have_baseline ? json_integer(c->ran_before)
							     : json_null());
		jsonx_set(j, "ran_after", json_integer(c->ran_after));
		jsonx_set(j, "fewer_tests", json_boolean(pl->have_baseline &&
							 c->ran_after < c->ran_before));
		jsonx_set(j, "passed_drop", json_integer(c->passed_drop));
		jsonx_set(j, "baseline_complete", json_boolean(pl->have_baseline &&
							       c->baseline_complete));
		jsonx_set(j, "disagreements", jsonx_from_strvec(&pl->last.disagreements));
		jsonx_set(j, "fresh", json_boolean(pl->last.fresh));
		if (pl->last.fresh_note)
			jsonx_set(j, "fresh_note", jsonx_string(pl->last.fresh_note));
	}
	return j;
}

/*
 * Why a PASS is not verified by tests, or NULL: no test command, or one
 * that ran no test in a format forgex reads.
 */
static const char *unverified(const struct pl *pl)
{
	const struct verify_result *r = &pl->last;

	if (!pl->have_cmd)
		return "no tests";
	if (pl->last_ran && r->formats.nr &&
	    r->passed + r->failed + r->skipped + r->errors == 0)
		return "no tests";
	return NULL;
}

void pl_finish(struct pl *pl, int code, int pass, const char *reason)
{
	struct pipeline_result *out = pl->out;
	struct journal_outcome jo;
	struct strvec own = STRVEC_INIT;
	const char *on_failure = pl->cfg->pipeline.on_failure;
	char commit_id[41] = "";
	int restore = 0;
	json_t *sum, *restore_j = json_null(), *commit_files = NULL, *products = json_array();

	journal_outcome_init(&jo);
	if (code == FX_EINTR)
		out->outcome = PIPELINE_INTERRUPTED;
	else if (code == 0 && pl->o->plan_only)
		out->outcome = PIPELINE_PLANNED;
	else if (code == 0 && pass)
		out->outcome = PIPELINE_PASS;
	else if (code == 0 || code == FX_ELIMIT)
		out->outcome = PIPELINE_FAIL;
	else
		out->outcome = PIPELINE_ERROR;
	out->code = out->outcome == PIPELINE_ERROR ? code : 0;
	out->reason = xstrdup(reason && *reason ? reason :
			      out->outcome == PIPELINE_ERROR ? "failed without saying why" : "");
	if (pl->have_journal) {
		struct buf stat = BUF_INIT;
		char snap[VCS_OID_HEX];

		journal_paths(&pl->jr, &own);
		/* the tree as the run ended: `forgex diff RUN` shows pre -> this */
		if (pl->pre_checkpoint && !vcs_snapshot(snap, pl->cps)) {
			pl->end_checkpoint = xstrdup(snap);
			if (vcs_diff_trees(&stat, NULL, pl->cps, pl->pre_checkpoint, snap, &own,
					   VCS_DIFF_STAT) < 0)
				err_clear();
		} else {
			err_clear();
		}
		/* cut short in an agent stage: its work so far is the agents' */
		if (!pl->tested_since_checkpoint)
			pl_note_agent_paths(pl);
		/* the agents' changes; what only forgex's test runs built is a test product */
		if (pl->agent_paths_known && stat.len) {
			out->diffstat = agents_diffstat(pl, stat.buf, products);
			buf_release(&stat);
		} else {
			out->diffstat = buf_detach(&stat, NULL);
		}
	}
	if (out->outcome == PIPELINE_INTERRUPTED)
		restore = 1;
	else if (out->outcome == PIPELINE_FAIL || out->outcome == PIPELINE_ERROR)
		restore = !on_failure || strcmp(on_failure, "keep");
	if (restore && pl->have_journal) {
		int failed = pl_roll_back(pl, &jo, pipeline_outcome_name(out->outcome));

		if (pl->jr.gaps) {
			/* never claim a restore that may have missed a command's changes */
			strvec_pushf(&jo.failed, "(what %u command%s changed): not recorded (%s), so "
				     "not put back; compare with 'forgex diff %s'", pl->jr.gaps,
				     pl->jr.gaps == 1 ? "" : "s", pl->jr.gap_why, pl->s.id);
			failed++;
		}
		/* for forgex log and the next undo, when the run folder can be written */
		pl_note_restore(pl->s.dir, pl->s.id, &jo.failed);
		if (failed) {
			struct buf r = BUF_INIT;
			size_t i;

			/* every path, whole: the list is what the user has to finish */
			buf_addf(&r, "%s; and the tree could not be fully restored (%zu not put "
				 "back; once the cause is fixed, 'forgex undo %s' finishes it): ",
				 out->reason, jo.failed.nr, pl->s.id);
			for (i = 0; i < jo.failed.nr; i++)
				buf_addf(&r, "%s%s", i ? "; " : "", jo.failed.v[i]);
			free(out->reason);
			out->reason = buf_detach(&r, NULL);
		} else {
			out->rolled_back = 1;
		}
		restore_j = json_pack("{s:o, s:o, s:o}", "reverted", jsonx_from_strvec(&jo.reverted),
				      "kept", jsonx_from_strvec(&jo.kept), "failed", jsonx_from_strvec(&jo.failed));
	} else if (!restore && pl->pre_checkpoint && out->outcome != PIPELINE_PASS &&
		   out->outcome != PIPELINE_PLANNED) {
		out->kept = 1;
	}
	if (out->outcome == PIPELINE_PASS && pl->cfg->pipeline.commit) {
		char *msg = xstrfmt("%s\n\nMade by forgex run %s.", pl->request, pl->s.id);
		struct strvec paths = STRVEC_INIT;

		if (commit_change(pl, msg, commit_id, &paths) < 0) {
			free(out->reason);
			out->reason = xstrfmt("the change passed but could not be committed: %s",
					      err_last());
		}
		commit_files = jsonx_from_strvec(&paths);
		strvec_clear(&paths);
		free(msg);
	}
	out->iterations = pl->iteration;
	out->tokens = pl->budget.tokens_used;
	out->cost_usd = pl->budget.cost_used;
	/* the run's ledger is the caller's now (a session adds it to its own) */
	ledger_release(&out->ledger);
	out->ledger = pl->rec.ledger;
	ledger_init(&pl->rec.ledger);
	out->seconds = clk_mono_s() - pl->t0;
	out->pre_checkpoint = xstrdup(pl->pre_checkpoint ? pl->pre_checkpoint : "");
	if (pl->plan)
		out->plan = json_incref(pl->plan);
	{
		size_t i;

		for (i = 0; i < jo.kept.nr; i++)
			strvec_push(&out->kept_paths, jo.kept.v[i]);
	}
	strvec_copy(&out->failed_paths, &jo.failed);

	sum = json_object();
	jsonx_set(sum, "run_id", jsonx_string(pl->s.id));
	jsonx_set(sum, "request", jsonx_string(pl->request ? pl->request : ""));
	jsonx_set(sum, "outcome", jsonx_string(pipeline_outcome_name(out->outcome)));
	jsonx_set(sum, "reason", jsonx_string(out->reason));
	jsonx_set(sum, "pre_checkpoint", jsonx_string(out->pre_checkpoint));
	jsonx_set(sum, "end_tree", pl->end_checkpoint ? jsonx_string(pl->end_checkpoint)
						      : json_null());
	jsonx_set(sum, "rolled_back", json_boolean(out->rolled_back));
	jsonx_set(sum, "restore", restore_j);
	jsonx_set(sum, "kept", json_boolean(out->kept));
	jsonx_set(sum, "committed", json_boolean(out->committed));
	jsonx_set(sum, "commit", *commit_id ? jsonx_string(commit_id) : json_null());
	jsonx_set(sum, "commit_files", commit_files ? commit_files : json_null());
	jsonx_set(sum, "paths", jsonx_from_strvec(&own));
	jsonx_set(sum, "iterations", json_integer(out->iterations));
	jsonx_set(sum, "tokens", json_integer(out->tokens));
	jsonx_set(sum, "cost_usd", json_real(out->cost_usd));
	jsonx_set(sum, "seconds", json_real(out->seconds));
	jsonx_set(sum, "files_changed", jsonx_string(out->diffstat ? out->diffstat : ""));
	/* changed by forgex's own test runs only: not in files_changed, undone by a rollback */
	jsonx_set(sum, "test_products", products);
	jsonx_set(sum, "tests_before", tests_json(&pl->baseline, pl->have_baseline));
	jsonx_set(sum, "tests_after", tests_json(&pl->last, pl->last_ran));
	jsonx_set(sum, "tests", tests_change_json(pl));
	{
		const char *why = out->outcome == PIPELINE_PASS ? unverified(pl) : NULL;
		char *verdict = why ? xstrfmt("PASS (unverified: %s)", why) : NULL;

		jsonx_set(sum, "verified", json_boolean(out->outcome == PIPELINE_PASS && !why));
		jsonx_set(sum, "unverified", why ? jsonx_string(why) : json_null());
		jsonx_set(sum, "verdict", jsonx_string(verdict ? verdict :
			  out->outcome == PIPELINE_PASS ? "PASS" : out->outcome == PIPELINE_FAIL ?
			  "FAIL" : out->outcome == PIPELINE_PLANNED ? "PLANNED" :
			  out->outcome == PIPELINE_INTERRUPTED ? "INTERRUPTED" : "ERROR"));
		free(verdict);
	}
	if (rundir_write_json(&pl->s, "summary.json", sum) < 0)
		err_clear();
	/* an interrupted run can be resumed: state.json keeps the stage it was in */
	if (out->outcome == PIPELINE_INTERRUPTED)
		pl->interrupted = 1;
	else
		pl->next = ST_DONE;
	if (pl_save_state(pl) < 0)
		err_clear();
	if (hooks_have(&pl->wb.uhooks, "stop")) {
		json_t *in = json_pack("{s:s, s:s}", "outcome", pipeline_outcome_name(out->outcome),
				       "reason", out->reason);

		hooks_fire(&pl->wb.uhooks, "stop", NULL, in, NULL, NULL);
		json_decref(in);
	}
	pl_emit(pl, "run_end", json_pack("{s:s, s:s, s:b, s:b, s:i, s:I, s:O, s:O}", "outcome",
				      pipeline_outcome_name(out->outcome), "reason", out->reason,
				      "rolled_back", out->rolled_back, "kept", out->kept,
				      "iterations", out->iterations, "tokens", (json_int_t)out->tokens,
				      "verdict", json_object_get(sum, "verdict"),
				      "tests", json_object_get(sum, "tests")));
	out->summary = sum;
	strvec_clear(&own);
	journal_outcome_release(&jo);
}

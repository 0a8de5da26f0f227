/*
 * The pipeline's state machine: the stages, resume, set-up and
 * pipeline_run() (see pipeline.h, pipeline_int.h and
 * docs/internals/pipeline.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/review.h"
#include "agents/roles.h"
#include "base/clock.h"
#include "base/jsonx.h"
#include "context/context.h"
#include "llm/provider.h"
#include "llm/transcript.h"
#include "pipeline/journal.h"
#include "pipeline/lock.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_int.h"
#include "pipeline/recorder.h"
#include "pipeline/runrecord.h"
#include "sandbox/executor.h"
#include "pipeline/hooks.h"
#include "pipeline/workbench.h"
#include "tools/registry.h"
#include "tools/verify_executor.h"
#include "vcs/checkpoint.h"
#include "vcs/diff.h"

#define DIFF_MAX (48u << 10)		/* bytes of diff shown to a role */
#define TESTS_TEXT_MAX (16u << 10)	/* bytes of test outcome shown to a role */

/* The stages, in order; "next" in state.json names one of them. */
static const char *const stages[] = {
	"checkpoint", "baseline", "architect", "builder", "expert", "verify", "review",
	"repair", "done",
};

const char *pipeline_outcome_name(enum pipeline_outcome o)
{
	static const char *const names[] = { "pass", "fail", "planned", "interrupted", "error" };

	return (unsigned)o < ARRAY_SIZE(names) ? names[o] : "unknown";
}

static int stage_from_name(const char *name)
{
	size_t i;

	for (i = 0; name && i < ARRAY_SIZE(stages); i++)
		if (!strcmp(stages[i], name))
			return (int)i;
	return -1;
}

static int cancelled(const struct pl *pl)
{
	return pl->o->cancel && *pl->o->cancel;
}

/*
 * Events
 */

static void stage_event(struct pl *pl, const char *what, enum stage st, const char *fmt, ...)
{
	json_t *f = json_object();

	jsonx_set(f, "stage", jsonx_string(stages[st]));
	jsonx_set(f, "iteration", json_integer(pl->iteration));
	if (fmt) {
		va_list ap;
		char *msg;

		va_start(ap, fmt);
		msg = xstrvfmt(fmt, ap);
		va_end(ap);
		jsonx_set(f, "status", jsonx_string(msg));
		free(msg);
	}
	pl_emit(pl, what, f);
}

/*
 * State, for resume.
 */

int pl_save_state(struct pl *pl)
{
	json_t *j = json_object();
	int ret;

	jsonx_set(j, "request", jsonx_string(pl->request));
	jsonx_set(j, "next", jsonx_string(stages[pl->next]));
	jsonx_set(j, "iteration", json_integer(pl->iteration));
	jsonx_set(j, "pre_checkpoint", pl->pre_checkpoint ? jsonx_string(pl->pre_checkpoint)
						       : json_null());
	jsonx_set(j, "tree_checkpoint", pl->tree_checkpoint ? jsonx_string(pl->tree_checkpoint)
							 : json_null());
	jsonx_set(j, "plan", pl->plan ? json_incref(pl->plan) : json_null());
	jsonx_set(j, "baseline", pl->have_baseline ? verify_result_to_json(&pl->baseline)
						   : json_null());
	jsonx_set(j, "feedback", jsonx_string(pl->feedback.buf));
	jsonx_set(j, "interrupted", json_boolean(pl->interrupted));
	ret = rundir_write_json(&pl->s, "state.json", j);
	json_decref(j);
	return ret;
}

static int load_state(struct pl *pl)
{
	json_t *j = NULL, *v;
	int ret, st;

	ret = rundir_read_json(&j, pl->s.dir, "state.json");
	if (ret < 0)
		return err_prefix(ret, "run %s cannot be resumed", pl->s.id);
	st = stage_from_name(jsonx_str(j, "next"));
	if (st < 0 || !jsonx_str(j, "request")) {
		ret = err_set(FX_EPARSE, "run %s: state.json is not one forgex wrote", pl->s.id);
		goto out;
	}
	if (st == ST_DONE) {
		ret = err_set(FX_EINVAL, "run %s has already ended (%s); nothing to resume", pl->s.id,
			      jsonx_str(j, "outcome") ? jsonx_str(j, "outcome") : "see 'forgex log'");
		goto out;
	}
	pl->next = (enum stage)st;
	pl->request = xstrdup(jsonx_str(j, "request"));
	pl->iteration = (int)jsonx_int(j, "iteration", 0);
	if (jsonx_str(j, "pre_checkpoint"))
		pl->pre_checkpoint = xstrdup(jsonx_str(j, "pre_checkpoint"));
	if (jsonx_str(j, "tree_checkpoint"))
		pl->tree_checkpoint = xstrdup(jsonx_str(j, "tree_checkpoint"));
	v = json_object_get(j, "plan");
	if (json_is_object(v))
		pl->plan = json_incref(v);
	v = json_object_get(j, "baseline");
	if (json_is_object(v)) {
		ret = verify_result_from_json(&pl->baseline, v);
		if (ret < 0)
			goto out;
		pl->have_baseline = 1;
	}
	if (jsonx_str(j, "feedback"))
		buf_addstr(&pl->feedback, jsonx_str(j, "feedback"));
	/* a review needs the tests of this tree: run them again */
	if (pl->next == ST_REVIEW)
		pl->next = ST_VERIFY;
out:
	json_decref(j);
	return ret;
}

/*
 * Checkpoints
 */

static int take_checkpoint(struct pl *pl, char **id_out, const char *what)
{
	struct checkpoint_info info;
	char *msg = xstrfmt("forgex run %s: %s", pl->s.id, what);
	int ret;

	memset(&info, 0, sizeof(info));
	ret = checkpoint_create(&info, pl->cps, msg);
	free(msg);
	if (ret < 0)
		return err_prefix(ret, "checkpoint (%s)", what);
	free(*id_out);
	*id_out = xstrdup(info.id);
	pl_emit(pl, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "create", "id", info.id,
					 "what", what));
	checkpoint_info_release(&info);
	return 0;
}

/* The diff from the pre-run checkpoint to the tree, cut at `max` bytes. */
static void current_diff(struct pl *pl, struct buf *out, size_t max)
{
	struct buf d = BUF_INIT;

	if (!pl->pre_checkpoint || vcs_diff(&d, pl->cps, pl->pre_checkpoint, 0) < 0) {
		err_clear();
		buf_addstr(out, "(no diff available)\n");
		goto out;
	}
	if (!d.len) {
		buf_addstr(out, "(no changes)\n");
		goto out;
	}
	if (d.len > max) {
		buf_add(out, d.buf, max);
		buf_addf(out, "\n[... %zu more bytes of diff left out ...]\n", d.len - max);
	} else {
		buf_addbuf(out, &d);
	}
out:
	buf_release(&d);
}

/*
 * Providers and agents
 */

static int get_provider(struct pl *pl, struct provider **out, const char *name)
{
	size_t i;
	int ret;

	if (pl->o->force_provider)
		name = pl->o->force_provider;
	for (i = 0; i < pl->nprov; i++) {
		if (!strcmp(pl->provs[i].name, name)) {
			*out = pl->provs[i].p;
			return 0;
		}
	}
	if (pl->nprov == MAX_PROVIDERS)
		return err_set(FX_ELIMIT, "more than %d providers in one run", MAX_PROVIDERS);
	ret = provider_open(out, pl->cfg, name, pl->tr);
	if (ret < 0)
		return ret;
	provider_set_cancel(*out, pl->o->cancel);
	pl->provs[pl->nprov].name = xstrdup(name);
	pl->provs[pl->nprov].p = *out;
	pl->nprov++;
	return 0;
}

/*
 * The repository map a role's first request carries: the Architect's
 * personalised by the request, the Builder's and the Expert Coder's by the
 * request and the plan's files (context/context.h). [context] map_tokens =
 * 0 turns it off; a tree that cannot be mapped only loses the map.
 */
static void repo_map(struct pl *pl, struct buf *out, enum agent_role role)
{
	struct strvec plan_files = STRVEC_INIT;
	size_t i, j;

	if (role != ROLE_ARCHITECT && role != ROLE_BUILDER && role != ROLE_EXPERT_CODER)
		return;
	if (role != ROLE_ARCHITECT && pl->plan) {
		const json_t *steps = json_object_get(pl->plan, "steps"), *st, *f;

		json_array_foreach(steps, i, st)
			json_array_foreach(json_object_get(st, "files"), j, f)
				if (json_is_string(f))
					strvec_push(&plan_files, json_string_value(f));
	}
	workbench_map(&pl->wb, out, pl->request, &plan_files);
	strvec_clear(&plan_files);
}

/*
 * Run `role` on `task` with the provider `provider_name` (NULL: the role's
 * own) and `model` (NULL: the role's own). Returns 0 with `res` filled, or
 * a negative code when it could not start.
 */
static int run_agent(struct pl *pl, struct agent_result *res, enum agent_role role,
		     const char *task, const char *provider_name, const char *model)
{
	const struct agent_config *ac = config_agent(pl->cfg, role);
	const struct provider_config *pc;
	struct agent_opts ao = AGENT_OPTS_INIT;
	struct buf prompt = BUF_INIT, extra = BUF_INIT;
	struct provider *p = NULL;
	int ret;

	ret = get_provider(pl, &p, provider_name ? provider_name : ac->provider);
	if (ret < 0)
		return ret;
	pc = config_provider(pl->cfg, p->name);
	workbench_instructions(&pl->wb, &extra);
	repo_map(pl, &extra, role);
	/* no workspace path: a recorded run replays in any folder */
	role_build_prompt(&prompt, role, NULL, extra.buf);
	ao.role = role;
	ao.system_prompt = prompt.buf;
	ao.task = task;
	ao.provider = p;
	ao.model = model && *model ? model : (ac->model && *ac->model ? ac->model : NULL);
	ao.temperature = ac->temperature;
	ao.max_turns = ac->max_turns;
	ao.tool_mode = pc && pc->tool_mode && !strcmp(pc->tool_mode, "text") ? AGENT_TOOLS_TEXT
									: AGENT_TOOLS_NATIVE;
	ao.edit_tools = pc ? pc->edit_tools : NULL;
	ao.tools = &pl->wb.tctx;
	ao.budget = &pl->budget;
	ao.on_event = recorder_agent_event;
	ao.event_data = &pl->rec;
	ao.cancel = pl->o->cancel;
	ao.stream = p->stream;
	if (pl->o->on_text) {
		ao.on_text = pl->o->on_text;
		ao.text_data = pl->o->event_data;
	}
	ret = agent_run(res, &ao);
	buf_release(&prompt);
	buf_release(&extra);
	return ret;
}

/*
 * Tests
 */

/* Run the tests into `out`; returns 1 when they ran, 0 when they could not. */
static int run_tests(struct pl *pl, struct verify_result *out, const char *what)
{
	struct verify_request req;
	int ret;

	verify_result_release(out);
	if (!pl->have_cmd) {
		pl_emit(pl, "test_result", json_pack("{s:s, s:b, s:s}", "what", what, "ran", 0,
						  "reason", "no test command found"));
		return 0;
	}
	memset(&req, 0, sizeof(req));
	req.cmd = &pl->cmd;
	req.workspace = pl->cfg->workspace;
	pl_emit(pl, "command", json_pack("{s:s, s:o}", "tool", "verify",
				      "argv", jsonx_from_strvec(&pl->cmd.argv)));
	if (hooks_have(&pl->wb.uhooks, "pre_verify")) {
		json_t *in = json_pack("{s:s, s:o}", "what", what, "command",
				       jsonx_from_strvec(&pl->cmd.argv));

		hooks_fire(&pl->wb.uhooks, "pre_verify", NULL, in, NULL, NULL);
		json_decref(in);
	}
	if (pl->have_journal)
		journal_command_begin(&pl->jr);
	pl->tested_since_checkpoint = 1;
	ret = verify_run(out, &req, verify_executor_run, &pl->wb.ex);
	if (pl->have_journal)
		journal_command_end(&pl->jr);
	if (hooks_have(&pl->wb.uhooks, "post_verify")) {
		json_t *in = json_pack("{s:s, s:b, s:o}", "what", what, "ran", ret >= 0,
				       "result", ret >= 0 ? verify_result_to_json(out) : json_null());

		hooks_fire(&pl->wb.uhooks, "post_verify", NULL, in, NULL, NULL);
		json_decref(in);
	}
	if (ret < 0) {
		pl_emit(pl, "test_result", json_pack("{s:s, s:b, s:s}", "what", what, "ran", 0,
						  "reason", err_last()));
		return ret == FX_EINTR ? ret : 0;
	}
	{
		json_t *f = json_object();

		jsonx_set(f, "what", jsonx_string(what));
		jsonx_set(f, "ran", json_true());
		jsonx_set(f, "ok", json_boolean(verify_result_ok(out)));
		jsonx_set(f, "result", verify_result_to_json(out));
		pl_emit(pl, "test_result", f);
	}
	return 1;
}

/*
 * Stages
 */

static void plan_text(struct pl *pl, struct buf *out)
{
	buf_addstr(out, "The request:\n");
	buf_addstr(out, pl->request);
	buf_addstr(out, "\n\nThe plan (JSON):\n");
	if (pl->plan)
		jsonx_dump(out, pl->plan, JSON_INDENT(2));
	else
		buf_addstr(out, "(none)");
	buf_addstr(out, "\n");
}

/*
 * The ending of an agent that did not hand in its result. Returns 0 when
 * the pipeline may go on, else a code for pl_finish(): FX_EINTR, FX_ELIMIT
 * (budget), FX_EPROVIDER.
 */
static int agent_problem(struct pl *pl, const struct agent_result *res)
{
	switch (res->status) {
	case AGENT_INTERRUPTED:
		return err_set(FX_EINTR, "interrupted");
	case AGENT_BUDGET:
		pl->budget_hit = 1;
		if (!pl->budget_why.len)
			buf_addstr(&pl->budget_why, res->error ? res->error : "budget spent");
		return err_set(FX_ELIMIT, "%s", pl->budget_why.buf);
	case AGENT_PROVIDER_ERROR:
		return err_set(res->error_code ? res->error_code : FX_EPROVIDER, "%s",
			       res->error ? res->error : "the provider failed");
	default:
		return 0;
	}
}

static int stage_architect(struct pl *pl)
{
	struct agent_result res = AGENT_RESULT_INIT;
	struct buf task = BUF_INIT;
	int ret;

	if (pl->o->plan) {
		/* planned before, and approved: the plan is the run's as it is */
		json_decref(pl->plan);
		pl->plan = json_deep_copy(pl->o->plan);
		ret = rundir_write_json(&pl->s, "plan.json", pl->plan);
		if (ret == 0)
			pl_emit(pl, "plan", json_pack("{s:O, s:s}", "plan", pl->plan, "source",
						   "given"));
		return ret;
	}
	buf_addf(&task, "The request:\n%s\n\nStudy the project with your tools and make a plan "
		 "for this request. Hand it in with submit_plan.\n", pl->request);
	ret = run_agent(pl, &res, ROLE_ARCHITECT, task.buf, NULL, NULL);
	if (ret < 0)
		goto out;
	ret = agent_problem(pl, &res);
	if (ret < 0)
		goto out;
	if (res.status != AGENT_DONE || !res.terminal_args) {
		ret = err_set(FX_ERROR, "the Architect did not submit a plan (%s%s%s)",
			      agent_status_name(res.status), res.error ? ": " : "",
			      res.error ? res.error : "");
		goto out;
	}
	json_decref(pl->plan);
	pl->plan = json_incref(res.terminal_args);
	ret = rundir_write_json(&pl->s, "plan.json", pl->plan);
	if (ret < 0)
		goto out;
	pl_emit(pl, "plan", json_pack("{s:O}", "plan", pl->plan));
out:
	agent_result_release(&res);
	buf_release(&task);
	return ret;
}

static int stage_code(struct pl *pl, enum agent_role role, int repair)
{
	struct agent_result res = AGENT_RESULT_INIT;
	struct buf task = BUF_INIT;
	int ret;

	plan_text(pl, &task);
	if (role == ROLE_BUILDER) {
		buf_addstr(&task, "\nImplement the plan in the project with your tools. "
			   "End with finish, summarising what you changed.\n");
	} else if (!repair) {
		buf_addstr(&task, "\nThe Builder's changes so far (a diff from before the run):\n");
		current_diff(pl, &task, DIFF_MAX);
		buf_addstr(&task, "\nReview these changes against the plan and the request, fix what "
			   "is wrong or missing, and end with finish.\n");
	} else {
		buf_addstr(&task, "\nThe changes so far (a diff from before the run):\n");
		current_diff(pl, &task, DIFF_MAX);
		buf_addstr(&task, "\nThe change was not accepted. What is wrong:\n");
		buf_addbuf(&task, &pl->feedback);
		buf_addstr(&task, "\nRepair the change so that the tests pass and the required "
			   "fixes are done, then end with finish.\n");
	}
	ret = run_agent(pl, &res, role, task.buf, NULL, NULL);
	if (ret < 0)
		goto out;
	ret = agent_problem(pl, &res);
out:
	agent_result_release(&res);
	buf_release(&task);
	return ret;
}

static int stage_verify(struct pl *pl)
{
	int ran = run_tests(pl, &pl->last, "after");

	if (ran < 0)
		return ran;
	pl->last_ran = ran;
	verify_comparison_release(&pl->cmp);
	if (ran) {
		struct verify_result empty = VERIFY_RESULT_INIT;

		verify_compare(&pl->cmp, pl->have_baseline ? &pl->baseline : &empty, &pl->last);
		pl_emit(pl, "test_comparison", json_pack("{s:o}", "comparison",
						      verify_comparison_to_json(&pl->cmp)));
	}
	return 0;
}

struct vote_ctx {
	struct pl *pl;
	const char *task;
};

static int vote(struct review_vote *out, const char *voter, void *data)
{
	struct vote_ctx *vc = data;
	struct pl *pl = vc->pl;
	struct agent_result res = AGENT_RESULT_INIT;
	struct buf summary = BUF_INIT;
	char *prov = NULL, *model = NULL;
	int ret, pass = 0;

	if (strcmp(voter, "supervisor")) {
		ret = review_split_voter(&prov, &model, voter);
		if (ret < 0)
			goto out;
	}
	ret = run_agent(pl, &res, ROLE_SUPERVISOR, vc->task, prov, model);
	if (ret < 0)
		goto out;
	ret = agent_problem(pl, &res);
	if (ret < 0)
		goto out;
	if (res.status != AGENT_DONE || !res.terminal_args) {
		ret = err_set(FX_ERROR, "%s gave no verdict (%s%s%s)", voter,
			      agent_status_name(res.status), res.error ? ": " : "",
			      res.error ? res.error : "");
		goto out;
	}
	ret = review_parse_verdict(&pass, &summary, &out->fixes, res.terminal_args);
	if (ret < 0)
		goto out;
	out->pass = pass;
	out->summary = buf_detach(&summary, NULL);
out:
	pl_emit(pl, "vote", json_pack("{s:s, s:s, s:s?}", "voter", voter,
				   "verdict", ret < 0 ? "none" : pass ? "PASS" : "FAIL",
				   "error", ret < 0 ? err_last() : NULL));
	agent_result_release(&res);
	buf_release(&summary);
	free(prov);
	free(model);
	return ret;
}

/* Returns 1 PASS, 0 FAIL, or a negative code. */
static int stage_review(struct pl *pl)
{
	struct review rv;
	struct buf task = BUF_INIT, gate = BUF_INIT;
	struct vote_ctx vc;
	int q = review_quorum_from_name(pl->cfg->review.quorum), ret, blocked = 0;
	size_t i;

	review_init(&rv, q < 0 ? QUORUM_MAJORITY : (enum review_quorum)q);
	plan_text(pl, &task);
	buf_addstr(&task, "\nThe change (a diff from before the run):\n");
	current_diff(pl, &task, DIFF_MAX);
	buf_addstr(&task, "\nThe tests after the change:\n");
	if (pl->last_ran)
		pipeline_describe_tests(&task, &pl->last, &pl->cmp, TESTS_TEXT_MAX);
	else
		buf_addstr(&task, pl->have_cmd ? "the tests could not run\n"
					       : "no test command was found\n");
	buf_addstr(&task, "\nJudge whether the change does what was asked, follows the plan and "
		   "keeps the tests passing. Hand in your verdict with submit_verdict: PASS, or "
		   "FAIL with the fixes required.\n");
	vc.pl = pl;
	vc.task = task.buf;
	ret = review_ensemble(&rv, &pl->cfg->review.voters, vote, &vc);
	if (ret < 0)
		goto out;
	if (pl->budget_hit) {
		ret = err_set(FX_ELIMIT, "%s", pl->budget_why.buf);
		goto out;
	}
	if (pl->have_cmd)
		blocked = pipeline_gate(&gate, pl->last_ran, &pl->last, &pl->cmp);
	if (verify_must_pass_gate(&gate, pl->have_cmd && pl->last_ran ? &pl->last : NULL,
				  &pl->cfg->pipeline.must_pass))
		blocked = 1;
	{
		json_t *f = json_object();

		jsonx_set(f, "review", review_to_json(&rv));
		jsonx_set(f, "gate", blocked ? jsonx_string(gate.buf) : json_null());
		jsonx_set(f, "verdict", jsonx_string(rv.pass && !blocked ? "PASS" : "FAIL"));
		jsonx_set(f, "iteration", json_integer(pl->iteration));
		pl_emit(pl, "verdict", f);
	}
	ret = rv.pass && !blocked;
	buf_reset(&pl->gate_why);
	if (blocked)
		buf_addbuf(&pl->gate_why, &gate);
	/* what the repair is told */
	buf_reset(&pl->feedback);
	if (blocked)
		buf_addf(&pl->feedback, "The test gate refused the change: %s.\n", gate.buf);
	for (i = 0; i < rv.nr; i++) {
		const struct review_vote *v = &rv.votes[i];
		size_t k;

		if (v->pass)
			continue;
		buf_addf(&pl->feedback, "Reviewer %s: FAIL%s%s\n", v->voter,
			 *v->summary ? ": " : "", v->summary);
		for (k = 0; k < v->fixes.nr; k++)
			buf_addf(&pl->feedback, "  required fix: %s\n", v->fixes.v[k]);
	}
	if (pl->last_ran && !verify_result_ok(&pl->last)) {
		buf_addstr(&pl->feedback, "Failing tests:\n");
		pipeline_describe_tests(&pl->feedback, &pl->last, &pl->cmp, TESTS_TEXT_MAX);
	}
out:
	review_release(&rv);
	buf_release(&task);
	buf_release(&gate);
	return ret;
}

/*
 * Set up and tear down
 */

static int setup(struct pl *pl)
{
	const struct config *cfg = pl->cfg;
	char *tpath = NULL;
	size_t i;
	int ret;

	ret = rundir_exclude(cfg->workspace, NULL);
	if (ret < 0)
		return ret;
	tpath = pl->o->transcript_path ? xstrdup(pl->o->transcript_path)
				       : rundir_path(&pl->s, "transcript.jsonl");
	ret = transcript_open(&pl->tr, tpath);
	free(tpath);
	if (ret < 0)
		return ret;
	ret = checkpoint_open(&pl->cps, cfg->workspace);
	if (ret < 0)
		return ret;
	checkpoint_set_max_file_bytes(pl->cps, (uint64_t)cfg->checkpoints.max_file_bytes);
	ret = journal_open(&pl->jr, pl->cps, pl->s.dir, 1);
	if (ret < 0)
		return ret;
	pl->have_journal = 1;
	pl->rec.jr = &pl->jr;
	if (!pl->o->plan_only) {
		/* under the lock: what a killed write of any earlier run or turn left goes */
		struct strvec removed = STRVEC_INIT;

		if (pl->jr.removed.nr)
			strvec_pushv(&removed, (const char *const *)pl->jr.removed.v);
		journal_sweep(pl->cps, cfg->workspace, &removed);
		if (removed.nr)
			pl_emit(pl, "leftovers_removed", json_pack("{s:o}", "paths",
								   jsonx_from_strvec(&removed)));
		strvec_clear(&removed);
	}
	{
		struct workbench_opts wo = { cfg, pl->s.dir, pl->s.id, pl->o->cancel, &pl->rec,
					     pl->o->approver };

		ret = workbench_open(&pl->wb, &wo);
		if (ret < 0)
			return ret;
	}
	/* the index builds while the checkpoint and the baseline tests run */
	if (pl->wb.have_map_ex && cfg->context.map_tokens > 0 &&
	    ctx_session_prefetch(&pl->wb.ctx, &pl->wb.map_ex) < 0)
		err_clear();
	agent_budget_init(&pl->budget, cfg->budget.max_tokens, cfg->budget.max_cost_usd,
			  (double)cfg->budget.max_wall_seconds);
	for (i = 0; i < cfg->budget.prices.nr; i++) {
		ret = agent_budget_parse_prices(&pl->budget, cfg->budget.prices.v[i]);
		if (ret < 0)
			return err_prefix(ret, "budget.prices");
	}
	ret = verify_detect(&pl->cmd, cfg->workspace, &cfg->pipeline.test_command);
	/* a test command from an untrusted project file is not approved by being there */
	if (!ret && config_from_untrusted_project(cfg, "pipeline.test_command"))
		pl->cmd.configured = 0;
	if (ret == FX_ENOTFOUND) {
		err_clear();
		ret = 0;
	} else if (ret == 0) {
		pl->have_cmd = 1;
		/* must-pass tests given: those are the tests that run */
		if (verify_select(&pl->cmd, &cfg->pipeline.must_pass) < 0)
			return err_prefix(FX_EINVAL, "pipeline.must_pass");
	}
	return ret;
}

static void teardown(struct pl *pl)
{
	size_t i;

	for (i = 0; i < pl->nprov; i++) {
		provider_free(pl->provs[i].p);
		free(pl->provs[i].name);
	}
	workbench_release(&pl->wb);
	pl->rec.jr = NULL;
	if (pl->have_journal)
		journal_release(&pl->jr);
	checkpoint_close(pl->cps);
	free(pl->end_checkpoint);
	transcript_free(pl->tr);
	agent_budget_release(&pl->budget);
	verify_command_release(&pl->cmd);
	verify_result_release(&pl->baseline);
	verify_result_release(&pl->last);
	verify_comparison_release(&pl->cmp);
	buf_release(&pl->feedback);
	buf_release(&pl->budget_why);
	buf_release(&pl->gate_why);
	strvec_clear(&pl->agent_paths);
	json_decref(pl->plan);
	free(pl->request);
	free(pl->pre_checkpoint);
	free(pl->tree_checkpoint);
	recorder_release(&pl->rec);
	if (pl->have_rundir)
		rundir_release(&pl->s);
	ws_lock_release(&pl->lock);
}

/* After a stage that may have changed the tree: checkpoint it and save the state. */
static int stage_done(struct pl *pl, enum stage done, enum stage next, int changed_tree)
{
	int ret = 0;

	if (changed_tree) {
		char *what = xstrfmt("after %s", stages[done]);

		pl_note_agent_paths(pl);
		pl->tested_since_checkpoint = 0;
		ret = take_checkpoint(pl, &pl->tree_checkpoint, what);
		free(what);
		if (ret < 0)
			return ret;
	}
	pl->next = next;
	stage_event(pl, "stage_end", done, "done");
	return pl_save_state(pl);
}

static int budget_check(struct pl *pl)
{
	if (!agent_budget_spent(&pl->budget, &pl->budget_why))
		return 0;
	pl->budget_hit = 1;
	return err_set(FX_ELIMIT, "%s", pl->budget_why.buf);
}

static int machine(struct pl *pl)
{
	long max_iter = pl->cfg->pipeline.max_iterations;
	int ret = 0, pass;

	for (;;) {
		enum stage st = pl->next;

		if (cancelled(pl))
			return err_set(FX_EINTR, "interrupted");
		if (st == ST_DONE)
			return 1;
		if ((ret = budget_check(pl)) < 0)
			return ret;
		stage_event(pl, "stage_start", st, NULL);
		switch (st) {
		case ST_CHECKPOINT:
			/*
			 * Before the baseline: what forgex's own test runs leave
			 * in the tree (build products) is part of the run, and a
			 * rollback removes it.
			 */
			ret = take_checkpoint(pl, &pl->pre_checkpoint, "before run");
			if (ret < 0)
				return ret;
			free(pl->tree_checkpoint);
			pl->tree_checkpoint = xstrdup(pl->pre_checkpoint);
			ret = stage_done(pl, st, ST_BASELINE, 0);
			break;
		case ST_BASELINE:
			if (!pl->pre_checkpoint) {
				/* a run saved by an older forgex, checkpoint second */
				ret = take_checkpoint(pl, &pl->pre_checkpoint, "before run");
				if (ret < 0)
					return ret;
				free(pl->tree_checkpoint);
				pl->tree_checkpoint = xstrdup(pl->pre_checkpoint);
			}
			if (pl->cfg->pipeline.baseline) {
				ret = run_tests(pl, &pl->baseline, "baseline");
				if (ret < 0)
					return ret;
				pl->have_baseline = ret > 0;
				/* what the agents change is counted from here on */
				if (pl->have_baseline) {
					ret = take_checkpoint(pl, &pl->tree_checkpoint, "after baseline");
					if (ret < 0)
						return ret;
				}
				/* taken, or the tests did not run and changed nothing */
				pl->tested_since_checkpoint = 0;
			}
			ret = stage_done(pl, st, ST_ARCHITECT, 0);
			break;
		case ST_ARCHITECT:
			ret = stage_architect(pl);
			if (ret < 0)
				return ret;
			if (pl->o->plan_only) {
				stage_event(pl, "stage_end", st, "done");
				return 1;
			}
			ret = stage_done(pl, st, ST_BUILDER, 0);
			break;
		case ST_BUILDER:
			ret = stage_code(pl, ROLE_BUILDER, 0);
			if (ret < 0)
				return ret;
			ret = stage_done(pl, st, ST_EXPERT, 1);
			break;
		case ST_EXPERT:
			ret = stage_code(pl, ROLE_EXPERT_CODER, 0);
			if (ret < 0)
				return ret;
			pl->iteration = 1;
			ret = stage_done(pl, st, ST_VERIFY, 1);
			break;
		case ST_VERIFY:
			if (pl->iteration < 1)
				pl->iteration = 1;
			ret = stage_verify(pl);
			if (ret < 0)
				return ret;
			ret = stage_done(pl, st, ST_REVIEW, 0);
			break;
		case ST_REVIEW:
			pass = stage_review(pl);
			if (pass < 0)
				return pass;
			if (pass) {
				stage_event(pl, "stage_end", st, "PASS");
				return 1;
			}
			if (pl->iteration >= max_iter) {
				stage_event(pl, "stage_end", st, "FAIL");
				return 0;
			}
			ret = stage_done(pl, st, ST_REPAIR, 0);
			break;
		case ST_REPAIR: {
			char *before = NULL;

			ret = take_checkpoint(pl, &before, "before repair");
			if (ret < 0)
				return ret;
			/* the repair's work is counted from here, test products aside */
			free(pl->tree_checkpoint);
			pl->tree_checkpoint = before;
			pl->tested_since_checkpoint = 0;
			ret = stage_code(pl, ROLE_EXPERT_CODER, 1);
			if (ret < 0)
				return ret;
			pl->iteration++;
			ret = stage_done(pl, st, ST_VERIFY, 1);
			break;
		}
		case ST_DONE:
			return 1;
		}
		if (ret < 0)
			return ret;
	}
}

int pipeline_run(struct pipeline_result *out, const struct pipeline_opts *opts)
{
	struct pl pl;
	int ret, m;
	char *reason = NULL;

	memset(out, 0, sizeof(*out));
	out->outcome = PIPELINE_ERROR;
	memset(&pl, 0, sizeof(pl));
	/* not held (a plan takes none): not descriptor 0, which release would close */
	pl.lock = (struct ws_lock)WS_LOCK_INIT;
	pl.o = opts;
	pl.cfg = opts->cfg;
	pl.out = out;
	pl.t0 = clk_mono_s();
	buf_init(&pl.feedback, 0);
	buf_init(&pl.budget_why, 0);
	buf_init(&pl.gate_why, 0);
	strvec_init(&pl.agent_paths);
	pl.agent_paths_known = !opts->resume_id;
	verify_command_release(&pl.cmd);
	verify_result_release(&pl.baseline);
	verify_result_release(&pl.last);
	verify_comparison_release(&pl.cmp);
	workbench_init(&pl.wb);
	recorder_init(&pl.rec, &pl.s);

	if (!pl.cfg || !pl.cfg->workspace) {
		ret = err_set(FX_EINVAL, "no workspace");
		goto out;
	}
	if (!opts->resume_id && (!opts->request || !*opts->request)) {
		ret = err_set(FX_EINVAL, "a request is required");
		goto out;
	}
	/* one run at a time per workspace (plan only reads: no lock) */
	if (!opts->plan_only) {
		char *what = opts->resume_id ? xstrfmt("resume of run %s", opts->resume_id)
					     : xstrdup("run");

		ret = ws_lock_acquire(&pl.lock, pl.cfg->workspace, what, opts->no_wait,
				      opts->on_wait, opts->event_data, opts->cancel);
		free(what);
		if (ret < 0)
			goto out;
	}
	if (opts->resume_id) {
		ret = rundir_open(&pl.s, pl.cfg->workspace, opts->resume_id);
		if (ret < 0)
			goto out;
		pl.have_rundir = 1;
		ret = load_state(&pl);
		if (ret < 0)
			goto out;
	} else {
		ret = rundir_create(&pl.s, pl.cfg->workspace, opts->request);
		if (ret < 0)
			goto out;
		pl.have_rundir = 1;
		runrecord_add(pl.cfg->workspace, pl.s.id);
		pl.request = xstrdup(opts->request);
		pl.next = ST_CHECKPOINT;
	}
	pl.s.on_event = opts->on_event;
	pl.s.on_event_data = opts->event_data;
	if (!opts->resume_id) {
		char *what = xstrfmt("run %s", pl.s.id);

		ws_lock_describe(&pl.lock, what);
		free(what);
	}
	out->run_id = xstrdup(pl.s.id);
	out->run_dir = xstrdup(pl.s.dir);
	if (opts->on_rundir)
		opts->on_rundir(opts->event_data, &pl.s);
	pl_emit(&pl, opts->resume_id ? "run_resume" : "run_start",
	     json_pack("{s:s, s:s, s:s, s:b}", "run_id", pl.s.id, "request", pl.request,
		       "next", stages[pl.next], "plan_only", opts->plan_only));
	ret = setup(&pl);
	if (ret < 0) {
		reason = xstrdup(err_last());
		pl_finish(&pl, ret, 0, reason);
		ret = 0;
		goto out;
	}
	if (opts->resume_id && pl.tree_checkpoint) {
		/* the run's own paths go back to its last completed stage; the user's stay */
		struct strvec failed = STRVEC_INIT;

		ret = journal_restore_to(&pl.jr, pl.tree_checkpoint, &failed);
		if (ret > 0)
			ret = err_set(FX_EOS, "cannot put back the tree of the last completed stage: "
				      "%s", failed.v[0]);
		strvec_clear(&failed);
		if (ret < 0) {
			reason = xstrdup(err_last());
			pl_finish(&pl, ret, 0, reason);
			ret = 0;
			goto out;
		}
		journal_note_restored(&pl.jr, pl.tree_checkpoint);
		pl_emit(&pl, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "restore", "id",
						  pl.tree_checkpoint, "why", "resume"));
	}
	{
		json_t *in = json_pack("{s:s, s:b}", "request", pl.request, "resumed",
				       opts->resume_id != NULL);
		struct buf why = BUF_INIT;
		int blocked;

		hooks_fire(&pl.wb.uhooks, "session_start", NULL, in, NULL, NULL);
		blocked = !opts->resume_id &&
			  hooks_fire(&pl.wb.uhooks, "user_prompt", NULL, in, &why, NULL);
		json_decref(in);
		if (blocked) {
			reason = xstrfmt("a user_prompt hook blocked the request: %s",
					 why.len ? why.buf : "(it gave no reason)");
			buf_release(&why);
			err_set(FX_EDENIED, "%s", reason);
			pl_finish(&pl, FX_EDENIED, 0, reason);
			ret = 0;
			goto out;
		}
		buf_release(&why);
	}
	if (!opts->resume_id)
		pl_save_state(&pl);
	m = machine(&pl);
	if (m < 0) {
		reason = xstrdup(err_last());
		pl_finish(&pl, m, 0, reason);
	} else if (m == 1) {
		pl_finish(&pl, 0, 1, "");
	} else {
		reason = xstrfmt("the change did not pass after %d iteration%s%s%s", pl.iteration,
				 pl.iteration == 1 ? "" : "s", pl.gate_why.len ? "; the test gate: " : "",
				 pl.gate_why.len ? pl.gate_why.buf : "");
		pl_finish(&pl, 0, 0, reason);
	}
	ret = 0;
out:
	free(reason);
	teardown(&pl);
	return ret;
}

void pipeline_result_release(struct pipeline_result *r)
{
	free(r->run_id);
	free(r->run_dir);
	free(r->reason);
	free(r->pre_checkpoint);
	free(r->diffstat);
	json_decref(r->plan);
	json_decref(r->summary);
	strvec_clear(&r->kept_paths);
	strvec_clear(&r->failed_paths);
	ledger_release(&r->ledger);
	memset(r, 0, sizeof(*r));
}

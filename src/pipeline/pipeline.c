/*
 * The pipeline's state machine (see pipeline.h and
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
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "llm/provider.h"
#include "llm/transcript.h"
#include "pipeline/pipeline.h"
#include "sandbox/executor.h"
#include "pipeline/hooks.h"
#include "tools/mcp_tools.h"
#include "tools/registry.h"
#include "tools/shell.h"
#include "vcs/checkpoint.h"
#include "vcs/commit.h"
#include "vcs/diff.h"

#define DIFF_MAX (48u << 10)		/* bytes of diff shown to a role */
#define TESTS_TEXT_MAX (16u << 10)	/* bytes of test outcome shown to a role */
#define MAX_PROVIDERS 16

/* The stages, in order; "next" in state.json names one of them. */
static const char *const stages[] = {
	"baseline", "checkpoint", "architect", "builder", "expert", "verify", "review",
	"repair", "done",
};

enum stage {
	ST_BASELINE, ST_CHECKPOINT, ST_ARCHITECT, ST_BUILDER, ST_EXPERT, ST_VERIFY, ST_REVIEW,
	ST_REPAIR, ST_DONE,
};

struct pl_provider {
	char *name;
	struct provider *p;
};

struct pl {
	const struct pipeline_opts *o;
	struct config *cfg;
	struct pipeline_result *out;
	struct session s;
	int have_session;
	struct transcript *tr;
	struct checkpoints *cps;
	struct executor ex;
	int have_ex;
	struct tool_registry reg;
	struct mcp_set mcp;
	struct hooks hooks;
	struct tool_ctx tctx;
	int have_tctx;
	struct shell_tools st;
	struct agent_budget budget;
	struct pl_provider provs[MAX_PROVIDERS];
	size_t nprov;

	char *request;
	json_t *plan;
	char *pre_checkpoint;
	char *tree_checkpoint;
	struct verify_command cmd;
	int have_cmd;			/* a test command was found */
	struct verify_result baseline;
	int have_baseline;
	struct verify_result last;
	struct verify_comparison cmp;
	int last_ran;
	struct buf feedback;		/* what the repair is told */
	int iteration;
	enum stage next;
	int budget_hit;
	struct buf budget_why;
	double t0;
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

static void emit(struct pl *pl, const char *type, json_t *fields)
{
	/* a failure to record is not a reason to stop changing code halfway */
	if (session_event(&pl->s, type, fields) < 0)
		err_clear();
}

static void on_agent_event(void *data, const char *type, json_t *fields)
{
	struct pl *pl = data;

	if (!strcmp(type, "progress")) {
		/* for display only: not stored */
		if (pl->o->on_event) {
			json_t *ev = json_deep_copy(fields);

			jsonx_set(ev, "type", jsonx_string(type));
			pl->o->on_event(pl->o->event_data, ev);
			json_decref(ev);
		}
		json_decref(fields);
		return;
	}
	emit(pl, type, fields);
}

static void on_command(void *data, const char *tool, const struct strvec *argv, int code,
		       const struct exec_result *r)
{
	struct pl *pl = data;
	json_t *f = json_object();

	jsonx_set(f, "tool", jsonx_string(tool));
	jsonx_set(f, "argv", jsonx_from_strvec(argv));
	if (code < 0) {
		jsonx_set(f, "refused", json_true());
		jsonx_set(f, "error", jsonx_string(err_last()));
	} else if (r) {
		jsonx_set(f, "exit_code", json_integer(r->exit_code));
		jsonx_set(f, "timed_out", json_boolean(r->timed_out));
		jsonx_set(f, "duration_ms", json_integer((json_int_t)r->duration_ms));
	}
	emit(pl, "command", f);
}

static void on_hook_event(void *data, json_t *fields)
{
	emit(data, "hook", fields);
}

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
	emit(pl, what, f);
}

/*
 * State, for resume.
 */

static int save_state(struct pl *pl)
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
	ret = session_write_json(&pl->s, "state.json", j);
	json_decref(j);
	return ret;
}

static int load_state(struct pl *pl)
{
	json_t *j = NULL, *v;
	int ret, st;

	ret = session_read_json(&j, pl->s.dir, "state.json");
	if (ret < 0)
		return err_prefix(ret, "run %s cannot be resumed", pl->s.id);
	st = stage_from_name(jsonx_str(j, "next"));
	if (st < 0 || !jsonx_str(j, "request")) {
		ret = err_set(FX_EPARSE, "run %s: state.json is not one forgex wrote", pl->s.id);
		goto out;
	}
	if (st == ST_DONE) {
		ret = err_set(FX_EINVAL, "run %s has already ended", pl->s.id);
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
	emit(pl, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "create", "id", info.id,
					 "what", what));
	checkpoint_info_release(&info);
	return 0;
}

static int restore_checkpoint(struct pl *pl, const char *id, const char *why)
{
	struct checkpoint_restore_result res;
	int ret;

	memset(&res, 0, sizeof(res));
	ret = checkpoint_restore(&res, pl->cps, id);
	if (ret < 0)
		return err_prefix(ret, "cannot restore checkpoint %.12s", id);
	emit(pl, "checkpoint", json_pack("{s:s, s:s, s:s, s:s, s:I, s:I}", "action", "restore",
					 "id", id, "why", why, "backup", res.backup.id,
					 "written", (json_int_t)res.written,
					 "removed", (json_int_t)res.removed));
	checkpoint_restore_result_release(&res);
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

/* The project's instruction files, for every role's system prompt. */
static void instructions(struct pl *pl, struct buf *out)
{
	size_t i;

	for (i = 0; i < pl->cfg->context.instructions.nr; i++) {
		char *p = xstrfmt("%s/%s", pl->cfg->workspace, pl->cfg->context.instructions.v[i]);
		struct buf c = BUF_INIT;

		if (!fsutil_read_file(&c, p, 32u << 10) && c.len)
			buf_addf(out, "## %s\n\n%s\n", pl->cfg->context.instructions.v[i], c.buf);
		err_clear();
		buf_release(&c);
		free(p);
	}
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
	instructions(pl, &extra);
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
	ao.tools = &pl->tctx;
	ao.budget = &pl->budget;
	ao.on_event = on_agent_event;
	ao.event_data = pl;
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

int pipeline_gate(struct buf *why, int ran, const struct verify_result *current,
		  const struct verify_comparison *cmp)
{
	size_t i, named = 0;

	if (!ran) {
		buf_addstr(why, "the tests could not run");
		return 1;
	}
	if (current && current->timed_out) {
		buf_addstr(why, "the tests could not run to the end (timed out)");
		return 1;
	}
	if (!cmp)
		return 0;
	for (i = 0; i < cmp->entries_nr; i++) {
		const struct verify_change_entry *e = &cmp->entries[i];

		if (e->change != VERIFY_NEWLY_FAILING || e->before != VERIFY_PASS)
			continue;
		buf_addstr(why, named ? ", " : "tests that passed at baseline now fail: ");
		buf_addstr(why, e->name);
		named++;
	}
	if (named)
		return 1;
	if (!cmp->entries_nr && cmp->failing_after > cmp->failing_before) {
		buf_addf(why, "more tests fail than at baseline (%ld, was %ld)", cmp->failing_after,
			 cmp->failing_before);
		return 1;
	}
	return 0;
}

void pipeline_describe_tests(struct buf *out, const struct verify_result *r,
			     const struct verify_comparison *cmp, size_t max)
{
	size_t start = out->len, i;

	buf_addf(out, "passed %ld, failed %ld, errors %ld, skipped %ld, exit status %d%s\n",
		 r->passed, r->failed, r->errors, r->skipped, r->exit_code,
		 r->timed_out ? " (timed out)" : "");
	if (cmp) {
		buf_addf(out, "compared with the baseline: %zu newly failing, %zu fixed, "
			 "%zu still failing, %zu new\n", cmp->counts[VERIFY_NEWLY_FAILING],
			 cmp->counts[VERIFY_FIXED], cmp->counts[VERIFY_STILL_FAILING],
			 cmp->counts[VERIFY_NEW]);
	}
	for (i = 0; i < r->tests_nr && out->len - start < max; i++) {
		const struct verify_test *t = &r->tests[i];

		if (t->outcome != VERIFY_FAIL && t->outcome != VERIFY_ERROR)
			continue;
		buf_addf(out, "- %s: %s\n", t->name, verify_outcome_name(t->outcome));
		if (t->excerpt && *t->excerpt)
			buf_addf(out, "%s\n", t->excerpt);
	}
	if (!verify_result_ok(r) && !verify_result_failing(r) && r->tail && *r->tail)
		buf_addf(out, "output tail:\n%s\n", r->tail);
	if (out->len - start > max) {
		buf_setlen(out, start + max);
		buf_addstr(out, "\n[... cut ...]\n");
	}
}

/* Run the tests into `out`; returns 1 when they ran, 0 when they could not. */
static int run_tests(struct pl *pl, struct verify_result *out, const char *what)
{
	struct verify_request req;
	int ret;

	verify_result_release(out);
	if (!pl->have_cmd) {
		emit(pl, "test_result", json_pack("{s:s, s:b, s:s}", "what", what, "ran", 0,
						  "reason", "no test command found"));
		return 0;
	}
	memset(&req, 0, sizeof(req));
	req.cmd = &pl->cmd;
	req.workspace = pl->cfg->workspace;
	emit(pl, "command", json_pack("{s:s, s:o}", "tool", "verify",
				      "argv", jsonx_from_strvec(&pl->cmd.argv)));
	if (hooks_have(&pl->hooks, "pre_verify")) {
		json_t *in = json_pack("{s:s, s:o}", "what", what, "command",
				       jsonx_from_strvec(&pl->cmd.argv));

		hooks_fire(&pl->hooks, "pre_verify", NULL, in, NULL, NULL);
		json_decref(in);
	}
	ret = verify_run(out, &req, verify_executor_run, &pl->ex);
	if (hooks_have(&pl->hooks, "post_verify")) {
		json_t *in = json_pack("{s:s, s:b, s:o}", "what", what, "ran", ret >= 0,
				       "result", ret >= 0 ? verify_result_to_json(out) : json_null());

		hooks_fire(&pl->hooks, "post_verify", NULL, in, NULL, NULL);
		json_decref(in);
	}
	if (ret < 0) {
		emit(pl, "test_result", json_pack("{s:s, s:b, s:s}", "what", what, "ran", 0,
						  "reason", err_last()));
		return ret == FX_EINTR ? ret : 0;
	}
	{
		json_t *f = json_object();

		jsonx_set(f, "what", jsonx_string(what));
		jsonx_set(f, "ran", json_true());
		jsonx_set(f, "ok", json_boolean(verify_result_ok(out)));
		jsonx_set(f, "result", verify_result_to_json(out));
		emit(pl, "test_result", f);
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
 * the pipeline may go on, else a code for finish(): FX_EINTR, FX_ELIMIT
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
	ret = session_write_json(&pl->s, "plan.json", pl->plan);
	if (ret < 0)
		goto out;
	emit(pl, "plan", json_pack("{s:O}", "plan", pl->plan));
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
		emit(pl, "test_comparison", json_pack("{s:o}", "comparison",
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
	emit(pl, "vote", json_pack("{s:s, s:s, s:s?}", "voter", voter,
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
	{
		json_t *f = json_object();

		jsonx_set(f, "review", review_to_json(&rv));
		jsonx_set(f, "gate", blocked ? jsonx_string(gate.buf) : json_null());
		jsonx_set(f, "verdict", jsonx_string(rv.pass && !blocked ? "PASS" : "FAIL"));
		jsonx_set(f, "iteration", json_integer(pl->iteration));
		emit(pl, "verdict", f);
	}
	ret = rv.pass && !blocked;
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

	ret = session_exclude(cfg->workspace, NULL);
	if (ret < 0)
		return ret;
	tpath = pl->o->transcript_path ? xstrdup(pl->o->transcript_path)
				       : session_path(&pl->s, "transcript.jsonl");
	ret = transcript_open(&pl->tr, tpath);
	free(tpath);
	if (ret < 0)
		return ret;
	ret = checkpoint_open(&pl->cps, cfg->workspace);
	if (ret < 0)
		return ret;
	ret = executor_init(&pl->ex, cfg, cfg->workspace);
	if (ret < 0)
		return err_prefix(ret, "sandbox");
	pl->have_ex = 1;
	executor_set_cancel(&pl->ex, -1, pl->o->cancel);
	pl->st.executor = &pl->ex;
	pl->st.test_command = &cfg->pipeline.test_command;
	pl->st.on_command = on_command;
	pl->st.data = pl;
	registry_init(&pl->reg);
	if ((ret = tools_register_builtin(&pl->reg)) < 0 ||
	    (ret = tools_register_shell(&pl->reg, &pl->st)) < 0 ||
	    (ret = roles_register_tools(&pl->reg)) < 0)
		return ret;
	if (cfg->mcp_servers_nr) {
		mcp_set_start(&pl->mcp, cfg, pl->s.dir, NULL, pl->o->cancel);
		for (i = 0; i < pl->mcp.nr; i++)
			emit(pl, "mcp_server", mcp_set_server_json(&pl->mcp, i));
		ret = tools_register_mcp(&pl->reg, &pl->mcp);
		if (ret < 0)
			return ret;
	}
	ret = tool_ctx_init(&pl->tctx, &pl->reg, cfg->workspace);
	if (ret < 0)
		return ret;
	pl->have_tctx = 1;
	hooks_init(&pl->hooks, cfg, &pl->ex, pl->s.id, on_hook_event, pl);
	hooks_tool_hooks(&pl->tctx.hooks, &pl->hooks);
	agent_budget_init(&pl->budget, cfg->budget.max_tokens, cfg->budget.max_cost_usd,
			  (double)cfg->budget.max_wall_seconds);
	for (i = 0; i < cfg->budget.prices.nr; i++) {
		ret = agent_budget_parse_prices(&pl->budget, cfg->budget.prices.v[i]);
		if (ret < 0)
			return err_prefix(ret, "budget.prices");
	}
	ret = verify_detect(&pl->cmd, cfg->workspace, &cfg->pipeline.test_command);
	if (ret == FX_ENOTFOUND) {
		err_clear();
		ret = 0;
	} else if (ret == 0) {
		pl->have_cmd = 1;
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
	if (pl->have_tctx)
		tool_ctx_release(&pl->tctx);
	registry_release(&pl->reg);
	mcp_set_release(&pl->mcp);
	shell_tools_release(&pl->st);
	if (pl->have_ex)
		executor_release(&pl->ex);
	checkpoint_close(pl->cps);
	transcript_free(pl->tr);
	agent_budget_release(&pl->budget);
	verify_command_release(&pl->cmd);
	verify_result_release(&pl->baseline);
	verify_result_release(&pl->last);
	verify_comparison_release(&pl->cmp);
	buf_release(&pl->feedback);
	buf_release(&pl->budget_why);
	json_decref(pl->plan);
	free(pl->request);
	free(pl->pre_checkpoint);
	free(pl->tree_checkpoint);
	if (pl->have_session)
		session_release(&pl->s);
}

/*
 * Commit the change on the current branch: exactly the paths that differ
 * from the pre-run checkpoint (see vcs/commit.h).
 */
static int commit_change(struct pl *pl, const char *message)
{
	struct strvec paths = STRVEC_INIT;
	char id[41] = "";
	int ret;

	ret = vcs_changed_paths(&paths, pl->cps, pl->pre_checkpoint);
	if (ret < 0 || !paths.nr)
		goto out;
	ret = vcs_commit_paths(id, pl->cfg->workspace, &paths, message);
	if (ret <= 0)
		goto out;
	ret = 0;
	pl->out->committed = 1;
	emit(pl, "commit", json_pack("{s:s, s:s, s:i}", "message", message, "id", id,
				     "paths", (int)paths.nr));
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

/*
 * Reach an ending: restore or keep, write summary.json, fill `out`.
 * `code` is 0 (PASS or FAIL by `pass`), FX_EINTR, FX_ELIMIT (budget) or
 * another failure (error).
 */
static void finish(struct pl *pl, int code, int pass, const char *reason)
{
	struct pipeline_result *out = pl->out;
	struct buf stat = BUF_INIT;
	const char *on_failure = pl->cfg->pipeline.on_failure;
	int restore = 0;
	json_t *sum;

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
	out->reason = xstrdup(reason ? reason : "");
	if (pl->cps && pl->pre_checkpoint) {
		if (vcs_diff_ext(&stat, NULL, pl->cps, pl->pre_checkpoint, VCS_DIFF_STAT) < 0)
			err_clear();
		out->diffstat = buf_detach(&stat, NULL);
	}
	if (out->outcome == PIPELINE_INTERRUPTED)
		restore = 1;
	else if (out->outcome == PIPELINE_FAIL || out->outcome == PIPELINE_ERROR)
		restore = !on_failure || strcmp(on_failure, "keep");
	if (restore && pl->cps && pl->pre_checkpoint) {
		if (restore_checkpoint(pl, pl->pre_checkpoint, pipeline_outcome_name(out->outcome)) < 0) {
			free(out->reason);
			out->reason = xstrfmt("%s; and the tree could not be restored: %s",
					      reason ? reason : "", err_last());
		} else {
			out->rolled_back = 1;
		}
	} else if (!restore && pl->pre_checkpoint && out->outcome != PIPELINE_PASS &&
		   out->outcome != PIPELINE_PLANNED) {
		out->kept = 1;
	}
	if (out->outcome == PIPELINE_PASS && pl->cfg->pipeline.commit) {
		char *msg = xstrfmt("%s\n\nMade by forgex run %s.", pl->request, pl->s.id);

		if (commit_change(pl, msg) < 0) {
			free(out->reason);
			out->reason = xstrfmt("the change passed but could not be committed: %s",
					      err_last());
		}
		free(msg);
	}
	out->iterations = pl->iteration;
	out->tokens = pl->budget.tokens_used;
	out->cost_usd = pl->budget.cost_used;
	out->seconds = agent_now() - pl->t0;
	out->pre_checkpoint = xstrdup(pl->pre_checkpoint ? pl->pre_checkpoint : "");
	if (pl->plan)
		out->plan = json_incref(pl->plan);

	sum = json_object();
	jsonx_set(sum, "run_id", jsonx_string(pl->s.id));
	jsonx_set(sum, "request", jsonx_string(pl->request ? pl->request : ""));
	jsonx_set(sum, "outcome", jsonx_string(pipeline_outcome_name(out->outcome)));
	jsonx_set(sum, "reason", jsonx_string(out->reason));
	jsonx_set(sum, "pre_checkpoint", jsonx_string(out->pre_checkpoint));
	jsonx_set(sum, "rolled_back", json_boolean(out->rolled_back));
	jsonx_set(sum, "kept", json_boolean(out->kept));
	jsonx_set(sum, "committed", json_boolean(out->committed));
	jsonx_set(sum, "iterations", json_integer(out->iterations));
	jsonx_set(sum, "tokens", json_integer(out->tokens));
	jsonx_set(sum, "cost_usd", json_real(out->cost_usd));
	jsonx_set(sum, "seconds", json_real(out->seconds));
	jsonx_set(sum, "files_changed", jsonx_string(out->diffstat ? out->diffstat : ""));
	jsonx_set(sum, "tests_before", tests_json(&pl->baseline, pl->have_baseline));
	jsonx_set(sum, "tests_after", tests_json(&pl->last, pl->last_ran));
	if (session_write_json(&pl->s, "summary.json", sum) < 0)
		err_clear();
	pl->next = ST_DONE;
	if (save_state(pl) < 0)
		err_clear();
	if (hooks_have(&pl->hooks, "stop")) {
		json_t *in = json_pack("{s:s, s:s}", "outcome", pipeline_outcome_name(out->outcome),
				       "reason", out->reason);

		hooks_fire(&pl->hooks, "stop", NULL, in, NULL, NULL);
		json_decref(in);
	}
	emit(pl, "run_end", json_pack("{s:s, s:s, s:b, s:b, s:i, s:I}", "outcome",
				      pipeline_outcome_name(out->outcome), "reason", out->reason,
				      "rolled_back", out->rolled_back, "kept", out->kept,
				      "iterations", out->iterations, "tokens", (json_int_t)out->tokens));
	out->summary = sum;
	buf_release(&stat);
}

/* After a stage that may have changed the tree: checkpoint it and save the state. */
static int stage_done(struct pl *pl, enum stage done, enum stage next, int changed_tree)
{
	int ret = 0;

	if (changed_tree) {
		char *what = xstrfmt("after %s", stages[done]);

		ret = take_checkpoint(pl, &pl->tree_checkpoint, what);
		free(what);
		if (ret < 0)
			return ret;
	}
	pl->next = next;
	stage_event(pl, "stage_end", done, "done");
	return save_state(pl);
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
		case ST_BASELINE:
			if (pl->cfg->pipeline.baseline) {
				ret = run_tests(pl, &pl->baseline, "baseline");
				if (ret < 0)
					return ret;
				pl->have_baseline = ret > 0;
			}
			ret = stage_done(pl, st, ST_CHECKPOINT, 0);
			break;
		case ST_CHECKPOINT:
			ret = take_checkpoint(pl, &pl->pre_checkpoint, "before run");
			if (ret < 0)
				return ret;
			free(pl->tree_checkpoint);
			pl->tree_checkpoint = xstrdup(pl->pre_checkpoint);
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
			free(before);
			if (ret < 0)
				return ret;
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
	pl.o = opts;
	pl.cfg = opts->cfg;
	pl.out = out;
	pl.t0 = agent_now();
	buf_init(&pl.feedback, 0);
	buf_init(&pl.budget_why, 0);
	verify_command_release(&pl.cmd);
	verify_result_release(&pl.baseline);
	verify_result_release(&pl.last);
	verify_comparison_release(&pl.cmp);
	registry_init(&pl.reg);
	mcp_set_init(&pl.mcp);
	pl.st = (struct shell_tools)SHELL_TOOLS_INIT;

	if (!pl.cfg || !pl.cfg->workspace) {
		ret = err_set(FX_EINVAL, "no workspace");
		goto out;
	}
	if (opts->resume_id) {
		ret = session_open(&pl.s, pl.cfg->workspace, opts->resume_id);
		if (ret < 0)
			goto out;
		pl.have_session = 1;
		ret = load_state(&pl);
		if (ret < 0)
			goto out;
	} else {
		if (!opts->request || !*opts->request) {
			ret = err_set(FX_EINVAL, "a request is required");
			goto out;
		}
		ret = session_create(&pl.s, pl.cfg->workspace, opts->request);
		if (ret < 0)
			goto out;
		pl.have_session = 1;
		pl.request = xstrdup(opts->request);
		pl.next = ST_BASELINE;
	}
	pl.s.on_event = opts->on_event;
	pl.s.on_event_data = opts->event_data;
	out->run_id = xstrdup(pl.s.id);
	out->run_dir = xstrdup(pl.s.dir);
	if (opts->on_session)
		opts->on_session(opts->event_data, &pl.s);
	emit(&pl, opts->resume_id ? "run_resume" : "run_start",
	     json_pack("{s:s, s:s, s:s, s:b}", "run_id", pl.s.id, "request", pl.request,
		       "next", stages[pl.next], "plan_only", opts->plan_only));
	ret = setup(&pl);
	if (ret < 0) {
		reason = xstrdup(err_last());
		finish(&pl, ret, 0, reason);
		ret = 0;
		goto out;
	}
	if (opts->resume_id && pl.tree_checkpoint) {
		ret = restore_checkpoint(&pl, pl.tree_checkpoint, "resume");
		if (ret < 0) {
			reason = xstrdup(err_last());
			finish(&pl, ret, 0, reason);
			ret = 0;
			goto out;
		}
	}
	{
		json_t *in = json_pack("{s:s, s:b}", "request", pl.request, "resumed",
				       opts->resume_id != NULL);
		struct buf why = BUF_INIT;
		int blocked;

		hooks_fire(&pl.hooks, "session_start", NULL, in, NULL, NULL);
		blocked = !opts->resume_id &&
			  hooks_fire(&pl.hooks, "user_prompt", NULL, in, &why, NULL);
		json_decref(in);
		if (blocked) {
			reason = xstrfmt("a user_prompt hook blocked the request: %s",
					 why.len ? why.buf : "(it gave no reason)");
			buf_release(&why);
			err_set(FX_EDENIED, "%s", reason);
			finish(&pl, FX_EDENIED, 0, reason);
			ret = 0;
			goto out;
		}
		buf_release(&why);
	}
	if (!opts->resume_id)
		save_state(&pl);
	m = machine(&pl);
	if (m < 0) {
		reason = xstrdup(err_last());
		finish(&pl, m, 0, reason);
	} else if (m == 1) {
		finish(&pl, 0, 1, "");
	} else {
		reason = xstrfmt("the change did not pass after %d iteration%s", pl.iteration,
				 pl.iteration == 1 ? "" : "s");
		finish(&pl, 0, 0, reason);
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
	memset(r, 0, sizeof(*r));
}

int pipeline_undo(char **checkpoint, const char *workspace, const char *id)
{
	struct checkpoints *cps = NULL;
	struct checkpoint_restore_result res;
	char *dir = session_dir(workspace, id);
	json_t *st = NULL;
	const char *pre;
	int ret;

	memset(&res, 0, sizeof(res));
	ret = session_read_json(&st, dir, "state.json");
	if (ret < 0)
		goto out;
	pre = jsonx_str(st, "pre_checkpoint");
	if (!pre) {
		ret = err_set(FX_ENOTFOUND, "run %s changed nothing (no pre-run checkpoint)", id);
		goto out;
	}
	ret = checkpoint_open(&cps, workspace);
	if (ret < 0)
		goto out;
	ret = checkpoint_restore(&res, cps, pre);
	if (ret < 0)
		goto out;
	if (checkpoint)
		*checkpoint = xstrdup(pre);
	{
		struct session s;

		if (!session_open(&s, workspace, id)) {
			session_event(&s, "undo", json_pack("{s:s, s:s}", "checkpoint", pre,
							    "backup", res.backup.id));
			session_release(&s);
		}
		err_clear();
	}
out:
	checkpoint_restore_result_release(&res);
	checkpoint_close(cps);
	json_decref(st);
	free(dir);
	return ret;
}

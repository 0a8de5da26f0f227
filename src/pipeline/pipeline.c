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
#include "context/context.h"
#include "llm/provider.h"
#include "llm/transcript.h"
#include "pipeline/journal.h"
#include "pipeline/lock.h"
#include "pipeline/pipeline.h"
#include "sandbox/permissions.h"
#include "sandbox/executor.h"
#include "pipeline/hooks.h"
#include "pipeline/workbench.h"
#include "tools/mcp_tools.h"
#include "tools/registry.h"
#include "tools/shell.h"
#include "tools/verify_executor.h"
#include "vcs/checkpoint.h"
#include "vcs/commit.h"
#include "vcs/diff.h"
#include "vcs/paths.h"

#define DIFF_MAX (48u << 10)		/* bytes of diff shown to a role */
#define TESTS_TEXT_MAX (16u << 10)	/* bytes of test outcome shown to a role */
#define MAX_PROVIDERS 16

/* The stages, in order; "next" in state.json names one of them. */
static const char *const stages[] = {
	"checkpoint", "baseline", "architect", "builder", "expert", "verify", "review",
	"repair", "done",
};

enum stage {
	ST_CHECKPOINT, ST_BASELINE, ST_ARCHITECT, ST_BUILDER, ST_EXPERT, ST_VERIFY, ST_REVIEW,
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
	struct workbench wb;		/* executor, tools, hooks, map (workbench.h) */
	struct tool_hooks hooks;
	struct journal jr;
	int have_journal;
	struct ws_lock lock;
	char *end_checkpoint;		/* the tree as the run ended, before any rollback */
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
	int instructions_warned;	/* a refused instruction file was reported */
	int iteration;
	enum stage next;
	int budget_hit;
	int interrupted;		/* ended by an interrupt: state.json stays resumable */
	struct buf budget_why;
	struct buf gate_why;		/* why the test gate refused the last verdict */
	/* The paths the agents changed, stage by stage (sorted, unique), so
	 * that "files changed" leaves out what forgex's own test runs built;
	 * known only for a run followed from its start (not resumed). */
	struct strvec agent_paths;
	int agent_paths_known;
	int tested_since_checkpoint;	/* a test run changed the tree after tree_checkpoint */
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
	/*
	 * A failure to record is not a reason to stop changing code halfway,
	 * and must not wipe the error being handled (a full disk used to turn
	 * "cannot restore: No space left" into an empty reason).
	 */
	char *keep = xstrdup(err_last());
	int code = err_last_code();

	if (session_event(&pl->s, type, fields) < 0) {
		if (*keep)
			err_set(code, "%s", keep);
		else
			err_clear();
	}
	free(keep);
}

#define ARG_STRING_MAX 256	/* longer tool argument strings stay in the transcript only */

/*
 * The model's tool arguments are in transcript.jsonl already (the reply
 * that made the call): events.jsonl keeps each long string once, as a
 * note of its size, so the run's logs do not hold a file's content twice.
 */
static void shorten_arguments(json_t *fields)
{
	json_t *args = json_object_get(fields, "arguments"), *v;
	const char *k;

	if (json_is_string(args) && json_string_length(args) > ARG_STRING_MAX) {
		char *note = xstrfmt("[%zu bytes; in transcript.jsonl]", json_string_length(args));

		json_object_set_new(fields, "arguments", json_string(note));
		free(note);
		return;
	}
	if (!json_is_object(args))
		return;
	/* the agent still uses its own object: change a copy */
	args = json_deep_copy(args);
	json_object_set_new(fields, "arguments", args);
	json_object_foreach(args, k, v) {
		if (json_is_string(v) && json_string_length(v) > ARG_STRING_MAX) {
			char *note = xstrfmt("[%zu bytes; in transcript.jsonl]", json_string_length(v));

			json_object_set_new(args, k, json_string(note));
			free(note);
		}
	}
}

/* A file the model read counts in the next map's focus. */
static void map_note_read(struct pl *pl, const json_t *fields)
{
	const json_t *args = json_object_get(fields, "arguments");
	const char *name = json_string_value(json_object_get(fields, "name"));

	if (name && !strcmp(name, "read_file") && json_is_object(args))
		ctx_session_note_file(&pl->wb.ctx, json_string_value(json_object_get(args, "path")));
}

static void on_agent_event(void *data, const char *type, json_t *fields)
{
	struct pl *pl = data;

	if (!strcmp(type, "tool_call"))
		shorten_arguments(fields);

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
	if (pl->wb.have_ctx && !strcmp(type, "tool_call"))
		map_note_read(pl, fields);
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

static void on_mcp_server(void *data, json_t *fields)
{
	emit(data, "mcp_server", fields);
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
	jsonx_set(j, "interrupted", json_boolean(pl->interrupted));
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
	emit(pl, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "create", "id", info.id,
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

/* The project's instruction files, for every role's system prompt. */
static void instructions(struct pl *pl, struct buf *out)
{
	size_t i;

	for (i = 0; i < pl->cfg->context.instructions.nr; i++) {
		const char *name = pl->cfg->context.instructions.v[i];
		struct buf c = BUF_INIT;
		int ret, cut;

		/* beneath the workspace, no link followed: AGENTS.md -> ~/.ssh/id_ed25519 is refused */
		ret = fsutil_read_beneath(&c, pl->cfg->workspace, name, 32u << 10, &cut);
		if (!ret && c.len)
			buf_addf(out, "## %s\n\n%s\n%s", name, c.buf,
				 cut ? "[... the rest of this file was left out ...]\n" : "");
		else if (ret < 0 && ret != FX_ENOTFOUND && !pl->instructions_warned)
			session_eventf(&pl->s, "warning", "{s:s, s:s}", "message", err_last(),
				       "file", name);
		if (ret < 0 && ret != FX_ENOTFOUND)
			pl->instructions_warned = 1;
		err_clear();
		buf_release(&c);
	}
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
	struct buf map = BUF_INIT;
	size_t i, j;

	if (!pl->wb.have_ctx || pl->cfg->context.map_tokens <= 0 ||
	    (role != ROLE_ARCHITECT && role != ROLE_BUILDER && role != ROLE_EXPERT_CODER))
		return;
	ctx_session_set_request(&pl->wb.ctx, pl->request);
	if (role != ROLE_ARCHITECT && pl->plan) {
		const json_t *steps = json_object_get(pl->plan, "steps"), *st, *f;

		json_array_foreach(steps, i, st)
			json_array_foreach(json_object_get(st, "files"), j, f)
				if (json_is_string(f))
					strvec_push(&plan_files, json_string_value(f));
	}
	if (ctx_session_map(&pl->wb.ctx, &map, NULL, &plan_files,
			    (size_t)pl->cfg->context.map_tokens) < 0)
		err_clear();
	if (map.len)
		buf_addf(out, "## Repository map\n\n(repo_map shows another, centred on the paths or "
			 "names you give it.)\n\n%s", map.buf);
	buf_release(&map);
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
	instructions(pl, &extra);
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
	int blocked = 0;

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

		if (!verify_is_regression(cmp, e))
			continue;
		buf_addstr(why, named ? ", " : cmp->baseline_complete ?
			   "tests that did not fail at baseline now fail: " :
			   "tests that passed at baseline now fail: ");
		buf_addstr(why, e->name);
		named++;
	}
	blocked = named > 0;
	if (cmp->passed_drop > 0) {
		buf_addf(why, "%s%ld fewer test%s pass than at baseline with the fixes counted "
			 "(%ld passed, was %ld)", blocked ? "; " : "", cmp->passed_drop,
			 cmp->passed_drop == 1 ? "" : "s", cmp->passed_after, cmp->passed_before);
		blocked = 1;
	}
	if (!blocked && !cmp->entries_nr && cmp->failing_after > cmp->failing_before) {
		buf_addf(why, "more tests fail than at baseline (%ld, was %ld)", cmp->failing_after,
			 cmp->failing_before);
		blocked = 1;
	}
	if (blocked && cmp->ran_after < cmp->ran_before)
		buf_addf(why, "; %ld test%s ran, %ld at baseline", cmp->ran_after,
			 cmp->ran_after == 1 ? "" : "s", cmp->ran_before);
	return blocked;
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
		if (cmp->ran_after < cmp->ran_before)
			buf_addf(out, "fewer tests ran than at baseline: %ld, was %ld\n",
				 cmp->ran_after, cmp->ran_before);
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

	if (pl->o->plan) {
		/* planned before, and approved: the plan is the run's as it is */
		json_decref(pl->plan);
		pl->plan = json_deep_copy(pl->o->plan);
		ret = session_write_json(&pl->s, "plan.json", pl->plan);
		if (ret == 0)
			emit(pl, "plan", json_pack("{s:O, s:s}", "plan", pl->plan, "source",
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
 * The tools' hooks: everything the tools change goes into the journal.
 */

static int hook_before_change(void *data, const struct wspath_loc *loc)
{
	struct pl *pl = data;

	return pl->have_journal ? journal_before_change(&pl->jr, loc->dirfd, loc->name, loc->rel)
				: 0;
}

static void hook_after_change(void *data, const char *rel)
{
	struct pl *pl = data;

	if (pl->have_journal)
		journal_after_change(&pl->jr, rel);
}

static void hook_around_call(void *data, const struct tool *t, int after)
{
	struct pl *pl = data;

	/* a command can change any file: what it changed is the run's */
	if (!pl->have_journal || !(t->needs & (PERM_TERMINAL | PERM_TEST | PERM_BUILD)))
		return;
	if (after)
		journal_command_end(&pl->jr);
	else
		journal_command_begin(&pl->jr);
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
	ret = journal_open(&pl->jr, pl->cps, pl->s.dir, 1);
	if (ret < 0)
		return ret;
	pl->have_journal = 1;
	{
		struct workbench_opts wo = { cfg, pl->s.dir, pl->s.id, pl->o->cancel, on_command,
					     on_hook_event, on_mcp_server, pl };

		ret = workbench_open(&pl->wb, &wo);
		if (ret < 0)
			return ret;
	}
	pl->hooks.before_change = hook_before_change;
	pl->hooks.after_change = hook_after_change;
	pl->hooks.around_call = hook_around_call;
	pl->hooks.data = pl;
	pl->wb.tctx.hooks = &pl->hooks;
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
	if (pl->have_session)
		session_release(&pl->s);
	ws_lock_release(&pl->lock);
}

/*
 * Commit the change on the current branch: exactly the paths that differ
 * from the pre-run checkpoint (see vcs/commit.h).
 */
static void note_agent_paths(struct pl *pl);

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
			note_agent_paths(pl);
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
	emit(pl, "commit", json_pack("{s:s, s:s, s:i, s:o}", "message", message, "id", id,
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

/* Add what changed since the last tree checkpoint (an agent stage's work) to agent_paths. */
static void note_agent_paths(struct pl *pl)
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

/*
 * Reach an ending: restore or keep, write summary.json, fill `out`.
 * `code` is 0 (PASS or FAIL by `pass`), FX_EINTR, FX_ELIMIT (budget) or
 * another failure (error).
 */
static json_t *strvec_json(const struct strvec *v)
{
	return jsonx_from_strvec(v);
}

/*
 * Put back what the run changed (and only that): the journal's paths that
 * are still what the run left. Fills `o`; returns the number that failed.
 */
static int roll_back(struct pl *pl, struct journal_outcome *o, const char *why)
{
	int failed = journal_revert(&pl->jr, 0, o);

	if (failed < 0) {
		strvec_pushf(&o->failed, "(all): %s", err_last());
		err_clear();
		failed = 1;
	}
	/* the empty folders the run's commands made (mkdir -p) go too */
	if (pl->cps && pl->pre_checkpoint &&
	    vcs_remove_new_empty_dirs(pl->cps, pl->pre_checkpoint, &o->reverted) < 0) {
		strvec_pushf(&o->failed, "(empty folders the run made): %s", err_last());
		err_clear();
		failed++;
	}
	emit(pl, "rollback", json_pack("{s:s, s:o, s:o, s:o}", "why", why,
				       "reverted", strvec_json(&o->reverted),
				       "kept", strvec_json(&o->kept),
				       "failed", strvec_json(&o->failed)));
	return failed;
}

/*
 * Reach an ending: restore or keep, write summary.json, fill `out`.
 * `code` is 0 (PASS or FAIL by `pass`), FX_EINTR, FX_ELIMIT (budget) or
 * another failure (error).
 */
static void finish(struct pl *pl, int code, int pass, const char *reason)
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
			note_agent_paths(pl);
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
		int failed = roll_back(pl, &jo, pipeline_outcome_name(out->outcome));

		if (pl->jr.gaps) {
			/* never claim a restore that may have missed a command's changes */
			strvec_pushf(&jo.failed, "(what %u command%s changed): not recorded (%s), so "
				     "not put back; compare with 'forgex diff %s'", pl->jr.gaps,
				     pl->jr.gaps == 1 ? "" : "s", pl->jr.gap_why, pl->s.id);
			failed++;
		}
		if (failed) {
			struct buf r = BUF_INIT;
			size_t i;

			buf_addf(&r, "%s; and the tree could not be fully restored: ", out->reason);
			for (i = 0; i < jo.failed.nr; i++)
				buf_addf(&r, "%s%s", i ? "; " : "", jo.failed.v[i]);
			free(out->reason);
			out->reason = buf_detach(&r, NULL);
		} else {
			out->rolled_back = 1;
		}
		restore_j = json_pack("{s:o, s:o, s:o}", "reverted", strvec_json(&jo.reverted),
				      "kept", strvec_json(&jo.kept), "failed", strvec_json(&jo.failed));
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
		commit_files = strvec_json(&paths);
		strvec_clear(&paths);
		free(msg);
	}
	out->iterations = pl->iteration;
	out->tokens = pl->budget.tokens_used;
	out->cost_usd = pl->budget.cost_used;
	out->seconds = agent_now() - pl->t0;
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
	jsonx_set(sum, "paths", strvec_json(&own));
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
	if (session_write_json(&pl->s, "summary.json", sum) < 0)
		err_clear();
	/* an interrupted run can be resumed: state.json keeps the stage it was in */
	if (out->outcome == PIPELINE_INTERRUPTED)
		pl->interrupted = 1;
	else
		pl->next = ST_DONE;
	if (save_state(pl) < 0)
		err_clear();
	if (hooks_have(&pl->wb.uhooks, "stop")) {
		json_t *in = json_pack("{s:s, s:s}", "outcome", pipeline_outcome_name(out->outcome),
				       "reason", out->reason);

		hooks_fire(&pl->wb.uhooks, "stop", NULL, in, NULL, NULL);
		json_decref(in);
	}
	emit(pl, "run_end", json_pack("{s:s, s:s, s:b, s:b, s:i, s:I, s:O, s:O}", "outcome",
				      pipeline_outcome_name(out->outcome), "reason", out->reason,
				      "rolled_back", out->rolled_back, "kept", out->kept,
				      "iterations", out->iterations, "tokens", (json_int_t)out->tokens,
				      "verdict", json_object_get(sum, "verdict"),
				      "tests", json_object_get(sum, "tests")));
	out->summary = sum;
	strvec_clear(&own);
	journal_outcome_release(&jo);
}

/* After a stage that may have changed the tree: checkpoint it and save the state. */
static int stage_done(struct pl *pl, enum stage done, enum stage next, int changed_tree)
{
	int ret = 0;

	if (changed_tree) {
		char *what = xstrfmt("after %s", stages[done]);

		note_agent_paths(pl);
		pl->tested_since_checkpoint = 0;
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
	pl.t0 = agent_now();
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
		ret = session_open(&pl.s, pl.cfg->workspace, opts->resume_id);
		if (ret < 0)
			goto out;
		pl.have_session = 1;
		ret = load_state(&pl);
		if (ret < 0)
			goto out;
	} else {
		ret = session_create(&pl.s, pl.cfg->workspace, opts->request);
		if (ret < 0)
			goto out;
		pl.have_session = 1;
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
		/* the run's own paths go back to its last completed stage; the user's stay */
		struct strvec failed = STRVEC_INIT;

		ret = journal_restore_to(&pl.jr, pl.tree_checkpoint, &failed);
		if (ret > 0)
			ret = err_set(FX_EOS, "cannot put back the tree of the last completed stage: "
				      "%s", failed.v[0]);
		strvec_clear(&failed);
		if (ret < 0) {
			reason = xstrdup(err_last());
			finish(&pl, ret, 0, reason);
			ret = 0;
			goto out;
		}
		emit(&pl, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "restore", "id",
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
		reason = xstrfmt("the change did not pass after %d iteration%s%s%s", pl.iteration,
				 pl.iteration == 1 ? "" : "s", pl.gate_why.len ? "; the test gate: " : "",
				 pl.gate_why.len ? pl.gate_why.buf : "");
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
	strvec_clear(&r->kept_paths);
	strvec_clear(&r->failed_paths);
	memset(r, 0, sizeof(*r));
}

int pipeline_restore_start(char **checkpoint, const char *workspace, const char *id)
{
	struct ws_lock lock = WS_LOCK_INIT;
	struct checkpoints *cps = NULL;
	struct checkpoint_restore_result res;
	char *dir = session_dir(workspace, id);
	json_t *st = NULL;
	const char *pre;
	int ret;

	memset(&res, 0, sizeof(res));
	ret = ws_lock_acquire(&lock, workspace, "replay", 0, NULL, NULL, NULL);
	if (ret < 0)
		goto out;
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
out:
	ws_lock_release(&lock);
	checkpoint_restore_result_release(&res);
	checkpoint_close(cps);
	json_decref(st);
	free(dir);
	return ret;
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

int pipeline_undo(struct pipeline_undo_result *out, const char *workspace, const char *id,
		  int force, int no_wait, void (*on_wait)(void *data, const char *holder),
		  void *data, const volatile sig_atomic_t *cancel)
{
	struct ws_lock lock = WS_LOCK_INIT;
	struct checkpoints *cps = NULL;
	struct journal jr = JOURNAL_INIT;
	struct journal_outcome jo;
	struct checkpoint_info info;
	struct strvec paths = STRVEC_INIT;
	char *dir = session_dir(workspace, id), *what;
	json_t *st = NULL, *sum = NULL;
	int ret, have_journal = 0;

	journal_outcome_init(&jo);
	memset(&info, 0, sizeof(info));
	what = xstrfmt("undo of run %s", id);
	ret = ws_lock_acquire(&lock, workspace, what, no_wait, on_wait, data, cancel);
	free(what);
	if (ret < 0)
		goto out;
	ret = session_read_json(&st, dir, "state.json");
	if (ret < 0)
		goto out;
	if (session_read_json(&sum, dir, "summary.json") < 0)
		err_clear();
	ret = checkpoint_open(&cps, workspace);
	if (ret < 0)
		goto out;
	ret = journal_open(&jr, cps, dir, 0);
	if (ret < 0)
		goto out;
	have_journal = 1;
	journal_paths(&jr, &paths);
	if (!paths.nr) {
		/* a run from before the journal: its pre-run checkpoint, whole */
		struct checkpoint_restore_result res;
		const char *pre = jsonx_str(st, "pre_checkpoint");

		if (!pre) {
			ret = err_set(FX_ENOTFOUND, "run %s changed nothing", id);
			goto out;
		}
		if (json_object_get(st, "interrupted")) {
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
	if (ret > 0) {
		ret = err_set(FX_ERROR, "%d file%s of run %s could not be put back", ret,
			      ret == 1 ? "" : "s", id);
		goto out;
	}
	undo_commit(out, workspace, id, sum);
	{
		struct session s;

		if (!session_open(&s, workspace, id)) {
			session_event(&s, "undo", json_pack("{s:s, s:b, s:o, s:s?}", "backup",
							    out->backup, "force", force,
							    "reverted", jsonx_from_strvec(&out->reverted),
							    "revert_commit", *out->revert_commit ?
							    out->revert_commit : NULL));
			session_release(&s);
		}
		err_clear();
	}
	ret = 0;
out:
	if (have_journal)
		journal_release(&jr);
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

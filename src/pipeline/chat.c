/* The interactive session; see chat.h and docs/internals/chat.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/roles.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/path.h"
#include "base/redact.h"
#include "base/xdg.h"
#include "context/context.h"
#include "llm/provider.h"
#include "llm/transcript.h"
#include "pipeline/chat.h"
#include "pipeline/chat_int.h"
#include "pipeline/hooks.h"
#include "pipeline/journal.h"
#include "pipeline/lock.h"
#include "pipeline/recorder.h"
#include "pipeline/runrecord.h"
#include "pipeline/workbench.h"
#include "sandbox/approval.h"
#include "tools/fs.h"
#include "tools/registry.h"
#include "vcs/checkpoint.h"
#include "vcs/diff.h"

/* Bytes of a file read to show an edit's diff; a larger file gets no diff. */
#define DIFF_FILE_MAX (1u << 20)

/* A file as it was before a tool changed it, for the edit's diff. */
struct old_version {
	char *rel;
	struct buf bytes;
	int absent;		/* it did not exist */
	int usable;		/* read whole: a diff can be shown */
};

struct chat {
	const struct chat_opts *o;
	struct config *cfg;
	struct rundir s;
	struct transcript *tr;
	struct provider *prov;
	char *model;			/* the session's model ("" : the provider's) */
	struct checkpoints *cps;
	struct workbench wb;		/* executor, tools, hooks, map (workbench.h) */
	struct recorder rec;		/* events, the journal's hooks, the ledger (recorder.h) */
	struct tool_hooks diffs;	/* the recorder's watch: each edit's diff */
	struct journal jr;		/* the running turn's */
	int have_jr;
	struct llm_request conv;
	char *start_checkpoint;
	struct chat_turn *turns;
	size_t turns_nr, turns_alloc;
	int turn;			/* the running turn, 0 between turns */
	/* the files the running tool call changes, as they were before it */
	struct old_version *olds;
	size_t olds_nr, olds_alloc;
	struct strvec said;		/* the person's messages, for chat_request_text() */
	char *last_answer;
	char *first;			/* the first message of the session: /clear keeps it */
	long long used;			/* when last used (opened, a turn): seconds since the epoch */
	size_t turns_noted;		/* turns when the use was last noted in the user's record */
	int created;			/* made by this chat_open(), not resumed */
	int mine;			/* in the user's record of sessions (chat_session_mine()) */
	int ran;			/* a /run, /plan or /go was made from it */
	struct agent_budget prices;	/* only the prices of [budget] */
	struct chat_conv cv;		/* a refused message, the runs to undo (chat_conv.c) */
};

const char *chat_id(const struct chat *c)
{
	return c->s.id;
}

const char *chat_dir(const struct chat *c)
{
	return c->s.dir;
}

const char *chat_model(const struct chat *c)
{
	return *c->model ? c->model : c->prov->model ? c->prov->model : "";
}

size_t chat_messages(const struct chat *c)
{
	return c->conv.messages_nr;
}

const struct llm_request *chat_conversation(const struct chat *c)
{
	return &c->conv;
}

const struct chat_turn *chat_turns(const struct chat *c, size_t *nr)
{
	*nr = c->turns_nr;
	return c->turns;
}

struct chat_conv *chat_conv_of(struct chat *c)
{
	return &c->cv;
}

const struct chat_opts *chat_options(const struct chat *c)
{
	return c->o;
}

/*
 * Events
 */

void chat_event(struct chat *c, const char *type, json_t *fields)
{
	recorder_event(&c->rec, type, fields);
}

void chat_record_run(struct chat *c, const char *action, const struct pipeline_result *res)
{
	c->ran = 1;
	ledger_add(&c->rec.ledger, &res->ledger);
	chat_event(c, "pipeline", json_pack("{s:s, s:s?, s:s, s:s?}", "action", action, "run_id",
					    res->run_id, "outcome",
					    pipeline_outcome_name(res->outcome), "reason",
					    res->reason));
	chat_conv_record_run(c, res);
}

/*
 * The diff of each edit: told of every change after the turn's journal
 * (the recorder's watch).
 */

static void forget_olds(struct chat *c)
{
	size_t i;

	for (i = 0; i < c->olds_nr; i++) {
		free(c->olds[i].rel);
		buf_release(&c->olds[i].bytes);
	}
	c->olds_nr = 0;
}

static struct old_version *old_of(struct chat *c, const char *rel)
{
	size_t i;

	for (i = 0; i < c->olds_nr; i++)
		if (!strcmp(c->olds[i].rel, rel))
			return &c->olds[i];
	return NULL;
}

static int diff_before_change(void *data, const struct wspath_loc *loc)
{
	struct chat *c = data;
	struct old_version *o;
	int ret, cut = 0;

	if (old_of(c, loc->rel))
		return 0;	/* changed twice in one call: the first version is the one shown */
	ALLOC_GROW(c->olds, c->olds_nr + 1, c->olds_alloc);
	o = &c->olds[c->olds_nr++];
	memset(o, 0, sizeof(*o));
	o->rel = xstrdup(loc->rel);
	buf_init(&o->bytes, 0);
	ret = fsutil_read_beneath(&o->bytes, c->cfg->workspace, loc->rel, DIFF_FILE_MAX, &cut);
	o->absent = ret == FX_ENOTFOUND;
	o->usable = o->absent || (!ret && !cut);
	err_clear();
	return 0;
}

static void diff_after_change(void *data, const char *rel)
{
	struct chat *c = data;
	struct old_version *o = old_of(c, rel);
	struct buf now = BUF_INIT, diff = BUF_INIT;
	int ret, cut = 0, absent = 0;

	if (!o || !o->usable)
		return;
	ret = fsutil_read_beneath(&now, c->cfg->workspace, rel, DIFF_FILE_MAX, &cut);
	if (ret == FX_ENOTFOUND)
		absent = 1;
	else if (ret < 0 || cut)
		goto out;
	if (vcs_diff_buffers(&diff, rel, o->absent ? NULL : o->bytes.buf, o->bytes.len,
			     absent ? NULL : now.buf, now.len, 0) < 0)
		goto out;
	if (diff.len) {
		int shortened = diff.len > CHAT_DIFF_MAX;

		if (shortened)
			buf_setlen(&diff, CHAT_DIFF_MAX);
		chat_event(c, "file_diff", json_pack("{s:i, s:s, s:o, s:b}", "turn", c->turn,
						     "path", rel, "diff",
						     jsonx_stringn_lossy(diff.buf, diff.len),
						     "cut", shortened));
	}
	/* a later change in the same call diffs from this one */
	buf_reset(&o->bytes);
	buf_addbuf(&o->bytes, &now);
	o->absent = absent;
out:
	err_clear();
	buf_release(&now);
	buf_release(&diff);
}

static void diff_around_call(void *data, const struct tool *t, int after)
{
	(void)t;
	(void)after;
	forget_olds(data);
}

/*
 * State
 */

/*
 * The session is used now (opened, or a turn taken): --continue takes the
 * session of the user's record noted last, so a use is noted again unless
 * it is the last line already. A session that is not in the record (one
 * that came with the folder, resumed by name) is never added to it.
 */
static void note_use(struct chat *c)
{
	struct strvec mine = STRVEC_INIT;

	c->used = (long long)time(NULL);
	if (!c->mine)
		return;
	runrecord_list(&mine, RUNRECORD_SESSIONS, c->cfg->workspace);
	if (!mine.nr || strcmp(mine.v[mine.nr - 1], c->s.id))
		runrecord_note(RUNRECORD_SESSIONS, c->cfg->workspace, c->s.id);
	strvec_clear(&mine);
}

static int save_state(struct chat *c)
{
	json_t *j = json_object(), *turns = json_array(), *conv, *clean;
	size_t i;
	int ret;

	/* a new turn is a use; the first message is kept past /clear */
	if (c->turns_nr > c->turns_noted) {
		c->turns_noted = c->turns_nr;
		note_use(c);
	}
	if (!c->first && c->said.nr)
		c->first = xstrdup(c->said.v[0]);
	for (i = 0; i < c->turns_nr; i++)
		json_array_append_new(turns, json_pack("{s:i, s:s?, s:b, s:b}", "n", c->turns[i].n,
						       "checkpoint", c->turns[i].checkpoint,
						       "changed", c->turns[i].changed,
						       "undone", c->turns[i].undone));
	jsonx_set(j, "turns", turns);
	jsonx_set(j, "start_checkpoint", c->start_checkpoint ? jsonx_string(c->start_checkpoint)
							     : json_null());
	jsonx_set(j, "model", jsonx_string(c->model));
	jsonx_set(j, "said", jsonx_from_strvec(&c->said));
	jsonx_set(j, "last_answer", jsonx_string(c->last_answer ? c->last_answer : ""));
	jsonx_set(j, "first", jsonx_string(c->first ? c->first : ""));
	jsonx_set(j, "used", json_integer((json_int_t)c->used));
	ret = rundir_write_json(&c->s, "state.json", j);
	json_decref(j);
	if (ret < 0)
		return ret;
	/* what the model saw, as the transcript keeps it: secrets redacted */
	conv = llm_request_to_json(&c->conv, chat_model(c), 0);
	clean = redact_json(conv, NULL);
	ret = rundir_write_json(&c->s, "conversation.json", clean);
	json_decref(conv);
	json_decref(clean);
	return ret;
}

static int load_state(struct chat *c)
{
	json_t *j = NULL, *conv = NULL, *t;
	size_t i;
	int ret;

	ret = rundir_read_json(&j, c->s.dir, "state.json");
	if (ret < 0)
		return err_prefix(ret, "session %s", c->s.id);
	json_array_foreach(json_object_get(j, "turns"), i, t) {
		struct chat_turn *ct;

		ALLOC_GROW(c->turns, c->turns_nr + 1, c->turns_alloc);
		ct = &c->turns[c->turns_nr++];
		ct->n = (int)jsonx_int(t, "n", (json_int_t)c->turns_nr);
		ct->checkpoint = jsonx_str(t, "checkpoint") ? xstrdup(jsonx_str(t, "checkpoint"))
							    : NULL;
		ct->changed = json_is_true(json_object_get(t, "changed"));
		ct->undone = json_is_true(json_object_get(t, "undone"));
	}
	if (jsonx_str(j, "start_checkpoint"))
		c->start_checkpoint = xstrdup(jsonx_str(j, "start_checkpoint"));
	if (jsonx_str(j, "model")) {
		free(c->model);
		c->model = xstrdup(jsonx_str(j, "model"));
	}
	json_array_foreach(json_object_get(j, "said"), i, t)
		if (json_is_string(t))
			strvec_push(&c->said, json_string_value(t));
	if (jsonx_str(j, "last_answer"))
		c->last_answer = xstrdup(jsonx_str(j, "last_answer"));
	if (jsonx_str(j, "first") && *jsonx_str(j, "first"))
		c->first = xstrdup(jsonx_str(j, "first"));
	c->turns_noted = c->turns_nr;
	json_decref(j);
	ret = rundir_read_json(&conv, c->s.dir, "conversation.json");
	if (ret == FX_ENOTFOUND) {
		err_clear();
		return 0;
	}
	if (ret < 0)
		return err_prefix(ret, "session %s", c->s.id);
	llm_request_release(&c->conv);
	ret = llm_request_from_json(&c->conv, conv);
	json_decref(conv);
	if (ret < 0)
		return err_prefix(ret, "session %s: conversation.json", c->s.id);
	/* the model is the session's choice, not what the file says */
	free(c->conv.model);
	c->conv.model = NULL;
	return 0;
}

/*
 * Whose sessions: the user's own record of the sessions forgex started,
 * `$XDG_STATE_HOME/forgex/sessions` (else ~/.local/state/forgex/sessions),
 * one "ID<TAB>WORKSPACE" line each. A session folder is in the workspace,
 * which a cloned repository can fill: --continue takes only a session of
 * the record, so one shipped with the repository is never picked up
 * unasked. The record is kept by runrecord.c, as the runs' is.
 */

int chat_session_mine(const char *workspace, const char *id)
{
	struct strvec mine = STRVEC_INIT;
	int found;

	runrecord_list(&mine, RUNRECORD_SESSIONS, workspace);
	found = strvec_find(&mine, id) >= 0;
	strvec_clear(&mine);
	return found;
}

/*
 * The session of `workspace` the user used last: the last one the user's
 * record notes (a turn, a resume note it again; see note_use()) whose
 * folder is there and holds a turn.
 */
static int last_own_session(char **out, const char *workspace)
{
	struct strvec all = STRVEC_INIT, mine = STRVEC_INIT;
	size_t i;
	int ret;

	ret = rundir_list_kind(&all, workspace, RUNDIR_CHATS);
	if (ret < 0)
		return ret;
	runrecord_list(&mine, RUNRECORD_SESSIONS, workspace);
	for (i = mine.nr; i-- > 0;) {
		struct chat_session_info si;
		int usable;

		if (strvec_find(&all, mine.v[i]) < 0)
			continue;
		usable = chat_session_info_read(&si, workspace, mine.v[i]) == 0 && si.turns > 0;
		err_clear();
		chat_session_info_release(&si);
		if (usable)
			break;
	}
	if (i != (size_t)-1)
		*out = xstrdup(mine.v[i]);
	else if (all.nr)
		ret = err_set(FX_ENOTFOUND, "no session you started in %s (the %zu in its "
			      ".forgex/sessions were not started here by you, or are empty: "
			      "'forgex chat --resume ID' takes one by name)", workspace, all.nr);
	else
		ret = err_set(FX_ENOTFOUND, "no sessions yet in %s", workspace);
	strvec_clear(&all);
	strvec_clear(&mine);
	return ret;
}

/*
 * Open and close
 */

static int open_tools(struct chat *c)
{
	struct workbench_opts wo = { c->cfg, c->s.dir, c->s.id, c->o->cancel, &c->rec,
				     c->o->approver };

	c->diffs.before_change = diff_before_change;
	c->diffs.after_change = diff_after_change;
	c->diffs.around_call = diff_around_call;
	c->diffs.data = c;
	c->rec.watch = &c->diffs;
	return workbench_open(&c->wb, &wo);
}

int chat_open(struct chat **out, const struct chat_opts *o)
{
	struct chat *c;
	const struct agent_config *ac;
	char *path, *id = NULL;
	size_t i;
	int ret;

	*out = NULL;
	if (!o->cfg || !o->cfg->workspace)
		return err_set(FX_EINVAL, "no workspace");
	c = xcalloc(1, sizeof(*c));
	c->o = o;
	c->cfg = o->cfg;
	c->s = (struct rundir)RUNDIR_INIT;
	c->jr = (struct journal)JOURNAL_INIT;
	workbench_init(&c->wb);
	recorder_init(&c->rec, &c->s);
	llm_request_init(&c->conv);
	strvec_init(&c->said);
	c->prices = (struct agent_budget)AGENT_BUDGET_INIT;
	/* an `a` answer holds for one session: a new (or resumed) one asks again */
	if (o->approver)
		approver_forget(o->approver);
	ac = config_agent(c->cfg, ROLE_BUILDER);
	c->model = xstrdup(ac->model ? ac->model : "");

	if (o->resume) {
		if (!strcmp(o->resume, "last"))
			ret = last_own_session(&id, c->cfg->workspace);
		else
			ret = rundir_resolve_kind(&id, c->cfg->workspace, RUNDIR_CHATS, o->resume);
		if (ret < 0)
			goto fail;
		c->mine = chat_session_mine(c->cfg->workspace, id);
		if (!o->force_provider && !c->mine)
			log_warn("session %s was not started by you here (it came with the folder?): "
				 "its messages go to the model as they are", id);
		ret = rundir_open_kind(&c->s, c->cfg->workspace, RUNDIR_CHATS, id);
		free(id);
		if (ret < 0)
			goto fail;
		ret = load_state(c);
		if (ret < 0)
			goto fail;
		note_use(c);	/* a resume is a use: --continue takes it next */
	} else {
		ret = rundir_create_kind(&c->s, c->cfg->workspace, RUNDIR_CHATS, NULL);
		if (ret < 0)
			goto fail;
		/* in the user's record from its first turn on (save_state()): an empty one is not kept */
		c->created = 1;
		c->mine = 1;
		c->used = (long long)time(NULL);
	}
	c->s.on_event = o->on_event;
	c->s.on_event_data = o->event_data;
	ret = rundir_exclude(c->cfg->workspace, NULL);
	if (ret < 0)
		goto fail;
	path = rundir_path(&c->s, "transcript.jsonl");
	ret = transcript_open(&c->tr, path);
	free(path);
	if (ret < 0)
		goto fail;
	ret = provider_open(&c->prov, c->cfg, o->force_provider ? o->force_provider : ac->provider,
			    c->tr);
	if (ret < 0)
		goto fail;
	provider_set_cancel(c->prov, o->cancel);
	for (i = 0; i < c->cfg->budget.prices.nr; i++) {
		ret = agent_budget_parse_prices(&c->prices, c->cfg->budget.prices.v[i]);
		if (ret < 0) {
			err_prefix(ret, "budget.prices");
			goto fail;
		}
	}
	ret = checkpoint_open(&c->cps, c->cfg->workspace);
	if (ret < 0)
		goto fail;
	checkpoint_set_max_file_bytes(c->cps, (uint64_t)c->cfg->checkpoints.max_file_bytes);
	ret = open_tools(c);
	if (ret < 0)
		goto fail;
	/* the first request's map: indexed while the person types the first message */
	if (!c->conv.messages_nr && c->cfg->context.map_tokens > 0 && c->wb.have_map_ex &&
	    ctx_session_prefetch(&c->wb.ctx, &c->wb.map_ex) < 0)
		err_clear();
	if (!c->start_checkpoint) {
		struct checkpoint_info info;
		char *msg = xstrfmt("forgex session %s: start", c->s.id);

		memset(&info, 0, sizeof(info));
		ret = checkpoint_create(&info, c->cps, msg);
		free(msg);
		if (ret < 0) {
			err_prefix(ret, "checkpoint (session start)");
			goto fail;
		}
		c->start_checkpoint = xstrdup(info.id);
		chat_event(c, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "create", "id",
						      info.id, "what", "session start"));
		checkpoint_info_release(&info);
	}
	chat_event(c, "chat_start", json_pack("{s:s, s:s, s:s, s:b, s:i}", "session", c->s.id,
					      "model", chat_model(c), "provider",
					      c->prov->name ? c->prov->name : "", "resumed",
					      o->resume != NULL, "messages",
					      (int)c->conv.messages_nr));
	{
		json_t *in = json_pack("{s:s, s:b}", "session", c->s.id, "resumed", o->resume != NULL);

		hooks_fire(&c->wb.uhooks, "session_start", NULL, in, NULL, NULL);
		json_decref(in);
	}
	ret = save_state(c);
	if (ret < 0)
		goto fail;
	*out = c;
	return 0;
fail:
	{
		char *keep = xstrdup(err_last());

		chat_close(c);
		err_set(ret, "%s", keep);
		free(keep);
	}
	return ret;
}

int chat_kept(const struct chat *c)
{
	return !c->created || c->turns_nr || c->conv.messages_nr || c->ran;
}

void chat_close(struct chat *c)
{
	char *drop = NULL;
	size_t i;

	if (!c)
		return;
	/* a session made here in which nothing was said: its folder goes once all is closed */
	if (c->s.dir && !chat_kept(c))
		drop = xstrdup(c->s.dir);
	else if (c->s.dir && c->s.events_fd >= 0)
		save_state(c);
	c->rec.jr = NULL;
	if (c->have_jr)
		journal_release(&c->jr);
	workbench_release(&c->wb);
	checkpoint_close(c->cps);
	provider_free(c->prov);
	transcript_free(c->tr);
	llm_request_release(&c->conv);
	for (i = 0; i < c->turns_nr; i++)
		free(c->turns[i].checkpoint);
	free(c->turns);
	agent_budget_release(&c->prices);
	forget_olds(c);
	free(c->olds);
	strvec_clear(&c->said);
	free(c->last_answer);
	free(c->start_checkpoint);
	free(c->model);
	free(c->first);
	chat_conv_release(&c->cv);
	recorder_release(&c->rec);
	rundir_release(&c->s);
	if (drop && fsutil_remove_tree(drop) < 0)
		err_clear();
	free(drop);
	free(c);
}

/*
 * Turns
 */

/*
 * Every tool call of the conversation gets a result: the calls of a turn
 * that was interrupted before they ran are answered so (a request with an
 * unanswered call is refused by the servers).
 */
static void answer_dangling_calls(struct chat *c)
{
	size_t i, k, j;

	for (i = 0; i < c->conv.messages_nr; i++) {
		const struct llm_message *m = &c->conv.messages[i];

		for (k = 0; k < m->tool_calls_nr; k++) {
			const char *id = m->tool_calls[k].id;
			int found = 0;

			for (j = i + 1; j < c->conv.messages_nr && !found; j++)
				found = c->conv.messages[j].role == LLM_TOOL &&
					c->conv.messages[j].tool_call_id &&
					!strcmp(c->conv.messages[j].tool_call_id, id);
			if (found)
				continue;
			/* results follow their calls: insert right after the results there are */
			for (j = i + 1; j < c->conv.messages_nr &&
			     c->conv.messages[j].role == LLM_TOOL; j++)
				;
			{
				struct llm_message moved;
				struct llm_message *r;
				size_t pos = j;

				r = llm_request_add_tool_result(&c->conv, id,
								m->tool_calls[k].name,
								"error: not run: the person "
								"interrupted the turn");
				moved = *r;
				memmove(c->conv.messages + pos + 1, c->conv.messages + pos,
					(c->conv.messages_nr - 1 - pos) * sizeof(*c->conv.messages));
				c->conv.messages[pos] = moved;
				m = &c->conv.messages[i];
			}
		}
	}
}

static int begin_turn(struct chat *c, struct ws_lock *lock)
{
	struct checkpoint_info info;
	struct chat_turn *t;
	char *msg, *dir, *what;
	int ret, fd;

	what = xstrfmt("session %s", c->s.id);
	ret = ws_lock_acquire(lock, c->cfg->workspace, what, c->o->no_wait, c->o->on_wait,
			      c->o->event_data, c->o->cancel);
	free(what);
	if (ret < 0)
		return ret;
	memset(&info, 0, sizeof(info));
	msg = xstrfmt("forgex session %s: before turn %zu", c->s.id, c->turns_nr + 1);
	ret = checkpoint_create(&info, c->cps, msg);
	free(msg);
	if (ret < 0)
		return err_prefix(ret, "checkpoint (before the turn)");
	ALLOC_GROW(c->turns, c->turns_nr + 1, c->turns_alloc);
	t = &c->turns[c->turns_nr++];
	memset(t, 0, sizeof(*t));
	t->n = (int)c->turns_nr;
	t->checkpoint = xstrdup(info.id);
	c->turn = t->n;
	chat_event(c, "checkpoint", json_pack("{s:s, s:s, s:s}", "action", "create", "id", info.id,
					      "what", "before turn"));
	checkpoint_info_release(&info);
	dir = xstrfmt("turns/%d", t->n);
	fd = rundir_file_open(c->s.dir, dir, O_DIRECTORY | O_CREAT, 0700);
	free(dir);
	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	close(fd);
	dir = xstrfmt("%s/turns/%d", c->s.dir, t->n);
	ret = journal_open(&c->jr, c->cps, dir, 1);
	free(dir);
	if (ret < 0) {
		err_prefix(ret, "the turn's journal");
		goto fail;
	}
	c->have_jr = 1;
	c->rec.jr = &c->jr;
	/*
	 * In the state from its start, as changing: a turn killed midway is
	 * then /undo's after `chat --continue` (the turn's end says whether
	 * it changed anything).
	 */
	t->changed = 1;
	save_state(c);
	return 0;
fail:
	/* no turn without a journal: nothing may change unrecorded */
	free(t->checkpoint);
	c->turns_nr--;
	c->turn = 0;
	return ret;
}

int chat_turn(struct chat *c, const char *message, struct agent_result *res)
{
	const struct provider_config *pc = config_provider(c->cfg, c->prov->name);
	const struct agent_config *ac = config_agent(c->cfg, ROLE_BUILDER);
	struct agent_opts ao = AGENT_OPTS_INIT;
	struct agent_budget budget = AGENT_BUDGET_INIT;
	struct ws_lock lock = WS_LOCK_INIT;
	struct buf prompt = BUF_INIT, extra = BUF_INIT, clean = BUF_INIT, task = BUF_INIT;
	struct strvec changed = STRVEC_INIT;
	struct agent_fit fit;
	struct chat_turn *t;
	json_t *in, *ch;
	size_t i;
	int ret;

	*res = (struct agent_result)AGENT_RESULT_INIT;
	if (!message || !*message)
		return err_set(FX_EINVAL, "nothing to say");
	free(c->cv.refused);
	c->cv.refused = NULL;
	/* what the model is told of an /undo since, then the person's words as typed */
	chat_conv_notes(c, &task);
	buf_addstr(&task, message);

	if (!c->conv.messages_nr) {
		workbench_instructions(&c->wb, &extra);
		workbench_map(&c->wb, &extra, message, NULL);
		buf_addstr(&prompt, role_chat_prompt());
		if (extra.len)
			buf_addf(&prompt, "\n\n# Project context\n\n%s", extra.buf);
	}
	agent_budget_init(&budget, c->cfg->budget.max_tokens, c->cfg->budget.max_cost_usd,
			  (double)c->cfg->budget.max_wall_seconds);
	for (i = 0; i < c->prices.prices_nr; i++)
		agent_budget_set_price(&budget, c->prices.prices[i].model,
				       c->prices.prices[i].prompt_per_mtok,
				       c->prices.prices[i].completion_per_mtok);
	ao.role = ROLE_BUILDER;
	ao.plain_answer = 1;
	ao.system_prompt = prompt.len ? prompt.buf : role_chat_prompt();
	ao.task = task.buf;
	ao.provider = c->prov;
	ao.model = *c->model ? c->model : NULL;
	ao.temperature = ac->temperature;
	ao.max_turns = ac->max_turns;
	ao.tool_mode = pc && pc->tool_mode && !strcmp(pc->tool_mode, "text") ? AGENT_TOOLS_TEXT
									: AGENT_TOOLS_NATIVE;
	ao.edit_tools = pc ? pc->edit_tools : NULL;
	ao.tools = &c->wb.tctx;
	ao.budget = &budget;
	ao.on_event = recorder_agent_event;
	ao.event_data = &c->rec;
	ao.cancel = c->o->cancel;
	ao.stream = c->prov->stream;
	ao.on_text = c->o->on_text;
	ao.text_data = c->o->text_data;
	ao.conversation = &c->conv;
	/* a message no request can hold is refused before anything happens */
	ret = agent_fit(&fit, &ao);
	if (ret == 0) {
		chat_conv_refuse(c, message, &fit);
		ret = err_set(FX_ELIMIT, "the message (%zu bytes, about %ld tokens) cannot fit the "
			      "model's context window: %ld tokens (from %s), of which a request may "
			      "take %ld, and the system prompt and tools take %ld; nothing was sent",
			      strlen(message), fit.message, fit.window,
			      fit.window_source ? fit.window_source : "default", fit.limit,
			      fit.least - fit.message);
		goto out;
	}
	if (ret < 0)
		goto out;
	redact_text(&clean, message, strlen(message), NULL);
	in = json_pack("{s:s, s:s}", "request", message, "session", c->s.id);
	{
		struct buf why = BUF_INIT;
		int blocked = hooks_fire(&c->wb.uhooks, "user_prompt", NULL, in, &why, NULL);

		json_decref(in);
		if (blocked) {
			ret = err_set(FX_EDENIED, "a user_prompt hook blocked the message: %s",
				      why.len ? why.buf : "(it gave no reason)");
			buf_release(&why);
			goto out;
		}
		buf_release(&why);
	}
	ret = begin_turn(c, &lock);
	if (ret < 0)
		goto out;
	t = &c->turns[c->turns_nr - 1];
	chat_event(c, "user", json_pack("{s:i, s:s}", "turn", t->n, "text", clean.buf));
	chat_event(c, "turn_start", json_pack("{s:i, s:s}", "turn", t->n, "checkpoint",
					      t->checkpoint));
	strvec_push(&c->said, clean.buf);
	ret = agent_run(res, &ao);
	answer_dangling_calls(c);
	if (ret < 0)
		goto end;
	if (res->refused)
		chat_conv_refuse(c, message, &fit);
	else
		chat_conv_notes_sent(c);
	free(c->last_answer);
	c->last_answer = xstrdup(res->answer);

end:
	if (c->have_jr) {
		journal_own_changes(&c->jr, &changed);
		err_clear();
		t->changed = changed.nr > 0;
		c->rec.jr = NULL;
		journal_release(&c->jr);
		c->have_jr = 0;
	}
	ch = jsonx_from_strvec(&changed);
	chat_event(c, "turn_end", json_pack("{s:i, s:s, s:o, s:s, s:s?}", "turn", t->n,
					    "status", ret < 0 ? "error" :
					    agent_status_name(res->status), "changed", ch,
					    "answer", res->answer ? res->answer : "",
					    "error", ret < 0 ? err_last() : res->error));
	c->turn = 0;
	save_state(c);
	if (hooks_have(&c->wb.uhooks, "stop")) {
		json_t *hin = json_pack("{s:s, s:i, s:s, s:s}", "session", c->s.id, "turn", t->n,
					"outcome", ret < 0 ? "error" : agent_status_name(res->status),
					"reason", ret < 0 ? err_last() : res->error ? res->error : "");

		hooks_fire(&c->wb.uhooks, "stop", NULL, hin, NULL, NULL);
		json_decref(hin);
	}
out:
	ws_lock_release(&lock);
	agent_budget_release(&budget);
	buf_release(&prompt);
	buf_release(&extra);
	buf_release(&clean);
	buf_release(&task);
	strvec_clear(&changed);
	return ret;
}

int chat_undo(struct chat *c, int *turn, struct journal_outcome *o)
{
	struct ws_lock lock = WS_LOCK_INIT;
	struct journal jr = JOURNAL_INIT;
	char *dir, *what;
	size_t i;
	int ret;

	for (i = c->turns_nr; i-- > 0;)
		if (c->turns[i].changed && !c->turns[i].undone)
			break;
	if (i == (size_t)-1)
		return err_set(FX_ENOTFOUND, "no turn of this session changed files that are not "
			       "undone yet");
	*turn = c->turns[i].n;
	what = xstrfmt("undo in session %s", c->s.id);
	ret = ws_lock_acquire(&lock, c->cfg->workspace, what, c->o->no_wait, c->o->on_wait,
			      c->o->event_data, c->o->cancel);
	free(what);
	if (ret < 0)
		return ret;
	dir = xstrfmt("%s/turns/%d", c->s.dir, c->turns[i].n);
	ret = journal_open(&jr, c->cps, dir, 1);
	free(dir);
	if (ret < 0)
		goto out;
	ret = journal_revert(&jr, 0, o);
	if (ret >= 0) {
		struct buf note = BUF_INIT;

		buf_addf(&note, "the person undid turn %d with /undo", c->turns[i].n);
		chat_undo_note(&note, o);
		chat_conv_note(c, note.buf);
		buf_release(&note);
		c->turns[i].undone = 1;
		chat_event(c, "undo", json_pack("{s:i, s:o, s:o, s:o}", "turn", c->turns[i].n,
						"reverted", jsonx_from_strvec(&o->reverted),
						"kept", jsonx_from_strvec(&o->kept),
						"failed", jsonx_from_strvec(&o->failed)));
		save_state(c);
		ret = 0;
	}
	journal_release(&jr);
out:
	ws_lock_release(&lock);
	return ret;
}

int chat_diff(struct chat *c, int since_turn, unsigned flags, struct buf *out)
{
	const char *id = c->start_checkpoint;
	size_t i;

	if (since_turn > 0) {
		id = NULL;
		for (i = 0; i < c->turns_nr; i++)
			if (c->turns[i].n == since_turn)
				id = c->turns[i].checkpoint;
		if (!id)
			return err_set(FX_ENOTFOUND, "no turn %d in this session (it has %zu)",
				       since_turn, c->turns_nr);
	}
	if (!id)
		return err_set(FX_ENOTFOUND, "no checkpoint of the session's start");
	return vcs_diff_ext(out, NULL, c->cps, id, flags);
}

int chat_compact(struct chat *c, struct agent_result *res)
{
	const struct provider_config *pc = config_provider(c->cfg, c->prov->name);
	struct agent_opts ao = AGENT_OPTS_INIT;
	size_t before = c->conv.messages_nr;
	int ret;

	*res = (struct agent_result)AGENT_RESULT_INIT;
	ao.role = ROLE_BUILDER;
	ao.provider = c->prov;
	ao.model = *c->model ? c->model : NULL;
	ao.tool_mode = pc && pc->tool_mode && !strcmp(pc->tool_mode, "text") ? AGENT_TOOLS_TEXT
									: AGENT_TOOLS_NATIVE;
	ao.budget = &c->prices;
	ao.on_event = recorder_agent_event;
	ao.event_data = &c->rec;
	ao.cancel = c->o->cancel;
	ao.conversation = &c->conv;
	ret = agent_compact(res, &ao);
	if (ret < 0)
		return ret;
	chat_event(c, "compact", json_pack("{s:i, s:i}", "messages_before", (int)before,
					   "messages_after", (int)c->conv.messages_nr));
	save_state(c);
	return 0;
}

void chat_clear(struct chat *c)
{
	chat_event(c, "clear", json_pack("{s:i}", "messages", (int)c->conv.messages_nr));
	llm_request_release(&c->conv);
	llm_request_init(&c->conv);
	strvec_clear(&c->said);
	free(c->last_answer);
	c->last_answer = NULL;
	save_state(c);
}

int chat_set_model(struct chat *c, const char *role, const char *model)
{
	int r;

	if (!role || !strcmp(role, "chat")) {
		free(c->model);
		c->model = xstrdup(model ? model : "");
		chat_event(c, "model", json_pack("{s:s, s:s}", "role", "chat", "model", c->model));
		save_state(c);
		return 0;
	}
	for (r = 0; r < ROLE__COUNT; r++) {
		struct agent_config *ac;

		if (strcmp(config_role_name((enum agent_role)r), role))
			continue;
		ac = config_agent(c->cfg, (enum agent_role)r);
		free(ac->model);
		ac->model = xstrdup(model ? model : "");
		chat_event(c, "model", json_pack("{s:s, s:s}", "role", role, "model", ac->model));
		return 0;
	}
	return err_set(FX_EINVAL, "unknown role '%s' (chat, architect, builder, expert_coder or "
		       "supervisor)", role);
}

void chat_cost(const struct chat *c, struct buf *out)
{
	ledger_describe(&c->rec.ledger, out);
}

void chat_request_text(const struct chat *c, struct buf *out)
{
	size_t i;

	if (!c->said.nr)
		return;
	if (c->said.nr == 1 && !c->last_answer) {
		buf_addstr(out, c->said.v[0]);
		return;
	}
	buf_addstr(out, "From an interactive session; the person said, oldest first:\n");
	for (i = 0; i < c->said.nr; i++)
		buf_addf(out, "\n- %s\n", c->said.v[i]);
	if (c->last_answer && *c->last_answer)
		buf_addf(out, "\nThe assistant's last answer:\n%s\n", c->last_answer);
}

/*
 * The person's settings
 */

int chat_set_permissions(struct chat *c, const char *mode)
{
	enum approval_mode m;

	if (!mode || approval_mode_parse(&m, mode) < 0)
		return err_set(FX_EINVAL, "unknown permission mode '%s' (ask, auto or safe)",
			       mode ? mode : "");
	if (config_set(c->cfg, "permissions.mode", approval_mode_name(m), CFG_FLAG) < 0)
		return err_prefix(FX_EINVAL, "permissions.mode");
	/*
	 * Only who answers the questions changes, as policy_init_from_config()
	 * sets it from the mode. The boundary stays the configuration's: the
	 * sandbox's network and what it lets a command write were set when the
	 * executor opened and are not touched.
	 */
	c->wb.ex.policy.mode = m;
	c->wb.ex.policy.network_allowed = m == APPROVAL_AUTO;
	if (c->wb.have_map_ex) {
		c->wb.map_ex.policy.mode = m;
		c->wb.map_ex.policy.network_allowed = m == APPROVAL_AUTO;
	}
	c->wb.mcp.mode = m;
	chat_event(c, "permissions", json_pack("{s:s}", "mode", approval_mode_name(m)));
	return 0;
}

/*
 * @path: files the person attaches to a message
 */

/* Characters that end a sentence rather than a path: "see @a.py, then" */
static size_t mention_len(const char *s)
{
	size_t n = strcspn(s, " \t\n\r");

	while (n && strchr(".,;:!?)]}\"'", s[n - 1]))
		n--;
	return n;
}

/* Attach `path` (as typed) to `out`: read as read_file reads, or a note in `refused`. */
static void attach_one(struct chat *c, const char *path, struct buf *out, struct strvec *seen,
		       struct strvec *attached, struct strvec *refused)
{
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct buf data = BUF_INIT, why = BUF_INIT;
	size_t max = c->wb.tctx.limits.read_bytes;
	int ret;

	ret = fs_load_text(&data, &loc, &c->wb.tctx, path, max, 0);
	if (ret == FX_ELIMIT) {
		strvec_pushf(refused, "@%s: %s; ask the model to read it instead (read_file reads a "
			     "file in parts)", path, err_last());
		goto out;
	}
	if (ret < 0) {
		strvec_pushf(refused, "@%s: %s", path, err_last());
		goto out;
	}
	if (strvec_find(seen, loc.rel) >= 0)
		goto out;	/* named twice: attached once */
	if (fs_is_binary(data.buf, data.len, 1, &why)) {
		strvec_pushf(refused, "@%s: it looks like a binary file (%s); not attached", path,
			     why.buf);
		goto out;
	}
	strvec_push(seen, loc.rel);
	/* what the model is given of a file, as read_file's results are: secrets redacted */
	redact_buf(&data);
	buf_addf(out, "\n\n<file path=\"%s\">\n", loc.rel);
	buf_addbuf(out, &data);
	if (data.len && data.buf[data.len - 1] != '\n')
		buf_addch(out, '\n');
	buf_addstr(out, "</file>");
	strvec_pushf(attached, "%s (%zu line%s, %zu bytes)", loc.rel,
		     fs_count_lines(data.buf, data.len),
		     fs_count_lines(data.buf, data.len) == 1 ? "" : "s", data.len);
out:
	err_clear();
	wspath_loc_release(&loc);
	buf_release(&data);
	buf_release(&why);
}

void chat_attach(struct chat *c, const char *message, struct buf *out, struct strvec *attached,
		 struct strvec *refused)
{
	struct strvec seen = STRVEC_INIT;
	struct buf files = BUF_INIT;
	const char *p;

	buf_addstr(out, message);
	for (p = message; (p = strchr(p, '@')); p++) {
		size_t n;
		char *path;

		if (p > message && !strchr(" \t\n(", p[-1]))
			continue;	/* me@example.org */
		n = mention_len(p + 1);
		if (!n || p[1] == '@')
			continue;
		path = xstrndup(p + 1, n);
		attach_one(c, path, &files, &seen, attached, refused);
		free(path);
		p += n;
	}
	buf_addbuf(out, &files);
	buf_release(&files);
	strvec_clear(&seen);
}

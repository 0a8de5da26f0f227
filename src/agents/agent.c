/*
 * The agent loop (see agent.h): the model, the tools, the loop guard and
 * the events. The budget is in budget.c, the window and its compaction in
 * compact.c; what they share with the loop is in agent_internal.h.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "agents/agent.h"
#include "agents/agent_internal.h"
#include "base/clock.h"
#include "base/redact.h"
#include "base/utf8.h"
#include "agents/roles.h"
#include "sandbox/permissions.h"
#include "base/jsonx.h"
#include "llm/textcalls.h"

/* Characters a token stands for in estimates. */
#define CHARS_PER_TOKEN 4
/* Bytes of a tool call's main argument shown in progress lines. */
#define PROGRESS_ARG_MAX 80

static const char *const status_names[AGENT_STATUS__COUNT] = {
	"done", "answered", "no_terminal", "max_turns", "budget", "loop_guard",
	"provider_error", "interrupted",
};

const char *agent_status_name(enum agent_status s)
{
	if ((int)s < 0 || s >= AGENT_STATUS__COUNT)
		return "unknown";
	return status_names[s];
}

/* ---- text tool mode ---- */

size_t agent_parse_text_calls(struct llm_response *resp, int turn, const struct strvec *tools,
			      struct strvec *errors)
{
	struct text_calls tc = TEXT_CALLS_INIT;
	const char *text = resp->content ? resp->content : "";
	size_t i, found;

	found = textcalls_parse(&tc, text, strlen(text), tools);
	for (i = 0; i < tc.nr; i++) {
		struct llm_tool_call *c;

		ALLOC_GROW(resp->tool_calls, resp->tool_calls_nr + 1, resp->tool_calls_alloc);
		c = &resp->tool_calls[resp->tool_calls_nr++];
		c->id = xstrfmt("text-%d-%zu", turn, resp->tool_calls_nr);
		c->name = tc.v[i].name;
		c->arguments = tc.v[i].arguments;
		tc.v[i].name = tc.v[i].arguments = NULL;
	}
	for (i = 0; errors && i < tc.errors.nr; i++)
		strvec_push(errors, tc.errors.v[i]);
	textcalls_release(&tc);
	return found;
}

static void add_text_tools(struct buf *sys, const json_t *tools)
{
	json_t *entry;
	size_t i;

	buf_addstr(sys, "\n\n# Tools\n\n"
		   "You call a tool by answering with a fenced JSON block, exactly like this:\n\n"
		   "```json\n{\"tool\": \"TOOL_NAME\", \"arguments\": {...}}\n```\n\n"
		   "One block per call; several blocks make several calls, run in order. The "
		   "results come back in the next message. The tools:\n");
	json_array_foreach(tools, i, entry) {
		json_t *fn = json_object_get(entry, "function");

		buf_addf(sys, "\n## %s\n%s\nArguments (JSON Schema): ", jsonx_str(fn, "name"),
			 jsonx_str(fn, "description"));
		jsonx_dump(sys, json_object_get(fn, "parameters"), JSON_COMPACT);
		buf_addch(sys, '\n');
	}
}

/* ---- the loop ---- */

void loop_emit(struct loop *l, const char *type, json_t *fields)
{
	if (!fields)
		die("out of memory");
	if (!l->o->on_event) {
		json_decref(fields);
		return;
	}
	jsonx_set(fields, "role", jsonx_string(config_role_name(l->o->role)));
	jsonx_set(fields, "turn", json_integer(l->turn));
	l->o->on_event(l->o->event_data, type, fields);
}

static void progress(struct loop *l, const char *kind, const char *fmt, ...) FX_PRINTF(3, 4);
static void progress(struct loop *l, const char *kind, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	json_t *f;
	va_list ap;

	if (!l->o->on_event)
		return;
	buf_addf(&msg, "%s turn %d: ", config_role_name(l->o->role), l->turn);
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	buf_addf(&msg, " (%.1fk tokens so far)", (double)l->budget->tokens_used / 1000.0);
	f = json_object();
	jsonx_set(f, "message", jsonx_stringn_lossy(msg.buf, msg.len));
	jsonx_set(f, "tokens", json_integer(l->budget->tokens_used));
	jsonx_set(f, "kind", jsonx_string(kind));
	loop_emit(l, "progress", f);
	buf_release(&msg);
}

static size_t message_chars(const struct llm_message *m)
{
	size_t n = m->content ? strlen(m->content) : 0, i;

	for (i = 0; i < m->tool_calls_nr; i++)
		n += strlen(m->tool_calls[i].name ? m->tool_calls[i].name : "") +
		     strlen(m->tool_calls[i].arguments ? m->tool_calls[i].arguments : "");
	return n;
}

static size_t conversation_chars(const struct loop *l)
{
	size_t i, n = l->tools_chars;

	for (i = 0; i < l->req.messages_nr; i++)
		n += message_chars(&l->req.messages[i]);
	return n;
}

/*
 * What the model gets of a tool result: valid UTF-8, at most `max` bytes
 * kept (three quarters head, one quarter tail) with a note. Returns
 * whether it was cut.
 */
static int prepare_result(struct buf *shown, const struct buf *full, size_t max)
{
	json_t *clean = jsonx_stringn_lossy(full->buf, full->len);
	const char *s = json_string_value(clean);
	size_t len = strlen(s);
	int cut = 0;

	if (len > max) {
		size_t h = utf8_cut(s, len, max / 4 * 3);
		size_t t = utf8_start(s, len, len - max / 4);

		buf_add(shown, s, h);
		buf_addf(shown, "\n[... forgex: %zu bytes of this result were left out; ask for "
			 "less at a time (a line range, a narrower path or pattern) ...]\n",
			 len - h - (len - t));
		buf_add(shown, s + t, len - t);
		cut = 1;
	} else {
		buf_add(shown, s, len);
	}
	json_decref(clean);
	return cut;
}

/* The argument worth showing in a progress line: a path, a pattern, a command. */
void loop_call_summary(struct buf *out, const char *name, const json_t *args)
{
	static const char *const keys[] = { "path", "pattern", "from", "summary", "verdict" };
	const char *v = NULL;
	size_t i, mark;

	buf_addstr(out, name);
	if (!json_is_object(args))
		return;
	mark = out->len;
	if (json_is_array(json_object_get(args, "argv"))) {
		json_t *a;

		buf_addch(out, ' ');
		json_array_foreach(json_object_get(args, "argv"), i, a) {
			if (json_is_string(a))
				buf_addf(out, "%s%s", i ? " " : "", json_string_value(a));
		}
	} else {
		for (i = 0; i < ARRAY_SIZE(keys) && !v; i++)
			v = jsonx_str(args, keys[i]);
		if (v)
			buf_addf(out, " %s", v);
	}
	if (out->len - mark > PROGRESS_ARG_MAX) {
		buf_setlen(out, mark + utf8_cut(out->buf + mark, out->len - mark, PROGRESS_ARG_MAX));
		buf_addstr(out, "...");
	}
}

static json_t *usage_json(const struct llm_usage *u, int estimated)
{
	json_t *j = json_object();

	jsonx_set(j, "prompt_tokens", json_integer(u->prompt_tokens));
	jsonx_set(j, "completion_tokens", json_integer(u->completion_tokens));
	jsonx_set(j, "total_tokens", json_integer(u->total_tokens));
	if (estimated >= 0)
		jsonx_set(j, "estimated", json_boolean(estimated));
	return j;
}

/* The model name to charge: one with a price of its own, else the requested one. */
static const char *charge_model(const struct loop *l, const struct llm_response *resp)
{
	if (budget_price_exact(l->budget, l->model))
		return l->model;
	if (resp->model && *resp->model && budget_price_exact(l->budget, resp->model))
		return resp->model;
	return l->model;
}

void loop_account(struct loop *l, struct llm_response *resp, size_t prompt_chars)
{
	struct llm_usage u = resp->usage;
	int estimated = 0;
	double cost;
	json_t *f, *b;
	size_t i, reply_chars = strlen(resp->content);

	if (!u.present) {
		for (i = 0; i < resp->tool_calls_nr; i++)
			reply_chars += strlen(resp->tool_calls[i].arguments ?
					      resp->tool_calls[i].arguments : "");
		u.present = 1;
		u.prompt_tokens = (long)(prompt_chars / CHARS_PER_TOKEN);
		u.completion_tokens = (long)(reply_chars / CHARS_PER_TOKEN) + 1;
		u.total_tokens = u.prompt_tokens + u.completion_tokens;
		estimated = 1;
		l->budget->estimated = 1;
	}
	if (u.total_tokens < u.prompt_tokens + u.completion_tokens)
		u.total_tokens = u.prompt_tokens + u.completion_tokens;
	cost = agent_budget_charge(l->budget, charge_model(l, resp), &u);
	l->out->usage.present = 1;
	l->out->usage.prompt_tokens += u.prompt_tokens;
	l->out->usage.completion_tokens += u.completion_tokens;
	l->out->usage.total_tokens += u.total_tokens;
	if (cost > 0)
		l->out->cost_usd += cost;

	f = json_object();
	jsonx_set(f, "model", jsonx_string(*resp->model ? resp->model : l->model));
	jsonx_set(f, "duration_ms", json_integer((json_int_t)(resp->elapsed * 1000.0 + 0.5)));
	jsonx_set(f, "finish_reason", jsonx_string(resp->finish_reason));
	jsonx_set(f, "usage", usage_json(&u, estimated));
	jsonx_set(f, "cost_usd", cost >= 0 ? json_real(cost) : json_null());
	jsonx_set(f, "tool_calls", json_integer((json_int_t)resp->tool_calls_nr));
	jsonx_set(f, "text_bytes", json_integer((json_int_t)strlen(resp->content)));
	jsonx_set(f, "retries", json_integer(resp->retries));
	if (resp->warnings.nr)
		jsonx_set(f, "warnings", jsonx_from_strvec(&resp->warnings));
	b = json_object();
	jsonx_set(b, "tokens_used", json_integer(l->budget->tokens_used));
	jsonx_set(b, "cost_usd", json_real(l->budget->cost_used));
	jsonx_set(b, "max_tokens", json_integer(l->budget->max_tokens));
	jsonx_set(b, "max_cost_usd", json_real(l->budget->max_cost_usd));
	jsonx_set(f, "budget", b);
	loop_emit(l, "model_call", f);
}

/* Canonical form of a call for the loop guard: name, then sorted compact arguments. */
static void call_key(struct buf *key, const char *name, const char *args)
{
	json_t *j = args ? json_loads(args, 0, NULL) : NULL;

	buf_reset(key);
	buf_addstr(key, name ? name : "");
	buf_addch(key, '\n');
	if (j)
		jsonx_dump(key, j, JSON_COMPACT | JSON_SORT_KEYS);
	else
		buf_addstr(key, args ? args : "");
	json_decref(j);
}

/* Returns 1 when the loop guard fires. */
static int guard(struct loop *l, const char *name, const char *args, int status,
		 const struct buf *result)
{
	struct buf key = BUF_INIT;
	int fire = 0;

	if (status == TOOL_OK) {
		l->guard_repeats = 0;
		buf_reset(&l->guard_key);
		return 0;
	}
	call_key(&key, name, args);
	if (l->guard_repeats && status == l->guard_status && !strcmp(key.buf, l->guard_key.buf) &&
	    result->len == l->guard_result.len && !memcmp(result->buf, l->guard_result.buf, result->len)) {
		l->guard_repeats++;
	} else {
		l->guard_repeats = 1;
		l->guard_status = status;
		buf_reset(&l->guard_key);
		buf_addbuf(&l->guard_key, &key);
		buf_reset(&l->guard_result);
		buf_addbuf(&l->guard_result, result);
	}
	fire = l->guard_repeats >= AGENT_LOOP_REPEATS;
	buf_release(&key);
	return fire;
}

static const char *tool_status_name(int status)
{
	return status == TOOL_OK ? "ok" : status == TOOL_FAILED ? "failed" : "refused";
}

static int cancelled(const struct loop *l)
{
	return l->o->cancel && *l->o->cancel;
}

void loop_end(struct loop *l, enum agent_status st, const char *fmt, ...)
{
	va_list ap;

	l->out->status = st;
	free(l->out->error);
	l->out->error = NULL;
	if (fmt) {
		va_start(ap, fmt);
		l->out->error = xstrvfmt(fmt, ap);
		va_end(ap);
	}
}

/*
 * Run the calls of one reply in order. Returns 1 when the loop ends
 * (terminal tool accepted, loop guard, cancelled), with the status set.
 */
static int run_calls(struct loop *l, const struct llm_response *resp)
{
	struct buf text_results = BUF_INIT;
	size_t i;
	int ended = 0;

	for (i = 0; i < resp->tool_calls_nr && !ended; i++) {
		const struct llm_tool_call *c = &resp->tool_calls[i];
		const char *name = c->name ? c->name : "";
		char *fallback_id = NULL;
		const char *id = c->id && *c->id ? c->id
			: (fallback_id = xstrfmt("call-%d-%zu", l->turn, i + 1));
		struct buf result = BUF_INIT, shown = BUF_INIT, summary = BUF_INIT;
		json_t *args = c->arguments ? json_loads(c->arguments, 0, NULL) : NULL, *f;
		int status, cut, terminal;

		f = json_object();
		jsonx_set(f, "id", jsonx_string(id));
		jsonx_set(f, "name", jsonx_stringn_lossy(name, strlen(name)));
		jsonx_set(f, "arguments", args ? json_incref(args)
			  : jsonx_stringn_lossy(c->arguments ? c->arguments : "",
						c->arguments ? strlen(c->arguments) : 0));
		loop_emit(l, "tool_call", f);
		loop_call_summary(&summary, name, args);
		progress(l, "tool", "%s", summary.buf);

		if (!role_tool_allowed(l->o->tools->registry, name, l->terminal, &result))
			status = TOOL_REFUSED;
		else
			status = tool_dispatch(l->o->tools, l->granted, name, c->arguments, &result);
		/* secrets in a command's output or a file never reach the model or the events */
		redact_buf(&result);
		l->out->tool_calls++;
		cut = prepare_result(&shown, &result, l->result_max);
		terminal = status == TOOL_OK && l->terminal && !strcmp(name, l->terminal);

		f = json_object();
		jsonx_set(f, "id", jsonx_string(id));
		jsonx_set(f, "name", jsonx_stringn_lossy(name, strlen(name)));
		jsonx_set(f, "status", jsonx_string(tool_status_name(status)));
		jsonx_set(f, "bytes", json_integer((json_int_t)result.len));
		jsonx_set(f, "preview", jsonx_stringn_lossy(shown.buf,
			  utf8_cut(shown.buf, shown.len, AGENT_PREVIEW_MAX)));
		jsonx_set(f, "cut", json_boolean(cut));
		jsonx_set(f, "terminal", json_boolean(terminal));
		loop_emit(l, "tool_result", f);

		if (l->text_mode) {
			buf_addf(&text_results, "%sResult of %s (call %s, %s):\n%s\n",
				 text_results.len ? "\n" : "", name, id, tool_status_name(status),
				 shown.buf);
		} else {
			llm_request_add_tool_result(&l->req, id, name, shown.buf);
		}

		if (terminal) {
			l->out->terminal_args = args && json_is_object(args) ? json_incref(args)
									   : json_object();
			l->out->terminal_tool = xstrdup(name);
			loop_end(l, AGENT_DONE, NULL);
			ended = 1;
		} else if (guard(l, name, c->arguments, status, &result)) {
			loop_end(l, AGENT_LOOP_GUARD, "the model made the same failing call %d times in a "
			    "row: %s (%s)", AGENT_LOOP_REPEATS, summary.buf,
			    utf8_cut(result.buf, result.len, 200) < result.len ? "see the events"
			    : result.buf);
			ended = 1;
		} else if (cancelled(l)) {
			loop_end(l, AGENT_INTERRUPTED, "interrupted");
			ended = 1;
		}
		json_decref(args);
		free(fallback_id);
		buf_release(&result);
		buf_release(&shown);
		buf_release(&summary);
	}
	if (text_results.len)
		llm_request_add(&l->req, LLM_USER, text_results.buf);
	buf_release(&text_results);
	return ended;
}

/*
 * Native mode, a reply without a structured call: a call written in its
 * text (a server running the model without a tool parser) counts, and its
 * text becomes what is left around the call.
 */
static void text_fallback(struct loop *l, struct llm_response *resp, struct strvec *errors)
{
	struct text_calls tc = TEXT_CALLS_INIT;
	size_t i;

	textcalls_parse(&tc, resp->content, strlen(resp->content), &l->tool_names);
	/*
	 * A plain answer (ask) may show what a call looks like ("<tool_call>
	 * {"name": "get_weather", ...}"): markup naming no tool at all is then
	 * the answer, not a failed call.
	 */
	if (!tc.nr && !l->terminal && tc.errors.nr && tc.errors.nr == tc.unknown) {
		textcalls_release(&tc);
		return;
	}
	for (i = 0; i < tc.errors.nr; i++)
		strvec_push(errors, tc.errors.v[i]);
	if (tc.nr) {
		for (i = 0; i < tc.nr; i++) {
			struct llm_tool_call *c;

			ALLOC_GROW(resp->tool_calls, resp->tool_calls_nr + 1, resp->tool_calls_alloc);
			c = &resp->tool_calls[resp->tool_calls_nr++];
			/* 9 letters and digits: Mistral's chat templates refuse any other id */
			c->id = xstrfmt("tx%03d%04zu", l->turn % 1000, resp->tool_calls_nr % 10000);
			c->name = tc.v[i].name;
			c->arguments = tc.v[i].arguments;
			tc.v[i].name = tc.v[i].arguments = NULL;
		}
		free(resp->content);
		resp->content = buf_detach(&tc.prose, NULL);
	}
	textcalls_release(&tc);
}

static int check_opts(const struct agent_opts *o)
{
	if (!o)
		return err_set(FX_EINVAL, "agent_run: no options");
	if ((int)o->role < 0 || o->role >= ROLE__COUNT)
		return err_set(FX_EINVAL, "agent_run: unknown role %d", (int)o->role);
	if (!o->provider)
		return err_set(FX_EINVAL, "agent_run: no provider");
	if (!o->tools || !o->tools->registry)
		return err_set(FX_EINVAL, "agent_run: no tools");
	if (!o->task || !*o->task)
		return err_set(FX_EINVAL, "agent_run: no task");
	if (o->tool_mode != AGENT_TOOLS_NATIVE && o->tool_mode != AGENT_TOOLS_TEXT)
		return err_set(FX_EINVAL, "agent_run: unknown tool mode %d", (int)o->tool_mode);
	return 0;
}

static void start_event(struct loop *l, const json_t *tools, long max_turns)
{
	json_t *f = json_object(), *names = json_array(), *entry;
	size_t i;

	json_array_foreach(tools, i, entry)
		json_array_append_new(names, jsonx_string(jsonx_str(json_object_get(entry,
										      "function"), "name")));
	jsonx_set(f, "model", jsonx_string(l->model));
	jsonx_set(f, "provider", jsonx_string(l->o->provider->name ? l->o->provider->name : ""));
	jsonx_set(f, "max_turns", json_integer(max_turns));
	jsonx_set(f, "tool_mode", jsonx_string(l->text_mode ? "text" : "native"));
	jsonx_set(f, "terminal", l->terminal ? jsonx_string(l->terminal) : json_null());
	jsonx_set(f, "tools", names);
	loop_emit(l, "agent_start", f);
}

static void end_event(struct loop *l)
{
	json_t *f = json_object();

	jsonx_set(f, "status", jsonx_string(agent_status_name(l->out->status)));
	jsonx_set(f, "turns", json_integer(l->out->turns));
	jsonx_set(f, "tool_calls", json_integer(l->out->tool_calls));
	jsonx_set(f, "usage", usage_json(&l->out->usage, -1));
	jsonx_set(f, "cost_usd", json_real(l->out->cost_usd));
	jsonx_set(f, "error", l->out->error ? jsonx_stringn_lossy(l->out->error,
								  strlen(l->out->error))
					    : json_null());
	loop_emit(l, "agent_end", f);
}

/*
 * The loop's state and its first request (the system prompt and tools, or
 * the conversation's, then the task), as agent_run() and agent_fit()
 * begin. `tools` gets the role's tools (caller decrefs), `sys` the system
 * prompt; loop_finish() releases the rest.
 */
static void loop_start(struct loop *l, struct agent_result *out, const struct agent_opts *o,
		       json_t **tools_out, struct buf *sys)
{
	json_t *tools, *entry;
	int continued = 0;
	size_t i;

	memset(l, 0, sizeof(*l));
	*out = (struct agent_result)AGENT_RESULT_INIT;
	l->o = o;
	l->out = out;
	l->local_budget = (struct agent_budget)AGENT_BUDGET_INIT;
	l->budget = o->budget ? o->budget : &l->local_budget;
	llm_request_init(&l->req);
	buf_init(&l->guard_key, 0);
	buf_init(&l->guard_result, 0);
	l->terminal = o->plain_answer ? NULL : role_terminal_tool(o->role);
	l->granted = role_permissions(o->role);
	l->model = o->model && *o->model ? o->model
		: o->provider->model ? o->provider->model : "";
	l->text_mode = o->tool_mode == AGENT_TOOLS_TEXT;
	l->result_max = o->tool_result_max ? o->tool_result_max : AGENT_TOOL_RESULT_MAX;
	if (l->result_max < 256)
		l->result_max = 256;
	l->tok_per_byte = AGENT_TOKENS_PER_BYTE;
	l->chat = o->conversation != NULL;
	strvec_init(&l->tool_names);
	out->answer = xstrdup("");
	out->finish_reason = xstrdup("");

	o->tools->role = (int)o->role;
	{
		unsigned edit = role_edit_tools(o->edit_tools, l->model);
		const char *note = role_edit_note(edit);

		tools = role_tools_json_edit(o->tools->registry, (int)o->role, l->granted,
					     l->terminal, edit);
		json_array_foreach(tools, i, entry)
			strvec_push(&l->tool_names, jsonx_str(json_object_get(entry, "function"),
							      "name"));
		buf_addstr(sys, o->system_prompt ? o->system_prompt : role_prompt(o->role));
		if (note && permissions_permit(l->granted, PERM_WRITE | PERM_DELETE))
			buf_addstr(sys, note);
	}
	if (o->conversation && o->conversation->messages_nr) {
		/* a conversation goes on: its system prompt and tools stay as they were */
		l->req = *o->conversation;
		*o->conversation = (struct llm_request)LLM_REQUEST_INIT;
		continued = 1;
	}
	if (l->text_mode) {
		add_text_tools(sys, tools);
	} else {
		struct buf tj = BUF_INIT;

		json_array_foreach(tools, i, entry) {
			json_t *fn = json_object_get(entry, "function");

			if (!continued)
				llm_request_add_tool(&l->req, jsonx_str(fn, "name"),
						     jsonx_str(fn, "description"),
						     json_object_get(fn, "parameters"));
		}
		jsonx_dump(&tj, tools, JSON_COMPACT);
		l->tools_chars = tj.len;
		buf_release(&tj);
	}
	if (!continued)
		llm_request_add(&l->req, LLM_SYSTEM, sys->buf);
	llm_request_add(&l->req, LLM_USER, o->task);
	l->person = l->req.messages_nr - 1;
	l->fresh = !continued;
	free(l->req.model);
	l->req.model = o->model && *o->model ? xstrdup(o->model) : NULL;
	l->req.temperature = o->temperature;
	*tools_out = tools;
}

/* Free what loop_start() made but the request and the result. */
static void loop_finish(struct loop *l)
{
	buf_release(&l->guard_key);
	buf_release(&l->guard_result);
	strvec_clear(&l->tool_names);
	agent_budget_release(&l->local_budget);
}

/*
 * The person's message, which no request could carry, goes out of the
 * conversation again: nothing of it was sent.
 */
static void take_back(struct loop *l)
{
	struct llm_message *m;

	if (!l->chat || l->out->turns || l->out->error_code != FX_ELIMIT ||
	    l->person != l->req.messages_nr - 1)
		return;
	m = &l->req.messages[l->person];
	free(m->content);
	free(m->name);
	l->req.messages_nr--;
	l->out->refused = 1;
	/* a conversation this message was to begin is none yet */
	if (l->fresh) {
		llm_request_release(&l->req);
		llm_request_init(&l->req);
	}
}

int agent_fit(struct agent_fit *fit, const struct agent_opts *o)
{
	struct agent_result scratch;
	struct loop l;
	struct buf sys = BUF_INIT;
	json_t *tools = NULL;
	int ret = check_opts(o);

	if (ret < 0)
		return ret;
	loop_start(&l, &scratch, o, &tools, &sys);
	compact_measure(&l, fit);
	/* the conversation as it was: without the message, or none */
	l.out->turns = 0;
	l.out->error_code = FX_ELIMIT;
	take_back(&l);
	if (o->conversation) {
		*o->conversation = l.req;
	} else {
		llm_request_release(&l.req);
	}
	json_decref(tools);
	buf_release(&sys);
	loop_finish(&l);
	agent_result_release(&scratch);
	return fit->least <= fit->limit;
}

int agent_run(struct agent_result *out, const struct agent_opts *o)
{
	struct loop l;
	struct buf sys = BUF_INIT, why = BUF_INIT;
	json_t *tools = NULL;
	long max_turns;
	struct strvec call_errors = STRVEC_INIT;
	int nudges = 0, ret;

	ret = check_opts(o);
	if (ret < 0)
		return ret;
	loop_start(&l, out, o, &tools, &sys);
	max_turns = o->max_turns > 0 ? o->max_turns : AGENT_MAX_TURNS_DEFAULT;
	start_event(&l, tools, max_turns);
	compact_window_setup(&l);

	for (;;) {
		struct llm_response resp = LLM_RESPONSE_INIT;
		size_t prompt_chars, k;
		int saved_stream;

		if (cancelled(&l)) {
			loop_end(&l, AGENT_INTERRUPTED, "interrupted");
			break;
		}
		buf_reset(&why);
		if (agent_budget_spent(l.budget, &why)) {
			loop_end(&l, AGENT_BUDGET, "%s", why.buf);
			break;
		}
		if (out->turns >= max_turns) {
			loop_end(&l, AGENT_MAX_TURNS, "%s reached max_turns (%ld) without %s",
			    config_role_name(o->role), max_turns,
			    l.terminal ? "calling its terminal tool" : "an answer");
			break;
		}
		if (compact_fit(&l) < 0)
			break;
		l.turn = ++out->turns;
		progress(&l, "model", "asking %s", l.model);
		prompt_chars = conversation_chars(&l);
		saved_stream = o->provider->stream;
		o->provider->stream = o->stream ? 1 : 0;
		ret = provider_chat(o->provider, &resp, &l.req, o->stream ? o->on_text : NULL,
				    o->text_data);
		o->provider->stream = saved_stream;
		if (ret < 0) {
			json_t *f = json_object();

			jsonx_set(f, "model", jsonx_string(l.model));
			jsonx_set(f, "error", jsonx_string(err_last()));
			jsonx_set(f, "error_code", jsonx_string(err_name(ret)));
			loop_emit(&l, "model_call", f);
			if (ret == FX_EINTR || cancelled(&l)) {
				loop_end(&l, AGENT_INTERRUPTED, "interrupted");
			} else {
				loop_end(&l, AGENT_PROVIDER_ERROR, "%s", err_last());
				out->error_code = ret;
			}
			llm_response_release(&resp);
			break;
		}
		for (k = 0; k < resp.warnings.nr; k++)
			strvec_push(&out->warnings, resp.warnings.v[k]);
		free(out->answer);
		out->answer = xstrdup(resp.content);
		free(out->finish_reason);
		out->finish_reason = xstrdup(resp.finish_reason);
		free(out->model);
		out->model = xstrdup(*resp.model ? resp.model : l.model);
		compact_calibrate(&l, &resp);
		strvec_clear(&call_errors);
		if (l.text_mode) {
			/* the server knows no tools: calls are written in the text */
			for (k = 0; k < resp.tool_calls_nr; k++) {
				free(resp.tool_calls[k].id);
				free(resp.tool_calls[k].name);
				free(resp.tool_calls[k].arguments);
			}
			resp.tool_calls_nr = 0;
			agent_parse_text_calls(&resp, l.turn, &l.tool_names, &call_errors);
			llm_request_add(&l.req, LLM_ASSISTANT, resp.content);
		} else {
			if (!resp.tool_calls_nr && *resp.content)
				text_fallback(&l, &resp, &call_errors);
			llm_request_add_reply(&l.req, &resp);
		}
		loop_account(&l, &resp, prompt_chars);

		if (call_errors.nr) {
			struct buf msg = BUF_INIT;
			json_t *f = json_object();

			jsonx_set(f, "errors", jsonx_from_strvec(&call_errors));
			loop_emit(&l, "text_call_error", f);
			for (k = 0; k < call_errors.nr; k++)
				buf_addf(&msg, "%s%s", k ? "\n\n" : "", call_errors.v[k]);
			if (!resp.tool_calls_nr) {
				llm_request_add(&l.req, LLM_USER, msg.buf);
				buf_release(&msg);
				llm_response_release(&resp);
				if (++l.malformed >= AGENT_LOOP_REPEATS) {
					loop_end(&l, AGENT_LOOP_GUARD, "the model sent %d replies in a row "
					    "whose tool calls could not be read (the last: %s)",
					    l.malformed, call_errors.v[0]);
					break;
				}
				continue;
			}
			ret = run_calls(&l, &resp);
			llm_request_add(&l.req, LLM_USER, msg.buf);
			buf_release(&msg);
			llm_response_release(&resp);
			if (ret)
				break;
			continue;
		}
		l.malformed = 0;

		if (!resp.tool_calls_nr) {
			llm_response_release(&resp);
			if (!l.terminal) {
				loop_end(&l, AGENT_ANSWERED, NULL);
				break;
			}
			if (nudges >= AGENT_NUDGES_MAX) {
				loop_end(&l, AGENT_NO_TERMINAL, "%s answered in plain text %d times without "
				    "calling %s", config_role_name(o->role), nudges + 1, l.terminal);
				break;
			} else {
				struct buf msg = BUF_INIT;
				json_t *f;

				nudges++;
				buf_addf(&msg, "You answered without calling a tool. Your work is "
					 "handed in only by calling the %s tool: call %s now, with "
					 "its arguments.", l.terminal, l.terminal);
				if (l.text_mode)
					buf_addf(&msg, " Answer with a fenced block: ```json\n"
						 "{\"tool\": \"%s\", \"arguments\": {...}}\n```",
						 l.terminal);
				llm_request_add(&l.req, LLM_USER, msg.buf);
				f = json_object();
				jsonx_set(f, "message", jsonx_string(msg.buf));
				jsonx_set(f, "nudges", json_integer(nudges));
				loop_emit(&l, "agent_nudge", f);
				buf_release(&msg);
				continue;
			}
		}
		ret = run_calls(&l, &resp);
		llm_response_release(&resp);
		if (ret)
			break;
	}
	if (out->status != AGENT_DONE && out->status != AGENT_ANSWERED && !out->error)
		out->error = xstrdup(agent_status_name(out->status));
	take_back(&l);
	end_event(&l);
	json_decref(tools);
	if (o->conversation)
		*o->conversation = l.req;
	else
		llm_request_release(&l.req);
	buf_release(&sys);
	buf_release(&why);
	strvec_clear(&call_errors);
	loop_finish(&l);
	return 0;
}

void agent_result_release(struct agent_result *r)
{
	json_decref(r->terminal_args);
	free(r->terminal_tool);
	free(r->answer);
	free(r->error);
	free(r->finish_reason);
	free(r->model);
	strvec_clear(&r->warnings);
	*r = (struct agent_result)AGENT_RESULT_INIT;
}

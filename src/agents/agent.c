/*
 * The agent loop (see agent.h): the model, the tools, the budget, the
 * context, the loop guard and the events.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents/agent.h"
#include "base/redact.h"
#include "agents/roles.h"
#include "sandbox/permissions.h"
#include "base/jsonx.h"
#include "llm/textcalls.h"

/* Context control: a shortened message keeps at most this much. */
#define STUB_MIN 200
/* Old tool-call arguments longer than this are replaced when the context is full. */
#define ARGS_STUB_MIN 512
/* Bytes a summary of old turns is expected to take, when choosing what it replaces. */
#define SUMMARY_ROOM 2500
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

double agent_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- budget ---- */

void agent_budget_init(struct agent_budget *b, long max_tokens, double max_cost_usd,
		       double max_wall_seconds)
{
	*b = (struct agent_budget)AGENT_BUDGET_INIT;
	b->max_tokens = max_tokens > 0 ? max_tokens : 0;
	b->max_cost_usd = max_cost_usd > 0 ? max_cost_usd : 0.0;
	if (max_wall_seconds > 0)
		b->deadline = agent_now() + max_wall_seconds;
}

void agent_budget_release(struct agent_budget *b)
{
	size_t i;

	for (i = 0; i < b->prices_nr; i++)
		free(b->prices[i].model);
	free(b->prices);
	*b = (struct agent_budget)AGENT_BUDGET_INIT;
}

static struct agent_price *price_exact(const struct agent_budget *b, const char *model)
{
	size_t i;

	for (i = 0; model && i < b->prices_nr; i++)
		if (!strcmp(b->prices[i].model, model))
			return &b->prices[i];
	return NULL;
}

int agent_budget_set_price(struct agent_budget *b, const char *model, double prompt_per_mtok,
			   double completion_per_mtok)
{
	struct agent_price *p;

	if (!model || !*model)
		return err_set(FX_EINVAL, "a price needs a model name");
	if (!(prompt_per_mtok >= 0) || !(completion_per_mtok >= 0) ||
	    !isfinite(prompt_per_mtok) || !isfinite(completion_per_mtok))
		return err_set(FX_EINVAL, "the price of '%s' must be a number of dollars, at least 0",
			       model);
	p = price_exact(b, model);
	if (!p) {
		ALLOC_GROW(b->prices, b->prices_nr + 1, b->prices_alloc);
		p = &b->prices[b->prices_nr++];
		p->model = xstrdup(model);
	}
	p->prompt_per_mtok = prompt_per_mtok;
	p->completion_per_mtok = completion_per_mtok;
	return 0;
}

static int parse_price_entry(const char *e, size_t len, char **model, double *in, double *outp)
{
	char *text = xstrndup(e, len), *eq = strrchr(text, '='), *slash, *end;
	int ret = 0;

	if (!eq || eq == text) {
		ret = err_set(FX_EINVAL, "price '%s': expected MODEL=PROMPT/COMPLETION", text);
		goto out;
	}
	*eq = '\0';
	slash = strchr(eq + 1, '/');
	if (!slash) {
		ret = err_set(FX_EINVAL, "price '%s=%s': expected PROMPT/COMPLETION dollars per "
			      "million tokens", text, eq + 1);
		goto out;
	}
	*slash = '\0';
	*in = strtod(eq + 1, &end);
	if (end == eq + 1 || *end) {
		ret = err_set(FX_EINVAL, "price of '%s': '%s' is not a number", text, eq + 1);
		goto out;
	}
	*outp = strtod(slash + 1, &end);
	if (end == slash + 1 || *end) {
		ret = err_set(FX_EINVAL, "price of '%s': '%s' is not a number", text, slash + 1);
		goto out;
	}
	if (!(*in >= 0) || !(*outp >= 0) || !isfinite(*in) || !isfinite(*outp)) {
		ret = err_set(FX_EINVAL, "price of '%s' must be at least 0", text);
		goto out;
	}
	*model = xstrdup(text);
out:
	free(text);
	return ret;
}

int agent_budget_parse_prices(struct agent_budget *b, const char *text)
{
	struct agent_price *list = NULL;
	size_t nr = 0, alloc = 0, i;
	const char *p = text ? text : "";
	int ret = 0;

	while (*p) {
		size_t n;

		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		n = strcspn(p, ", \t\r\n");
		if (!n)
			break;
		ALLOC_GROW(list, nr + 1, alloc);
		ret = parse_price_entry(p, n, &list[nr].model, &list[nr].prompt_per_mtok,
					&list[nr].completion_per_mtok);
		if (ret < 0)
			goto out;
		nr++;
		p += n;
	}
	for (i = 0; i < nr; i++)
		agent_budget_set_price(b, list[i].model, list[i].prompt_per_mtok,
				       list[i].completion_per_mtok);
out:
	for (i = 0; i < nr; i++)
		free(list[i].model);
	free(list);
	return ret;
}

const struct agent_price *agent_budget_price(const struct agent_budget *b, const char *model)
{
	const struct agent_price *p = price_exact(b, model);

	return p ? p : price_exact(b, "*");
}

double agent_budget_charge(struct agent_budget *b, const char *model,
			   const struct llm_usage *usage)
{
	const struct agent_price *p = agent_budget_price(b, model);
	long prompt = usage->prompt_tokens > 0 ? usage->prompt_tokens : 0;
	long completion = usage->completion_tokens > 0 ? usage->completion_tokens : 0;
	long total = usage->total_tokens > prompt + completion ? usage->total_tokens
							       : prompt + completion;
	double cost;

	b->calls++;
	b->prompt_tokens += prompt;
	b->completion_tokens += completion;
	b->tokens_used += total;
	if (!p) {
		b->unpriced = 1;
		return -1.0;
	}
	cost = ((double)prompt * p->prompt_per_mtok + (double)completion * p->completion_per_mtok) /
	       1e6;
	b->cost_used += cost;
	return cost;
}

int agent_budget_spent(const struct agent_budget *b, struct buf *why)
{
	if (b->max_tokens > 0 && b->tokens_used >= b->max_tokens) {
		if (why)
			buf_addf(why, "token budget spent: %ld of %ld tokens used", b->tokens_used,
				 b->max_tokens);
		return 1;
	}
	if (b->max_cost_usd > 0 && b->cost_used >= b->max_cost_usd) {
		if (why)
			buf_addf(why, "cost budget spent: $%.4f of $%.4f used", b->cost_used,
				 b->max_cost_usd);
		return 1;
	}
	if (b->deadline > 0 && agent_now() >= b->deadline) {
		if (why)
			buf_addstr(why, "wall-clock budget spent: the run's time limit has passed");
		return 1;
	}
	return 0;
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

struct loop {
	const struct agent_opts *o;
	struct agent_result *out;
	struct agent_budget local_budget;
	struct agent_budget *budget;
	struct llm_request req;
	const char *terminal;
	const char *model;		/* requested: opts or the provider's */
	unsigned granted;
	int turn;
	int text_mode;
	size_t tools_chars;		/* the tools' JSON, which the model also reads */
	size_t result_max;
	struct strvec tool_names;	/* what the model may call, for calls in text */

	/* the model's window (see "Context control" in agent.h) */
	long window;			/* tokens */
	const char *window_source;
	long reserve;			/* tokens kept free for the reply */
	double tok_per_byte;		/* estimate of tokens per request byte, only ever raised */
	size_t sent_bytes;		/* size of the last request */
	int malformed;			/* replies in a row whose calls could not be read */

	/* loop guard: the last failing call */
	struct buf guard_key, guard_result;
	int guard_status, guard_repeats;
};

static void emit(struct loop *l, const char *type, json_t *fields)
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
	emit(l, "progress", f);
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

static size_t utf8_start(const char *s, size_t len, size_t pos)
{
	while (pos < len && ((unsigned char)s[pos] & 0xc0) == 0x80)
		pos++;
	return pos;
}

static size_t utf8_cut(const char *s, size_t len, size_t max)
{
	size_t n = max < len ? max : len;

	while (n > 0 && n < len && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
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
static void add_call_summary(struct buf *out, const char *name, const json_t *args)
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
	if (price_exact(l->budget, l->model))
		return l->model;
	if (resp->model && *resp->model && price_exact(l->budget, resp->model))
		return resp->model;
	return l->model;
}

static void account(struct loop *l, struct llm_response *resp, size_t prompt_chars)
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
	emit(l, "model_call", f);
}

/* ---- context: the window and compaction ---- */

static void end(struct loop *l, enum agent_status st, const char *fmt, ...) FX_PRINTF(3, 4);

/* The exact size of the request body as it stands. */
static size_t request_bytes(const struct loop *l)
{
	json_t *j = llm_request_to_json(&l->req, l->model, l->o->stream);
	struct buf b = BUF_INIT;
	size_t n;

	jsonx_dump(&b, j, JSON_COMPACT);
	n = b.len;
	buf_release(&b);
	json_decref(j);
	return n;
}

static long est_tokens(const struct loop *l, size_t bytes)
{
	return (long)((double)bytes * l->tok_per_byte) + 1;
}

/* Learn from the server's count how many tokens a byte is; never lower the estimate. */
static void calibrate(struct loop *l, const struct llm_response *resp)
{
	double seen;

	if (!resp->usage.present || resp->usage.prompt_tokens <= 0 || !l->sent_bytes)
		return;
	seen = (double)resp->usage.prompt_tokens / (double)l->sent_bytes * 1.1;
	if (seen > l->tok_per_byte && seen < 2.0)
		l->tok_per_byte = seen;
}

static int is_stub(const char *s)
{
	return s && !strncmp(s, "[forgex: ", 9);
}

/* Whether message `i` holds a tool result (text mode: a user message of results). */
static int is_tool_result(const struct loop *l, size_t i)
{
	const struct llm_message *m = &l->req.messages[i];

	if (m->role == LLM_TOOL)
		return 1;
	return l->text_mode && m->role == LLM_USER && m->content &&
	       !strncmp(m->content, "Result of ", 10);
}

/* The index of the last assistant message (the latest turn starts there), or nr. */
static size_t latest_turn(const struct loop *l)
{
	size_t i;

	for (i = l->req.messages_nr; i-- > 2;)
		if (l->req.messages[i].role == LLM_ASSISTANT)
			return i;
	return l->req.messages_nr;
}

/* The bytes `s` takes as a JSON string's contents (escapes counted). */
static size_t json_len(const char *s)
{
	size_t n = 0;

	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		n += c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r' || c == '\b' ||
		     c == '\f' ? 2 : c < 0x20 ? 6 : 1;
	}
	return n;
}

static void set_content(struct llm_message *m, char *text, size_t *bytes)
{
	size_t old = json_len(m->content), now = json_len(text);

	free(m->content);
	m->content = text;
	*bytes = *bytes + now > old ? *bytes + now - old : 0;
}

/* Shorten tool results in [from, to) oldest first until the request is under `goal` tokens. */
static long stub_results(struct loop *l, size_t from, size_t to, long goal, size_t *bytes)
{
	long n = 0;
	size_t i;

	for (i = from; i < to && est_tokens(l, *bytes) > goal; i++) {
		struct llm_message *m = &l->req.messages[i];
		size_t len = m->content ? strlen(m->content) : 0;

		if (!is_tool_result(l, i) || len <= STUB_MIN || is_stub(m->content))
			continue;
		set_content(m, xstrfmt("[forgex: this earlier result%s%s (%zu bytes) was removed to "
				       "save context; call the tool again if you need it]",
				       m->name ? " of " : "", m->name ? m->name : "", len), bytes);
		n++;
	}
	return n;
}

/* Old assistant texts and large tool-call arguments (a write_file's content). */
static long stub_assistant(struct loop *l, size_t to, long goal, size_t *bytes)
{
	long n = 0;
	size_t i, k;

	for (i = 2; i < to && est_tokens(l, *bytes) > goal; i++) {
		struct llm_message *m = &l->req.messages[i];
		int changed = 0;

		if (m->role != LLM_ASSISTANT)
			continue;
		if (m->content && strlen(m->content) > STUB_MIN && !is_stub(m->content)) {
			size_t len = strlen(m->content);

			set_content(m, xstrfmt("[forgex: earlier text (%zu bytes) removed to save "
					       "context]", len), bytes);
			changed = 1;
		}
		for (k = 0; k < m->tool_calls_nr; k++) {
			struct llm_tool_call *c = &m->tool_calls[k];
			size_t len = c->arguments ? strlen(c->arguments) : 0, jl;

			if (len <= ARGS_STUB_MIN)
				continue;
			jl = json_len(c->arguments);
			free(c->arguments);
			/* still a JSON object, so the conversation stays well-formed */
			c->arguments = xstrfmt("{\"forgex_note\": \"arguments (%zu bytes) removed to "
					       "save context\"}", len);
			*bytes -= jl > json_len(c->arguments) ? jl - json_len(c->arguments) : 0;
			changed = 1;
		}
		n += changed;
	}
	return n;
}

/* A plain list of what messages [from, to) did: the fallback summary. */
static void list_turns(const struct loop *l, size_t from, size_t to, struct buf *out, size_t max)
{
	size_t i, k;

	for (i = from; i < to && out->len < max; i++) {
		const struct llm_message *m = &l->req.messages[i];

		if (m->role == LLM_ASSISTANT) {
			if (m->content && *m->content && !is_stub(m->content))
				buf_addf(out, "- you wrote: %.*s\n", (int)utf8_cut(m->content,
					 strlen(m->content), 300), m->content);
			for (k = 0; k < m->tool_calls_nr; k++) {
				json_t *a = json_loads(m->tool_calls[k].arguments, 0, NULL);

				buf_addstr(out, "- you called ");
				add_call_summary(out, m->tool_calls[k].name, a);
				buf_addch(out, '\n');
				json_decref(a);
			}
		} else if (m->role == LLM_USER && !is_tool_result(l, i) && m->content) {
			buf_addf(out, "- you were told: %.*s\n", (int)utf8_cut(m->content,
				 strlen(m->content), 300), m->content);
		}
	}
}

/*
 * Ask the model for a summary of messages [from, to). The request holds
 * only what it needs and is cut to half the window. Returns 0 with the
 * text in `out`.
 */
static int model_summary(struct loop *l, size_t from, size_t to, struct buf *out)
{
	struct llm_request sr = LLM_REQUEST_INIT;
	struct llm_response resp = LLM_RESPONSE_INIT;
	struct buf text = BUF_INIT;
	size_t i, max = (size_t)((double)(l->window / 2) / l->tok_per_byte);
	int ret, saved;

	buf_addf(&text, "The task:\n%s\n\nThe work so far, oldest first:\n",
		 l->req.messages[1].content ? l->req.messages[1].content : "");
	for (i = from; i < to && text.len < max; i++) {
		const struct llm_message *m = &l->req.messages[i];
		size_t k;

		buf_addf(&text, "\n[%s] ", llm_role_name(m->role));
		if (m->content)
			buf_add(&text, m->content, utf8_cut(m->content, strlen(m->content), 2000));
		for (k = 0; k < m->tool_calls_nr; k++)
			buf_addf(&text, "\ncall %s %.*s", m->tool_calls[k].name,
				 (int)utf8_cut(m->tool_calls[k].arguments,
					       strlen(m->tool_calls[k].arguments), 500),
				 m->tool_calls[k].arguments);
	}
	if (text.len > max)
		buf_setlen(&text, utf8_cut(text.buf, text.len, max));
	llm_request_add(&sr, LLM_SYSTEM, "You compress the record of a coding agent's work so it "
			"can go on within a smaller context. Write a short summary (at most 300 "
			"words) of what was learnt and done: files read and what matters in them, "
			"changes made, commands run and their outcome, what is left to do. Facts "
			"only; no tool calls.");
	llm_request_add(&sr, LLM_USER, text.buf);
	if (l->req.model)
		sr.model = xstrdup(l->req.model);
	sr.temperature = 0.0;
	sr.max_tokens = l->reserve;
	saved = l->o->provider->stream;
	l->o->provider->stream = 0;
	ret = provider_chat(l->o->provider, &resp, &sr, NULL, NULL);
	l->o->provider->stream = saved;
	if (ret == 0) {
		account(l, &resp, text.len);
		if (*resp.content && !resp.tool_calls_nr)
			buf_addstr(out, resp.content);
		else
			ret = -1;
	}
	llm_response_release(&resp);
	llm_request_release(&sr);
	buf_release(&text);
	return ret;
}

/*
 * Replace messages [2, to) by a summary appended to the task message, so
 * the conversation goes on with the assistant turn at `to`. Returns the
 * messages removed.
 */
static long summarise(struct loop *l, size_t to, const char **how)
{
	struct buf sum = BUF_INIT, task = BUF_INIT;
	size_t i, k, n = to - 2;

	if (model_summary(l, 2, to, &sum) == 0) {
		*how = "model";
	} else {
		buf_reset(&sum);
		list_turns(l, 2, to, &sum, 4000);
		*how = "list";
	}
	buf_addf(&task, "%s\n\n[forgex: the first %zu messages of this conversation were replaced "
		 "by this summary to save context]\n%s", l->req.messages[1].content, n, sum.buf);
	free(l->req.messages[1].content);
	l->req.messages[1].content = buf_detach(&task, NULL);
	for (i = 2; i < to; i++) {
		struct llm_message *m = &l->req.messages[i];

		free(m->content);
		for (k = 0; k < m->tool_calls_nr; k++) {
			free(m->tool_calls[k].id);
			free(m->tool_calls[k].name);
			free(m->tool_calls[k].arguments);
		}
		free(m->tool_calls);
		free(m->tool_call_id);
		free(m->name);
	}
	memmove(l->req.messages + 2, l->req.messages + to,
		(l->req.messages_nr - to) * sizeof(*l->req.messages));
	l->req.messages_nr -= n;
	buf_release(&sum);
	return (long)n;
}

/*
 * Before a model call: when the request would leave less than `reserve`
 * tokens of the window for the reply, compact it to at most half the
 * window (see agent.h). Returns 0, or -1 with the loop ended when even
 * the smallest form does not fit.
 */
static int fit_context(struct loop *l)
{
	size_t bytes = request_bytes(l), before = bytes, last;
	long limit = l->window - l->reserve, goal = l->window / 2, stubbed = 0, summarised = 0;
	const char *how = NULL;
	json_t *f;

	l->sent_bytes = bytes;
	if (est_tokens(l, bytes) <= limit)
		return 0;
	last = latest_turn(l);
	stubbed += stub_results(l, 2, last, goal, &bytes);
	if (est_tokens(l, bytes) > goal)
		stubbed += stub_assistant(l, last, goal, &bytes);
	bytes = request_bytes(l);
	if (est_tokens(l, bytes) > goal && last < l->req.messages_nr && last > 2) {
		/*
		 * The oldest turns go, up to the latest: the cut is the first
		 * assistant turn after which what stays, with room for the
		 * summary (SUMMARY_ROOM bytes), is under the goal.
		 */
		size_t cut = last, i, removed = 0;

		for (i = 2; i < last; i++) {
			const struct llm_message *m = &l->req.messages[i];
			size_t k;

			if (i > 2 && m->role == LLM_ASSISTANT &&
			    est_tokens(l, bytes - removed + SUMMARY_ROOM) <= goal) {
				cut = i;
				break;
			}
			removed += json_len(m->content) + 64;
			for (k = 0; k < m->tool_calls_nr; k++)
				removed += json_len(m->tool_calls[k].arguments) +
					   strlen(m->tool_calls[k].name) + 64;
			if (removed > bytes)
				removed = bytes;
		}
		summarised = summarise(l, cut, &how);
		bytes = request_bytes(l);
		stubbed += stub_results(l, 2, latest_turn(l), goal, &bytes);
		bytes = request_bytes(l);
	}
	if (est_tokens(l, bytes) > limit) {
		/* the latest turn itself is too large: its results become stubs too */
		stubbed += stub_results(l, 2, l->req.messages_nr, goal, &bytes);
		bytes = request_bytes(l);
	}
	l->sent_bytes = bytes;
	l->out->trimmed += stubbed + summarised;
	l->out->compactions++;
	f = json_object();
	jsonx_set(f, "stubbed", json_integer(stubbed));
	jsonx_set(f, "summarised", json_integer(summarised));
	jsonx_set(f, "tokens_before", json_integer(est_tokens(l, before)));
	jsonx_set(f, "tokens_after", json_integer(est_tokens(l, bytes)));
	jsonx_set(f, "window", json_integer(l->window));
	jsonx_set(f, "summary", how ? jsonx_string(how) : json_null());
	emit(l, "context_compact", f);
	if (est_tokens(l, bytes) > limit) {
		end(l, AGENT_PROVIDER_ERROR, "the request does not fit the model's context window: "
		    "about %ld tokens after compaction, and the window (%ld tokens, from %s) "
		    "leaves %ld for the request; use a larger window (context_window, or the "
		    "server's context size: llama.cpp -c, Ollama num_ctx, vLLM --max-model-len)",
		    est_tokens(l, bytes), l->window, l->window_source, limit);
		l->out->error_code = FX_ELIMIT;
		return -1;
	}
	return 0;
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

static void end(struct loop *l, enum agent_status st, const char *fmt, ...) FX_PRINTF(3, 4);
static void end(struct loop *l, enum agent_status st, const char *fmt, ...)
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
		emit(l, "tool_call", f);
		add_call_summary(&summary, name, args);
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
		emit(l, "tool_result", f);

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
			end(l, AGENT_DONE, NULL);
			ended = 1;
		} else if (guard(l, name, c->arguments, status, &result)) {
			end(l, AGENT_LOOP_GUARD, "the model made the same failing call %d times in a "
			    "row: %s (%s)", AGENT_LOOP_REPEATS, summary.buf,
			    utf8_cut(result.buf, result.len, 200) < result.len ? "see the events"
			    : result.buf);
			ended = 1;
		} else if (cancelled(l)) {
			end(l, AGENT_INTERRUPTED, "interrupted");
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

/* The window, the reply's reserve and the tool result cap, once per run. */
static void window_setup(struct loop *l)
{
	const char *source = NULL, *warning = NULL;
	long w = provider_context_window(l->o->provider, &source, &warning);
	size_t cap;
	json_t *f;

	if (l->o->context_window > 0) {
		w = l->o->context_window;
		source = "agent options";
	}
	l->window = w;
	l->window_source = source;
	l->reserve = w / 8 < 256 ? 256 : w / 8 > 8192 ? 8192 : w / 8;
	l->tok_per_byte = AGENT_TOKENS_PER_BYTE;
	cap = (size_t)((double)(w / 8) / l->tok_per_byte);
	if (cap < 1024)
		cap = 1024;
	if (l->result_max > cap)
		l->result_max = cap;
	if (warning && !l->o->provider->window_warned) {
		strvec_push(&l->out->warnings, warning);
		l->o->provider->window_warned = 1;
	} else {
		warning = NULL;
	}
	f = json_object();
	jsonx_set(f, "tokens", json_integer(w));
	jsonx_set(f, "source", jsonx_string(source));
	jsonx_set(f, "reserve", json_integer(l->reserve));
	jsonx_set(f, "warning", warning ? jsonx_string(warning) : json_null());
	emit(l, "context_window", f);
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
	emit(l, "agent_start", f);
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
	emit(l, "agent_end", f);
}

int agent_run(struct agent_result *out, const struct agent_opts *o)
{
	struct loop l;
	struct buf sys = BUF_INIT, why = BUF_INIT;
	json_t *tools = NULL, *entry;
	long max_turns;
	struct strvec call_errors = STRVEC_INIT;
	int nudges = 0, ret, continued = 0;
	size_t i;

	ret = check_opts(o);
	if (ret < 0)
		return ret;
	memset(&l, 0, sizeof(l));
	*out = (struct agent_result)AGENT_RESULT_INIT;
	l.o = o;
	l.out = out;
	l.local_budget = (struct agent_budget)AGENT_BUDGET_INIT;
	l.budget = o->budget ? o->budget : &l.local_budget;
	llm_request_init(&l.req);
	buf_init(&l.guard_key, 0);
	buf_init(&l.guard_result, 0);
	l.terminal = o->plain_answer ? NULL : role_terminal_tool(o->role);
	l.granted = role_permissions(o->role);
	l.model = o->model && *o->model ? o->model
		: o->provider->model ? o->provider->model : "";
	l.text_mode = o->tool_mode == AGENT_TOOLS_TEXT;
	l.result_max = o->tool_result_max ? o->tool_result_max : AGENT_TOOL_RESULT_MAX;
	if (l.result_max < 256)
		l.result_max = 256;
	strvec_init(&l.tool_names);
	max_turns = o->max_turns > 0 ? o->max_turns : AGENT_MAX_TURNS_DEFAULT;
	out->answer = xstrdup("");
	out->finish_reason = xstrdup("");

	o->tools->role = (int)o->role;
	{
		unsigned edit = role_edit_tools(o->edit_tools, l.model);
		const char *note = role_edit_note(edit);

		tools = role_tools_json_edit(o->tools->registry, (int)o->role, l.granted, l.terminal,
					     edit);
		json_array_foreach(tools, i, entry)
			strvec_push(&l.tool_names, jsonx_str(json_object_get(entry, "function"),
							     "name"));
		buf_addstr(&sys, o->system_prompt ? o->system_prompt : role_prompt(o->role));
		if (note && permissions_permit(l.granted, PERM_WRITE | PERM_DELETE))
			buf_addstr(&sys, note);
	}
	if (o->conversation && o->conversation->messages_nr) {
		/* a conversation goes on: its system prompt and tools stay as they were */
		l.req = *o->conversation;
		*o->conversation = (struct llm_request)LLM_REQUEST_INIT;
		continued = 1;
	}
	if (l.text_mode) {
		add_text_tools(&sys, tools);
	} else {
		struct buf tj = BUF_INIT;

		json_array_foreach(tools, i, entry) {
			json_t *fn = json_object_get(entry, "function");

			if (!continued)
				llm_request_add_tool(&l.req, jsonx_str(fn, "name"),
						     jsonx_str(fn, "description"),
						     json_object_get(fn, "parameters"));
		}
		jsonx_dump(&tj, tools, JSON_COMPACT);
		l.tools_chars = tj.len;
		buf_release(&tj);
	}
	if (!continued)
		llm_request_add(&l.req, LLM_SYSTEM, sys.buf);
	llm_request_add(&l.req, LLM_USER, o->task);
	free(l.req.model);
	l.req.model = o->model && *o->model ? xstrdup(o->model) : NULL;
	l.req.temperature = o->temperature;
	start_event(&l, tools, max_turns);
	window_setup(&l);

	for (;;) {
		struct llm_response resp = LLM_RESPONSE_INIT;
		size_t prompt_chars, k;
		int saved_stream;

		if (cancelled(&l)) {
			end(&l, AGENT_INTERRUPTED, "interrupted");
			break;
		}
		buf_reset(&why);
		if (agent_budget_spent(l.budget, &why)) {
			end(&l, AGENT_BUDGET, "%s", why.buf);
			break;
		}
		if (out->turns >= max_turns) {
			end(&l, AGENT_MAX_TURNS, "%s reached max_turns (%ld) without %s",
			    config_role_name(o->role), max_turns,
			    l.terminal ? "calling its terminal tool" : "an answer");
			break;
		}
		if (fit_context(&l) < 0)
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
			emit(&l, "model_call", f);
			if (ret == FX_EINTR || cancelled(&l)) {
				end(&l, AGENT_INTERRUPTED, "interrupted");
			} else {
				end(&l, AGENT_PROVIDER_ERROR, "%s", err_last());
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
		calibrate(&l, &resp);
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
		account(&l, &resp, prompt_chars);

		if (call_errors.nr) {
			struct buf msg = BUF_INIT;
			json_t *f = json_object();

			jsonx_set(f, "errors", jsonx_from_strvec(&call_errors));
			emit(&l, "text_call_error", f);
			for (k = 0; k < call_errors.nr; k++)
				buf_addf(&msg, "%s%s", k ? "\n\n" : "", call_errors.v[k]);
			if (!resp.tool_calls_nr) {
				llm_request_add(&l.req, LLM_USER, msg.buf);
				buf_release(&msg);
				llm_response_release(&resp);
				if (++l.malformed >= AGENT_LOOP_REPEATS) {
					end(&l, AGENT_LOOP_GUARD, "the model sent %d replies in a row "
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
				end(&l, AGENT_ANSWERED, NULL);
				break;
			}
			if (nudges >= AGENT_NUDGES_MAX) {
				end(&l, AGENT_NO_TERMINAL, "%s answered in plain text %d times without "
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
				emit(&l, "agent_nudge", f);
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
	end_event(&l);
	json_decref(tools);
	if (o->conversation)
		*o->conversation = l.req;
	else
		llm_request_release(&l.req);
	buf_release(&sys);
	buf_release(&why);
	buf_release(&l.guard_key);
	buf_release(&l.guard_result);
	strvec_clear(&l.tool_names);
	strvec_clear(&call_errors);
	agent_budget_release(&l.local_budget);
	return 0;
}

int agent_compact(struct agent_result *out, const struct agent_opts *o)
{
	struct loop l;
	const char *how = NULL;
	size_t before;
	long n = 0;
	json_t *f;

	if (!o || !o->provider || !o->conversation)
		return err_set(FX_EINVAL, "agent_compact: no provider or conversation");
	memset(&l, 0, sizeof(l));
	*out = (struct agent_result)AGENT_RESULT_INIT;
	out->answer = xstrdup("");
	out->finish_reason = xstrdup("");
	l.o = o;
	l.out = out;
	l.local_budget = (struct agent_budget)AGENT_BUDGET_INIT;
	l.budget = o->budget ? o->budget : &l.local_budget;
	l.model = o->model && *o->model ? o->model
		: o->provider->model ? o->provider->model : "";
	l.text_mode = o->tool_mode == AGENT_TOOLS_TEXT;
	l.result_max = AGENT_TOOL_RESULT_MAX;
	strvec_init(&l.tool_names);
	buf_init(&l.guard_key, 0);
	buf_init(&l.guard_result, 0);
	l.req = *o->conversation;
	*o->conversation = (struct llm_request)LLM_REQUEST_INIT;
	free(l.req.model);
	l.req.model = o->model && *o->model ? xstrdup(o->model) : NULL;
	window_setup(&l);
	if (l.req.messages_nr > 2) {
		before = request_bytes(&l);
		n = summarise(&l, l.req.messages_nr, &how);
		out->trimmed = n;
		out->compactions = 1;
		f = json_object();
		jsonx_set(f, "stubbed", json_integer(0));
		jsonx_set(f, "summarised", json_integer(n));
		jsonx_set(f, "tokens_before", json_integer(est_tokens(&l, before)));
		jsonx_set(f, "tokens_after", json_integer(est_tokens(&l, request_bytes(&l))));
		jsonx_set(f, "window", json_integer(l.window));
		jsonx_set(f, "summary", jsonx_string(how));
		emit(&l, "context_compact", f);
	}
	out->status = AGENT_ANSWERED;
	*o->conversation = l.req;
	strvec_clear(&l.tool_names);
	buf_release(&l.guard_key);
	buf_release(&l.guard_result);
	agent_budget_release(&l.local_budget);
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

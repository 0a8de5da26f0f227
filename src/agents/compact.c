/*
 * The model's window and compaction (see "Context control" in agent.h):
 * the window, the reply's reserve and the result cap of a run, the
 * estimate of a request's tokens, and the steps that make a conversation
 * fit (stubs for old results, then old texts and arguments, then a
 * summary of the oldest turns). A conversation with a person is
 * compacted as a conversation: the person's latest message stays whole
 * and the summary says what happened earlier in it (fit_chat()).
 * agent_compact() runs the summary step on a session's conversation at
 * the person's request; agent_fit() (agent.c) measures with
 * compact_measure() whether a message can be sent at all.
 */
#include <stdlib.h>
#include <string.h>

#include "agents/agent.h"
#include "agents/agent_internal.h"
#include "base/jsonx.h"
#include "base/utf8.h"

/* A shortened message keeps at most this much. */
#define STUB_MIN 200
/* Old tool-call arguments longer than this are replaced when the context is full. */
#define ARGS_STUB_MIN 512
/* Bytes a summary of old turns is expected to take, when choosing what it replaces. */
#define SUMMARY_ROOM 2500
/* Bytes of a conversation's summary kept (it stays in every request after it). */
#define SUMMARY_MAX 6000
/* Where a conversation's summary begins in its system prompt. */
#define EARLIER_MARK "\n\n# Earlier in this conversation\n\n"

/* The exact size of a request body. */
static size_t req_bytes(const struct llm_request *req, const char *model, int stream)
{
	json_t *j = llm_request_to_json(req, model, stream);
	struct buf b = BUF_INIT;
	size_t n;

	jsonx_dump(&b, j, JSON_COMPACT);
	n = b.len;
	buf_release(&b);
	json_decref(j);
	return n;
}

/* The exact size of the request body as it stands. */
static size_t request_bytes(const struct loop *l)
{
	return req_bytes(&l->req, l->model, l->o->stream);
}

/* Tokens of window `w` kept free for the reply. */
static long reserve_of(long w)
{
	return w / 8 < 256 ? 256 : w / 8 > 8192 ? 8192 : w / 8;
}

static long est_tokens(const struct loop *l, size_t bytes)
{
	return (long)((double)bytes * l->tok_per_byte) + 1;
}

/* Learn from the server's count how many tokens a byte is; never lower the estimate. */
void compact_calibrate(struct loop *l, const struct llm_response *resp)
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

/*
 * Whether message `i` is one the person wrote: a user message that is no
 * tool result and none of the loop's own notes to the model (a call that
 * could not be read, a nudge).
 */
static int is_person(const struct loop *l, size_t i)
{
	const struct llm_message *m = &l->req.messages[i];

	return m->role == LLM_USER && m->content && !is_tool_result(l, i) &&
	       strncmp(m->content, "Your tool call", 14) &&
	       strncmp(m->content, "You answered without calling a tool", 35);
}

size_t compact_person(const struct loop *l)
{
	size_t i;

	for (i = l->req.messages_nr; i-- > 1;)
		if (is_person(l, i))
			return i;
	return l->req.messages_nr;
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

/*
 * One message too large for any request (a 200,000-character answer, a
 * pasted log): every message of [from, to) longer than a quarter of the
 * goal is cut to its head (three quarters) and tail (one quarter), as
 * tool results are, with a note where the rest was; the conversation then
 * goes on. A run passes every message but the system prompt, the latest
 * turn's too; a conversation never the person's latest message.
 */
static long shorten_huge(struct loop *l, size_t from, size_t to, long goal, size_t *bytes)
{
	size_t max = (size_t)((double)goal / 4 / l->tok_per_byte), i;
	long n = 0;

	if (max < 4 * STUB_MIN)
		max = 4 * STUB_MIN;
	for (i = from; i < to && i < l->req.messages_nr && est_tokens(l, *bytes) > goal; i++) {
		struct llm_message *m = &l->req.messages[i];
		const char *s = m->content;
		size_t len = s ? strlen(s) : 0, h, t;
		struct buf b = BUF_INIT;

		if (len <= max || is_stub(s))
			continue;
		h = utf8_cut(s, len, max / 4 * 3);
		t = utf8_start(s, len, len - max / 4);
		buf_add(&b, s, h);
		buf_addf(&b, "\n[... forgex: %zu bytes of this message were left out to fit the "
			 "model's context window ...]\n", t - h);
		buf_add(&b, s + t, len - t);
		set_content(m, buf_detach(&b, NULL), bytes);
		n++;
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
				loop_call_summary(out, m->tool_calls[k].name, a);
				buf_addch(out, '\n');
				json_decref(a);
			}
		} else if (m->role == LLM_USER && !is_tool_result(l, i) && m->content) {
			buf_addf(out, "- %s: %.*s\n", l->chat && is_person(l, i) ? "the person said"
				 : "you were told", (int)utf8_cut(m->content, strlen(m->content), 300),
				 m->content);
		}
	}
}

/*
 * Ask the model for a summary of messages [from, to): of a run's work on
 * its task, or of a conversation (`earlier`: the summary of what came
 * before them, or NULL). The request holds only what it needs and is cut
 * to half the window. Returns 0 with the text in `out`.
 */
static int model_summary(struct loop *l, size_t from, size_t to, const char *earlier,
			 struct buf *out)
{
	struct llm_request sr = LLM_REQUEST_INIT;
	struct llm_response resp = LLM_RESPONSE_INIT;
	struct buf text = BUF_INIT;
	size_t i, max = (size_t)((double)(l->window / 2) / l->tok_per_byte);
	int ret, saved;

	if (!l->chat)
		buf_addf(&text, "The task:\n%s\n\nThe work so far, oldest first:\n",
			 l->req.messages[1].content ? l->req.messages[1].content : "");
	else if (earlier)
		buf_addf(&text, "What happened before, as summed up then:\n%s\n\nThe conversation "
			 "after that, oldest first:\n", earlier);
	else
		buf_addstr(&text, "The conversation so far, oldest first:\n");
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
	if (l->chat)
		llm_request_add(&sr, LLM_SYSTEM, "You compress the earlier part of a conversation "
				"between a person and a coding assistant so it can go on within a "
				"smaller context. Write a short summary (at most 300 words) of it: "
				"what the person asked for and decided, what was learnt and done (files "
				"read and what matters in them, changes made, commands run and their "
				"outcome), what was left open. Facts only; no tool calls.");
	else
		llm_request_add(&sr, LLM_SYSTEM, "You compress the record of a coding agent's work "
				"so it can go on within a smaller context. Write a short summary (at "
				"most 300 words) of what was learnt and done: files read and what "
				"matters in them, changes made, commands run and their outcome, what is "
				"left to do. Facts only; no tool calls.");
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
		loop_account(l, &resp, text.len);
		if (*resp.content && !resp.tool_calls_nr && l->chat &&
		    strlen(resp.content) > SUMMARY_MAX)
			buf_addf(out, "%.*s [...]", (int)utf8_cut(resp.content, strlen(resp.content),
							       SUMMARY_MAX), resp.content);
		else if (*resp.content && !resp.tool_calls_nr)
			buf_addstr(out, resp.content);
		else
			ret = -1;
	}
	llm_response_release(&resp);
	llm_request_release(&sr);
	buf_release(&text);
	return ret;
}

/* Free messages [from, to) and close the gap. */
static void drop_messages(struct loop *l, size_t from, size_t to)
{
	size_t i, k;

	for (i = from; i < to; i++) {
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
	memmove(l->req.messages + from, l->req.messages + to,
		(l->req.messages_nr - to) * sizeof(*l->req.messages));
	l->req.messages_nr -= to - from;
}

/*
 * Replace messages [2, to) by a summary appended to the task message, so
 * the conversation goes on with the assistant turn at `to`. Returns the
 * messages removed.
 */
static long summarise(struct loop *l, size_t to, const char **how)
{
	struct buf sum = BUF_INIT, task = BUF_INIT;
	size_t n = to - 2;

	if (model_summary(l, 2, to, NULL, &sum) == 0) {
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
	drop_messages(l, 2, to);
	buf_release(&sum);
	return (long)n;
}

/*
 * A conversation: replace messages [1, to) (`to` the person's message
 * that then comes first) by a summary at the end of the system prompt,
 * which sums up an earlier summary there too. Returns the messages
 * removed.
 */
static long summarise_chat(struct loop *l, size_t to, const char **how)
{
	struct llm_message *sys = &l->req.messages[0];
	struct buf sum = BUF_INIT, prompt = BUF_INIT;
	const char *mark, *earlier = NULL;
	size_t n = to - 1;

	if (sys->role != LLM_SYSTEM || !sys->content || to < 2)
		return 0;
	mark = strstr(sys->content, EARLIER_MARK);
	if (mark) {
		/* the old summary, after its note line */
		earlier = strchr(mark + strlen(EARLIER_MARK), '\n');
		earlier = earlier ? earlier + 1 : mark + strlen(EARLIER_MARK);
	}
	if (model_summary(l, 1, to, earlier, &sum) == 0) {
		*how = "model";
	} else {
		buf_reset(&sum);
		if (earlier)
			buf_addf(&sum, "%.*s\n", (int)utf8_cut(earlier, strlen(earlier), 2000),
				 earlier);
		list_turns(l, 1, to, &sum, 4000);
		*how = "list";
	}
	buf_add(&prompt, sys->content, mark ? (size_t)(mark - sys->content) : strlen(sys->content));
	buf_addf(&prompt, EARLIER_MARK "[forgex: what was said and done earlier in this "
		 "conversation (%zu messages), summed up to save context; the messages that follow "
		 "are its latest, the person's latest message whole]\n%s", n, sum.buf);
	free(sys->content);
	sys->content = buf_detach(&prompt, NULL);
	drop_messages(l, 1, to);
	l->person = l->person >= to ? l->person - n : 1;
	buf_release(&sum);
	return (long)n;
}

/* What message `m` takes of a request, about (for choosing a cut). */
static size_t message_bytes(const struct llm_message *m)
{
	size_t n = json_len(m->content) + 64, k;

	for (k = 0; k < m->tool_calls_nr; k++)
		n += json_len(m->tool_calls[k].arguments) + strlen(m->tool_calls[k].name) + 64;
	return n;
}

/*
 * A conversation over the limit: old results become stubs, then messages
 * too large for any request are shortened, then the oldest exchanges are
 * summed up, up to the person's latest message at most; that message is
 * never changed, and the results of the turn it began become stubs last.
 */
static void fit_chat(struct loop *l, size_t *bytes, long goal, long limit, long *stubbed,
		     long *summarised, const char **how)
{
	*stubbed += stub_results(l, 1, l->person, goal, bytes);
	if (est_tokens(l, *bytes) > goal)
		*stubbed += shorten_huge(l, 1, l->person, goal, bytes);
	*bytes = request_bytes(l);
	if (est_tokens(l, *bytes) > goal && l->person > 1 && l->person < l->req.messages_nr) {
		/* the cut: the first of the person's messages from which on what stays fits */
		size_t cut = l->person, i, removed = 0;

		for (i = 1; i < l->person; i++) {
			if (i > 1 && is_person(l, i) &&
			    est_tokens(l, *bytes - removed + SUMMARY_ROOM) <= goal) {
				cut = i;
				break;
			}
			removed += message_bytes(&l->req.messages[i]);
			if (removed > *bytes)
				removed = *bytes;
		}
		*summarised = summarise_chat(l, cut, how);
		*bytes = request_bytes(l);
	}
	if (est_tokens(l, *bytes) > limit) {
		*stubbed += stub_results(l, l->person + 1, l->req.messages_nr, goal, bytes);
		*bytes = request_bytes(l);
	}
	if (est_tokens(l, *bytes) > limit) {
		*stubbed += shorten_huge(l, l->person + 1, l->req.messages_nr, goal, bytes);
		*bytes = request_bytes(l);
	}
}

/*
 * Before a model call: when the request would leave less than `reserve`
 * tokens of the window for the reply, compact it to at most half the
 * window (see agent.h). Returns 0, or -1 with the loop ended when even
 * the smallest form does not fit.
 */
int compact_fit(struct loop *l)
{
	size_t bytes = request_bytes(l), before = bytes, last;
	long limit = l->window - l->reserve, goal = l->window / 2, stubbed = 0, summarised = 0;
	const char *how = NULL;
	json_t *f;

	l->sent_bytes = bytes;
	if (est_tokens(l, bytes) <= limit)
		return 0;
	if (l->chat) {
		fit_chat(l, &bytes, goal, limit, &stubbed, &summarised, &how);
		goto done;
	}
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
	if (est_tokens(l, bytes) > limit) {
		stubbed += shorten_huge(l, 1, l->req.messages_nr, goal, &bytes);
		bytes = request_bytes(l);
	}
done:
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
	loop_emit(l, "context_compact", f);
	if (est_tokens(l, bytes) > limit) {
		loop_end(l, AGENT_PROVIDER_ERROR, "the request does not fit the model's context window: "
		    "about %ld tokens after compaction, and the window (%ld tokens, from %s) "
		    "leaves %ld for the request; use a larger window (context_window, or the "
		    "server's context size: llama.cpp -c, Ollama num_ctx, vLLM --max-model-len)",
		    est_tokens(l, bytes), l->window, l->window_source, limit);
		l->out->error_code = FX_ELIMIT;
		return -1;
	}
	return 0;
}

/* The window, the reply's reserve and the tool result cap, once per run. */
void compact_window_setup(struct loop *l)
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
	l->reserve = reserve_of(w);
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
	loop_emit(l, "context_window", f);
}

void compact_measure(const struct loop *l, struct agent_fit *fit)
{
	const char *source = NULL, *warning = NULL;
	long w = provider_context_window(l->o->provider, &source, &warning);
	const struct llm_message *last = &l->req.messages[l->req.messages_nr - 1];
	struct llm_request least = l->req;
	struct llm_message two[2];

	if (l->o->context_window > 0) {
		w = l->o->context_window;
		source = "agent options";
	}
	fit->window = w;
	fit->window_source = source;
	fit->limit = w - reserve_of(w);
	fit->request = est_tokens(l, request_bytes(l));
	/* the system prompt, the tools and the message: what no compaction makes smaller */
	two[0] = l->req.messages[0];
	two[1] = *last;
	least.messages = two;
	least.messages_nr = least.messages_alloc = 2;
	fit->least = est_tokens(l, req_bytes(&least, l->model, l->o->stream));
	fit->message = est_tokens(l, json_len(last->content) + 32);
}

int agent_compact(struct agent_result *out, const struct agent_opts *o)
{
	struct loop l;
	const char *how = NULL;
	size_t before, bytes;
	long n = 0, stubbed = 0;
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
	l.chat = 1;
	strvec_init(&l.tool_names);
	buf_init(&l.guard_key, 0);
	buf_init(&l.guard_result, 0);
	l.req = *o->conversation;
	*o->conversation = (struct llm_request)LLM_REQUEST_INIT;
	free(l.req.model);
	l.req.model = o->model && *o->model ? xstrdup(o->model) : NULL;
	compact_window_setup(&l);
	l.person = compact_person(&l);
	if (l.req.messages_nr > 2 && l.person < l.req.messages_nr) {
		before = bytes = request_bytes(&l);
		if (l.person > 1)
			n = summarise_chat(&l, l.person, &how);
		/* the latest exchange stays; its results are stubs, a huge message cut */
		bytes = request_bytes(&l);
		stubbed = stub_results(&l, 1, l.req.messages_nr, l.window / 4, &bytes);
		stubbed += shorten_huge(&l, 1, l.req.messages_nr, l.window / 2, &bytes);
		out->trimmed = n + stubbed;
		out->compactions = 1;
		f = json_object();
		jsonx_set(f, "stubbed", json_integer(stubbed));
		jsonx_set(f, "summarised", json_integer(n));
		jsonx_set(f, "tokens_before", json_integer(est_tokens(&l, before)));
		jsonx_set(f, "tokens_after", json_integer(est_tokens(&l, request_bytes(&l))));
		jsonx_set(f, "window", json_integer(l.window));
		jsonx_set(f, "summary", how ? jsonx_string(how) : json_null());
		loop_emit(&l, "context_compact", f);
	}
	out->status = AGENT_ANSWERED;
	*o->conversation = l.req;
	strvec_clear(&l.tool_names);
	buf_release(&l.guard_key);
	buf_release(&l.guard_result);
	agent_budget_release(&l.local_budget);
	return 0;
}

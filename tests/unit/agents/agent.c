/*
 * The agent loop with an in-process scripted provider (no HTTP): options,
 * estimates, streaming, calls after the terminal one, refusals, the cancel
 * flag, the deadline, context control of old arguments, and the parser of
 * text-mode tool calls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/clock.h"
#include "agents/agent.h"
#include "agents/roles.h"
#include "base/jsonx.h"
#include "helpers/testutil.h"

/* One scripted reply. */
struct step {
	const char *text;
	const char *call_name;		/* NULL: no tool call */
	const char *call_args;
	const char *call2_name;		/* a second call in the same reply */
	const char *call2_args;
	int usage;			/* send usage (prompt 10, completion 5) */
};

struct fake {
	const struct step *steps;
	size_t nr, next;
	json_t *bodies;			/* every request body */
	int saw_stream;			/* p->stream of the last call */
	int saw_on_text;		/* whether on_text was passed */
	int fail;			/* answer FX_EPROVIDER */
	int summaries;			/* summary requests answered */
};

static void add_call(struct llm_response *r, const char *id, const char *name, const char *args)
{
	ALLOC_GROW(r->tool_calls, r->tool_calls_nr + 1, r->tool_calls_alloc);
	r->tool_calls[r->tool_calls_nr].id = xstrdup(id);
	r->tool_calls[r->tool_calls_nr].name = xstrdup(name);
	r->tool_calls[r->tool_calls_nr].arguments = xstrdup(args);
	r->tool_calls_nr++;
}

static int fake_chat(struct provider *p, struct llm_response *out, const struct llm_request *req,
		     const json_t *body, llm_text_fn on_text, void *cb_data)
{
	struct fake *f = p->impl;
	const struct step *s;

	if (req->messages_nr && req->messages[0].content &&
	    !strncmp(req->messages[0].content, "You compress", 12)) {
		/* a compaction's summary: answered without taking a step */
		f->summaries++;
		out->content = xstrdup("SUMMARY: listed the folder many times; nothing changed.");
		out->finish_reason = xstrdup("stop");
		out->model = xstrdup("fake-model-2024");
		return 0;
	}
	json_array_append_new(f->bodies, json_deep_copy(body));
	f->saw_stream = p->stream;
	f->saw_on_text = on_text != NULL;
	if (f->fail)
		return err_set(FX_EPROVIDER, "fake: the server is down");
	if (f->next >= f->nr)
		return err_set(FX_EPROVIDER, "fake: no step left");
	s = &f->steps[f->next++];
	out->content = xstrdup(s->text ? s->text : "");
	if (on_text && s->text)
		on_text(cb_data, s->text, strlen(s->text));
	if (s->call_name)
		add_call(out, "c1", s->call_name, s->call_args);
	if (s->call2_name)
		add_call(out, "c2", s->call2_name, s->call2_args);
	out->finish_reason = xstrdup(s->call_name ? "tool_calls" : "stop");
	out->model = xstrdup("fake-model-2024");
	if (s->usage) {
		out->usage.present = 1;
		out->usage.prompt_tokens = 10;
		out->usage.completion_tokens = 5;
		out->usage.total_tokens = 15;
	}
	if (f->next == 1)
		strvec_push(&out->warnings, "fake warning");
	return 0;
}

static const struct provider_ops fake_ops = { "fake", fake_chat, NULL };

struct env {
	struct fake fake;
	struct provider p;
	struct tool_registry reg;
	struct tool_ctx ctx;
	char *ws;
	struct agent_opts o;
	struct agent_result r;
	json_t *events;
	struct buf streamed;
	volatile sig_atomic_t cancel;
};

static void on_event(void *data, const char *type, json_t *fields)
{
	struct env *e = data;

	jsonx_set(fields, "type", jsonx_string(type));
	json_array_append_new(e->events, fields);
}

static void on_text(void *data, const char *text, size_t len)
{
	buf_add(data, text, len);
}

static int setup(void **state)
{
	struct env *e = xcalloc(1, sizeof(*e));

	e->ws = tu_mkdtemp();
	registry_init(&e->reg);
	if (tools_register_builtin(&e->reg) < 0 || roles_register_tools(&e->reg) < 0 ||
	    tool_ctx_init(&e->ctx, &e->reg, e->ws) < 0)
		fail_msg("%s", err_last());
	e->fake.bodies = json_array();
	e->p.ops = &fake_ops;
	e->p.name = xstrdup("fake");
	e->p.model = xstrdup("fake-model");
	e->p.impl = &e->fake;
	e->events = json_array();
	buf_init(&e->streamed, 0);
	e->o = (struct agent_opts)AGENT_OPTS_INIT;
	e->o.role = ROLE_BUILDER;
	e->o.task = "Do it.";
	e->o.provider = &e->p;
	e->o.tools = &e->ctx;
	e->o.on_event = on_event;
	e->o.event_data = e;
	e->o.cancel = &e->cancel;
	e->r = (struct agent_result)AGENT_RESULT_INIT;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	agent_result_release(&e->r);
	json_decref(e->fake.bodies);
	json_decref(e->events);
	tool_ctx_release(&e->ctx);
	registry_release(&e->reg);
	buf_release(&e->streamed);
	free(e->p.name);
	free(e->p.model);
	free(e->p.window_source);
	free(e->p.window_warning);
	tu_rmtree(e->ws);
	free(e);
	return 0;
}

static void script(struct env *e, const struct step *steps, size_t nr)
{
	e->fake.steps = steps;
	e->fake.nr = nr;
}

static json_t *event_of(struct env *e, const char *type)
{
	json_t *ev;
	size_t i;

	json_array_foreach(e->events, i, ev)
		if (!strcmp(jsonx_str(ev, "type"), type))
			return ev;
	return NULL;
}

static void test_agent_bad_options(void **state)
{
	struct env *e = *state;
	struct agent_opts o = e->o;

	e->r.turns = 77;
	o.task = "";
	assert_int_equal(agent_run(&e->r, &o), FX_EINVAL);
	o = e->o;
	o.provider = NULL;
	assert_int_equal(agent_run(&e->r, &o), FX_EINVAL);
	o = e->o;
	o.tools = NULL;
	assert_int_equal(agent_run(&e->r, &o), FX_EINVAL);
	o = e->o;
	o.role = ROLE__COUNT;
	assert_int_equal(agent_run(&e->r, &o), FX_EINVAL);
	o = e->o;
	o.tool_mode = (enum agent_tool_mode)7;
	assert_int_equal(agent_run(&e->r, &o), FX_EINVAL);
	assert_int_equal(agent_run(&e->r, NULL), FX_EINVAL);
	/* nothing was filled, nothing was asked */
	assert_int_equal(e->r.turns, 77);
	assert_int_equal(json_array_size(e->fake.bodies), 0);
	assert_int_equal(json_array_size(e->events), 0);
}

static void test_agent_status_names(void **state)
{
	(void)state;
	assert_string_equal(agent_status_name(AGENT_DONE), "done");
	assert_string_equal(agent_status_name(AGENT_ANSWERED), "answered");
	assert_string_equal(agent_status_name(AGENT_NO_TERMINAL), "no_terminal");
	assert_string_equal(agent_status_name(AGENT_MAX_TURNS), "max_turns");
	assert_string_equal(agent_status_name(AGENT_BUDGET), "budget");
	assert_string_equal(agent_status_name(AGENT_LOOP_GUARD), "loop_guard");
	assert_string_equal(agent_status_name(AGENT_PROVIDER_ERROR), "provider_error");
	assert_string_equal(agent_status_name(AGENT_INTERRUPTED), "interrupted");
	assert_string_equal(agent_status_name(AGENT_STATUS__COUNT), "unknown");
}

static void test_agent_estimates_usage_without_one(void **state)
{
	struct env *e = *state;
	struct agent_budget b = AGENT_BUDGET_INIT;
	char text[401];
	struct step s[1];
	json_t *u;

	memset(text, 'x', 400);
	text[400] = '\0';
	memset(s, 0, sizeof(s));
	s[0].text = text;
	script(e, s, 1);
	e->o.plain_answer = 1;
	e->o.budget = &b;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_ANSWERED);
	u = json_object_get(event_of(e, "model_call"), "usage");
	assert_true(json_is_true(json_object_get(u, "estimated")));
	assert_int_equal(jsonx_int(u, "completion_tokens", -1), 101);
	assert_true(jsonx_int(u, "prompt_tokens", -1) > 100);	/* the prompt and the tools */
	assert_true(b.estimated);
	assert_int_equal(b.tokens_used, e->r.usage.total_tokens);
	assert_string_equal(e->r.model, "fake-model-2024");
	assert_string_equal(e->r.finish_reason, "stop");
	assert_int_equal(e->r.warnings.nr, 1);
	assert_string_equal(e->r.warnings.v[0], "fake warning");
	agent_budget_release(&b);
}

static void test_agent_streaming_is_the_callers_choice(void **state)
{
	struct env *e = *state;
	struct step s[2] = {
		{ "Reading. ", "read_file", "{\"path\": \"a\"}", NULL, NULL, 1 },
		{ "Answer.", NULL, NULL, NULL, NULL, 1 },
	};

	tu_write(e->ws, "a", "content\n");
	script(e, s, 2);
	e->o.role = ROLE_ARCHITECT;
	e->o.plain_answer = 1;
	e->o.stream = 1;
	e->o.on_text = on_text;
	e->o.text_data = &e->streamed;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_ANSWERED);
	assert_true(e->fake.saw_stream);
	assert_true(e->fake.saw_on_text);
	assert_int_equal(e->p.stream, 0);	/* restored */
	assert_string_equal(e->streamed.buf, "Reading. Answer.");
	assert_string_equal(e->r.answer, "Answer.");
	assert_true(json_is_true(json_object_get(json_array_get(e->fake.bodies, 0), "stream")));

	agent_result_release(&e->r);
	e->fake.next = 0;
	e->p.stream = 1;
	e->o.stream = 0;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_false(e->fake.saw_stream);
	assert_false(e->fake.saw_on_text);
	assert_int_equal(e->p.stream, 1);
}

static void test_agent_calls_after_terminal_are_not_run(void **state)
{
	struct env *e = *state;
	struct step s[1] = {
		{ "", "finish", "{\"summary\": \"done\"}", "write_file",
		  "{\"path\": \"late.txt\", \"content\": \"x\"}", 1 },
	};

	script(e, s, 1);
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_DONE);
	assert_int_equal(e->r.tool_calls, 1);
	assert_null(tu_read(e->ws, "late.txt"));
	assert_int_equal(e->ctx.changed.nr, 0);
}

static void test_agent_refusals_go_back_to_the_model(void **state)
{
	struct env *e = *state;
	struct step s[3] = {
		{ "", "no_such_tool", "{}", "read_file", "{not json", 1 },
		{ "", "submit_plan", "{\"summary\": \"x\"}", NULL, NULL, 1 },
		{ "", "finish", "{\"summary\": \"ok\"}", NULL, NULL, 1 },
	};
	json_t *msgs, *ev;
	const char *c1, *c2;
	size_t i, n = 0;

	script(e, s, 3);
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_DONE);
	msgs = json_object_get(json_array_get(e->fake.bodies, 1), "messages");
	c1 = jsonx_str(json_array_get(msgs, 3), "content");
	c2 = jsonx_str(json_array_get(msgs, 4), "content");
	assert_non_null(strstr(c1, "refused: unknown tool 'no_such_tool'"));
	assert_non_null(strstr(c2, "refused: invalid arguments for read_file: not JSON"));
	msgs = json_object_get(json_array_get(e->fake.bodies, 2), "messages");
	assert_non_null(strstr(jsonx_str(json_array_get(msgs, 6), "content"),
			       "submit_plan is not available to this role; end with finish"));
	/* the event carries the text the model sent when it is not JSON */
	json_array_foreach(e->events, i, ev)
		if (!strcmp(jsonx_str(ev, "type"), "tool_call") && n++ == 1)
			assert_string_equal(jsonx_str(ev, "arguments"), "{not json");
}

static void test_agent_cancelled_before_asking(void **state)
{
	struct env *e = *state;
	struct step s[1] = { { "hi", NULL, NULL, NULL, NULL, 1 } };

	script(e, s, 1);
	e->cancel = 1;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_INTERRUPTED);
	assert_int_equal(e->r.turns, 0);
	assert_int_equal(json_array_size(e->fake.bodies), 0);
	assert_string_equal(e->r.error, "interrupted");
	assert_string_equal(jsonx_str(event_of(e, "agent_end"), "status"), "interrupted");
}

static void test_agent_deadline(void **state)
{
	struct env *e = *state;
	struct agent_budget b = AGENT_BUDGET_INIT;
	struct step s[1] = { { "hi", NULL, NULL, NULL, NULL, 1 } };

	script(e, s, 1);
	b.deadline = clk_mono_s() - 0.001;
	e->o.budget = &b;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_BUDGET);
	assert_non_null(strstr(e->r.error, "wall-clock"));
	assert_int_equal(json_array_size(e->fake.bodies), 0);
	agent_budget_release(&b);
}

static void test_agent_provider_failure(void **state)
{
	struct env *e = *state;

	e->fake.fail = 1;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_PROVIDER_ERROR);
	assert_int_equal(e->r.error_code, FX_EPROVIDER);
	assert_string_equal(e->r.error, "fake: the server is down");
	assert_int_equal(e->r.turns, 1);
}

/* Whether request `next` begins with request `prev`, less the "]}" that closes prev's messages. */
static int extends(const json_t *prev, const json_t *next)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	int ok;

	jsonx_dump(&a, prev, JSON_COMPACT);
	jsonx_dump(&b, next, JSON_COMPACT);
	ok = a.len > 2 && !strcmp(a.buf + a.len - 2, "]}") && b.len > a.len &&
	     !memcmp(a.buf, b.buf, a.len - 2);
	buf_release(&a);
	buf_release(&b);
	return ok;
}

static size_t events_named(const struct env *e, const char *type, json_t **last)
{
	size_t i, n = 0;
	json_t *ev;

	json_array_foreach(e->events, i, ev) {
		if (!strcmp(jsonx_str(ev, "type"), type)) {
			n++;
			if (last)
				*last = ev;
		}
	}
	return n;
}

/*
 * Requests only grow until the window is nearly full; then one compaction
 * step stubs the oldest large arguments, bringing the request under half
 * the window, and the requests grow from there again.
 */
static void test_agent_compacts_in_one_step(void **state)
{
	struct env *e = *state;
	struct buf big = BUF_INIT, args[4];
	struct step s[6];
	json_t *msgs, *calls, *ev = NULL;
	size_t i;

	for (i = 0; i < 6000; i++)
		buf_addch(&big, 'a' + (char)(i % 26));
	memset(s, 0, sizeof(s));
	for (i = 0; i < 4; i++) {
		buf_init(&args[i], 0);
		buf_addf(&args[i], "{\"path\": \"big%zu.txt\", \"content\": \"%s\"}", i, big.buf);
		s[i].call_name = "write_file";
		s[i].call_args = args[i].buf;
	}
	s[4].call_name = "list_dir";
	s[4].call_args = "{}";
	s[5].call_name = "finish";
	s[5].call_args = "{\"summary\": \"wrote\"}";
	script(e, s, 6);
	e->o.context_window = 10000;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	if (e->r.status != AGENT_DONE)
		fail_msg("%s", e->r.error);
	/* the writes happened in full */
	for (i = 0; i < 4; i++) {
		char name[16], *text;

		snprintf(name, sizeof(name), "big%zu.txt", i);
		text = tu_read(e->ws, name);
		assert_string_equal(text, big.buf);
		free(text);
	}
	assert_int_equal(json_array_size(e->fake.bodies), 6);
	/* one compaction, before the fifth request; every other request extends the one before */
	assert_int_equal(events_named(e, "context_compact", &ev), 1);
	assert_int_equal(e->r.compactions, 1);
	assert_int_equal(jsonx_int(ev, "turn", 0), 4);
	assert_true(jsonx_int(ev, "tokens_after", 0) <= 5000);
	assert_true(jsonx_int(ev, "tokens_before", 0) > 10000 - 1250);
	assert_int_equal(jsonx_int(ev, "summarised", -1), 0);
	for (i = 1; i < 6; i++)
		if (extends(json_array_get(e->fake.bodies, i - 1), json_array_get(e->fake.bodies, i)) !=
		    (i != 4))
			fail_msg("request %zu %s request %zu", i + 1, i == 4 ? "extends" :
				 "does not extend", i);
	/* after it, the oldest arguments are stubs that are still JSON objects */
	msgs = json_object_get(json_array_get(e->fake.bodies, 4), "messages");
	calls = json_object_get(json_array_get(msgs, 2), "tool_calls");
	{
		const char *a = jsonx_str(json_object_get(json_array_get(calls, 0), "function"),
					  "arguments");
		json_t *j = json_loads(a, 0, NULL);

		assert_true(json_is_object(j));
		assert_non_null(strstr(a, "removed to save context"));
		json_decref(j);
	}
	/* never the system prompt or the task */
	assert_string_equal(jsonx_str(json_array_get(msgs, 0), "content"), role_prompt(ROLE_BUILDER));
	assert_string_equal(jsonx_str(json_array_get(msgs, 1), "content"), "Do it.");
	/* nor the latest turn */
	calls = json_object_get(json_array_get(msgs, json_array_size(msgs) - 2), "tool_calls");
	assert_string_equal(jsonx_str(json_object_get(json_array_get(calls, 0), "function"),
				      "arguments"), args[3].buf);
	for (i = 0; i < 4; i++)
		buf_release(&args[i]);
	buf_release(&big);
}

/*
 * Many small turns whose results are too small to stub: compaction then
 * replaces the oldest turns by a summary the model writes, appended to the
 * task; the conversation goes on from an assistant turn.
 */
static void test_agent_compaction_summarises(void **state)
{
	struct env *e = *state;
	struct step s[41];
	json_t *ev = NULL, *msgs = NULL, *b;
	size_t i, nr, big = 0;

	memset(s, 0, sizeof(s));
	for (i = 0; i < 40; i++) {
		s[i].text = "Looking at the folder once more, to be sure nothing was missed.";
		s[i].call_name = "list_dir";
		s[i].call_args = "{}";
	}
	s[40].text = "It is empty.";
	script(e, s, 41);
	e->o.role = ROLE_ARCHITECT;
	e->o.plain_answer = 1;
	e->o.context_window = 3000;
	e->o.max_turns = 50;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	if (e->r.status != AGENT_ANSWERED)
		fail_msg("%s", e->r.error ? e->r.error : agent_status_name(e->r.status));
	assert_true(e->fake.summaries >= 1);
	assert_true(events_named(e, "context_compact", &ev) >= 1);
	assert_string_equal(jsonx_str(ev, "summary"), "model");
	assert_true(jsonx_int(ev, "summarised", 0) > 0);
	/* no request went over the window less the reply's reserve (375 tokens) */
	nr = json_array_size(e->fake.bodies);
	for (i = 0; i < nr; i++) {
		struct buf d = BUF_INIT;

		b = json_array_get(e->fake.bodies, i);
		jsonx_dump(&d, b, JSON_COMPACT);
		assert_true((double)d.len * AGENT_TOKENS_PER_BYTE <= 3000 - 375);
		if (strstr(jsonx_str(json_array_get(json_object_get(b, "messages"), 1), "content"),
			   "SUMMARY: listed"))
			msgs = json_object_get(b, "messages");
		big = d.len > big ? d.len : big;
		buf_release(&d);
	}
	assert_non_null(msgs);
	assert_non_null(strstr(jsonx_str(json_array_get(msgs, 1), "content"), "Do it.\n\n[forgex: "
			       "the first "));
	assert_string_equal(jsonx_str(json_array_get(msgs, 2), "role"), "assistant");
	/* compaction steps are rare: most requests extend the one before */
	assert_true(e->r.compactions * 5 <= (int)nr);
}

/* A plain answer that shows call markup for a tool that does not exist is an answer. */
static void test_agent_answer_showing_markup(void **state)
{
	struct env *e = *state;
	struct step s[1] = {
		{ "Qwen writes:\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
		  "{\"city\": \"Paris\"}}\n</tool_call>", NULL, NULL, NULL, NULL, 0 },
	};

	script(e, s, 1);
	e->o.role = ROLE_ARCHITECT;
	e->o.plain_answer = 1;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_ANSWERED);
	assert_non_null(strstr(e->r.answer, "get_weather"));
	assert_int_equal(events_named(e, "text_call_error", NULL), 0);
}

/* A window that cannot hold even the first request: nothing is sent. */
static void test_agent_refuses_a_request_over_the_window(void **state)
{
	struct env *e = *state;
	struct step s[1] = { { "never", NULL, NULL, NULL, NULL, 0 } };

	script(e, s, 1);
	e->o.context_window = 1000;	/* far less than the tools alone */
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_PROVIDER_ERROR);
	assert_int_equal(e->r.error_code, FX_ELIMIT);
	assert_non_null(strstr(e->r.error, "does not fit the model's context window"));
	assert_non_null(strstr(e->r.error, "1000 tokens, from agent options"));
	assert_int_equal(json_array_size(e->fake.bodies), 0);
}

/* Native mode: a reply whose text holds a Hermes call runs the call. */
static void test_agent_native_call_in_text(void **state)
{
	struct env *e = *state;
	struct step s[3] = {
		{ "Let me look.\n<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {}}\n</tool_call>",
		  NULL, NULL, NULL, NULL, 0 },
		{ "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \"x\"\n</tool_call>"
		  "<tool_call>\n{\"name\": \"finish\", \"arguments\": {\"summary\": \"ok\" \"x\"}}"
		  "</tool_call>", NULL, NULL, NULL, NULL, 0 },
		{ NULL, "finish", "{\"summary\": \"looked\"}", NULL, NULL, 0 },
	};
	json_t *msgs, *m, *ev = NULL;

	script(e, s, 3);
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	if (e->r.status != AGENT_DONE)
		fail_msg("%s", e->r.error);
	assert_int_equal(e->r.tool_calls, 3);	/* list_dir, list_dir (repaired), finish */
	msgs = json_object_get(json_array_get(e->fake.bodies, 1), "messages");
	/* the call went back as a structured call, the prose as the text */
	m = json_array_get(msgs, 2);
	assert_string_equal(jsonx_str(m, "content"), "Let me look.");
	assert_string_equal(jsonx_str(json_object_get(json_array_get(json_object_get(m,
			    "tool_calls"), 0), "function"), "name"), "list_dir");
	assert_string_equal(jsonx_str(json_array_get(msgs, 3), "role"), "tool");
	/* an id Mistral's templates accept: nine letters and digits */
	assert_string_equal(jsonx_str(json_array_get(json_object_get(m, "tool_calls"), 0), "id"),
			    "tx0010001");
	assert_string_equal(jsonx_str(json_array_get(msgs, 3), "tool_call_id"), "tx0010001");
	/* the second reply: one call repaired (missing brace) and run, one refused with the fix */
	assert_int_equal(events_named(e, "text_call_error", &ev), 1);
	msgs = json_object_get(json_array_get(e->fake.bodies, 2), "messages");
	m = json_array_get(msgs, json_array_size(msgs) - 1);
	assert_string_equal(jsonx_str(m, "role"), "user");
	assert_non_null(strstr(jsonx_str(m, "content"), "Your tool call to finish (hermes format) "
			       "could not be read, so nothing was run: its JSON is malformed: a "
			       "comma is missing"));
}

static void parse(struct llm_response *r, const char *text)
{
	*r = (struct llm_response)LLM_RESPONSE_INIT;
	r->content = xstrdup(text);
}

static void test_agent_parse_text_calls(void **state)
{
	struct llm_response r;
	struct strvec names = STRVEC_INIT;

	(void)state;
	strvec_push(&names, "read_file");
	strvec_push(&names, "search");
	strvec_push(&names, "list_dir");
	strvec_push(&names, "finish");
	parse(&r, "First:\n```json\n{\"tool\": \"read_file\", \"arguments\": {\"path\": \"a.c\"}}\n```\n"
		  "and\n```\n{\"name\": \"search\", \"arguments\": {\"pattern\": \"x\"}}\n```\n"
		  "not a call:\n```json\n{\"path\": \"b\"}\n```\n```c\nint x;\n```\n"
		  "```JSON\n{\"tool\": \"list_dir\"}\n```");
	assert_int_equal(agent_parse_text_calls(&r, 4, &names, NULL), 3);
	assert_int_equal(r.tool_calls_nr, 3);
	assert_string_equal(r.tool_calls[0].id, "text-4-1");
	assert_string_equal(r.tool_calls[0].name, "read_file");
	assert_string_equal(r.tool_calls[0].arguments, "{\"path\":\"a.c\"}");
	assert_string_equal(r.tool_calls[1].name, "search");
	assert_string_equal(r.tool_calls[2].name, "list_dir");
	assert_string_equal(r.tool_calls[2].arguments, "{}");
	assert_string_equal(r.tool_calls[2].id, "text-4-3");
	llm_response_release(&r);

	/* a bare object; arguments given as JSON text */
	parse(&r, "  {\"tool\": \"finish\", \"arguments\": \"{\\\"summary\\\": \\\"s\\\"}\"}\n");
	assert_int_equal(agent_parse_text_calls(&r, 1, &names, NULL), 1);
	assert_string_equal(r.tool_calls[0].arguments, "{\"summary\":\"s\"}");
	llm_response_release(&r);

	/* none: plain text, broken JSON, an unclosed fence, arguments of the wrong type */
	parse(&r, "I am done.");
	assert_int_equal(agent_parse_text_calls(&r, 1, &names, NULL), 0);
	llm_response_release(&r);
	parse(&r, "```json\n{\"tool\": \"x\", \n```");
	assert_int_equal(agent_parse_text_calls(&r, 1, &names, NULL), 0);
	llm_response_release(&r);
	parse(&r, "```json\n{\"tool\": \"x\"}");
	assert_int_equal(agent_parse_text_calls(&r, 1, &names, NULL), 0);
	llm_response_release(&r);
	parse(&r, "```json\n{\"tool\": \"x\", \"arguments\": [1]}\n```");
	assert_int_equal(agent_parse_text_calls(&r, 1, &names, NULL), 0);
	llm_response_release(&r);
	parse(&r, "```json\n{\"tool\": 5}\n```");
	assert_int_equal(agent_parse_text_calls(&r, 1, &names, NULL), 0);
	llm_response_release(&r);
	strvec_clear(&names);
}

static void test_agent_text_mode_nudge_shows_the_form(void **state)
{
	struct env *e = *state;
	struct step s[2] = {
		{ "Finished.", NULL, NULL, NULL, NULL, 1 },
		{ "```json\n{\"tool\": \"finish\", \"arguments\": {\"summary\": \"ok\"}}\n```", NULL,
		  NULL, NULL, NULL, 1 },
	};
	json_t *msgs;

	script(e, s, 2);
	e->o.tool_mode = AGENT_TOOLS_TEXT;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
	assert_int_equal(e->r.status, AGENT_DONE);
	msgs = json_object_get(json_array_get(e->fake.bodies, 1), "messages");
	assert_non_null(strstr(jsonx_str(json_array_get(msgs, 3), "content"),
			       "{\"tool\": \"finish\", \"arguments\": {...}}"));
	assert_string_equal(jsonx_str(json_array_get(msgs, 2), "content"), "Finished.");
	assert_string_equal(jsonx_str(event_of(e, "agent_start"), "tool_mode"), "text");
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_agent_bad_options),
		cmocka_unit_test(test_agent_status_names),
		T(test_agent_estimates_usage_without_one),
		T(test_agent_streaming_is_the_callers_choice),
		T(test_agent_calls_after_terminal_are_not_run),
		T(test_agent_refusals_go_back_to_the_model),
		T(test_agent_cancelled_before_asking),
		T(test_agent_deadline),
		T(test_agent_provider_failure),
		T(test_agent_compacts_in_one_step),
		T(test_agent_refuses_a_request_over_the_window),
		T(test_agent_compaction_summarises),
		T(test_agent_answer_showing_markup),
		T(test_agent_native_call_in_text),
		cmocka_unit_test(test_agent_parse_text_calls),
		T(test_agent_text_mode_nudge_shows_the_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

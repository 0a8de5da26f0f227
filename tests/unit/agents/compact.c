/*
 * A conversation's compaction with an in-process provider (no HTTP):
 * agent_fit() on a message that cannot fit and on one that can, a message
 * the loop could not send taken back out of the conversation, and
 * agent_compact() keeping the person's latest message, not a tool result
 * in text mode, whole.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "agents/agent.h"
#include "agents/roles.h"
#include "base/jsonx.h"
#include "helpers/testutil.h"

struct fake {
	const char *summary;	/* the summary the model writes */
	int asked;		/* requests other than for a summary */
	int summaries;
	struct buf summary_asked;	/* the last summary request's user message */
};

static int fake_chat(struct provider *p, struct llm_response *out, const struct llm_request *req,
		     const json_t *body, llm_text_fn on_text, void *cb_data)
{
	struct fake *f = p->impl;

	(void)body;
	(void)on_text;
	(void)cb_data;
	out->finish_reason = xstrdup("stop");
	out->model = xstrdup("fake-model");
	if (req->messages_nr == 2 && !strncmp(req->messages[0].content, "You compress", 12)) {
		f->summaries++;
		buf_reset(&f->summary_asked);
		buf_addstr(&f->summary_asked, req->messages[1].content);
		out->content = xstrdup(f->summary);
		return 0;
	}
	f->asked++;
	out->content = xstrdup("An answer.");
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
	struct llm_request conv;
};

static int setup(void **state)
{
	struct env *e = xcalloc(1, sizeof(*e));

	e->ws = tu_mkdtemp();
	registry_init(&e->reg);
	if (tools_register_builtin(&e->reg) < 0 || roles_register_tools(&e->reg) < 0 ||
	    tool_ctx_init(&e->ctx, &e->reg, e->ws) < 0)
		fail_msg("%s", err_last());
	buf_init(&e->fake.summary_asked, 0);
	e->fake.summary = "SUMMARY: they talked.";
	e->p.ops = &fake_ops;
	e->p.name = xstrdup("fake");
	e->p.model = xstrdup("fake-model");
	e->p.impl = &e->fake;
	llm_request_init(&e->conv);
	e->o = (struct agent_opts)AGENT_OPTS_INIT;
	e->o.role = ROLE_BUILDER;
	e->o.plain_answer = 1;
	e->o.system_prompt = "SYSTEM PROMPT";
	e->o.provider = &e->p;
	e->o.tools = &e->ctx;
	e->o.context_window = 8192;
	e->o.conversation = &e->conv;
	e->r = (struct agent_result)AGENT_RESULT_INIT;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	agent_result_release(&e->r);
	llm_request_release(&e->conv);
	tool_ctx_release(&e->ctx);
	registry_release(&e->reg);
	buf_release(&e->fake.summary_asked);
	free(e->p.name);
	free(e->p.model);
	free(e->p.window_source);
	free(e->p.window_warning);
	tu_rmtree(e->ws);
	free(e);
	return 0;
}

static void say(struct env *e, const char *message)
{
	agent_result_release(&e->r);
	e->o.task = message;
	assert_int_equal(agent_run(&e->r, &e->o), 0);
}

static char *text_of(size_t bytes, const char *word)
{
	struct buf b = BUF_INIT;

	while (b.len < bytes)
		buf_addf(&b, "%s ", word);
	return buf_detach(&b, NULL);
}

/* agent_fit(): a message that cannot fit however the rest is compacted, and one that can. */
static void test_fit_says_what_cannot_fit(void **state)
{
	struct env *e = *state;
	struct agent_fit fit;
	char *huge = text_of(100000, "word"), *big = text_of(12000, "some");

	say(e, "hello");
	assert_int_equal(e->r.status, AGENT_ANSWERED);
	assert_int_equal(e->conv.messages_nr, 3);
	e->o.task = huge;
	assert_int_equal(agent_fit(&fit, &e->o), 0);
	assert_int_equal(fit.window, 8192);
	assert_int_equal(fit.limit, 8192 - 1024);
	assert_true(fit.message > fit.limit);
	assert_true(fit.least > fit.message && fit.request > fit.least);
	/* the conversation as it was */
	assert_int_equal(e->conv.messages_nr, 3);
	assert_string_equal(e->conv.messages[2].content, "An answer.");
	/* 12 KB fits with the system prompt and tools: compaction makes room for the rest */
	e->o.task = big;
	assert_int_equal(agent_fit(&fit, &e->o), 1);
	assert_true(fit.least <= fit.limit);
	assert_int_equal(e->conv.messages_nr, 3);
	/* the first message of a conversation: none yet after the check */
	llm_request_release(&e->conv);
	llm_request_init(&e->conv);
	e->o.task = huge;
	assert_int_equal(agent_fit(&fit, &e->o), 0);
	assert_int_equal(e->conv.messages_nr, 0);
	assert_int_equal(e->fake.asked, 1);
	free(huge);
	free(big);
}

/*
 * The message fits alone, but not beside the summary of what came before
 * it (the summary is kept to 6000 bytes): nothing is sent and the message
 * is not left in the conversation.
 */
static void test_run_takes_back_what_it_cannot_send(void **state)
{
	struct env *e = *state;
	char *long_summary = text_of(30000, "summed"), *earlier = text_of(5000, "earlier");
	char *msg;
	struct agent_fit fit;
	long rest;

	say(e, earlier);
	assert_int_equal(e->fake.asked, 1);
	/* a message that leaves 1000 tokens of what a request may take */
	e->o.task = "x";
	assert_int_equal(agent_fit(&fit, &e->o), 1);
	rest = fit.least - fit.message;
	msg = text_of((size_t)((double)(fit.limit - rest - 1000) / AGENT_TOKENS_PER_BYTE),
		      "asked");
	e->o.task = msg;
	assert_int_equal(agent_fit(&fit, &e->o), 1);
	e->fake.summary = long_summary;
	say(e, msg);
	assert_int_equal(e->fake.summaries, 1);
	assert_int_equal(e->r.status, AGENT_PROVIDER_ERROR);
	assert_int_equal(e->r.error_code, FX_ELIMIT);
	assert_int_equal(e->r.refused, 1);
	assert_int_equal(e->r.turns, 0);
	assert_int_equal(e->fake.asked, 1);
	assert_non_null(strstr(e->r.error, "does not fit the model's context window"));
	/* what came before was summed up (the summary cut); the message is not left over */
	assert_int_equal(e->conv.messages_nr, 1);
	assert_non_null(strstr(e->conv.messages[0].content, "summed summed"));
	assert_non_null(strstr(e->conv.messages[0].content, " [...]"));
	assert_true(strlen(e->conv.messages[0].content) < 6000 + 1000);
	assert_null(strstr(e->conv.messages[0].content, "asked asked"));
	/* the summary was asked of the conversation, not of a task */
	assert_non_null(strstr(e->fake.summary_asked.buf, "The conversation so far, oldest first:"));
	assert_null(strstr(e->fake.summary_asked.buf, "The task"));
	assert_null(strstr(e->fake.summary_asked.buf, "asked asked"));
	free(long_summary);
	free(msg);
	free(earlier);
}

/*
 * /compact in text mode: the person's latest message is the one kept
 * whole and first, not the tool result that came after it, and the
 * summary ends the system prompt; compacting again sums up the summary.
 */
static void test_compact_keeps_the_person_not_a_result(void **state)
{
	struct env *e = *state;
	char *result = text_of(5000, "output");
	struct buf r = BUF_INIT;
	const char *sys;

	llm_request_add(&e->conv, LLM_SYSTEM, "SYSTEM PROMPT");
	llm_request_add(&e->conv, LLM_USER, "first: what is in a.txt?");
	llm_request_add(&e->conv, LLM_ASSISTANT, "It says alpha.");
	llm_request_add(&e->conv, LLM_USER, "second: and in b.txt?");
	llm_request_add(&e->conv, LLM_ASSISTANT, "```json\n{\"tool\": \"read_file\", "
			"\"arguments\": {\"path\": \"b.txt\"}}\n```");
	buf_addf(&r, "Result of read_file (call text-1-1, ok):\n%s", result);
	llm_request_add(&e->conv, LLM_USER, r.buf);
	llm_request_add(&e->conv, LLM_ASSISTANT, "It says beta.");
	e->o.tool_mode = AGENT_TOOLS_TEXT;
	e->o.context_window = 4096;
	assert_int_equal(agent_compact(&e->r, &e->o), 0);
	assert_int_equal(e->fake.summaries, 1);
	assert_non_null(strstr(e->fake.summary_asked.buf, "first: what is in a.txt?"));
	assert_null(strstr(e->fake.summary_asked.buf, "second"));
	assert_int_equal(e->conv.messages_nr, 5);
	sys = e->conv.messages[0].content;
	assert_true(!strncmp(sys, "SYSTEM PROMPT\n\n# Earlier in this conversation\n\n", 47));
	assert_non_null(strstr(sys, "SUMMARY: they talked."));
	assert_string_equal(e->conv.messages[1].content, "second: and in b.txt?");
	/* the result after it is a stub now; the answer stays */
	assert_non_null(strstr(e->conv.messages[3].content, "was removed to save context"));
	assert_string_equal(e->conv.messages[4].content, "It says beta.");

	/* a second /compact after another exchange: one summary, of the summary too */
	llm_request_add(&e->conv, LLM_USER, "third: thanks");
	llm_request_add(&e->conv, LLM_ASSISTANT, "You are welcome.");
	e->fake.summary = "SUMMARY TWO.";
	agent_result_release(&e->r);
	assert_int_equal(agent_compact(&e->r, &e->o), 0);
	assert_non_null(strstr(e->fake.summary_asked.buf, "What happened before, as summed up "
			       "then:\nSUMMARY: they talked."));
	assert_non_null(strstr(e->fake.summary_asked.buf, "second: and in b.txt?"));
	sys = e->conv.messages[0].content;
	assert_non_null(strstr(sys, "SUMMARY TWO."));
	assert_null(strstr(sys, "SUMMARY: they talked."));
	assert_string_equal(e->conv.messages[1].content, "third: thanks");
	assert_int_equal(e->conv.messages_nr, 3);
	buf_release(&r);
	free(result);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fit_says_what_cannot_fit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_takes_back_what_it_cannot_send, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_compact_keeps_the_person_not_a_result, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The replay provider: answers in order, mismatches strict and lenient. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "llm/provider.h"
#include "llm/transcript.h"

struct fixture {
	char *dir;
	struct buf path;
	struct config cfg;
	struct buf texts;
};

static void on_text(void *data, const char *text, size_t len)
{
	struct buf *b = data;

	buf_add(b, text, len);
	buf_addch(b, '|');
}

static void question(struct llm_request *req, const char *q)
{
	llm_request_add(req, LLM_SYSTEM, "You answer questions.");
	llm_request_add(req, LLM_USER, q);
}

/* Record exchanges: "q1" -> "a1" (text), "q2" -> tool call, "q3" -> failure. */
static void record(struct fixture *f)
{
	struct transcript *t = NULL;
	struct transcript_exchange x;
	struct llm_response r = LLM_RESPONSE_INIT;
	struct llm_request req = LLM_REQUEST_INIT;
	json_t *body;

	assert_int_equal(transcript_open(&t, f->path.buf), 0);
	memset(&x, 0, sizeof(x));
	x.provider = "live";
	x.provider_type = "openai";
	x.stream = 1;
	x.context_window = 8192;	/* the recorded run fitted its requests to 8192 tokens */

	question(&req, "q1");
	body = llm_request_to_json(&req, "live-model", 1);
	r.content = xstrdup("a1 is the answer");
	r.finish_reason = xstrdup("stop");
	r.model = xstrdup("live-model");
	x.request = body;
	x.response = &r;
	assert_int_equal(transcript_record(t, &x), 0);
	json_decref(body);
	llm_response_release(&r);

	llm_request_add(&req, LLM_ASSISTANT, "a1 is the answer");
	llm_request_add(&req, LLM_USER, "q2");
	body = llm_request_to_json(&req, "live-model", 1);
	r.content = xstrdup("");
	r.finish_reason = xstrdup("tool_calls");
	r.model = xstrdup("");
	r.tool_calls = xcalloc(1, sizeof(*r.tool_calls));
	r.tool_calls_nr = r.tool_calls_alloc = 1;
	r.tool_calls[0].id = xstrdup("call_7");
	r.tool_calls[0].name = xstrdup("read_file");
	r.tool_calls[0].arguments = xstrdup("{\"path\":\"x\"}");
	r.usage.present = 1;
	r.usage.total_tokens = 99;
	x.request = body;
	assert_int_equal(transcript_record(t, &x), 0);
	json_decref(body);
	llm_response_release(&r);

	llm_request_add(&req, LLM_USER, "q3");
	body = llm_request_to_json(&req, "live-model", 1);
	x.request = body;
	x.response = NULL;
	x.code = FX_EPROVIDER;
	x.error = "provider 'live' (...): HTTP 500: boom";
	assert_int_equal(transcript_record(t, &x), 0);
	json_decref(body);
	llm_request_release(&req);
	transcript_free(t);
}

static void setup(struct fixture *f, const char *mode)
{
	struct buf toml = BUF_INIT;

	memset(f, 0, sizeof(*f));
	f->dir = tu_mkdtemp();
	buf_init(&f->path, 0);
	buf_init(&f->texts, 0);
	buf_addf(&f->path, "%s/t.jsonl", f->dir);
	record(f);
	config_init(&f->cfg);
	buf_addf(&toml, "[providers.rec]\ntype = \"replay\"\ntranscript = \"%s\"\n"
		 "replay_mode = \"%s\"\nmodel = \"other-model\"\nstream = false\n", f->path.buf, mode);
	if (config_apply_string(&f->cfg, toml.buf, toml.len, "t.toml", CFG_PROJECT) < 0)
		fail_msg("%s", err_last());
	buf_release(&toml);
}

static void teardown(struct fixture *f)
{
	config_release(&f->cfg);
	buf_release(&f->path);
	buf_release(&f->texts);
	tu_rmtree(f->dir);
}

static void test_replay_answers_in_order(void **state)
{
	struct fixture f;
	struct provider *p = NULL;
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	setup(&f, "strict");
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	assert_string_equal(p->ops->type, "replay");
	question(&req, "q1");
	/* a different model and stream setting do not count as a different request */
	assert_int_equal(provider_chat(p, &r, &req, on_text, &f.texts), 0);
	assert_string_equal(r.content, "a1 is the answer");
	assert_string_equal(f.texts.buf, "a1 is the answer|");
	assert_int_equal(r.warnings.nr, 0);
	llm_request_add_reply(&req, &r);
	llm_request_add(&req, LLM_USER, "q2");
	assert_int_equal(provider_chat(p, &r, &req, on_text, &f.texts), 0);
	assert_int_equal(r.tool_calls_nr, 1);
	assert_string_equal(r.tool_calls[0].id, "call_7");
	assert_string_equal(r.tool_calls[0].arguments, "{\"path\":\"x\"}");
	assert_string_equal(r.finish_reason, "tool_calls");
	assert_int_equal(r.usage.total_tokens, 99);
	/* a recorded failure fails again, with its message */
	llm_request_add(&req, LLM_USER, "q3");
	assert_int_equal(provider_chat(p, &r, &req, NULL, NULL), FX_EPROVIDER);
	assert_string_equal(err_last(), "provider 'live' (...): HTTP 500: boom");
	/* and past the end there is nothing to answer with */
	assert_int_equal(provider_chat(p, &r, &req, NULL, NULL), FX_EMISMATCH);
	assert_non_null(strstr(err_last(), "request 4 has no recorded exchange"));
	assert_non_null(strstr(err_last(), "holds 3"));
	llm_response_release(&r);
	llm_request_release(&req);
	provider_free(p);
	teardown(&f);
}

static void test_replay_strict_mismatch_names_path(void **state)
{
	struct fixture f;
	struct provider *p = NULL;
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response r = LLM_RESPONSE_INIT;
	char long_q[200];

	(void)state;
	setup(&f, "strict");
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	memset(long_q, 'z', sizeof(long_q) - 1);
	long_q[sizeof(long_q) - 1] = '\0';
	question(&req, long_q);
	assert_int_equal(provider_chat(p, &r, &req, on_text, &f.texts), FX_EMISMATCH);
	assert_non_null(strstr(err_last(), "replay: exchange 1 differs from the recording at "
			       "messages[1].content: recorded \"q1\", now \"zzzz"));
	assert_non_null(strstr(err_last(), "zzz...")); /* abbreviated */
	assert_true(strlen(err_last()) < 250);
	assert_string_equal(f.texts.buf, "");
	assert_null(r.content);
	provider_free(p);
	llm_request_release(&req);

	/* an extra message, a changed setting */
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	question(&req, "q1");
	llm_request_add(&req, LLM_USER, "and more");
	assert_int_equal(provider_chat(p, &r, &req, NULL, NULL), FX_EMISMATCH);
	assert_non_null(strstr(err_last(), "at messages[2]: recorded (absent), now {"));
	provider_free(p);
	llm_request_release(&req);
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	question(&req, "q1");
	req.temperature = 0.5;
	assert_int_equal(provider_chat(p, &r, &req, NULL, NULL), FX_EMISMATCH);
	assert_non_null(strstr(err_last(), "at temperature: recorded (absent), now 0.5"));
	provider_free(p);
	llm_request_release(&req);
	teardown(&f);
}

static void test_replay_lenient_warns_and_answers(void **state)
{
	struct fixture f;
	struct provider *p = NULL;
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	setup(&f, "lenient");
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	question(&req, "something else");
	assert_int_equal(provider_chat(p, &r, &req, on_text, &f.texts), 0);
	assert_string_equal(r.content, "a1 is the answer");
	assert_string_equal(f.texts.buf, "a1 is the answer|");
	assert_int_equal(r.warnings.nr, 1);
	assert_non_null(strstr(r.warnings.v[0], "messages[1].content: recorded \"q1\", "
			       "now \"something else\""));
	llm_response_release(&r);
	llm_request_release(&req);
	provider_free(p);
	teardown(&f);
}

/* The window of the recorded run, so replayed requests are fitted the same; config wins. */
static void test_replay_uses_the_recorded_window(void **state)
{
	static const char more[] = "[providers.rec]\ncontext_window = 4000\n";
	struct fixture f;
	struct provider *p = NULL;
	const char *source = NULL;
	char *line;

	(void)state;
	setup(&f, "strict");
	line = tu_read(f.dir, "t.jsonl");
	assert_non_null(strstr(line, "\"context_window\":8192"));
	free(line);
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	assert_int_equal(provider_context_window(p, &source, NULL), 8192);
	assert_string_equal(source, "the transcript");
	provider_free(p);
	if (config_apply_string(&f.cfg, more, strlen(more), "u.toml", CFG_FLAG) < 0)
		fail_msg("%s", err_last());
	assert_int_equal(provider_open(&p, &f.cfg, "rec", NULL), 0);
	assert_int_equal(provider_context_window(p, &source, NULL), 4000);
	assert_string_equal(source, "config");
	provider_free(p);
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replay_uses_the_recorded_window),
		cmocka_unit_test(test_replay_answers_in_order),
		cmocka_unit_test(test_replay_strict_mismatch_names_path),
		cmocka_unit_test(test_replay_lenient_warns_and_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

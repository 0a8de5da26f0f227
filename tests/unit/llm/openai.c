/* The "openai" provider over real HTTP against build/mockllm on 127.0.0.1. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonx.h"
#include "config/config.h"
#include "llm/provider.h"
#include "mockllm/mockctl.h"

#define KEY_VAR "FX_TEST_LLM_KEY"
#define KEY_VALUE "sk-test-abcdefghijklmnopqrstuvwxyz012345"

struct fixture {
	struct mock mock;
	struct config cfg;
	struct provider *p;
	struct buf texts;	/* text deltas, each followed by '|' */
	int deltas;
};

static void on_text(void *data, const char *text, size_t len)
{
	struct fixture *f = data;

	buf_add(&f->texts, text, len);
	buf_addch(&f->texts, '|');
	f->deltas++;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Start the mock with `script` and open provider "mock" with `settings` added. */
static void start(struct fixture *f, const char *script, const char *settings)
{
	struct buf t = BUF_INIT;

	memset(f, 0, sizeof(*f));
	buf_init(&f->texts, 0);
	mock_start(&f->mock, script);
	config_init(&f->cfg);
	buf_addf(&t, "[providers.mock]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		 "api_key_env = \"" KEY_VAR "\"\nmax_retries = 2\ntimeout_seconds = 10\n",
		 f->mock.base_url);
	if (config_apply_string(&f->cfg, t.buf, t.len, "user.toml", CFG_USER) < 0)
		fail_msg("config: %s", err_last());
	buf_reset(&t);
	buf_addf(&t, "[providers.mock]\n%s\n", settings ? settings : "");
	if (config_apply_string(&f->cfg, t.buf, t.len, "test.toml", CFG_USER) < 0)
		fail_msg("config: %s", err_last());
	if (provider_open(&f->p, &f->cfg, "mock", NULL) < 0)
		fail_msg("provider_open: %s", err_last());
	buf_release(&t);
}

static void finish(struct fixture *f)
{
	provider_free(f->p);
	config_release(&f->cfg);
	mock_release(&f->mock);
	buf_release(&f->texts);
	unsetenv(KEY_VAR);
}

static int ask(struct fixture *f, struct llm_response *r, const char *question)
{
	struct llm_request req = LLM_REQUEST_INIT;
	int ret;

	llm_request_add(&req, LLM_SYSTEM, "You are a test.");
	llm_request_add(&req, LLM_USER, question);
	ret = provider_chat(f->p, r, &req, on_text, f);
	llm_request_release(&req);
	return ret;
}

static const json_t *request_n(json_t *reqs, size_t i)
{
	return json_array_get(reqs, i);
}

static void test_openai_streams_text(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	json_t *reqs;
	const json_t *rq, *h, *body;

	(void)state;
	start(&f, "[{\"text\": \"The answer is forty-two.\", \"delta_chars\": 5}]", NULL);
	assert_int_equal(ask(&f, &r, "What is the answer?"), 0);
	assert_string_equal(r.content, "The answer is forty-two.");
	assert_string_equal(f.texts.buf, "The a|nswer| is f|orty-|two.|");
	assert_string_equal(r.finish_reason, "stop");
	assert_true(r.usage.present);
	assert_true(r.usage.prompt_tokens > 0);
	assert_int_equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
	assert_int_equal(r.http_status, 200);
	assert_int_equal(r.retries, 0);

	reqs = mock_requests(&f.mock);
	assert_int_equal(json_array_size(reqs), 1);
	rq = request_n(reqs, 0);
	assert_string_equal(jsonx_str(rq, "method"), "POST");
	assert_string_equal(jsonx_str(rq, "path"), "/v1/chat/completions");
	h = json_object_get(rq, "headers");
	assert_null(json_object_get(h, "authorization"));	/* no key set: no header */
	assert_string_equal(jsonx_str(h, "accept"), "text/event-stream");
	assert_string_equal(jsonx_str(h, "content-type"), "application/json");
	body = json_object_get(rq, "body");
	assert_string_equal(jsonx_str(body, "model"), "mock-model");
	assert_true(jsonx_bool(body, "stream", 0));
	assert_true(jsonx_bool(json_object_get(body, "stream_options"), "include_usage", 0));
	assert_string_equal(jsonx_str(json_array_get(json_object_get(body, "messages"), 1),
				      "content"), "What is the answer?");
	json_decref(reqs);
	llm_response_release(&r);
	finish(&f);
}

static void test_openai_key_and_extra_headers(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	json_t *reqs;
	const json_t *h;

	(void)state;
	setenv(KEY_VAR, KEY_VALUE, 1);
	start(&f, "[{\"text\": \"hi\"}, {\"text\": \"again\"}]",
	      "headers = [\"X-Title: forgex tests\", \"HTTP-Referer: https://example.invalid\"]");
	assert_int_equal(ask(&f, &r, "q1"), 0);
	/* the second request reuses the connection (keep-alive) and still works */
	assert_int_equal(ask(&f, &r, "q2"), 0);
	assert_string_equal(r.content, "again");
	reqs = mock_requests(&f.mock);
	assert_int_equal(json_array_size(reqs), 2);
	h = json_object_get(request_n(reqs, 1), "headers");
	assert_string_equal(jsonx_str(h, "authorization"), "Bearer " KEY_VALUE);
	assert_string_equal(jsonx_str(h, "x-title"), "forgex tests");
	assert_string_equal(jsonx_str(h, "http-referer"), "https://example.invalid");
	json_decref(reqs);
	llm_response_release(&r);
	finish(&f);
}

static void test_openai_parallel_tool_calls(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	start(&f, "[{\"tool_calls\": ["
		  "{\"id\": \"call_1\", \"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.c\", \"lines\": [1, 20]}},"
		  "{\"id\": \"call_2\", \"name\": \"search\", \"arguments\": \"{\\\"pattern\\\": \\\"TODO|FIXME\\\"}\"}],"
		  " \"delta_chars\": 2, \"interleave\": true, \"write_bytes\": 7}]", NULL);
	assert_int_equal(ask(&f, &r, "look"), 0);
	assert_int_equal(r.tool_calls_nr, 2);
	assert_string_equal(r.tool_calls[0].id, "call_1");
	assert_string_equal(r.tool_calls[0].name, "read_file");
	assert_string_equal(r.tool_calls[0].arguments, "{\"path\":\"src/main.c\",\"lines\":[1,20]}");
	assert_string_equal(r.tool_calls[1].id, "call_2");
	assert_string_equal(r.tool_calls[1].name, "search");
	assert_string_equal(r.tool_calls[1].arguments, "{\"pattern\": \"TODO|FIXME\"}");
	assert_string_equal(r.finish_reason, "tool_calls");
	assert_string_equal(r.content, "");
	assert_int_equal(f.deltas, 0);
	llm_response_release(&r);
	finish(&f);
}

static void test_openai_crlf_comments_odd_splits(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	start(&f, "[{\"events\": [{\"comment\": \" keep-alive\"},"
		  "\"{\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"content\\\":\\\"caf\\u00e9 \\\"}}]}\","
		  "\"{\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"content\\\":\\\"ol\\u00e9\\\"},\\\"finish_reason\\\":\\\"stop\\\"}]}\","
		  "\"[DONE]\"], \"line_end\": \"\\r\\n\", \"write_bytes\": 3}]", NULL);
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_string_equal(r.content, "caf\xc3\xa9 ol\xc3\xa9");
	assert_false(r.usage.present);	/* this server sent none */
	llm_response_release(&r);
	finish(&f);
}

static void test_openai_not_streamed(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	json_t *reqs;

	(void)state;
	start(&f, "[{\"text\": \"whole reply\", \"usage\": {\"prompt_tokens\": 3, "
		  "\"completion_tokens\": 4, \"total_tokens\": 7}}, {\"text\": \"ignored stream\", "
		  "\"stream\": false, \"usage\": false}]", "stream = false");
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_string_equal(r.content, "whole reply");
	assert_int_equal(r.usage.total_tokens, 7);
	assert_int_equal(f.deltas, 0);	/* nothing streamed */
	reqs = mock_requests(&f.mock);
	assert_true(json_is_false(json_object_get(json_object_get(request_n(reqs, 0), "body"),
						  "stream")));
	assert_string_equal(jsonx_str(json_object_get(request_n(reqs, 0), "headers"), "accept"),
			    "application/json");
	json_decref(reqs);
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_string_equal(r.content, "ignored stream");
	assert_false(r.usage.present);
	llm_response_release(&r);
	finish(&f);

	/* a server that answers a streamed request with a whole JSON reply */
	start(&f, "[{\"text\": \"plain json\", \"stream\": false}]", NULL);
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_string_equal(r.content, "plain json");
	llm_response_release(&r);
	finish(&f);
}

static void test_openai_429_retry_after(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	double t0;

	(void)state;
	start(&f, "[{\"status\": 429, \"headers\": {\"Retry-After\": \"1\"}}, {\"text\": \"finally\"}]",
	      NULL);
	t0 = now();
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_true(now() - t0 >= 0.9);
	assert_true(now() - t0 < 5);
	assert_string_equal(r.content, "finally");
	assert_int_equal(r.retries, 1);
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 2);
	llm_response_release(&r);
	finish(&f);
}

static void test_openai_500_gives_up_after_max_retries(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	const char *m;

	(void)state;
	start(&f, "[{\"status\": 500, \"repeat\": -1}]", "max_retries = 3");
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	m = err_last();
	assert_non_null(strstr(m, "provider 'mock'"));
	assert_non_null(strstr(m, f.mock.base_url));
	assert_non_null(strstr(m, "model mock-model"));
	assert_non_null(strstr(m, "HTTP 500: mock error 500"));
	assert_non_null(strstr(m, "gave up after 3 retries"));
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 4);
	assert_null(r.content);
	finish(&f);
}

static void test_openai_401_names_the_key_variable(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	start(&f, "[{\"status\": 401, \"body\": \"{\\\"error\\\": {\\\"message\\\": \\\"Incorrect API key provided\\\"}}\"},"
		  " {\"status\": 401, \"body\": \"bad key " KEY_VALUE "\"}]", NULL);
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "HTTP 401: Incorrect API key provided"));
	assert_non_null(strstr(err_last(), "$" KEY_VAR ", which is not set"));
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 1);	/* not retried */
	provider_free(f.p);
	setenv(KEY_VAR, KEY_VALUE, 1);
	assert_int_equal(provider_open(&f.p, &f.cfg, "mock", NULL), 0);
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "check the key in $" KEY_VAR));
	/* the server echoed the key in its error text; the message does not */
	assert_non_null(strstr(err_last(), "HTTP 401: bad key [REDACTED]"));
	assert_null(strstr(err_last(), KEY_VALUE));
	assert_null(strstr(err_last(), "abcdefghijklmnop"));
	finish(&f);
}

static void test_openai_4xx_fail_at_once(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	start(&f, "[{\"status\": 404, \"body\": \"{\\\"error\\\": {\\\"message\\\": \\\"model 'mock-model' not found\\\"}}\"},"
		  " {\"status\": 400, \"body\": \"context length exceeded\", \"headers\": {\"Content-Type\": \"text/plain\"}},"
		  " {\"status\": 403}]", NULL);
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "HTTP 404: model 'mock-model' not found"));
	assert_non_null(strstr(err_last(), "check base_url"));
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "HTTP 400: context length exceeded"));
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "HTTP 403"));
	assert_non_null(strstr(err_last(), KEY_VAR));
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 3);
	finish(&f);
}

static void test_openai_dropped_stream_is_an_error(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	double t0;

	(void)state;
	start(&f, "[{\"text\": \"This reply will be cut in the middle\", \"delta_chars\": 4,"
		  " \"drop_after_bytes\": 400}]", NULL);
	t0 = now();
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_true(now() - t0 < 3);
	assert_non_null(strstr(err_last(), "broke in the middle of the reply"));
	assert_true(f.deltas > 0);
	/* text already shown is never asked for again */
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 1);
	finish(&f);

	/* a connection lost after the reply was whole is no error */
	start(&f, "[{\"raw\": [\"data: {\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":"
		  "{\\\"content\\\":\\\"complete\\\"},\\\"finish_reason\\\":\\\"stop\\\"}]}\\n\\n\","
		  " \"data: [DONE]\\n\\n\"], \"drop_after_bytes\": 1000000}]", NULL);
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_string_equal(r.content, "complete");
	llm_response_release(&r);
	finish(&f);

	/* cut cleanly at an event boundary: no [DONE], no finish_reason */
	start(&f, "[{\"text\": \"partial\", \"finish_reason\": null, \"done\": false, \"usage\": false}]",
	      NULL);
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "ended before the reply was complete"));
	finish(&f);
}

static void test_openai_idle_timeout(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	double t0;

	(void)state;
	/* timeout_seconds bounds the whole call, retries included: no 2nd attempt */
	start(&f, "[{\"hang\": true, \"repeat\": -1}]", "timeout_seconds = 1\nmax_retries = 4");
	t0 = now();
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_true(now() - t0 < 3);
	assert_non_null(strstr(err_last(), "no answer within 1 seconds"));
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 1);
	finish(&f);
}

/* A stream that stalls is a transient fault: the attempt ends after idle_timeout_seconds and is retried. */
static void test_openai_stall_is_retried(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	double t0;

	(void)state;
	start(&f, "[{\"text\": \"late\", \"delays_ms\": [4000]}, {\"text\": \"on time\"}]",
	      "timeout_seconds = 30\nidle_timeout_seconds = 1\nmax_retries = 2");
	t0 = now();
	assert_int_equal(ask(&f, &r, "q"), 0);
	assert_true(now() - t0 < 3.5);
	assert_string_equal(r.content, "on time");
	assert_int_equal(r.retries, 1);
	assert_int_equal(mock_count(&f.mock, "/chat/completions"), 2);
	llm_response_release(&r);
	finish(&f);

	/* every attempt stalls: the whole call still ends at timeout_seconds */
	start(&f, "[{\"hang\": true, \"repeat\": -1}]",
	      "timeout_seconds = 3\nidle_timeout_seconds = 1\nmax_retries = 20");
	t0 = now();
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_true(now() - t0 < 5);
	assert_true(mock_count(&f.mock, "/chat/completions") >= 2);
	finish(&f);
}

static void test_openai_connection_refused(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	start(&f, "[]", "max_retries = 1");
	mock_stop(&f.mock);
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "onnect"));
	assert_non_null(strstr(err_last(), "gave up after 1 retry"));
	finish(&f);
}

static void test_openai_malformed_replies(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;

	(void)state;
	start(&f, "[{\"body\": \"{\\\"choices\\\": [ oops\"},"
		  " {\"events\": [\"{not json\"]},"
		  " {\"events\": [\"{\\\"error\\\": {\\\"message\\\": \\\"upstream overloaded\\\"}}\"]},"
		  " {\"text\": \"\"},"
		  " {\"raw\": [\"data: {\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"content\\\":\\\"x\\\"}}]}\\n\\n\","
		  "           \"garbage without end\"]}]", "max_retries = 0");
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "malformed reply"));
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "malformed reply"));
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "upstream overloaded"));
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "neither text nor tool calls"));
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_null(r.content);
	finish(&f);
}

static void test_openai_retry_after_too_long(void **state)
{
	struct fixture f;
	struct llm_response r = LLM_RESPONSE_INIT;
	double t0 = now();

	(void)state;
	start(&f, "[{\"status\": 503, \"headers\": {\"Retry-After\": \"3600\"}}]", NULL);
	assert_int_equal(ask(&f, &r, "q"), FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "asks to wait 3600 s"));
	assert_true(now() - t0 < 3);
	finish(&f);
}

struct canceller {
	volatile sig_atomic_t flag;
	long after_ms;
};

static void *cancel_later(void *arg)
{
	struct canceller *c = arg;
	struct timespec ts = { c->after_ms / 1000, (c->after_ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	c->flag = 1;
	return NULL;
}

static void test_openai_cancel_is_prompt(void **state)
{
	const char *scripts[] = {
		"[{\"hang\": true}]",					/* waiting for a reply */
		"[{\"status\": 429, \"headers\": {\"Retry-After\": \"30\"}}]",	/* backing off */
		"[{\"text\": \"slow stream\", \"delta_chars\": 1, \"event_delay_ms\": 400}]",
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(scripts); i++) {
		struct fixture f;
		struct llm_response r = LLM_RESPONSE_INIT;
		struct canceller c = { 0, 300 };
		pthread_t t;
		double t0;

		start(&f, scripts[i], "timeout_seconds = 60");
		provider_set_cancel(f.p, &c.flag);
		pthread_create(&t, NULL, cancel_later, &c);
		t0 = now();
		assert_int_equal(ask(&f, &r, "q"), FX_EINTR);
		assert_true(now() - t0 < 1.0);
		assert_non_null(strstr(err_last(), "interrupted"));
		pthread_join(t, NULL);
		finish(&f);
	}
}

static void test_openai_list_models(void **state)
{
	struct fixture f;
	struct strvec models = STRVEC_INIT;

	(void)state;
	start(&f, "{\"models\": [\"alpha\", \"mock-model\"], \"steps\": []}", NULL);
	assert_int_equal(provider_list_models(&models, config_provider(&f.cfg, "mock"), 2000), 0);
	assert_int_equal(models.nr, 2);
	assert_string_equal(models.v[1], "mock-model");
	strvec_clear(&models);
	mock_stop(&f.mock);
	assert_int_equal(provider_list_models(&models, config_provider(&f.cfg, "mock"), 2000),
			 FX_EPROVIDER);
	assert_non_null(strstr(err_last(), "cannot reach"));
	finish(&f);
}

/* The window: each kind of server, as it says it; asked once; the configuration wins. */
static void test_openai_context_window(void **state)
{
	static const struct {
		const char *script, *settings;
		long tokens;
		const char *source;
		size_t asked;	/* questions the mock received */
		int warns;
	} cases[] = {
		{ "{\"server\": \"vllm\", \"max_model_len\": 12288, \"steps\": []}", NULL, 12288,
		  "vLLM /v1/models", 1, 0 },
		{ "{\"server\": \"llamacpp\", \"n_ctx\": 8192, \"steps\": []}", NULL, 8192,
		  "llama.cpp /props", 2, 0 },
		{ "{\"server\": \"ollama\", \"num_ctx\": 20000, \"context_length\": 131072, "
		  "\"steps\": []}", NULL, 20000, "Ollama /api/show", 3, 0 },
		{ "{\"server\": \"ollama\", \"context_length\": 131072, \"steps\": []}", NULL, 4096,
		  "Ollama /api/show", 4, 1 },
		/* no num_ctx in the model, but loaded with 32768 (OLLAMA_CONTEXT_LENGTH): no warning */
		{ "{\"server\": \"ollama\", \"context_length\": 131072, \"loaded_context\": 32768, "
		  "\"steps\": []}", NULL, 32768, "Ollama /api/show", 4, 0 },
		{ "{\"server\": \"ollama\", \"num_ctx\": 2048, \"context_length\": 131072, "
		  "\"steps\": []}", "type = \"ollama\"", 32768, "Ollama /api/show", 1, 0 },
		{ "{\"server\": \"ollama\", \"num_ctx\": 2048, \"context_length\": 131072, "
		  "\"steps\": []}", "type = \"ollama\"\ncontext_window = 500000", 131072, "config", 1, 1 },
		{ "[]", NULL, 32768, "default", 3, 0 },
		/* a gateway that answers every POST with 200 is not taken for Ollama */
		{ "{\"server\": \"proxy\", \"steps\": []}", NULL, 32768, "default", 3, 0 },
		/* probe_window = "never": nothing is asked */
		{ "{\"server\": \"vllm\", \"steps\": []}", "probe_window = \"never\"", 32768, "default",
		  0, 0 },
		{ "{\"server\": \"vllm\", \"steps\": []}", "context_window = 4000", 4000, "config", 0, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fixture f;
		const char *source = NULL, *warning = NULL;
		json_t *all;
		long w;

		start(&f, cases[i].script, cases[i].settings);
		w = provider_context_window(f.p, &source, &warning);
		if (w != cases[i].tokens || strcmp(source, cases[i].source))
			fail_msg("case %zu: %ld tokens from %s, want %ld from %s", i, w, source,
				 cases[i].tokens, cases[i].source);
		assert_int_equal(!!warning, cases[i].warns);
		/* asked once: a second call asks nothing */
		assert_int_equal(provider_context_window(f.p, NULL, NULL), w);
		all = mock_all_requests(&f.mock);
		if (json_array_size(all) != cases[i].asked)
			fail_msg("case %zu: %zu questions, want %zu", i, json_array_size(all),
				 cases[i].asked);
		json_decref(all);
		finish(&f);
	}
}

/* A server elsewhere is not asked for its window unless probe_window = "always". */
static void test_openai_remote_is_not_probed(void **state)
{
	struct config cfg;
	struct provider *p;
	const char *source = NULL;
	/* TEST-NET-1: nothing answers there, so a question would take its whole 3 s */
	static const char t[] = "[providers.far]\nbase_url = \"http://192.0.2.1:9/v1\"\n"
				"model = \"m\"\n";
	double t0;

	(void)state;
	config_init(&cfg);
	if (config_apply_string(&cfg, t, strlen(t), "user.toml", CFG_USER) < 0 ||
	    provider_open(&p, &cfg, "far", NULL) < 0)
		fail_msg("%s", err_last());
	t0 = now();
	assert_int_equal(provider_context_window(p, &source, NULL), 131072);
	assert_string_equal(source, "default");
	assert_true(now() - t0 < 1);
	provider_free(p);
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_context_window),
		cmocka_unit_test(test_openai_remote_is_not_probed),
		cmocka_unit_test(test_openai_streams_text),
		cmocka_unit_test(test_openai_key_and_extra_headers),
		cmocka_unit_test(test_openai_parallel_tool_calls),
		cmocka_unit_test(test_openai_crlf_comments_odd_splits),
		cmocka_unit_test(test_openai_not_streamed),
		cmocka_unit_test(test_openai_429_retry_after),
		cmocka_unit_test(test_openai_500_gives_up_after_max_retries),
		cmocka_unit_test(test_openai_401_names_the_key_variable),
		cmocka_unit_test(test_openai_4xx_fail_at_once),
		cmocka_unit_test(test_openai_dropped_stream_is_an_error),
		cmocka_unit_test(test_openai_idle_timeout),
		cmocka_unit_test(test_openai_stall_is_retried),
		cmocka_unit_test(test_openai_connection_refused),
		cmocka_unit_test(test_openai_malformed_replies),
		cmocka_unit_test(test_openai_retry_after_too_long),
		cmocka_unit_test(test_openai_cancel_is_prompt),
		cmocka_unit_test(test_openai_list_models),
	};

	unsetenv(KEY_VAR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

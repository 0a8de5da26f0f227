/* Provider plumbing: opening, backoff, Retry-After, local URLs, requests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include <curl/curl.h>

#include "config/config.h"
#include "llm/provider.h"

static void test_backoff_grows_with_jitter(void **state)
{
	int a;

	(void)state;
	/* rnd 0 gives the fixed half, a large rnd the most */
	assert_int_equal(llm_backoff_ms(0, -1, 0), 250);
	assert_int_equal(llm_backoff_ms(0, -1, 250), 500);
	assert_int_equal(llm_backoff_ms(0, -1, 251), 250);	/* wraps within the window */
	assert_int_equal(llm_backoff_ms(1, -1, 0), 500);
	assert_int_equal(llm_backoff_ms(2, -1, 0), 1000);
	assert_int_equal(llm_backoff_ms(3, -1, 1000), 3000);
	assert_int_equal(llm_backoff_ms(3, -1, 2000), 4000);
	/* capped at 30 s however many attempts */
	assert_int_equal(llm_backoff_ms(6, -1, 0), 15000);
	assert_int_equal(llm_backoff_ms(50, -1, 15000), 30000);
	for (a = 0; a < 40; a++) {
		long lo = llm_backoff_ms(a, -1, 0), hi = llm_backoff_ms(a, -1, 0xffffffffu);

		assert_true(lo >= 250 && lo <= 15000);
		assert_true(hi >= lo && hi <= 30000);
	}
	/* the server's Retry-After wins */
	assert_int_equal(llm_backoff_ms(0, 1000, 12345), 1000);
	assert_int_equal(llm_backoff_ms(5, 0, 12345), 0);
}

static void test_retry_after_forms(void **state)
{
	long long now = (long long)curl_getdate("Wed, 21 Oct 2015 07:28:00 GMT", NULL);

	(void)state;
	assert_int_equal(llm_parse_retry_after("1", now), 1000);
	assert_int_equal(llm_parse_retry_after(" 120 ", now), 120000);
	assert_int_equal(llm_parse_retry_after("0", now), 0);
	assert_int_equal(llm_parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), 30000);
	assert_int_equal(llm_parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), 0);
	assert_int_equal(llm_parse_retry_after("1.5", now), -1);
	assert_int_equal(llm_parse_retry_after("soon", now), -1);
	assert_int_equal(llm_parse_retry_after("", now), -1);
	assert_int_equal(llm_parse_retry_after("-3", now), -1);
	assert_int_equal(llm_parse_retry_after("99999999999999999999", now), -1);
}

static void load(struct config *cfg, const char *toml)
{
	config_init(cfg);
	if (config_apply_string(cfg, toml, strlen(toml), "t.toml", CFG_USER) < 0)
		fail_msg("config: %s", err_last());
}

static void test_provider_open_errors(void **state)
{
	struct config cfg;
	struct provider *p = NULL;

	(void)state;
	load(&cfg, "[providers.bad]\nbase_url = \"ftp://example.invalid\"\n"
		   "[providers.rep]\ntype = \"replay\"\n"
		   "[providers.hdr]\nbase_url = \"http://127.0.0.1:1/v1\"\nheaders = [\"NoColon\"]\n"
		   "[providers.gone]\ntype = \"replay\"\ntranscript = \"/nonexistent/t.jsonl\"\n");
	assert_int_equal(provider_open(&p, &cfg, "nope", NULL), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "no provider 'nope'"));
	assert_int_equal(provider_open(&p, &cfg, "bad", NULL), FX_EINVAL);
	assert_non_null(strstr(err_last(), "not an http:// or https:// URL"));
	assert_int_equal(provider_open(&p, &cfg, "rep", NULL), FX_EINVAL);
	assert_non_null(strstr(err_last(), "needs a transcript"));
	assert_int_equal(provider_open(&p, &cfg, "hdr", NULL), FX_EINVAL);
	assert_non_null(strstr(err_last(), "header 1"));
	assert_int_equal(provider_open(&p, &cfg, "gone", NULL), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "provider 'gone'"));
	assert_null(p);
	/* NULL picks "default", with its trailing slash trimmed */
	config_release(&cfg);
	load(&cfg, "[providers.default]\nbase_url = \"http://127.0.0.1:9/v1//\"\nmodel = \"qm\"\n");
	assert_int_equal(provider_open(&p, &cfg, NULL, NULL), 0);
	assert_string_equal(p->name, "default");
	assert_string_equal(p->base_url, "http://127.0.0.1:9/v1");
	assert_string_equal(p->model, "qm");
	assert_string_equal(p->ops->type, "openai");
	provider_free(p);
	config_release(&cfg);
}

static void test_request_building_helpers(void **state)
{
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response r = LLM_RESPONSE_INIT;
	struct llm_message *m;

	(void)state;
	assert_string_equal(llm_role_name(LLM_TOOL), "tool");
	assert_int_equal(llm_role_from_name("assistant"), LLM_ASSISTANT);
	assert_int_equal(llm_role_from_name("robot"), -1);
	/* a reply with only tool calls becomes an assistant turn with no content */
	r.content = xstrdup("");
	r.tool_calls = xcalloc(1, sizeof(*r.tool_calls));
	r.tool_calls_nr = r.tool_calls_alloc = 1;
	r.tool_calls[0].id = xstrdup("call_9");
	r.tool_calls[0].name = xstrdup("grep");
	r.tool_calls[0].arguments = xstrdup("{\"q\":\"x\"}");
	m = llm_request_add_reply(&req, &r);
	assert_null(m->content);
	assert_int_equal(m->role, LLM_ASSISTANT);
	assert_int_equal(m->tool_calls_nr, 1);
	assert_string_equal(m->tool_calls[0].arguments, "{\"q\":\"x\"}");
	/* a plain text reply keeps its text */
	llm_response_release(&r);
	r.content = xstrdup("done");
	m = llm_request_add_reply(&req, &r);
	assert_string_equal(m->content, "done");
	assert_int_equal(m->tool_calls_nr, 0);
	m = llm_request_add_tool_result(&req, "call_9", "grep", "no matches");
	assert_string_equal(m->tool_call_id, "call_9");
	assert_string_equal(m->name, "grep");
	assert_int_equal(req.messages_nr, 3);
	llm_response_release(&r);
	llm_request_release(&req);
	assert_int_equal(req.messages_nr, 0);
	assert_true(req.temperature < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backoff_grows_with_jitter),
		cmocka_unit_test(test_retry_after_forms),
		cmocka_unit_test(test_provider_open_errors),
		cmocka_unit_test(test_request_building_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

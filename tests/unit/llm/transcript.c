/* Transcripts: redaction of secrets, the line format, loading. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "llm/transcript.h"

static char *redact(const char *s, const struct strvec *secrets)
{
	struct buf b = BUF_INIT;

	redact_text(&b, s, strlen(s), secrets);
	return buf_detach(&b, NULL);
}

static void check(const char *in, const char *want)
{
	struct strvec none = STRVEC_INIT;
	char *got = redact(in, &none);

	assert_string_equal(got, want);
	free(got);
}

static void test_redact_key_shapes(void **state)
{
	(void)state;
	check("key sk-proj-AbCdEf0123456789xyzXYZ_-q end", "key [REDACTED] end");
	check("groq gsk_0123456789abcdefABCDEF0123", "groq [REDACTED]");
	check("\"sk-ant-api03-aaaaaaaaaaaaaaaaaaaa\"", "\"[REDACTED]\"");
	check("gh ghp_0123456789abcdefghij0123456789abcd", "gh [REDACTED]");
	/* real keys are random: mixed case or digits */
	check("hf_AbCdEfGhIjKlMnOpQrStU and AKIAIOSFODNN7EXAMPLE", "[REDACTED] and [REDACTED]");
	/* an identifier in code that only starts like a key is code, not a key */
	check("hf_abcdefghijklmnopqrstu and sk-learn-compatible-estimator",
	      "hf_abcdefghijklmnopqrstu and sk-learn-compatible-estimator");
	check("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig-nature_x", "jwt [REDACTED]");
	/* short or embedded words are left alone: prose, paths, identifiers */
	check("sk-short task-list disk-usage risk-free", "sk-short task-list disk-usage risk-free");
	check("mask-0123456789abcdefghij", "mask-0123456789abcdefghij");
	check("use the ask-sk- prefix", "use the ask-sk- prefix");
}

static void test_redact_headers_and_bearer(void **state)
{
	(void)state;
	check("Authorization: Bearer abc.def-ghi_jkl\nX: y", "Authorization: [REDACTED]\nX: y");
	check("authorization:token123456", "authorization:[REDACTED]");
	check("curl -H 'x' with bearer 0123456789abcdefXYZ=", "curl -H 'x' with bearer [REDACTED]");
	check("Bearer short", "Bearer short");
	check("a bearer of bad news", "a bearer of bad news");
}

static void test_redact_registered_values(void **state)
{
	struct strvec secrets = STRVEC_INIT;
	char *got;

	(void)state;
	strvec_push(&secrets, "hunter2-not-a-pattern");
	got = redact("pw=hunter2-not-a-pattern;again hunter2-not-a-pattern", &secrets);
	assert_string_equal(got, "pw=[REDACTED];again [REDACTED]");
	free(got);
	strvec_clear(&secrets);
}

static void test_redact_collect_env(void **state)
{
	const char *const envp[] = {
		"OPENAI_API_KEY=value-of-openai-key", "GITHUB_TOKEN=tok-tok-tok-tok",
		"MY_SECRET_THING=abcdefgh", "DB_PASSWORD=pa55w0rd!", "SHORT_TOKEN=abc",
		"PATH=/usr/bin:/bin", "HOME=/home/user", "API_KEY=plainapikey", NULL,
	};
	struct strvec s = STRVEC_INIT;

	(void)state;
	redact_collect_env(&s, envp);
	assert_int_equal(s.nr, 5);
	assert_true(strvec_find(&s, "value-of-openai-key") >= 0);
	assert_true(strvec_find(&s, "tok-tok-tok-tok") >= 0);
	assert_true(strvec_find(&s, "abcdefgh") >= 0);
	assert_true(strvec_find(&s, "pa55w0rd!") >= 0);
	assert_true(strvec_find(&s, "plainapikey") >= 0);
	assert_true(strvec_find(&s, "/usr/bin:/bin") < 0);
	strvec_clear(&s);
}

static void test_redact_json_members(void **state)
{
	struct strvec none = STRVEC_INIT;
	json_t *in = json_pack("{s:s, s:{s:s, s:i}, s:[s, s], s:s, s:b}",
			       "api_key", "anything at all",
			       "auth", "Authorization", "Basic dXNlcjpwYXNz", "password", 1234,
			       "list", "fine", "sk-0123456789abcdefghijKLMN",
			       "model", "gpt-4o", "stream", 1);
	json_t *out = redact_json(in, &none);
	struct buf b = BUF_INIT;

	(void)state;
	jsonx_dump(&b, out, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(b.buf, "{\"api_key\":\"[REDACTED]\",\"auth\":{\"Authorization\":"
			    "\"[REDACTED]\",\"password\":\"[REDACTED]\"},\"list\":[\"fine\","
			    "\"[REDACTED]\"],\"model\":\"gpt-4o\",\"stream\":true}");
	/* the input is untouched */
	assert_string_equal(jsonx_str(in, "api_key"), "anything at all");
	buf_release(&b);
	json_decref(in);
	json_decref(out);
}

static void test_transcript_record_redacts_and_loads(void **state)
{
	const char *key = "sk-live-Zz9Yy8Xx7Ww6Vv5Uu4Tt3";
	char *dir = tu_mkdtemp(), *text;
	struct buf path = BUF_INIT;
	struct transcript *t = NULL;
	struct transcript_exchange x;
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response resp = LLM_RESPONSE_INIT;
	json_t *body, *all = NULL, *e;
	struct stat st;

	(void)state;
	/* the key is in the environment (as the provider reads it) and in a message */
	setenv("FX_UNIT_API_KEY", key, 1);
	buf_addf(&path, "%s/runs/1/transcript.jsonl", dir);
	assert_int_equal(transcript_open(&t, path.buf), 0);
	assert_int_equal(stat(path.buf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	llm_request_add(&req, LLM_USER, "my key is sk-live-Zz9Yy8Xx7Ww6Vv5Uu4Tt3, keep it");
	body = llm_request_to_json(&req, "m", 1);
	resp.content = xstrdup("You said sk-live-Zz9Yy8Xx7Ww6Vv5Uu4Tt3.");
	resp.finish_reason = xstrdup("stop");
	resp.model = xstrdup("m-1");
	resp.usage.present = 1;
	resp.usage.prompt_tokens = 10;
	resp.usage.completion_tokens = 5;
	resp.usage.total_tokens = 15;
	memset(&x, 0, sizeof(x));
	x.provider = "default";
	x.provider_type = "openai";
	x.base_url = "http://127.0.0.1:1/v1";
	x.model = "m";
	x.stream = 1;
	x.request = body;
	x.response = &resp;
	x.started_ms = 1700000000123LL;
	x.elapsed = 1.2345;
	x.retries = 2;
	x.http_status = 200;
	assert_int_equal(transcript_record(t, &x), 0);
	x.response = NULL;
	x.code = FX_EPROVIDER;
	x.error = "HTTP 401 for Bearer sk-live-Zz9Yy8Xx7Ww6Vv5Uu4Tt3";
	assert_int_equal(transcript_record(t, &x), 0);
	transcript_free(t);

	text = tu_read(dir, "runs/1/transcript.jsonl");
	assert_null(strstr(text, key));
	assert_null(strstr(text, "Zz9Yy8Xx7"));
	assert_non_null(strstr(text, "my key is [REDACTED], keep it"));

	assert_int_equal(transcript_load(&all, path.buf), 0);
	assert_int_equal(json_array_size(all), 2);
	e = json_array_get(all, 0);
	assert_int_equal(jsonx_int(e, "seq", 0), 1);
	assert_string_equal(jsonx_str(e, "status"), "ok");
	assert_string_equal(jsonx_str(e, "time"), "2023-11-14T22:13:20Z");
	assert_int_equal(jsonx_int(e, "elapsed_ms", 0), 1235);
	assert_int_equal(jsonx_int(e, "retries", 0), 2);
	assert_int_equal(jsonx_int(json_object_get(e, "usage"), "total_tokens", 0), 15);
	assert_string_equal(jsonx_str(json_object_get(e, "response"), "content"),
			    "You said [REDACTED].");
	e = json_array_get(all, 1);
	assert_string_equal(jsonx_str(e, "status"), "error");
	assert_string_equal(jsonx_str(e, "error_code"), "EPROVIDER");
	assert_string_equal(jsonx_str(e, "error"), "HTTP 401 for Bearer [REDACTED]");
	assert_true(json_is_null(json_object_get(e, "response")));
	json_decref(all);

	/* a damaged line is reported with its number; other kinds of lines are skipped */
	tu_write(dir, "bad.jsonl", "{\"type\":\"note\"}\n\n{\"type\":\"exchange\"\n");
	buf_reset(&path);
	buf_addf(&path, "%s/bad.jsonl", dir);
	assert_int_equal(transcript_load(&all, path.buf), FX_EPARSE);
	assert_non_null(strstr(err_last(), "bad.jsonl:3"));
	buf_reset(&path);
	buf_addf(&path, "%s/missing.jsonl", dir);
	assert_int_equal(transcript_load(&all, path.buf), FX_ENOTFOUND);

	unsetenv("FX_UNIT_API_KEY");
	free(text);
	json_decref(body);
	llm_request_release(&req);
	llm_response_release(&resp);
	buf_release(&path);
	tu_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redact_key_shapes),
		cmocka_unit_test(test_redact_headers_and_bearer),
		cmocka_unit_test(test_redact_registered_values),
		cmocka_unit_test(test_redact_collect_env),
		cmocka_unit_test(test_redact_json_members),
		cmocka_unit_test(test_transcript_record_redacts_and_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * forgex ask, end to end: the real binary against build/mockllm over HTTP
 * on 127.0.0.1, in a temporary project.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

#define KEY_VAR "FX_E2E_KEY"

struct run {
	int status;		/* exit status, 128+signal, or -1 when killed at the deadline */
	struct buf out, err;
	double started, ended;
	double marker_at;	/* when `marker` first appeared on stdout; 0: never */
};

/*
 * Run forgex with `args` in `cwd`, env `extra` added ("K=V"; "K" removes).
 * Notes when `marker` first shows on stdout; sends SIGINT at `sigint_after`
 * seconds (when > 0); kills the process after `deadline` seconds.
 */
static void run_forgex(struct run *r, const char *cwd, const char *const *args,
		       const char *const *extra, const char *marker, double sigint_after,
		       double deadline)
{
	struct tu_watch w = { .sig = sigint_after > 0 ? SIGINT : 0, .sig_after = sigint_after,
			      .mark = marker, .deadline = deadline };
	struct strvec argv = STRVEC_INIT;
	struct tu_result res;
	/* absolute, since the child changes folder first */
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run_watched(&res, (const char *const *)argv.v, cwd, extra, &w);
	strvec_clear(&argv);
	r->status = w.killed && w.ended - w.started >= deadline ? -1 : res.status;
	r->out = res.out;
	r->err = res.err;
	r->started = w.started;
	r->ended = w.ended;
	r->marker_at = w.mark_at;
}

static void run_release(struct run *r)
{
	buf_release(&r->out);
	buf_release(&r->err);
}

/* A project whose default provider is the mock, with `more` config appended. */
static char *project(const struct mock *m, const char *more)
{
	char *dir = tu_mkdtemp();
	char *cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
			    "api_key_env = \"" KEY_VAR "\"\nmax_retries = 2\ntimeout_seconds = 5\n%s",
			    m ? m->base_url : "http://127.0.0.1:9/v1", more ? more : "");

	tu_write(dir, ".forgex/config.toml", cfg);
	tu_trust(dir, NULL);
	free(cfg);
	return dir;
}

static const char *const no_key[] = { KEY_VAR, NULL };

static void test_ask_streams_incrementally(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "How are you?", NULL };

	(void)state;
	/* events: role, "First part. ", "Second part.", finish, usage, [DONE] */
	mock_start(&m, "[{\"text\": \"First part. Second part.\", \"delta_chars\": 12,"
		       " \"delays_ms\": [0, 0, 1000]}]");
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, no_key, "First part.", 0, 20);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "First part. Second part.\n");
	assert_true(r.marker_at > 0);
	/* the first piece was on stdout well before the reply ended */
	assert_true(r.ended - r.marker_at >= 0.8);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_json_reports_usage(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "--json", "Count", NULL };
	json_t *j = NULL, *u;

	(void)state;
	mock_start(&m, "[{\"text\": \"one two three\", \"usage\": {\"prompt_tokens\": 120,"
		       " \"completion_tokens\": 3, \"total_tokens\": 123}}]");
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 0);
	assert_int_equal(jsonx_parse(&j, r.out.buf, r.out.len, "stdout"), 0);
	assert_string_equal(jsonx_str(j, "content"), "one two three");
	assert_string_equal(jsonx_str(j, "finish_reason"), "stop");
	assert_string_equal(jsonx_str(j, "provider"), "default");
	u = json_object_get(j, "usage");
	assert_int_equal(jsonx_int(u, "prompt_tokens", -1), 120);
	assert_int_equal(jsonx_int(u, "completion_tokens", -1), 3);
	assert_int_equal(jsonx_int(u, "total_tokens", -1), 123);
	json_decref(j);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_instructions_in_system_prompt(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "What", "style?", NULL };
	json_t *reqs;
	const char *sys;

	(void)state;
	mock_start(&m, "[{\"text\": \"Tabs.\"}]");
	dir = project(&m, "[context]\ninstructions = [\"AGENTS.md\", \"MISSING.md\", \"FORGEX.md\"]\n");
	tu_write(dir, "AGENTS.md", "Indent with tabs.\n");
	tu_write(dir, "FORGEX.md", "Run make test before committing.\n");
	run_forgex(&r, dir, args, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 0);
	reqs = mock_requests(&m);
	sys = jsonx_str(json_array_get(json_object_get(json_object_get(json_array_get(reqs, 0),
								       "body"), "messages"), 0),
			"content");
	assert_non_null(sys);
	assert_non_null(strstr(sys, "Indent with tabs."));
	assert_non_null(strstr(sys, "Run make test before committing."));
	assert_non_null(strstr(sys, dir));
	assert_null(strstr(sys, "MISSING.md"));
	assert_string_equal(jsonx_str(json_array_get(json_object_get(json_object_get(
		json_array_get(reqs, 0), "body"), "messages"), 1), "content"), "What style?");
	json_decref(reqs);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_retries_429_with_retry_after(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "q", NULL };

	(void)state;
	mock_start(&m, "[{\"status\": 429, \"headers\": {\"Retry-After\": \"1\"}}, {\"text\": \"ok now\"}]");
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "ok now\n");
	assert_true(r.ended - r.started >= 0.9);
	assert_int_equal(mock_count(&m, "/chat/completions"), 2);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_500_fails_after_max_retries(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "q", NULL };

	(void)state;
	mock_start(&m, "[{\"status\": 500, \"repeat\": -1}]");
	dir = project(&m, NULL);	/* max_retries = 2 */
	run_forgex(&r, dir, args, no_key, NULL, 0, 30);
	assert_int_equal(r.status, 3);
	assert_string_equal(r.out.buf, "");
	assert_non_null(strstr(r.err.buf, "provider 'default'"));
	assert_non_null(strstr(r.err.buf, m.base_url));
	assert_non_null(strstr(r.err.buf, "HTTP 500"));
	assert_non_null(strstr(r.err.buf, "gave up after 2 retries"));
	assert_int_equal(mock_count(&m, "/chat/completions"), 3);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_401_names_key_variable(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "q", NULL };

	(void)state;
	mock_start(&m, "[{\"status\": 401, \"body\": \"{\\\"error\\\": {\\\"message\\\": \\\"invalid key\\\"}}\"}]");
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 3);
	assert_non_null(strstr(r.err.buf, "HTTP 401: invalid key"));
	assert_non_null(strstr(r.err.buf, "$" KEY_VAR ", which is not set"));
	assert_int_equal(mock_count(&m, "/chat/completions"), 1);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_dropped_stream_is_an_error(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "q", NULL };

	(void)state;
	mock_start(&m, "[{\"text\": \"This answer never ends properly\", \"delta_chars\": 5,"
		       " \"drop_after_bytes\": 450}]");
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 3);
	assert_true(r.ended - r.started < 10);
	assert_non_null(strstr(r.err.buf, "broke in the middle of the reply"));
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_length_is_not_completion(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "Tell a long story", NULL };

	(void)state;
	mock_start(&m, "[{\"text\": \"Once upon a time\", \"finish_reason\": \"length\"}]");
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 3);
	assert_string_equal(r.out.buf, "Once upon a time\n");
	assert_non_null(strstr(r.err.buf, "cut off at the model's token limit"));
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_ctrl_c_exits_130(void **state)
{
	struct mock m;
	struct run r;
	char *dir;
	const char *args[] = { "ask", "q", NULL };

	(void)state;
	mock_start(&m, "[{\"hang\": true}]");
	dir = project(&m, "");
	run_forgex(&r, dir, args, no_key, NULL, 0.5, 20);
	assert_int_equal(r.status, 130);
	assert_true(r.ended - r.started < 2.0);
	assert_non_null(strstr(r.err.buf, "interrupted"));
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

static void test_ask_usage_errors(void **state)
{
	struct run r;
	char *dir = project(NULL, NULL);
	const char *no_q[] = { "ask", NULL };
	const char *bad_p[] = { "ask", "--provider", "nope", "q", NULL };

	(void)state;
	run_forgex(&r, dir, no_q, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "a question is required"));
	run_release(&r);
	run_forgex(&r, dir, bad_p, no_key, NULL, 0, 20);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "no provider 'nope'"));
	run_release(&r);
	tu_rmtree(dir);
}

static void test_ask_records_and_replays_offline(void **state)
{
	struct mock m;
	struct run live, again, changed, lenient;
	char *dir, *transcript, *text;
	const char *rec[] = { "ask", "--transcript", "t/run.jsonl", "Explain", "main.c", NULL };
	const char *rep[] = { "ask", "--provider", "rec", "Explain", "main.c", NULL };
	const char *diff[] = { "ask", "--provider", "rec", "Explain", "util.c", NULL };
	const char *len[] = { "ask", "--provider", "len", "Explain", "util.c", NULL };

	(void)state;
	mock_start(&m, "[{\"text\": \"main.c holds the command table.\\nIt parses options.\","
		       " \"delta_chars\": 7}]");
	dir = project(&m, "[providers.rec]\ntype = \"replay\"\ntranscript = \"t/run.jsonl\"\n"
		      "[providers.len]\ntype = \"replay\"\ntranscript = \"t/run.jsonl\"\n"
		      "replay_mode = \"lenient\"\n");
	tu_write(dir, "AGENTS.md", "Be brief.\n");
	run_forgex(&live, dir, rec, no_key, NULL, 0, 20);
	assert_int_equal(live.status, 0);
	assert_string_equal(live.out.buf, "main.c holds the command table.\nIt parses options.\n");
	transcript = tu_read(dir, "t/run.jsonl");
	assert_non_null(transcript);
	assert_non_null(strstr(transcript, "\"type\":\"exchange\""));
	mock_release(&m);	/* offline from here on */

	run_forgex(&again, dir, rep, no_key, NULL, 0, 20);
	assert_int_equal(again.status, 0);
	assert_string_equal(again.out.buf, live.out.buf);

	run_forgex(&changed, dir, diff, no_key, NULL, 0, 20);
	assert_int_equal(changed.status, 3);
	assert_string_equal(changed.out.buf, "");
	assert_non_null(strstr(changed.err.buf, "exchange 1"));
	assert_non_null(strstr(changed.err.buf, "messages[1].content"));
	assert_non_null(strstr(changed.err.buf, "\"Explain main.c\""));
	assert_non_null(strstr(changed.err.buf, "\"Explain util.c\""));

	run_forgex(&lenient, dir, len, no_key, NULL, 0, 20);
	assert_int_equal(lenient.status, 0);
	assert_string_equal(lenient.out.buf, live.out.buf);
	assert_non_null(strstr(lenient.err.buf, "warning"));
	assert_non_null(strstr(lenient.err.buf, "messages[1].content"));

	/* the replays were not recorded into the transcript */
	text = tu_read(dir, "t/run.jsonl");
	assert_string_equal(text, transcript);
	free(text);
	free(transcript);
	run_release(&live);
	run_release(&again);
	run_release(&changed);
	run_release(&lenient);
	tu_rmtree(dir);
}

static void test_ask_transcript_never_holds_the_key(void **state)
{
	const char *key = "gsk_e2eSecretValue0123456789abcdefXYZ";
	struct mock m;
	struct run r;
	char *dir, *t, *q;
	const char *env[] = { KEY_VAR "=gsk_e2eSecretValue0123456789abcdefXYZ", NULL };
	json_t *reqs;

	(void)state;
	mock_start(&m, "[{\"text\": \"Your key is gsk_e2eSecretValue0123456789abcdefXYZ, do not share it.\"}]");
	dir = project(&m, NULL);
	q = xstrfmt("Is %s my key? Also Authorization: Bearer abcdefghijklmnop1234", key);
	{
		const char *args[] = { "ask", "--transcript", "tr.jsonl", q, NULL };

		run_forgex(&r, dir, args, env, NULL, 0, 20);
	}
	assert_int_equal(r.status, 0);
	/* the server got the key where it belongs */
	reqs = mock_requests(&m);
	assert_string_equal(jsonx_str(json_object_get(json_array_get(reqs, 0), "headers"),
				      "authorization"), "Bearer gsk_e2eSecretValue0123456789abcdefXYZ");
	json_decref(reqs);
	t = tu_read(dir, "tr.jsonl");
	assert_non_null(t);
	assert_null(strstr(t, key));
	assert_null(strstr(t, "e2eSecretValue"));
	assert_null(strstr(t, "abcdefghijklmnop1234"));
	assert_non_null(strstr(t, "Is [REDACTED] my key?"));
	assert_non_null(strstr(t, "Your key is [REDACTED], do not share it."));
	/* nor did any error output */
	assert_null(strstr(r.err.buf, key));
	free(t);
	free(q);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

/* The "Providers" section of forgex doctor (src/cli/doctor_llm.c). */
static void test_ask_doctor_checks_providers(void **state)
{
	struct mock m;
	struct run r;
	char *dir, *cfg;
	const char *args[] = { "doctor", "--json", NULL };
	json_t *j = NULL, *items, *it;
	struct buf seen = BUF_INIT;
	size_t i;

	(void)state;
	mock_start(&m, "{\"models\": [\"mock-model\", \"other\"], \"steps\": []}");
	dir = project(&m, NULL);
	cfg = xstrfmt("[providers.wrong]\nbase_url = \"%s\"\nmodel = \"absent-model\"\n"
		      "[providers.down]\nbase_url = \"http://127.0.0.1:1/v1\"\n"
		      "[providers.cloud]\nbase_url = \"https://api.example.invalid/v1\"\n"
		      "api_key_env = \"FX_E2E_CLOUD_KEY\"\n", m.base_url);
	{
		char *all = tu_read(dir, ".forgex/config.toml"), *both = xstrfmt("%s%s", all, cfg);

		tu_write(dir, ".forgex/config.toml", both);
		tu_trust(dir, NULL);
		free(all);
		free(both);
	}
	run_forgex(&r, dir, args, no_key, NULL, 0, 30);
	assert_int_equal(jsonx_parse(&j, r.out.buf, r.out.len, "doctor"), 0);
	items = json_object_get(j, "checks");
	json_array_foreach(items, i, it)
		if (!strcmp(jsonx_str(it, "section"), "Providers"))
			buf_addf(&seen, "%s|%s|%s\n", jsonx_str(it, "check"), jsonx_str(it, "status"),
				 jsonx_str(it, "detail"));
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(seen.buf, "default: server|ok|"));
	assert_non_null(strstr(seen.buf, "default: model|ok|mock-model is available"));
	assert_non_null(strstr(seen.buf, "default: key|ok|none needed for a local server"));
	assert_non_null(strstr(seen.buf, "wrong: model|fail|absent-model is not among the models"));
	assert_non_null(strstr(seen.buf, "mock-model, other"));
	assert_non_null(strstr(seen.buf, "down: server|warn|cannot reach http://127.0.0.1:1/v1/models"));
	assert_non_null(strstr(seen.buf, "cloud: key|fail|$FX_E2E_CLOUD_KEY is not set"));
	/* no key for a remote server: it is not contacted at all */
	assert_null(strstr(seen.buf, "cloud: server"));
	/* the window: the mock says nothing of it (404 for /props and /api/show) */
	assert_non_null(strstr(seen.buf, "default: context window|ok|32768 tokens (default)"));
	/* the list, and the window's question, for each of the two reachable providers */
	assert_int_equal(mock_count(&m, "/models"), 4);
	assert_int_equal(mock_count(&m, "/props"), 2);
	json_decref(j);
	free(cfg);
	buf_release(&seen);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}

/* A user configuration (XDG_CONFIG_HOME) holding `cfg`; returns the "XDG_CONFIG_HOME=..." entry. */
static char *user_config(char **xdg, const char *cfg)
{
	*xdg = tu_mkdtemp();
	tu_write(*xdg, "forgex/config.toml", cfg);
	return xstrfmt("XDG_CONFIG_HOME=%s", *xdg);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/*
 * Ollama behind its OpenAI-compatible /v1 with a small num_ctx (2048 in
 * the Modelfile): forgex learns it from /api/show, warns once with the
 * fix (Ollama would cut the front of longer prompts), and keeps every
 * request within it.
 */
static void test_ask_ollama_small_num_ctx_warns(void **state)
{
	struct mock m;
	struct run r;
	json_t *reqs, *q;
	char *dir = tu_mkdtemp(), *xdg, *cfg, *envx;
	const char *args[] = { "ask", "What is in a.txt?", NULL };
	size_t i;

	(void)state;
	mock_start(&m, "{\"server\": \"ollama\", \"num_ctx\": 2048, \"context_length\": 8192, "
		       "\"steps\": [{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"read_file\", "
		       "\"arguments\": {\"path\": \"a.txt\"}}]}, {\"text\": \"It says hello.\"}]}");
	tu_write(dir, "a.txt", "hello\n");
	cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		      "api_key_env = \"" KEY_VAR "\"\nmax_retries = 0\ntimeout_seconds = 5\n",
		      m.base_url);
	envx = user_config(&xdg, cfg);
	{
		const char *env[] = { envx, KEY_VAR, NULL };

		run_forgex(&r, dir, args, env, NULL, 0, 30);
	}
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_string_equal(r.out.buf, "It says hello.\n");
	/* the warning, once, with the fix */
	assert_int_equal(count_of(r.err.buf, "Ollama runs mock-model with num_ctx 2048"), 1);
	assert_non_null(strstr(r.err.buf, "silently cuts the front of longer prompts"));
	assert_non_null(strstr(r.err.buf, "set type = \"ollama\" under [providers.default]"));
	assert_non_null(strstr(r.err.buf, "OLLAMA_CONTEXT_LENGTH=32768"));
	assert_int_equal(mock_count(&m, "/api/show"), 1);
	/* every request within 2048 tokens less the reply's reserve (256) */
	reqs = mock_requests(&m);
	assert_int_equal(json_array_size(reqs), 2);
	json_array_foreach(reqs, i, q) {
		assert_string_equal(jsonx_str(q, "path"), "/v1/chat/completions");
		assert_true((double)strlen(jsonx_str(q, "raw")) * 0.2875 <= 2048 - 256);
	}
	json_decref(reqs);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
	tu_rmtree(xdg);
	free(cfg);
	free(envx);
}

/*
 * type = "ollama": Ollama's own POST /api/chat, streamed as NDJSON, with
 * options.num_ctx on every request: the model's own window (8192, from
 * /api/show) since the Modelfile's num_ctx (2048) is too small; calls and
 * results in Ollama's shapes; no request over the window.
 */
static void test_ask_ollama_native_sets_num_ctx(void **state)
{
	struct mock m;
	struct run r;
	json_t *reqs, *q, *msgs;
	char *dir = tu_mkdtemp(), *xdg, *cfg, *envx, *root;
	const char *args[] = { "ask", "What is in a.txt?", NULL };
	size_t i;

	(void)state;
	mock_start(&m, "{\"server\": \"ollama\", \"num_ctx\": 2048, \"context_length\": 8192, "
		       "\"architecture\": \"qwen2\", \"steps\": [{\"tool_calls\": [{\"name\": "
		       "\"read_file\", \"arguments\": {\"path\": \"a.txt\"}}]}, {\"text\": \"It "
		       "says hello, twice over.\", \"delta_chars\": 5}]}");
	tu_write(dir, "a.txt", "hello\n");
	root = xstrndup(m.base_url, strlen(m.base_url) - 3);	/* without /v1 */
	cfg = xstrfmt("[providers.default]\ntype = \"ollama\"\nbase_url = \"%s\"\n"
		      "model = \"mock-model\"\napi_key_env = \"" KEY_VAR "\"\nmax_retries = 0\n"
		      "timeout_seconds = 5\n", root);
	envx = user_config(&xdg, cfg);
	{
		const char *env[] = { envx, KEY_VAR, NULL };

		run_forgex(&r, dir, args, env, NULL, 0, 30);
	}
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_string_equal(r.out.buf, "It says hello, twice over.\n");
	/* the model's window is less than forgex needs: said once */
	assert_int_equal(count_of(r.err.buf, "own context window is 8192 tokens"), 1);
	assert_null(strstr(r.err.buf, "silently cuts"));
	reqs = mock_requests(&m);
	assert_int_equal(json_array_size(reqs), 2);
	json_array_foreach(reqs, i, q) {
		json_t *body = json_object_get(q, "body");

		assert_string_equal(jsonx_str(q, "path"), "/api/chat");
		assert_int_equal(jsonx_int(json_object_get(body, "options"), "num_ctx", 0), 8192);
		assert_true(json_is_true(json_object_get(body, "stream")));
		assert_true((double)strlen(jsonx_str(q, "raw")) * 0.2875 <= 8192 - 1024);
	}
	/* the second request carries the call as Ollama shapes it, and the result */
	msgs = json_object_get(json_object_get(json_array_get(reqs, 1), "body"), "messages");
	q = json_array_get(msgs, 2);
	assert_string_equal(jsonx_str(q, "role"), "assistant");
	q = json_object_get(json_array_get(json_object_get(q, "tool_calls"), 0), "function");
	assert_string_equal(jsonx_str(q, "name"), "read_file");
	assert_string_equal(jsonx_str(json_object_get(q, "arguments"), "path"), "a.txt");
	q = json_array_get(msgs, 3);
	assert_string_equal(jsonx_str(q, "role"), "tool");
	assert_string_equal(jsonx_str(q, "tool_name"), "read_file");
	assert_non_null(strstr(jsonx_str(q, "content"), "hello"));
	/* append-only here too */
	{
		const char *a = jsonx_str(json_array_get(reqs, 0), "raw"),
			   *b = jsonx_str(json_array_get(reqs, 1), "raw");

		assert_int_equal(memcmp(a, b, strlen(a) - 2), 0);
	}
	json_decref(reqs);
	run_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
	tu_rmtree(xdg);
	free(cfg);
	free(envx);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ask_streams_incrementally),
		cmocka_unit_test(test_ask_json_reports_usage),
		cmocka_unit_test(test_ask_instructions_in_system_prompt),
		cmocka_unit_test(test_ask_retries_429_with_retry_after),
		cmocka_unit_test(test_ask_500_fails_after_max_retries),
		cmocka_unit_test(test_ask_401_names_key_variable),
		cmocka_unit_test(test_ask_dropped_stream_is_an_error),
		cmocka_unit_test(test_ask_length_is_not_completion),
		cmocka_unit_test(test_ask_ctrl_c_exits_130),
		cmocka_unit_test(test_ask_usage_errors),
		cmocka_unit_test(test_ask_records_and_replays_offline),
		cmocka_unit_test(test_ask_transcript_never_holds_the_key),
		cmocka_unit_test(test_ask_doctor_checks_providers),
		cmocka_unit_test(test_ask_ollama_small_num_ctx_warns),
		cmocka_unit_test(test_ask_ollama_native_sets_num_ctx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

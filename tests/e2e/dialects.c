/*
 * Real models, end to end: the real forgex against build/mockllm over HTTP
 * on 127.0.0.1. A call in a dialect forgex half-knows is answered with a
 * message naming the format and the model's second try runs; the window
 * probe asks a server once a day; one enormous answer does not wedge the
 * conversation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

struct env {
	char *dir, *xdg, *cfg_env;
	struct mock m;
};

/* A project folder and a user configuration whose default provider is the mock. */
static void setup(struct env *e, const char *script, const char *settings)
{
	char *cfg;

	memset(e, 0, sizeof(*e));
	mock_start(&e->m, script);
	e->dir = tu_mkdtemp();
	e->xdg = tu_mkdtemp();
	cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		      "max_retries = 0\ntimeout_seconds = 20\n%s\n", e->m.base_url,
		      settings ? settings : "");
	tu_write(e->xdg, "forgex/config.toml", cfg);
	free(cfg);
	e->cfg_env = xstrfmt("XDG_CONFIG_HOME=%s", e->xdg);
}

static void teardown(struct env *e)
{
	mock_release(&e->m);
	tu_rmtree(e->dir);
	tu_rmtree(e->xdg);
	free(e->cfg_env);
}

static void ask(struct env *e, struct tu_result *r, const char *question)
{
	const char *argv[] = { tu_forgex(), "ask", question, NULL };
	const char *env[] = { e->cfg_env, NULL };

	tu_run(r, argv, e->dir, env, NULL);
}

/* Requests that were not model requests: the window probe's questions. */
/* How many chat requests the model server had. */
static size_t nrequests(const struct mock *m)
{
	json_t *reqs = mock_requests(m);
	size_t n = json_array_size(reqs);

	json_decref(reqs);
	return n;
}

static size_t probes(const struct mock *m)
{
	json_t *all = mock_all_requests(m), *models = mock_requests(m);
	size_t n = json_array_size(all) - json_array_size(models);

	json_decref(all);
	json_decref(models);
	return n;
}

/* The last message of the model request `i` the mock recorded. */
static json_t *last_message(json_t *reqs, size_t i)
{
	json_t *msgs = json_object_get(json_object_get(json_array_get(reqs, i), "body"), "messages");

	return json_array_get(msgs, json_array_size(msgs) - 1);
}

/*
 * GLM writes its call with <arg_key>/<arg_value>; one whose key is not
 * closed is answered with what went wrong and the GLM form to send, and
 * the model's second try runs.
 */
static void test_dialects_malformed_call_is_nudged(void **state)
{
	struct env e;
	struct tu_result r;
	json_t *reqs, *last;

	(void)state;
	setup(&e, "[{\"text\": \"<tool_call>read_file\\n<arg_key>path\\n<arg_value>a.txt"
		  "</arg_value>\\n</tool_call>\"},"
		  " {\"text\": \"<tool_call>read_file\\n<arg_key>path</arg_key>\\n<arg_value>a.txt"
		  "</arg_value>\\n</tool_call>\"},"
		  " {\"text\": \"It says hello.\"}]", NULL);
	tu_write(e.dir, "a.txt", "hello\n");
	ask(&e, &r, "What is in a.txt?");
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	/* (the replies stream as they come; the last one is the answer) */
	assert_true(r.out.len >= 15);
	assert_string_equal(r.out.buf + r.out.len - 15, "It says hello.\n");
	reqs = mock_requests(&e.m);
	assert_int_equal(json_array_size(reqs), 3);
	last = last_message(reqs, 1);
	assert_string_equal(jsonx_str(last, "role"), "user");
	assert_non_null(strstr(jsonx_str(last, "content"), "Your tool call to read_file (glm format) "
			       "could not be read, so nothing was run"));
	assert_non_null(strstr(jsonx_str(last, "content"), "<arg_key>KEY</arg_key>"));
	/* the second try ran: its result went back */
	last = last_message(reqs, 2);
	assert_string_equal(jsonx_str(last, "role"), "tool");
	assert_non_null(strstr(jsonx_str(last, "content"), "hello"));
	json_decref(reqs);
	tu_result_release(&r);
	teardown(&e);
}

/* A call the model only thought about is never run: the answer is the answer. */
static void test_dialects_call_in_reasoning_is_not_run(void **state)
{
	struct env e;
	struct tu_result r;

	(void)state;
	setup(&e, "[{\"text\": \"<think>I could call <tool_call>\\n{\\\"name\\\": \\\"write_file\\\", "
		  "\\\"arguments\\\": {\\\"path\\\": \\\"a.txt\\\", \\\"content\\\": \\\"gone\\\"}}\\n"
		  "</tool_call> but the user only asked.</think>It says hello.\"}]", NULL);
	tu_write(e.dir, "a.txt", "hello\n");
	ask(&e, &r, "What is in a.txt?");
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_non_null(strstr(r.out.buf, "It says hello."));
	assert_int_equal(nrequests(&e.m), 1);
	{
		char *a = tu_read(e.dir, "a.txt");

		assert_string_equal(a, "hello\n");
		free(a);
	}
	tu_result_release(&r);
	teardown(&e);
}

/*
 * A call written after <think> that never closed is not run; the model is
 * told so, and its next reply (the reasoning closed, the call after it)
 * runs.
 */
static void test_dialects_call_in_unclosed_reasoning_is_told(void **state)
{
	struct env e;
	struct tu_result r;
	json_t *reqs, *last;

	(void)state;
	setup(&e, "[{\"text\": \"<think>Let me look<tool_call>read_file\\n"
		  "<arg_key>path</arg_key>\\n<arg_value>a.txt</arg_value>\\n</tool_call>\"},"
		  " {\"text\": \"<think>Look.</think><tool_call>read_file\\n<arg_key>path</arg_key>"
		  "\\n<arg_value>a.txt</arg_value>\\n</tool_call>\"},"
		  " {\"text\": \"It says hello.\"}]", NULL);
	tu_write(e.dir, "a.txt", "hello\n");
	ask(&e, &r, "What is in a.txt?");
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_non_null(strstr(r.out.buf, "It says hello."));
	reqs = mock_requests(&e.m);
	assert_int_equal(json_array_size(reqs), 3);
	/* the first reply's call did not run: the model was told why */
	last = last_message(reqs, 1);
	assert_string_equal(jsonx_str(last, "role"), "user");
	if (!strstr(jsonx_str(last, "content"), "Your tool call to read_file (glm format) was "
		    "written inside reasoning that was never closed"))
		fail_msg("the model was told: %s", jsonx_str(last, "content"));
	assert_non_null(strstr(jsonx_str(last, "content"), "so nothing was run"));
	/* the second, after its reasoning, ran */
	last = last_message(reqs, 2);
	assert_string_equal(jsonx_str(last, "role"), "tool");
	assert_non_null(strstr(jsonx_str(last, "content"), "hello"));
	json_decref(reqs);
	tu_result_release(&r);
	teardown(&e);
}

/* The window is asked of a server once: a second forgex ask finds it in the user's cache. */
static void test_dialects_second_ask_sends_no_probe(void **state)
{
	struct env e;
	struct tu_result r;
	size_t first;

	(void)state;
	setup(&e, "{\"server\": \"llamacpp\", \"n_ctx\": 16384, \"steps\": [{\"text\": \"one\"}, "
		  "{\"text\": \"two\"}]}", NULL);
	ask(&e, &r, "First?");
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	first = probes(&e.m);
	assert_true(first >= 1);	/* GET /v1/models, then /props */
	tu_result_release(&r);
	ask(&e, &r, "Second?");
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_string_equal(r.out.buf, "two\n");
	assert_int_equal(probes(&e.m), first);
	assert_int_equal(nrequests(&e.m), 2);
	tu_result_release(&r);
	teardown(&e);
}

/*
 * A session whose first answer is 200,000 characters: the next turn still
 * fits the window (the answer is shortened to its head and tail in the
 * request) and is answered.
 */
static void test_dialects_huge_answer_does_not_wedge_a_session(void **state)
{
	struct env e;
	struct tu_result r;
	struct buf big = BUF_INIT;
	json_t *steps = json_array(), *reqs, *msgs;
	char *script, *abs = realpath(tu_forgex(), NULL);
	const char *argv[] = { abs, "chat", NULL };
	const char *env[] = { NULL, NULL };
	const char *raw;
	size_t i;

	(void)state;
	buf_addstr(&big, "BEGINNING OF THE LONG ANSWER\n");
	for (i = 0; big.len < 200000; i++)
		buf_addf(&big, "line %zu of a very long answer that goes on and on\n", i);
	buf_setlen(&big, 200000 - 24);
	buf_addstr(&big, "\nEND OF THE LONG ANSWER\n");
	assert_int_equal(big.len, 200000);
	json_array_append_new(steps, json_pack("{s:s}", "text", big.buf));
	json_array_append_new(steps, json_pack("{s:s}", "text", "The second turn is answered."));
	script = json_dumps(steps, JSON_COMPACT);
	setup(&e, script, "context_window = 16384");
	env[0] = e.cfg_env;
	tu_run(&r, argv, e.dir, env, "tell me everything\nand now in short?\n/exit\n");
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_non_null(strstr(r.out.buf, "END OF THE LONG ANSWER"));	/* shown whole */
	assert_non_null(strstr(r.out.buf, "The second turn is answered."));
	reqs = mock_requests(&e.m);
	assert_int_equal(json_array_size(reqs), 2);
	/* the second request fits the window: the long answer kept its head and tail */
	raw = jsonx_str(json_array_get(reqs, 1), "raw");
	assert_true(strlen(raw) < 16384 * 4);
	msgs = json_object_get(json_object_get(json_array_get(reqs, 1), "body"), "messages");
	{
		const char *prev = jsonx_str(json_array_get(msgs, json_array_size(msgs) - 2),
					     "content");

		assert_non_null(strstr(prev, "BEGINNING OF THE LONG ANSWER"));
		assert_non_null(strstr(prev, "END OF THE LONG ANSWER"));
		assert_non_null(strstr(prev, "bytes of this message were left out"));
	}
	assert_string_equal(jsonx_str(json_array_get(msgs, json_array_size(msgs) - 1), "content"),
			    "and now in short?");
	json_decref(reqs);
	json_decref(steps);
	buf_release(&big);
	free(script);
	free(abs);
	tu_result_release(&r);
	teardown(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dialects_malformed_call_is_nudged),
		cmocka_unit_test(test_dialects_call_in_reasoning_is_not_run),
		cmocka_unit_test(test_dialects_call_in_unclosed_reasoning_is_told),
		cmocka_unit_test(test_dialects_second_ask_sends_no_probe),
		cmocka_unit_test(test_dialects_huge_answer_does_not_wedge_a_session),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

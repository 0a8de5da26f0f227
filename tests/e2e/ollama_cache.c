/*
 * type = "ollama" and the window cache, end to end: the real forgex against
 * build/mockllm playing Ollama. What POST /api/show says of a model is
 * asked once a day per server and model; a second `forgex ask` sends no
 * /api/show and still sets the same num_ctx; another model, or an answer
 * older than a day, is asked again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

struct env {
	char *dir, *xdg, *cache, *cfg_env, *cache_env, *root;
	struct mock m;
};

static void setup(struct env *e, int nsteps)
{
	struct buf script = BUF_INIT;
	int i;

	memset(e, 0, sizeof(*e));
	buf_addstr(&script, "{\"server\": \"ollama\", \"num_ctx\": 2048, \"context_length\": 8192, "
		   "\"architecture\": \"qwen2\", \"steps\": [");
	for (i = 0; i < nsteps; i++)
		buf_addf(&script, "%s{\"text\": \"answer %d\"}", i ? ", " : "", i + 1);
	buf_addstr(&script, "]}");
	mock_start(&e->m, script.buf);
	buf_release(&script);
	e->root = xstrndup(e->m.base_url, strlen(e->m.base_url) - 3);	/* without /v1 */
	e->dir = tu_mkdtemp();
	e->xdg = tu_mkdtemp();
	e->cache = tu_mkdtemp();
	e->cfg_env = xstrfmt("XDG_CONFIG_HOME=%s", e->xdg);
	e->cache_env = xstrfmt("XDG_CACHE_HOME=%s", e->cache);
}

static void configure(struct env *e, const char *model)
{
	char *cfg = xstrfmt("[providers.default]\ntype = \"ollama\"\nbase_url = \"%s\"\n"
			    "model = \"%s\"\nmax_retries = 0\ntimeout_seconds = 20\n", e->root,
			    model);

	tu_write(e->xdg, "forgex/config.toml", cfg);
	free(cfg);
}

static void teardown(struct env *e)
{
	mock_release(&e->m);
	tu_rmtree(e->dir);
	tu_rmtree(e->xdg);
	tu_rmtree(e->cache);
	free(e->cfg_env);
	free(e->cache_env);
	free(e->root);
}

/* forgex ask; fails the test unless it answered `expect`. */
static void ask(struct env *e, const char *expect)
{
	const char *argv[] = { tu_forgex(), "ask", "Hello?", NULL };
	const char *env[] = { e->cfg_env, e->cache_env, NULL };
	struct tu_result r;

	tu_run(&r, argv, e->dir, env, NULL);
	if (r.status != 0)
		fail_msg("exit %d: %s", r.status, r.err.buf);
	assert_string_equal(r.out.buf, expect);
	tu_result_release(&r);
}

/* The num_ctx the `n`th model request (0-based) carried. */
static long num_ctx_of(const struct mock *m, size_t n)
{
	json_t *reqs = mock_requests(m), *q = json_array_get(reqs, n);
	long v;

	assert_non_null(q);
	assert_string_equal(jsonx_str(q, "path"), "/api/chat");
	v = (long)jsonx_int(json_object_get(json_object_get(q, "body"), "options"), "num_ctx", 0);
	json_decref(reqs);
	return v;
}

static void test_ollama_second_ask_sends_no_show(void **state)
{
	struct env e;

	(void)state;
	setup(&e, 2);
	configure(&e, "mock-model");
	ask(&e, "answer 1\n");
	assert_int_equal(mock_count(&e.m, "/api/show"), 1);
	ask(&e, "answer 2\n");
	/* no second /api/show, and nothing else asked instead */
	assert_int_equal(mock_count(&e.m, "/api/show"), 1);
	assert_int_equal(mock_count(&e.m, "/api/ps"), 0);
	assert_int_equal(mock_count(&e.m, "/api/chat"), 2);
	/* the same decision from the cached answer: the model's own 8192, not the Modelfile's 2048 */
	assert_int_equal(num_ctx_of(&e.m, 0), 8192);
	assert_int_equal(num_ctx_of(&e.m, 1), 8192);
	teardown(&e);
}

/* The cache is per model: another model on the same server is asked about. */
static void test_ollama_other_model_is_asked(void **state)
{
	struct env e;

	(void)state;
	setup(&e, 3);
	configure(&e, "mock-model");
	ask(&e, "answer 1\n");
	configure(&e, "other-model");
	ask(&e, "answer 2\n");
	assert_int_equal(mock_count(&e.m, "/api/show"), 2);
	configure(&e, "mock-model");
	ask(&e, "answer 3\n");
	assert_int_equal(mock_count(&e.m, "/api/show"), 2);
	teardown(&e);
}

/* An answer older than a day is asked again, and the fresh one replaces it. */
static void test_ollama_stale_answer_is_asked_again(void **state)
{
	struct env e;
	char *cached, *old, *p;
	json_t *all, *entry;

	(void)state;
	setup(&e, 2);
	configure(&e, "mock-model");
	ask(&e, "answer 1\n");
	cached = tu_read(e.cache, "forgex/windows.json");
	all = json_loads(cached, 0, NULL);
	assert_int_equal(json_array_size(all), 1);
	entry = json_array_get(all, 0);
	assert_string_equal(jsonx_str(entry, "kind"), "ollama-show");
	assert_int_equal(jsonx_int(entry, "context_length", 0), 8192);
	assert_int_equal(jsonx_int(entry, "num_ctx", 0), 2048);
	/* make it a day and a minute old */
	json_object_set_new(entry, "time", json_integer((json_int_t)time(NULL) - 24 * 3600 - 60));
	old = json_dumps(all, JSON_COMPACT);
	tu_write(e.cache, "forgex/windows.json", old);
	ask(&e, "answer 2\n");
	assert_int_equal(mock_count(&e.m, "/api/show"), 2);
	free(cached);
	cached = tu_read(e.cache, "forgex/windows.json");
	p = strstr(cached, "\"time\":");
	assert_non_null(p);
	assert_true(strtoll(p + 7, NULL, 10) > (long long)time(NULL) - 3600);
	assert_null(strstr(p + 7, "\"time\":"));	/* one entry: the stale one is gone */
	json_decref(all);
	free(old);
	free(cached);
	teardown(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ollama_second_ask_sends_no_show),
		cmocka_unit_test(test_ollama_other_model_is_asked),
		cmocka_unit_test(test_ollama_stale_answer_is_asked_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

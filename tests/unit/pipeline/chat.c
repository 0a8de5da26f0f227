/*
 * The chat driver (src/pipeline/chat.c) through its API, in this process,
 * against build/mockllm over real HTTP on 127.0.0.1, in a temporary git
 * repository: a turn that edits a file and its /undo putting the bytes
 * back (and keeping what the person changed since), a command's change
 * undone, the ledger of a pipeline run made from the session counted in
 * /cost, compaction keeping the order of the request, resume, /clear and
 * /model. The folders are removed by each test's teardown, pass or fail.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "config/config.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"
#include "pipeline/chat.h"
#include "pipeline/pipeline.h"

#define CALC "def add(a, b):\n    return a + b\n"
#define SUB "def add(a, b):\n    return a - b\n"
/* Prices in USD per million tokens: a call of P prompt and C completion tokens costs P/1000 + C/500. */
#define PRICES "[budget]\nprices = [\"mock-model=1000/2000\"]\n[context]\nmap_tokens = 0\n"

struct fx {
	struct mock m;
	int have_mock;
	struct sc_proj p;
	int have_proj;
	struct config cfg;
	int have_cfg;
	struct chat_opts o;
	struct chat *c;
};

/* JSON written with single quotes, for readable scripts (caller frees). */
static char *sq(const char *s)
{
	char *d = xstrdup(s), *p;

	for (p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

/*
 * The mock on `script` (single quotes), the project (calc.py adds, one
 * commit), its configuration as a user file would give it, and a session
 * open on it.
 */
static void fx_open(struct fx *f, const char *script)
{
	char *s = sq(script), *user;

	f->have_mock = 1;
	mock_start(&f->m, s);
	free(s);
	f->have_proj = 1;
	sc_proj_init(&f->p, &f->m, "auto", PRICES);
	config_init(&f->cfg);
	f->have_cfg = 1;
	user = xstrfmt("%s/forgex/config.toml", f->p.home);
	if (config_apply_file(&f->cfg, user, CFG_USER) < 0)
		fail_msg("config: %s", err_last());
	free(user);
	free(f->cfg.workspace);
	f->cfg.workspace = xstrdup(f->p.dir);
	f->o = (struct chat_opts)CHAT_OPTS_INIT;
	f->o.cfg = &f->cfg;
	f->o.no_wait = 1;
	if (chat_open(&f->c, &f->o) < 0)
		fail_msg("chat_open: %s", err_last());
}

static int teardown(void **state)
{
	struct fx *f = *state;

	chat_close(f->c);
	if (f->have_cfg)
		config_release(&f->cfg);
	if (f->have_proj)
		sc_proj_release(&f->p);
	if (f->have_mock)
		mock_release(&f->m);
	free(f);
	return 0;
}

static int setup(void **state)
{
	*state = xcalloc(1, sizeof(struct fx));
	return 0;
}

/* One turn on `message`; it must run to an answer. */
static void turn(struct fx *f, const char *message)
{
	struct agent_result r;

	if (chat_turn(f->c, message, &r) < 0)
		fail_msg("chat_turn: %s", err_last());
	assert_string_equal(agent_status_name(r.status), "answered");
	agent_result_release(&r);
}

static char *cost(struct fx *f)
{
	struct buf b = BUF_INIT;

	chat_cost(f->c, &b);
	return buf_detach(&b, NULL);
}

/* Whether an entry of `v` is `path`, or begins with it and a space ("PATH (why)"). */
static int has(const struct strvec *v, const char *path)
{
	size_t i, n = strlen(path);

	for (i = 0; i < v->nr; i++)
		if (!strncmp(v->v[i], path, n) && (!v->v[i][n] || v->v[i][n] == ' '))
			return 1;
	return 0;
}

static void test_chat_turn_edit_undo_restores_bytes(void **state)
{
	struct fx *f = *state;
	struct journal_outcome o;
	const struct chat_turn *t;
	struct buf d = BUF_INIT;
	char *text, *events;
	size_t nr;
	int n = 0;

	fx_open(f, "{'steps': [{'tool_calls': [{'name': 'write_file', 'arguments': "
		   "{'path': 'calc.py', 'content': 'def add(a, b):\\n    return a - b\\n'}}], "
		   "'usage': {'prompt_tokens': 100, 'completion_tokens': 10, 'total_tokens': 110}, "
		   "'stream': false}, "
		   "{'text': 'It subtracts now.', 'usage': {'prompt_tokens': 120, "
		   "'completion_tokens': 5, 'total_tokens': 125}, 'stream': false}]}");
	turn(f, "make add subtract");
	text = tu_read(f->p.dir, "calc.py");
	assert_string_equal(text, SUB);
	free(text);
	t = chat_turns(f->c, &nr);
	assert_int_equal(nr, 1);
	assert_true(t[0].changed);
	assert_false(t[0].undone);
	/* the edit's diff is an event; the diff since the start names the file */
	events = tu_read(chat_dir(f->c), "events.jsonl");
	assert_non_null(strstr(events, "file_diff"));
	assert_non_null(strstr(events, "+    return a - b"));
	free(events);
	assert_int_equal(chat_diff(f->c, 0, 0, &d), 0);
	assert_non_null(strstr(d.buf, "calc.py"));
	buf_release(&d);
	/* both calls are in the ledger, priced */
	text = cost(f);
	assert_non_null(strstr(text, "mock-model: 2 calls, 220 prompt + 15 completion tokens, "
			       "$0.2500\n"));
	assert_non_null(strstr(text, "total: 2 calls, 235 tokens, $0.2500\n"));
	free(text);

	journal_outcome_init(&o);
	assert_int_equal(chat_undo(f->c, &n, &o), 0);
	assert_int_equal(n, 1);
	assert_true(has(&o.reverted, "calc.py"));
	assert_int_equal(o.kept.nr, 0);
	assert_int_equal(o.failed.nr, 0);
	journal_outcome_release(&o);
	text = tu_read(f->p.dir, "calc.py");
	assert_string_equal(text, CALC);
	free(text);
	t = chat_turns(f->c, &nr);
	assert_true(t[0].undone);
	/* nothing is left to undo */
	journal_outcome_init(&o);
	assert_int_equal(chat_undo(f->c, &n, &o), FX_ENOTFOUND);
	journal_outcome_release(&o);
	err_clear();
}

static void test_chat_undo_keeps_what_the_person_changed(void **state)
{
	struct fx *f = *state;
	struct journal_outcome o;
	char *text;
	int n = 0;

	fx_open(f, "{'steps': [{'tool_calls': [{'name': 'write_file', 'arguments': "
		   "{'path': 'calc.py', 'content': 'def add(a, b):\\n    return a - b\\n'}}, "
		   "{'name': 'write_file', 'arguments': {'path': 'new.txt', 'content': 'by the turn\\n'}}]}, "
		   "{'text': 'Done.'}]}");
	turn(f, "change two files");
	/* the person edits one of the turn's files */
	tu_write(f->p.dir, "calc.py", "# mine\n");
	journal_outcome_init(&o);
	assert_int_equal(chat_undo(f->c, &n, &o), 0);
	assert_true(has(&o.kept, "calc.py"));
	assert_true(has(&o.reverted, "new.txt"));
	journal_outcome_release(&o);
	text = tu_read(f->p.dir, "calc.py");
	assert_string_equal(text, "# mine\n");
	free(text);
	assert_null(tu_read(f->p.dir, "new.txt"));
}

static void test_chat_undo_reverts_a_command(void **state)
{
	struct fx *f = *state;
	struct journal_outcome o;
	char *text;
	int n = 0;

	fx_open(f, "{'steps': [{'tool_calls': [{'name': 'run_command', 'arguments': "
		   "{'argv': ['sed', '-i', 's/a + b/a - b/', 'calc.py']}}]}, "
		   "{'text': 'Edited with sed.'}]}");
	turn(f, "use sed");
	text = tu_read(f->p.dir, "calc.py");
	assert_string_equal(text, SUB);
	free(text);
	journal_outcome_init(&o);
	assert_int_equal(chat_undo(f->c, &n, &o), 0);
	assert_true(has(&o.reverted, "calc.py"));
	journal_outcome_release(&o);
	text = tu_read(f->p.dir, "calc.py");
	assert_string_equal(text, CALC);
	free(text);
}

/* /plan from the session: the pipeline runs here, and its ledger is the session's too. */
static void test_chat_counts_the_pipeline_ledger(void **state)
{
	struct fx *f = *state;
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	struct pipeline_result res = PIPELINE_RESULT_INIT;
	char *text, *id;

	fx_open(f, "{'steps': [{'text': 'Hello.', 'usage': {'prompt_tokens': 50, "
		   "'completion_tokens': 5, 'total_tokens': 55}, 'stream': false}, "
		   "{'tool_calls': [{'name': 'submit_plan', 'arguments': {'summary': 'Fix add', "
		   "'steps': [{'id': '1', 'title': 'Make add add', 'description': 'return a + b', "
		   "'files': ['calc.py']}], 'acceptance': ['test_add passes']}}], "
		   "'usage': {'prompt_tokens': 300, 'completion_tokens': 30, 'total_tokens': 330}, "
		   "'stream': false}]}");
	turn(f, "hello");
	f->cfg.pipeline.baseline = 0;
	po.cfg = &f->cfg;
	po.request = "fix add";
	po.plan_only = 1;
	po.no_wait = 1;
	assert_int_equal(pipeline_run(&res, &po), 0);
	assert_int_equal(res.outcome, PIPELINE_PLANNED);
	assert_non_null(res.plan);
	assert_int_equal(res.ledger.nr, 1);
	assert_int_equal(res.ledger.v[0].calls, 1);
	assert_int_equal(res.ledger.v[0].prompt, 300);
	assert_int_equal(res.tokens, 330);
	chat_record_run(f->c, "plan", &res);
	id = xstrdup(res.run_id);
	pipeline_result_release(&res);
	text = cost(f);
	assert_non_null(strstr(text, "mock-model: 2 calls, 350 prompt + 35 completion tokens, "
			       "$0.4200\n"));
	assert_non_null(strstr(text, "total: 2 calls, 385 tokens, $0.4200\n"));
	free(text);
	/* the session's own folder holds only its own model call, and the run's ending */
	text = tu_read(chat_dir(f->c), "events.jsonl");
	assert_non_null(strstr(text, "\"prompt_tokens\":50"));
	assert_null(strstr(text, "\"prompt_tokens\":300"));
	assert_non_null(strstr(text, "\"type\":\"pipeline\""));
	assert_non_null(strstr(text, id));
	assert_non_null(strstr(text, "\"outcome\":\"planned\""));
	free(text);
	free(id);
}

static json_t *messages_of(json_t *reqs, size_t n)
{
	return json_object_get(json_object_get(json_array_get(reqs, n), "body"), "messages");
}

static void test_chat_compact_keeps_the_request_order(void **state)
{
	struct fx *f = *state;
	struct agent_result r;
	json_t *reqs, *first, *last;
	const char *body;
	char *text;

	fx_open(f, "{'steps': [{'text': 'one'}, {'text': 'Bananas are yellow.'}, "
		   "{'text': 'They talked about fruit.', 'stream': false}, {'text': 'three'}]}");
	turn(f, "first message");
	turn(f, "tell me about BANANA");
	assert_int_equal(chat_messages(f->c), 5);
	assert_int_equal(chat_compact(f->c, &r), 0);
	agent_result_release(&r);
	/* the system prompt with the summary, the latest message whole, its answer */
	assert_int_equal(chat_messages(f->c), 3);
	turn(f, "and now?");
	reqs = mock_requests(&f->m);
	assert_int_equal(json_array_size(reqs), 4);
	first = messages_of(reqs, 0);
	last = messages_of(reqs, 3);
	assert_int_equal(json_array_size(last), 4);
	assert_string_equal(jsonx_str(json_array_get(last, 0), "role"), "system");
	body = jsonx_str(json_array_get(last, 0), "content");
	/* the system prompt as it was, then what came earlier, summed up */
	assert_memory_equal(body, jsonx_str(json_array_get(first, 0), "content"),
			    strlen(jsonx_str(json_array_get(first, 0), "content")));
	assert_non_null(strstr(body, "# Earlier in this conversation"));
	assert_non_null(strstr(body, "They talked about fruit."));
	assert_null(strstr(body, "first message"));
	assert_string_equal(jsonx_str(json_array_get(last, 1), "content"), "tell me about BANANA");
	assert_string_equal(jsonx_str(json_array_get(last, 2), "content"), "Bananas are yellow.");
	assert_string_equal(jsonx_str(json_array_get(last, 3), "content"), "and now?");
	json_decref(reqs);
	text = tu_read(chat_dir(f->c), "events.jsonl");
	assert_non_null(strstr(text, "\"messages_before\":5"));
	free(text);
	/* the summary's call is counted too */
	text = cost(f);
	assert_non_null(strstr(text, "total: 4 calls"));
	free(text);
}

static void test_chat_resume_then_undo_and_clear(void **state)
{
	struct fx *f = *state;
	struct journal_outcome o;
	struct buf b = BUF_INIT;
	char *id, *text;
	size_t nr;
	int n = 0;

	fx_open(f, "{'steps': [{'tool_calls': [{'name': 'write_file', 'arguments': "
		   "{'path': 'calc.py', 'content': 'def add(a, b):\\n    return a - b\\n'}}]}, "
		   "{'text': 'It subtracts now.'}]}");
	turn(f, "make add subtract");
	chat_request_text(f->c, &b);
	assert_non_null(strstr(b.buf, "- make add subtract\n"));
	assert_non_null(strstr(b.buf, "It subtracts now."));
	buf_release(&b);
	id = xstrdup(chat_id(f->c));
	chat_close(f->c);
	f->c = NULL;

	f->o.resume = id;
	if (chat_open(&f->c, &f->o) < 0)
		fail_msg("resume: %s", err_last());
	assert_string_equal(chat_id(f->c), id);
	/* system, user, the call, its result, the answer */
	assert_int_equal(chat_messages(f->c), 5);
	chat_turns(f->c, &nr);
	assert_int_equal(nr, 1);
	/* the turn's journal outlives the process that made it */
	journal_outcome_init(&o);
	assert_int_equal(chat_undo(f->c, &n, &o), 0);
	assert_true(has(&o.reverted, "calc.py"));
	journal_outcome_release(&o);
	text = tu_read(f->p.dir, "calc.py");
	assert_string_equal(text, CALC);
	free(text);
	chat_clear(f->c);
	assert_int_equal(chat_messages(f->c), 0);
	chat_turns(f->c, &nr);
	assert_int_equal(nr, 1);
	chat_request_text(f->c, &b);
	assert_int_equal(b.len, 0);
	buf_release(&b);
	free(id);
	f->o.resume = NULL;
}

static void test_chat_set_model(void **state)
{
	struct fx *f = *state;
	json_t *reqs;

	fx_open(f, "{'steps': [{'text': 'yes'}]}");
	assert_int_equal(chat_set_model(f->c, "nope", "x"), FX_EINVAL);
	assert_non_null(strstr(err_last(), "unknown role 'nope'"));
	err_clear();
	assert_int_equal(chat_set_model(f->c, NULL, "other-model"), 0);
	assert_string_equal(chat_model(f->c), "other-model");
	turn(f, "which model?");
	reqs = mock_requests(&f->m);
	assert_string_equal(jsonx_str(json_object_get(json_array_get(reqs, 0), "body"), "model"),
			    "other-model");
	json_decref(reqs);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_chat_turn_edit_undo_restores_bytes),
		T(test_chat_undo_keeps_what_the_person_changed),
		T(test_chat_undo_reverts_a_command),
		T(test_chat_counts_the_pipeline_ledger),
		T(test_chat_compact_keeps_the_request_order),
		T(test_chat_resume_then_undo_and_clear),
		T(test_chat_set_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * The agent loop end to end: agent_run() in this process against
 * build/mockllm over real HTTP on 127.0.0.1, with the real tools on a
 * temporary workspace, the executor (backend "none") and the verify
 * harness. What the model was sent is read back from the mock's log, so
 * every test asserts what a model (and a person reading the events) would
 * see. One test drives the real `forgex ask` binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/roles.h"
#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"
#include "sandbox/executor.h"
#include "tools/registry.h"
#include "tools/shell.h"
#include "verify/verify.h"

struct fx {
	struct mock m;
	char *base;		/* temporary folder holding ws/ and things outside it */
	char *ws;		/* the workspace */
	struct config cfg;
	struct provider *p;
	struct tool_registry reg;
	struct tool_ctx ctx;
	struct executor ex;
	struct shell_tools sh;
	struct agent_budget budget;
	struct agent_opts o;
	struct agent_result r;
	json_t *events;		/* [{"type", "seq", fields...}] */
	volatile sig_atomic_t cancel;
	const char *cancel_on;	/* event type that sets `cancel` */
};

/* JSON written with single quotes, for readable scripts. */
static char *sq(const char *s)
{
	char *d = xstrdup(s), *p;

	for (p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

static void on_event(void *data, const char *type, json_t *fields)
{
	struct fx *f = data;

	jsonx_set(fields, "type", jsonx_string(type));
	jsonx_set(fields, "seq", json_integer((json_int_t)json_array_size(f->events) + 1));
	json_array_append_new(f->events, fields);
	if (f->cancel_on && !strcmp(type, f->cancel_on))
		f->cancel = 1;
}

/* A fresh workspace (base/ws); nothing else yet. */
static void fx_prepare(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	f->base = tu_mkdtemp();
	f->ws = xstrfmt("%s/ws", f->base);
	if (mkdir(f->ws, 0755))
		die("mkdir %s", f->ws);
}

/*
 * The mock with `script` (single-quoted JSON), the configuration, the
 * provider, the tools and the executor, and options for a builder.
 */
static void fx_mock(struct fx *f, const char *script, const char *more_cfg)
{
	char *s = sq(script), *text;

	mock_start(&f->m, s);
	free(s);
	config_init(&f->cfg);
	text = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		       "api_key_env = \"FX_E2E_AGENT_KEY\"\nmax_retries = 0\n"
		       "timeout_seconds = 10\n[sandbox]\nbackend = \"none\"\n"
		       "[permissions]\nmode = \"safe\"\n%s", f->m.base_url, more_cfg ? more_cfg : "");
	if (config_apply_string(&f->cfg, text, strlen(text), "agent-test.toml", CFG_USER) < 0)
		fail_msg("config: %s", err_last());
	free(text);
	free(f->cfg.workspace);
	f->cfg.workspace = xstrdup(f->ws);
	if (provider_open(&f->p, &f->cfg, NULL, NULL) < 0)
		fail_msg("provider_open: %s", err_last());
	registry_init(&f->reg);
	if (executor_init(&f->ex, &f->cfg, f->ws) < 0)
		fail_msg("executor_init: %s", err_last());
	f->sh = (struct shell_tools)SHELL_TOOLS_INIT;
	f->sh.executor = &f->ex;
	if (tools_register_builtin(&f->reg) < 0 || tools_register_shell(&f->reg, &f->sh) < 0 ||
	    roles_register_tools(&f->reg) < 0)
		fail_msg("registering tools: %s", err_last());
	if (tool_ctx_init(&f->ctx, &f->reg, f->ws) < 0)
		fail_msg("tool_ctx_init: %s", err_last());
	agent_budget_init(&f->budget, 0, 0, 0);
	f->events = json_array();
	f->o = (struct agent_opts)AGENT_OPTS_INIT;
	f->o.role = ROLE_BUILDER;
	f->o.task = "Make the change the user asked for.";
	f->o.provider = f->p;
	f->o.tools = &f->ctx;
	f->o.budget = &f->budget;
	f->o.on_event = on_event;
	f->o.event_data = f;
	f->o.cancel = &f->cancel;
	f->o.stream = 1;
	f->r = (struct agent_result)AGENT_RESULT_INIT;
}

static void fx_start(struct fx *f, const char *script, const char *more_cfg)
{
	fx_prepare(f);
	fx_mock(f, script, more_cfg);
}

static void fx_run(struct fx *f)
{
	assert_int_equal(agent_run(&f->r, &f->o), 0);
}

static void fx_end(struct fx *f)
{
	agent_result_release(&f->r);
	json_decref(f->events);
	agent_budget_release(&f->budget);
	tool_ctx_release(&f->ctx);
	shell_tools_release(&f->sh);
	registry_release(&f->reg);
	executor_release(&f->ex);
	provider_free(f->p);
	config_release(&f->cfg);
	mock_release(&f->m);
	free(f->ws);
	tu_rmtree(f->base);
}

static void fx_write(struct fx *f, const char *rel, const char *content)
{
	tu_write(f->ws, rel, content);
}

/* The messages of the `i`th request the mock received (borrowed from `reqs`). */
static json_t *messages(json_t *reqs, size_t i)
{
	json_t *m = json_object_get(json_object_get(json_array_get(reqs, i), "body"), "messages");

	if (!m)
		fail_msg("request %zu has no messages", i);
	return m;
}

/* The content of the tool message answering `call_id` in request `i`, or NULL. */
static const char *tool_result_in(json_t *reqs, size_t i, const char *call_id)
{
	json_t *msgs = messages(reqs, i), *m;
	size_t k;

	json_array_foreach(msgs, k, m)
		if (!strcmp(jsonx_str(m, "role"), "tool") &&
		    !strcmp(jsonx_str(m, "tool_call_id") ? jsonx_str(m, "tool_call_id") : "", call_id))
			return jsonx_str(m, "content");
	return NULL;
}

/* Events of `type` in order: how many, and the `n`th (0-based) or NULL. */
static json_t *event(const struct fx *f, const char *type, size_t n)
{
	json_t *e;
	size_t i;

	json_array_foreach(f->events, i, e)
		if (!strcmp(jsonx_str(e, "type"), type) && !n--)
			return e;
	return NULL;
}

static size_t events_of(const struct fx *f, const char *type)
{
	json_t *e;
	size_t i, n = 0;

	json_array_foreach(f->events, i, e)
		n += !strcmp(jsonx_str(e, "type"), type);
	return n;
}

/* ---- the tests ---- */

static void test_agent_lists_reads_searches_then_answers(void **state)
{
	struct fx f;
	json_t *reqs, *tools, *t;
	const char *res;
	struct buf names = BUF_INIT;
	size_t i;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'c1', 'name': 'list_dir', 'arguments': {'path': '.', 'depth': 2}}]},"
		 "{'tool_calls': [{'id': 'c2', 'name': 'read_file', 'arguments': {'path': 'src/calc.c'}}]},"
		 "{'tool_calls': [{'id': 'c3', 'name': 'search', 'arguments': {'pattern': 'answer\\\\('}}]},"
		 "{'text': 'answer() in src/calc.c returns 42; main.c prints it.'}]", NULL);
	fx_write(&f, "src/calc.c", "int answer(void)\n{\n\treturn 42;\n}\n");
	fx_write(&f, "src/main.c", "#include <stdio.h>\nint answer(void);\n"
		 "int main(void) { printf(\"%d\\n\", answer()); }\n");
	f.o.role = ROLE_ARCHITECT;
	f.o.plain_answer = 1;
	f.o.system_prompt = role_ask_prompt();
	f.o.task = "What does answer() return?";
	fx_run(&f);

	assert_int_equal(f.r.status, AGENT_ANSWERED);
	assert_string_equal(f.r.answer, "answer() in src/calc.c returns 42; main.c prints it.");
	assert_null(f.r.terminal_args);
	assert_int_equal(f.r.turns, 4);
	assert_int_equal(f.r.tool_calls, 3);
	reqs = mock_requests(&f.m);
	assert_int_equal(json_array_size(reqs), 4);
	/* offered: exactly the read-only tools, no terminal tool */
	tools = json_object_get(json_object_get(json_array_get(reqs, 0), "body"), "tools");
	json_array_foreach(tools, i, t)
		buf_addf(&names, "%s ", jsonx_str(json_object_get(t, "function"), "name"));
	assert_string_equal(names.buf, "read_file list_dir search ");
	/* the system prompt and the task open every request */
	for (i = 0; i < 4; i++) {
		assert_string_equal(jsonx_str(json_array_get(messages(reqs, i), 0), "content"),
				    role_ask_prompt());
		assert_string_equal(jsonx_str(json_array_get(messages(reqs, i), 1), "content"),
				    "What does answer() return?");
	}
	res = tool_result_in(reqs, 1, "c1");
	assert_non_null(res);
	assert_non_null(strstr(res, "src/calc.c"));
	assert_non_null(strstr(res, "src/main.c"));
	res = tool_result_in(reqs, 2, "c2");
	assert_non_null(strstr(res, "\treturn 42;"));
	res = tool_result_in(reqs, 3, "c3");
	assert_non_null(strstr(res, "src/calc.c:1:int answer(void)"));
	assert_non_null(strstr(res, "src/main.c:3:"));
	/* the assistant turns carry the calls back */
	assert_string_equal(jsonx_str(json_array_get(json_object_get(json_array_get(messages(reqs, 3),
		4), "tool_calls"), 0), "id"), "c2");
	json_decref(reqs);
	buf_release(&names);
	fx_end(&f);
}

static void test_agent_events_are_complete_and_in_order(void **state)
{
	struct fx f;
	json_t *e;
	struct buf seq = BUF_INIT;
	size_t i;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'a', 'name': 'read_file', 'arguments': {'path': 'x.txt'}},"
		 "                {'id': 'b', 'name': 'read_file', 'arguments': {'path': 'nope.txt'}}],"
		 " 'usage': {'prompt_tokens': 100, 'completion_tokens': 20, 'total_tokens': 120}},"
		 "{'tool_calls': [{'id': 'c', 'name': 'finish', 'arguments': {'summary': 'read it'}}],"
		 " 'usage': {'prompt_tokens': 150, 'completion_tokens': 10, 'total_tokens': 160}}]", NULL);
	fx_write(&f, "x.txt", "hello\n");
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);

	json_array_foreach(f.events, i, e) {
		/* numbered from 1 without gaps, each with its role and turn */
		assert_int_equal(jsonx_int(e, "seq", -1), (json_int_t)i + 1);
		assert_string_equal(jsonx_str(e, "role"), "builder");
		assert_true(json_is_integer(json_object_get(e, "turn")));
		if (strcmp(jsonx_str(e, "type"), "progress"))
			buf_addf(&seq, "%s:%lld ", jsonx_str(e, "type"), jsonx_int(e, "turn", -1));
	}
	assert_string_equal(seq.buf,
			    "agent_start:0 context_window:0 model_call:1 tool_call:1 tool_result:1 tool_call:1 "
			    "tool_result:1 model_call:2 tool_call:2 tool_result:2 agent_end:2 ");
	e = event(&f, "model_call", 0);
	assert_string_equal(jsonx_str(e, "model"), "mock-model");
	assert_string_equal(jsonx_str(e, "finish_reason"), "tool_calls");
	assert_int_equal(jsonx_int(json_object_get(e, "usage"), "total_tokens", -1), 120);
	assert_true(json_is_false(json_object_get(json_object_get(e, "usage"), "estimated")));
	assert_int_equal(jsonx_int(e, "tool_calls", -1), 2);
	assert_true(json_is_integer(json_object_get(e, "duration_ms")));
	assert_int_equal(jsonx_int(json_object_get(event(&f, "model_call", 1), "budget"),
				   "tokens_used", -1), 280);
	e = event(&f, "tool_call", 0);
	assert_string_equal(jsonx_str(e, "id"), "a");
	assert_string_equal(jsonx_str(e, "name"), "read_file");
	assert_string_equal(jsonx_str(json_object_get(e, "arguments"), "path"), "x.txt");
	e = event(&f, "tool_result", 0);
	assert_string_equal(jsonx_str(e, "status"), "ok");
	assert_non_null(strstr(jsonx_str(e, "preview"), "hello"));
	assert_true(jsonx_int(e, "bytes", 0) > 5);
	e = event(&f, "tool_result", 1);
	assert_string_equal(jsonx_str(e, "id"), "b");
	assert_string_equal(jsonx_str(e, "status"), "failed");
	e = event(&f, "tool_result", 2);
	assert_true(json_is_true(json_object_get(e, "terminal")));
	e = event(&f, "agent_end", 0);
	assert_string_equal(jsonx_str(e, "status"), "done");
	assert_int_equal(jsonx_int(e, "turns", -1), 2);
	assert_int_equal(jsonx_int(e, "tool_calls", -1), 3);
	assert_int_equal(jsonx_int(json_object_get(e, "usage"), "total_tokens", -1), 280);
	assert_true(json_is_null(json_object_get(e, "error")));
	/* progress for a person names the tool and its argument */
	json_array_foreach(f.events, i, e)
		if (!strcmp(jsonx_str(e, "type"), "progress") &&
		    strstr(jsonx_str(e, "message"), "builder turn 1: read_file nope.txt"))
			break;
	assert_true(i < json_array_size(f.events));
	assert_string_equal(jsonx_str(e, "kind"), "tool");
	e = event(&f, "progress", 0);
	assert_string_equal(jsonx_str(e, "kind"), "model");
	assert_string_equal(jsonx_str(e, "message"), "builder turn 1: asking mock-model (0.0k tokens so far)");
	assert_int_equal(f.r.usage.total_tokens, 280);
	assert_string_equal(jsonx_str(f.r.terminal_args, "summary"), "read it");
	assert_string_equal(f.r.terminal_tool, "finish");
	buf_release(&seq);
	fx_end(&f);
}

static void test_agent_read_only_role_cannot_write(void **state)
{
	struct fx f;
	json_t *reqs;
	const char *res;
	char *text, *offered;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'w', 'name': 'write_file', 'arguments': {'path': 'notes.txt', 'content': 'x'}},"
		 "                {'id': 'e', 'name': 'edit_file', 'arguments': {'path': 'keep.txt', 'old_string': 'keep', 'new_string': 'lost'}},"
		 "                {'id': 'r', 'name': 'run_command', 'arguments': {'argv': ['touch', 'made.txt']}},"
		 "                {'id': 'f', 'name': 'finish', 'arguments': {'summary': 'not mine'}}]},"
		 "{'tool_calls': [{'id': 'p', 'name': 'submit_plan', 'arguments': {'summary': 'Add notes.',"
		 "  'steps': [{'id': '1', 'title': 'Write notes', 'description': 'Create notes.txt', 'files': ['notes.txt']}],"
		 "  'acceptance': ['notes.txt exists']}}]}]", NULL);
	fx_write(&f, "keep.txt", "keep\n");
	f.o.role = ROLE_ARCHITECT;
	fx_run(&f);

	assert_int_equal(f.r.status, AGENT_DONE);
	assert_string_equal(f.r.terminal_tool, "submit_plan");
	assert_string_equal(jsonx_str(f.r.terminal_args, "summary"), "Add notes.");
	assert_int_equal(json_array_size(json_object_get(f.r.terminal_args, "steps")), 1);
	/* nothing changed on disk */
	text = tu_read(f.ws, "notes.txt");
	assert_null(text);
	text = tu_read(f.ws, "made.txt");
	assert_null(text);
	text = tu_read(f.ws, "keep.txt");
	assert_string_equal(text, "keep\n");
	free(text);
	assert_int_equal(f.ctx.changed.nr, 0);
	/* and the model was told why, as the calls' results */
	reqs = mock_requests(&f.m);
	res = tool_result_in(reqs, 1, "w");
	assert_non_null(res);
	assert_non_null(strstr(res, "missing permissions: write"));
	assert_non_null(strstr(tool_result_in(reqs, 1, "e"), "missing permissions: write"));
	assert_non_null(strstr(tool_result_in(reqs, 1, "r"), "missing permissions: terminal"));
	assert_non_null(strstr(tool_result_in(reqs, 1, "f"),
			       "finish is not available to this role; end with submit_plan"));
	/* a read-only role is not even offered the write tools */
	offered = json_dumps(json_object_get(json_object_get(json_array_get(reqs, 0), "body"),
					     "tools"), 0);
	assert_non_null(offered);
	assert_non_null(strstr(offered, "\"read_file\""));
	assert_null(strstr(offered, "\"write_file\""));
	assert_null(strstr(offered, "\"finish\""));
	free(offered);
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_edit_with_wrong_indentation_applies_once(void **state)
{
	struct fx f;
	char *text;
	json_t *reqs, *e;

	(void)state;
	/* the model drops the file's indentation in old_string and new_string */
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'e1', 'name': 'edit_file', 'arguments': {'path': 'calc.py',"
		 "  'old_string': 'if x > 0:\\n    return 1', 'new_string': 'if x > 0:\\n    return 2'}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'changed 1 to 2'}}]}]",
		 NULL);
	fx_write(&f, "calc.py", "def sign(x):\n    if x > 0:\n        return 1\n    return 0\n");
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);
	text = tu_read(f.ws, "calc.py");
	assert_string_equal(text, "def sign(x):\n    if x > 0:\n        return 2\n    return 0\n");
	free(text);
	e = event(&f, "tool_result", 0);
	assert_string_equal(jsonx_str(e, "status"), "ok");
	assert_int_equal(f.ctx.changed.nr, 1);
	assert_string_equal(f.ctx.changed.v[0], "calc.py");
	reqs = mock_requests(&f.m);
	assert_int_equal(json_array_size(reqs), 2);
	assert_null(strstr(tool_result_in(reqs, 1, "e1"), "error"));
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_ambiguous_edit_lists_candidates(void **state)
{
	struct fx f;
	char *text;
	json_t *reqs;
	const char *res;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'e1', 'name': 'edit_file', 'arguments': {'path': 'conf.ini',"
		 "  'old_string': 'enabled = no', 'new_string': 'enabled = yes'}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'gave up'}}]}]",
		 NULL);
	fx_write(&f, "conf.ini", "[a]\nenabled = no\nname = a\n[b]\nenabled = no\nname = b\n");
	fx_run(&f);
	text = tu_read(f.ws, "conf.ini");
	assert_string_equal(text, "[a]\nenabled = no\nname = a\n[b]\nenabled = no\nname = b\n");
	free(text);
	reqs = mock_requests(&f.m);
	res = tool_result_in(reqs, 1, "e1");
	assert_non_null(res);
	assert_non_null(strstr(res, "occurs 2 times"));
	assert_non_null(strstr(res, "at lines 2, 5"));
	assert_non_null(strstr(res, "name = a"));	/* the surrounding lines are shown */
	assert_non_null(strstr(res, "name = b"));
	assert_string_equal(jsonx_str(event(&f, "tool_result", 0), "status"), "failed");
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_symlink_out_of_workspace_cannot_be_read(void **state)
{
	struct fx f;
	json_t *reqs, *msgs, *m;
	char *link1, *link2, *secret, *outside, *text;
	size_t i, n;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': ["
		 "  {'id': 'r1', 'name': 'read_file', 'arguments': {'path': 'passwd'}},"
		 "  {'id': 'r2', 'name': 'read_file', 'arguments': {'path': 'secret'}},"
		 "  {'id': 's1', 'name': 'search', 'arguments': {'pattern': 'root:|TOP-SECRET'}},"
		 "  {'id': 's2', 'name': 'search', 'arguments': {'pattern': 'root', 'path': 'passwd'}},"
		 "  {'id': 'l1', 'name': 'list_dir', 'arguments': {'path': 'secret'}},"
		 "  {'id': 'w1', 'name': 'write_file', 'arguments': {'path': 'secret', 'content': 'owned'}},"
		 "  {'id': 'e1', 'name': 'edit_file', 'arguments': {'path': 'secret', 'old_string': 'TOP', 'new_string': 'OWNED'}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'tried'}}]}]", NULL);
	outside = xstrfmt("%s/outside.txt", f.base);
	tu_write(f.base, "outside.txt", "TOP-SECRET\n");
	link1 = xstrfmt("%s/passwd", f.ws);
	link2 = xstrfmt("%s/secret", f.ws);
	assert_int_equal(symlink("/etc/passwd", link1), 0);
	assert_int_equal(symlink(outside, link2), 0);
	fx_write(&f, "ok.txt", "fine\n");
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);

	reqs = mock_requests(&f.m);
	msgs = messages(reqs, 1);
	n = 0;
	json_array_foreach(msgs, i, m) {
		const char *c = jsonx_str(m, "content");

		if (strcmp(jsonx_str(m, "role"), "tool"))
			continue;
		n++;
		assert_null(strstr(c, "root:x:0"));
		assert_null(strstr(c, "root:"));
		assert_null(strstr(c, "TOP-SECRET"));
	}
	assert_int_equal(n, 7);
	for (i = 0; i < 7; i++) {
		const char *st = jsonx_str(event(&f, "tool_result", i), "status");
		const char *id = jsonx_str(event(&f, "tool_result", i), "id");

		/* searching the whole tree is fine, it just finds nothing outside */
		if (!strcmp(id, "s1"))
			assert_string_equal(st, "ok");
		else
			assert_string_not_equal(st, "ok");
	}
	secret = tu_read(f.base, "outside.txt");
	assert_string_equal(secret, "TOP-SECRET\n");
	text = tu_read(f.ws, "ok.txt");
	assert_string_equal(text, "fine\n");
	free(text);
	free(secret);
	free(outside);
	free(link1);
	free(link2);
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_paths_outside_workspace_are_refused(void **state)
{
	struct fx f;
	json_t *reqs;
	char *script, *abs, *text;
	const char *id;
	size_t i;

	(void)state;
	/* the script names the absolute path of a folder made here */
	fx_prepare(&f);
	tu_write(f.base, "x", "OUTSIDE-DATA\n");
	abs = xstrfmt("%s/x", f.base);
	script = xstrfmt("[{\"tool_calls\": ["
			 "{\"id\": \"a\", \"name\": \"read_file\", \"arguments\": {\"path\": \"../x\"}},"
			 "{\"id\": \"b\", \"name\": \"read_file\", \"arguments\": {\"path\": \"%s\"}},"
			 "{\"id\": \"c\", \"name\": \"write_file\", \"arguments\": {\"path\": \"../y\", \"content\": \"z\"}},"
			 "{\"id\": \"d\", \"name\": \"write_file\", \"arguments\": {\"path\": \"%s/z\", \"content\": \"z\"}},"
			 "{\"id\": \"e\", \"name\": \"list_dir\", \"arguments\": {\"path\": \"..\"}},"
			 "{\"id\": \"g\", \"name\": \"run_command\", \"arguments\": {\"argv\": [\"ls\"], \"cwd\": \"..\"}},"
			 "{\"id\": \"h\", \"name\": \"read_file\", \"arguments\": {\"path\": \"/etc/passwd\"}}]},"
			 "{\"tool_calls\": [{\"id\": \"f\", \"name\": \"finish\", \"arguments\": {\"summary\": \"no\"}}]}]",
			 abs, f.base);
	fx_mock(&f, script, NULL);
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);
	reqs = mock_requests(&f.m);
	for (i = 0; i < 7; i++) {
		const char *res;

		id = jsonx_str(event(&f, "tool_result", i), "id");
		res = tool_result_in(reqs, 1, id);
		assert_non_null(res);
		assert_null(strstr(res, "OUTSIDE-DATA"));
		assert_null(strstr(res, "root:"));
		assert_string_not_equal(jsonx_str(event(&f, "tool_result", i), "status"), "ok");
		assert_true(strstr(res, "outside") || strstr(res, "escapes") || strstr(res, "refused"));
	}
	text = tu_read(f.base, "y");
	assert_null(text);
	text = tu_read(f.base, "z");
	assert_null(text);
	free(script);
	free(abs);
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_loop_guard_stops_repeated_failures(void **state)
{
	struct fx f;

	(void)state;
	/* the same failing call three times (arguments in another order the third time) */
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'a', 'name': 'read_file', 'arguments': {'path': 'gone.c', 'start_line': 1}}]},"
		 "{'tool_calls': [{'id': 'b', 'name': 'read_file', 'arguments': {'path': 'gone.c', 'start_line': 1}}]},"
		 "{'tool_calls': [{'id': 'c', 'name': 'read_file', 'arguments': '{\\'start_line\\': 1, \\'path\\': \\'gone.c\\'}'}]},"
		 "{'text': 'never asked', 'repeat': -1}]", NULL);
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_LOOP_GUARD);
	assert_int_equal(f.r.turns, 3);
	assert_int_equal(mock_count(&f.m, "/chat/completions"), 3);
	assert_non_null(strstr(f.r.error, "same failing call 3 times"));
	assert_non_null(strstr(f.r.error, "read_file gone.c"));
	assert_string_equal(jsonx_str(event(&f, "agent_end", 0), "status"), "loop_guard");
	fx_end(&f);
}

static void test_agent_loop_guard_needs_the_same_failure(void **state)
{
	struct fx f;

	(void)state;
	/* failures with different arguments, and a success between equal ones */
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'a', 'name': 'read_file', 'arguments': {'path': 'gone.c'}}]},"
		 "{'tool_calls': [{'id': 'b', 'name': 'read_file', 'arguments': {'path': 'gone.c'}}]},"
		 "{'tool_calls': [{'id': 'c', 'name': 'read_file', 'arguments': {'path': 'here.c'}}]},"
		 "{'tool_calls': [{'id': 'd', 'name': 'read_file', 'arguments': {'path': 'gone.c'}}]},"
		 "{'tool_calls': [{'id': 'e', 'name': 'read_file', 'arguments': {'path': 'gone.h'}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'ok'}}]}]", NULL);
	fx_write(&f, "here.c", "x\n");
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);
	assert_int_equal(f.r.turns, 6);
	fx_end(&f);
}

static void test_agent_max_turns(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f, "[{'tool_calls': [{'id': 'a', 'name': 'list_dir', 'arguments': {}}], 'repeat': -1}]",
		 NULL);
	f.o.max_turns = 2;
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_MAX_TURNS);
	assert_int_equal(f.r.turns, 2);
	assert_int_equal(f.r.tool_calls, 2);
	assert_int_equal(mock_count(&f.m, "/chat/completions"), 2);
	assert_non_null(strstr(f.r.error, "max_turns (2)"));
	fx_end(&f);
}

static void test_agent_token_budget_exhausted(void **state)
{
	struct fx f;
	struct agent_result second = AGENT_RESULT_INIT;

	(void)state;
	fx_start(&f, "[{'tool_calls': [{'id': 'a', 'name': 'list_dir', 'arguments': {}}],"
		 "  'usage': {'prompt_tokens': 900, 'completion_tokens': 200, 'total_tokens': 1100},"
		 "  'repeat': -1}]", NULL);
	f.budget.max_tokens = 1000;
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_BUDGET);
	assert_int_equal(f.r.turns, 1);
	assert_int_equal(mock_count(&f.m, "/chat/completions"), 1);
	assert_string_equal(f.r.error, "token budget spent: 1100 of 1000 tokens used");
	assert_int_equal(f.budget.tokens_used, 1100);
	/* the budget is shared: the next role does not get to call the model at all */
	f.o.role = ROLE_SUPERVISOR;
	assert_int_equal(agent_run(&second, &f.o), 0);
	assert_int_equal(second.status, AGENT_BUDGET);
	assert_int_equal(second.turns, 0);
	assert_int_equal(mock_count(&f.m, "/chat/completions"), 1);
	agent_result_release(&second);
	fx_end(&f);
}

static void test_agent_cost_budget_with_prices(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f, "[{'tool_calls': [{'id': 'a', 'name': 'list_dir', 'arguments': {}}],"
		 "  'usage': {'prompt_tokens': 200000, 'completion_tokens': 10000, 'total_tokens': 210000},"
		 "  'repeat': -1}]", NULL);
	assert_int_equal(agent_budget_parse_prices(&f.budget, "mock-model=3/15, *=100/100"), 0);
	f.budget.max_cost_usd = 1.0;
	fx_run(&f);
	/* 0.2M * $3 + 0.01M * $15 = $0.75 a call: the second call crosses $1 */
	assert_int_equal(f.r.status, AGENT_BUDGET);
	assert_int_equal(f.r.turns, 2);
	assert_true(fabs(f.r.cost_usd - 1.5) < 1e-9);
	assert_non_null(strstr(f.r.error, "cost budget spent: $1.5000 of $1.0000"));
	assert_true(fabs(json_real_value(json_object_get(event(&f, "model_call", 0), "cost_usd")) -
			 0.75) < 1e-9);
	fx_end(&f);
}

static void test_agent_run_command_denied_by_policy(void **state)
{
	struct fx f;
	json_t *reqs;
	const char *res;
	char *text;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 'rm', 'name': 'run_command', 'arguments': {'argv': ['rm', '-rf', 'src']}},"
		 "                {'id': 'sh', 'name': 'run_command', 'arguments': {'argv': ['/bin/sh', '-c', 'rm -rf src']}},"
		 "                {'id': 'curl', 'name': 'run_command', 'arguments': {'argv': ['curl', 'http://example.com']}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'could not'}}]}]", NULL);
	fx_write(&f, "src/a.c", "int a;\n");
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);
	text = tu_read(f.ws, "src/a.c");
	assert_string_equal(text, "int a;\n");
	free(text);
	reqs = mock_requests(&f.m);
	res = tool_result_in(reqs, 1, "rm");
	assert_string_equal(res, "error: Command denied by policy: Command 'rm' is in the deny list");
	res = tool_result_in(reqs, 1, "sh");
	assert_non_null(strstr(res, "Command denied by policy: Command 'sh' is in the deny list"));
	/* mode "safe": a network command needs approval, and gets none */
	res = tool_result_in(reqs, 1, "curl");
	assert_non_null(strstr(res, "Command not approved: curl http://example.com"));
	/* a policy's no is shown as a refusal, not as a failure */
	assert_string_equal(jsonx_str(event(&f, "tool_result", 0), "status"), "refused");
	assert_string_equal(jsonx_str(event(&f, "tool_result", 2), "status"), "refused");
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_run_command_output_head_and_tail(void **state)
{
	struct fx f;
	json_t *reqs;
	const char *res;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 's', 'name': 'run_command', 'arguments': {'argv': ['seq', '1', '100000']}},"
		 "                {'id': 'x', 'name': 'run_command', 'arguments': {'argv': ['ls', 'no-such-file']}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'counted'}}]}]", NULL);
	f.sh.head_bytes = 200;
	f.sh.tail_bytes = 100;
	fx_run(&f);
	reqs = mock_requests(&f.m);
	res = tool_result_in(reqs, 1, "s");
	assert_non_null(res);
	/* seq 1 100000 writes 588895 bytes */
	assert_true(strlen(res) < 1000);
	assert_non_null(strstr(res, "$ seq 1 100000\nexit_code: 0\ntimed_out: false\n"
			       "truncated: true\nduration_ms: "));
	assert_non_null(strstr(res, "--- stdout (588895 bytes) ---\n1\n2\n3\n"));
	assert_non_null(strstr(res, "[... forgex: 588595 bytes omitted ...]"));
	assert_non_null(strstr(res, "\n99999\n100000\n--- stderr (0 bytes) ---\n"));
	res = tool_result_in(reqs, 1, "x");
	assert_non_null(strstr(res, "exit_code: 2\n"));
	assert_non_null(strstr(res, "No such file"));
	/* a non-zero exit is information for the model, not a failed tool */
	assert_string_equal(jsonx_str(event(&f, "tool_result", 1), "status"), "ok");
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_run_tests_reports_failing_test(void **state)
{
	struct fx f;
	json_t *reqs;
	const char *res;

	(void)state;
	fx_start(&f, "["
		 "{'tool_calls': [{'id': 't', 'name': 'run_tests', 'arguments': {}}]},"
		 "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': {'summary': 'one fails'}}]}]",
		 NULL);
	fx_write(&f, "Makefile", "test:\n\t@printf '1..3\\nok 1 - adds\\nnot ok 2 - subtracts\\n"
		 "#   expected 1, got -1\\nok 3 - multiplies\\n'; exit 1\n");
	fx_run(&f);
	reqs = mock_requests(&f.m);
	res = tool_result_in(reqs, 1, "t");
	assert_non_null(res);
	assert_non_null(strstr(res, "command: make test"));
	assert_non_null(strstr(res, "outcome: FAIL"));
	assert_non_null(strstr(res, "passed: 2, failed: 1"));
	assert_non_null(strstr(res, "failing tests (1):\n- "));
	assert_non_null(strstr(res, "subtracts [fail]"));
	assert_null(strstr(res, "adds [fail]"));
	assert_non_null(f.sh.last_tests);
	assert_int_equal(f.sh.last_tests->failed, 1);
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_nudges_then_no_terminal(void **state)
{
	struct fx f;
	json_t *reqs, *msgs;
	const char *last;

	(void)state;
	fx_start(&f, "[{'text': 'I think it is done.', 'repeat': -1}]", NULL);
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_NO_TERMINAL);
	assert_int_equal(f.r.turns, 1 + AGENT_NUDGES_MAX);
	assert_int_equal(events_of(&f, "agent_nudge"), AGENT_NUDGES_MAX);
	reqs = mock_requests(&f.m);
	msgs = messages(reqs, 1);
	last = jsonx_str(json_array_get(msgs, json_array_size(msgs) - 1), "content");
	assert_non_null(strstr(last, "call finish now"));
	assert_string_equal(jsonx_str(json_array_get(msgs, json_array_size(msgs) - 1), "role"),
			    "user");
	assert_string_equal(f.r.answer, "I think it is done.");
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_nudge_then_terminal(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f, "[{'text': 'All done.'},"
		 "{'tool_calls': [{'id': 'v', 'name': 'submit_verdict', 'arguments': {'verdict': 'FAIL', 'reasons': ['no test'], 'required_fixes': []}}]},"
		 "{'tool_calls': [{'id': 'v2', 'name': 'submit_verdict', 'arguments': {'verdict': 'FAIL', 'reasons': ['no test'], 'required_fixes': ['add a test for sign(0)']}}]}]",
		 NULL);
	f.o.role = ROLE_SUPERVISOR;
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);
	assert_int_equal(f.r.turns, 3);
	assert_string_equal(jsonx_str(f.r.terminal_args, "verdict"), "FAIL");
	assert_string_equal(json_string_value(json_array_get(json_object_get(f.r.terminal_args,
		"required_fixes"), 0)), "add a test for sign(0)");
	/* the FAIL without fixes was sent back, not accepted */
	assert_string_equal(jsonx_str(event(&f, "tool_result", 0), "status"), "failed");
	fx_end(&f);
}

static void test_agent_provider_error(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f, "[{'status': 500, 'repeat': -1}]", NULL);
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_PROVIDER_ERROR);
	assert_int_equal(f.r.error_code, FX_EPROVIDER);
	assert_non_null(strstr(f.r.error, "HTTP 500"));
	assert_non_null(json_object_get(event(&f, "model_call", 0), "error"));
	fx_end(&f);
}

static void test_agent_interrupted_between_tools(void **state)
{
	struct fx f;

	(void)state;
	fx_start(&f, "[{'tool_calls': [{'id': 'a', 'name': 'list_dir', 'arguments': {}},"
		 "                         {'id': 'b', 'name': 'write_file', 'arguments': {'path': 'late.txt', 'content': 'x'}}]},"
		 " {'text': 'never asked'}]", NULL);
	f.cancel_on = "tool_result";
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_INTERRUPTED);
	assert_int_equal(f.r.tool_calls, 1);
	assert_null(tu_read(f.ws, "late.txt"));
	assert_int_equal(mock_count(&f.m, "/chat/completions"), 1);
	fx_end(&f);
}

/* Whether raw request body `next` begins with `prev` less the "]}" closing prev's messages. */
static int raw_extends(const json_t *prev, const json_t *next)
{
	const char *a = jsonx_str(prev, "raw"), *b = jsonx_str(next, "raw");
	size_t la = a ? strlen(a) : 0;

	return la > 2 && !strcmp(a + la - 2, "]}") && strlen(b) > la && !memcmp(a, b, la - 2);
}

/*
 * Against a llama.cpp server reporting a 9000-token window (GET /props):
 * tool results are cut to an eighth of it, requests grow append-only
 * until the window is nearly full, then one compaction step stubs the
 * oldest results; no request goes over the window.
 */
static void test_agent_context_control(void **state)
{
	struct fx f;
	json_t *reqs, *msgs, *ev, *r;
	struct buf big = BUF_INIT, script = BUF_INIT;
	const char *res;
	size_t i, breaks = 0, first_break = 0;

	(void)state;
	buf_addstr(&script, "{'server': 'llamacpp', 'n_ctx': 9000, 'steps': [");
	for (i = 0; i < 8; i++)
		buf_addf(&script, "{'tool_calls': [{'id': 'c%zu', 'name': 'read_file', 'arguments': "
			 "{'path': '%s', 'start_line': %zu}}]},", i, i ? "small.txt" : "big.txt", i + 1);
	buf_addstr(&script, "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': "
		   "{'summary': 'read'}}]}]}");
	fx_start(&f, script.buf, NULL);
	for (i = 0; i < 400; i++)
		buf_addf(&big, "line %03zu of a file that is rather long\n", i);
	fx_write(&f, "big.txt", big.buf);
	buf_reset(&big);
	for (i = 0; i < 60; i++)
		buf_addf(&big, "line %03zu of a smaller file\n", i);
	fx_write(&f, "small.txt", big.buf);
	f.o.tool_result_max = 8000;	/* more than an eighth of the window: the window wins */
	fx_run(&f);
	if (f.r.status != AGENT_DONE)
		fail_msg("%s", f.r.error);
	/* the window came from the server */
	ev = event(&f, "context_window", 0);
	assert_int_equal(jsonx_int(ev, "tokens", 0), 9000);
	assert_string_equal(jsonx_str(ev, "source"), "llama.cpp /props");
	assert_int_equal(mock_count(&f.m, "/props"), 1);
	reqs = mock_requests(&f.m);
	assert_int_equal(json_array_size(reqs), 9);
	/* a result is cut to an eighth of the window (1125 tokens, 3913 bytes), head and tail kept */
	res = tool_result_in(reqs, 1, "c0");
	assert_true(strlen(res) < 4100);
	assert_non_null(strstr(res, "line 000"));
	assert_non_null(strstr(res, "line 399"));
	assert_non_null(strstr(res, "bytes of this result were left out"));
	assert_true(json_is_true(json_object_get(event(&f, "tool_result", 0), "cut")));
	/* no request over the window less the reply's reserve; append-only but at compaction */
	json_array_foreach(reqs, i, r) {
		size_t bytes = strlen(jsonx_str(r, "raw"));

		assert_true((double)bytes * AGENT_TOKENS_PER_BYTE <= 9000 - 1125);
		if (i && !raw_extends(json_array_get(reqs, i - 1), r) && !breaks++)
			first_break = i;
	}
	assert_int_equal(breaks, (size_t)f.r.compactions);
	assert_int_equal(breaks, 1);
	assert_int_equal(events_of(&f, "context_compact"), 1);
	/* after the compaction, the oldest result is a stub; the newest is whole */
	res = tool_result_in(reqs, first_break, "c0");
	assert_non_null(strstr(res, "[forgex: this earlier result of read_file"));
	msgs = messages(reqs, first_break);
	assert_string_equal(jsonx_str(json_array_get(msgs, 0), "content"), role_prompt(ROLE_BUILDER));
	assert_string_equal(jsonx_str(json_array_get(msgs, 1), "content"),
			    "Make the change the user asked for.");
	res = jsonx_str(json_array_get(msgs, json_array_size(msgs) - 1), "content");
	assert_non_null(strstr(res, "line 059 of a smaller file"));
	assert_true(f.r.trimmed >= 1);
	buf_release(&big);
	buf_release(&script);
	json_decref(reqs);
	fx_end(&f);
}

/* Ten turns: each request the mock received begins, byte for byte, with the one before. */
static void test_agent_requests_append_only(void **state)
{
	struct fx f;
	struct buf script = BUF_INIT;
	json_t *reqs;
	size_t i;

	(void)state;
	buf_addstr(&script, "[");
	for (i = 0; i < 9; i++)
		buf_addf(&script, "{'text': 'Step %zu.', 'tool_calls': [{'id': 't%zu', 'name': '%s', "
			 "'arguments': {'path': '%s'}}]},", i, i, i % 2 ? "read_file" : "list_dir",
			 i % 2 ? "a.txt" : ".");
	buf_addstr(&script, "{'tool_calls': [{'id': 'f', 'name': 'finish', 'arguments': "
		   "{'summary': 'looked'}}]}]");
	fx_start(&f, script.buf, NULL);
	fx_write(&f, "a.txt", "hello\n");
	fx_run(&f);
	if (f.r.status != AGENT_DONE)
		fail_msg("%s", f.r.error);
	reqs = mock_requests(&f.m);
	assert_int_equal(json_array_size(reqs), 10);
	for (i = 1; i < 10; i++)
		if (!raw_extends(json_array_get(reqs, i - 1), json_array_get(reqs, i)))
			fail_msg("request %zu does not begin with request %zu:\n%s\n%s", i + 1, i,
				 jsonx_str(json_array_get(reqs, i - 1), "raw"),
				 jsonx_str(json_array_get(reqs, i), "raw"));
	assert_int_equal(f.r.compactions, 0);
	json_decref(reqs);
	buf_release(&script);
	fx_end(&f);
}

/*
 * Native mode against a server running the model without a tool parser:
 * the calls arrive as text (Mistral's, then Hermes'), run, and go back as
 * structured calls.
 */
static void test_agent_native_calls_in_text(void **state)
{
	struct fx f;
	json_t *reqs, *msgs, *m;

	(void)state;
	fx_start(&f, "["
		 "{'text': '[TOOL_CALLS]read_file[ARGS]{\\\"path\\\": \\\"a.txt\\\"}'},"
		 "{'text': 'Done.\\n<tool_call>\\n{\\\"name\\\": \\\"finish\\\", \\\"arguments\\\": "
		 "{\\\"summary\\\": \\\"a.txt says hi\\\",}}\\n</tool_call>'}]",
		 NULL);
	fx_write(&f, "a.txt", "hi there\n");
	fx_run(&f);
	if (f.r.status != AGENT_DONE)
		fail_msg("%s", f.r.error);
	assert_string_equal(jsonx_str(f.r.terminal_args, "summary"), "a.txt says hi");
	reqs = mock_requests(&f.m);
	assert_int_equal(json_array_size(reqs), 2);
	msgs = messages(reqs, 1);
	m = json_array_get(msgs, 2);
	assert_string_equal(jsonx_str(m, "role"), "assistant");
	assert_true(json_is_null(json_object_get(m, "content")));
	m = json_array_get(json_object_get(m, "tool_calls"), 0);
	assert_string_equal(jsonx_str(m, "id"), "tx0010001");
	assert_string_equal(jsonx_str(json_object_get(m, "function"), "name"), "read_file");
	assert_non_null(strstr(tool_result_in(reqs, 1, "tx0010001"), "hi there"));
	json_decref(reqs);
	fx_end(&f);
}

static void test_agent_text_tool_mode(void **state)
{
	struct fx f;
	json_t *reqs, *msgs, *body;
	const char *sys, *last;

	(void)state;
	fx_start(&f, "["
		 "{'text': 'Let me read it.\\n```json\\n{\\'tool\\': \\'read_file\\', \\'arguments\\': {\\'path\\': \\'a.txt\\'}}\\n```\\n'},"
		 "{'text': '```json\\n{\\'tool\\': \\'finish\\', \\'arguments\\': {\\'summary\\': \\'a.txt says hi\\'}}\\n```'}]",
		 NULL);
	fx_write(&f, "a.txt", "hi there\n");
	f.o.tool_mode = AGENT_TOOLS_TEXT;
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_DONE);
	assert_string_equal(jsonx_str(f.r.terminal_args, "summary"), "a.txt says hi");
	reqs = mock_requests(&f.m);
	body = json_object_get(json_array_get(reqs, 0), "body");
	assert_null(json_object_get(body, "tools"));
	sys = jsonx_str(json_array_get(json_object_get(body, "messages"), 0), "content");
	assert_non_null(strstr(sys, "# Tools"));
	assert_non_null(strstr(sys, "## edit_file"));
	assert_non_null(strstr(sys, "## finish"));
	assert_null(strstr(sys, "## submit_plan"));
	msgs = messages(reqs, 1);
	last = jsonx_str(json_array_get(msgs, json_array_size(msgs) - 1), "content");
	assert_string_equal(jsonx_str(json_array_get(msgs, json_array_size(msgs) - 1), "role"), "user");
	assert_non_null(strstr(last, "Result of read_file (call text-1-1, ok):"));
	assert_non_null(strstr(last, "hi there"));
	json_decref(reqs);
	fx_end(&f);
}

/* The real binary: `forgex ask` reads the project before answering. */
static void test_agent_ask_binary_reads_project(void **state)
{
	struct mock m;
	struct tu_result r;
	char *dir, *cfg, *script;
	char *bin = realpath(tu_forgex(), NULL);
	const char *argv[] = { bin, "-v", "ask", "Which", "port?", NULL };
	const char *env[] = { "FX_E2E_KEY", NULL };
	json_t *reqs;
	const char *res;

	(void)state;
	script = sq("["
		    "{'text': 'Looking.', 'tool_calls': [{'id': 's', 'name': 'search', 'arguments': {'pattern': 'PORT'}}]},"
		    "{'tool_calls': [{'id': 'w', 'name': 'write_file', 'arguments': {'path': 'pwned', 'content': 'x'}}]},"
		    "{'text': 'It listens on 8080 (server.h).'}]");
	mock_start(&m, script);
	dir = tu_mkdtemp();
	cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		      "api_key_env = \"FX_E2E_KEY\"\nmax_retries = 0\n", m.base_url);
	tu_write(dir, ".forgex/config.toml", cfg);
	tu_trust(dir, NULL);
	tu_write(dir, "server.h", "#define PORT 8080\n");
	tu_run(&r, argv, dir, env, NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "Looking.\nIt listens on 8080 (server.h).\n");
	/* progress for a person on stderr, never on stdout */
	assert_non_null(strstr(r.err.buf, "forgex: architect turn 1: search PORT ("));
	assert_non_null(strstr(r.err.buf, "forgex: architect turn 2: write_file pwned ("));
	assert_non_null(strstr(r.err.buf, "forgex: architect turn 3: asking mock-model ("));
	reqs = mock_requests(&m);
	assert_int_equal(json_array_size(reqs), 3);
	res = tool_result_in(reqs, 1, "s");
	assert_non_null(strstr(res, "server.h:1:#define PORT 8080"));
	assert_non_null(strstr(tool_result_in(reqs, 2, "w"), "missing permissions: write"));
	assert_null(tu_read(dir, "pwned"));
	json_decref(reqs);
	tu_result_release(&r);
	free(cfg);
	free(script);
	free(bin);
	mock_release(&m);
	tu_rmtree(dir);
}

/*
 * A conversation that goes on (the interactive session): the second call
 * sends the first call's messages unchanged, its system prompt and tools
 * too, then the new message; /compact then sums up what came before the
 * latest message in the system prompt and keeps that message whole; the
 * conversation survives its JSON form.
 */
static void test_agent_conversation_goes_on(void **state)
{
	struct llm_request conv = LLM_REQUEST_INIT, back = LLM_REQUEST_INIT;
	json_t *reqs, *m1, *m2, *j1, *j2;
	size_t k;
	struct fx f;

	(void)state;
	fx_start(&f, "[{'tool_calls': [{'id': 'r1', 'name': 'read_file', 'arguments': {'path': 'a.txt'}}]},"
		 "{'text': 'It says alpha.'},"
		 "{'text': 'You asked about a.txt before.'},"
		 "{'text': 'SUMMARY-XYZ: read a.txt (alpha).'}]", NULL);
	fx_write(&f, "a.txt", "alpha\n");
	f.o.plain_answer = 1;
	f.o.system_prompt = "FIRST SYSTEM PROMPT";
	f.o.task = "What is in a.txt?";
	f.o.conversation = &conv;
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_ANSWERED);
	assert_int_equal(conv.messages_nr, 5);	/* system, user, call, result, answer */
	agent_result_release(&f.r);
	f.o.system_prompt = "ANOTHER PROMPT, NOT SENT";
	f.o.task = "And before that?";
	fx_run(&f);
	assert_int_equal(f.r.status, AGENT_ANSWERED);
	assert_string_equal(f.r.answer, "You asked about a.txt before.");
	reqs = mock_requests(&f.m);
	assert_int_equal(json_array_size(reqs), 3);
	m1 = messages(reqs, 1);
	m2 = messages(reqs, 2);
	/* request 3 = request 2's messages, the reply, the new message */
	assert_int_equal(json_array_size(m2), json_array_size(m1) + 2);
	for (k = 0; k < json_array_size(m1); k++)
		assert_true(json_equal(json_array_get(m1, k), json_array_get(m2, k)));
	assert_string_equal(jsonx_str(json_array_get(m2, 0), "content"), "FIRST SYSTEM PROMPT");
	assert_string_equal(jsonx_str(json_array_get(m2, json_array_size(m2) - 2), "content"),
			    "It says alpha.");
	assert_string_equal(jsonx_str(json_array_get(m2, json_array_size(m2) - 1), "content"),
			    "And before that?");
	assert_true(json_equal(json_object_get(json_object_get(json_array_get(reqs, 1), "body"),
					       "tools"),
			       json_object_get(json_object_get(json_array_get(reqs, 2), "body"),
					       "tools")));
	json_decref(reqs);
	agent_result_release(&f.r);

	/*
	 * /compact: what came before the person's latest message is summed up
	 * at the end of the system prompt; that message and its answer stay
	 */
	assert_int_equal(agent_compact(&f.r, &f.o), 0);
	assert_int_equal(conv.messages_nr, 3);
	assert_non_null(strstr(conv.messages[0].content, "FIRST SYSTEM PROMPT"));
	assert_non_null(strstr(conv.messages[0].content, "SUMMARY-XYZ"));
	assert_string_equal(conv.messages[1].content, "And before that?");
	assert_string_equal(conv.messages[2].content, "You asked about a.txt before.");
	assert_non_null(event(&f, "context_compact", 0));

	/* what a session saves and reads back is the same conversation */
	j1 = llm_request_to_json(&conv, "m", 0);
	assert_int_equal(llm_request_from_json(&back, j1), 0);
	j2 = llm_request_to_json(&back, "m", 0);
	assert_true(json_equal(j1, j2));
	json_decref(j1);
	json_decref(j2);
	llm_request_release(&back);
	j1 = json_pack("{s:[{s:s}]}", "messages", "role", "wizard");
	assert_int_equal(llm_request_from_json(&back, j1), FX_EPARSE);
	assert_int_equal(back.messages_nr, 0);
	json_decref(j1);
	llm_request_release(&back);
	llm_request_release(&conv);
	fx_end(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_agent_lists_reads_searches_then_answers),
		cmocka_unit_test(test_agent_events_are_complete_and_in_order),
		cmocka_unit_test(test_agent_read_only_role_cannot_write),
		cmocka_unit_test(test_agent_edit_with_wrong_indentation_applies_once),
		cmocka_unit_test(test_agent_ambiguous_edit_lists_candidates),
		cmocka_unit_test(test_agent_symlink_out_of_workspace_cannot_be_read),
		cmocka_unit_test(test_agent_paths_outside_workspace_are_refused),
		cmocka_unit_test(test_agent_loop_guard_stops_repeated_failures),
		cmocka_unit_test(test_agent_loop_guard_needs_the_same_failure),
		cmocka_unit_test(test_agent_max_turns),
		cmocka_unit_test(test_agent_token_budget_exhausted),
		cmocka_unit_test(test_agent_cost_budget_with_prices),
		cmocka_unit_test(test_agent_run_command_denied_by_policy),
		cmocka_unit_test(test_agent_run_command_output_head_and_tail),
		cmocka_unit_test(test_agent_run_tests_reports_failing_test),
		cmocka_unit_test(test_agent_nudges_then_no_terminal),
		cmocka_unit_test(test_agent_nudge_then_terminal),
		cmocka_unit_test(test_agent_provider_error),
		cmocka_unit_test(test_agent_interrupted_between_tools),
		cmocka_unit_test(test_agent_context_control),
		cmocka_unit_test(test_agent_requests_append_only),
		cmocka_unit_test(test_agent_native_calls_in_text),
		cmocka_unit_test(test_agent_text_tool_mode),
		cmocka_unit_test(test_agent_ask_binary_reads_project),
		cmocka_unit_test(test_agent_conversation_goes_on),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

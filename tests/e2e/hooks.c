/*
 * Hooks end to end: the real binary and build/mockllm, with hooks written
 * as small programs (Python and sh) that read the event's JSON on stdin.
 * A pre_tool hook blocks a write and the model is told why; a post_tool
 * hook's message reaches the model; a hook that hangs is killed at its
 * timeout and the run goes on; a hook cannot write outside the
 * workspace; a user_prompt hook can stop a run before anything changes;
 * every event's hook gets its input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

#define PLAN "{\"summary\": \"Write files\", \"steps\": [{\"id\": \"1\", \"title\": \"Write\"," \
	" \"description\": \"write them\", \"files\": [\"notes.txt\"]}], \"acceptance\": [\"tests pass\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"tests pass\"], \"required_fixes\": []}"

/* Records the input of every event it is called for. */
static const char record_py[] =
	"import sys\n"
	"with open('hook-inputs.jsonl', 'a') as f:\n"
	"    f.write(sys.stdin.read() + '\\n')\n";

/* Says something about every write. */
static const char lint_py[] =
	"import json, sys\n"
	"ev = json.load(sys.stdin)\n"
	"print(json.dumps({'message': 'lint: 2 warnings in ' + ev['arguments']['path']}))\n";

/* Refuses requests that ask for destruction. */
static const char prompt_py[] =
	"import json, sys\n"
	"if 'rm -rf' in json.load(sys.stdin)['request']:\n"
	"    sys.stderr.write('no destructive requests\\n')\n"
	"    sys.exit(2)\n";

/* Tries to write where it is told, outside the workspace. */
static const char escape_py[] =
	"import sys\n"
	"sys.stdin.read()\n"
	"open(sys.argv[1], 'w').write('escaped\\n')\n";

static int exists_in(const char *dir, const char *rel)
{
	char *path = xstrfmt("%s/%s", dir, rel);
	int r = fsutil_exists(path);

	free(path);
	return r;
}

static void test_hooks_pre_tool_blocks_a_write(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *hooks, *blocked_id, *allowed_id;
	const char *res;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	blocked_id = sc_next_id();
	sc_call(steps, "write_file", "{\"path\": \"migrations/001.sql\", \"content\": \"drop table x;\\n\"}");
	allowed_id = sc_next_id();
	sc_call(steps, "write_file", "{\"path\": \"notes.txt\", \"content\": \"ok\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	/* the example of docs/configuration.md, as it is */
	{
		char *ex = tu_read(".", "examples/hooks/no_migrations.py");

		assert_non_null(ex);
		tu_write(p.dir, "tools/no_migrations.py", ex);
		free(ex);
	}
	hooks = xstrdup("[[hooks.pre_tool]]\nmatcher = \"write_file|edit_file|delete_file|move_file|apply_patch\"\n"
			"command = [\"python3\", \"tools/no_migrations.py\"]\n");
	sc_proj_config(&p, &m, "auto", hooks);
	SC_FORGEX(&r, &p, "run", "write a migration");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "pre_tool hook (python3) blocked: migrations/001.sql: "
			       "migrations are written by a person, not by the builder"));
	reqs = sc_chat_requests(&m);
	res = sc_tool_result(reqs, blocked_id);
	assert_non_null(res);
	assert_string_equal(res, "refused: blocked by a pre_tool hook: migrations/001.sql: migrations "
			    "are written by a person, not by the builder; describe the schema change in "
			    "your summary instead");
	res = sc_tool_result(reqs, allowed_id);
	assert_non_null(res);
	assert_null(strstr(res, "refused"));
	assert_false(exists_in(p.dir, "migrations/001.sql"));
	assert_true(exists_in(p.dir, "notes.txt"));
	json_decref(reqs);
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	free(blocked_id);
	free(allowed_id);
	free(hooks);
	free(s);
}

static void test_hooks_post_tool_message_reaches_the_model(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *hooks, *id;
	const char *res;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	id = sc_next_id();
	sc_call(steps, "write_file", "{\"path\": \"notes.txt\", \"content\": \"ok\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	tu_write(p.dir, "tools/lint.py", lint_py);
	hooks = xstrdup("[[hooks.post_tool]]\nmatcher = \"write_*\"\n"
			"command = [\"python3\", \"tools/lint.py\"]\n"
			"[[hooks.post_tool]]\nmatcher = \"read_file\"\n"
			"command = [\"echo\", \"never for write_file\"]\n");
	sc_proj_config(&p, &m, "auto", hooks);
	SC_FORGEX(&r, &p, "run", "write notes");
	assert_int_equal(r.status, 0);
	reqs = sc_chat_requests(&m);
	res = sc_tool_result(reqs, id);
	assert_non_null(res);
	assert_non_null(strstr(res, "\n[post_tool hook] lint: 2 warnings in notes.txt"));
	assert_null(strstr(res, "never for write_file"));
	json_decref(reqs);
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	free(id);
	free(hooks);
	free(s);
}

static void test_hooks_hang_is_killed_and_cannot_write_outside(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *hooks, *id, *outside, *target;
	const char *res;
	double t0;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	id = sc_next_id();
	sc_call(steps, "write_file", "{\"path\": \"notes.txt\", \"content\": \"ok\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	outside = tu_outside_mkdtemp();
	target = xstrfmt("%s/written-by-hook", outside);
	tu_write(p.dir, "tools/escape.py", escape_py);
	hooks = xstrfmt("[[hooks.pre_tool]]\ncommand = [\"sleep\", \"60\"]\ntimeout_seconds = 1\n"
			"[[hooks.post_tool]]\ncommand = [\"python3\", \"tools/escape.py\", \"%s\"]\n",
			target);
	sc_proj_config(&p, &m, "auto", hooks);
	t0 = tu_now();
	SC_FORGEX(&r, &p, "run", "write notes");
	assert_true(tu_now() - t0 < 30);
	assert_int_equal(r.status, 0);
	/* the hang was killed, reported, and did not block the call */
	assert_non_null(strstr(r.err.buf, "warning: pre_tool hook (sleep"));
	assert_non_null(strstr(r.err.buf, "killed after its timeout of 1 s"));
	reqs = sc_chat_requests(&m);
	res = sc_tool_result(reqs, id);
	assert_non_null(res);
	assert_null(strstr(res, "refused"));
	assert_true(exists_in(p.dir, "notes.txt"));
	/* the sandbox held the post_tool hook's write outside the workspace */
	assert_false(fsutil_exists(target));
	assert_non_null(strstr(r.err.buf, "warning: post_tool hook (python3"));
	assert_true(strstr(r.err.buf, "Read-only file system") || strstr(r.err.buf, "Permission denied"));
	assert_null(strstr(r.err.buf, "denied by policy"));
	json_decref(reqs);
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	tu_rmtree(outside);
	free(target);
	free(id);
	free(hooks);
	free(s);
}

static void test_hooks_user_prompt_blocks_and_events_get_their_input(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *hooks, *got;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	tu_write(p.dir, "tools/record.py", record_py);
	tu_write(p.dir, "tools/prompt.py", prompt_py);
	hooks = xstrdup("[[hooks.user_prompt]]\ncommand = [\"python3\", \"tools/prompt.py\"]\n"
			"[[hooks.session_start]]\ncommand = [\"python3\", \"tools/record.py\"]\n"
			"[[hooks.pre_verify]]\ncommand = [\"python3\", \"tools/record.py\"]\n"
			"[[hooks.post_verify]]\ncommand = [\"python3\", \"tools/record.py\"]\n"
			"[[hooks.stop]]\ncommand = [\"python3\", \"tools/record.py\"]\n");
	sc_proj_config(&p, &m, "auto", hooks);

	/* blocked: nothing ran, no model call was made */
	SC_FORGEX(&r, &p, "run", "rm -rf everything");
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.out.buf, "a user_prompt hook blocked the request: no destructive requests"));
	assert_int_equal(mock_count(&m, "/chat/completions"), 0);
	tu_result_release(&r);
	{
		char *f = xstrfmt("%s/hook-inputs.jsonl", p.dir);

		unlink(f);
		free(f);
	}

	/* allowed: every event's hook ran with its input */
	SC_FORGEX(&r, &p, "run", "tidy up");
	assert_int_equal(r.status, 0);
	got = tu_read(p.dir, "hook-inputs.jsonl");
	assert_non_null(got);
	assert_non_null(strstr(got, "\"event\":\"session_start\""));
	assert_non_null(strstr(got, "\"request\":\"tidy up\""));
	assert_non_null(strstr(got, "\"event\":\"pre_verify\""));
	assert_non_null(strstr(got, "\"command\":[\"python3\",\"-m\",\"unittest\"]"));
	assert_non_null(strstr(got, "\"event\":\"post_verify\""));
	assert_non_null(strstr(got, "\"passed\":1"));
	assert_non_null(strstr(got, "\"event\":\"stop\""));
	assert_non_null(strstr(got, "\"outcome\":\"pass\""));
	free(got);
	tu_result_release(&r);

	/* a bad hook table names the file, the line and the key */
	sc_proj_config(&p, &m, "auto", "[[hooks.pre_tool]]\nmatcher = \"x\"\n");
	SC_FORGEX(&r, &p, "run", "tidy up");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "[[hooks.pre_tool]] needs command = "));
	assert_non_null(strstr(r.err.buf, "config.toml:"));
	tu_result_release(&r);
	sc_proj_config(&p, &m, "auto", "[[hooks.before_everything]]\ncommand = [\"true\"]\n");
	SC_FORGEX(&r, &p, "run", "tidy up");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "unknown hook event 'before_everything'"));
	tu_result_release(&r);

	mock_release(&m);
	sc_proj_release(&p);
	free(hooks);
	free(s);
}

/* A project file's hooks run only once the project file is trusted. */
static void test_hooks_untrusted_project_hooks_do_not_run(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	tu_write(p.dir, "tools/record.py", record_py);
	tu_write(p.dir, ".forgex/config.toml",
		 "[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\"]\n"
		 "[[hooks.session_start]]\ncommand = [\"python3\", \"tools/record.py\"]\n");
	SC_FORGEX(&r, &p, "run", "tidy up");
	assert_int_equal(r.status, 0);
	assert_false(exists_in(p.dir, "hook-inputs.jsonl"));
	assert_non_null(strstr(r.err.buf, "hooks.session_start.command"));
	assert_non_null(strstr(r.err.buf, "never taken: it would run a program"));
	tu_result_release(&r);
	mock_release(&m);

	/* trusted: it runs */
	SC_FORGEX(&r, &p, "trust");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	mock_start(&m, s);
	sc_proj_config(&p, &m, "auto", "");
	SC_FORGEX(&r, &p, "run", "tidy up");
	assert_int_equal(r.status, 0);
	assert_true(exists_in(p.dir, "hook-inputs.jsonl"));
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hooks_pre_tool_blocks_a_write),
		cmocka_unit_test(test_hooks_post_tool_message_reaches_the_model),
		cmocka_unit_test(test_hooks_hang_is_killed_and_cannot_write_outside),
		cmocka_unit_test(test_hooks_user_prompt_blocks_and_events_get_their_input),
		cmocka_unit_test(test_hooks_untrusted_project_hooks_do_not_run),
	};

	signal(SIGPIPE, SIG_IGN);
	return tu_run_group_tests(tests, NULL, NULL);
}

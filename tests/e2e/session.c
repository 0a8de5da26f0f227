/*
 * Interactive sessions kept on disk, driven the way a script drives them
 * (`printf '...' | forgex chat`: messages and slash commands on standard
 * input), against build/mockllm: what `forgex log` lists and shows, what
 * `forgex replay` re-runs, `--continue`, and a hostile .forgex/sessions.
 * The terminal side (a pty, keys, Ctrl-C) is tests/e2e/chat.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

/* `forgex ARGS...` in the project with `input` on standard input. */
static void chat_input(struct tu_result *r, const struct sc_proj *p, const char *input,
		       const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run(r, (const char *const *)argv.v, p->dir, p->env, input);
	strvec_clear(&argv);
}

/* The id in "session ID saved" (caller frees). */
static char *session_id(const struct tu_result *r)
{
	const char *at = strstr(r->out.buf, "session ");

	if (!at)
		fail_msg("no session id in:\n%s", r->out.buf);
	return xstrndup(at + 8, 20);
}

static void test_session_log_and_replay(void **state)
{
	json_t *steps = json_array();
	struct tu_result r;
	struct sc_proj p;
	struct mock m;
	char *s, *id, *calc, *note, *calc_end;
	const char *chat_args[] = { "chat", NULL };

	(void)state;
	sc_call(steps, "edit_file", "{\"path\": \"calc.py\", \"old_string\": \"a + b\", "
		"\"new_string\": \"b + a\"}");
	json_array_append_new(steps, json_pack("{s:s}", "text", "Swapped the operands."));
	sc_call(steps, "write_file", "{\"path\": \"NOTE.txt\", \"content\": \"a note\\n\"}");
	json_array_append_new(steps, json_pack("{s:s}", "text", "Wrote NOTE.txt."));
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", NULL);
	calc = tu_read(p.dir, "calc.py");

	chat_input(&r, &p, "swap the operands\n/undo\nadd a note\n/exit\n", chat_args);
	if (r.status)
		fail_msg("chat failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "* edit_file calc.py"));
	assert_non_null(strstr(r.out.buf, "+    return b + a"));
	assert_non_null(strstr(r.out.buf, "undid turn 1: 1 path put back"));
	assert_non_null(strstr(r.err.buf, "saved; 'forgex chat --continue' picks it up"));
	id = session_id(&r);
	tu_result_release(&r);
	calc_end = tu_read(p.dir, "calc.py");
	assert_string_equal(calc_end, calc);	/* undone */
	note = tu_read(p.dir, "NOTE.txt");
	assert_string_equal(note, "a note\n");
	free(note);

	/* forgex log lists the session beside the runs, and shows its timeline */
	SC_FORGEX(&r, &p, "log");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, id));
	assert_non_null(strstr(r.out.buf, "session:2"));
	assert_non_null(strstr(r.out.buf, "swap the operands"));
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "log", "--json");
	assert_non_null(strstr(r.out.buf, "\"kind\":\"session\""));
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "log", id);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "turn_end"));
	assert_non_null(strstr(r.out.buf, "undo"));
	assert_non_null(strstr(r.out.buf, "file_diff"));
	tu_result_release(&r);

	/* replay: from the session's start, every turn again, offline */
	tu_write(p.dir, "NOTE.txt", "changed after the session\n");
	SC_FORGEX(&r, &p, "replay", id);
	if (r.status)
		fail_msg("replay failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "turn 1: answered, changed calc.py"));
	assert_non_null(strstr(r.out.buf, "turn 2: answered, changed NOTE.txt"));
	assert_non_null(strstr(r.out.buf, "Same outcome as session"));
	tu_result_release(&r);
	note = tu_read(p.dir, "NOTE.txt");
	assert_string_equal(note, "a note\n");
	free(note);
	free(calc_end);
	calc_end = tu_read(p.dir, "calc.py");
	assert_string_equal(calc_end, calc);
	/* no model was asked again: 4 requests in all, from the session */
	{
		json_t *reqs = mock_requests(&m);

		assert_int_equal(json_array_size(reqs), 4);
		json_decref(reqs);
	}
	free(calc_end);
	free(calc);
	free(id);
	sc_proj_release(&p);
	mock_release(&m);
	free(s);
}

static void test_session_continue_sends_earlier_messages(void **state)
{
	json_t *steps = json_array(), *reqs, *last;
	struct tu_result r;
	struct sc_proj p;
	struct mock m;
	struct buf all = BUF_INIT;
	char *s;
	const char *first[] = { "chat", "remember the word PINEAPPLE", NULL };
	const char *again[] = { "chat", "--continue", NULL };

	(void)state;
	json_array_append_new(steps, json_pack("{s:s}", "text", "I will remember it."));
	json_array_append_new(steps, json_pack("{s:s}", "text", "The word was PINEAPPLE."));
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", NULL);
	chat_input(&r, &p, "", first);
	if (r.status)
		fail_msg("chat failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	chat_input(&r, &p, "which word?\n", again);
	if (r.status)
		fail_msg("chat --continue failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "(resumed)"));
	assert_non_null(strstr(r.out.buf, "The word was PINEAPPLE."));
	tu_result_release(&r);
	reqs = mock_requests(&m);
	assert_int_equal(json_array_size(reqs), 2);
	last = json_object_get(json_object_get(json_array_get(reqs, 1), "body"), "messages");
	jsonx_dump(&all, last, JSON_COMPACT);
	/* the earlier exchange, then the new message */
	assert_non_null(strstr(all.buf, "remember the word PINEAPPLE"));
	assert_non_null(strstr(all.buf, "I will remember it."));
	assert_string_equal(jsonx_str(json_array_get(last, json_array_size(last) - 1), "content"),
			    "which word?");
	buf_release(&all);
	json_decref(reqs);
	sc_proj_release(&p);
	mock_release(&m);
	free(s);
}

/* A cloned repository that makes .forgex/sessions a link gets no session written through it. */
static void test_session_folder_link_refused(void **state)
{
	json_t *steps = json_array();
	struct tu_result r;
	struct sc_proj p;
	struct mock m;
	char *s, *outside = tu_outside_mkdtemp(), *link;
	const char *args[] = { "chat", "hello", NULL };

	(void)state;
	json_array_append_new(steps, json_pack("{s:s}", "text", "hi"));
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", NULL);
	link = xstrfmt("%s/.forgex/sessions", p.dir);
	if (symlink(outside, link))
		fail_msg("symlink: %s", strerror(errno));
	chat_input(&r, &p, "", args);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, ".forgex/sessions"));
	assert_non_null(strstr(r.err.buf, "link"));
	tu_result_release(&r);
	{
		struct tu_result ls;
		const char *argv[] = { "ls", "-A", outside, NULL };

		tu_run(&ls, argv, NULL, NULL, NULL);
		assert_string_equal(ls.out.buf, "");	/* nothing was written there */
		tu_result_release(&ls);
	}
	free(link);
	tu_rmtree(outside);
	sc_proj_release(&p);
	mock_release(&m);
	free(s);
}

/* Hooks in a session: user_prompt blocks one message (no model call for it), stop follows each turn. */
static void test_session_hooks(void **state)
{
	json_t *steps = json_array();
	struct tu_result r;
	struct sc_proj p;
	struct mock m;
	char *s, *got;
	const char *args[] = { "chat", NULL };

	(void)state;
	json_array_append_new(steps, json_pack("{s:s}", "text", "Listed nothing."));
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", NULL);
	tu_write(p.dir, "tools/prompt.py", "import json, sys\n"
		 "if 'rm -rf' in json.load(sys.stdin)['request']:\n"
		 "    sys.stderr.write('no destructive requests\\n')\n"
		 "    sys.exit(2)\n");
	tu_write(p.dir, "tools/record.py", "import sys\n"
		 "with open('hook-inputs.jsonl', 'a') as f:\n"
		 "    f.write(sys.stdin.read() + '\\n')\n");
	sc_proj_config(&p, &m, "auto", "[[hooks.user_prompt]]\n"
		       "command = [\"python3\", \"tools/prompt.py\"]\n"
		       "[[hooks.stop]]\ncommand = [\"python3\", \"tools/record.py\"]\n");
	chat_input(&r, &p, "rm -rf everything\nlist the files\n/exit\n", args);
	if (r.status)
		fail_msg("chat failed (%d):\n%s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.err.buf, "a user_prompt hook blocked the message: no destructive "
			       "requests"));
	assert_non_null(strstr(r.out.buf, "Listed nothing."));
	tu_result_release(&r);
	{
		json_t *reqs = mock_requests(&m);
		struct buf all = BUF_INIT;

		/* the blocked message never reached the model */
		assert_int_equal(json_array_size(reqs), 1);
		jsonx_dump(&all, reqs, JSON_COMPACT);
		assert_null(strstr(all.buf, "rm -rf everything"));
		buf_release(&all);
		json_decref(reqs);
	}
	got = tu_read(p.dir, "hook-inputs.jsonl");
	assert_non_null(strstr(got, "\"event\":\"stop\""));
	assert_non_null(strstr(got, "\"turn\":1"));
	assert_non_null(strstr(got, "\"outcome\":\"answered\""));
	free(got);
	sc_proj_release(&p);
	mock_release(&m);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_log_and_replay),
		cmocka_unit_test(test_session_continue_sends_earlier_messages),
		cmocka_unit_test(test_session_folder_link_refused),
		cmocka_unit_test(test_session_hooks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

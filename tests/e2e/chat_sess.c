/*
 * The session's sessions end to end (issue 22 item 8), on a
 * pseudo-terminal against build/mockllm (tests/helpers/term.h): an empty
 * session is not kept; /resume and `forgex log` show each session's age,
 * turns and first message; a resume shows the last turns again;
 * --continue takes the session used last; the first message outlives
 * /clear; /model warns on a name the server does not list;
 * /permissions changes the approvals and never the sandbox; @path
 * attaches a file, confined as read_file is, and Tab completes it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/term.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

static const char *const chat_args[] = { "chat", NULL };
static const char *const cont_args[] = { "chat", "--continue", NULL };

/* Whether the session folder of `id` is there. */
static int session_kept(const struct fx *f, const char *id)
{
	char *path = xstrfmt("%s/.forgex/sessions/%s", f->p.dir, id);
	struct stat st;
	int there = lstat(path, &st) == 0;

	free(path);
	return there;
}

/* Say `line` in a new session, leave it with Ctrl-D; its id (caller frees). */
static char *session_saying(struct fx *f, const char *line)
{
	char *id;

	fx_chat(f, chat_args);
	id = term_banner_id(&f->t);
	fx_say(f, line);
	term_send(&f->t, "\004");
	term_expect(&f->t, "saved; 'forgex chat --continue' picks it up");
	assert_int_equal(term_wait(&f->t), 0);
	term_release(&f->t);
	return id;
}

/* /resume: the list it shows, then Enter (none taken), back at the prompt (caller frees). */
static char *resume_list(struct fx *f)
{
	size_t from;
	char *text;

	term_type(&f->t, "/resume");
	term_send(&f->t, "\r");
	term_expect(&f->t, "\r\n");
	from = f->t.mark;
	term_expect(&f->t, "session (number or id; Enter: none): ");
	text = term_between(&f->t, from, f->t.mark);
	term_send(&f->t, "\r");
	term_prompt(&f->t);
	return text;
}

/* The line of `text` that holds `what` (caller frees), failing when there is none. */
static char *line_with(const char *text, const char *what)
{
	const char *at = strstr(text, what), *start;

	if (!at)
		fail_msg("no line with '%s' in:\n%s", what, text);
	for (start = at; start > text && start[-1] != '\n'; start--)
		;
	return xstrndup(start, strcspn(start, "\n"));
}

static void test_sess_empty_session_is_not_kept(void **state)
{
	struct fx f;
	char *talked, *empty, *crashed, *text;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Hello.'}]}", "auto");
	talked = session_saying(&f, "a session with a message");
	term_pause_ms(1100);		/* later ids */

	/* opened and left without a word: its folder goes, and it says so */
	fx_chat(&f, chat_args);
	empty = term_banner_id(&f.t);
	assert_true(session_kept(&f, empty));	/* while it is open */
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	text = term_shown(&f.t, f.t.mark);
	assert_non_null(strstr(text, "forgex: nothing was said: session "));
	assert_non_null(strstr(text, " is not kept\n"));
	assert_null(strstr(text, "saved"));
	free(text);
	term_release(&f.t);
	assert_false(session_kept(&f, empty));
	term_pause_ms(1100);

	/* killed before a word: its folder is left, and no list shows it */
	fx_chat(&f, chat_args);
	crashed = term_banner_id(&f.t);
	term_release(&f.t);
	assert_true(session_kept(&f, crashed));

	fx_chat(&f, chat_args);
	text = resume_list(&f);
	assert_non_null(strstr(text, talked));
	assert_null(strstr(text, empty));
	assert_null(strstr(text, crashed));
	/* nor this one, empty as yet */
	assert_null(strstr(text, "(this one)"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);
	{
		struct tu_result r;

		SC_FORGEX(&r, &f.p, "log");
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.out.buf, talked));
		assert_null(strstr(r.out.buf, crashed));
		tu_result_release(&r);
	}
	/* --continue: the one with a message, not the newer empty ones */
	fx_chat(&f, cont_args);
	text = term_banner_id(&f.t);
	assert_string_equal(text, talked);
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(talked);
	free(empty);
	free(crashed);
	fx_release(&f);
}

/* A session as a cloned repository could leave it, with a state of its choosing. */
static void plant_session(const struct fx *f, const char *id, const char *first, long long used)
{
	json_t *st = json_pack("{s:[{s:i, s:b, s:b}], s:s, s:[s], s:s, s:I}", "turns", "n", 1,
			       "changed", 0, "undone", 0, "model", "", "said", first, "first",
			       first, "used", (json_int_t)used);
	char *text = json_dumps(st, 0), *rel = xstrfmt(".forgex/sessions/%s/state.json", id);

	tu_write(f->p.dir, rel, text);
	free(rel);
	rel = xstrfmt(".forgex/sessions/%s/events.jsonl", id);
	tu_write(f->p.dir, rel, "");
	free(rel);
	free(text);
	json_decref(st);
}

static void test_sess_rows_show_age_turns_and_first_message(void **state)
{
	struct fx f;
	struct tu_result r;
	char *id, *text, *line, *longer;
	long long now = (long long)time(NULL);
	struct buf many = BUF_INIT;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'two'}]}", "auto");
	fx_chat(&f, chat_args);
	id = term_banner_id(&f.t);
	fx_say(&f, "fix the ALPHA bug");
	fx_say(&f, "and then the rest");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);
	/* used three minutes ago, with an escape in its first message, and a long one */
	plant_session(&f, "20200101-000000-aaaa", "evil \033]0;t\007 x", now - 185);
	while (many.len < 300)
		buf_addstr(&many, "word ");
	buf_addstr(&many, "END");
	plant_session(&f, "20200101-000001-bbbb", many.buf, now - 2 * 86400 - 60);

	fx_chat(&f, chat_args);
	text = resume_list(&f);
	line = line_with(text, id);
	assert_true(strstr(line, "just now") || strstr(line, " s ago"));
	assert_non_null(strstr(line, "  2 turns  fix the ALPHA bug"));
	free(line);
	line = line_with(text, "20200101-000000-aaaa");
	assert_non_null(strstr(line, "3 min ago"));
	assert_non_null(strstr(line, "1 turn "));
	/* the terminal got the escape as text, not as an escape */
	assert_non_null(strstr(line, "evil \\\\e]0;t\\\\x07 x"));
	free(line);
	line = line_with(text, "20200101-000001-bbbb");
	assert_non_null(strstr(line, "2 days ago"));
	/* cut to the terminal's 100 columns, and said to be */
	assert_true(strlen(line) <= 100);
	assert_non_null(strstr(line, "  1 turn   word word "));
	assert_string_equal(line + strlen(line) - 3, "...");
	assert_null(strstr(line, "END"));
	free(line);
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);

	/* forgex log: the same, the first message whole off a terminal */
	SC_FORGEX(&r, &f.p, "log");
	assert_int_equal(r.status, 0);
	line = line_with(r.out.buf, id);
	assert_non_null(strstr(line, "session:2"));
	assert_true(strstr(line, "just now") || strstr(line, " s ago"));
	assert_non_null(strstr(line, "fix the ALPHA bug"));
	free(line);
	line = line_with(r.out.buf, "20200101-000000-aaaa");
	assert_non_null(strstr(line, "3 min ago"));
	assert_non_null(strstr(line, "evil \\e]0;t\\x07 x"));
	assert_null(strchr(line, '\033'));
	free(line);
	line = line_with(r.out.buf, "20200101-000001-bbbb");
	longer = xstrfmt("2 days ago  %s", many.buf);
	assert_non_null(strstr(line, longer));
	free(longer);
	free(line);
	tu_result_release(&r);
	SC_FORGEX(&r, &f.p, "log", "--json");
	line = line_with(r.out.buf, id);
	assert_non_null(strstr(line, "\"turns\":2"));
	assert_non_null(strstr(line, "\"request\":\"fix the ALPHA bug\""));
	assert_non_null(strstr(line, "\"used\":"));
	free(line);
	tu_result_release(&r);
	buf_release(&many);
	free(id);
	fx_release(&f);
}

static void test_sess_resume_shows_the_last_turns(void **state)
{
	struct fx f;
	char *id, *text;
	const char *a, *b, *c, *d, *e;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Answer one.'}, {'text': 'Answer two.'}, "
		 "{'text': 'Answer three,\\nits \\u001b]0;x\\u0007 second line.'}, "
		 "{'text': 'Answer four:\\nL2\\nL3\\nL4\\nL5 not shown\\nL6'}]}", "auto");
	fx_chat(&f, chat_args);
	id = term_banner_id(&f.t);
	fx_say(&f, "message ONE");
	fx_say(&f, "message TWO");
	fx_say(&f, "message THREE");
	fx_say(&f, "message FOUR");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);
	free(id);

	fx_chat(&f, cont_args);
	text = term_between(&f.t, 0, f.t.mark);
	/* after the banner, before the prompt: the last three exchanges, oldest first */
	a = strstr(text, "4 turns in the conversation.\n");
	assert_non_null(a);
	b = strstr(a, "-- the last turns --");
	c = strstr(a, "> \\e[1mmessage TWO\\e[m\n  \\e[2mAnswer two.\\e[m\n");
	/* the model's escape is text on the terminal */
	d = strstr(a, "> \\e[1mmessage THREE\\e[m\n  \\e[2mAnswer three,\\e[m\n"
		   "  \\e[2mits \\\\e]0;x\\\\x07 second line.\\e[m\n");
	e = strstr(a, "> \\e[1mmessage FOUR\\e[m\n  \\e[2mAnswer four:\\e[m\n  \\e[2mL2\\e[m\n"
		   "  \\e[2mL3\\e[m\n  \\e[2mL4...\\e[m\n");
	if (!b || !c || !d || !e)
		fail_msg("the last turns are not shown as they should be:\n%s", text);
	assert_true(b < c && c < d && d < e);
	assert_null(strstr(text, "message ONE"));
	assert_null(strstr(text, "L5 not shown"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_sess_continue_takes_the_session_used_last(void **state)
{
	struct fx f;
	char *a, *b, *text;
	const char *resume_a[] = { "chat", "--resume", NULL, NULL };
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'A1'}, {'text': 'B1'}, {'text': 'A2'}, {'text': 'A3'}]}",
		 "auto");
	a = session_saying(&f, "I am session A");
	term_pause_ms(1100);
	b = session_saying(&f, "I am session B");
	assert_string_not_equal(a, b);
	/* back to A, and a word there: A is the one used last, B the newest */
	resume_a[2] = a;
	fx_chat(&f, resume_a);
	fx_say(&f, "back in A");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);

	fx_chat(&f, cont_args);
	text = term_banner_id(&f.t);
	assert_string_equal(text, a);
	free(text);
	fx_say(&f, "still A?");
	reqs = fx_requests(&f);
	text = json_dumps(json_object_get(json_array_get(reqs, 3), "messages"), 0);
	assert_non_null(strstr(text, "I am session A"));
	assert_non_null(strstr(text, "back in A"));
	assert_null(strstr(text, "I am session B"));
	free(text);
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(a);
	free(b);
	fx_release(&f);
}

static void test_sess_log_keeps_the_first_message_after_clear(void **state)
{
	struct fx f;
	struct tu_result r;
	char *id, *line, *text;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'two'}]}", "auto");
	fx_chat(&f, chat_args);
	id = term_banner_id(&f.t);
	fx_say(&f, "the very FIRST message");
	fx_say(&f, "/clear");
	fx_say(&f, "said after the clear");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);

	SC_FORGEX(&r, &f.p, "log");
	assert_int_equal(r.status, 0);
	line = line_with(r.out.buf, id);
	assert_non_null(strstr(line, "session:2"));
	assert_non_null(strstr(line, "the very FIRST message"));
	free(line);
	tu_result_release(&r);
	/* and /resume's row */
	fx_chat(&f, chat_args);
	text = resume_list(&f);
	line = line_with(text, id);
	assert_non_null(strstr(line, "the very FIRST message"));
	free(line);
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(id);
	fx_release(&f);
}

static void test_sess_model_warns_on_a_name_the_server_does_not_list(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'models': ['mock-model', 'other'], 'steps': [{'text': 'yes'}]}", "auto");
	fx_chat(&f, chat_args);
	from = fx_say(&f, "/model nosuch-model");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "the session now uses nosuch-model\n"));
	assert_non_null(strstr(text, "forgex: warning: the server of provider default does not "
			       "list a model 'nosuch-model' (set all the same; /model alone "
			       "lists what it offers)\n"));
	free(text);
	/* a name it lists: no warning */
	from = fx_say(&f, "/model other");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "the session now uses other\n"));
	assert_null(strstr(text, "warning"));
	free(text);
	from = fx_say(&f, "/model builder nosuch-model");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "builder now uses nosuch-model\n"));
	assert_non_null(strstr(text, "does not list a model 'nosuch-model'"));
	free(text);
	fx_say(&f, "/model nosuch-model");
	fx_say(&f, "which model?");
	/* set all the same: the request names it */
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 1);
	assert_string_equal(jsonx_str(json_array_get(reqs, 0), "model"), "nosuch-model");
	json_decref(reqs);
	assert_true(mock_count(&f.m, "/models") >= 3);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/*
 * /permissions auto: a command that needed approval runs without a
 * question, and a network command has no network all the same
 * ([sandbox] network = false): curl does not reach a server on the
 * host's 127.0.0.1.
 */
static void test_sess_permissions_change_the_questions_not_the_sandbox(void **state)
{
	struct fx f;
	struct mock target;
	size_t from;
	char *script, *text;
	const char *res;
	json_t *reqs;

	(void)state;
	mock_start(&target, "{\"steps\": []}");
	script = xstrfmt("{'steps': ["
			 "{'tool_calls': [{'id': 'c1', 'name': 'run_command', 'arguments': {'argv': "
			 "['curl', '-s', '--max-time', '10', '%s/models']}}]},"
			 "{'text': 'You said no.'},"
			 "{'tool_calls': [{'id': 'c2', 'name': 'run_command', 'arguments': {'argv': "
			 "['curl', '-s', '--max-time', '10', '%s/models']}}]},"
			 "{'text': 'It ran.'}]}", target.base_url, target.base_url);
	memset(&f, 0, sizeof(f));
	f.t.master = -1;
	f.script = term_sq(script);
	free(script);
	mock_start(&f.m, f.script);
	sc_proj_init(&f.p, &f.m, "ask", "[sandbox]\nnetwork = false\n");
	fx_chat(&f, chat_args);

	/* ask: the question */
	term_type(&f.t, "fetch the list\r");
	term_expect(&f.t, "forgex: this command needs approval: Command 'curl' may access the "
		    "network");
	term_expect(&f.t, "Run it? [y/a/N/e] ");
	term_type(&f.t, "n\r");
	term_prompt(&f.t);

	from = fx_say(&f, "/permissions");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "permissions ask. "));
	assert_non_null(strstr(text, "network off."));
	free(text);
	f.t.prompt = "forgex (auto)>\033[m ";
	from = fx_say(&f, "/permissions auto");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "permissions auto for this session; the sandbox stays as "
			       "configured (network off)\n\\e[1mforgex (auto)>\\e[m "));
	free(text);

	/* auto: no question, and still no network */
	from = fx_say(&f, "fetch it again");
	text = term_between(&f.t, from, f.t.mark);
	assert_null(strstr(text, "needs approval"));
	assert_null(strstr(text, "Run it?"));
	assert_non_null(strstr(text, "It ran.\n"));
	free(text);
	reqs = fx_requests(&f);
	res = sc_tool_result(reqs, "c1");
	assert_non_null(res);
	assert_non_null(strstr(res, "Command not approved"));
	res = sc_tool_result(reqs, "c2");
	assert_non_null(res);
	assert_null(strstr(res, "not approved"));
	/* curl ran, and did not get the list of models from the host's 127.0.0.1 */
	assert_non_null(strstr(res, "exit_code: 7\n"));
	assert_null(strstr(res, "mock-model"));
	json_decref(reqs);
	assert_int_equal(mock_count(&target, "/models"), 0);

	/* a mode that is not one: said, and the mode stays */
	from = fx_say(&f, "/permissions lax");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "unknown permission mode 'lax' (ask, auto or safe)"));
	free(text);
	f.t.prompt = "forgex (safe)>\033[m ";
	fx_say(&f, "/permissions safe");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	mock_release(&target);
	fx_release(&f);
}

/* The project's files for @path: one to attach, one outside, a link out, a binary one. */
static char *attach_files(struct fx *f)
{
	char *outside = tu_mkdtemp(), *link;

	tu_write(f->p.dir, "notes.txt", "the NOTE content\n");
	tu_write(outside, "secret.txt", "SECRET-OUTSIDE\n");
	{
		char *bin = xstrfmt("%s/blob.bin", f->p.dir);
		FILE *fp = fopen(bin, "wb");

		assert_non_null(fp);
		fwrite("a\0b", 1, 3, fp);
		fclose(fp);
		free(bin);
	}
	link = xstrfmt("%s/link.txt", f->p.dir);
	{
		char *target = xstrfmt("%s/secret.txt", outside);

		assert_int_equal(symlink(target, link), 0);
		free(target);
	}
	free(link);
	return outside;
}

static void test_sess_at_path_attaches_a_file_confined(void **state)
{
	struct fx f;
	size_t from;
	char *outside, *up, *line, *text, *want;
	const char *sent;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Read it.'}]}", "auto");
	outside = attach_files(&f);
	/* the outside folder, as a path from the workspace */
	up = xstrfmt("../%s/secret.txt", strrchr(outside, '/') + 1);
	fx_chat(&f, chat_args);
	line = xstrfmt("look at @notes.txt, @%s and @link.txt (@.git/config @blob.bin)", up);
	from = fx_say(&f, line);
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "attached notes.txt (1 line, 17 bytes)"));
	want = xstrfmt("not attached\\e[m @%s: '%s' is outside the workspace", up, up);
	assert_non_null(strstr(text, want));
	free(want);
	assert_non_null(strstr(text, "not attached\\e[m @link.txt: 'link.txt' leads outside the "
			       "workspace"));
	assert_non_null(strstr(text, "not attached\\e[m @.git/config: '.git/config' is inside a "
			       ".git folder"));
	assert_non_null(strstr(text, "not attached\\e[m @blob.bin: it looks like a binary file"));
	assert_non_null(strstr(text, "Read it.\n"));
	free(text);
	reqs = fx_requests(&f);
	sent = req_last_of(reqs, 0, "user");
	assert_non_null(sent);
	/* the message as typed, then the file */
	want = xstrfmt("%s\n\n<file path=\"notes.txt\">\nthe NOTE content\n</file>", line);
	assert_string_equal(sent, want);
	free(want);
	assert_null(strstr(sent, "SECRET-OUTSIDE"));
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(line);
	free(up);
	tu_rmtree(outside);
	fx_release(&f);
}

static void test_sess_tab_completes_an_at_path(void **state)
{
	struct fx f;
	char *text;
	const char *sent;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Seen.'}]}", "auto");
	tu_write(f.p.dir, "docs/guide.md", "# The GUIDE\n");
	fx_chat(&f, chat_args);
	term_type(&f.t, "read @te");
	term_send(&f.t, "\t");
	term_expect(&f.t, "st_calc.py ");
	term_type(&f.t, "and @do");
	term_send(&f.t, "\t");
	term_expect(&f.t, "cs/");
	term_send(&f.t, "\t");
	term_expect(&f.t, "guide.md ");
	term_send(&f.t, "\r");
	term_expect(&f.t, "attached test_calc.py");
	term_expect(&f.t, "attached docs/guide.md (1 line, 12 bytes)");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	sent = req_last_of(reqs, 0, "user");
	assert_non_null(sent);
	text = xstrndup(sent, strcspn(sent, "\n"));
	assert_string_equal(text, "read @test_calc.py and @docs/guide.md");
	free(text);
	assert_non_null(strstr(sent, "<file path=\"test_calc.py\">\nimport unittest\n"));
	assert_non_null(strstr(sent, "<file path=\"docs/guide.md\">\n# The GUIDE\n</file>"));
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_sess_empty_session_is_not_kept, term_teardown),
		cmocka_unit_test_teardown(test_sess_rows_show_age_turns_and_first_message,
					  term_teardown),
		cmocka_unit_test_teardown(test_sess_resume_shows_the_last_turns, term_teardown),
		cmocka_unit_test_teardown(test_sess_continue_takes_the_session_used_last,
					  term_teardown),
		cmocka_unit_test_teardown(test_sess_log_keeps_the_first_message_after_clear,
					  term_teardown),
		cmocka_unit_test_teardown(test_sess_model_warns_on_a_name_the_server_does_not_list,
					  term_teardown),
		cmocka_unit_test_teardown(test_sess_permissions_change_the_questions_not_the_sandbox,
					  term_teardown),
		cmocka_unit_test_teardown(test_sess_at_path_attaches_a_file_confined, term_teardown),
		cmocka_unit_test_teardown(test_sess_tab_completes_an_at_path, term_teardown),
	};

	return tu_run_group_tests(tests, NULL, NULL);
}

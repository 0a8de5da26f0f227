/*
 * The session as a conversation, end to end on a pseudo-terminal against
 * build/mockllm (tests/helpers/term.h): compaction keeps the person's
 * latest message whole and sums up what came earlier in the conversation;
 * a message too large for the model's window is refused before it is
 * sent and can go as a file the model reads in parts, or cut; the window
 * error names the way out and the next turn is answered; /undo tells the
 * model what it reverted, and undoes a /run as well as a turn, newest
 * first.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/agent.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/term.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

/* The window of these tests: the system prompt and tools take about a third of it. */
#define WINDOW 8192
/* What a request may take of it: the window less the reply's reserve (an eighth). */
#define LIMIT (WINDOW - WINDOW / 8)
#define SUMMARISER "You compress the earlier part of a conversation"

/* The user configuration of `f` with the mock's provider and a window of `window` tokens. */
static void set_window(struct fx *f, long window)
{
	char *prov = sc_provider_toml(&f->m, "auto"), *at = strstr(prov, "timeout_seconds = 30\n");
	char *cfg;

	assert_non_null(at);
	at += strlen("timeout_seconds = 30\n");
	cfg = xstrfmt("%.*scontext_window = %ld\n%s", (int)(at - prov), prov, window, at);
	tu_write(f->p.home, "forgex/config.toml", cfg);
	free(cfg);
	free(prov);
}

/* Send `keys` in pieces, reading the terminal in between (a large paste echoes as much). */
static void send_pumping(struct term *t, const char *keys)
{
	size_t len = strlen(keys), off = 0;

	while (off < len) {
		size_t n = len - off > 512 ? 512 : len - off;
		ssize_t w = write(t->master, keys + off, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			fail_msg("write to the terminal: %s", strerror(errno));
		if (w > 0)
			off += (size_t)w;
		term_pump(t, 5);
	}
}

static size_t request_bytes(json_t *req)
{
	struct buf b = BUF_INIT;
	size_t n;

	jsonx_dump(&b, req, JSON_COMPACT);
	n = b.len;
	buf_release(&b);
	return n;
}

static const char *msg_content(json_t *req, size_t i)
{
	return jsonx_str(json_array_get(json_object_get(req, "messages"), i), "content");
}

static size_t msgs_nr(json_t *req)
{
	return json_array_size(json_object_get(req, "messages"));
}

static void leave(struct fx *f)
{
	term_send(&f->t, "\004");
	assert_int_equal(term_wait(&f->t), 0);
}

/*
 * Six turns whose answers fill the window: before the sixth request the
 * oldest exchanges are summed up by the model, from what the conversation
 * said (not "the task"); the request then holds the system prompt with
 * the summary, framed as earlier in this conversation, the fifth exchange
 * and the sixth message word for word.
 */
static void test_conv_compaction_keeps_the_current_request(void **state)
{
	static const char *const said[6] = {
		"turn one: remember that the colour of the project is TEAL",
		"turn two: the build uses make",
		"turn three: the tests are in tests/",
		"turn four: we prefer small commits",
		"turn five: the release is on Friday",
		"turn six, the current request: rename add() to plus() in calc.py, and keep "
		"every other line of the file exactly as it is, comments included",
	};
	struct fx f;
	struct buf script = BUF_INIT, answer = BUF_INIT;
	json_t *reqs, *after = NULL, *summary = NULL, *r;
	size_t i, from;
	char *text;
	const char *sys;

	(void)state;
	for (i = 0; answer.len < 3000; i++)
		buf_addf(&answer, "Noted, point %zu of a long and careful answer. ", i);
	buf_addstr(&script, "{'on_match': [{'body_contains': '" SUMMARISER "', 'text': "
		   "'SUMMARY-EARLIER: the colour is TEAL, the build uses make, tests in tests/, "
		   "small commits.'}], 'steps': [");
	for (i = 0; i < 5; i++)
		buf_addf(&script, "{'text': 'Answer %zu. %s'}, ", i + 1, answer.buf);
	buf_addstr(&script, "{'text': 'Renamed.'}]}");
	fx_start(&f, script.buf, "auto");
	set_window(&f, WINDOW);
	fx_chat(&f, NULL);
	for (i = 0; i < 5; i++)
		fx_say(&f, said[i]);
	from = fx_say(&f, said[5]);
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "(context compacted: "))
		fail_msg("no compaction on the screen:\n%s", text);
	assert_non_null(strstr(text, "Renamed."));
	free(text);

	reqs = fx_requests(&f);
	json_array_foreach(reqs, i, r) {
		const char *s0 = msg_content(r, 0);

		/* no request over what the window leaves */
		if ((double)request_bytes(r) * AGENT_TOKENS_PER_BYTE > LIMIT)
			fail_msg("request %zu: %zu bytes, over the window", i, request_bytes(r));
		if (s0 && strstr(s0, SUMMARISER))
			summary = r;
		else if (s0 && strstr(s0, "# Earlier in this conversation"))
			after = r;
	}
	assert_non_null(summary);
	assert_non_null(after);
	/* the summariser was given the conversation before the current request */
	text = xstrdup(msg_content(summary, 1));
	assert_non_null(strstr(text, "The conversation so far, oldest first:"));
	assert_non_null(strstr(text, "[user] turn one: remember that the colour"));
	assert_non_null(strstr(text, "[assistant] Answer 1."));
	assert_null(strstr(text, "The task"));
	assert_null(strstr(text, "turn six"));
	free(text);
	/* after it: the summary as what came earlier, then the latest exchanges whole */
	sys = msg_content(after, 0);
	assert_non_null(strstr(sys, "SUMMARY-EARLIER: the colour is TEAL"));
	assert_non_null(strstr(sys, "what was said and done earlier in this conversation"));
	assert_null(strstr(sys, "The task"));
	assert_string_equal(jsonx_str(json_array_get(json_object_get(after, "messages"),
						     msgs_nr(after) - 1), "role"), "user");
	assert_string_equal(msg_content(after, msgs_nr(after) - 1), said[5]);
	/* the first message after the system prompt is one of the person's, whole */
	for (i = 1; i < 6 && strcmp(msg_content(after, 1), said[i]); i++)
		;
	if (i == 6)
		fail_msg("the conversation goes on from '%s'", msg_content(after, 1));
	for (i = 1; i < msgs_nr(after); i++)
		assert_null(strstr(msg_content(after, i), "turn one"));
	json_decref(reqs);
	leave(&f);
	buf_release(&script);
	buf_release(&answer);
	fx_release(&f);
}

/* A paste of `lines` numbered lines with MIDDLE-MARKER halfway (caller frees). */
static char *big_paste(size_t lines)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 1; i <= lines; i++)
		buf_addf(&b, "log line %05zu: %s\n", i, i == lines / 2 ? "MIDDLE-MARKER" :
			 "the service answered the request in good time");
	return buf_detach(&b, NULL);
}

static int any_request_holds(const struct fx *f, const char *needle)
{
	json_t *reqs = fx_requests(f), *r;
	size_t i;
	int found = 0;

	json_array_foreach(reqs, i, r) {
		struct buf b = BUF_INIT;

		jsonx_dump(&b, r, 0);
		found |= strstr(b.buf, needle) != NULL;
		buf_release(&b);
	}
	json_decref(reqs);
	return found;
}

/*
 * A 60 KB paste in an 8192-token window: refused before anything is sent,
 * with the ways out on the screen; attached, it goes as a file of the
 * session that the model reads in parts with read_file.
 */
static void test_conv_oversized_paste_is_refused_then_attached(void **state)
{
	static const char *const resume[] = { "chat", "--continue", NULL };
	struct fx f;
	char *paste = big_paste(1000), *keys, *id, *script, *text, *path, *saved, *first;
	const char *note, *result;
	json_t *reqs;
	size_t from;

	(void)state;
	assert_true(strlen(paste) > 50000);
	/* a session first, to know its id (the model's read_file names the path) */
	fx_start(&f, "{'steps': [{'text': 'Hello.'}]}", "auto");
	set_window(&f, WINDOW);
	fx_chat(&f, NULL);
	fx_say(&f, "hello");
	id = term_banner_id(&f.t);
	term_type(&f.t, "/exit\r");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);
	mock_release(&f.m);
	path = xstrfmt(".forgex/sessions/%s/attachments/1.txt", id);
	script = xstrfmt("{'steps': [{'tool_calls': [{'id': 'r1', 'name': 'read_file', "
			 "'arguments': {'path': '%s', 'start_line': 100, 'end_line': 102}}]}, "
			 "{'text': 'Lines 100 to 102 say the service answered.'}]}", path);
	free(f.script);
	f.script = term_sq(script);
	mock_start(&f.m, f.script);
	set_window(&f, WINDOW);
	fx_chat(&f, resume);

	keys = xstrfmt("\033[200~%s\033[201~", paste);
	send_pumping(&f.t, keys);
	term_send(&f.t, "\r");
	term_expect(&f.t, "cannot fit the model's context window");
	from = f.t.mark;
	term_expect(&f.t, "a or c? ");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "The message was not sent"));
	assert_non_null(strstr(text, "a  attach it as a file the model reads in parts"));
	assert_non_null(strstr(text, "c  cut it to fit"));
	assert_non_null(strstr(text, "/compact and /clear make room only for what the "
			       "conversation takes"));
	free(text);
	/* nothing went to the model */
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 0);
	json_decref(reqs);

	term_type(&f.t, "a\r");
	term_expect(&f.t, "Lines 100 to 102 say the service answered.");
	term_prompt(&f.t);
	/* the file is the message, byte for byte: the paste (its last newline ends the line) */
	saved = tu_read(f.p.dir, path);
	assert_non_null(saved);
	assert_int_equal(strlen(saved), strlen(paste) - 1);
	assert_true(!memcmp(saved, paste, strlen(paste) - 1));
	free(saved);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	note = req_last_of(reqs, 0, "user");
	assert_non_null(strstr(note, path));
	assert_non_null(strstr(note, "Read it in parts with read_file, start_line and end_line"));
	first = xstrfmt("It begins:]\nlog line 00001: ");
	assert_non_null(strstr(note, first));
	free(first);
	/* the model's read of the file worked: its lines, numbered */
	result = sc_tool_result(reqs, "r1");
	assert_non_null(result);
	assert_non_null(strstr(result, "log line 00100: the service answered"));
	assert_non_null(strstr(result, "log line 00102: "));
	assert_null(strstr(result, "log line 00103: "));
	json_decref(reqs);
	/* the paste itself never went to the model */
	assert_false(any_request_holds(&f, "MIDDLE-MARKER"));
	leave(&f);
	free(keys);
	free(script);
	free(path);
	free(id);
	free(paste);
	fx_release(&f);
}

/* The paste cut to fit: its beginning and end go, with a note of what was left out. */
static void test_conv_oversized_paste_cut(void **state)
{
	struct fx f;
	char *paste = big_paste(1000), *keys;
	const char *sent;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Seen the head and the tail.'}]}", "auto");
	set_window(&f, WINDOW);
	fx_chat(&f, NULL);
	keys = xstrfmt("\033[200~%s\033[201~", paste);
	send_pumping(&f.t, keys);
	term_send(&f.t, "\r");
	term_expect(&f.t, "a or c? ");
	term_type(&f.t, "c\r");
	term_expect(&f.t, "bytes left out in the middle)");
	term_expect(&f.t, "Seen the head and the tail.");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 1);
	sent = req_last_of(reqs, 0, "user");
	assert_true(!strncmp(sent, "log line 00001: ", 16));
	assert_non_null(strstr(sent, "log line 01000: "));
	assert_non_null(strstr(sent, "bytes of the person's message were left out here"));
	assert_null(strstr(sent, "MIDDLE-MARKER"));
	assert_true((double)request_bytes(json_array_get(reqs, 0)) * AGENT_TOKENS_PER_BYTE <=
		    WINDOW / 2 + 256);
	json_decref(reqs);
	leave(&f);
	free(keys);
	free(paste);
	fx_release(&f);
}

/*
 * A turn whose own call is too large for the window ends with the window
 * error, naming /compact and /clear; the next turn is answered (what came
 * before it is summed up), not wedged.
 */
static void test_conv_window_error_names_the_way_out(void **state)
{
	struct fx f;
	struct buf script = BUF_INIT, big = BUF_INIT;
	size_t from;
	char *text;
	json_t *reqs;

	(void)state;
	while (big.len < 40000)
		buf_addstr(&big, "0123456789 abcdefghij ");
	buf_addf(&script, "{'on_match': [{'body_contains': '" SUMMARISER "', 'text': "
		 "'SUMMARY: a large file was written.'}], 'steps': ["
		 "{'tool_calls': [{'id': 'w1', 'name': 'write_file', 'arguments': {'path': "
		 "'big.txt', 'content': '%s'}}]}, {'text': 'Still here.'}]}", big.buf);
	fx_start(&f, script.buf, "auto");
	set_window(&f, WINDOW);
	fx_chat(&f, NULL);
	from = fx_say(&f, "write a big file");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "the turn ended: the request does not fit the model's context "
			       "window"));
	assert_non_null(strstr(text, "/compact sums up the conversation so far to make room; "
			       "/clear starts it afresh"));
	free(text);
	from = fx_say(&f, "are you still there?");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Still here."));
	free(text);
	reqs = fx_requests(&f);
	assert_string_equal(req_last_of(reqs, json_array_size(reqs) - 1, "user"),
			    "are you still there?");
	json_decref(reqs);
	leave(&f);
	buf_release(&script);
	buf_release(&big);
	fx_release(&f);
}

/*
 * A session kept with a message far larger than the window (an older
 * forgex kept such pastes): resumed, its next turn is answered, the old
 * message shortened to its head and tail, the new one whole.
 */
static void test_conv_resumed_oversized_message_does_not_wedge(void **state)
{
	static const char *const resume[] = { "chat", "--continue", NULL };
	struct fx f;
	char *id, *dir, *text, *huge = big_paste(3000);
	json_t *conv = NULL, *reqs, *r;
	struct buf b = BUF_INIT;
	size_t from, i;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Got it.'}]}", "auto");
	set_window(&f, WINDOW);
	fx_chat(&f, NULL);
	fx_say(&f, "short");
	id = term_banner_id(&f.t);
	term_type(&f.t, "/exit\r");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);
	/* the first message becomes 150 KB */
	dir = xstrfmt("%s/.forgex/sessions/%s", f.p.dir, id);
	text = tu_read(dir, "conversation.json");
	assert_int_equal(jsonx_parse(&conv, text, strlen(text), "conversation.json"), 0);
	free(text);
	r = json_array_get(json_object_get(conv, "messages"), 1);
	assert_string_equal(jsonx_str(r, "content"), "short");
	jsonx_set(r, "content", jsonx_string(huge));
	jsonx_dump(&b, conv, 0);
	tu_write(dir, "conversation.json", b.buf);
	json_decref(conv);
	mock_release(&f.m);
	free(f.script);
	f.script = term_sq("{'on_match': [{'body_contains': '" SUMMARISER "', 'text': "
			   "'SUMMARY: a long log was pasted.'}], "
			   "'steps': [{'text': 'Answered after the big one.'}]}");
	mock_start(&f.m, f.script);
	set_window(&f, WINDOW);
	fx_chat(&f, resume);
	from = fx_say(&f, "next question");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "Answered after the big one."))
		fail_msg("the turn after the oversized message:\n%s", text);
	free(text);
	reqs = fx_requests(&f);
	json_array_foreach(reqs, i, r)
		if ((double)request_bytes(r) * AGENT_TOKENS_PER_BYTE > LIMIT)
			fail_msg("request %zu: %zu bytes, over the window", i, request_bytes(r));
	assert_string_equal(req_last_of(reqs, json_array_size(reqs) - 1, "user"),
			    "next question");
	json_decref(reqs);
	assert_false(any_request_holds(&f, "MIDDLE-MARKER"));
	leave(&f);
	buf_release(&b);
	free(huge);
	free(dir);
	free(id);
	fx_release(&f);
}

#define RUN_PLAN "{'summary': 'Add sub', 'steps': [{'id': '1', 'title': 'Write sub', " \
	"'description': 'sub(a, b) returns a - b', 'files': ['calc.py']}], " \
	"'acceptance': ['sub works']}"

/*
 * /undo after a turn tells the model, with the next message, which path
 * went back; /undo after /run undoes the run (the file back byte for
 * byte) and says so, the newest first: the run, then the turn before it.
 * Inside the session the run's ending names /undo, not forgex undo.
 */
static void test_conv_undo_tells_and_covers_runs(void **state)
{
	struct fx f;
	size_t from;
	char *text, *calc, *orig;
	const char *sent;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 't1', 'name': 'write_file', 'arguments': {'path': "
		 "'notes.md', 'content': 'the model was here\\n'}}]},"
		 "{'text': 'Wrote notes.md.'},"
		 "{'text': 'I see notes.md is gone.'},"
		 "{'tool_calls': [{'id': 't2', 'name': 'write_file', 'arguments': {'path': "
		 "'notes.md', 'content': 'again\\n'}}]},"
		 "{'text': 'Wrote it again.'},"
		 "{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': " RUN_PLAN "}]},"
		 "{'tool_calls': [{'id': 'b1', 'name': 'write_file', 'arguments': {'path': "
		 "'calc.py', 'content': 'def add(a, b):\\n    return a + b\\n\\n\\n"
		 "def sub(a, b):\\n    return a - b\\n'}}]},"
		 "{'tool_calls': [{'id': 'b2', 'name': 'finish', 'arguments': {'summary': "
		 "'added sub'}}]},"
		 "{'tool_calls': [{'id': 'x1', 'name': 'finish', 'arguments': {'summary': "
		 "'nothing to refine'}}]},"
		 "{'tool_calls': [{'id': 's1', 'name': 'submit_verdict', 'arguments': "
		 "{'verdict': 'PASS', 'reasons': ['sub is there'], 'required_fixes': []}}]},"
		 "{'text': 'Understood.'}"
		 "]}", "auto");
	orig = tu_read(f.p.dir, "calc.py");
	fx_chat(&f, NULL);
	fx_say(&f, "write notes.md");
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "undid turn 1: 1 path put back\n  notes.md\n"));
	assert_non_null(strstr(text, "(the model is told what was undone with your next message)"));
	free(text);
	assert_null(tu_read(f.p.dir, "notes.md"));
	fx_say(&f, "what is in notes.md?");
	reqs = fx_requests(&f);
	sent = req_last_of(reqs, json_array_size(reqs) - 1, "user");
	assert_non_null(strstr(sent, "[forgex: the person undid turn 1 with /undo; these files "
			       "are back as they were before it"));
	assert_non_null(strstr(sent, ": notes.md]\n\nwhat is in notes.md?"));
	json_decref(reqs);

	/* a turn, then a run: /undo takes the run first, then the turn */
	fx_say(&f, "write notes.md again");
	from = fx_say(&f, "/run add sub to calc.py");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "PASS: "));
	assert_non_null(strstr(text, "undo it with: /undo\n"));
	assert_null(strstr(text, "forgex undo"));
	free(text);
	calc = tu_read(f.p.dir, "calc.py");
	assert_non_null(strstr(calc, "def sub(a, b):"));
	free(calc);
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "undid run ") || !strstr(text, ": 1 path put back as before the run\n"
						    "  calc.py\n"))
		fail_msg("/undo said:\n%s", text);
	free(text);
	calc = tu_read(f.p.dir, "calc.py");
	assert_string_equal(calc, orig);
	free(calc);
	calc = tu_read(f.p.dir, "notes.md");
	assert_string_equal(calc, "again\n");
	free(calc);
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "undid turn 3: 1 path put back\n  notes.md\n"));
	free(text);
	assert_null(tu_read(f.p.dir, "notes.md"));
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "nothing to undo"));
	free(text);
	/* the next message carries both notes, the run's first */
	fx_say(&f, "and now?");
	reqs = fx_requests(&f);
	sent = req_last_of(reqs, json_array_size(reqs) - 1, "user");
	text = strstr(sent, "[forgex: the person undid run ");
	assert_non_null(text);
	assert_non_null(strstr(text, "these files are back as they were before it"));
	assert_non_null(strstr(text, ": calc.py]\n[forgex: the person undid turn 3 with /undo"));
	assert_non_null(strstr(sent, ": notes.md]\n\nand now?"));
	json_decref(reqs);
	leave(&f);
	free(orig);
	fx_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_conv_compaction_keeps_the_current_request,
					  term_teardown),
		cmocka_unit_test_teardown(test_conv_oversized_paste_is_refused_then_attached,
					  term_teardown),
		cmocka_unit_test_teardown(test_conv_oversized_paste_cut, term_teardown),
		cmocka_unit_test_teardown(test_conv_window_error_names_the_way_out, term_teardown),
		cmocka_unit_test_teardown(test_conv_resumed_oversized_message_does_not_wedge,
					  term_teardown),
		cmocka_unit_test_teardown(test_conv_undo_tells_and_covers_runs, term_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

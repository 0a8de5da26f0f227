/*
 * The session's keys and start-up end to end (issue 22, items 5, 6 and
 * the paste of 7): the real binary on a pseudo-terminal, typed at key by
 * key, against build/mockllm over HTTP on 127.0.0.1. Each test asserts
 * what the person sees and what the model was (or was not) sent.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/term.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

/* `forgex` alone */
static const char *const alone[] = { NULL };

/* What a stop (Esc or Ctrl-C) may take to give the prompt back on a loaded machine. */
#define STOP_MAX 1.0

/* Whether anything listens on 127.0.0.1:port (the default provider's server). */
static int listening(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

static size_t nr_requests(const struct fx *f)
{
	json_t *reqs = fx_requests(f);
	size_t n = json_array_size(reqs);

	json_decref(reqs);
	return n;
}

static void no_caret_escape(const struct fx *f)
{
	char *all = term_shown(&f->t, 0);

	if (strstr(all, "^["))
		fail_msg("the terminal shows ^[:\n%s", all);
	free(all);
}

/*
 * Esc during a streaming answer stops the turn as Ctrl-C does: the rest of
 * the answer never shows, the prompt is back at once, nothing shows "^[",
 * and the next message gets its answer (the conversation is well formed).
 */
static void test_keys_esc_stops_a_streaming_answer(void **state)
{
	struct fx f;
	double sent, back;
	size_t prompt, from;
	char *text;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Thinking about it. And then much later more.', "
		 "'delta_chars': 19, 'delays_ms': [0, 0, 30000]}, {'text': 'Back again.'}]}",
		 "auto");
	fx_chat(&f, NULL);
	term_type(&f.t, "take your time\r");
	term_expect(&f.t, "Thinking about it.");
	term_pause_ms(200);
	sent = tu_now();
	term_send(&f.t, "\033");
	term_expect(&f.t, "(interrupted");
	prompt = term_prompt(&f.t);
	back = term_time_at(&f.t, prompt);
	print_message("# Esc during a streamed reply: the prompt back after %.3f s\n", back - sent);
	assert_true(back - sent < STOP_MAX);
	text = term_between(&f.t, 0, f.t.mark);
	assert_null(strstr(text, "much later"));
	free(text);
	no_caret_escape(&f);
	from = fx_say(&f, "are you there?");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Back again."));
	free(text);
	assert_int_equal(nr_requests(&f), 2);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/*
 * Esc alone at the prompt does nothing visible; Esc Esc at an empty
 * prompt puts the last message back in the line, to edit and send again.
 */
static void test_keys_esc_esc_recalls_the_last_message(void **state)
{
	struct fx f;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'One.'}, {'text': 'Two.'}]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "the first message");
	/* a lone Esc, then a key: the key is typed, no ^[ before it */
	term_send(&f.t, "\033");
	term_pause_ms(200);
	term_type(&f.t, "x");
	term_expect(&f.t, "x");
	term_send(&f.t, "\003");	/* drop the x */
	term_prompt(&f.t);
	term_send(&f.t, "\033");
	term_pause_ms(200);
	term_send(&f.t, "\033");
	term_expect(&f.t, "the first message");
	term_type(&f.t, " again\r");
	term_prompt(&f.t);
	no_caret_escape(&f);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(req_last_of(reqs, 1, "user"), "the first message again");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/*
 * Ctrl-C at an approval question ends the turn: the command does not run
 * (its marker file is absent, its result says it was not approved), the
 * model is not asked again in that turn, and the next message's request
 * answers every call of the interrupted reply. The same command approved
 * with y does write the marker, so its absence is the refusal's doing.
 */
static void test_keys_ctrl_c_at_an_approval_ends_the_turn(void **state)
{
	struct fx f;
	json_t *reqs;
	const char *res;
	char *text, *marker;
	size_t from;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'k1', 'name': 'run_command', 'arguments': {'argv': "
		 "['curl', '-s', '-o', 'marker.txt', 'file:///etc/passwd']}},"
		 "{'id': 'k2', 'name': 'read_file', 'arguments': {'path': 'calc.py'}}]},"
		 "{'text': 'Next answer.'},"
		 "{'tool_calls': [{'id': 'k3', 'name': 'run_command', 'arguments': {'argv': "
		 "['curl', '-s', '-o', 'marker.txt', 'file:///etc/passwd']}}]},"
		 "{'text': 'Fetched.'}]}", "ask");
	fx_chat(&f, NULL);
	term_type(&f.t, "fetch it\r");
	from = term_expect(&f.t, "Run it? [y/a/N/e] ");
	term_send(&f.t, "\003");
	term_expect(&f.t, "Not run.");
	term_expect(&f.t, "(interrupted");
	term_prompt(&f.t);
	text = term_between(&f.t, from, f.t.mark);
	assert_null(strstr(text, "Next answer."));
	free(text);
	/* the turn ended: the model was asked once, not told of the refusal and asked on */
	assert_int_equal(nr_requests(&f), 1);
	marker = xstrfmt("%s/marker.txt", f.p.dir);
	assert_false(fsutil_exists(marker));

	from = fx_say(&f, "what now?");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Next answer."));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	res = sc_tool_result(reqs, "k1");
	assert_non_null(res);
	assert_non_null(strstr(res, "Command not approved: curl -s -o marker.txt"));
	res = sc_tool_result(reqs, "k2");
	assert_non_null(res);
	assert_non_null(strstr(res, "not run: the person interrupted the turn"));
	assert_string_equal(req_last_of(reqs, 1, "user"), "what now?");
	json_decref(reqs);

	/* the control: approved, the same command writes the marker */
	term_type(&f.t, "fetch it again\r");
	term_expect(&f.t, "Run it? [y/a/N/e] ");
	term_type(&f.t, "y\r");
	term_expect(&f.t, "Fetched.");
	term_prompt(&f.t);
	assert_true(fsutil_exists(marker));
	free(marker);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/*
 * Text typed while the model answers is not echoed into the answer; it
 * is in the line at the next prompt, to edit and send.
 */
static void test_keys_typed_ahead_waits_at_the_next_prompt(void **state)
{
	struct fx f;
	size_t from, prompt;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'First part. Second part.', 'delta_chars': 12, "
		 "'delays_ms': [0, 0, 2000]}, {'text': 'Got it.'}]}", "auto");
	fx_chat(&f, NULL);
	term_type(&f.t, "slow one\r");
	from = term_expect(&f.t, "First part.");
	term_type(&f.t, "half a thought");
	term_expect(&f.t, "Second part.");
	prompt = term_prompt(&f.t);
	text = term_between(&f.t, from, prompt);
	if (strstr(text, "half a thought"))
		fail_msg("typed-ahead text echoed into the answer:\n%s", text);
	free(text);
	/* in the line, not sent */
	term_expect(&f.t, "half a thought");
	term_pause_ms(300);
	assert_int_equal(nr_requests(&f), 1);
	term_type(&f.t, ", finished\r");
	term_expect(&f.t, "Got it.");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(req_last_of(reqs, 1, "user"), "half a thought, finished");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/*
 * Esc during a session's /run stops the run as Ctrl-C does: the Architect's
 * call is cut, the run ends INTERRUPTED with the prompt back at once, and
 * what was typed meanwhile waits in the line (then goes as the next
 * message, which gets its answer).
 */
static void test_keys_esc_stops_a_run(void **state)
{
	struct fx f;
	double sent, back, until;
	size_t from, prompt;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Planning the change. And much later the plan.', "
		 "'delta_chars': 21, 'delays_ms': [0, 0, 30000]}, {'text': 'Back again.'}]}",
		 "auto");
	fx_chat(&f, NULL);
	term_type(&f.t, "/run add a mul function\r");
	from = term_expect(&f.t, "==> architect");
	/* the Architect's call is under way: the mock has it */
	until = tu_now() + 20;
	while (nr_requests(&f) < 1 && tu_now() < until)
		term_pause_ms(50);
	assert_int_equal(nr_requests(&f), 1);
	term_pause_ms(200);
	term_type(&f.t, "are you there?");
	sent = tu_now();
	term_send(&f.t, "\033");
	term_expect(&f.t, "INTERRUPTED: ");
	prompt = term_prompt(&f.t);
	back = term_time_at(&f.t, prompt);
	print_message("# Esc during /run: the prompt back after %.3f s\n", back - sent);
	assert_true(back - sent < STOP_MAX);
	text = term_between(&f.t, from, prompt);
	if (strstr(text, "are you there?"))
		fail_msg("typed-ahead text echoed during the run:\n%s", text);
	free(text);
	no_caret_escape(&f);
	/* in the line, not sent; Enter sends it */
	term_expect(&f.t, "are you there?");
	term_type(&f.t, "\r");
	term_expect(&f.t, "Back again.");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(req_last_of(reqs, 1, "user"), "are you there?");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/* `exit`, `quit` and `clear` alone name the slash command and are not sent. */
static void test_keys_bare_exit_gets_a_hint(void **state)
{
	struct fx f;
	size_t from;
	char *text;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Hello.'}]}", "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "exit");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "(not sent: type /exit to leave; Ctrl-D also leaves)"));
	free(text);
	from = fx_say(&f, "Quit");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "type /exit to leave"));
	free(text);
	from = fx_say(&f, "clear");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "type /clear to start a new conversation"));
	free(text);
	assert_int_equal(nr_requests(&f), 0);
	/* a sentence with the word goes to the model */
	from = fx_say(&f, "exit the loop early");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Hello."));
	free(text);
	assert_int_equal(nr_requests(&f), 1);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/* A 2,000-line paste is one line on the screen and all 2,000 lines in the message. */
static void test_keys_long_paste_is_folded(void **state)
{
	struct fx f;
	struct buf paste = BUF_INIT, keys = BUF_INIT, want = BUF_INIT;
	size_t from, i;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Read it.'}]}", "auto");
	fx_chat(&f, NULL);
	for (i = 1; i <= 2000; i++)
		buf_addf(&paste, "log line %zu\n", i);
	buf_addstr(&keys, "\033[200~");
	buf_addbuf(&keys, &paste);
	buf_addstr(&keys, "\033[201~");
	term_type(&f.t, "look: ");
	from = f.t.mark;
	term_send(&f.t, keys.buf);
	term_expect(&f.t, "[Pasted text #1 +2000 lines]");
	term_send(&f.t, "\r");
	term_expect(&f.t, "Read it.");
	term_prompt(&f.t);
	text = term_between(&f.t, from, f.t.mark);
	assert_null(strstr(text, "log line 1000"));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 1);
	buf_addstr(&want, "look: ");
	buf_addbuf(&want, &paste);
	buf_setlen(&want, want.len - 1);	/* the entry ends where the paste's last line ends */
	assert_string_equal(req_last_of(reqs, 0, "user"), want.buf);
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	buf_release(&paste);
	buf_release(&keys);
	buf_release(&want);
	fx_release(&f);
}

/* `forgex "fix the bug"` on a terminal: a session whose first message it is. */
static void test_keys_request_argument_opens_a_session(void **state)
{
	static const char *const args[] = { "fix the bug", NULL };
	struct fx f;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Which bug?'}]}", "auto");
	term_start(&f.t, &f.p, args);
	term_expect(&f.t, " session ");
	term_expect(&f.t, "Which bug?");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 1);
	assert_string_equal(req_last_of(reqs, 0, "user"), "fix the bug");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/*
 * Off a terminal the same is a verified run, said on stderr; a word close
 * to a command is still a typo.
 */
static void test_keys_request_argument_off_a_terminal_runs(void **state)
{
	struct fx f;
	struct tu_result r;
	json_t *reqs;
	struct buf b = BUF_INIT;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'no plan'}]}", "auto");
	SC_FORGEX(&r, &f.p, "fix the bug");
	assert_non_null(strstr(r.err.buf, "forgex: not a terminal: running the request as "
			       "'forgex run' does"));
	reqs = fx_requests(&f);
	assert_true(json_array_size(reqs) >= 1);
	jsonx_dump(&b, json_array_get(reqs, 0), 0);
	assert_non_null(strstr(b.buf, "You are the Architect of forgex"));
	assert_non_null(strstr(b.buf, "fix the bug"));
	buf_release(&b);
	json_decref(reqs);
	tu_result_release(&r);

	SC_FORGEX(&r, &f.p, "cofnig");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "The most similar command is\n\tconfig"));
	tu_result_release(&r);
	fx_release(&f);
}

/* -m NAME is the model of every request of chat, run and ask. */
static void test_keys_model_flag_reaches_the_request(void **state)
{
	static const char *const chat[] = { "chat", "-m", "picked-model", NULL };
	struct fx f;
	struct tu_result r;
	json_t *reqs;
	size_t i;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Hi.'}, {'text': 'run plan'}, {'text': 'Asked.'}]}",
		 "auto");
	fx_chat(&f, chat);
	fx_say(&f, "hello");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 1);
	assert_string_equal(jsonx_str(json_array_get(reqs, 0), "model"), "picked-model");
	json_decref(reqs);

	SC_FORGEX(&r, &f.p, "run", "-m", "run-model", "add a mul function");
	reqs = fx_requests(&f);
	assert_true(json_array_size(reqs) >= 2);
	assert_string_equal(jsonx_str(json_array_get(reqs, 1), "model"), "run-model");
	json_decref(reqs);
	tu_result_release(&r);

	SC_FORGEX(&r, &f.p, "ask", "-m", "ask-model", "what is calc.py?");
	reqs = fx_requests(&f);
	i = json_array_size(reqs);
	assert_true(i >= 3);
	assert_string_equal(jsonx_str(json_array_get(reqs, i - 1), "model"), "ask-model");
	json_decref(reqs);
	tu_result_release(&r);
	fx_release(&f);
}

/* The user file as written: mode 0600, the content (caller frees). */
static char *user_file(const struct fx *f)
{
	char *path = xstrfmt("%s/forgex/config.toml", f->p.home);
	struct stat st;
	char *text;

	if (stat(path, &st) < 0)
		fail_msg("no user file %s", path);
	assert_int_equal(st.st_mode & 0777, 0600);
	text = tu_read(f->p.home, "forgex/config.toml");
	free(path);
	return text;
}

/*
 * A first session with no configuration, no server where the defaults
 * point: the probe finds the mock (FORGEX_SETUP_SERVERS, as a person with
 * a server elsewhere would set it), the person picks it, the file is
 * written, the session opens, and a later `forgex ask` uses it.
 */
static void test_keys_first_run_writes_the_user_config(void **state)
{
	struct fx f;
	struct tu_result r;
	char *env, *path, *text, *want;

	(void)state;
	if (listening(11434)) {
		print_message("# skipped: a server listens on 127.0.0.1:11434, where the defaults "
			      "point, so this is not a first run here\n");
		skip();
	}
	fx_start(&f, "{'models': ['mock-model'], 'steps': [{'text': 'Hello from the mock.'}, "
		 "{'text': 'An answer.'}]}", "auto");
	path = xstrfmt("%s/forgex/config.toml", f.p.home);
	unlink(path);
	env = xstrfmt("FORGEX_SETUP_SERVERS=http://127.0.0.1:%d", f.m.port);
	sc_proj_env(&f.p, env);
	term_start(&f.t, &f.p, alone);
	term_expect(&f.t, "no configuration yet");
	term_expect(&f.t, "1. a server at ");
	term_expect(&f.t, "mock-model");
	term_expect(&f.t, "Which one? [1-1, u: another URL, q: quit] ");
	term_type(&f.t, "1\r");
	term_expect(&f.t, "forgex: wrote ");
	term_expect(&f.t, " session ");
	term_prompt(&f.t);
	fx_say(&f, "hello");
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	assert_true(sc_model_saw(&f.m, "hello"));
	text = user_file(&f);
	want = xstrfmt("[providers.default]\nbase_url = \"http://127.0.0.1:%d/v1\"\n"
		       "model = \"mock-model\"\n", f.m.port);
	assert_non_null(strstr(text, want));
	assert_null(strstr(text, "api_key_env"));
	free(want);
	free(text);

	SC_FORGEX(&r, &f.p, "ask", "what is calc.py?");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "An answer."));
	tu_result_release(&r);
	free(path);
	free(env);
	fx_release(&f);
}

/*
 * No server answers: the person types a URL, a model and the NAME of the
 * key's variable; the file holds the name, never the key, and the key
 * reaches the server from the environment.
 */
static void test_keys_first_run_with_a_typed_url(void **state)
{
	struct fx f;
	struct tu_result r;
	char *path, *text, *url, *line;
	json_t *all;
	struct buf b = BUF_INIT;

	(void)state;
	if (listening(11434))
		skip();
	fx_start(&f, "{'steps': [{'text': 'Typed one.'}]}", "auto");
	path = xstrfmt("%s/forgex/config.toml", f.p.home);
	unlink(path);
	sc_proj_env(&f.p, "FORGEX_SETUP_SERVERS=http://127.0.0.1:9");
	sc_proj_env(&f.p, "FX_E2E_SETUP_KEY=sk-not-written-anywhere");
	term_start(&f.t, &f.p, alone);
	term_expect(&f.t, "No model server answered (http://127.0.0.1:9).");
	term_expect(&f.t, "Base URL of an OpenAI-compatible server");
	url = xstrfmt("http://127.0.0.1:%d/v1", f.m.port);
	line = xstrfmt("%s\r", url);
	term_type(&f.t, line);
	term_expect(&f.t, "Model name: ");
	term_type(&f.t, "mock-model\r");
	term_expect(&f.t, "API key (empty: none): ");
	term_type(&f.t, "the key itself\r");
	term_expect(&f.t, "That is not a variable name");
	term_type(&f.t, "FX_E2E_SETUP_KEY\r");
	term_expect(&f.t, "forgex: wrote ");
	term_prompt(&f.t);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	text = user_file(&f);
	assert_non_null(strstr(text, url));
	assert_non_null(strstr(text, "api_key_env = \"FX_E2E_SETUP_KEY\""));
	assert_null(strstr(text, "sk-not-written-anywhere"));
	free(text);
	SC_FORGEX(&r, &f.p, "ask", "hi?");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "Typed one."));
	tu_result_release(&r);
	all = mock_requests(&f.m);
	jsonx_dump(&b, json_object_get(json_array_get(all, 0), "headers"), 0);
	assert_non_null(strstr(b.buf, "Bearer sk-not-written-anywhere"));
	buf_release(&b);
	json_decref(all);
	free(url);
	free(line);
	free(path);
	fx_release(&f);
}

/* `forgex config init --user` off a terminal: the flags, or a clear error; no silent overwrite. */
static void test_keys_config_init_user_with_flags(void **state)
{
	struct fx f;
	struct tu_result r;
	char *path, *url, *text;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Configured.'}]}", "auto");
	path = xstrfmt("%s/forgex/config.toml", f.p.home);
	unlink(path);
	url = xstrfmt("http://127.0.0.1:%d/v1", f.m.port);

	SC_FORGEX(&r, &f.p, "config", "init", "--user", "--base-url", url);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "--model is needed (off a terminal nothing is asked)"));
	assert_false(fsutil_exists(path));
	tu_result_release(&r);

	SC_FORGEX(&r, &f.p, "config", "init", "--user", "--base-url", url, "--model",
		  "mock-model", "--api-key-env", "not a name");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "'not a name' is not an environment variable name"));
	assert_false(fsutil_exists(path));
	tu_result_release(&r);

	SC_FORGEX(&r, &f.p, "config", "init", "--user", "--base-url", url, "--model",
		  "mock-model", "--api-key-env", "FX_E2E_NO_KEY");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	text = user_file(&f);
	assert_non_null(strstr(text, "model = \"mock-model\""));
	assert_non_null(strstr(text, "api_key_env = \"FX_E2E_NO_KEY\""));
	free(text);

	SC_FORGEX(&r, &f.p, "config", "init", "--user", "--base-url", "http://elsewhere/v1",
		  "--model", "other");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "exists; --force replaces it"));
	tu_result_release(&r);
	text = user_file(&f);
	assert_non_null(strstr(text, url));
	free(text);

	SC_FORGEX(&r, &f.p, "ask", "configured?");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "Configured."));
	tu_result_release(&r);
	free(url);
	free(path);
	fx_release(&f);
}

/*
 * `forgex config init --user` on a terminal with a user file there: asked
 * first; no (Enter) leaves it byte for byte, y replaces it with the server
 * picked from the probe's list.
 */
static void test_keys_config_init_user_asks_before_replacing(void **state)
{
	static const char *const args[] = { "config", "init", "--user", NULL };
	struct fx f;
	char *env, *before, *after, *want;

	(void)state;
	fx_start(&f, "{'models': ['mock-model', 'second-model'], 'steps': []}", "auto");
	env = xstrfmt("FORGEX_SETUP_SERVERS=http://127.0.0.1:%d", f.m.port);
	sc_proj_env(&f.p, env);
	before = tu_read(f.p.home, "forgex/config.toml");

	term_start(&f.t, &f.p, args);
	term_expect(&f.t, "config.toml exists.");
	term_expect(&f.t, "Replace it? [y/N] ");
	term_type(&f.t, "\r");
	term_expect(&f.t, "forgex: left as it is");
	assert_int_equal(term_wait(&f.t), 2);
	after = tu_read(f.p.home, "forgex/config.toml");
	assert_string_equal(after, before);
	free(after);
	term_release(&f.t);

	term_start(&f.t, &f.p, args);
	term_expect(&f.t, "Replace it? [y/N] ");
	term_type(&f.t, "y\r");
	term_expect(&f.t, "mock-model, second-model");
	term_expect(&f.t, "Which one? [1-1, u: another URL, q: quit] ");
	term_type(&f.t, "1\r");
	term_expect(&f.t, "Which model? [1] ");
	term_type(&f.t, "2\r");
	term_expect(&f.t, "forgex: wrote ");
	assert_int_equal(term_wait(&f.t), 0);
	after = user_file(&f);
	want = xstrfmt("base_url = \"http://127.0.0.1:%d/v1\"\nmodel = \"second-model\"\n",
		       f.m.port);
	assert_non_null(strstr(after, want));
	assert_null(strstr(after, "max_retries"));
	free(want);
	free(after);
	free(before);
	free(env);
	fx_release(&f);
}

/* -m NAME of `forgex batch` is the model of every task's requests. */
static void test_keys_batch_model_flag(void **state)
{
	struct fx f;
	struct tu_result r;
	char *tasks, *out;
	json_t *reqs;
	const char *head[] = { "git", "rev-parse", "HEAD", NULL };

	(void)state;
	fx_start(&f, "{'steps': []}", "auto");
	tu_run(&r, head, f.p.dir, NULL, NULL);
	assert_int_equal(r.status, 0);
	buf_trim(&r.out);
	tasks = xstrfmt("{\"id\": \"t1\", \"repo\": \"%s\", \"commit\": \"%s\", \"request\": "
			"\"add a mul function\"}\n", f.p.dir, r.out.buf);
	tu_result_release(&r);
	tu_write(f.p.home, "tasks.jsonl", tasks);
	free(tasks);
	tasks = xstrfmt("%s/tasks.jsonl", f.p.home);
	out = xstrfmt("%s/results", f.p.home);
	SC_FORGEX(&r, &f.p, "batch", tasks, "-j", "1", "-m", "batch-model", "--out", out);
	reqs = fx_requests(&f);
	if (!json_array_size(reqs))
		fail_msg("the task asked no model (exit %d):\n%s", r.status, r.err.buf);
	assert_string_equal(jsonx_str(json_array_get(reqs, 0), "model"), "batch-model");
	json_decref(reqs);
	tu_result_release(&r);
	free(tasks);
	free(out);
	fx_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_keys_esc_stops_a_streaming_answer, term_teardown),
		cmocka_unit_test_teardown(test_keys_esc_esc_recalls_the_last_message, term_teardown),
		cmocka_unit_test_teardown(test_keys_ctrl_c_at_an_approval_ends_the_turn, term_teardown),
		cmocka_unit_test_teardown(test_keys_typed_ahead_waits_at_the_next_prompt,
					  term_teardown),
		cmocka_unit_test_teardown(test_keys_esc_stops_a_run, term_teardown),
		cmocka_unit_test_teardown(test_keys_bare_exit_gets_a_hint, term_teardown),
		cmocka_unit_test_teardown(test_keys_long_paste_is_folded, term_teardown),
		cmocka_unit_test_teardown(test_keys_request_argument_opens_a_session, term_teardown),
		cmocka_unit_test_teardown(test_keys_request_argument_off_a_terminal_runs,
					  term_teardown),
		cmocka_unit_test_teardown(test_keys_model_flag_reaches_the_request, term_teardown),
		cmocka_unit_test_teardown(test_keys_batch_model_flag, term_teardown),
		cmocka_unit_test_teardown(test_keys_first_run_writes_the_user_config, term_teardown),
		cmocka_unit_test_teardown(test_keys_first_run_with_a_typed_url, term_teardown),
		cmocka_unit_test_teardown(test_keys_config_init_user_with_flags, term_teardown),
		cmocka_unit_test_teardown(test_keys_config_init_user_asks_before_replacing,
					  term_teardown),
	};

	return tu_run_group_tests(tests, NULL, NULL);
}

/*
 * The interactive session end to end: the real binary (`forgex chat`,
 * `forgex` alone) as the leader of a new session whose controlling
 * terminal is a pseudo-terminal, typed at key by key, against
 * build/mockllm over real HTTP on 127.0.0.1. Each test asserts what the
 * person sees on the terminal (with the time each byte arrived, where it
 * matters), what the model was sent (the mock's log), and what is left on
 * disk and in /proc.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/scripted.h"
#include "helpers/term.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

/* What Ctrl-C during a command may take to give the prompt back (see the report). */
#define CTRL_C_MAX 1.0
#define ARCHITECT_PROMPT "You are the Architect of forgex"

/*
 * Tests
 */

static void test_chat_streams_text_before_the_reply_ends(void **state)
{
	struct fx f;
	size_t first, second, third;
	double t1, t3, asked;
	char *text;

	(void)state;
	/* the reply in three deltas; the last two each 3 s after the one before */
	fx_start(&f, "{'steps': [{'text': 'First part. Second part. Third part.', "
		 "'delta_chars': 12, 'delays_ms': [0, 0, 3000, 3000]}]}", "auto");
	fx_chat(&f, NULL);
	term_type(&f.t, "tell me in parts");
	asked = tu_now();
	term_send(&f.t, "\r");
	first = term_expect(&f.t, "First part.");
	second = term_expect(&f.t, "Second part.");
	third = term_expect(&f.t, "Third part.");
	term_prompt(&f.t);
	t1 = term_time_at(&f.t, first);
	t3 = term_time_at(&f.t, third);
	print_message("# streamed: first piece on the terminal %.2f s after Enter, %.2f s before "
		      "the last\n", t1 - asked, t3 - t1);
	/*
	 * The mock sends the last piece at least 6 s after it got the request
	 * (so after Enter): the first piece shown sooner was shown before the
	 * last was sent. A front that printed the reply once it ended would
	 * show both within one read.
	 */
	assert_true(t1 - asked < 6.0);
	assert_true(t3 - t1 > 3.0);
	assert_true(term_time_at(&f.t, second) - t1 > 1.5);
	/* once, on one line, not printed again when the turn ended */
	text = term_between(&f.t, first, f.t.mark);
	assert_string_equal(text, "First part. Second part. Third part.\n\\e[1mforgex>\\e[m ");
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_edit_shows_its_diff(void **state)
{
	struct fx f;
	size_t from;
	char *text, *calc;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'e1', 'name': 'write_file', 'arguments': {'path': "
		 "'calc.py', 'content': 'def add(a, b):\\n    return a + b\\n\\n\\n"
		 "def mul(a, b):\\n    return a * b\\n'}}]},"
		 "{'tool_calls': [{'id': 'e2', 'name': 'edit_file', 'arguments': {'path': "
		 "'calc.py', 'old_string': '    return a + b\\n', 'new_string': "
		 "'    return b + a\\n'}}]},"
		 "{'text': 'Added mul.'}]}", "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "add mul to calc");
	/* the call, then its diff in colour: old lines red, new lines green */
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "\\e[36m*\\e[m write_file calc.py\n"));
	assert_non_null(strstr(text, "    \\e[1m--- a/calc.py\\e[m\n    \\e[1m+++ b/calc.py\\e[m\n"));
	assert_non_null(strstr(text, "\n    \\e[32m+def mul(a, b):\\e[m\n"
			       "    \\e[32m+    return a * b\\e[m\n"));
	assert_non_null(strstr(text, "\n    \\e[31m-    return a + b\\e[m\n"
			       "    \\e[32m+    return b + a\\e[m\n"));
	assert_non_null(strstr(text, "Added mul.\n"));
	assert_non_null(strstr(text, "(turn 1 changed files: /diff 1 shows them, /undo reverts "
			       "them)"));
	free(text);
	calc = tu_read(f.p.dir, "calc.py");
	assert_string_equal(calc, "def add(a, b):\n    return b + a\n\n\ndef mul(a, b):\n"
			    "    return a * b\n");
	free(calc);
	/* /diff: the session's change as a whole */
	from = fx_say(&f, "/diff");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "diff --git a/calc.py b/calc.py"));
	assert_non_null(strstr(text, "\\e[31m-    return a + b\\e[m\n\\e[32m+    return b + a\\e[m\n"));
	assert_non_null(strstr(text, "\\e[32m+def mul(a, b):\\e[m\n"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_edit_diff_without_colour(void **state)
{
	struct fx f;
	size_t from;
	char *text;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'e1', 'name': 'write_file', 'arguments': {'path': "
		 "'calc.py', 'content': 'def add(a, b):\\n    return b + a\\n'}}]},"
		 "{'text': 'Swapped.'}]}", "auto");
	sc_proj_env(&f.p, "NO_COLOR=1");
	fx_chat(&f, NULL);
	from = fx_say(&f, "swap them");
	text = term_between(&f.t, from, f.t.mark);
	/* the same lines, marked by + and - alone; not one colour code */
	assert_non_null(strstr(text, "* write_file calc.py\n"));
	assert_non_null(strstr(text, "\n    -    return a + b\n    +    return b + a\n"));
	assert_non_null(strstr(text, "Swapped.\n"));
	assert_null(strstr(text, "\\e[3"));
	assert_null(strstr(text, "\\e[1m"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_line_typed_during_a_reply_is_the_next_message(void **state)
{
	struct fx f;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'First part. Second part.', 'delta_chars': 12, "
		 "'delays_ms': [0, 0, 2000]}, {'text': 'Got the next one.'}]}", "auto");
	fx_chat(&f, NULL);
	term_type(&f.t, "slow one");
	term_send(&f.t, "\r");
	term_expect(&f.t, "First part.");
	/* typed ahead while the reply streams */
	term_send(&f.t, "queued message\r");
	term_expect(&f.t, "Second part.");
	term_expect(&f.t, "Got the next one.");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(req_last_of(reqs, 1, "user"), "queued message");
	assert_string_equal(req_last_of(reqs, 1, "assistant"), "First part. Second part.");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_refused_call_is_shown_refused(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'r1', 'name': 'run_command', 'arguments': "
		 "{'argv': ['rm', '-rf', '/']}}]},"
		 "{'text': 'The policy refused it.'}]}", "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "clean everything");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "\\e[36m*\\e[m $ rm -rf /\n"
			       "  \\e[31m\\e[1mREFUSED\\e[m \\e[31merror: Command denied by policy: "
			       "Command 'rm' is in the deny list\\e[m\n"));
	assert_non_null(strstr(text, "The policy refused it.\n"));
	free(text);
	/* the model was told why */
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(sc_tool_result(reqs, "r1"),
			    "error: Command denied by policy: Command 'rm' is in the deny list");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

/* The run folders of the project, oldest first. */
static void run_dirs(struct strvec *out, const char *dir)
{
	char *runs = xstrfmt("%s/.forgex/runs", dir);
	DIR *d = opendir(runs);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			strvec_pushf(out, "%s/%s", runs, e->d_name);
	closedir(d);
	qsort(out->v, out->nr, sizeof(*out->v), tu_cmp_str);
	free(runs);
}

/* The run id in "forgex: run ID" of `text` (caller frees). */
static char *run_id_in(const char *text)
{
	const char *at = strstr(text, "forgex: run ");

	if (!at)
		fail_msg("no 'forgex: run ID' line in:\n%s", text);
	at += strlen("forgex: run ");
	return xstrndup(at, strcspn(at, "\n"));
}

static json_t *load_json(const char *dir, const char *name)
{
	char *text = tu_read(dir, name);
	json_t *j = NULL;

	if (!text)
		fail_msg("no %s in %s", name, dir);
	if (jsonx_parse(&j, text, strlen(text), name))
		fail_msg("%s in %s: %s", name, dir, err_last());
	free(text);
	return j;
}

#define GO_PLAN "{'summary': 'Add a greeting module', 'steps': [{'id': '1', 'title': " \
	"'Write hello.py', 'description': 'hello() returns hi', 'files': ['hello.py']}], " \
	"'acceptance': ['hello() returns hi']}"

static void test_chat_plan_then_go_passes_without_planning_again(void **state)
{
	struct fx f;
	struct strvec runs = STRVEC_INIT;
	json_t *reqs, *p1, *p2, *sum, *body;
	size_t from, planned, i;
	char *text, *hello, *plan_run, *go_run, *dir;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': " GO_PLAN "}]},"
		 "{'tool_calls': [{'id': 'b1', 'name': 'write_file', 'arguments': {'path': "
		 "'hello.py', 'content': 'def hello():\\n    return \\'hi\\'\\n'}}]},"
		 "{'tool_calls': [{'id': 'b2', 'name': 'finish', 'arguments': {'summary': "
		 "'wrote hello.py'}}]},"
		 "{'tool_calls': [{'id': 'x1', 'name': 'finish', 'arguments': {'summary': "
		 "'nothing to refine'}}]},"
		 "{'tool_calls': [{'id': 's1', 'name': 'submit_verdict', 'arguments': "
		 "{'verdict': 'PASS', 'reasons': ['hello.py does it'], 'required_fixes': []}}]}"
		 "]}", "auto");
	fx_chat(&f, NULL);
	from = fx_say(&f, "/plan add a hello module");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Add a greeting module"));
	assert_non_null(strstr(text, "/go runs the pipeline on this plan"));
	plan_run = run_id_in(text);
	free(text);
	reqs = fx_requests(&f);
	planned = json_array_size(reqs);
	assert_int_equal(planned, 1);
	/* the /plan request was the Architect's (so the check below can fail) */
	assert_non_null(strstr(jsonx_str(json_array_get(json_object_get(json_array_get(reqs, 0),
						"messages"), 0), "content"), ARCHITECT_PROMPT));
	json_decref(reqs);
	assert_null(tu_read(f.p.dir, "hello.py"));

	from = fx_say(&f, "/go");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "PASS: "));
	assert_null(strstr(text, "==> architect\n    architect turn"));
	go_run = run_id_in(text);
	free(text);
	hello = tu_read(f.p.dir, "hello.py");
	assert_non_null(hello);
	assert_string_equal(hello, "def hello():\n    return \"hi\"\n");
	free(hello);
	/* /go asked the Builder, the Expert and the Supervisor; never the Architect */
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 5);
	for (i = planned; i < json_array_size(reqs); i++) {
		struct buf b = BUF_INIT;

		body = json_array_get(reqs, i);
		jsonx_dump(&b, body, 0);
		if (strstr(b.buf, ARCHITECT_PROMPT))
			fail_msg("request %zu of /go holds the Architect's prompt", i);
		buf_release(&b);
	}
	json_decref(reqs);
	/* two runs: the plan's and /go's, with the same plan.json; /go passed */
	run_dirs(&runs, f.p.dir);
	assert_int_equal(runs.nr, 2);
	assert_string_not_equal(plan_run, go_run);
	dir = xstrfmt("%s/.forgex/runs/%s", f.p.dir, plan_run);
	p1 = load_json(dir, "plan.json");
	sum = load_json(dir, "summary.json");
	assert_string_equal(jsonx_str(sum, "outcome"), "planned");
	json_decref(sum);
	free(dir);
	dir = xstrfmt("%s/.forgex/runs/%s", f.p.dir, go_run);
	p2 = load_json(dir, "plan.json");
	sum = load_json(dir, "summary.json");
	assert_string_equal(jsonx_str(sum, "outcome"), "pass");
	json_decref(sum);
	free(dir);
	assert_true(json_equal(p1, p2));
	assert_string_equal(jsonx_str(p2, "summary"), "Add a greeting module");
	json_decref(p1);
	json_decref(p2);
	strvec_clear(&runs);
	free(plan_run);
	free(go_run);
	/* /go again: the plan was used up */
	from = fx_say(&f, "/go");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "no plan to run: /plan [REQUEST] makes one\n"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_undo_restores_the_tree(void **state)
{
	struct fx f;
	size_t from;
	char *before, *after, *text, *keep, *expect, *p;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'tool_calls': ["
		 "{'id': 'u1', 'name': 'write_file', 'arguments': {'path': 'calc.py', 'content': "
		 "'def add(a, b):\\n    return a - b\\n'}},"
		 "{'id': 'u2', 'name': 'write_file', 'arguments': {'path': 'pkg/deep/new.py', "
		 "'content': 'NEW = 1\\n'}},"
		 "{'id': 'u3', 'name': 'write_file', 'arguments': {'path': 'keep.txt', 'content': "
		 "'the model was here\\n'}},"
		 "{'id': 'u4', 'name': 'run_command', 'arguments': {'argv': ['python3', '-c', "
		 "'import os; open(\\'made.txt\\', \\'w\\').write(\\'x\\'); os.remove(\\'old.txt\\')'"
		 "]}}]},"
		 "{'text': 'Changed four things.'}]}", "auto");
	/* a committed file, a file git does not know, one the person edits after the turn */
	tu_write(f.p.dir, "old.txt", "an old file\n");
	tu_write(f.p.dir, "keep.txt", "keep me\n");
	tu_write(f.p.dir, "notes.txt", "the person's notes, untracked\n");
	{
		const char *argv[] = { "git", "-c", "user.name=t", "-c", "user.email=t@e", "commit",
				       "-qm", "more", "--", "old.txt", "keep.txt", NULL };
		const char *add[] = { "git", "add", "old.txt", "keep.txt", NULL };
		struct tu_result r;

		tu_run(&r, add, f.p.dir, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
		tu_run(&r, argv, f.p.dir, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	before = tu_tree(f.p.dir);
	fx_chat(&f, NULL);
	from = fx_say(&f, "change four things");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Changed four things."));
	free(text);
	/* the turn did what it says */
	reqs = fx_requests(&f);
	assert_non_null(strstr(sc_tool_result(reqs, "u4"), "exit_code: 0"));
	json_decref(reqs);
	after = tu_read(f.p.dir, "made.txt");
	assert_string_equal(after, "x");
	free(after);
	assert_null(tu_read(f.p.dir, "old.txt"));
	after = tu_read(f.p.dir, "pkg/deep/new.py");
	assert_string_equal(after, "NEW = 1\n");
	free(after);
	/* the person edits keep.txt before the undo */
	tu_write(f.p.dir, "keep.txt", "the person's own words\n");

	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "undid turn 1: 4 paths put back\n"))
		fail_msg("/undo said:\n%s", text);
	/* named, with where the turn's version of it was kept */
	p = strstr(text, "  kept, changed since: keep.txt (the turn's version: ");
	assert_non_null(p);
	p += strlen("  kept, changed since: keep.txt (the turn's version: ");
	{
		char *kept = xstrndup(p, strcspn(p, ")")), *was;

		assert_non_null(strstr(kept, "/.forgex/sessions/"));
		was = tu_read("/", kept + 1);
		assert_non_null(was);
		assert_string_equal(was, "the model was here\n");
		free(was);
		free(kept);
	}
	assert_null(strstr(text, "FAILED"));
	free(text);
	/* byte for byte the tree before the turn, but for the person's keep.txt */
	after = tu_tree(f.p.dir);
	keep = tu_read(f.p.dir, "keep.txt");
	assert_string_equal(keep, "the person's own words\n");
	free(keep);
	p = strstr(before, "keep.txt 644 keep me\n");
	assert_non_null(p);
	{
		struct buf b = BUF_INIT;

		buf_add(&b, before, (size_t)(p - before));
		buf_addstr(&b, "keep.txt 644 the person's own words\n");
		buf_addstr(&b, p + strlen("keep.txt 644 keep me\n"));
		expect = buf_detach(&b, NULL);
	}
	assert_string_equal(after, expect);
	free(expect);
	free(after);
	/* nothing left to undo */
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "nothing to undo"));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(before);
	fx_release(&f);
}

static void test_chat_model_switch_and_cost(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'text': 'one', 'usage': {'prompt_tokens': 100, 'completion_tokens': 7, "
		 "'total_tokens': 107}},"
		 "{'text': 'two', 'usage': {'prompt_tokens': 200, 'completion_tokens': 9, "
		 "'total_tokens': 209}},"
		 "{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': " GO_PLAN "}]}"
		 "]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "first");
	from = fx_say(&f, "/model other-model");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "the session now uses other-model\n"));
	free(text);
	fx_say(&f, "second");
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(jsonx_str(json_array_get(reqs, 0), "model"), "mock-model");
	assert_string_equal(jsonx_str(json_array_get(reqs, 1), "model"), "other-model");
	json_decref(reqs);
	from = fx_say(&f, "/cost");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "mock-model: 1 call, 100 prompt + 7 completion tokens, cost "
			       "unknown (no [budget] prices)\n"));
	assert_non_null(strstr(text, "other-model: 1 call, 200 prompt + 9 completion tokens, cost "
			       "unknown (no [budget] prices)\n"));
	assert_non_null(strstr(text, "total: 2 calls, 316 tokens, cost unknown\n"));
	free(text);
	/* a role's model, for the pipeline; /model alone names them all */
	from = fx_say(&f, "/model architect arch-model");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "architect now uses arch-model\n"));
	free(text);
	from = fx_say(&f, "/model");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "chat: other-model\n"));
	assert_non_null(strstr(text, "architect: arch-model (provider default)\n"));
	assert_non_null(strstr(text, "builder: mock-model (provider default)\n"));
	assert_non_null(strstr(text, "the server of provider default offers: mock-model\n"));
	free(text);
	fx_say(&f, "/plan the plan");
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 3);
	assert_string_equal(jsonx_str(json_array_get(reqs, 2), "model"), "arch-model");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_ctrl_c_stops_a_command(void **state)
{
	struct fx f;
	char *marker = xstrfmt("fx-chat-marker-%d", (int)getpid()), *s, *text;
	json_t *reqs;
	const char *result;
	double sent, back, end;
	size_t prompt, from;
	int n = 0;

	(void)state;
	/* a command that sleeps a minute, with a child that sleeps too */
	s = xstrfmt("{'steps': ["
		    "{'tool_calls': [{'id': 'k1', 'name': 'run_command', 'arguments': {'argv': "
		    "['python3', '-c', 'import os, sys, time\\nif os.fork() == 0:\\n"
		    "    time.sleep(60)\\n    sys.exit(0)\\ntime.sleep(60)\\n', '%s']}}]},"
		    "{'text': 'Still here.'}]}", marker);
	fx_start(&f, s, "auto");
	free(s);
	fx_chat(&f, NULL);
	term_type(&f.t, "sleep a while");
	term_send(&f.t, "\r");
	term_expect(&f.t, "*\033[m $ python3 -c");
	/* the command and its child run (and whatever runs them in the sandbox) */
	end = tu_now() + TERM_STEP;
	while ((n = tu_count_procs(marker, NULL)) < 2 && tu_now() < end)
		term_pause_ms(20);
	assert_true(n >= 2);
	term_pause_ms(300);
	sent = tu_now();
	term_send(&f.t, "\003");
	term_expect(&f.t, "(interrupted");
	prompt = term_prompt(&f.t);
	back = term_time_at(&f.t, prompt);
	{
		struct buf who = BUF_INIT;

		n = tu_count_procs(marker, &who);
		if (n)
			fail_msg("%d processes left after Ctrl-C:\n%s", n, who.buf);
		buf_release(&who);
	}
	print_message("# Ctrl-C during a command: the prompt back after %.3f s; %d processes left\n",
		      back - sent, n);
	assert_int_equal(n, 0);
	assert_true(back - sent < CTRL_C_MAX);
	/* the session goes on, and the model learns what became of its call */
	from = fx_say(&f, "go on");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Still here."));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	result = sc_tool_result(reqs, "k1");
	assert_non_null(result);
	assert_non_null(strstr(result, "interrupted"));
	assert_string_equal(req_last_of(reqs, 1, "user"), "go on");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	assert_int_equal(tu_count_procs(marker, NULL), 0);
	free(marker);
	fx_release(&f);
}

static void test_chat_undo_after_ctrl_c_reverts_the_command(void **state)
{
	struct fx f;
	char *marker = xstrfmt("fx-chat-undo-%d", (int)getpid()), *s, *text, *before, *after;
	size_t from;
	double end;

	(void)state;
	/* a command that writes a file, edits another, then sleeps until stopped */
	s = xstrfmt("{'steps': ["
		    "{'tool_calls': [{'id': 'w1', 'name': 'run_command', 'arguments': {'argv': "
		    "['python3', '-c', 'import time\\nopen(\\'partial.txt\\', \\'w\\').write(\\'half\\')\\n"
		    "open(\\'calc.py\\', \\'a\\').write(\\'# more\\\\n\\')\\ntime.sleep(60)\\n', '%s']}}]},"
		    "{'text': 'unused'}]}", marker);
	fx_start(&f, s, "auto");
	free(s);
	before = tu_tree(f.p.dir);
	fx_chat(&f, NULL);
	term_type(&f.t, "write and wait");
	term_send(&f.t, "\r");
	term_expect(&f.t, "*\033[m $ python3 -c");
	end = tu_now() + TERM_STEP;
	while (!(text = tu_read(f.p.dir, "partial.txt")) && tu_now() < end)
		term_pause_ms(20);
	assert_non_null(text);
	free(text);
	term_pause_ms(300);
	term_send(&f.t, "\003");
	term_expect(&f.t, "(interrupted");
	term_prompt(&f.t);
	text = tu_read(f.p.dir, "calc.py");
	assert_non_null(strstr(text, "# more\n"));
	free(text);
	/* the interrupted command's changes belong to the turn */
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "undid turn 1: 2 paths put back\n"))
		fail_msg("/undo said:\n%s", text);
	free(text);
	after = tu_tree(f.p.dir);
	assert_string_equal(after, before);
	free(after);
	free(before);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	assert_int_equal(tu_count_procs(marker, NULL), 0);
	free(marker);
	fx_release(&f);
}

static void test_chat_continue_has_the_earlier_messages(void **state)
{
	struct fx f;
	static const char *const cont[] = { "chat", "--continue", NULL };
	char *first, *second, *text;
	json_t *reqs, *msgs;
	size_t from, i;
	int saw_user = 0, saw_answer = 0;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Noted.'}, {'text': 'It was the fruit.'}]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "remember the word PINEAPPLE");
	first = term_banner_id(&f.t);
	term_type(&f.t, "/exit\r");
	term_expect(&f.t, "saved; 'forgex chat --continue' picks it up");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);

	fx_chat(&f, cont);
	second = term_banner_id(&f.t);
	assert_string_equal(first, second);
	text = term_between(&f.t, 0, f.t.mark);
	assert_non_null(strstr(text, " (resumed): model mock-model"));
	assert_non_null(strstr(text, "\n2 earlier messages and 1 turn in the conversation.\n"));
	free(text);
	from = fx_say(&f, "which word was it?");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "It was the fruit."));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	msgs = json_object_get(json_array_get(reqs, 1), "messages");
	for (i = 0; i < json_array_size(msgs); i++) {
		const char *c = jsonx_str(json_array_get(msgs, i), "content");
		const char *role = jsonx_str(json_array_get(msgs, i), "role");

		if (c && !strcmp(role, "user") && !strcmp(c, "remember the word PINEAPPLE"))
			saw_user = 1;
		if (c && !strcmp(role, "assistant") && !strcmp(c, "Noted."))
			saw_answer = saw_user;
	}
	assert_true(saw_user);
	assert_true(saw_answer);
	assert_string_equal(req_last_of(reqs, 1, "user"), "which word was it?");
	/* the earlier request is the start of the new one */
	assert_true(json_equal(json_array_get(json_object_get(json_array_get(reqs, 0),
							       "messages"), 0),
			       json_array_get(msgs, 0)));
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(first);
	free(second);
	fx_release(&f);
}

static void test_chat_keys_edit_the_line(void **state)
{
	struct fx f;
	json_t *reqs;
	char *log;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'two'}, {'text': 'three'}, "
		 "{'text': 'four'}]}", "auto");
	fx_chat(&f, NULL);
	/* helo, Left, l, End, " world" */
	term_type(&f.t, "helo\033[Dl\033[F world\r");
	term_expect(&f.t, "one");
	term_prompt(&f.t);
	/* Up: the entry again, then more at its end */
	term_type(&f.t, "\033[A again\r");
	term_expect(&f.t, "two");
	term_prompt(&f.t);
	/* Ctrl-A (start), Ctrl-K (cut the rest), Home/End in the other spelling */
	term_type(&f.t, "xyz\001\013new \033OH[\033OF]\r");
	term_expect(&f.t, "three");
	term_prompt(&f.t);
	/* Ctrl-C over typed text drops it */
	term_type(&f.t, "half a thought");
	term_send(&f.t, "\003");
	term_prompt(&f.t);
	term_type(&f.t, "a whole one\r");
	term_expect(&f.t, "four");
	term_prompt(&f.t);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 4);
	assert_string_equal(req_last_of(reqs, 3, "user"), "a whole one");
	assert_string_equal(req_last_of(reqs, 0, "user"), "hello world");
	assert_string_equal(req_last_of(reqs, 1, "user"), "hello world again");
	assert_string_equal(req_last_of(reqs, 2, "user"), "[new ]");
	json_decref(reqs);
	/* no escape byte, raw or as JSON, reached the model */
	log = tu_read(f.m.dir, "log.jsonl");
	assert_non_null(log);
	assert_null(strchr(log, '\033'));
	assert_null(strstr(log, "\\u001b"));
	assert_null(strstr(log, "\\u001B"));
	free(log);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	/* the history file holds the entries as sent */
	log = tu_read(f.p.dir, ".forgex/history");
	assert_non_null(log);
	assert_non_null(strstr(log, "hello world\nhello world again\n[new ]\n"));
	free(log);
	fx_release(&f);
}

static void test_chat_continuation_completion_and_escapes(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'two'}]}", "auto");
	fx_chat(&f, NULL);
	/* a trailing backslash goes on on the next line; the model gets both lines */
	term_type(&f.t, "first line\\\r");
	term_expect(&f.t, "... ");
	term_type(&f.t, "second line\r");
	term_expect(&f.t, "one");
	term_prompt(&f.t);
	/* Tab completes a command */
	from = fx_say(&f, "/hel\t");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "  /undo "));
	free(text);
	/* a leading "//" is a message that begins with "/" */
	from = fx_say(&f, "//etc/hosts is what file?");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "two"));
	assert_null(strstr(text, "unknown command"));
	free(text);
	/* /diff takes a turn number */
	from = fx_say(&f, "/diff soon");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "/diff takes a turn number (1, 2, ...), not 'soon'\n"));
	free(text);
	from = fx_say(&f, "/diff 9");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "no turn 9 in this session (it has 2)"));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(req_last_of(reqs, 0, "user"), "first line\nsecond line");
	assert_string_equal(req_last_of(reqs, 1, "user"), "/etc/hosts is what file?");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_log_lists_sessions_beside_runs(void **state)
{
	struct fx f;
	struct tu_result r;
	struct strvec runs = STRVEC_INIT;
	char *id, *run_id, *line;
	const char *at;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': " GO_PLAN "}]},"
		 "{'tool_calls': [{'id': 'b1', 'name': 'finish', 'arguments': {'summary': 'ok'}}]},"
		 "{'tool_calls': [{'id': 'x1', 'name': 'finish', 'arguments': {'summary': 'ok'}}]},"
		 "{'tool_calls': [{'id': 's1', 'name': 'submit_verdict', 'arguments': "
		 "{'verdict': 'PASS', 'reasons': ['fine'], 'required_fixes': []}}]},"
		 "{'text': 'Hello.'}]}", "auto");
	SC_FORGEX(&r, &f.p, "run", "a run before the session");
	if (r.status)
		fail_msg("forgex run: %d\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	run_dirs(&runs, f.p.dir);
	assert_int_equal(runs.nr, 1);
	run_id = xstrdup(strrchr(runs.v[0], '/') + 1);
	strvec_clear(&runs);
	term_pause_ms(1100);		/* ids begin with the second: the session is later */
	fx_chat(&f, NULL);
	fx_say(&f, "a session after the run");
	id = term_banner_id(&f.t);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);

	SC_FORGEX(&r, &f.p, "log");
	assert_int_equal(r.status, 0);
	/* one line each, the run's first */
	at = strstr(r.out.buf, run_id);
	assert_non_null(at);
	line = xstrndup(at, strcspn(at, "\n"));
	assert_non_null(strstr(line, "pass"));
	assert_non_null(strstr(line, "a run before the session"));
	free(line);
	at = strstr(r.out.buf, id);
	assert_non_null(at);
	assert_true(at > strstr(r.out.buf, run_id));
	line = xstrndup(at, strcspn(at, "\n"));
	assert_non_null(strstr(line, "session"));
	assert_non_null(strstr(line, "a session after the run"));
	free(line);
	tu_result_release(&r);
	/* and the session's timeline */
	SC_FORGEX(&r, &f.p, "log", id);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "a session after the run"));
	tu_result_release(&r);
	free(id);
	free(run_id);
	fx_release(&f);
}

static void test_chat_slash_commands_help_and_hints(void **state)
{
	static const char *const listed[] = { "/run", "/plan", "/go", "/diff", "/undo", "/model",
					      "/cost", "/compact", "/clear", "/resume", "/help",
					      "/exit", NULL };
	const char *const *c;
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;

	(void)state;
	fx_start(&f, "{'steps': []}", "auto");
	fx_chat(&f, NULL);
	/* an unknown command: one line, with the nearest one; nothing sent to the model */
	from = fx_say(&f, "/dif");
	text = term_between(&f.t, from, f.t.mark);
	assert_string_equal(text, "unknown command /dif (did you mean /diff?); /help lists them\n"
			    "\\e[1mforgex>\\e[m ");
	free(text);
	from = fx_say(&f, "/frobnicate now");
	text = term_between(&f.t, from, f.t.mark);
	assert_string_equal(text, "unknown command /frobnicate; /help lists them\n"
			    "\\e[1mforgex>\\e[m ");
	free(text);
	from = fx_say(&f, "/help");
	text = term_between(&f.t, from, f.t.mark);
	for (c = listed; *c; c++) {
		char *want = xstrfmt("  %s", *c);

		if (!strstr(text, want) && !(strstr(text, ", /exit") && !strcmp(*c, "/exit")))
			fail_msg("/help does not list %s:\n%s", *c, text);
		free(want);
	}
	free(text);
	from = fx_say(&f, "/diff");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "no changes since the session started\n"));
	free(text);
	from = fx_say(&f, "/go");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "no plan to run"));
	free(text);
	from = fx_say(&f, "/cost");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "total: 0 calls, 0 tokens, $0\n"));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 0);
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_clear_empties_the_conversation(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs, *msgs;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'two'}, {'text': 'three'}]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "first message");
	fx_say(&f, "second message");
	from = fx_say(&f, "/clear");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "conversation cleared"));
	free(text);
	fx_say(&f, "a fresh start");
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 3);
	assert_int_equal(json_array_size(json_object_get(json_array_get(reqs, 1), "messages")), 4);
	msgs = json_object_get(json_array_get(reqs, 2), "messages");
	assert_int_equal(json_array_size(msgs), 2);
	assert_string_equal(jsonx_str(json_array_get(msgs, 0), "role"), "system");
	assert_string_equal(jsonx_str(json_array_get(msgs, 1), "role"), "user");
	assert_string_equal(jsonx_str(json_array_get(msgs, 1), "content"), "a fresh start");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_ctrl_d_leaves_and_saves(void **state)
{
	struct fx f;
	char *id, *text, *state_json;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Hi.'}]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "hello");
	id = term_banner_id(&f.t);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	text = term_shown(&f.t, f.t.mark);
	assert_non_null(strstr(text, "forgex: session "));
	assert_non_null(strstr(text, " saved; 'forgex chat --continue' picks it up\n"));
	assert_non_null(strstr(text, id));
	free(text);
	text = xstrfmt(".forgex/sessions/%s/state.json", id);
	state_json = tu_read(f.p.dir, text);
	assert_non_null(state_json);
	assert_non_null(strstr(state_json, "hello"));
	free(state_json);
	free(text);
	free(id);
	fx_release(&f);
}

static void test_chat_double_ctrl_c_at_the_prompt_leaves(void **state)
{
	struct fx f;
	char *text;

	(void)state;
	fx_start(&f, "{'steps': []}", "auto");
	fx_chat(&f, NULL);
	term_send(&f.t, "\003");
	term_expect(&f.t, "(Ctrl-C again, or Ctrl-D, leaves)");
	term_prompt(&f.t);
	term_send(&f.t, "\003");
	assert_int_equal(term_wait(&f.t), 0);
	text = term_shown(&f.t, f.t.mark);
	/* nothing was said: nothing to pick up (e2e/chat_sess) */
	assert_non_null(strstr(text, " is not kept\n"));
	free(text);
	/* nothing was sent */
	assert_int_equal(mock_count(&f.m, "/chat/completions"), 0);
	fx_release(&f);
}

static void test_chat_approval_yes_and_no(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;
	const char *res;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'a1', 'name': 'run_command', 'arguments': {'argv': "
		 "['pip', 'download', '--no-index', 'x']}}]},"
		 "{'text': 'You said no.'},"
		 "{'tool_calls': [{'id': 'a2', 'name': 'run_command', 'arguments': {'argv': "
		 "['pip', 'download', '--no-index', 'x']}}]},"
		 "{'text': 'It ran.'}]}", "ask");
	fx_chat(&f, NULL);
	text = term_between(&f.t, 0, f.t.mark);
	assert_non_null(strstr(text, "permissions ask."));
	free(text);

	term_type(&f.t, "fetch x\r");
	from = term_expect(&f.t, "forgex: this command needs approval: Command 'pip' may access "
			   "the network\r\n  $ pip download --no-index x\r\n");
	term_expect(&f.t, "Run it? [y/a/N/e] ");
	term_type(&f.t, "n\r");
	term_prompt(&f.t);
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "REFUSED\\e[m \\e[31merror: Command not approved: pip download "
			       "--no-index x"));
	assert_non_null(strstr(text, "You said no.\n"));
	free(text);

	term_type(&f.t, "fetch x again\r");
	from = term_expect(&f.t, "Run it? [y/a/N/e] ");
	term_type(&f.t, "y\r");
	term_prompt(&f.t);
	text = term_between(&f.t, from, f.t.mark);
	assert_null(strstr(text, "REFUSED"));
	assert_non_null(strstr(text, "It ran.\n"));
	free(text);

	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 4);
	res = sc_tool_result(reqs, "a1");
	assert_non_null(res);
	assert_non_null(strstr(res, "Command not approved: pip download --no-index x"));
	assert_null(strstr(res, "exit_code: "));
	res = sc_tool_result(reqs, "a2");
	assert_non_null(res);
	assert_null(strstr(res, "not approved"));
	assert_non_null(strstr(res, "exit_code: "));
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_ctrl_c_stops_the_model(void **state)
{
	struct fx f;
	double sent, back;
	size_t prompt, from;
	char *text;
	json_t *reqs;

	(void)state;
	/* a reply whose second piece would come 30 s later */
	fx_start(&f, "{'steps': [{'text': 'Thinking about it. And then much later more.', "
		 "'delta_chars': 19, 'delays_ms': [0, 0, 30000]}, {'text': 'Back again.'}]}",
		 "auto");
	fx_chat(&f, NULL);
	term_type(&f.t, "take your time");
	term_send(&f.t, "\r");
	term_expect(&f.t, "Thinking about it.");
	term_pause_ms(200);
	sent = tu_now();
	term_send(&f.t, "\003");
	term_expect(&f.t, "(interrupted");
	prompt = term_prompt(&f.t);
	back = term_time_at(&f.t, prompt);
	print_message("# Ctrl-C during a streamed reply: the prompt back after %.3f s\n",
		      back - sent);
	assert_true(back - sent < CTRL_C_MAX);
	text = term_between(&f.t, 0, f.t.mark);
	assert_null(strstr(text, "much later"));
	free(text);
	/* the next message gets a reply: the conversation is well formed */
	from = fx_say(&f, "are you there?");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "Back again."));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 2);
	assert_string_equal(req_last_of(reqs, 1, "user"), "are you there?");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_compact_summarises(void **state)
{
	struct fx f;
	size_t from;
	char *text, *body;
	json_t *reqs, *msgs;
	struct buf b = BUF_INIT;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'Bananas are yellow.'}, "
		 "{'text': 'They talked about fruit.', 'stream': false}, {'text': 'three'}]}",
		 "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "first message");
	fx_say(&f, "tell me about BANANA");
	from = fx_say(&f, "/compact");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "compacted: 5 messages, now 3"));
	free(text);
	fx_say(&f, "and now?");
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 4);
	/* the summary was asked for with what was said before the latest message */
	jsonx_dump(&b, json_array_get(reqs, 2), 0);
	assert_non_null(strstr(b.buf, "The conversation so far"));
	assert_non_null(strstr(b.buf, "[user] first message"));
	assert_null(strstr(b.buf, "The task"));
	assert_null(strstr(b.buf, "tell me about BANANA"));
	buf_release(&b);
	/*
	 * the next request: the system prompt with the summary of what came
	 * earlier, the latest message whole and its answer, the new one
	 */
	msgs = json_object_get(json_array_get(reqs, 3), "messages");
	assert_int_equal(json_array_size(msgs), 4);
	body = xstrdup(jsonx_str(json_array_get(msgs, 0), "content"));
	assert_non_null(strstr(body, "# Earlier in this conversation"));
	assert_non_null(strstr(body, "They talked about fruit."));
	assert_null(strstr(body, "first message"));
	free(body);
	assert_string_equal(jsonx_str(json_array_get(msgs, 1), "content"), "tell me about BANANA");
	assert_string_equal(jsonx_str(json_array_get(msgs, 3), "content"), "and now?");
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

static void test_chat_resume_goes_on_with_another_session(void **state)
{
	struct fx f;
	char *first, *second, *text;
	size_t from;
	json_t *reqs, *msgs;
	struct buf b = BUF_INIT;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'one'}, {'text': 'two'}, {'text': 'three'}]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "the ALPHA session");
	first = term_banner_id(&f.t);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	term_release(&f.t);
	term_pause_ms(1100);		/* a later id */

	fx_chat(&f, NULL);
	second = term_banner_id(&f.t);
	assert_string_not_equal(first, second);
	fx_say(&f, "the BETA session");
	text = xstrfmt("/resume %s", first);
	from = fx_say(&f, text);
	free(text);
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, first));
	assert_non_null(strstr(text, " (resumed): model mock-model"));
	free(text);
	fx_say(&f, "which one is this?");
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 3);
	msgs = json_object_get(json_array_get(reqs, 2), "messages");
	jsonx_dump(&b, msgs, 0);
	assert_non_null(strstr(b.buf, "the ALPHA session"));
	assert_null(strstr(b.buf, "the BETA session"));
	buf_release(&b);
	json_decref(reqs);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	/* the last message went to the first session */
	text = xstrfmt(".forgex/sessions/%s/state.json", first);
	free(first);
	first = tu_read(f.p.dir, text);
	assert_non_null(strstr(first, "which one is this?"));
	free(text);
	free(first);
	free(second);
	fx_release(&f);
}

static void test_chat_run_takes_the_conversation(void **state)
{
	struct fx f;
	size_t from;
	char *text;
	json_t *reqs;
	struct buf b = BUF_INIT;

	(void)state;
	fx_start(&f, "{'steps': [{'text': 'Sounds good: a mul function.'},"
		 "{'tool_calls': [{'id': 'p1', 'name': 'submit_plan', 'arguments': " GO_PLAN "}]},"
		 "{'tool_calls': [{'id': 'b1', 'name': 'finish', 'arguments': {'summary': 'ok'}}]},"
		 "{'tool_calls': [{'id': 'x1', 'name': 'finish', 'arguments': {'summary': 'ok'}}]},"
		 "{'tool_calls': [{'id': 's1', 'name': 'submit_verdict', 'arguments': "
		 "{'verdict': 'PASS', 'reasons': ['fine'], 'required_fixes': []}}]}]}", "auto");
	fx_chat(&f, NULL);
	fx_say(&f, "we need a MULTIPLY helper");
	from = fx_say(&f, "/run");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "==> architect"));
	assert_non_null(strstr(text, "PASS: "));
	free(text);
	reqs = fx_requests(&f);
	assert_int_equal(json_array_size(reqs), 5);
	/* the Architect got the person's words and the last answer */
	jsonx_dump(&b, json_array_get(reqs, 1), 0);
	assert_non_null(strstr(b.buf, ARCHITECT_PROMPT));
	assert_non_null(strstr(b.buf, "we need a MULTIPLY helper"));
	assert_non_null(strstr(b.buf, "Sounds good: a mul function."));
	buf_release(&b);
	json_decref(reqs);
	/* /cost counts the pipeline's calls too */
	from = fx_say(&f, "/cost");
	text = term_between(&f.t, from, f.t.mark);
	assert_non_null(strstr(text, "mock-model: 5 calls, "));
	free(text);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	fx_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_chat_streams_text_before_the_reply_ends, term_teardown),
		cmocka_unit_test_teardown(test_chat_edit_shows_its_diff, term_teardown),
		cmocka_unit_test_teardown(test_chat_edit_diff_without_colour, term_teardown),
		cmocka_unit_test_teardown(test_chat_line_typed_during_a_reply_is_the_next_message,
					  term_teardown),
		cmocka_unit_test_teardown(test_chat_refused_call_is_shown_refused, term_teardown),
		cmocka_unit_test_teardown(test_chat_plan_then_go_passes_without_planning_again,
					  term_teardown),
		cmocka_unit_test_teardown(test_chat_undo_restores_the_tree, term_teardown),
		cmocka_unit_test_teardown(test_chat_model_switch_and_cost, term_teardown),
		cmocka_unit_test_teardown(test_chat_ctrl_c_stops_a_command, term_teardown),
		cmocka_unit_test_teardown(test_chat_undo_after_ctrl_c_reverts_the_command, term_teardown),
		cmocka_unit_test_teardown(test_chat_continue_has_the_earlier_messages, term_teardown),
		cmocka_unit_test_teardown(test_chat_keys_edit_the_line, term_teardown),
		cmocka_unit_test_teardown(test_chat_continuation_completion_and_escapes, term_teardown),
		cmocka_unit_test_teardown(test_chat_log_lists_sessions_beside_runs, term_teardown),
		cmocka_unit_test_teardown(test_chat_slash_commands_help_and_hints, term_teardown),
		cmocka_unit_test_teardown(test_chat_clear_empties_the_conversation, term_teardown),
		cmocka_unit_test_teardown(test_chat_ctrl_d_leaves_and_saves, term_teardown),
		cmocka_unit_test_teardown(test_chat_double_ctrl_c_at_the_prompt_leaves, term_teardown),
		cmocka_unit_test_teardown(test_chat_approval_yes_and_no, term_teardown),
		cmocka_unit_test_teardown(test_chat_ctrl_c_stops_the_model, term_teardown),
		cmocka_unit_test_teardown(test_chat_compact_summarises, term_teardown),
		cmocka_unit_test_teardown(test_chat_resume_goes_on_with_another_session, term_teardown),
		cmocka_unit_test_teardown(test_chat_run_takes_the_conversation, term_teardown),
	};

	return tu_run_group_tests(tests, NULL, NULL);
}

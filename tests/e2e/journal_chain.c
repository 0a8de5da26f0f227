/*
 * One journal per run, whatever the number of processes that worked on
 * it (issue 24): a run killed with SIGKILL in its repair stage and resumed
 * to PASS is undone to the tree from before its first change, byte for
 * byte (content and modes); the same for a session turn killed midway and
 * undone from the continued session. And the temporary files of a killed
 * write: the journal names each before it is created, so resume, undo and
 * the next run's start remove forgex's leftovers, and only those.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/term.h"
#include "mockllm/mockctl.h"

#define PLAN "{\"summary\": \"Change things\", \"steps\": [{\"id\": \"1\", \"title\": \"Change\"," \
	" \"description\": \"change them\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define FAIL "{\"verdict\": \"FAIL\", \"reasons\": [\"not right\"], \"required_fixes\": [\"redo\"]}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"fine\"], \"required_fixes\": []}"
#define CALC(n) "{\"path\": \"calc.py\", \"content\": \"def add(a, b):\\n    # version " #n \
	"\\n    return a + b\\n\"}"

/* Run forgex `args` in the project, SIGKILLed once `marker` shows on stderr (NULL: never). */
static void run_killed(struct tu_result *r, const struct sc_proj *p, const char *const *args,
		       const char *marker)
{
	struct tu_watch w = { .sig = marker ? SIGKILL : 0, .sig_marker = marker, .deadline = 120 };
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run_watched(r, (const char *const *)argv.v, p->dir, p->env, &w);
	strvec_clear(&argv);
}

/* A project with an executable script and a folder, beside calc.py; committed. */
static void project(struct sc_proj *p, const struct mock *m)
{
	sc_proj_init(p, m, "auto", "");
	tu_write(p->dir, "run.sh", "#!/bin/sh\necho one\n");
	tu_write(p->dir, "lib/util.txt", "util\n");
	tu_sh(p->dir, "chmod 755 run.sh && chmod 640 lib/util.txt && git add -A && "
	      "git -c user.name=t -c user.email=t@e commit -q -m more");
	tu_write(p->dir, "notes.txt", "untracked\n");
}

/*
 * The case: the Builder changes calc.py and run.sh and makes a
 * file; the review fails; the repair changes calc.py again and is killed
 * in a command. `forgex resume` puts the tree back to the repair's start
 * and goes on to PASS; `forgex undo` then gives back the tree from before
 * the run, not the Builder's version of it.
 */
static void test_kill9_in_repair_resume_then_undo(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "change calc", NULL };
	char *s, *before, *after;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", CALC(1));
	sc_call(steps, "write_file", "{\"path\": \"run.sh\", \"content\": \"#!/bin/sh\\necho two\\n\"}");
	sc_call(steps, "write_file", "{\"path\": \"lib/new/added.txt\", \"content\": \"new\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	sc_call(steps, "write_file", CALC(2));
	sc_call(steps, "run_command", "{\"argv\": [\"sleep\", \"20.75\"]}");
	/* the resumed repair */
	sc_call(steps, "write_file", CALC(3));
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	project(&p, &m);
	before = tu_tree(p.dir);

	run_killed(&r, &p, run, "run_command");
	if (r.status != 128 + SIGKILL)
		fail_msg("not killed in the repair (status %d):\n%s", r.status, r.err.buf);
	assert_non_null(strstr(r.err.buf, "==> repair"));
	tu_result_release(&r);
	{
		char *c = tu_read(p.dir, "calc.py");

		assert_non_null(strstr(c, "version 2"));
		free(c);
	}
	SC_FORGEX(&r, &p, "resume", "last");
	if (r.status != 0 || !strstr(r.out.buf, "PASS"))
		fail_msg("resume (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	{
		char *c = tu_read(p.dir, "calc.py");

		assert_non_null(strstr(c, "version 3"));
		free(c);
	}
	SC_FORGEX(&r, &p, "undo", "last");
	if (r.status != 0)
		fail_msg("undo (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	after = tu_tree(p.dir);
	assert_string_equal(after, before);
	free(before);
	free(after);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

/*
 * A session: turn 1 changes calc.py; turn 2 changes it again, makes a
 * file and is killed (SIGKILL) in a command. `forgex chat --continue`,
 * then /undo puts back turn 2 (the tree as turn 1 left it), and /undo
 * again turn 1 (the tree from before the session).
 */
static void test_session_turn_killed_then_undone(void **state)
{
	static const char *const cont[] = { "chat", "--continue", NULL };
	struct fx f;
	char *before, *after1, *now, *text;
	size_t from;
	int st;

	(void)state;
	fx_start(&f, "{'steps': ["
		 "{'tool_calls': [{'id': 'a1', 'name': 'write_file', 'arguments': {'path': "
		 "'calc.py', 'content': 'def add(a, b):\\n    return b + a\\n'}}]},"
		 "{'text': 'Turned it round.'},"
		 "{'tool_calls': [{'id': 'b1', 'name': 'write_file', 'arguments': {'path': "
		 "'calc.py', 'content': 'def add(a, b):\\n    return sum((a, b))\\n'}},"
		 "{'id': 'b2', 'name': 'write_file', 'arguments': {'path': 'pkg/made.py', "
		 "'content': 'MADE = 1\\n'}},"
		 "{'id': 'b3', 'name': 'run_command', 'arguments': {'argv': ['sleep', '20.25']}}]},"
		 "{'text': 'unused'}]}", "auto");
	before = tu_tree(f.p.dir);
	fx_chat(&f, NULL);
	fx_say(&f, "turn it round");
	after1 = tu_tree(f.p.dir);
	assert_string_not_equal(after1, before);
	term_type(&f.t, "sum them");
	term_send(&f.t, "\r");
	term_expect(&f.t, "$ sleep");
	now = tu_read(f.p.dir, "pkg/made.py");
	assert_non_null(now);
	free(now);
	assert_int_equal(kill(f.t.pid, SIGKILL), 0);
	st = term_wait(&f.t);
	assert_int_equal(st, 128 + SIGKILL);
	term_release(&f.t);

	fx_chat(&f, cont);
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "undid turn 2: 2 paths put back\n"))
		fail_msg("/undo said:\n%s", text);
	free(text);
	now = tu_tree(f.p.dir);
	assert_string_equal(now, after1);
	free(now);
	from = fx_say(&f, "/undo");
	text = term_between(&f.t, from, f.t.mark);
	if (!strstr(text, "undid turn 1: 1 path put back\n"))
		fail_msg("/undo said:\n%s", text);
	free(text);
	now = tu_tree(f.p.dir);
	assert_string_equal(now, before);
	free(now);
	term_send(&f.t, "\004");
	assert_int_equal(term_wait(&f.t), 0);
	free(before);
	free(after1);
	fx_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill9_in_repair_resume_then_undo),
		cmocka_unit_test_teardown(test_session_turn_killed_then_undone, term_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

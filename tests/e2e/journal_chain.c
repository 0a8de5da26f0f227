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

/*
 * Run forgex `args` in the project (with `env` added to its own, may be
 * NULL), SIGKILLed once `marker` shows on stderr (NULL: never).
 */
static void run_env(struct tu_result *r, const struct sc_proj *p, const char *const *args,
		    const char *marker, const char *const *env)
{
	struct tu_watch w = { .sig = marker ? SIGKILL : 0, .sig_marker = marker, .deadline = 120 };
	const char *all[16];
	size_t n = 0, i;
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	for (i = 0; i < p->env_nr; i++)
		all[n++] = p->env[i];
	for (i = 0; env && env[i] && n < 15; i++)
		all[n++] = env[i];
	all[n] = NULL;
	tu_run_watched(r, (const char *const *)argv.v, p->dir, all, &w);
	strvec_clear(&argv);
}

static void run_killed(struct tu_result *r, const struct sc_proj *p, const char *const *args,
		       const char *marker)
{
	run_env(r, p, args, marker, NULL);
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

/*
 * Killed writes. A preloaded shim kills forgex (SIGKILL, from inside, so
 * the instant is exact) when it is about to rename a temporary file
 * whose name holds $FX_KILL_AT_RENAME into place: after the journal
 * named the file and its bytes were written, before the rename, as a
 * kill -9 at the worst moment of a write would. With
 * $FX_KILL_AT_RENAME_TO, at any rename onto that name (an undo putting a
 * saved copy back by rename).
 */
static const char shim_c[] =
	"#define _GNU_SOURCE\n"
	"#include <dlfcn.h>\n#include <signal.h>\n#include <stdlib.h>\n"
	"#include <string.h>\n#include <unistd.h>\n"
	"int renameat(int od, const char *o, int nd, const char *n)\n{\n"
	"\tstatic int (*real)(int, const char *, int, const char *);\n"
	"\tconst char *k = getenv(\"FX_KILL_AT_RENAME\");\n\n"
	"\tconst char *t = getenv(\"FX_KILL_AT_RENAME_TO\");\n\n"
	"\tif ((k && *k && strstr(o, k)) || (t && *t && !strcmp(n, t)))\n"
	"\t\tkill(getpid(), SIGKILL);\n"
	"\tif (!real)\n\t\treal = (int (*)(int, const char *, int, const char *))"
	"dlsym(RTLD_NEXT, \"renameat\");\n"
	"\treturn real(od, o, nd, n);\n}\n";

static char *shim_dir;
static char *shim_env;

static int shim_build(void **state)
{
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	char *so, *cmd;
	struct tu_result r;
	const char *argv[] = { "sh", "-c", NULL, NULL };

	(void)state;
	shim_dir = tu_mkdtemp();
	tu_write(shim_dir, "killshim.c", shim_c);
	so = xstrfmt("%s/killshim.so", shim_dir);
	cmd = xstrfmt("%s -shared -fPIC -o killshim.so killshim.c -ldl", cc);
	argv[2] = cmd;
	tu_run(&r, argv, shim_dir, NULL, NULL);
	if (r.status)
		fail_msg("cannot build the test's shim with %s: %s", cc, r.err.buf);
	tu_result_release(&r);
	shim_env = xstrfmt("LD_PRELOAD=%s", so);
	free(so);
	free(cmd);
	return 0;
}

static int shim_remove(void **state)
{
	(void)state;
	tu_rmtree(shim_dir);
	free(shim_env);
	return 0;
}

/* The user's own file that looks like a temporary file of forgex, in no journal. */
#define LOOKALIKE ".calc.py.fx-0badf00d.tmp"

/* The temporary files of calc.py killed writes left (not the look-alike), sorted. */
static void leftovers(struct strvec *out, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, ".calc.py.fx-", 12) && strcmp(e->d_name, LOOKALIKE))
			strvec_push(out, e->d_name);
	closedir(d);
	if (out->nr)
		qsort(out->v, out->nr, sizeof(*out->v), tu_cmp_str);
}

/* The one temporary file of calc.py a killed write left, or NULL. */
static char *leftover(const char *dir)
{
	struct strvec v = STRVEC_INIT;
	char *found;

	leftovers(&v, dir);
	assert_true(v.nr <= 1);
	found = v.nr ? xstrdup(v.v[0]) : NULL;
	strvec_clear(&v);
	return found;
}

/* Every journal line of every run and session turn of the project. */
static char *journals(const char *dir)
{
	const char *argv[] = { "sh", "-c", "cat .forgex/runs/*/changes.jsonl "
			       ".forgex/sessions/*/turns/*/changes.jsonl 2>/dev/null; true", NULL };
	struct tu_result r;
	char *out;

	tu_run(&r, argv, dir, NULL, NULL);
	out = xstrdup(r.out.buf);
	tu_result_release(&r);
	return out;
}

/* The events of every run of the project, one JSON a line. */
static char *all_events(const char *dir)
{
	const char *argv[] = { "sh", "-c", "cat .forgex/runs/*/events.jsonl", NULL };
	struct tu_result r;
	char *out;

	tu_run(&r, argv, dir, NULL, NULL);
	out = xstrdup(r.out.buf);
	tu_result_release(&r);
	return out;
}

/*
 * Kill `args` at the rename of calc.py's temporary file; assert it left
 * one, with the bytes it was writing, named in a journal. Returns its name.
 */
static char *kill_at_rename(const struct sc_proj *p, const char *const *args, const char *has)
{
	const char *env[] = { shim_env, "FX_KILL_AT_RENAME=.calc.py.fx-",
			      "ASAN_OPTIONS=verify_asan_link_order=0", NULL };
	struct tu_result r;
	char *name, *rec, *text, *j;

	run_env(&r, p, args, NULL, env);
	if (r.status != 128 + SIGKILL)
		fail_msg("not killed at the rename (status %d):\n%s%s", r.status, r.out.buf,
			 r.err.buf);
	tu_result_release(&r);
	name = leftover(p->dir);
	if (!name)
		fail_msg("the killed write left no temporary file");
	text = tu_read(p->dir, name);
	if (!text || !strstr(text, has))
		fail_msg("the leftover %s does not hold '%s':\n%s", name, has, text ? text : "(unreadable)");
	free(text);
	j = journals(p->dir);
	rec = xstrfmt("{\"tmp\":\"%s\",\"for\":\"calc.py\"}", name);
	if (!strstr(j, rec))
		fail_msg("no journal names %s:\n%s", name, j);
	free(rec);
	free(j);
	return name;
}

/* A project with the look-alike of the user's, and its tree. */
static char *lookalike_project(struct sc_proj *p, const struct mock *m)
{
	project(p, m);
	tu_write(p->dir, LOOKALIKE, "mine, not forgex's\n");
	tu_write(p->dir, "lib/.util.txt.fx-12345678.tmp", "mine too\n");
	return tu_tree(p->dir);
}

static void assert_removed_by(const struct sc_proj *p, const char *name, const char *before)
{
	char *ev = all_events(p->dir), *now, *look;

	look = tu_read(p->dir, name);
	if (look)
		fail_msg("%s is still there", name);
	/* said, in the run that removed it */
	if (!strstr(ev, "\"type\":\"leftovers_removed\"") || !strstr(ev, name))
		fail_msg("no leftovers_removed event names %s:\n%s", name, ev);
	free(ev);
	look = tu_read(p->dir, LOOKALIKE);
	assert_string_equal(look, "mine, not forgex's\n");
	free(look);
	if (before) {
		now = tu_tree(p->dir);
		assert_string_equal(now, before);
		free(now);
	}
}

/* The Builder's write of calc.py killed before its rename; `forgex resume` removes the file. */
static void test_killed_write_removed_by_resume(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "change calc", NULL };
	char *s, *before, *name, *c;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", CALC(1));
	/* the resumed Builder */
	sc_call(steps, "write_file", CALC(2));
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	before = lookalike_project(&p, &m);
	name = kill_at_rename(&p, run, "version 1");
	c = tu_read(p.dir, "calc.py");
	assert_null(strstr(c, "version"));
	free(c);
	SC_FORGEX(&r, &p, "resume", "last");
	if (r.status != 0 || !strstr(r.out.buf, "PASS"))
		fail_msg("resume (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	c = xstrfmt("    removed %s: the temporary file of a write a killed forgex left\n", name);
	if (!strstr(r.err.buf, c))
		fail_msg("resume did not say it removed %s:\n%s", name, r.err.buf);
	free(c);
	tu_result_release(&r);
	assert_removed_by(&p, name, NULL);
	c = tu_read(p.dir, "calc.py");
	assert_non_null(strstr(c, "version 2"));
	free(c);
	/* and the undo of the resumed run gives back the tree from before it */
	SC_FORGEX(&r, &p, "undo", "last");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	c = tu_tree(p.dir);
	assert_string_equal(c, before);
	free(c);
	free(name);
	free(before);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

/* The same kill; `forgex undo` removes the file and the tree is as before the run. */
static void test_killed_write_removed_by_undo(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "change calc", NULL };
	char *s, *before, *name, *now;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \"lib/made.txt\", \"content\": \"made\\n\"}");
	sc_call(steps, "write_file", CALC(1));
	s = sc_script(steps);
	mock_start(&m, s);
	before = lookalike_project(&p, &m);
	name = kill_at_rename(&p, run, "version 1");
	SC_FORGEX(&r, &p, "undo", "last");
	if (r.status != 0)
		fail_msg("undo (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	assert_null(tu_read(p.dir, name));
	now = tu_tree(p.dir);
	assert_string_equal(now, before);
	free(now);
	free(name);
	free(before);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

/* The same kill; the next `forgex run` removes the file at its start. */
static void test_killed_write_removed_by_next_run(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "change calc", NULL };
	char *s, *name;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", CALC(1));
	/* the next run changes nothing */
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	free(lookalike_project(&p, &m));
	name = kill_at_rename(&p, run, "version 1");
	SC_FORGEX(&r, &p, "run", "something else");
	if (r.status != 0)
		fail_msg("next run (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	assert_removed_by(&p, name, NULL);
	free(name);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

/*
 * An undo killed as it puts calc.py back: the undo renames the saved
 * copy from before the run into place (no temporary file, no new space);
 * killed right before that rename, the next undo finishes it and the tree
 * is as before the run, with nothing of forgex's left in it.
 */
static void test_killed_undo_finished_by_the_next_undo(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *undo[] = { "undo", "last", NULL };
	const char *env[] = { shim_env, "FX_KILL_AT_RENAME_TO=calc.py",
			      "ASAN_OPTIONS=verify_asan_link_order=0", NULL };
	char *s, *before, *now, *left;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", CALC(1));
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	before = lookalike_project(&p, &m);
	SC_FORGEX(&r, &p, "run", "change calc");
	if (r.status != 0)
		fail_msg("run (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	run_env(&r, &p, undo, NULL, env);
	if (r.status != 128 + SIGKILL)
		fail_msg("the undo was not killed at calc.py's rename (status %d):\n%s%s", r.status,
			 r.out.buf, r.err.buf);
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "undo", "last");
	if (r.status != 0)
		fail_msg("second undo (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	left = leftover(p.dir);
	if (left)
		fail_msg("left in the tree: %s", left);
	now = tu_tree(p.dir);
	assert_string_equal(now, before);
	free(now);
	free(before);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

/*
 * A session turn's write killed before its rename: the turn's journal
 * names the file, and the next run's start (which looks at the journals
 * of the user's sessions too) removes it.
 */
static void test_killed_turn_write_removed_by_next_run(void **state)
{
	json_t *steps = json_array();
	struct fx f;
	struct tu_result r;
	char *s, *name, *j, *rec, *c;

	(void)state;
	sc_call(steps, "write_file", CALC(9));
	/* the run after the session changes nothing */
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	assert_null(strchr(s, '\''));
	fx_start(&f, s, "auto");
	tu_write(f.p.dir, LOOKALIKE, "mine, not forgex's\n");
	sc_proj_env(&f.p, shim_env);
	sc_proj_env(&f.p, "FX_KILL_AT_RENAME=.calc.py.fx-");
	sc_proj_env(&f.p, "ASAN_OPTIONS=verify_asan_link_order=0");
	fx_chat(&f, NULL);
	term_type(&f.t, "change calc");
	term_send(&f.t, "\r");
	assert_int_equal(term_wait(&f.t), 128 + SIGKILL);
	term_release(&f.t);
	name = leftover(f.p.dir);
	if (!name)
		fail_msg("the killed write left no temporary file");
	c = tu_read(f.p.dir, name);
	assert_non_null(strstr(c, "version 9"));
	free(c);
	j = journals(f.p.dir);
	rec = xstrfmt("{\"tmp\":\"%s\",\"for\":\"calc.py\"}", name);
	if (!strstr(j, rec))
		fail_msg("no journal names %s:\n%s", name, j);
	free(rec);
	free(j);
	/* the next forgex without the shim */
	f.p.env_nr = 2;
	f.p.env[2] = NULL;
	SC_FORGEX(&r, &f.p, "run", "something else");
	if (r.status != 0)
		fail_msg("next run (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	assert_removed_by(&f.p, name, NULL);
	free(name);
	free(s);
	fx_release(&f);
}

/*
 * apply_patch keeps a hard link to the file it replaces (to undo a patch
 * that fails halfway) under the same kind of name, named to the journal
 * first: killed at the rename of its write, both are left, and `forgex
 * undo` removes both.
 */
static void test_killed_patch_removed_by_undo(void **state)
{
	json_t *steps = json_array(), *args;
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	struct strvec left = STRVEC_INIT;
	const char *run[] = { "run", "change calc", NULL };
	const char *env[] = { shim_env, "FX_KILL_AT_RENAME=.calc.py.fx-",
			      "ASAN_OPTIONS=verify_asan_link_order=0", NULL };
	char *s, *before, *prov, *cfg, *j, *now, *text;
	const char *at;
	size_t i;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	args = json_pack("{s:s}", "input", "*** Begin Patch\n*** Update File: calc.py\n"
			 "@@ def add(a, b):\n-    return a + b\n+    return b + a\n*** End Patch\n");
	text = json_dumps(args, 0);
	sc_call(steps, "apply_patch", text);
	free(text);
	json_decref(args);
	s = sc_script(steps);
	mock_start(&m, s);
	before = lookalike_project(&p, &m);
	/* apply_patch offered beside edit_file */
	prov = sc_provider_toml(&m, "auto");
	at = strstr(prov, "max_retries");
	assert_non_null(at);
	cfg = xstrfmt("%.*sedit_tools = \"both\"\n%s", (int)(at - prov), prov, at);
	tu_write(p.home, "forgex/config.toml", cfg);
	free(cfg);
	free(prov);

	run_env(&r, &p, run, NULL, env);
	if (r.status != 128 + SIGKILL)
		fail_msg("not killed at the rename (status %d):\n%s%s", r.status, r.out.buf,
			 r.err.buf);
	tu_result_release(&r);
	leftovers(&left, p.dir);
	assert_int_equal(left.nr, 2);
	j = journals(p.dir);
	for (i = 0; i < left.nr; i++) {
		char *rec = xstrfmt("{\"tmp\":\"%s\",\"for\":\"calc.py\"}", left.v[i]);

		if (!strstr(j, rec))
			fail_msg("no journal names %s:\n%s", left.v[i], j);
		free(rec);
	}
	free(j);
	SC_FORGEX(&r, &p, "undo", "last");
	if (r.status != 0)
		fail_msg("undo (status %d):\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	now = tu_tree(p.dir);
	assert_string_equal(now, before);
	free(now);
	strvec_clear(&left);
	free(before);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill9_in_repair_resume_then_undo),
		cmocka_unit_test_teardown(test_session_turn_killed_then_undone, term_teardown),
		cmocka_unit_test(test_killed_write_removed_by_resume),
		cmocka_unit_test(test_killed_write_removed_by_undo),
		cmocka_unit_test(test_killed_write_removed_by_next_run),
		cmocka_unit_test(test_killed_undo_finished_by_the_next_undo),
		cmocka_unit_test(test_killed_patch_removed_by_undo),
		cmocka_unit_test_teardown(test_killed_turn_write_removed_by_next_run, term_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, shim_build, shim_remove);
}

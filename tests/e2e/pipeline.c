/*
 * forgex run, end to end: the real binary against build/mockllm playing
 * the four roles, in temporary git repositories with a Python project
 * whose tests really run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

/*
 * Run forgex with `args` in `cwd`. Sends `sig` once `marker` shows on
 * stderr (or at `sig_after` seconds when marker is NULL; sig 0: never);
 * kills it after `deadline` seconds.
 */
static void run_forgex(struct tu_result *r, const char *cwd, const char *const *args, int sig,
		       const char *marker, double sig_after, double deadline)
{
	struct tu_watch w = { .sig = sig, .sig_marker = marker, .sig_after = sig_after,
			      .deadline = deadline };
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run_watched(r, (const char *const *)argv.v, cwd, NULL, &w);
	strvec_clear(&argv);
}

#define FORGEX(r, dir, ...) \
	do { \
		const char *a_[] = { __VA_ARGS__, NULL }; \
		run_forgex((r), (dir), a_, 0, NULL, 0, 120); \
	} while (0)

static const char calc_py[] =
	"def add(a, b):\n"
	"    return a - b\n"
	"\n"
	"\n"
	"def sub(a, b):\n"
	"    return a - b\n";

static const char test_calc_py[] =
	"import unittest\n"
	"\n"
	"from calc import add, sub\n"
	"\n"
	"\n"
	"class CalcTest(unittest.TestCase):\n"
	"    def test_add(self):\n"
	"        self.assertEqual(add(2, 3), 5)\n"
	"\n"
	"    def test_sub(self):\n"
	"        self.assertEqual(sub(5, 3), 2)\n"
	"\n"
	"\n"
	"if __name__ == '__main__':\n"
	"    unittest.main()\n";

/* xstrfmt() into a small ring of buffers the test never frees (short-lived strings). */
static char *xstrfmt_tmp(const char *fmt, ...) FX_PRINTF(1, 2);
static char *xstrfmt_tmp(const char *fmt, ...)
{
	static char *ring[16];
	static unsigned n;
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = xstrvfmt(fmt, ap);
	va_end(ap);
	free(ring[n % 16]);
	ring[n++ % 16] = p;
	return p;
}

/* A git repository with calc.py (add is wrong), its tests and a config for the mock. */
static char *project(const struct mock *m, const char *more)
{
	char *dir = tu_mkdtemp();
	char *prov = sc_provider_toml(m, "auto");
	char *cfg = xstrfmt("%s[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\", \"-v\"]\n%s",
			    prov, more ? more : "");

	tu_write(dir, "calc.py", calc_py);
	tu_write(dir, "test_calc.py", test_calc_py);
	tu_write(dir, ".gitignore", "__pycache__/\n");
	tu_git_init(dir);
	tu_write(dir, "notes.txt", "untracked, not ignored\n");
	tu_write(dir, ".forgex/config.toml", cfg);
	tu_trust(dir, NULL);
	free(cfg);
	free(prov);
	return dir;
}

/* Every file of `dir` but .git, .forgex and __pycache__, with its bytes. */
static void snapshot_into(struct buf *out, const char *dir, const char *rel)
{
	struct dirent **names;
	int n, i;
	char *path = xstrfmt("%s/%s", dir, rel);

	n = scandir(path, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		char *sub = *rel ? xstrfmt("%s/%s", rel, nm) : xstrdup(nm);
		char *full = xstrfmt("%s/%s", dir, sub);
		struct stat st;

		if (strcmp(nm, ".") && strcmp(nm, "..") && strcmp(nm, ".git") &&
		    strcmp(nm, ".forgex") && strcmp(nm, "__pycache__") && !lstat(full, &st)) {
			if (S_ISDIR(st.st_mode)) {
				snapshot_into(out, dir, sub);
			} else {
				buf_addf(out, "== %s %o\n", sub, st.st_mode);
				fsutil_read_file(out, full, 0);
			}
		}
		free(sub);
		free(full);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	free(path);
}

static char *snapshot(const char *dir)
{
	struct buf b = BUF_INIT;

	snapshot_into(&b, dir, "");
	return buf_detach(&b, NULL);
}

/*
 * Script steps
 */

#define PLAN "{\"summary\": \"Fix add\", \"steps\": [{\"id\": \"1\", \"title\": \"Make add add\"," \
	" \"description\": \"return a + b\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"test_add passes\"]}"
#define FIX_ADD "{\"path\": \"calc.py\", \"old_string\": \"def add(a, b):\\n    return a - b\"," \
	" \"new_string\": \"def add(a, b):\\n    return a + b\"}"
#define WRONG_ADD "{\"path\": \"calc.py\", \"old_string\": \"def add(a, b):\\n    return a - b\"," \
	" \"new_string\": \"def add(a, b):\\n    return a * b\"}"
#define FIX_WRONG "{\"path\": \"calc.py\", \"old_string\": \"return a * b\", \"new_string\": \"return a + b\"}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"tests pass\"], \"required_fixes\": []}"
#define FAIL "{\"verdict\": \"FAIL\", \"reasons\": [\"test_add fails\"], \"required_fixes\": [\"add must return a + b\"]}"

/* The events of the newest run of `dir`. */
static json_t *events(const char *dir)
{
	struct buf p = BUF_INIT;
	char *last = NULL;
	json_t *arr = json_array();
	struct dirent **names;
	int n, i;
	char *runs = xstrfmt("%s/.forgex/runs", dir);

	n = scandir(runs, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			free(last);
			last = xstrdup(names[i]->d_name);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	if (last) {
		buf_addf(&p, "%s/%s/events.jsonl", runs, last);
		{
			struct buf b = BUF_INIT;
			size_t pos = 0;

			fsutil_read_file(&b, p.buf, 0);
			while (pos < b.len) {
				const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
				size_t len = nl ? (size_t)(nl - b.buf) - pos : b.len - pos;
				json_t *j = NULL;

				if (len && !jsonx_parse(&j, b.buf + pos, len, "events"))
					json_array_append_new(arr, j);
				pos += len + 1;
			}
			buf_release(&b);
		}
	}
	free(last);
	free(runs);
	buf_release(&p);
	return arr;
}

/* The first event of `type` (borrowed from `evs`), or NULL. */
static json_t *find_event(json_t *evs, const char *type, int nth)
{
	size_t i;
	json_t *e;

	json_array_foreach(evs, i, e)
		if (!strcmp(jsonx_str(e, "type"), type) && nth-- == 0)
			return e;
	return NULL;
}

static size_t count_events(json_t *evs, const char *type)
{
	size_t i, n = 0;
	json_t *e;

	json_array_foreach(evs, i, e)
		n += !strcmp(jsonx_str(e, "type"), type);
	return n;
}

static void assert_file(const char *dir, const char *rel, const char *want)
{
	char *got = tu_read(dir, rel);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_pipeline_pass_at_once(void **state)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *ex;
	size_t before;

	(void)state;
	sc_call(steps, "read_file", "{\"path\": \"calc.py\"}");
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, NULL);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "PASS: "));
	assert_non_null(strstr(r.out.buf, "calc.py"));
	assert_non_null(strstr(r.out.buf, "tests before  1 passed, 1 failed"));
	assert_non_null(strstr(r.out.buf, "tests after   2 passed, 0 failed"));
	assert_non_null(strstr(r.err.buf, "==> architect"));
	assert_non_null(strstr(calc_py, "a - b"));
	{
		char *c = tu_read(dir, "calc.py");

		assert_non_null(strstr(c, "def add(a, b):\n    return a + b"));
		free(c);
	}
	evs = events(dir);
	assert_non_null(find_event(evs, "plan", 0));
	assert_int_equal(count_events(evs, "stage_start"), 7);
	assert_int_equal(count_events(evs, "model_call"), 6);
	assert_string_equal(jsonx_str(find_event(evs, "run_end", 0), "outcome"), "pass");
	assert_string_equal(jsonx_str(find_event(evs, "verdict", 0), "verdict"), "PASS");
	json_decref(evs);
	ex = tu_read(dir, ".git/info/exclude");
	assert_non_null(strstr(ex, ".forgex/runs/"));
	free(ex);
	tu_result_release(&r);

	/* forgex log lists it */
	FORGEX(&r, dir, "log");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "pass"));
	assert_non_null(strstr(r.out.buf, "make add add"));
	tu_result_release(&r);
	FORGEX(&r, dir, "log", "last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "submit_verdict"));
	tu_result_release(&r);

	/* forgex replay: offline, the same outcome, no request to the model */
	before = mock_count(&m, "/chat/completions");
	FORGEX(&r, dir, "replay", "last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "Same outcome"));
	assert_int_equal(mock_count(&m, "/chat/completions"), before);
	tu_result_release(&r);

	/* forgex undo puts the tree back */
	FORGEX(&r, dir, "undo");
	assert_int_equal(r.status, 0);
	assert_file(dir, "calc.py", calc_py);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/* Every file of `dir`/.forgex/runs, concatenated. */
static void runs_text(struct buf *out, const char *dir, const char *rel)
{
	struct dirent **names;
	char *path = xstrfmt("%s/%s", dir, rel);
	int n, i;

	n = scandir(path, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		char *sub = xstrfmt("%s/%s", rel, names[i]->d_name);
		char *full = xstrfmt("%s/%s", dir, sub);
		struct stat st;

		if (names[i]->d_name[0] != '.' && !lstat(full, &st)) {
			if (S_ISDIR(st.st_mode))
				runs_text(out, dir, sub);
			else
				fsutil_read_file(out, full, 0);
		}
		free(sub);
		free(full);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	free(path);
}

/*
 * forgex's own key (its variable has no secret-looking name) and an AWS
 * secret, printed by a command and read from a file: neither the model
 * (the mock's recorded requests) nor anything in .forgex/runs sees them.
 */
static void test_pipeline_secrets_are_redacted(void **state)
{
	const char *key = "plain-Forgex-Key-4711-value";
	const char *aws = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	json_t *steps = json_array(), *reqs;
	struct buf all = BUF_INIT, recorded = BUF_INIT;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *leak;
	size_t i;

	(void)state;
	sc_call(steps, "read_file", "{\"path\": \"leak.txt\"}");
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "run_command", "{\"argv\": [\"cat\", \"leak.txt\"]}");
	/* forgex's own environment, as an unconfined command can read it */
	sc_call(steps, "run_command", "{\"argv\": [\"python3\", \"-c\", \"import os; print(open("
	     "'/proc/%d/environ' % os.getppid()).read().replace(chr(0), chr(10)))\"]}");
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "[sandbox]\nbackend = \"none\"\n");
	leak = xstrfmt("key=%s\naws_secret_access_key = %s\n", key, aws);
	tu_write(dir, "leak.txt", leak);
	setenv("FX_E2E_NO_KEY", key, 1);
	FORGEX(&r, dir, "run", "make add add");
	unsetenv("FX_E2E_NO_KEY");
	assert_int_equal(r.status, 0);
	reqs = mock_requests(&m);
	assert_true(json_array_size(reqs) >= 8);
	for (i = 0; i < json_array_size(reqs); i++) {
		json_t *body = json_object_get(json_array_get(reqs, i), "body");

		if (body)
			jsonx_dump(&all, body, JSON_COMPACT);
	}
	/* the key went where it belongs, the Authorization header, and nowhere else */
	assert_null(strstr(all.buf, key));
	assert_null(strstr(all.buf, aws));
	assert_non_null(strstr(all.buf, "key=[REDACTED]"));
	assert_non_null(strstr(all.buf, "aws_secret_access_key = [REDACTED]"));
	assert_non_null(strstr(all.buf, "FX_E2E_NO_KEY=[REDACTED]"));
	runs_text(&recorded, dir, ".forgex/runs");
	assert_true(recorded.len > 0);
	assert_non_null(strstr(recorded.buf, "\"run_command\""));
	assert_null(strstr(recorded.buf, key));
	assert_null(strstr(recorded.buf, aws));
	assert_null(strstr(r.out.buf, key));
	assert_null(strstr(r.err.buf, key));
	/* the file itself is the user's and unchanged */
	assert_file(dir, "leak.txt", leak);
	json_decref(reqs);
	buf_release(&all);
	buf_release(&recorded);
	tu_result_release(&r);
	mock_release(&m);
	free(leak);
	free(s);
	tu_rmtree(dir);
}

/*
 * A model's plan summary, step titles and a file name it reads carry
 * OSC 52 (clipboard write), a screen clear and BEL: the terminal views
 * (progress, the plan, forgex log) show them escaped, never raw.
 */
static void test_pipeline_terminal_injection_is_escaped(void **state)
{
#define EVIL "\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\\u009b2J"
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir;

	(void)state;
	sc_call(steps, "read_file", "{\"path\": \"x" EVIL ".py\"}");
	sc_call(steps, "submit_plan", "{\"summary\": \"Fix " EVIL " add\", \"steps\": [{\"id\": \"1\","
	     " \"title\": \"Make " EVIL " add\", \"description\": \"d\", \"files\": [\"calc.py\"]}],"
	     " \"acceptance\": [\"ok\"]}");
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, NULL);
	FORGEX(&r, dir, "-v", "plan", "fix it");
	assert_int_equal(r.status, 0);
	assert_null(memchr(r.out.buf, 0x1b, r.out.len));
	assert_null(memchr(r.err.buf, 0x1b, r.err.len));
	assert_null(memchr(r.out.buf, 0x07, r.out.len));
	assert_null(strstr(r.out.buf, "\xc2\x9b"));
	assert_non_null(strstr(r.out.buf, "Fix \\e]52;c;ZXZpbA==\\x07\\e[2J\\u{009B}2J add"));
	assert_non_null(strstr(r.err.buf, "\\e[2J"));
	tu_result_release(&r);
	FORGEX(&r, dir, "log", "last");
	assert_int_equal(r.status, 0);
	assert_null(memchr(r.out.buf, 0x1b, r.out.len));
	assert_non_null(strstr(r.out.buf, "\\e]52"));
	tu_result_release(&r);
	/* --json keeps the text, JSON-escaped */
	FORGEX(&r, dir, "log", "--json", "last");
	assert_null(memchr(r.out.buf, 0x1b, r.out.len));
	if (!strstr(r.out.buf, "\\u001b]52") && !strstr(r.out.buf, "\\u001B]52"))
		fail_msg("log --json: %.2000s", r.out.buf);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
#undef EVIL
}

/*
 * AGENTS.md -> a private key outside the workspace, FORGEX.md a FIFO:
 * neither is read into any prompt, and the warning names the link.
 */
static void test_pipeline_instruction_links_are_refused(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct buf all = BUF_INIT;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *outside = tu_mkdtemp(), *key = xstrfmt("%s/id_ed25519", outside);
	char *link, *fifo;
	size_t i;

	(void)state;
	tu_write(outside, "id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n"
		 "-----END OPENSSH PRIVATE KEY-----\n");
	sc_call(steps, "submit_plan", PLAN);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, NULL);
	link = xstrfmt("%s/AGENTS.md", dir);
	fifo = xstrfmt("%s/FORGEX.md", dir);
	assert_int_equal(symlink(key, link), 0);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	FORGEX(&r, dir, "plan", "fix it");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "AGENTS.md is (or passes through) a symbolic link; it is not read"));
	reqs = mock_requests(&m);
	assert_true(json_array_size(reqs) >= 1);
	for (i = 0; i < json_array_size(reqs); i++)
		jsonx_dump(&all, json_object_get(json_array_get(reqs, i), "body"), JSON_COMPACT);
	assert_null(strstr(all.buf, "TOPSECRETKEYMATERIAL"));
	assert_null(strstr(all.buf, "PRIVATE KEY"));
	json_decref(reqs);
	tu_result_release(&r);

	/* forgex ask confines them the same way */
	{
		const char *args[] = { "ask", "hi", NULL };
		json_t *steps2 = json_array();
		char *s2;
		struct mock m2;

		json_array_append_new(steps2, json_pack("{s:s}", "text", "hello"));
		s2 = sc_script(steps2);
		mock_start(&m2, s2);
		{
			char *cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
					    "api_key_env = \"FX_E2E_NO_KEY\"\nmax_retries = 0\n", m2.base_url);

			tu_write(dir, ".forgex/config.toml", cfg);
			tu_trust(dir, NULL);
			free(cfg);
		}
		run_forgex(&r, dir, args, 0, NULL, 0, 60);
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.err.buf, "AGENTS.md is (or passes through) a symbolic link"));
		assert_non_null(strstr(r.err.buf, "FORGEX.md is not a regular file"));
		reqs = mock_requests(&m2);
		buf_reset(&all);
		for (i = 0; i < json_array_size(reqs); i++)
			jsonx_dump(&all, json_object_get(json_array_get(reqs, i), "body"), JSON_COMPACT);
		assert_null(strstr(all.buf, "TOPSECRETKEYMATERIAL"));
		json_decref(reqs);
		tu_result_release(&r);
		mock_release(&m2);
		free(s2);
	}
	buf_release(&all);
	mock_release(&m);
	free(s);
	free(link);
	free(fifo);
	free(key);
	tu_rmtree(outside);
	tu_rmtree(dir);
}

static void test_pipeline_fail_repair_pass(void **state)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", WRONG_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	sc_call(steps, "edit_file", FIX_WRONG);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, NULL);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "iterations 2"));
	evs = events(dir);
	assert_int_equal(count_events(evs, "verdict"), 2);
	assert_string_equal(jsonx_str(find_event(evs, "verdict", 0), "verdict"), "FAIL");
	/* the repair was told the failing test and the required fix */
	{
		json_t *reqs = mock_requests(&m), *req = json_array_get(reqs, 5);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, json_object_get(req, "body"), 0);
		assert_non_null(strstr(b.buf, "add must return a + b"));
		assert_non_null(strstr(b.buf, "test_add"));
		buf_release(&b);
		json_decref(reqs);
	}
	json_decref(evs);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_fail_until_max_then_rollback(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", WRONG_ADD);
	sc_call(steps, "write_file", "{\"path\": \"extra/new.py\", \"content\": \"x = 1\\n\"}");
	sc_call(steps, "delete_file", "{\"path\": \"notes.txt\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "max_iterations = 2\n");
	before = snapshot(dir);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "FAIL: "));
	assert_non_null(strstr(r.out.buf, "restored"));
	after = snapshot(dir);
	assert_string_equal(after, before);
	assert_int_equal(mock_count(&m, "/chat/completions"), 9);
	free(after);
	free(before);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_keep_leaves_last_attempt(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *c;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", WRONG_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "max_iterations = 1\non_failure = \"keep\"\n");
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "forgex undo"));
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "a * b"));
	free(c);
	tu_result_release(&r);
	FORGEX(&r, dir, "undo");
	assert_int_equal(r.status, 0);
	assert_file(dir, "calc.py", calc_py);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_gate_overrules_pass(void **state)
{
	json_t *steps = json_array(), *evs, *v;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	/* ... and breaks sub, which passed at baseline */
	sc_call(steps, "edit_file", "{\"path\": \"calc.py\", \"old_string\": \"def sub(a, b):\\n    return a - b\","
				 " \"new_string\": \"def sub(a, b):\\n    return b - a\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "max_iterations = 1\n");
	before = snapshot(dir);
	FORGEX(&r, dir, "run", "make add add");
	if (r.status != 1)
		fail_msg("status %d: %s\n%s", r.status, r.out.buf, r.err.buf);
	evs = events(dir);
	v = find_event(evs, "verdict", 0);
	assert_non_null(v);
	assert_string_equal(jsonx_str(v, "verdict"), "FAIL");
	assert_non_null(jsonx_str(v, "gate"));
	assert_non_null(strstr(jsonx_str(v, "gate"), "test_sub"));
	assert_true(jsonx_bool(json_object_get(v, "review"), "pass", 0));
	after = snapshot(dir);
	assert_string_equal(after, before);
	json_decref(evs);
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_ensemble_two_of_three(void **state)
{
	json_t *steps = json_array(), *evs, *v, *reqs;
	struct mock m;
	struct tu_result r;
	char *s, *dir;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	sc_call(steps, "submit_verdict", FAIL);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "[review]\nvoters = [\"default:voter-a\", \"default:voter-b\"]\n"
			  "quorum = \"majority\"\n");
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 0);
	evs = events(dir);
	v = find_event(evs, "verdict", 0);
	assert_string_equal(jsonx_str(v, "verdict"), "PASS");
	v = json_object_get(v, "review");
	assert_int_equal(json_array_size(json_object_get(v, "votes")), 3);
	assert_int_equal(jsonx_int(v, "passes", 0), 2);
	assert_string_equal(jsonx_str(json_array_get(json_object_get(v, "votes"), 1), "voter"),
			    "default:voter-a");
	/* each voter asked with its own model */
	reqs = mock_requests(&m);
	assert_string_equal(jsonx_str(json_object_get(json_array_get(reqs, 5), "body"), "model"),
			    "voter-a");
	assert_string_equal(jsonx_str(json_object_get(json_array_get(reqs, 6), "body"), "model"),
			    "voter-b");
	json_decref(reqs);
	json_decref(evs);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);

	/* the same votes under "unanimous" fail */
	steps = json_array();
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	sc_call(steps, "submit_verdict", FAIL);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "max_iterations = 1\n[review]\nvoters = [\"default:voter-a\", "
			  "\"default:voter-b\"]\nquorum = \"unanimous\"\n");
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 1);
	assert_file(dir, "calc.py", calc_py);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/* A budget that runs out ends the run as on_failure says, with a clear message. */
static void budget_case(const char *budget, const char *delay_step, const char *want)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after, *more;
	size_t nsteps;

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	if (delay_step) {
		json_t *d = NULL;

		jsonx_parse(&d, delay_step, strlen(delay_step), "step");
		json_array_append_new(steps, d);
	}
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	nsteps = json_array_size(steps);
	s = sc_script(steps);
	mock_start(&m, s);
	more = xstrfmt("[budget]\n%s\n", budget);
	dir = project(&m, more);
	before = snapshot(dir);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 1);
	if (!strstr(r.out.buf, want) && !strstr(r.err.buf, want))
		fail_msg("'%s' not in: %s %s", want, r.out.buf, r.err.buf);
	after = snapshot(dir);
	assert_string_equal(after, before);
	/* it stopped early: not every step was asked for */
	assert_true(mock_count(&m, "/chat/completions") < nsteps);
	free(before);
	free(after);
	free(more);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_budget_tokens(void **state)
{
	(void)state;
	budget_case("max_tokens = 100", NULL, "token budget");
}

static void test_pipeline_budget_cost(void **state)
{
	(void)state;
	budget_case("max_cost_usd = 0.01\nprices = [\"mock-model=10/10\"]", NULL, "cost budget");
}

static void test_pipeline_budget_wall(void **state)
{
	(void)state;
	budget_case("max_wall_seconds = 1",
		    "{\"tool_calls\": [{\"id\": \"w\", \"name\": \"list_dir\", \"arguments\": {}}],"
		    " \"delay_ms\": 1500}", "wall-clock budget");
}

/* Whether a process whose command line holds `needle` is alive. */
static int process_alive(const char *needle)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int found = 0;

	while (d && (de = readdir(d))) {
		char *p;
		struct buf b = BUF_INIT;
		size_t i;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		p = xstrfmt("/proc/%s/cmdline", de->d_name);
		if (!fsutil_read_file(&b, p, 0)) {
			for (i = 0; i < b.len; i++)
				if (!b.buf[i])
					b.buf[i] = ' ';
			if (strstr(b.buf, needle))
				found = 1;
		}
		err_clear();
		buf_release(&b);
		free(p);
	}
	if (d)
		closedir(d);
	return found;
}

static void test_pipeline_ctrl_c_during_command(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after;
	const char *args[] = { "run", "make add add", NULL };
	int i;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "run_command", "{\"argv\": [\"sleep\", \"41.75\"]}");
	sc_call(steps, "finish", FINISH);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, NULL);
	before = snapshot(dir);
	run_forgex(&r, dir, args, SIGINT, "run_command", 0, 60);
	assert_int_equal(r.status, 130);
	after = snapshot(dir);
	assert_string_equal(after, before);
	/* the command and everything it started are gone */
	for (i = 0; i < 50 && process_alive("sleep 41.75"); i++)
		usleep(20000);
	assert_false(process_alive("sleep 41.75"));
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_kill9_then_resume(void **state)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir;
	const char *args[] = { "run", "make add add", NULL };

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \"half.txt\", \"content\": \"half done\\n\"}");
	sc_call(steps, "run_command", "{\"argv\": [\"sleep\", \"42.25\"]}");
	/* after the resume, the Builder starts again */
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, NULL);
	run_forgex(&r, dir, args, SIGKILL, "run_command", 0, 60);
	assert_int_equal(r.status, 128 + SIGKILL);
	tu_result_release(&r);
	FORGEX(&r, dir, "log");
	assert_non_null(strstr(r.out.buf, "unfinished"));
	tu_result_release(&r);
	FORGEX(&r, dir, "resume", "last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "PASS"));
	/* the half-done Builder's file is gone: the stage started again from the checkpoint */
	assert_null(tu_read(dir, "half.txt"));
	{
		char *c = tu_read(dir, "calc.py");

		assert_non_null(strstr(c, "return a + b"));
		free(c);
	}
	evs = events(dir);
	assert_non_null(find_event(evs, "run_resume", 0));
	assert_string_equal(jsonx_str(find_event(evs, "run_end", 0), "outcome"), "pass");
	json_decref(evs);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/* make demo, on a fresh copy */
static void test_pipeline_demo(void **state)
{
	const char *top = getenv("FORGEX_TOP");
	char *bin = realpath(tu_forgex(), NULL), *build, *script_path, *dir;
	struct tu_result r;

	(void)state;
	if (!top || !bin) {
		free(bin);
		skip();
	}
	build = xstrdup(bin);
	*strrchr(build, '/') = '\0';
	script_path = xstrfmt("%s/examples/demo/run.sh", top);
	dir = tu_mkdtemp();
	{
		char *env_build = xstrfmt("BUILD=%s", build);
		const char *argv[] = { "sh", script_path, dir, NULL };
		const char *env[] = { env_build, NULL };

		tu_run(&r, argv, top, env, NULL);
		free(env_build);
	}
	if (r.status)
		fail_msg("demo failed (%d): %s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "PASS: "));
	assert_non_null(strstr(r.out.buf, "iterations 2"));
	assert_non_null(strstr(r.err.buf, "verdict: FAIL"));
	{
		char *c = tu_read(dir, "inventory.py");

		assert_non_null(strstr(c, "total += price * qty"));
		assert_non_null(strstr(c, "if qty < 0"));
		free(c);
	}
	tu_result_release(&r);
	free(script_path);
	free(build);
	free(bin);
	tu_rmtree(dir);
}

/* stdout of `sh -c cmd` in `dir` (the caller frees). */
static char *sh_out(const char *dir, const char *cmd)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct tu_result r;
	char *out;

	tu_run(&r, argv, dir, NULL, NULL);
	if (r.status)
		fail_msg("%s: %s%s", cmd, r.out.buf, r.err.buf);
	out = buf_detach(&r.out, NULL);
	tu_result_release(&r);
	return out;
}

#define LONG_NAME "a rather long folder name/that goes on/and on past eighty columns/of a diffstat.txt"

static void test_pipeline_commit_exact_paths(void **state)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *head0, *refs0, *refs1, *branch, *names, *status, *count, *msg, *parent;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "write_file", "{\"path\": \"new file \\u00fc.txt\", \"content\": \"new\\n\"}");
	sc_call(steps, "delete_file", "{\"path\": \"obsolete.txt\"}");
	sc_call(steps, "move_file", "{\"from\": \"docs/old name.txt\", \"to\": \"docs/new n\\u00e4me.txt\"}");
	sc_call(steps, "write_file", "{\"path\": \"a|b.txt\", \"content\": \"pipe\\n\"}");
	sc_call(steps, "write_file", "{\"path\": \" lead\\nline.txt\", \"content\": \"nl\\n\"}");
	sc_call(steps, "write_file", "{\"path\": \"" LONG_NAME "\", \"content\": \"long\\n\"}");
	sc_call(steps, "write_file", "{\"path\": \"debug.log\", \"content\": \"ignored\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, "commit = true\n");
	tu_write(dir, "obsolete.txt", "to be deleted\n");
	tu_write(dir, "docs/old name.txt", "to be renamed\n");
	tu_sh(dir, "rm notes.txt && echo '*.log' >> .git/info/exclude && "
		"git config user.name tester && git config user.email tester@example.com && "
		"git add -A && git commit -qm second && git branch other && git tag v0 HEAD~1 && "
		"echo stash-me >> test_calc.py && git stash -q");
	head0 = sh_out(dir, "git rev-parse HEAD");
	refs0 = sh_out(dir, "git for-each-ref --format='%(refname) %(objectname)' | "
			    "grep -v \"^$(git symbolic-ref HEAD) \"");
	branch = sh_out(dir, "git symbolic-ref HEAD");
	FORGEX(&r, dir, "run", "make add add");
	if (r.status)
		fail_msg("run failed (%d): %s\n%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "The change was committed on the current branch."));
	/* exactly the changed paths: modified, added (space, unicode), deleted, renamed */
	names = sh_out(dir, "git -c core.quotepath=off show --no-renames --name-status "
			    "--format= HEAD");
	assert_string_equal(names, "A\t\" lead\\nline.txt\"\n"
				   "A\t" LONG_NAME "\n"
				   "A\ta|b.txt\n"
				   "M\tcalc.py\n"
				   "A\tdocs/new n\u00e4me.txt\n"
				   "D\tdocs/old name.txt\n"
				   "A\tnew file \u00fc.txt\n"
				   "D\tobsolete.txt\n");
	/* the index and the tree match the commit; the ignored file stays out */
	status = sh_out(dir, "git status --porcelain");
	assert_string_equal(status, "");
	assert_file(dir, "debug.log", "ignored\n");
	/* one commit on the same branch, other refs (branch, tag, stash) untouched */
	count = sh_out(dir, "git rev-list --count HEAD ^$(git rev-parse HEAD~1)");
	assert_string_equal(count, "1\n");
	parent = sh_out(dir, "git rev-parse HEAD~1");
	assert_string_equal(parent, head0);
	free(branch);
	branch = sh_out(dir, "git symbolic-ref HEAD");
	refs1 = sh_out(dir, "git for-each-ref --format='%(refname) %(objectname)' | "
			    "grep -v \"^$(git symbolic-ref HEAD) \"");
	assert_string_equal(refs1, refs0);
	assert_non_null(strstr(refs1, "refs/stash "));
	msg = sh_out(dir, "git log -1 --format=%B");
	assert_non_null(strstr(msg, "make add add"));
	assert_non_null(strstr(msg, "Made by forgex run"));
	evs = events(dir);
	assert_non_null(find_event(evs, "commit", 0));
	json_decref(evs);
	free(head0);
	free(refs0);
	free(refs1);
	free(branch);
	free(names);
	free(status);
	free(count);
	free(msg);
	free(parent);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/*
 * The model's key is refused after the Builder has edited (in review when
 * `in_review`): exit 3, tree restored.
 */
static void provider_401_case(int in_review)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after;

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	if (in_review) {
		sc_call(steps, "finish", FINISH);
		sc_call(steps, "finish", FINISH);
	}
	json_array_append_new(steps, json_pack("{s:i, s:i}", "status", 401, "repeat", -1));
	s = sc_script(steps);
	mock_start(&m, s);
	dir = project(&m, in_review == 2 ? "[review]\nvoters = [\"default:voter-a\", "
				 "\"default:voter-b\"]\nquorum = \"majority\"\n" : NULL);
	before = snapshot(dir);
	FORGEX(&r, dir, "run", "make add add");
	if (r.status != 3)
		fail_msg("status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	/* clear: which provider, what it said, and that the tree is back */
	assert_non_null(strstr(r.err.buf, "forgex: error: provider 'default'"));
	assert_non_null(strstr(r.err.buf, "HTTP 401"));
	assert_non_null(strstr(r.out.buf, "ERROR: "));
	assert_non_null(strstr(r.out.buf, "The tree was restored to how it was before the run."));
	after = snapshot(dir);
	assert_string_equal(after, before);
	evs = events(dir);
	/* the edit was made (and then undone) */
	{
		json_t *e;
		size_t i;
		int edited = 0;

		json_array_foreach(evs, i, e)
			if (!strcmp(jsonx_str(e, "type"), "tool_call") &&
			    jsonx_str(e, "name") && !strcmp(jsonx_str(e, "name"), "edit_file"))
				edited = 1;
		assert_true(edited);
	}
	assert_non_null(find_event(evs, "checkpoint", 0));
	assert_string_equal(jsonx_str(find_event(evs, "run_end", 0), "outcome"), "error");
	json_decref(evs);
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_pipeline_provider_401_restores_tree(void **state)
{
	(void)state;
	provider_401_case(0);
}

static void test_pipeline_provider_401_in_review(void **state)
{
	(void)state;
	provider_401_case(1);
}

/* The Supervisor and both voters are refused: no verdict is a provider error, not a FAIL. */
static void test_pipeline_provider_401_in_ensemble_review(void **state)
{
	(void)state;
	provider_401_case(2);
}

/*
 * Nothing listens where the provider should be: exit 3 at once, before the
 * baseline, with a hint; nothing changed, no run started.
 */
static void test_pipeline_provider_down(void **state)
{
	struct mock m;
	struct tu_result r;
	char *dir, *before, *after;

	(void)state;
	mock_start(&m, "[]");
	dir = project(&m, NULL);
	mock_stop(&m);	/* its port is closed now */
	before = snapshot(dir);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 3);
	assert_non_null(strstr(r.err.buf, "forgex: error: provider 'default': cannot reach"));
	assert_non_null(strstr(r.err.buf, m.base_url));
	assert_non_null(strstr(r.err.buf, "hint: is the model server running?"));
	assert_null(strstr(r.err.buf, "==> baseline"));
	{
		char *runs = xstrfmt("%s/.forgex/runs", dir);

		assert_false(fsutil_is_dir(runs));
		free(runs);
	}
	after = snapshot(dir);
	assert_string_equal(after, before);
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
}


/*
 * Issue 11: nothing the user did is lost, nothing forgex did is left.
 */

/* As project(), with the provider and permissions in the USER file (XDG_CONFIG_HOME). */
static char *user_project(const struct mock *m, const char *more)
{
	char *dir = project(m, more);
	char *home = xstrfmt("%s.home", dir), *ucfg;

	ucfg = sc_provider_toml(m, "auto");
	tu_write(home, "forgex/config.toml", ucfg);
	setenv("XDG_CONFIG_HOME", home, 1);
	free(ucfg);
	free(home);
	return dir;
}

static void user_project_done(char *dir)
{
	char *home = xstrfmt("%s.home", dir);

	unsetenv("XDG_CONFIG_HOME");
	tu_rmtree(home);	/* frees it */
	tu_rmtree(dir);
}

static void delayed_finish(json_t *steps, int ms)
{
	json_array_append_new(steps, json_pack("{s:i, s:[{s:s, s:s, s:{s:s}}]}", "delay_ms", ms,
					       "tool_calls", "id", "delayed", "name", "finish",
					       "arguments", "summary", "done"));
}

/* In a child: once `rel` of `dir` holds `needle`, make the user's edits. */
static pid_t user_edits_when(const char *dir, const char *rel, const char *needle, int calc)
{
	pid_t pid = fork();
	int i;

	if (pid)
		return pid;
	for (i = 0; i < 3000; i++) {
		char *c = tu_read(dir, rel);
		int seen = c && strstr(c, needle);

		free(c);
		if (seen)
			break;
		usleep(10000);
	}
	usleep(200000);
	tu_write(dir, "notes.txt", "the user's own notes\n");
	tu_write(dir, "mine.txt", "a file the user made during the run\n");
	if (calc) {
		char *c = tu_read(dir, "calc.py"), *n = xstrfmt("%s# the user's line\n", c);

		tu_write(dir, "calc.py", n);
		free(n);
		free(c);
	}
	_exit(0);
}

static void test_rollback_keeps_user_edits_and_ignored_env(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	struct stat st;
	char *s, *dir, *before, *after, *c, *runv;
	pid_t user;
	int ws;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "write_file", "{\"path\": \"half.txt\", \"content\": \"the run's\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	delayed_finish(steps, 2500);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, "max_iterations = 1\n");
	tu_write(dir, ".env", "SECRET=1\n");
	chmod(xstrfmt_tmp("%s/.env", dir), 0600);
	tu_sh(dir, "echo .env >> .gitignore && git add .gitignore && "
		"git -c user.name=t -c user.email=t@e commit -qm ignore");
	before = snapshot(dir);
	user = user_edits_when(dir, "calc.py", "a + b", 1);
	FORGEX(&r, dir, "run", "make add add");
	waitpid(user, &ws, 0);
	if (getenv("FX_TEST_SHOW"))
		print_message("%s%s", r.out.buf, r.err.buf);
	assert_int_equal(r.status, 1);
	/* the ignored .env, which no checkpoint holds, is back byte for byte, mode too */
	assert_file(dir, ".env", "SECRET=1\n");
	assert_int_equal(lstat(xstrfmt_tmp("%s/.env", dir), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* the run's own new file is gone; the user's edits and new file stay */
	assert_null(tu_read(dir, "half.txt"));
	assert_file(dir, "notes.txt", "the user's own notes\n");
	assert_file(dir, "mine.txt", "a file the user made during the run\n");
	/* both changed calc.py: the user's version stays, the run's is saved and named */
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "return a + b\n"));
	assert_non_null(strstr(c, "# the user's line\n"));
	free(c);
	assert_non_null(strstr(r.out.buf, "calc.py (the run's version: "));
	runv = strstr(r.out.buf, "(the run's version: ");
	{
		char path[4096];

		assert_int_equal(sscanf(runv, "(the run's version: %4095[^)])", path), 1);
		c = tu_read("/", path);
		assert_non_null(c);
		assert_non_null(strstr(c, "return a + b\n"));
		assert_null(strstr(c, "the user's line"));
		free(c);
	}
	/* without the user's own edits, the tree is byte-identical to before */
	tu_sh(dir, "rm mine.txt && git checkout -q calc.py");
	tu_write(dir, "notes.txt", "untracked, not ignored\n");
	after = snapshot(dir);
	assert_string_equal(after, before);
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* commit = true commits the run's paths only, never what the user changed meanwhile. */
static void test_commit_only_the_runs_paths(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *names, *status;
	pid_t user;
	int ws;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	delayed_finish(steps, 2000);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, "commit = true\n");
	tu_sh(dir, "git config user.name tester && git config user.email tester@example.com && "
		"git add notes.txt && git commit -qm notes");
	user = user_edits_when(dir, "calc.py", "a + b", 0);
	FORGEX(&r, dir, "run", "make add add");
	waitpid(user, &ws, 0);
	if (r.status)
		fail_msg("run: %s%s", r.out.buf, r.err.buf);
	names = sh_out(dir, "git show --name-only --format= HEAD");
	assert_string_equal(names, "calc.py\n");
	status = sh_out(dir, "git status --porcelain -- calc.py notes.txt mine.txt");
	assert_string_equal(status, " M notes.txt\n?? mine.txt\n");
	assert_file(dir, "notes.txt", "the user's own notes\n");
	free(names);
	free(status);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* A run holding the workspace (a command sleeps); returns its pid. */
static pid_t background_run(const char *dir, const char *seconds)
{
	pid_t pid = fork();

	if (!pid) {
		struct tu_result r;
		const char *args[] = { "run", "make add add", NULL };

		(void)seconds;
		run_forgex(&r, dir, args, 0, NULL, 0, 60);
		_exit(r.status);
	}
	return pid;
}

static void wait_for_file_text(const char *dir, const char *rel, const char *needle)
{
	int i;

	for (i = 0; i < 3000; i++) {
		char *c = tu_read(dir, rel);
		int seen = c && strstr(c, needle);

		free(c);
		if (seen)
			return;
		usleep(10000);
	}
	fail_msg("%s never held %s", rel, needle);
}

static void test_lock_second_run_refused_or_waits(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after;
	pid_t first;
	int ws;
	double t0;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "run_command", "{\"argv\": [\"sleep\", \"3\"]}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, "max_iterations = 1\n");
	before = snapshot(dir);
	first = background_run(dir, "3");
	wait_for_file_text(dir, "calc.py", "a + b");
	/* --no-wait: a clear error naming the holder (pid, run id, since when) */
	FORGEX(&r, dir, "run", "--no-wait", "something else");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "another forgex is changing this workspace: pid "));
	assert_non_null(strstr(r.err.buf, "(run 20"));
	assert_non_null(strstr(r.err.buf, ", since 20"));
	tu_result_release(&r);
	FORGEX(&r, dir, "undo", "--no-wait");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "another forgex is changing this workspace"));
	tu_result_release(&r);
	FORGEX(&r, dir, "checkpoint", "restore", "0000", "--no-wait");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "another forgex is changing this workspace"));
	tu_result_release(&r);
	/* without --no-wait: it says so and waits for the first run to end */
	t0 = tu_now();
	FORGEX(&r, dir, "undo");
	assert_non_null(strstr(r.err.buf, "forgex: waiting for pid "));
	assert_true(tu_now() - t0 > 0.5);
	waitpid(first, &ws, 0);
	assert_int_equal(WEXITSTATUS(ws), 1);
	tu_result_release(&r);
	/* the first run failed and rolled back under nobody else: the tree is as before */
	after = snapshot(dir);
	assert_string_equal(after, before);
	free(before);
	free(after);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* The steps of a run that touches an ignored file, a tracked one and a new one. */
static json_t *kill_steps(void)
{
	json_t *steps = json_array();

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "write_file", "{\"path\": \"sub/new.txt\", \"content\": \"new\\n\"}");
	sc_call(steps, "run_command", "{\"argv\": [\"sh\", \"-c\", \"echo made > by-command.txt; sleep 0.3\"]}");
	sc_call(steps, "delete_file", "{\"path\": \"notes.txt\"}");
	delayed_finish(steps, 300);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	return steps;
}

static char *kill_project(const struct mock *m)
{
	char *dir = user_project(m, NULL);

	tu_write(dir, ".env", "SECRET=1\n");
	tu_sh(dir, "echo .env >> .gitignore && git add .gitignore && "
		"git -c user.name=t -c user.email=t@e commit -qm ignore");
	return dir;
}

static void test_kill_at_many_points_then_undo(void **state)
{
	static const double delays[] = { 0.2, 0.5, 0.8, 1.1, 1.4, 1.8, 2.3 };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(delays); i++) {
		json_t *steps = kill_steps();
		struct mock m;
		struct tu_result r;
		char *s = sc_script(steps), *dir, *before, *after;
		const char *args[] = { "run", "make add add", NULL };
		double t0;

		mock_start(&m, s);
		dir = kill_project(&m);
		before = snapshot(dir);
		run_forgex(&r, dir, args, SIGKILL, NULL, delays[i], 60);
		tu_result_release(&r);
		/* at most one undo: the tree is byte-identical, and nothing hangs */
		t0 = tu_now();
		FORGEX(&r, dir, "undo");
		assert_true(tu_now() - t0 < 30);
		after = snapshot(dir);
		if (strcmp(after, before))
			fail_msg("killed after %.1fs (exit %d): undo left\n%s\nwanted\n%s\n%s%s",
				 delays[i], r.status, after, before, r.out.buf, r.err.buf);
		assert_file(dir, ".env", "SECRET=1\n");
		tu_result_release(&r);
		/* and the lock of the killed forgex is free */
		FORGEX(&r, dir, "checkpoint", "restore", "--no-wait", "ffff");
		assert_null(strstr(r.err.buf, "another forgex"));
		tu_result_release(&r);
		free(before);
		free(after);
		mock_release(&m);
		free(s);
		user_project_done(dir);
	}
}

static void signal_case(int sig)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after;
	const char *args[] = { "run", "make add add", NULL };

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "run_command", "{\"argv\": [\"sleep\", \"43.5\"]}");
	sc_call(steps, "finish", FINISH);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = kill_project(&m);
	before = snapshot(dir);
	run_forgex(&r, dir, args, sig, "run_command", 0, 60);
	assert_int_equal(r.status, 130);
	after = snapshot(dir);
	assert_string_equal(after, before);
	assert_file(dir, ".env", "SECRET=1\n");
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

static void test_sighup_restores_the_tree(void **state)
{
	(void)state;
	signal_case(SIGHUP);
}

static void test_sigquit_restores_the_tree(void **state)
{
	(void)state;
	signal_case(SIGQUIT);
}

/* `forgex run --json | head -1`: the reader goes away; the tree is restored. */
static void test_sigpipe_restores_the_tree(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *after, *cmd, *bin = realpath(tu_forgex(), NULL);
	const char *argv[] = { "sh", "-c", NULL, NULL };
	json_t *evs;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	delayed_finish(steps, 1500);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = kill_project(&m);
	before = snapshot(dir);
	/* head reads two lines and goes away while the run goes on */
	cmd = xstrfmt("'%s' run --json 'make add add' | head -2 >/dev/null", bin);
	argv[2] = cmd;
	tu_run(&r, argv, dir, NULL, NULL);
	after = snapshot(dir);
	assert_string_equal(after, before);
	evs = events(dir);
	assert_string_equal(jsonx_str(find_event(evs, "run_end", 0), "outcome"), "interrupted");
	json_decref(evs);
	tu_result_release(&r);
	free(cmd);
	free(bin);
	free(before);
	free(after);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* Planted run files: a FIFO as state.json, a symlinked .forgex/runs. Nothing hangs. */
static void test_planted_run_files_refused(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *runs, *elsewhere;
	struct strvec ids = STRVEC_INIT;
	double t0;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, NULL);
	FORGEX(&r, dir, "plan", "make add add");
	tu_result_release(&r);
	runs = xstrfmt("%s/.forgex/runs", dir);
	{
		struct dirent **names;
		int n = scandir(runs, &names, NULL, alphasort), i;

		for (i = 0; i < n; i++) {
			if (names[i]->d_name[0] != '.')
				strvec_push(&ids, names[i]->d_name);
			free(names[i]);
		}
		free(names);
	}
	assert_int_equal(ids.nr, 1);
	{
		char *st = xstrfmt("%s/%s/state.json", runs, ids.v[0]);
		char *ev = xstrfmt("%s/%s/events.jsonl", runs, ids.v[0]);

		unlink(st);
		assert_int_equal(mkfifo(st, 0600), 0);
		unlink(ev);
		assert_int_equal(mkfifo(ev, 0600), 0);
		free(st);
		free(ev);
	}
	t0 = tu_now();
	FORGEX(&r, dir, "resume");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "is a named pipe"));
	tu_result_release(&r);
	FORGEX(&r, dir, "undo");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "is a named pipe"));
	tu_result_release(&r);
	FORGEX(&r, dir, "log", "last");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "is a named pipe"));
	tu_result_release(&r);
	assert_true(tu_now() - t0 < 20);
	/* a symlinked .forgex/runs: an error naming it, nothing written elsewhere */
	elsewhere = tu_mkdtemp();
	tu_rmtree(xstrdup(runs));
	assert_int_equal(symlink(elsewhere, runs), 0);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, ".forgex/runs is a symbolic link"));
	tu_result_release(&r);
	FORGEX(&r, dir, "log");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, ".forgex/runs is a symbolic link"));
	tu_result_release(&r);
	{
		char *e = snapshot(elsewhere);

		assert_string_equal(e, "");
		free(e);
	}
	tu_rmtree(elsewhere);
	strvec_clear(&ids);
	free(runs);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* undo RUN: refuses over later changes without --force, prints the redo command. */
static void test_undo_refuses_then_force_and_redo(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *before, *redo, *c;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "write_file", "{\"path\": \"added.txt\", \"content\": \"by the run\\n\"}");
	{
		char *big = xstrfmt("{\"path\": \"big.txt\", \"content\": \"%0600d\"}", 7);

		sc_call(steps, "write_file", big);
		free(big);
	}
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, NULL);
	before = snapshot(dir);
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	/* a tool call's long argument is stored once: in the transcript, not in events.jsonl */
	{
		char *ev = sh_out(dir, "cat .forgex/runs/*/events.jsonl");
		char *tr = sh_out(dir, "cat .forgex/runs/*/transcript.jsonl");

		assert_null(strstr(ev, "0000000000000000000000000000000000000000007"));
		assert_non_null(strstr(ev, "[600 bytes; in transcript.jsonl]"));
		assert_non_null(strstr(tr, "0000000000000000000000000000000000000000007"));
		free(ev);
		free(tr);
	}
	unlink(xstrfmt_tmp("%s/big.txt", dir));
	/* diff right after the run shows its whole change; options after the id */
	FORGEX(&r, dir, "diff", "last", "--stat");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "calc.py"));
	assert_non_null(strstr(r.out.buf, "added.txt"));
	tu_result_release(&r);
	FORGEX(&r, dir, "diff");
	assert_non_null(strstr(r.out.buf, "+    return a + b"));
	tu_result_release(&r);
	/* the user changes a file of the run, and another one */
	tu_write(dir, "added.txt", "the user's now\n");
	tu_write(dir, "notes.txt", "the user's notes\n");
	FORGEX(&r, dir, "undo", "last");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "changed since the run ended"));
	assert_non_null(strstr(r.err.buf, "  added.txt\n"));
	assert_null(strstr(r.err.buf, "notes.txt"));
	assert_file(dir, "added.txt", "the user's now\n");
	tu_result_release(&r);
	FORGEX(&r, dir, "undo", "last", "--force");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "your versions, saved"));
	redo = strstr(r.out.buf, "To redo it: forgex checkpoint restore ");
	assert_non_null(redo);
	assert_null(tu_read(dir, "added.txt"));
	assert_file(dir, "notes.txt", "the user's notes\n");	/* not the run's: kept */
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "return a - b"));
	free(c);
	{
		char id[64];

		assert_int_equal(sscanf(redo, "To redo it: forgex checkpoint restore %63s", id), 1);
		tu_result_release(&r);
		FORGEX(&r, dir, "checkpoint", "restore", id, "--json");
		assert_int_equal(r.status, 0);
		assert_file(dir, "added.txt", "the user's now\n");
		c = tu_read(dir, "calc.py");
		assert_non_null(strstr(c, "return a + b"));
		free(c);
	}
	free(before);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* After commit = true, undo reverts the commit with a new commit. */
static void test_undo_reverts_commit(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *dir, *head0, *head1, *count, *status, *msg;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, "commit = true\n");
	tu_sh(dir, "git config user.name tester && git config user.email tester@example.com");
	head0 = sh_out(dir, "git rev-parse HEAD");
	FORGEX(&r, dir, "run", "make add add");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	head1 = sh_out(dir, "git rev-parse HEAD");
	assert_string_not_equal(head0, head1);
	FORGEX(&r, dir, "undo");
	if (r.status)
		fail_msg("undo: %s%s", r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "The run's commit is reverted by commit "));
	/* a new commit on top: history is not rewritten */
	count = sh_out(dir, "git rev-list --count HEAD");
	assert_string_equal(count, "3\n");
	status = sh_out(dir, "git status --porcelain calc.py");
	assert_string_equal(status, "");
	msg = sh_out(dir, "git log -1 --format=%s");
	assert_string_equal(msg, "Revert \"make add add\"\n");
	{
		char *d = sh_out(dir, "git diff HEAD~2 HEAD --stat");

		assert_string_equal(d, "");
		free(d);
	}
	free(head0);
	free(head1);
	free(count);
	free(status);
	free(msg);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/* Ctrl-C, then `forgex resume` (no id) goes on and passes. */
static void test_resume_after_ctrl_c(void **state)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *c;
	const char *args[] = { "run", "make add add", NULL };

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "run_command", "{\"argv\": [\"sleep\", \"44.5\"]}");
	/* after the resume the Builder starts again from the plan */
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, NULL);
	run_forgex(&r, dir, args, SIGINT, "run_command", 0, 60);
	assert_int_equal(r.status, 130);
	tu_result_release(&r);
	FORGEX(&r, dir, "resume");
	if (r.status)
		fail_msg("resume: %s%s", r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "PASS"));
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "return a + b"));
	free(c);
	evs = events(dir);
	assert_non_null(find_event(evs, "run_resume", 0));
	json_decref(evs);
	tu_result_release(&r);
	FORGEX(&r, dir, "resume");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "has already ended"));
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

/*
 * Ctrl-C while the model is thinking (a slow answer), in the Builder's
 * first turn and in the Supervisor's: restored, 130, and `forgex resume`
 * finishes the run to PASS.
 */
static void resume_after_slow_step(const char *marker, int slow_step, const char *slow_tests)
{
	json_t *steps = json_array(), *evs;
	struct mock m;
	struct tu_result r;
	char *s, *dir, *c;
	const char *args[] = { "run", "make add add", NULL };

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	/*
	 * The slow step is cut short by the interrupt (the mock still sleeps
	 * it out in that connection's thread); the resume asks again and gets
	 * a copy of it, at once. When the interrupt comes before the request
	 * is sent (the marker shows just before it), the resume's request gets
	 * the slow step itself and waits it out: 3 s is ample for the
	 * SIGINT, which follows the marker within a poll of 20 ms.
	 */
	if (slow_step < (int)json_array_size(steps)) {
		json_t *again;

		json_object_set_new(json_array_get(steps, (size_t)slow_step), "delay_ms",
				    json_integer(3000));
		again = json_deep_copy(json_array_get(steps, (size_t)slow_step));
		json_object_del(again, "delay_ms");
		json_array_insert_new(steps, (size_t)slow_step + 1, again);
	}
	s = sc_script(steps);
	mock_start(&m, s);
	dir = user_project(&m, NULL);
	if (slow_tests) {
		/* a test that takes 3 s while calc.py holds `slow_tests` */
		char *t = xstrfmt("import time, unittest\n\n\nclass Slow(unittest.TestCase):\n"
				  "    def test_slow(self):\n"
				  "        if '%s' in open('calc.py').read():\n"
				  "            time.sleep(3)\n", slow_tests);

		tu_write(dir, "test_slow.py", t);
		free(t);
	}
	run_forgex(&r, dir, args, SIGINT, marker, 0, 60);
	if (r.status != 130)
		fail_msg("run: %d\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "return a - b"));	/* restored */
	free(c);
	FORGEX(&r, dir, "resume");
	if (r.status)
		fail_msg("resume: %d\n%s%s", r.status, r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "PASS"));
	c = tu_read(dir, "calc.py");
	assert_non_null(strstr(c, "return a + b"));
	free(c);
	evs = events(dir);
	assert_non_null(find_event(evs, "run_resume", 0));
	json_decref(evs);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	user_project_done(dir);
}

static void test_resume_after_ctrl_c_during_model_call(void **state)
{
	(void)state;
	resume_after_slow_step("==> builder", 1, NULL);
}

static void test_resume_after_ctrl_c_during_review(void **state)
{
	(void)state;
	resume_after_slow_step("==> review", 4, NULL);
}

/* Ctrl-C while the Architect's model call is slow: nothing is planned yet. */
static void test_resume_after_ctrl_c_during_architect(void **state)
{
	(void)state;
	resume_after_slow_step("==> architect", 0, NULL);
}

/* Ctrl-C while the project's tests run after the change. */
static void test_resume_after_ctrl_c_during_verify(void **state)
{
	(void)state;
	resume_after_slow_step("==> verify", 99, "a + b");
}

/* Ctrl-C while the tests run before anything changes. */
static void test_resume_after_ctrl_c_during_baseline(void **state)
{
	(void)state;
	resume_after_slow_step("==> baseline", 99, "a - b");
}

/* In a child: once calc.py holds the fix, fill the disk of `dir` (the file `fill` beside it). */
static pid_t fill_disk_when_fixed(const char *dir)
{
	pid_t pid = fork();
	int i;

	if (pid)
		return pid;
	for (i = 0; i < 3000; i++) {
		char *c = tu_read(dir, "calc.py");
		int seen = c && strstr(c, "a + b");

		free(c);
		if (seen)
			break;
		usleep(10000);
	}
	{
		char *p = xstrfmt("%s/../fill", dir), block[65536];
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		memset(block, 'f', sizeof(block));
		while (fd >= 0 && write(fd, block, sizeof(block)) > 0)
			;
		/* the last pages too */
		while (fd >= 0 && write(fd, block, 1) > 0)
			;
		if (fd >= 0)
			close(fd);
		free(p);
	}
	_exit(0);
}

/*
 * A full disk (a small tmpfs) while the run goes on: the rollback says what
 * it could not put back and where its bytes are (never an empty reason);
 * once there is room again, one undo makes the tree byte-identical.
 */
static void test_full_disk_restores(void **state)
{
	json_t *steps = json_array();
	struct mock m;
	struct tu_result r;
	char *s, *base = tu_mkdtemp(), *dir, *before, *after, *mnt, *home = NULL;
	const char *argv[] = { "mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", NULL, NULL };
	struct tu_result mr;
	pid_t filler;
	int ws;

	(void)state;
	mnt = xstrfmt("%s/small", base);
	mkdir(mnt, 0755);
	argv[6] = mnt;
	tu_run(&mr, argv, base, NULL, NULL);
	if (mr.status) {
		tu_result_release(&mr);
		tu_rmtree(base);
		free(mnt);
		print_message("skipped: cannot mount a tmpfs (not root?)\n");
		skip();
	}
	tu_result_release(&mr);
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	delayed_finish(steps, 1500);
	sc_call(steps, "write_file", "{\"path\": \"more.txt\", \"content\": \"x\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	{
		char *proj = kill_project(&m);

		dir = xstrfmt("%s/p", mnt);
		tu_sh(base, xstrfmt_tmp("cp -a '%s' '%s'", proj, dir));
		home = xstrfmt("%s.home", proj);
		setenv("XDG_CONFIG_HOME", home, 1);
		tu_rmtree(proj);
	}
	tu_sh(dir, "echo fill >> .git/info/exclude");
	before = snapshot(dir);
	filler = fill_disk_when_fixed(dir);
	FORGEX(&r, dir, "run", "--", "make add add");
	waitpid(filler, &ws, 0);
	if (getenv("FX_TEST_SHOW"))
		print_message("%s%s", r.out.buf, r.err.buf);
	assert_int_not_equal(r.status, 0);
	/* never an empty reason; a claim of "restored" only when true */
	assert_null(strstr(r.err.buf, "error: ; "));
	assert_null(strstr(r.out.buf, " — ; "));
	after = snapshot(dir);
	{
		char *env = tu_read(dir, ".env");
		int same = !strcmp(after, before) && env && !strcmp(env, "SECRET=1\n");

		free(env);
		if (strstr(r.out.buf, "The tree was restored to how it was before the run."))
			assert_true(same);
		else if (!same)
			assert_non_null(strstr(r.out.buf, "what it was before the run: "));
	}
	/* room again: at most one undo */
	unlink(xstrfmt_tmp("%s/../fill", dir));
	if (strcmp(after, before)) {
		tu_result_release(&r);
		FORGEX(&r, dir, "undo");
		free(after);
		after = snapshot(dir);
	}
	if (strcmp(after, before))
		fail_msg("full disk: the tree is not back\n%s%s", r.out.buf, r.err.buf);
	assert_file(dir, ".env", "SECRET=1\n");
	free(before);
	free(after);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	{
		const char *um[] = { "umount", mnt, NULL };

		tu_run(&mr, um, base, NULL, NULL);
		tu_result_release(&mr);
	}
	unsetenv("XDG_CONFIG_HOME");
	tu_rmtree(home);
	free(dir);
	free(mnt);
	tu_rmtree(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipeline_pass_at_once),
		cmocka_unit_test(test_pipeline_secrets_are_redacted),
		cmocka_unit_test(test_pipeline_terminal_injection_is_escaped),
		cmocka_unit_test(test_pipeline_instruction_links_are_refused),
		cmocka_unit_test(test_pipeline_fail_repair_pass),
		cmocka_unit_test(test_pipeline_fail_until_max_then_rollback),
		cmocka_unit_test(test_pipeline_keep_leaves_last_attempt),
		cmocka_unit_test(test_pipeline_gate_overrules_pass),
		cmocka_unit_test(test_pipeline_ensemble_two_of_three),
		cmocka_unit_test(test_pipeline_budget_tokens),
		cmocka_unit_test(test_pipeline_budget_cost),
		cmocka_unit_test(test_pipeline_budget_wall),
		cmocka_unit_test(test_pipeline_ctrl_c_during_command),
		cmocka_unit_test(test_pipeline_kill9_then_resume),
		cmocka_unit_test(test_pipeline_demo),
		cmocka_unit_test(test_pipeline_commit_exact_paths),
		cmocka_unit_test(test_pipeline_provider_401_restores_tree),
		cmocka_unit_test(test_pipeline_provider_401_in_review),
		cmocka_unit_test(test_pipeline_provider_401_in_ensemble_review),
		cmocka_unit_test(test_pipeline_provider_down),
		cmocka_unit_test(test_rollback_keeps_user_edits_and_ignored_env),
		cmocka_unit_test(test_commit_only_the_runs_paths),
		cmocka_unit_test(test_lock_second_run_refused_or_waits),
		cmocka_unit_test(test_kill_at_many_points_then_undo),
		cmocka_unit_test(test_sighup_restores_the_tree),
		cmocka_unit_test(test_sigquit_restores_the_tree),
		cmocka_unit_test(test_sigpipe_restores_the_tree),
		cmocka_unit_test(test_planted_run_files_refused),
		cmocka_unit_test(test_undo_refuses_then_force_and_redo),
		cmocka_unit_test(test_undo_reverts_commit),
		cmocka_unit_test(test_resume_after_ctrl_c),
		cmocka_unit_test(test_resume_after_ctrl_c_during_model_call),
		cmocka_unit_test(test_resume_after_ctrl_c_during_review),
		cmocka_unit_test(test_resume_after_ctrl_c_during_verify),
		cmocka_unit_test(test_resume_after_ctrl_c_during_architect),
		cmocka_unit_test(test_resume_after_ctrl_c_during_baseline),
		cmocka_unit_test(test_full_disk_restores),
	};

	/* TU_FILTER=test_resume_* runs only the tests it names */
	if (getenv("TU_FILTER"))
		cmocka_set_test_filter(getenv("TU_FILTER"));
	return tu_run_group_tests(tests, NULL, NULL);
}

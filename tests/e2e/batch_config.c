/*
 * forgex batch's [batch] section, end to end: the user's configuration
 * gives jobs, the per-task wall time and grace, keep and the clone URL
 * template of SWE-bench tasks (their repositories are local folders
 * here); the command line overrides each. Two SWE-bench tasks against the
 * scripted mock: one the Builder fixes (PASS), one whose model never
 * answers (TIMEOUT at the configured wall time). A bad [batch] value stops
 * the batch before it starts, naming the file, line and key.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

#define PLAN "{\"id\": \"ar\", \"name\": \"submit_plan\", \"arguments\": {\"summary\": \"Fix add\"," \
	" \"steps\": [{\"id\": \"1\", \"title\": \"fix\", \"description\": \"a + b\"," \
	" \"files\": [\"calc.py\"]}], \"acceptance\": [\"test_add passes\"]}}"
#define FINISH(id) "{\"id\": \"" id "\", \"name\": \"finish\", \"arguments\": {\"summary\": \"done\"}}"
#define VERDICT "{\"id\": \"sv\", \"name\": \"submit_verdict\", \"arguments\": {\"verdict\": " \
	"\"PASS\", \"reasons\": [\"r\"], \"required_fixes\": []}}"
#define EDIT "{\"id\": \"bx-edit-1\", \"name\": \"edit_file\", \"arguments\": {\"path\": \"calc.py\"," \
	" \"old_string\": \"return a - b\", \"new_string\": \"return a + b\"}}"

static const char pass_script[] =
	"{\"on_match\": ["
	"{\"body_contains\": \"You are the Supervisor\", \"tool_calls\": [" VERDICT "]},"
	"{\"body_contains\": \"You are the Expert Coder\", \"tool_calls\": [" FINISH("ex") "]},"
	"{\"body_contains\": \"bx-edit-1\", \"tool_calls\": [" FINISH("bf") "]},"
	"{\"body_contains\": \"You are the Builder\", \"tool_calls\": [" EDIT "]},"
	"{\"body_contains\": \"You are the Architect\", \"tool_calls\": [" PLAN "]}"
	"], \"steps\": []}";
static const char hang_script[] = "{\"steps\": [{\"hang\": true, \"repeat\": -1}]}";

static struct mock pass_mock, hang_mock;
static struct sc_proj proj;
static char *root;

/* The user's file: the provider settings, then `batch` as the [batch] section. */
static void user_config(const char *batch)
{
	sc_proj_config(&proj, NULL, "auto", tu_fmt("[pipeline]\nmax_iterations = 1\n[batch]\n%s",
						batch));
}

static int setup(void **state)
{
	char *dir, *commit;

	(void)state;
	mock_start(&pass_mock, pass_script);
	mock_start(&hang_mock, hang_script);
	sc_proj_init(&proj, NULL, "auto", "");
	sc_proj_env(&proj, "PYTHONDONTWRITEBYTECODE=1");
	root = tu_mkdtemp();
	dir = tu_fmt("%s/repos/acme/calc", root);
	fsutil_mkdir_p(dir, 0755);
	tu_write(dir, "calc.py", "def add(a, b):\n    return a - b\n");
	tu_write(dir, "test_calc.py", "import unittest\nfrom calc import add\n\n\n"
		 "class T(unittest.TestCase):\n    def test_add(self):\n"
		 "        self.assertEqual(add(2, 3), 5)\n");
	tu_write(dir, ".gitignore", "__pycache__/\n");
	free(tu_sh_out(dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@e "
		    "commit -qm one"));
	commit = tu_sh_out(dir, "git rev-parse HEAD");
	tu_write(root, "pass.jsonl", tu_fmt(
		"{\"instance_id\": \"acme__calc-1\", \"repo\": \"acme/calc\", \"base_commit\": \"%s\", "
		"\"problem_statement\": \"add() subtracts\", \"FAIL_TO_PASS\": [\"test_add (test_calc.T)\"], "
		"\"config\": {\"providers.default.base_url\": \"%s\"}}\n", commit, pass_mock.base_url));
	tu_write(root, "hang.jsonl", tu_fmt(
		"{\"instance_id\": \"acme__calc-2\", \"repo\": \"acme/calc\", \"base_commit\": \"%s\", "
		"\"problem_statement\": \"add() subtracts\", "
		"\"config\": {\"providers.default.base_url\": \"%s\"}}\n", commit, hang_mock.base_url));
	free(commit);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mock_release(&pass_mock);
	mock_release(&hang_mock);
	sc_proj_release(&proj);
	tu_rmtree(root);
	return 0;
}

/* The batch's batch_start event, from its --json output. */
static long jobs_of(const char *out)
{
	const char *p = strstr(out, "{\"type\": \"batch_start\"");
	const char *nl;
	json_t *ev = NULL;
	long j;

	if (!p)
		p = strstr(out, "\"batch_start\"");
	if (!p)
		fail_msg("no batch_start event in:\n%s", out);
	while (p > out && p[-1] != '\n')
		p--;
	nl = strchr(p, '\n');
	assert_non_null(nl);
	assert_int_equal(jsonx_parse(&ev, p, (size_t)(nl - p), "event"), 0);
	j = (long)jsonx_int(ev, "jobs", -1);
	json_decref(ev);
	return j;
}

static json_t *result_of(const char *out_dir, const char *id)
{
	char *s = tu_read(out_dir, "results.jsonl"), *p, *nl;
	json_t *found = NULL;

	assert_non_null(s);
	for (p = s; (nl = strchr(p, '\n')); p = nl + 1) {
		json_t *l = NULL;

		assert_int_equal(jsonx_parse(&l, p, (size_t)(nl - p), "result"), 0);
		if (!strcmp(jsonx_str(l, "id"), id))
			found = json_incref(l);
		json_decref(l);
	}
	free(s);
	if (!found)
		fail_msg("no result for %s in %s", id, out_dir);
	return found;
}

static void check_status(const char *out_dir, const char *id, const char *status)
{
	json_t *l = result_of(out_dir, id);

	if (strcmp(jsonx_str(l, "status"), status))
		fail_msg("%s: %s, expected %s (%s)", id, jsonx_str(l, "status"), status,
			 jsonx_str(l, "error") ? jsonx_str(l, "error") : "");
	json_decref(l);
}

/* The task that hangs ended at the wall time of `wall` seconds. */
static void check_timeout(const char *out_dir, const char *wall)
{
	json_t *l = result_of(out_dir, "acme__calc-2");

	assert_string_equal(jsonx_str(l, "status"), "TIMEOUT");
	if (!strstr(jsonx_str(l, "error"), tu_fmt("wall time of %ss", wall)))
		fail_msg("not the wall time of %ss: %s", wall, jsonx_str(l, "error"));
	json_decref(l);
}

/* forgex batch TASKS --json --out ROOT/OUT (mirrors in ROOT) and `more`; its exit status must be `want`. */
static void batch(struct tu_result *r, const char *tasks, const char *out, int want,
		  const char *const *more)
{
	const char *argv[24];
	size_t n = 0;

	argv[n++] = "batch";
	argv[n++] = tu_fmt("%s/%s", root, tasks);
	argv[n++] = "--json";
	argv[n++] = "--out";
	argv[n++] = tu_fmt("%s/%s", root, out);
	argv[n++] = "--mirrors";
	argv[n++] = tu_fmt("%s/mirrors", root);
	while (more && *more && n < 23)
		argv[n++] = *more++;
	argv[n] = NULL;
	sc_forgex(r, &proj, argv);
	if (r->status != want)
		fail_msg("%s: status %d, expected %d:\n%s\n%s", tasks, r->status, want, r->out.buf,
			 r->err.buf);
}

static void test_batch_section_applies(void **state)
{
	struct tu_result r;
	const char *local = tu_fmt("url_template = \"%s/repos/{repo}\"\n", root);

	(void)state;
	user_config(tu_fmt("jobs = 3\nwall_seconds = 600\nkeep = true\n%s", local));
	batch(&r, "pass.jsonl", "cfg-pass", 0, NULL);
	assert_int_equal(jobs_of(r.out.buf), 3);
	/* the template made "acme/calc" the local repository: the task ran and passed */
	check_status(tu_fmt("%s/cfg-pass", root), "acme__calc-1", "PASS");
	/* keep = true: the worktree stays */
	assert_true(fsutil_is_dir(tu_fmt("%s/cfg-pass/work/acme__calc-1", root)));
	tu_result_release(&r);

	user_config(tu_fmt("wall_seconds = 2\ngrace_seconds = 3\n%s", local));
	batch(&r, "hang.jsonl", "cfg-hang", 1, NULL);
	check_timeout(tu_fmt("%s/cfg-hang", root), "2");
	/* keep's default: nothing left */
	assert_false(fsutil_is_dir(tu_fmt("%s/cfg-hang/work/acme__calc-2", root)));
	tu_result_release(&r);
}

static void test_command_line_overrides(void **state)
{
	struct tu_result r;
	const char *repo_url = tu_fmt("%s/repos/{repo}", root);

	(void)state;
	/* the configured template leads nowhere: only --repo-url lets the task run */
	user_config(tu_fmt("jobs = 3\nwall_seconds = 600\nkeep = true\n"
			"url_template = \"%s/nowhere/{repo}\"\n", root));
	{
		const char *more[] = { "-j", "2", "--no-keep", "--repo-url", repo_url, NULL };

		batch(&r, "pass.jsonl", "flag-pass", 0, more);
	}
	assert_int_equal(jobs_of(r.out.buf), 2);
	check_status(tu_fmt("%s/flag-pass", root), "acme__calc-1", "PASS");
	/* --no-keep over keep = true */
	assert_false(fsutil_is_dir(tu_fmt("%s/flag-pass/work/acme__calc-1", root)));
	tu_result_release(&r);

	/* --wall-time over wall_seconds = 600: stopped after 2 seconds */
	{
		const char *more[] = { "--wall-time", "2", "--grace", "2", "--repo-url", repo_url,
				       NULL };

		batch(&r, "hang.jsonl", "flag-hang", 1, more);
	}
	check_timeout(tu_fmt("%s/flag-hang", root), "2");
	tu_result_release(&r);

	/* -c batch.KEY=VALUE before `batch` is a command-line flag too */
	user_config("jobs = 3\n");
	{
		const char *argv[] = { "-c", "batch.jobs=1", "-c", tu_fmt("batch.url_template=%s", repo_url),
				       "-c", "batch.wall_seconds=1", "-c", "batch.grace_seconds=2",
				       "batch", tu_fmt("%s/hang.jsonl", root), "--json", "--out",
				       tu_fmt("%s/c-hang", root), "--mirrors", tu_fmt("%s/mirrors", root),
				       NULL };

		sc_forgex(&r, &proj, argv);
	}
	if (r.status != 1)
		fail_msg("status %d:\n%s\n%s", r.status, r.out.buf, r.err.buf);
	assert_int_equal(jobs_of(r.out.buf), 1);
	check_timeout(tu_fmt("%s/c-hang", root), "1");
	tu_result_release(&r);
}

/* The line of the user's file that starts with `key`. */
static int line_of(const char *key)
{
	char *text = tu_read(proj.home, "forgex/config.toml"), *p;
	int line = 1;

	assert_non_null(text);
	for (p = text; *p; p++) {
		if ((p == text || p[-1] == '\n') && !strncmp(p, key, strlen(key)))
			break;
		line += *p == '\n';
	}
	assert_true(*p);
	free(text);
	return line;
}

static void test_bad_batch_section(void **state)
{
	struct tu_result r;
	const char *want;

	(void)state;
	user_config("jobs = 4\nurl_template = \"https://example.org/calc.git\"\n");
	SC_FORGEX(&r, &proj, "batch", tu_fmt("%s/pass.jsonl", root), "--out", tu_fmt("%s/bad", root));
	assert_int_equal(r.status, 2);
	want = tu_fmt("config.toml:%d: key 'batch.url_template'", line_of("url_template"));
	if (!strstr(r.err.buf, want))
		fail_msg("no \"%s\" in: %s", want, r.err.buf);
	assert_non_null(strstr(r.err.buf, "has no {repo}"));
	/* nothing started */
	assert_false(fsutil_is_dir(tu_fmt("%s/bad", root)));
	tu_result_release(&r);

	user_config("jobs = \"many\"\n");
	SC_FORGEX(&r, &proj, "batch", tu_fmt("%s/pass.jsonl", root), "--out", tu_fmt("%s/bad", root));
	assert_int_equal(r.status, 2);
	want = tu_fmt("config.toml:%d: key 'batch.jobs': expected an integer", line_of("jobs ="));
	if (!strstr(r.err.buf, want))
		fail_msg("no \"%s\" in: %s", want, r.err.buf);
	assert_false(fsutil_is_dir(tu_fmt("%s/bad", root)));
	tu_result_release(&r);

	user_config("wall_seconds = 5\n");
	SC_FORGEX(&r, &proj, "batch", tu_fmt("%s/pass.jsonl", root), "--repo-url",
		  "https://example.org/x.git", "--out", tu_fmt("%s/bad", root));
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "--repo-url: the template has no {repo}"));
	assert_false(fsutil_is_dir(tu_fmt("%s/bad", root)));
	tu_result_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_section_applies),
		cmocka_unit_test(test_command_line_overrides),
		cmocka_unit_test(test_bad_batch_section),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * The repository map end to end: the real binary, the real sandbox and
 * ctags, build/mockllm playing the roles. What the Architect's first
 * request holds, repo_map re-ranking, `forgex map`, and the cache after
 * an agent's edit and after a SIGKILL, each against a cold build.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/tokens.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

struct proj {
	char *dir;		/* the workspace */
	char *xdg;		/* the user's config home */
	char *env_xdg, *env_home;
};

/*
 * A C project: parser.c defines parse_expr, eval.c and repl.c call it,
 * thirty unrelated modules around them. The provider and permissions in
 * the USER file (a project file may not choose them).
 */
static void project(struct proj *p, const struct mock *m)
{
	struct buf b = BUF_INIT;
	char rel[64];
	char *cfg;
	int i;

	p->dir = tu_mkdtemp();
	p->xdg = tu_mkdtemp();
	p->env_xdg = xstrfmt("XDG_CONFIG_HOME=%s", p->xdg);
	p->env_home = xstrfmt("HOME=%s", p->xdg);
	cfg = sc_provider_toml(m, "auto");
	tu_write(p->xdg, "forgex/config.toml", cfg);
	free(cfg);
	tu_write(p->dir, ".forgex/config.toml", "[context]\nmap_tokens = 1024\n"
		 "[pipeline]\ntest_command = [\"true\"]\nbaseline = false\n");
	tu_write(p->dir, "src/parser.h", "struct node;\nstruct node *parse_expr(const char *text);\n");
	tu_write(p->dir, "src/parser.c",
		 "#include \"parser.h\"\n\nstruct node *parse_expr(const char *text)\n{\n"
		 "\treturn text[0] ? node_new(text) : 0;\n}\n");
	tu_write(p->dir, "src/eval.c",
		 "#include \"parser.h\"\n\nint eval_line(const char *line)\n{\n"
		 "\treturn node_value(parse_expr(line));\n}\n");
	tu_write(p->dir, "src/repl.c",
		 "int repl_loop(void)\n{\n\tchar buf[80];\n\treturn eval_line(buf) + "
		 "!!parse_expr(buf);\n}\n");
	tu_write(p->dir, "src/node.c",
		 "struct node *node_new(const char *t)\n{\n\treturn 0;\n}\n"
		 "int node_value(struct node *n)\n{\n\treturn 0;\n}\n");
	for (i = 0; i < 30; i++) {
		buf_reset(&b);
		buf_addf(&b, "int util_%02d_run(int x)\n{\n\treturn util_%02d_run(x - 1) + "
			 "node_value(0);\n}\n", i, (i + 1) % 30);
		snprintf(rel, sizeof(rel), "src/util/util_%02d.c", i);
		tu_write(p->dir, rel, b.buf);
	}
	buf_release(&b);
	tu_git_init(p->dir);
}

static void proj_release(struct proj *p)
{
	tu_rmtree(p->dir);
	tu_rmtree(p->xdg);
	free(p->env_xdg);
	free(p->env_home);
}

static void forgex(struct tu_result *r, const struct proj *p, const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	const char *env[] = { p->env_xdg, p->env_home, "NO_COLOR=1", NULL };
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs);
	strvec_pushv(&argv, args);
	tu_run(r, argv.v, p->dir, env, NULL);
	strvec_clear(&argv);
	free(abs);
}

#define FORGEX(r, p, ...) forgex((r), (p), (const char *const[]){ __VA_ARGS__, NULL })

/* The system prompt and every tool result of request `n` of the mock's log. */
static const char *request_system(json_t *reqs, size_t n)
{
	json_t *msgs = json_object_get(json_object_get(json_array_get(reqs, n), "body"), "messages");

	return json_string_value(json_object_get(json_array_get(msgs, 0), "content"));
}

static const char *last_message(json_t *reqs, size_t n)
{
	json_t *msgs = json_object_get(json_object_get(json_array_get(reqs, n), "body"), "messages");

	return json_string_value(json_object_get(json_array_get(msgs, json_array_size(msgs) - 1),
						 "content"));
}

static int offers_tool(json_t *reqs, size_t n, const char *name)
{
	json_t *tools = json_object_get(json_object_get(json_array_get(reqs, n), "body"), "tools"), *t;
	size_t i;

	json_array_foreach(tools, i, t)
		if (!strcmp(jsonx_str(json_object_get(t, "function"), "name"), name))
			return 1;
	return 0;
}

/* The files of a map text, in order. */
static void map_files(struct strvec *out, const char *text)
{
	const char *p = text;

	while ((p = strstr(p, "\n\n"))) {
		const char *e;

		p += 2;
		e = strchr(p, '\n');
		if (e && e > p && e[-1] == ':' && !memchr(p, ' ', (size_t)(e - p))) {
			char *f = xstrndup(p, (size_t)(e - p - 1));

			strvec_push(out, f);
			free(f);
		}
	}
}

static void test_map_in_architect_request_and_repo_map_reranks(void **state)
{
	struct mock m;
	struct proj p;
	struct tu_result r;
	struct strvec files = STRVEC_INIT, refocused = STRVEC_INIT;
	json_t *reqs;
	const char *sys, *map, *result;

	(void)state;
	mock_start(&m, "[{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"repo_map\", \"arguments\":"
		       " {\"focus\": [\"src/util/util_07.c\"], \"tokens\": 300}}]},"
		       " {\"tool_calls\": [{\"id\": \"c2\", \"name\": \"submit_plan\", \"arguments\":"
		       " {\"summary\": \"s\", \"steps\": [{\"id\": \"1\", \"title\": \"t\","
		       " \"description\": \"d\", \"files\": [\"src/parser.c\"]}],"
		       " \"acceptance\": [\"a\"]}}]}]");
	project(&p, &m);
	FORGEX(&r, &p, "plan", "parse_expr crashes on an empty string; return NULL instead");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	reqs = mock_requests(&m);
	assert_int_equal(json_array_size(reqs), 2);
	sys = request_system(reqs, 0);
	assert_non_null(sys);
	map = strstr(sys, "## Repository map\n");
	assert_non_null(map);
	assert_non_null(strstr(map, "Repository map: the files most relevant here"));
	/* the file the request is about first, with the definition, then its callers */
	map_files(&files, map);
	assert_true(files.nr >= 4);
	assert_true(strvec_find(&files, "src/parser.c") <= 1);
	assert_true(strvec_find(&files, "src/parser.c") >= 0);
	assert_true(strvec_find(&files, "src/eval.c") >= 0 && strvec_find(&files, "src/eval.c") <= 4);
	assert_true(strvec_find(&files, "src/repl.c") >= 0 && strvec_find(&files, "src/repl.c") <= 4);
	assert_non_null(strstr(map, "\nsrc/parser.c:\nstruct node *parse_expr(const char *text)\n"));
	/* it fits [context] map_tokens */
	assert_true(tokens_estimate(strlen(strstr(map, "Repository map: the files"))) <= 1024);
	assert_true(offers_tool(reqs, 0, "repo_map"));
	/* repo_map with a focus: that file first, within the asked budget */
	result = last_message(reqs, 1);
	assert_non_null(result);
	map_files(&refocused, result);
	assert_true(refocused.nr >= 1);
	assert_string_equal(refocused.v[0], "src/util/util_07.c");
	assert_true(tokens_estimate(strlen(result)) <= 300);
	assert_string_not_equal(refocused.v[0], files.v[0]);
	json_decref(reqs);
	strvec_clear(&files);
	strvec_clear(&refocused);
	mock_release(&m);
	proj_release(&p);
}

static char *map_text(const struct proj *p, const char *request, int cold)
{
	struct tu_result r;
	char *t;

	if (cold)
		tu_sh(p->dir, "rm -rf .forgex/map");
	FORGEX(&r, p, "map", "--tokens", "800", request);
	if (r.status)
		fail_msg("forgex map: %d %s", r.status, r.err.buf);
	t = buf_detach(&r.out, NULL);
	tu_result_release(&r);
	return t;
}

static void test_map_after_agent_edit_same_as_cold(void **state)
{
	struct mock m;
	struct proj p;
	struct tu_result r;
	json_t *reqs;
	char *warm, *cold;
	const char *builder_sys, *expert_sys;

	(void)state;
	mock_start(&m, "[{\"tool_calls\": [{\"id\": \"c1\", \"name\": \"submit_plan\", \"arguments\":"
		       " {\"summary\": \"s\", \"steps\": [{\"id\": \"1\", \"title\": \"t\","
		       " \"description\": \"d\", \"files\": [\"src/node.c\"]}],"
		       " \"acceptance\": [\"a\"]}}]},"
		       " {\"tool_calls\": [{\"id\": \"c2\", \"name\": \"edit_file\", \"arguments\":"
		       " {\"path\": \"src/node.c\", \"old_string\": \"int node_value(struct node *n)\","
		       " \"new_string\": \"int node_depth(struct node *n)\\n{\\n\\treturn 1;\\n}\\n"
		       "int node_value(struct node *n)\"}}]},"
		       " {\"tool_calls\": [{\"id\": \"c3\", \"name\": \"finish\", \"arguments\": {\"summary\": \"x\"}}]},"
		       " {\"tool_calls\": [{\"id\": \"c4\", \"name\": \"finish\", \"arguments\": {\"summary\": \"y\"}}]},"
		       " {\"tool_calls\": [{\"id\": \"c5\", \"name\": \"submit_verdict\", \"arguments\":"
		       " {\"verdict\": \"PASS\", \"reasons\": [\"ok\"], \"required_fixes\": []}}]}]");
	project(&p, &m);
	FORGEX(&r, &p, "run", "add node_depth to the node module");
	if (r.status)
		fail_msg("forgex run: %d\n%s\n%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	reqs = mock_requests(&m);
	assert_true(json_array_size(reqs) >= 4);
	/* the Builder's map is personalised by the plan's file; the Expert's shows the edit */
	builder_sys = request_system(reqs, 1);
	assert_non_null(strstr(builder_sys, "## Repository map"));
	assert_non_null(strstr(builder_sys, "\nsrc/node.c:\n"));
	assert_null(strstr(builder_sys, "node_depth"));
	expert_sys = request_system(reqs, 3);
	assert_non_null(strstr(expert_sys, "int node_depth(struct node *n)"));
	json_decref(reqs);

	/* the cache the run left gives what a cold build gives */
	warm = map_text(&p, "node_depth", 0);
	cold = map_text(&p, "node_depth", 1);
	assert_string_equal(warm, cold);
	assert_non_null(strstr(warm, "int node_depth(struct node *n)"));
	free(warm);
	free(cold);
	mock_release(&m);
	proj_release(&p);
}

static void test_map_command(void **state)
{
	struct proj p;
	struct tu_result r;
	struct strvec files = STRVEC_INIT;
	json_t *j = NULL, *st;

	(void)state;
	project(&p, NULL);
	FORGEX(&r, &p, "map", "--tokens", "200", "--focus", "src/eval.c");
	assert_int_equal(r.status, 0);
	map_files(&files, r.out.buf);
	assert_true(files.nr >= 1);
	assert_string_equal(files.v[0], "src/eval.c");
	assert_true(tokens_estimate(r.out.len) <= 200);
	assert_true(tokens_estimate(r.out.len) >= 180);
	strvec_clear(&files);
	tu_result_release(&r);

	/* the second time from the cache, the JSON saying so */
	FORGEX(&r, &p, "map", "--json", "--stats", "parse_expr");
	assert_int_equal(r.status, 0);
	assert_int_equal(jsonx_parse(&j, r.out.buf, r.out.len, "map"), 0);
	st = json_object_get(j, "stats");
	assert_int_equal(json_integer_value(json_object_get(st, "files")), 35);
	assert_int_equal(json_integer_value(json_object_get(st, "cache_hits")), 35);
	assert_int_equal(json_integer_value(json_object_get(st, "indexed")), 0);
	assert_true(json_integer_value(json_object_get(st, "definitions")) >= 36);
	assert_true(json_is_null(json_object_get(st, "ctags_error")));
	assert_string_equal(jsonx_str(json_array_get(json_object_get(j, "files"), 0), "path"),
			    "src/parser.c");
	json_decref(j);
	tu_result_release(&r);
	/* .forgex/map/ is kept out of git status */
	{
		char *ex = tu_read(p.dir, ".git/info/exclude");

		assert_non_null(strstr(ex, ".forgex/map/\n"));
		free(ex);
	}

	FORGEX(&r, &p, "map", "--tokens", "0");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "--tokens"));
	tu_result_release(&r);
	FORGEX(&r, &p, "map", "--bogus");
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	proj_release(&p);
}

static void test_map_killed_mid_index_same_as_cold(void **state)
{
	struct proj p;
	struct buf b = BUF_INIT;
	char rel[64], *warm, *cold;
	int i, round, killed = 0;

	(void)state;
	project(&p, NULL);
	free(map_text(&p, "util_03_run", 0));
	for (i = 0; i < 2500; i++) {
		buf_reset(&b);
		buf_addf(&b, "int gen_%d(int x)\n{\n\treturn gen_%d(x) + util_%02d_run(x);\n}\n", i,
			 (i * 7 + 3) % 2500, i % 30);
		snprintf(rel, sizeof(rel), "gen/d%02d/g%04d.c", i % 40, i);
		tu_write(p.dir, rel, b.buf);
	}
	buf_release(&b);
	for (round = 0; round < 6 && !killed; round++) {
		const char *env[] = { p.env_xdg, p.env_home, NULL };
		char *abs = realpath(tu_forgex(), NULL);
		pid_t pid = fork();
		int status;

		if (!pid) {
			int null = open("/dev/null", 1);
			size_t k;

			for (k = 0; env[k]; k++)
				putenv((char *)env[k]);
			dup2(null, 1);
			dup2(null, 2);
			if (chdir(p.dir))
				_exit(125);
			execl(abs, abs, "map", (char *)NULL);
			_exit(127);
		}
		free(abs);
		usleep(60000 + 60000 * round);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
	}
	assert_true(killed);
	warm = map_text(&p, "util_03_run gen_17", 0);
	cold = map_text(&p, "util_03_run gen_17", 1);
	assert_string_equal(warm, cold);
	free(warm);
	free(cold);
	proj_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_in_architect_request_and_repo_map_reranks),
		cmocka_unit_test(test_map_after_agent_edit_same_as_cold),
		cmocka_unit_test(test_map_command),
		cmocka_unit_test(test_map_killed_mid_index_same_as_cold),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

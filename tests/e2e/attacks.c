/*
 * Issue 20's attacks on what runs later on the host, end to end: the real
 * binary against build/mockllm, each attack as a cloned repository or a
 * sandboxed command would make it, asserting that it fails and why.
 *
 *   - a run folder shipped with the repository (a journal named to sort
 *     last, a link planted beside it): undo, resume and replay take only
 *     runs this user recorded, and name the planted one;
 *   - a repository whose git configuration names programs (core.fsmonitor,
 *     core.hooksPath, diff.external, a filter and a textconv through
 *     .gitattributes, core.sshCommand, include.path): forgex's own git work
 *     on the host (libgit2: checkpoints, git_status and git_diff tools,
 *     the commit, undo, diff, map, doctor) never runs one;
 *   - an MCP stdio server named as its README says (`python3 -m NAME`)
 *     with a NAME.py planted in the workspace: the planted module never
 *     starts, and a real server runs in the sandbox (workspace read-only,
 *     nothing outside writable), as root and as uid 65534.
 */
#include <dirent.h>
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

#define PLAN "{\"summary\": \"Note\", \"steps\": [{\"id\": \"1\", \"title\": \"Write a note\"," \
	" \"description\": \"write NOTE.txt\", \"files\": [\"NOTE.txt\"]}], \"acceptance\": [\"ok\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"fine\"], \"required_fixes\": []}"

/* The newest folder in .forgex/runs that is not the planted one (caller frees). */
static char *newest_own_run(const char *dir)
{
	char *runs = xstrfmt("%s/.forgex/runs", dir), *best = NULL;
	DIR *d = opendir(runs);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strncmp(de->d_name, "2999", 4) &&
		    (!best || strcmp(de->d_name, best) > 0)) {
			free(best);
			best = xstrdup(de->d_name);
		}
	closedir(d);
	free(runs);
	assert_non_null(best);
	return best;
}

/* One run of `p` whose Builder writes `file`; returns its id (caller frees). */
static char *one_run(struct sc_proj *p, const char *file)
{
	json_t *steps = json_array();
	struct tu_result r;
	struct mock m;
	char *s, *args = xstrfmt("{\"path\": \"%s\", \"content\": \"by the run\\n\"}", file);
	char *id;

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", args);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_config(p, &m, "auto", NULL);
	SC_FORGEX(&r, p, "run", "write a note");
	if (r.status)
		fail_msg("the run failed:\n%s%s", r.out.buf, r.err.buf);
	tu_result_release(&r);
	id = newest_own_run(p->dir);
	tu_result_release(&r);
	mock_release(&m);
	free(s);
	free(args);
	return id;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

static int exists(const char *dir, const char *rel)
{
	struct stat st;
	char *p = xstrfmt("%s/%s", dir, rel);
	int ret = lstat(p, &st) == 0;

	free(p);
	return ret;
}

static void test_attack_planted_run_is_never_taken(void **state)
{
	struct sc_proj p;
	struct tu_result r;
	char *outside = tu_mkdtemp(), *author = tu_mkdtemp(), *victim = tu_mkdtemp();
	char *author_env = xstrfmt("XDG_STATE_HOME=%s", author);
	char *victim_env = xstrfmt("XDG_STATE_HOME=%s", victim);
	char *planted, *mine, *from, *to, *journal, *line;

	(void)state;
	sc_proj_init(&p, NULL, "auto", NULL);
	/* the repository's author runs forgex (their own record of runs) */
	sc_proj_env(&p, author_env);
	planted = one_run(&p, "NOTE.txt");
	/* and ships the run folder, renamed to sort last, with a journal that remakes a folder under a link */
	from = xstrfmt("%s/.forgex/runs/%s", p.dir, planted);
	to = xstrfmt("%s/.forgex/runs/29991231-235959-zzzz", p.dir);
	assert_int_equal(rename(from, to), 0);
	free(planted);
	planted = xstrdup("29991231-235959-zzzz");
	journal = xstrfmt("%s/changes.jsonl", to);
	line = xstrdup("{\"path\": \"planted/made\", \"before\": {\"kind\": \"dir\", \"oid\": \"dir\"}}\n");
	{
		FILE *f = fopen(journal, "a");

		assert_non_null(f);
		fputs(line, f);
		fclose(f);
	}
	{
		char *link = xstrfmt("%s/planted", p.dir);

		assert_int_equal(symlink(outside, link), 0);
		free(link);
	}

	/* the person who cloned it (a record of their own, empty) */
	p.env[p.env_nr - 1] = victim_env;
	SC_FORGEX(&r, &p, "undo");
	assert_int_not_equal(r.status, 0);
	/* why: the run is not in this user's record, and it is named as planted */
	assert_non_null(strstr(r.err.buf, "passed over run 29991231-235959-zzzz"));
	assert_non_null(strstr(r.err.buf, "planted"));
	assert_non_null(strstr(r.err.buf, "no run you started"));
	assert_false(exists(outside, "made"));
	assert_true(exists(p.dir, "NOTE.txt"));
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "undo", planted);
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.err.buf, "was not started here by you"));
	assert_false(exists(outside, "made"));
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "resume", planted);
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.err.buf, "was not started here by you"));
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "replay", planted);
	assert_int_equal(r.status, 4);
	assert_non_null(strstr(r.err.buf, "was not started here by you"));
	tu_result_release(&r);

	/* with a run of their own, a plain undo takes theirs and passes over the planted one */
	mine = one_run(&p, "MINE.txt");
	assert_string_not_equal(mine, planted);
	assert_true(exists(p.dir, "MINE.txt"));
	SC_FORGEX(&r, &p, "undo");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "passed over run 29991231-235959-zzzz"));
	assert_non_null(strstr(r.out.buf, mine));
	assert_false(exists(p.dir, "MINE.txt"));
	assert_true(exists(p.dir, "NOTE.txt"));
	assert_false(exists(outside, "made"));
	tu_result_release(&r);

	sc_proj_release(&p);
	tu_rmtree(outside);
	tu_rmtree(author);
	tu_rmtree(victim);
	free(author_env);
	free(victim_env);
	free(mine);
	free(planted);
	free(from);
	free(to);
	free(journal);
	free(line);
}

static void test_attack_repository_git_config_never_runs(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct tu_result r;
	struct mock m;
	char *marker_dir = tu_mkdtemp(), *marker = xstrfmt("%s/ran", marker_dir);
	char *script, *setup, *s, *prog;

	(void)state;
	sc_proj_init(&p, NULL, "auto", NULL);
	script = xstrfmt("#!/bin/sh\necho \"$0 $*\" >> %s\ncat\n", marker);
	tu_write(p.dir, "evil.sh", script);
	prog = xstrfmt("%s/evil.sh", p.dir);
	assert_int_equal(chmod(prog, 0755), 0);
	tu_write(p.dir, "hooks/pre-commit", script);
	tu_write(p.dir, "hooks/post-commit", script);
	tu_write(p.dir, "hooks/commit-msg", script);
	tu_write(p.dir, ".gitattributes", "* filter=evil diff=evil\n");
	tu_write(p.dir, "included.cfg", "[core]\n\tfsmonitor = EVIL\n");
	setup = xstrfmt("chmod +x hooks/*; git add -A; git -c user.name=t -c user.email=t@e "
			"commit -qm hooks; git config core.fsmonitor %s; git config core.hooksPath "
			"hooks; git config diff.external %s; git config filter.evil.clean %s; "
			"git config filter.evil.smudge %s; git config filter.evil.process %s; "
			"git config diff.evil.textconv %s; git config core.sshCommand %s; "
			"git config include.path ../included.cfg; "
			"sed -i 's|EVIL|%s|' included.cfg", prog, prog, prog, prog, prog, prog, prog,
			prog);
	{
		const char *argv[] = { "sh", "-c", setup, NULL };

		tu_run(&r, argv, p.dir, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	/* the git program itself would run it: the attack is real */
	{
		const char *argv[] = { "git", "status", "--porcelain", NULL };

		tu_run(&r, argv, p.dir, NULL, NULL);
		tu_result_release(&r);
		assert_true(exists(marker_dir, "ran"));
		unlink(marker);
	}

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "git_status", "{}");
	sc_call(steps, "write_file", "{\"path\": \"NOTE.txt\", \"content\": \"a note\\n\"}");
	sc_call(steps, "git_diff", "{}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_config(&p, &m, "auto", "[pipeline]\ncommit = true\n");
	SC_FORGEX(&r, &p, "run", "write a note");
	if (r.status)
		fail_msg("the run failed:\n%s%s", r.out.buf, r.err.buf);
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "checkpoint", "create", "-m", "by hand");
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "diff");
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "map");
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "doctor");
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "undo");
	tu_result_release(&r);
	/* none of it ran a program the repository configured */
	if (exists(marker_dir, "ran")) {
		char *what = tu_read(marker_dir, "ran");

		fail_msg("forgex ran a program the repository configured:\n%s", what);
	}
	mock_release(&m);
	sc_proj_release(&p);
	tu_rmtree(marker_dir);
	free(marker);
	free(script);
	free(setup);
	free(prog);
	free(s);
}

#define NOBODY 65534

/* forgex ARGS as `uid` (setpriv when not 0) in `dir`, HOME and the XDG folders in `home`. */
static void forgex_as(struct tu_result *r, uid_t uid, const char *dir, const char *home,
		      const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL), *id = xstrfmt("%d", (int)uid);
	char *h = xstrfmt("HOME=%s", home), *c = xstrfmt("XDG_CONFIG_HOME=%s", home);
	char *st = xstrfmt("XDG_STATE_HOME=%s/state", home);
	const char *env[] = { h, c, st, NULL };

	if (uid) {
		strvec_push(&argv, "setpriv");
		strvec_pushv(&argv, (const char *const[]){ "--reuid", id, "--regid", id,
							   "--clear-groups", NULL });
	}
	strvec_push(&argv, abs ? abs : tu_forgex());
	strvec_pushv(&argv, args);
	tu_run(r, (const char *const *)argv.v, dir, env, NULL);
	strvec_clear(&argv);
	free(abs);
	free(id);
	free(h);
	free(c);
	free(st);
}

static void mcp_planted_module(uid_t uid)
{
	static const char planted[] =
		"import os\n"
		"open(os.environ['MARKER'], 'w').write('the planted module ran')\n";
	/* a real server: it says in its version what it could write */
	static const char server[] =
		"import json, os, sys\n"
		"def tryw(p):\n"
		"    try:\n"
		"        open(p, 'w').write('x')\n"
		"        return 'WROTE'\n"
		"    except OSError as e:\n"
		"        return e.strerror\n"
		"v = 'ws=' + tryw(os.environ['WS'] + '/pwned.txt') + ';out=' + tryw(os.environ['OUT'] + '/pwned')\n"
		"v += ';cwd_in_ws=' + str(os.getcwd().startswith(os.environ['WS']))\n"
		"for line in sys.stdin:\n"
		"    m = json.loads(line)\n"
		"    if 'id' not in m:\n"
		"        continue\n"
		"    if m.get('method') == 'initialize':\n"
		"        r = {'protocolVersion': '2025-11-25', 'capabilities': {'tools': {}},\n"
		"             'serverInfo': {'name': 'probe', 'version': v}}\n"
		"    elif m.get('method') == 'tools/list':\n"
		"        r = {'tools': []}\n"
		"    else:\n"
		"        r = {}\n"
		"    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n";
	static const char *const list[] = { "mcp", "list", NULL };
	struct tu_result r;
	/* not under /tmp, which is the sandbox's own: a workspace where a person keeps one */
	char *ws = xstrdup("/var/tmp/forgex-ws-XXXXXX"), *home = tu_mkdtemp();
	char *out = xstrdup("/var/tmp/forgex-attack-XXXXXX"), *tools = xstrdup("/var/tmp/forgex-tools-XXXXXX");
	char *cfg, *marker;

	assert_non_null(mkdtemp(ws));
	assert_non_null(mkdtemp(out));
	assert_non_null(mkdtemp(tools));
	marker = xstrfmt("%s/marker", out);
	tu_write(ws, "mcp_server_x.py", planted);
	tu_write(ws, "README.md", "a cloned repository\n");
	tu_write(tools, "probe.py", server);
	{
		const char *argv[] = { "git", "init", "-q", ".", NULL };

		tu_run(&r, argv, ws, NULL, NULL);
		tu_result_release(&r);
	}
	cfg = xstrfmt("[mcp_servers.x]\ncommand = \"/usr/bin/python3\"\nargs = [\"-m\", \"mcp_server_x\"]\n"
		      "env = { MARKER = \"%s\" }\n"
		      "[mcp_servers.y]\ncommand = \"/usr/bin/python3\"\nargs = [\"-m\", \"mcp_server_x\"]\n"
		      "env = { MARKER = \"%s\" }\ncwd = \".\"\n"
		      "[mcp_servers.probe]\ncommand = \"/usr/bin/python3\"\nargs = [\"%s/probe.py\"]\n"
		      "env = { WS = \"%s\", OUT = \"%s\" }\n", marker, marker, tools, ws, out);
	tu_write(home, "forgex/config.toml", cfg);
	if (uid) {
		char *cmd = xstrfmt("chown -R %d:%d %s %s %s %s", (int)uid, (int)uid, ws, home, out,
				    tools);
		const char *argv[] = { "sh", "-c", cmd, NULL };

		tu_run(&r, argv, NULL, NULL, NULL);
		tu_result_release(&r);
		free(cmd);
	}
	forgex_as(&r, uid, ws, home, list);
	/* the planted module did not start, from a private folder nor from the workspace */
	if (exists(out, "marker"))
		fail_msg("the planted module ran:\n%s%s", r.out.buf, r.err.buf);
	/* why: python found no module of that name (its folder is not on the path) */
	assert_non_null(strstr(r.out.buf, "x (stdio /usr/bin/python3): failed: "));
	assert_non_null(strstr(r.out.buf, "y (stdio /usr/bin/python3): failed: "));
	assert_true(count_of(r.out.buf, "No module named mcp_server_x") == 2);
	/* and a real server runs in the sandbox: outside its workspace, which it cannot write */
	if (!strstr(r.out.buf, "probe (stdio /usr/bin/python3): ready"))
		fail_msg("probe:\n%s%s", r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "ws=Read-only file system;"));
	assert_null(strstr(r.out.buf, "WROTE"));
	assert_non_null(strstr(r.out.buf, "cwd_in_ws=False"));
	assert_false(exists(ws, "pwned.txt"));
	assert_false(exists(out, "pwned"));
	tu_result_release(&r);

	tu_rmtree(ws);
	tu_rmtree(home);
	tu_rmtree(out);
	tu_rmtree(tools);
	free(cfg);
	free(marker);
}

static void test_attack_mcp_planted_module_root(void **state)
{
	(void)state;
	mcp_planted_module(0);
}

static void test_attack_mcp_planted_module_unprivileged(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("SKIP: needs root to run forgex as uid %d\n", NOBODY);
		skip();
	}
	mcp_planted_module(NOBODY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attack_planted_run_is_never_taken),
		cmocka_unit_test(test_attack_repository_git_config_never_runs),
		cmocka_unit_test(test_attack_mcp_planted_module_root),
		cmocka_unit_test(test_attack_mcp_planted_module_unprivileged),
	};

	if (getenv("TU_FILTER"))
		cmocka_set_test_filter(getenv("TU_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}

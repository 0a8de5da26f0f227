/*
 * MCP servers end to end: the real binary, build/mockllm playing the
 * roles, and tests/fixtures/mcp/server.py as a real MCP server over stdio
 * and over Streamable HTTP on 127.0.0.1. The scripted model calls the
 * server's tools; the tests check what came back to the model (the mock's
 * log), what the server received (its own log), the events, and that
 * slow, crashing, flooding and malformed servers end in a clear tool error
 * with the run going on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

extern char **environ;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *server_py(void)
{
	char *abs = realpath("tests/fixtures/mcp/server.py", NULL);

	if (!abs)
		fail_msg("tests/fixtures/mcp/server.py not found (run from the top folder)");
	return abs;
}

/* A test project: a git repository, a passing test, and a user config in `home`. */
struct proj {
	char *dir, *home, *srvlog;
	const char *env[4];
	char *env_home, *env_xdg;
};

static void sh(const char *dir, const char *cmd)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct tu_result r;

	tu_run(&r, argv, dir, NULL, NULL);
	if (r.status)
		fail_msg("%s: %s%s", cmd, r.out.buf, r.err.buf);
	tu_result_release(&r);
}

/*
 * The providers, the permission mode and the MCP servers go in the user
 * file: a project file's would need `forgex trust`.
 */
static void proj_init(struct proj *p, const struct mock *m, const char *mode, const char *servers)
{
	char *cfg;

	memset(p, 0, sizeof(*p));
	p->dir = tu_mkdtemp();
	p->home = tu_mkdtemp();
	p->srvlog = xstrfmt("%s/server-log.jsonl", p->home);
	cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		      "api_key_env = \"FX_E2E_NO_KEY\"\nmax_retries = 0\ntimeout_seconds = 30\n"
		      "[permissions]\nmode = \"%s\"\n%s", m ? m->base_url : "http://127.0.0.1:9/v1",
		      mode, servers);
	tu_write(p->home, "forgex/config.toml", cfg);
	free(cfg);
	tu_write(p->dir, "calc.py", "def add(a, b):\n    return a + b\n");
	tu_write(p->dir, "test_calc.py", "import unittest\nfrom calc import add\n\n\n"
		 "class T(unittest.TestCase):\n    def test_add(self):\n"
		 "        self.assertEqual(add(2, 3), 5)\n");
	tu_write(p->dir, ".gitignore", "__pycache__/\n");
	tu_write(p->dir, ".forgex/config.toml",
		 "[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\"]\n");
	sh(p->dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@e "
		"commit -qm init");
	p->env_home = xstrfmt("HOME=%s", p->home);
	p->env_xdg = xstrfmt("XDG_CONFIG_HOME=%s", p->home);
	p->env[0] = p->env_home;
	p->env[1] = p->env_xdg;
	p->env[2] = NULL;
}

static void proj_release(struct proj *p)
{
	tu_rmtree(p->dir);
	tu_rmtree(p->home);
	free(p->srvlog);
	free(p->env_home);
	free(p->env_xdg);
}

/* The [mcp_servers.t] table for the stdio server, logging to p->srvlog. */
static char *stdio_server(const struct proj *p, const char *name, const char *more)
{
	char *py = server_py();
	char *t = xstrfmt("[mcp_servers.%s]\ncommand = \"python3\"\nargs = [\"%s\"]\n"
			  "env = { MCP_LOG = \"%s\" }\n%s", name, py, p->srvlog, more ? more : "");

	free(py);
	return t;
}

static void forgex(struct tu_result *r, const struct proj *p, const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run(r, (const char *const *)argv.v, p->dir, p->env, NULL);
	strvec_clear(&argv);
}

#define FORGEX(r, p, ...) \
	do { \
		const char *a_[] = { __VA_ARGS__, NULL }; \
		forgex((r), (p), a_); \
	} while (0)

static void call(json_t *steps, const char *name, const char *args)
{
	static int n;
	json_t *a = NULL;
	char id[32];

	if (jsonx_parse(&a, args, strlen(args), "step"))
		die("bad args: %s", args);
	snprintf(id, sizeof(id), "call_%d", ++n);
	json_array_append_new(steps, json_pack("{s:[{s:s, s:s, s:o}]}", "tool_calls", "id", id,
					       "name", name, "arguments", a));
}

static char *script(json_t *steps)
{
	struct buf b = BUF_INIT;
	json_t *s = json_pack("{s:o}", "steps", steps);

	jsonx_dump(&b, s, 0);
	json_decref(s);
	return buf_detach(&b, NULL);
}

#define PLAN "{\"summary\": \"Use the server\", \"steps\": [{\"id\": \"1\", \"title\": \"Ask\"," \
	" \"description\": \"call the tools\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"tests pass\"], \"required_fixes\": []}"

/* The chat requests the mock received, in order. */
static json_t *chat_requests(const struct mock *m)
{
	json_t *all = mock_requests(m), *out = json_array(), *r;
	size_t i;
	const char *path;

	json_array_foreach(all, i, r) {
		path = jsonx_str(r, "path");
		if (path && strstr(path, "/chat/completions"))
			json_array_append(out, json_object_get(r, "body"));
	}
	json_decref(all);
	return out;
}

/* The result the model was given for the call `id` (borrowed from `reqs`), or NULL. */
static const char *tool_result(json_t *reqs, const char *id)
{
	size_t i, j;
	json_t *body, *msg;

	json_array_foreach(reqs, i, body) {
		json_array_foreach(json_object_get(body, "messages"), j, msg) {
			const char *role = jsonx_str(msg, "role"), *cid = jsonx_str(msg, "tool_call_id");

			if (role && !strcmp(role, "tool") && cid && !strcmp(cid, id))
				return jsonx_str(msg, "content");
		}
	}
	return NULL;
}

/* The tool names offered in request `n`. */
static char *tools_of(json_t *reqs, size_t n)
{
	struct buf b = BUF_INIT;
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(json_array_get(reqs, n), "tools"), i, t)
		buf_addf(&b, "%s ", jsonx_str(json_object_get(t, "function"), "name"));
	return buf_detach(&b, NULL);
}

static char *read_all(const char *path)
{
	struct buf b = BUF_INIT;

	fsutil_read_file(&b, path, 0);
	return buf_detach(&b, NULL);
}

/* stdio: tools reach the model, list_changed is honoured, a crash is a tool error */
static void test_mcp_run_stdio(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct proj p;
	struct mock m;
	struct tu_result r;
	char *s, *srv, *t0, *t1, *log, *runs;
	const char *res;

	(void)state;
	call(steps, "submit_plan", PLAN);			/* call_1 */
	call(steps, "t__echo", "{\"text\": \"hello\"}");	/* call_2 */
	call(steps, "t__image", "{}");				/* call_3 */
	call(steps, "t__add_tool", "{}");			/* call_4 */
	call(steps, "t__late", "{}");				/* call_5 */
	call(steps, "t__fail", "{}");				/* call_6 */
	call(steps, "t__crash", "{}");				/* call_7 */
	call(steps, "t__echo", "{\"text\": \"again\"}");	/* call_8 */
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	proj_init(&p, &m, "auto", "");
	srv = stdio_server(&p, "t", NULL);
	{
		char *cfg = tu_read(p.home, "forgex/config.toml"), *all = xstrfmt("%s%s", cfg, srv);

		tu_write(p.home, "forgex/config.toml", all);
		free(cfg);
		free(all);
	}
	FORGEX(&r, &p, "run", "use the server");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "MCP server t: 10 tools"));
	reqs = chat_requests(&m);

	/* the architect sees only the read-only tool; the builder all of them */
	t0 = tools_of(reqs, 0);
	t1 = tools_of(reqs, 1);
	assert_non_null(strstr(t0, "t__echo "));
	assert_null(strstr(t0, "t__crash "));
	assert_non_null(strstr(t1, "t__echo "));
	assert_non_null(strstr(t1, "t__crash "));
	assert_null(strstr(t1, "t__late "));

	res = tool_result(reqs, "call_2");
	assert_non_null(res);
	assert_string_equal(res, "echo: hello");
	res = tool_result(reqs, "call_3");
	assert_non_null(strstr(res, "[image: image/png, 72 bytes; not shown to the model]"));
	assert_non_null(strstr(res, "resource text"));
	res = tool_result(reqs, "call_4");
	assert_non_null(strstr(res, "added"));
	assert_non_null(strstr(res, "new: t__late"));
	res = tool_result(reqs, "call_5");
	assert_string_equal(res, "late tool ran");
	res = tool_result(reqs, "call_6");
	assert_string_equal(res, "error: the tool failed on purpose");
	res = tool_result(reqs, "call_7");
	assert_non_null(strstr(res, "error: MCP server 't' closed its output (it exited with status 3)"));
	assert_non_null(strstr(res, "boom"));
	res = tool_result(reqs, "call_8");
	assert_non_null(strstr(res, "error: MCP server 't' is not running"));

	/* what the server saw: the handshake, in order, and pages of tools/list */
	log = read_all(p.srvlog);
	assert_non_null(strstr(log, "\"method\": \"initialize\""));
	assert_true(strstr(log, "\"method\": \"initialize\"") <
		    strstr(log, "\"method\": \"notifications/initialized\""));
	assert_non_null(strstr(log, "\"cursor\": \"2\""));
	free(log);

	/* its stderr is kept in the run folder */
	runs = xstrfmt("%s/.forgex/runs", p.dir);
	{
		const char *argv[] = { "sh", "-c", "cat */mcp-t.stderr", NULL };
		struct tu_result c;

		tu_run(&c, argv, runs, NULL, NULL);
		assert_non_null(strstr(c.out.buf, "boom: the test server crashes on purpose"));
		tu_result_release(&c);
	}
	free(runs);
	free(t0);
	free(t1);
	json_decref(reqs);
	tu_result_release(&r);
	mock_release(&m);
	proj_release(&p);
	free(srv);
	free(s);
}

/* a slow tool times out cleanly, is cancelled, and the server goes on */
static void test_mcp_slow_tool_times_out(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct proj p;
	struct mock m;
	struct tu_result r;
	char *s, *srv, *cfg, *all, *log;
	const char *res;
	double t0;

	(void)state;
	call(steps, "submit_plan", PLAN);
	call(steps, "t__slow", "{\"seconds\": 60}");		/* call_N */
	call(steps, "t__echo", "{\"text\": \"after\"}");
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	proj_init(&p, &m, "auto", "");
	srv = stdio_server(&p, "t", "tool_timeout_seconds = 1\n");
	cfg = tu_read(p.home, "forgex/config.toml");
	all = xstrfmt("%s%s", cfg, srv);
	tu_write(p.home, "forgex/config.toml", all);
	t0 = now();
	FORGEX(&r, &p, "run", "use the slow tool");
	assert_int_equal(r.status, 0);
	assert_true(now() - t0 < 40);
	reqs = chat_requests(&m);
	{
		size_t i, found = 0;
		json_t *body, *msg;

		json_array_foreach(reqs, i, body) {
			size_t j;

			json_array_foreach(json_object_get(body, "messages"), j, msg) {
				res = jsonx_str(msg, "content");
				if (res && strstr(res, "did not answer within 1 s (tool_timeout_seconds); "
						  "the call was cancelled"))
					found = 1;
				if (res && !strcmp(res, "echo: after"))
					found |= 2;
			}
		}
		assert_int_equal(found, 3);
	}
	log = read_all(p.srvlog);
	assert_non_null(strstr(log, "\"method\": \"notifications/cancelled\""));
	assert_non_null(strstr(log, "\"reason\": \"timed out\""));
	free(log);
	json_decref(reqs);
	tu_result_release(&r);
	mock_release(&m);
	proj_release(&p);
	free(cfg);
	free(all);
	free(srv);
	free(s);
}

/* Streamable HTTP: bearer token, session id, SSE answers */
static void test_mcp_http(void **state)
{
	json_t *steps = json_array(), *reqs;
	struct proj p;
	struct mock m;
	struct tu_result r;
	char *s, *py = server_py(), *portfile, *port = NULL, *cfg, *all, *log, *env_tok;
	const char *env[4];
	pid_t pid;
	int i, st;

	(void)state;
	call(steps, "submit_plan", PLAN);
	call(steps, "h__echo", "{\"text\": \"over http\"}");	/* a later call id */
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	proj_init(&p, &m, "auto", "");
	portfile = xstrfmt("%s/port", p.home);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		setenv("MCP_LOG", p.srvlog, 1);
		setenv("MCP_TOKEN", "sekrit-token", 1);
		execlp("python3", "python3", py, "--http", portfile, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500 && !port; i++) {
		usleep(10000);
		if (fsutil_exists(portfile))
			port = tu_read(p.home, "port");
	}
	assert_non_null(port);
	cfg = tu_read(p.home, "forgex/config.toml");
	all = xstrfmt("%s[mcp_servers.h]\nurl = \"http://127.0.0.1:%s/mcp\"\n"
		      "bearer_token_env = \"FX_MCP_TOKEN\"\n", cfg, port);
	tu_write(p.home, "forgex/config.toml", all);
	env_tok = xstrfmt("FX_MCP_TOKEN=%s", "sekrit-token");
	env[0] = p.env[0];
	env[1] = p.env[1];
	env[2] = env_tok;
	env[3] = NULL;
	{
		const char *argv[] = { NULL, "run", "use the http server", NULL };
		char *abs = realpath(tu_forgex(), NULL);

		argv[0] = abs;
		tu_run(&r, argv, p.dir, env, NULL);
		free(abs);
	}
	assert_int_equal(r.status, 0);
	reqs = chat_requests(&m);
	{
		size_t k, found = 0;
		json_t *body, *msg;

		json_array_foreach(reqs, k, body) {
			size_t j;

			json_array_foreach(json_object_get(body, "messages"), j, msg) {
				const char *c = jsonx_str(msg, "content");

				found |= c && !strcmp(c, "echo: over http");
			}
		}
		assert_true(found);
	}
	log = read_all(p.srvlog);
	assert_non_null(strstr(log, "\"mcp-session-id\": \"sess-42\""));
	assert_non_null(strstr(log, "\"mcp-protocol-version\": \"2025-11-25\""));
	assert_non_null(strstr(log, "\"authorization\": \"Bearer sekrit-token\""));
	free(log);
	tu_result_release(&r);

	/* a wrong token: a clear refusal */
	free(env_tok);
	env_tok = xstrdup("FX_MCP_TOKEN=wrong");
	env[2] = env_tok;
	{
		const char *argv[] = { NULL, "mcp", "list", NULL };
		char *abs = realpath(tu_forgex(), NULL);

		argv[0] = abs;
		tu_run(&r, argv, p.dir, env, NULL);
		free(abs);
	}
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "refused the request (HTTP 401)"));
	tu_result_release(&r);

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	json_decref(reqs);
	mock_release(&m);
	proj_release(&p);
	free(env_tok);
	free(cfg);
	free(all);
	free(port);
	free(portfile);
	free(py);
	free(s);
}

/* forgex mcp list / call for a person; garbage and floods are clear errors, memory bounded */
static void test_mcp_cli(void **state)
{
	struct proj p;
	struct tu_result r;
	struct rusage ru;
	char *srv;

	(void)state;
	proj_init(&p, NULL, "auto", "");
	srv = stdio_server(&p, "t", NULL);
	{
		char *cfg = tu_read(p.home, "forgex/config.toml"), *all = xstrfmt("%s%s", cfg, srv);

		tu_write(p.home, "forgex/config.toml", all);
		free(cfg);
		free(all);
	}
	FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "t (stdio python3): ready, protocol 2025-11-25"));
	assert_non_null(strstr(r.out.buf, "t__echo (read-only)  Echo the text back."));
	tu_result_release(&r);

	FORGEX(&r, &p, "mcp", "list", "--json");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "\"state\":\"ready\""));
	tu_result_release(&r);

	FORGEX(&r, &p, "mcp", "call", "t", "echo", "{\"text\": \"hi\"}");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "echo: hi\n");
	tu_result_release(&r);

	FORGEX(&r, &p, "mcp", "call", "t", "fail");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out.buf, "the tool failed on purpose\n");
	tu_result_release(&r);

	FORGEX(&r, &p, "mcp", "call", "t", "garbage");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "sent malformed JSON-RPC"));
	assert_non_null(strstr(r.err.buf, "this is not json"));
	tu_result_release(&r);

	FORGEX(&r, &p, "mcp", "call", "t", "flood");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "sent a message over 8 MiB"));
	tu_result_release(&r);
	/* 200 MB went to forgex: what it kept stayed bounded */
	getrusage(RUSAGE_CHILDREN, &ru);
	assert_true(ru.ru_maxrss < 96 * 1024);

	FORGEX(&r, &p, "mcp", "call", "t", "nosuchtool");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "has no tool 'nosuchtool'"));
	tu_result_release(&r);

	FORGEX(&r, &p, "mcp", "call", "nosuch", "echo");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "no MCP server named 'nosuch'"));
	tu_result_release(&r);

	/* a program that does not exist: a clear startup error */
	tu_write(p.home, "forgex/config.toml",
		 "[mcp_servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n");
	FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "gone (stdio /nonexistent/mcp-server): failed: "
			       "MCP server 'gone': cannot run /nonexistent/mcp-server"));
	tu_result_release(&r);

	/* a server that never answers the handshake: bounded by startup_timeout_seconds */
	tu_write(p.home, "forgex/config.toml",
		 "[mcp_servers.mute]\ncommand = \"sleep\"\nargs = [\"60\"]\nstartup_timeout_seconds = 1\n");
	{
		double t0 = now();

		FORGEX(&r, &p, "mcp", "list");
		assert_true(now() - t0 < 10);
	}
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "did not finish the initialize handshake in 1 s"));
	tu_result_release(&r);

	/* bad configuration names file, line and key */
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://h\"\n");
	FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "needs exactly one of 'command'"));
	tu_result_release(&r);
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.x]\ncommand = \"x\"\nroles = [\"boss\"]\n");
	FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "unknown role 'boss'"));
	tu_result_release(&r);
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.x]\ncommand = \"x\"\nenv = { \"1BAD\" = \"v\" }\n");
	FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "config.toml:3: key 'mcp_servers.x.env'"));
	tu_result_release(&r);

	proj_release(&p);
	free(srv);
}

/*
 * Approval in ask mode. With no terminal the answer is no and the tool
 * does not run; safe mode refuses; on a terminal 'a' approves this and
 * every later call of the tool, 'n' refuses.
 */
struct ptyrun {
	int status;
	struct buf tty;
};

static void run_pty(struct ptyrun *r, const struct proj *p, const char *const *args,
		    const char *const *prompts, const char *const *answers, double deadline)
{
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	int master, st;
	size_t next = 0, seen = 0;
	double started = now();
	char *abs = realpath(tu_forgex(), NULL);
	char **e;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	buf_init(&r->tty, 0);
	strvec_push(&argv, abs);
	free(abs);
	strvec_pushv(&argv, args);
	for (e = environ; *e; e++)
		if (strncmp(*e, "HOME=", 5) && strncmp(*e, "XDG_CONFIG_HOME=", 16))
			strvec_push(&env, *e);
	strvec_push(&env, p->env_home);
	strvec_push(&env, p->env_xdg);
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) || unlockpt(master))
		die("posix_openpt");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int slave;

		if (setsid() < 0)
			_exit(124);
		slave = open(ptsname(master), O_RDWR);
		if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
			_exit(124);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
		if (chdir(p->dir))
			_exit(125);
		execve(argv.v[0], (char *const *)argv.v, (char *const *)env.v);
		_exit(127);
	}
	for (;;) {
		struct pollfd pf = { master, POLLIN, 0 };
		char chunk[4096];
		ssize_t n;

		if (now() - started > deadline) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pf, 1, 20) < 0 && errno != EINTR)
			die("poll");
		if (pf.revents) {
			n = read(master, chunk, sizeof(chunk));
			if (n > 0)
				buf_add(&r->tty, chunk, (size_t)n);
			else if (n == 0 || errno != EINTR)
				break;
		}
		if (prompts[next]) {
			const char *at = strstr(r->tty.buf + seen, prompts[next]);

			if (at) {
				usleep(200000);
				seen = (size_t)(at - r->tty.buf) + strlen(prompts[next]);
				if (write(master, answers[next], strlen(answers[next])) < 0)
					die("write to the pty");
				next++;
			}
		}
	}
	close(master);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	strvec_clear(&argv);
	strvec_clear(&env);
}

/* Whether any message the model was sent holds `needle`. */
static int model_saw(const struct mock *m, const char *needle)
{
	json_t *reqs = chat_requests(m), *body, *msg;
	size_t i, j;
	int found = 0;

	json_array_foreach(reqs, i, body) {
		json_array_foreach(json_object_get(body, "messages"), j, msg) {
			const char *c = jsonx_str(msg, "content");

			found |= c && strstr(c, needle) != NULL;
		}
	}
	json_decref(reqs);
	return found;
}

static int exists_in(const char *dir, const char *rel)
{
	char *path = xstrfmt("%s/%s", dir, rel);
	int r = fsutil_exists(path);

	free(path);
	return r;
}

static char *with_servers(const struct mock *m, const char *mode, const char *srv)
{
	return xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		       "api_key_env = \"FX_E2E_NO_KEY\"\nmax_retries = 0\n[permissions]\nmode = \"%s\"\n%s",
		       m->base_url, mode, srv);
}

static void test_mcp_approval(void **state)
{
	json_t *steps = json_array();
	struct proj p;
	struct mock m;
	struct tu_result r;
	struct ptyrun pr;
	char *s, *srv, *cfg;
	static const char *const prompts[] = { "[N]o: ", "[N]o: ", NULL };
	static const char *const answers[] = { "a\n", "n\n", NULL };

	(void)state;
	/* ask with no terminal: the answer is no, the tool does not run */
	call(steps, "submit_plan", PLAN);
	call(steps, "t__write_file", "{\"path\": \"by-mcp.txt\"}");
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	proj_init(&p, &m, "ask", "");
	srv = stdio_server(&p, "t", NULL);
	cfg = with_servers(&m, "ask", srv);
	tu_write(p.home, "forgex/config.toml", cfg);
	FORGEX(&r, &p, "run", "write through mcp");
	assert_int_equal(r.status, 0);
	assert_false(exists_in(p.dir, "by-mcp.txt"));
	assert_true(model_saw(&m, "refused: not approved: no terminal to ask for approval on"));
	tu_result_release(&r);

	/* safe: refused with the reason */
	mock_release(&m);
	mock_start(&m, s);
	free(cfg);
	cfg = with_servers(&m, "safe", srv);
	tu_write(p.home, "forgex/config.toml", cfg);
	FORGEX(&r, &p, "run", "write through mcp");
	assert_int_equal(r.status, 0);
	assert_false(exists_in(p.dir, "by-mcp.txt"));
	assert_true(model_saw(&m, "refused: not approved: permissions.mode is safe: MCP tool calls "
			      "need approval and do not run"));
	tu_result_release(&r);
	mock_release(&m);
	free(s);

	/* a terminal: 'a' covers both calls of write_file; 'n' refuses echo */
	steps = json_array();
	call(steps, "submit_plan", PLAN);
	call(steps, "t__write_file", "{\"path\": \"one.txt\"}");
	call(steps, "t__write_file", "{\"path\": \"two.txt\"}");
	call(steps, "t__echo", "{\"text\": \"no\"}");
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	free(cfg);
	cfg = with_servers(&m, "ask", srv);
	tu_write(p.home, "forgex/config.toml", cfg);
	{
		const char *args[] = { "run", "write through mcp", NULL };

		run_pty(&pr, &p, args, prompts, answers, 90);
	}
	assert_int_equal(pr.status, 0);
	assert_non_null(strstr(pr.tty.buf, "the MCP tool write_file (server t) needs approval"));
	assert_non_null(strstr(pr.tty.buf, "arguments: {\"path\":\"one.txt\"}"));
	assert_null(strstr(pr.tty.buf, "arguments: {\"path\":\"two.txt\"}"));
	assert_non_null(strstr(pr.tty.buf, "the MCP tool echo (server t) needs approval"));
	assert_true(model_saw(&m, "refused: not approved: the person said no"));
	assert_false(model_saw(&m, "echo: no"));
	assert_true(exists_in(p.dir, "one.txt"));
	assert_true(exists_in(p.dir, "two.txt"));
	buf_release(&pr.tty);
	mock_release(&m);
	proj_release(&p);
	free(cfg);
	free(srv);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcp_run_stdio),
		cmocka_unit_test(test_mcp_slow_tool_times_out),
		cmocka_unit_test(test_mcp_http),
		cmocka_unit_test(test_mcp_cli),
		cmocka_unit_test(test_mcp_approval),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

extern char **environ;

static char *server_py(void)
{
	char *abs = realpath("tests/fixtures/mcp/server.py", NULL);

	if (!abs)
		fail_msg("tests/fixtures/mcp/server.py not found (run from the top folder)");
	return abs;
}

/*
 * The [mcp_servers.NAME] table of the stdio server, logging to `log`. The
 * server runs in the sandbox: the folder of its log is made a writable
 * root (it is under /tmp, which is the sandbox's own otherwise).
 */
static char *stdio_server(const char *log, const char *name, const char *more)
{
	char *py = server_py(), *dir = xstrdup(log), *slash = strrchr(dir, '/');
	char *t;

	if (slash)
		*slash = '\0';
	t = xstrfmt("[sandbox]\nwritable_roots = [\"%s\"]\n"
		    "[mcp_servers.%s]\ncommand = \"python3\"\nargs = [\"%s\"]\n"
		    "env = { MCP_LOG = \"%s\" }\n%s", dir, name, py, log, more ? more : "");
	free(py);
	free(dir);
	return t;
}

static char *srvlog_of(const struct sc_proj *p)
{
	return xstrfmt("%s/server-log.jsonl", p->home);
}

#define PLAN "{\"summary\": \"Use the server\", \"steps\": [{\"id\": \"1\", \"title\": \"Ask\"," \
	" \"description\": \"call the tools\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"tests pass\"], \"required_fixes\": []}"

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
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *srv, *t0, *t1, *log, *runs, *srvlog;
	const char *res;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);			/* call_1 */
	sc_call(steps, "t__echo", "{\"text\": \"hello\"}");	/* call_2 */
	sc_call(steps, "t__image", "{}");				/* call_3 */
	sc_call(steps, "t__add_tool", "{}");			/* call_4 */
	sc_call(steps, "t__late", "{}");				/* call_5 */
	sc_call(steps, "t__fail", "{}");				/* call_6 */
	sc_call(steps, "t__crash", "{}");				/* call_7 */
	sc_call(steps, "t__echo", "{\"text\": \"again\"}");	/* call_8 */
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	srvlog = srvlog_of(&p);
	srv = stdio_server(srvlog, "t", NULL);
	sc_proj_config(&p, &m, "auto", srv);
	SC_FORGEX(&r, &p, "run", "use the server");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "MCP server t: 10 tools"));
	reqs = sc_chat_requests(&m);

	/* the architect sees only the read-only tool; the builder all of them */
	t0 = sc_tools_of(reqs, 0);
	t1 = sc_tools_of(reqs, 1);
	assert_non_null(strstr(t0, "t__echo "));
	assert_null(strstr(t0, "t__crash "));
	assert_non_null(strstr(t1, "t__echo "));
	assert_non_null(strstr(t1, "t__crash "));
	assert_null(strstr(t1, "t__late "));

	res = sc_tool_result(reqs, "call_2");
	assert_non_null(res);
	assert_string_equal(res, "echo: hello");
	res = sc_tool_result(reqs, "call_3");
	assert_non_null(strstr(res, "[image: image/png, 72 bytes; not shown to the model]"));
	assert_non_null(strstr(res, "resource text"));
	res = sc_tool_result(reqs, "call_4");
	assert_non_null(strstr(res, "added"));
	assert_non_null(strstr(res, "new: t__late"));
	res = sc_tool_result(reqs, "call_5");
	assert_string_equal(res, "late tool ran");
	res = sc_tool_result(reqs, "call_6");
	assert_string_equal(res, "error: the tool failed on purpose");
	res = sc_tool_result(reqs, "call_7");
	assert_non_null(strstr(res, "error: MCP server 't' closed its output (it exited with status 3)"));
	assert_non_null(strstr(res, "boom"));
	res = sc_tool_result(reqs, "call_8");
	assert_non_null(strstr(res, "error: MCP server 't' is not running"));

	/* what the server saw: the handshake, in order, and pages of tools/list */
	log = read_all(srvlog);
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
	sc_proj_release(&p);
	free(srvlog);
	free(srv);
	free(s);
}

/* a slow tool times out cleanly, is cancelled, and the server goes on */
static void test_mcp_slow_tool_times_out(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *srv, *log, *srvlog;
	double t0;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "t__slow", "{\"seconds\": 60}");		/* call_N */
	sc_call(steps, "t__echo", "{\"text\": \"after\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	srvlog = srvlog_of(&p);
	srv = stdio_server(srvlog, "t", "tool_timeout_seconds = 1\n");
	sc_proj_config(&p, &m, "auto", srv);
	t0 = tu_now();
	SC_FORGEX(&r, &p, "run", "use the slow tool");
	assert_int_equal(r.status, 0);
	assert_true(tu_now() - t0 < 40);
	assert_true(sc_model_saw(&m, "did not answer within 1 s (tool_timeout_seconds); "
				 "the call was cancelled"));
	assert_true(sc_model_saw(&m, "echo: after"));
	log = read_all(srvlog);
	assert_non_null(strstr(log, "\"method\": \"notifications/cancelled\""));
	assert_non_null(strstr(log, "\"reason\": \"timed out\""));
	free(log);
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	free(srvlog);
	free(srv);
	free(s);
}

/* Streamable HTTP: bearer token, session id, SSE answers */
static void test_mcp_http(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *py = server_py(), *portfile, *port = NULL, *srv, *log, *srvlog, *env_tok;
	pid_t pid;
	int i, st;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "h__echo", "{\"text\": \"over http\"}");	/* a later call id */
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	srvlog = srvlog_of(&p);
	portfile = xstrfmt("%s/port", p.home);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		setenv("MCP_LOG", srvlog, 1);
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
	srv = xstrfmt("[mcp_servers.h]\nurl = \"http://127.0.0.1:%s/mcp\"\n"
		      "bearer_token_env = \"FX_MCP_TOKEN\"\n", port);
	sc_proj_config(&p, &m, "auto", srv);
	env_tok = xstrdup("FX_MCP_TOKEN=sekrit-token");
	sc_proj_env(&p, env_tok);
	SC_FORGEX(&r, &p, "run", "use the http server");
	assert_int_equal(r.status, 0);
	assert_true(sc_model_saw(&m, "echo: over http"));
	log = read_all(srvlog);
	assert_non_null(strstr(log, "\"mcp-session-id\": \"sess-42\""));
	assert_non_null(strstr(log, "\"mcp-protocol-version\": \"2025-11-25\""));
	assert_non_null(strstr(log, "\"authorization\": \"Bearer sekrit-token\""));
	free(log);
	tu_result_release(&r);

	/* a wrong token: a clear refusal */
	free(env_tok);
	env_tok = xstrdup("FX_MCP_TOKEN=wrong");
	p.env[p.env_nr - 1] = env_tok;
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "refused the request (HTTP 401)"));
	tu_result_release(&r);

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	mock_release(&m);
	sc_proj_release(&p);
	free(env_tok);
	free(srv);
	free(srvlog);
	free(port);
	free(portfile);
	free(py);
	free(s);
}

/* forgex mcp list / call for a person; garbage and floods are clear errors, memory bounded */
static void test_mcp_cli(void **state)
{
	struct sc_proj p;
	struct tu_result r;
	struct rusage ru;
	char *srv, *srvlog;

	(void)state;
	sc_proj_init(&p, NULL, "auto", "");
	srvlog = srvlog_of(&p);
	srv = stdio_server(srvlog, "t", NULL);
	sc_proj_config(&p, NULL, "auto", srv);
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "t (stdio python3): ready, protocol 2025-11-25"));
	assert_non_null(strstr(r.out.buf, "t__echo (read-only)  Echo the text back."));
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "list", "--json");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "\"state\":\"ready\""));
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "call", "t", "echo", "{\"text\": \"hi\"}");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "echo: hi\n");
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "call", "t", "fail");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out.buf, "the tool failed on purpose\n");
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "call", "t", "garbage");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "sent malformed JSON-RPC"));
	assert_non_null(strstr(r.err.buf, "this is not json"));
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "call", "t", "flood");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "sent a message over 8 MiB"));
	tu_result_release(&r);
	/* 200 MB went to forgex: what it kept stayed bounded */
	getrusage(RUSAGE_CHILDREN, &ru);
	assert_true(ru.ru_maxrss < 96 * 1024);

	SC_FORGEX(&r, &p, "mcp", "call", "t", "nosuchtool");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "has no tool 'nosuchtool'"));
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "call", "nosuch", "echo");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "no MCP server named 'nosuch'"));
	tu_result_release(&r);

	/* the example of docs/configuration.md, as it is */
	tu_write(p.dir, "docs/notes.md", "# Notes\n\nThe release branch is cut on Fridays.\n");
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.notes]\ncommand = \"python3\"\n"
		 "args = [\"examples/mcp/notes_server.py\"]\nenv = { NOTES_DIR = \"docs\" }\n"
		 "cwd = \".\"\n");
	{
		char *ex = tu_read(".", "examples/mcp/notes_server.py");

		assert_non_null(ex);
		tu_write(p.dir, "examples/mcp/notes_server.py", ex);
		free(ex);
	}
	SC_FORGEX(&r, &p, "mcp", "call", "--yes", "notes", "search_notes", "{\"word\": \"friday\"}");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "docs/notes.md:3: The release branch is cut on Fridays.\n");
	tu_result_release(&r);

	/* a program that does not exist: a clear startup error */
	tu_write(p.home, "forgex/config.toml",
		 "[mcp_servers.gone]\ncommand = \"/nonexistent/mcp-server\"\n");
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 1);
	/* the sandbox's launcher looked it up: the server's exit and its stderr say why */
	assert_non_null(strstr(r.out.buf, "gone (stdio /nonexistent/mcp-server): failed: "
			       "MCP server 'gone' closed its output (it exited with status 127)"));
	assert_non_null(strstr(r.out.buf, "command not found: /nonexistent/mcp-server"));
	tu_result_release(&r);

	/* a server that never answers the handshake: bounded by startup_timeout_seconds */
	tu_write(p.home, "forgex/config.toml",
		 "[mcp_servers.mute]\ncommand = \"sleep\"\nargs = [\"60\"]\nstartup_timeout_seconds = 1\n");
	{
		double t0 = tu_now();

		SC_FORGEX(&r, &p, "mcp", "list");
		assert_true(tu_now() - t0 < 10);
	}
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "did not finish the initialize handshake in 1 s"));
	tu_result_release(&r);

	/* bad configuration names file, line and key */
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://h\"\n");
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "needs exactly one of 'command'"));
	tu_result_release(&r);
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.x]\ncommand = \"x\"\nroles = [\"boss\"]\n");
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "unknown role 'boss'"));
	tu_result_release(&r);
	tu_write(p.home, "forgex/config.toml", "[mcp_servers.x]\ncommand = \"x\"\nenv = { \"1BAD\" = \"v\" }\n");
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "config.toml:3: key 'mcp_servers.x.env'"));
	tu_result_release(&r);

	sc_proj_release(&p);
	free(srvlog);
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

static void run_pty(struct ptyrun *r, const struct sc_proj *p, const char *const *args,
		    const char *const *prompts, const char *const *answers, double deadline)
{
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	int master, st;
	size_t next = 0, seen = 0;
	double started = tu_now();
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

		if (tu_now() - started > deadline) {
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

static int exists_in(const char *dir, const char *rel)
{
	char *path = xstrfmt("%s/%s", dir, rel);
	int r = fsutil_exists(path);

	free(path);
	return r;
}

static void test_mcp_approval(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	struct ptyrun pr;
	char *s, *srv, *srvlog;
	static const char *const prompts[] = {
		"[y/a/N/e] ", "[y/a/N/e] ", "[y/a/N/e] ", "Tell the model why: ", NULL,
	};
	static const char *const answers[] = { "a\n", "n\n", "e\n", "not now\n", NULL };

	(void)state;
	/* ask with no terminal: the answer is no, the tool does not run */
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "t__write_file", "{\"path\": \"by-mcp.txt\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "ask", "");
	srvlog = srvlog_of(&p);
	/* its write_file writes in its working folder: the workspace, writable to it */
	srv = stdio_server(srvlog, "t", "cwd = \".\"\nwritable = true\n");
	sc_proj_config(&p, &m, "ask", srv);
	SC_FORGEX(&r, &p, "run", "write through mcp");
	assert_int_equal(r.status, 0);
	assert_false(exists_in(p.dir, "by-mcp.txt"));
	assert_true(sc_model_saw(&m, "refused: not approved: no terminal to ask for approval on"));
	tu_result_release(&r);

	/* safe: refused with the reason */
	mock_release(&m);
	mock_start(&m, s);
	sc_proj_config(&p, &m, "safe", srv);
	SC_FORGEX(&r, &p, "run", "write through mcp");
	assert_int_equal(r.status, 0);
	assert_false(exists_in(p.dir, "by-mcp.txt"));
	assert_true(sc_model_saw(&m, "refused: not approved: permissions.mode is safe: MCP tool calls "
			      "need approval and do not run"));
	tu_result_release(&r);
	mock_release(&m);
	free(s);

	/* a terminal: 'a' covers both calls of write_file; 'n' and 'e' refuse echo */
	steps = json_array();
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "t__write_file", "{\"path\": \"one.txt\"}");
	sc_call(steps, "t__write_file", "{\"path\": \"two.txt\"}");
	sc_call(steps, "t__echo", "{\"text\": \"no\"}");
	sc_call(steps, "t__echo", "{\"text\": \"later\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_config(&p, &m, "ask", srv);
	{
		const char *args[] = { "run", "write through mcp", NULL };

		run_pty(&pr, &p, args, prompts, answers, 90);
	}
	if (pr.status)
		fail_msg("run: %d\n%s", pr.status, pr.tty.buf);
	assert_non_null(strstr(pr.tty.buf, "the MCP tool write_file (server t) needs approval"));
	assert_non_null(strstr(pr.tty.buf, "arguments: {\"path\":\"one.txt\"}"));
	assert_null(strstr(pr.tty.buf, "arguments: {\"path\":\"two.txt\"}"));
	assert_non_null(strstr(pr.tty.buf, "the MCP tool echo (server t) needs approval"));
	assert_true(sc_model_saw(&m, "refused: not approved: the person said no"));
	assert_false(sc_model_saw(&m, "echo: no"));
	/* e: what the person typed is what the model reads */
	assert_true(sc_model_saw(&m, "refused: not approved: the person said: \"not now\""));
	assert_false(sc_model_saw(&m, "echo: later"));
	assert_true(exists_in(p.dir, "one.txt"));
	assert_true(exists_in(p.dir, "two.txt"));
	buf_release(&pr.tty);
	mock_release(&m);
	sc_proj_release(&p);
	free(srvlog);
	free(srv);
	free(s);
}

/* A project file's server is started only once the project file is trusted. */
static void test_mcp_untrusted_project_server_is_not_started(void **state)
{
	struct sc_proj p;
	struct tu_result r;
	char *srv, *srvlog, *proj;

	(void)state;
	sc_proj_init(&p, NULL, "auto", "");
	srvlog = srvlog_of(&p);
	srv = stdio_server(srvlog, "cloned", NULL);
	proj = xstrfmt("[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\"]\n%s", srv);
	tu_write(p.dir, ".forgex/config.toml", proj);
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "no MCP servers configured"));
	assert_non_null(strstr(r.err.buf, "mcp_servers.cloned.command"));
	assert_non_null(strstr(r.err.buf, "an untrusted project file may not set it"));
	assert_non_null(strstr(r.err.buf, "trust"));
	assert_false(fsutil_exists(srvlog));	/* the program never ran */
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "doctor");
	assert_null(strstr(r.out.buf, "MCP servers"));
	assert_false(fsutil_exists(srvlog));
	tu_result_release(&r);

	/* trusted as it is: now it starts */
	SC_FORGEX(&r, &p, "trust");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "cloned (stdio python3): ready"));
	assert_true(fsutil_exists(srvlog));
	tu_result_release(&r);
	sc_proj_release(&p);
	free(proj);
	free(srvlog);
	free(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcp_run_stdio),
		cmocka_unit_test(test_mcp_slow_tool_times_out),
		cmocka_unit_test(test_mcp_http),
		cmocka_unit_test(test_mcp_cli),
		cmocka_unit_test(test_mcp_approval),
		cmocka_unit_test(test_mcp_untrusted_project_server_is_not_started),
	};

	signal(SIGPIPE, SIG_IGN);
	return tu_run_group_tests(tests, NULL, NULL);
}

/*
 * An MCP stdio server's own network (issue 20, item 4): the real binary,
 * build/mockllm as the model, a probe server in the sandbox and an HTTP
 * listener of the test on the host's 127.0.0.1.
 *
 * [mcp_servers.x] allowed_domains = ["localhost"] gives server x the
 * egress proxy with that list alone: it reaches the listener as
 * "localhost" (named exactly, so loopback is allowed), and is refused
 * "127.0.0.1" - which [sandbox] allowed_domains names, for the commands:
 * a server's list replaces it - with the reason in the answer and a line
 * in the server's log as the connection is refused. Server y, with no
 * allowed_domains, has no network at all although [sandbox] network =
 * true: no proxy variables, and its direct connection to the listener
 * fails. The listener counts what reached it: exactly x's one request.
 * As root and as uid 65534 (forgex started with setpriv, the project and
 * its home given to that uid).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

/* ---- the host's listener ---------------------------------------------- */

struct listener {
	int fd, port;
	int stop;
	int served;			/* requests answered */
	pthread_t thread;
	pthread_mutex_t lock;
};

static void *listener_main(void *arg)
{
	static const char answer[] = "HTTP/1.0 200 OK\r\nContent-Length: 15\r\n"
		"Connection: close\r\n\r\nHOST-LISTENER\r\n";
	struct listener *l = arg;

	for (;;) {
		struct pollfd pfd = { l->fd, POLLIN, 0 };
		char req[4096];
		size_t got = 0;
		ssize_t n;
		int c, stop;

		pthread_mutex_lock(&l->lock);
		stop = l->stop;
		pthread_mutex_unlock(&l->lock);
		if (stop)
			return NULL;
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		c = accept(l->fd, NULL, NULL);
		if (c < 0)
			continue;
		/* the request's head, then the answer */
		while (got < sizeof(req) - 1 &&
		       (n = recv(c, req + got, sizeof(req) - 1 - got, 0)) > 0) {
			got += (size_t)n;
			req[got] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		if (send(c, answer, sizeof(answer) - 1, MSG_NOSIGNAL) > 0) {
			pthread_mutex_lock(&l->lock);
			l->served++;
			pthread_mutex_unlock(&l->lock);
		}
		close(c);
	}
}

static void listener_start(struct listener *l)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(l->fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(l->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l->fd, 16), 0);
	assert_int_equal(getsockname(l->fd, (struct sockaddr *)&a, &len), 0);
	l->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&l->thread, NULL, listener_main, l), 0);
}

static int listener_stop(struct listener *l)
{
	int served;

	pthread_mutex_lock(&l->lock);
	l->stop = 1;
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	close(l->fd);
	served = l->served;
	pthread_mutex_destroy(&l->lock);
	return served;
}

/* ---- the probe server --------------------------------------------------- */

/*
 * fetch {url}: a GET through the proxy named by HTTP_PROXY (a raw socket,
 * so no client's NO_PROXY handling is involved), or straight to the host
 * without one; the answer's first line and last line, or why it failed.
 */
static const char probe_py[] =
	"import json, os, socket, sys, urllib.parse\n"
	"def fetch(url):\n"
	"    u = urllib.parse.urlsplit(url)\n"
	"    proxy = os.environ.get('HTTP_PROXY')\n"
	"    try:\n"
	"        if proxy:\n"
	"            p = urllib.parse.urlsplit(proxy)\n"
	"            s = socket.create_connection((p.hostname, p.port), timeout=20)\n"
	"            s.sendall(('GET %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (url, u.netloc)).encode())\n"
	"        else:\n"
	"            s = socket.create_connection((u.hostname, u.port), timeout=20)\n"
	"            s.sendall(('GET / HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % u.netloc).encode())\n"
	"        data = b''\n"
	"        while True:\n"
	"            b = s.recv(65536)\n"
	"            if not b:\n"
	"                break\n"
	"            data += b\n"
	"        lines = data.decode('utf-8', 'replace').strip().splitlines()\n"
	"        return 'proxy=%s; %s | %s' % (bool(proxy), lines[0], lines[-1]) if lines else 'empty'\n"
	"    except OSError as e:\n"
	"        return 'proxy=%s; failed: %s' % (bool(proxy), e.strerror or e)\n"
	"for line in sys.stdin:\n"
	"    m = json.loads(line)\n"
	"    if 'id' not in m:\n"
	"        continue\n"
	"    if m.get('method') == 'initialize':\n"
	"        r = {'protocolVersion': '2025-11-25', 'capabilities': {'tools': {}},\n"
	"             'serverInfo': {'name': 'probe', 'version': '1'}}\n"
	"    elif m.get('method') == 'tools/list':\n"
	"        r = {'tools': [{'name': 'fetch', 'description': 'GET a URL.',\n"
	"                        'inputSchema': {'type': 'object', 'properties': {'url': {'type': 'string'}}}}]}\n"
	"    elif m.get('method') == 'tools/call':\n"
	"        t = fetch(m['params']['arguments']['url'])\n"
	"        r = {'content': [{'type': 'text', 'text': t}]}\n"
	"    else:\n"
	"        r = {}\n"
	"    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n";

#define PLAN "{\"summary\": \"Fetch\", \"steps\": [{\"id\": \"1\", \"title\": \"Fetch\"," \
	" \"description\": \"fetch the pages\", \"files\": [\"x.py\"]}], \"acceptance\": [\"ok\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"fine\"], \"required_fixes\": []}"

static int localhost_is_loopback(void)
{
	struct addrinfo hints, *res = NULL, *ai;
	int ok = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo("localhost", NULL, &hints, &res))
		return 0;
	for (ai = res; ai; ai = ai->ai_next)
		ok |= ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
	freeaddrinfo(res);
	return ok;
}

#define NOBODY 65534

/* forgex ARGS in the project as `uid` (setpriv when not 0). */
static void forgex_as(struct tu_result *r, const struct sc_proj *p, uid_t uid,
		      const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL), *id = xstrfmt("%d", (int)uid);

	if (uid)
		strvec_pushv(&argv, (const char *const[]){ "setpriv", "--reuid", id, "--regid", id,
							   "--clear-groups", NULL });
	strvec_push(&argv, abs ? abs : tu_forgex());
	strvec_pushv(&argv, args);
	tu_run(r, (const char *const *)argv.v, p->dir, p->env, NULL);
	strvec_clear(&argv);
	free(abs);
	free(id);
}

static void own_allowed_domains(uid_t uid)
{
	json_t *steps = json_array(), *reqs;
	/* on the heap: a failed assertion leaves its thread running, on memory that stays */
	struct listener *l;
	struct sc_proj p;
	struct tu_result r;
	struct mock m;
	char *s, *more, *a_args, *b_args, *y_args, *probe, *runs, *log, *st = NULL, *ca = NULL;
	char *id_a, *id_b, *id_y;
	const char *res;

	if (!localhost_is_loopback()) {
		print_message("SKIP: the name localhost does not resolve to 127.0.0.1 here\n");
		skip();
	}
	l = xcalloc(1, sizeof(*l));
	listener_start(l);
	a_args = xstrfmt("{\"url\": \"http://localhost:%d/\"}", l->port);
	b_args = xstrfmt("{\"url\": \"http://127.0.0.1:%d/\"}", l->port);
	y_args = b_args;
	sc_call(steps, "submit_plan", PLAN);
	id_a = sc_next_id();
	sc_call(steps, "x__fetch", a_args);		/* A, allowed */
	id_b = sc_next_id();
	sc_call(steps, "x__fetch", b_args);		/* B, refused */
	id_y = sc_next_id();
	sc_call(steps, "y__fetch", y_args);		/* no network at all */
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", PASS);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	if (uid) {
		/* the user's own state and caches, in its home */
		st = xstrfmt("XDG_STATE_HOME=%s/state", p.home);
		ca = xstrfmt("XDG_CACHE_HOME=%s/cache", p.home);
		sc_proj_env(&p, st);
		sc_proj_env(&p, ca);
	}
	tu_write(p.home, "probe.py", probe_py);
	probe = xstrfmt("%s/probe.py", p.home);
	/* the probe lives in the home folder, made a writable root (it may be under /tmp) */
	more = xstrfmt("[sandbox]\nnetwork = true\nallowed_domains = [\"127.0.0.1\"]\n"
		       "writable_roots = [\"%s\"]\n"
		       "[mcp_servers.x]\ncommand = \"/usr/bin/python3\"\nargs = [\"%s\"]\n"
		       "allowed_domains = [\"localhost\"]\n"
		       "[mcp_servers.y]\ncommand = \"/usr/bin/python3\"\nargs = [\"%s\"]\n",
		       p.home, probe, probe);
	sc_proj_config(&p, &m, "auto", more);
	if (uid) {
		char *cmd = xstrfmt("chown -R %d:%d '%s' '%s'", (int)uid, (int)uid, p.dir, p.home);

		tu_sh(NULL, cmd);
		free(cmd);
	}
	forgex_as(&r, &p, uid, (const char *const[]){ "run", "fetch the pages", NULL });
	if (r.status)
		fail_msg("the run failed:\n%s%s", r.out.buf, r.err.buf);
	tu_result_release(&r);
	reqs = sc_chat_requests(&m);

	/* A: through x's proxy, to the host's listener */
	res = sc_tool_result(reqs, id_a);
	assert_non_null(res);
	if (!strstr(res, "proxy=True; HTTP/1.0 200 OK | HOST-LISTENER"))
		fail_msg("x to localhost: %s", res);
	/* B: refused by x's own list, which does not have what [sandbox] allows */
	res = sc_tool_result(reqs, id_b);
	assert_non_null(res);
	if (!strstr(res, "proxy=True; HTTP/1.1 403 Forbidden | forgex proxy: 127.0.0.1:") ||
	    !strstr(res, ": not in [mcp_servers.x] allowed_domains (mode auto asks nobody)"))
		fail_msg("x to 127.0.0.1: %s", res);
	/* y: no proxy, and its own loopback has no listener */
	res = sc_tool_result(reqs, id_y);
	assert_non_null(res);
	if (!strstr(res, "proxy=False; failed: Connection refused"))
		fail_msg("y: %s", res);
	/* only x's request to A reached the host */
	assert_int_equal(listener_stop(l), 1);

	/* the server's log in the run folder: each decision, as it was made */
	runs = xstrfmt("%s/.forgex/runs", p.dir);
	{
		const char *argv[] = { "sh", "-c", "cat */mcp-x.stderr", NULL };

		tu_run(&r, argv, runs, NULL, NULL);
		log = xstrdup(r.out.buf);
		tu_result_release(&r);
	}
	{
		char *allowed = xstrfmt("forgex: the network proxy allowed localhost:%d: named in "
					"[mcp_servers.x] allowed_domains (127.0.0.1)", l->port);
		char *refused = xstrfmt("forgex: the network proxy refused 127.0.0.1:%d: not in "
					"[mcp_servers.x] allowed_domains (mode auto asks nobody)",
					l->port);

		if (!strstr(log, allowed) || !strstr(log, refused))
			fail_msg("mcp-x.stderr:\n%s", log);
		free(allowed);
		free(refused);
	}
	free(log);
	free(runs);
	json_decref(reqs);
	mock_release(&m);
	sc_proj_release(&p);
	free(s);
	free(more);
	free(a_args);
	free(b_args);
	free(probe);
	free(st);
	free(ca);
	free(id_a);
	free(id_b);
	free(id_y);
	free(l);
}

static void test_mcp_server_own_allowed_domains(void **state)
{
	(void)state;
	own_allowed_domains(geteuid());
}

static void test_mcp_server_own_allowed_domains_unprivileged(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("SKIP: needs root to run forgex as uid %d\n", NOBODY);
		skip();
	}
	own_allowed_domains(NOBODY);
}

/* An untrusted project file may drop a server's domains, never add one. */
static void test_mcp_allowed_domains_gate(void **state)
{
	struct sc_proj p;
	struct tu_result r;

	(void)state;
	sc_proj_init(&p, NULL, "auto", "[mcp_servers.x]\ncommand = \"python3\"\n"
		     "allowed_domains = [\"a.example\", \"b.example\"]\n");
	tu_write(p.dir, ".forgex/config.toml", "[mcp_servers.x]\n"
		 "allowed_domains = [\"a.example\", \"evil.example\"]\n");
	SC_FORGEX(&r, &p, "config", "get", "mcp_servers.x.allowed_domains");
	assert_non_null(strstr(r.out.buf, "a.example"));
	assert_non_null(strstr(r.out.buf, "b.example"));
	assert_null(strstr(r.out.buf, "evil.example"));
	assert_non_null(strstr(r.err.buf, "mcp_servers.x.allowed_domains"));
	assert_non_null(strstr(r.err.buf, "may only drop entries"));
	tu_result_release(&r);
	tu_write(p.dir, ".forgex/config.toml", "[mcp_servers.x]\nallowed_domains = [\"b.example\"]\n");
	SC_FORGEX(&r, &p, "config", "get", "mcp_servers.x.allowed_domains");
	assert_non_null(strstr(r.out.buf, "b.example"));
	assert_null(strstr(r.out.buf, "a.example"));
	tu_result_release(&r);
	/* an HTTP server has no sandbox: the key is an error there */
	sc_proj_config(&p, NULL, "auto", "[mcp_servers.h]\nurl = \"http://127.0.0.1:1/mcp\"\n"
		       "allowed_domains = [\"a.example\"]\n");
	{
		char *pc = xstrfmt("%s/.forgex/config.toml", p.dir);

		assert_int_equal(unlink(pc), 0);
		free(pc);
	}
	SC_FORGEX(&r, &p, "config", "get", "mcp_servers.h.url");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "[mcp_servers.h] allowed_domains is for a stdio server"));
	tu_result_release(&r);
	sc_proj_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcp_server_own_allowed_domains),
		cmocka_unit_test(test_mcp_server_own_allowed_domains_unprivileged),
		cmocka_unit_test(test_mcp_allowed_domains_gate),
	};

	if (getenv("TU_FILTER"))
		cmocka_set_test_filter(getenv("TU_FILTER"));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
